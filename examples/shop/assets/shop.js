// The shop's order page: hands the session the shop's server created to the
// service's <usdc-checkout> element (UsdcCheckout.mount does the same for any element). The completion callback only updates this page; the
// order is marked paid and shipped by the server, on the signed purchase.settled event.
(() => {
  const element = document.getElementById("checkout");
  const configBlock = document.getElementById("checkout-config");
  if (!element || !configBlock || !window.UsdcCheckout) return;
  const config = JSON.parse(configBlock.textContent);
  const stateLine = document.getElementById("checkout-state");

  function watchOrder() {
    const status = document.getElementById("order-status");
    const check = async () => {
      const response = await fetch(`/orders/${encodeURIComponent(config.orderId)}/status`, { cache: "no-store" });
      if (response.ok) {
        const order = await response.json();
        status.textContent = order.statusText;
        status.dataset.status = order.status;
        if (order.status === "fulfilled") return;
      }
      setTimeout(check, 1500);
    };
    check();
  }

  // <usdc-checkout> frames the hosted checkout once it has the token; the token is
  // set as a property, never an attribute or a URL.
  element.addEventListener("statechange", (event) => {
    stateLine.textContent = event.detail.message;
    stateLine.dataset.state = event.detail.state;
  });
  element.addEventListener("complete", (event) => {
    const result = event.detail;
    const thanks = document.getElementById("thanks");
    document.getElementById("thanks-message").textContent =
      `We received your payment for order ${result.session.externalOrderId} (transaction ${result.transactionHash}). ` +
      "We ship as soon as the settlement service confirms it to our server.";
    thanks.hidden = false;
    document.getElementById("thanks-title").focus();
    const claim = document.getElementById("claim");
    if (claim) claim.hidden = false;
    watchOrder();
  });
  element.clientToken = config.clientToken;
})();
