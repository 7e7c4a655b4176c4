// The customer's refund page (`/refund/<id>#rt=<token>`). The refund token rides in the
// URL fragment (never sent to a server nor put in a Referer), is read once and removed
// from the address bar with history.replaceState; it lives in this closure only. With it
// the page reads the refund (`validate`) and names the receiving address (`destination`),
// typed, or taken from an injected wallet (window.ethereum, eth_requestAccounts). The
// customer never sends anything: the shop does, and the page shows where the refund is.
(() => {
  const POLL_MS = 4000;
  const NETWORK_LABELS = { base: "Base", "base-sepolia": "Base Sepolia (test network)", local: "Local test chain (Anvil)" };
  // Each refusal the destination route can answer, in words for the customer.
  const REFUSALS = {
    destination_is_payment_address:
      "This is a payment address of a shop, not a wallet of yours: money sent there would be taken for a new payment. Enter your own wallet's address.",
    destination_is_zero_address: "This is the zero address: whatever is sent to it is lost. Enter your own wallet's address.",
    destination_is_token:
      "This is the address of the USDC contract itself: money sent to it is lost. Enter your own wallet's address.",
    destination_is_service_address:
      "This address belongs to the payment service itself, not to you: money sent there could not be given back. Enter your own wallet's address.",
    invalid_refund_token: "This refund link is not valid (or was replaced by a newer one). Ask the shop for a new refund link.",
    refund_destination_locked: "The receiving address of this refund is already set and cannot be changed.",
    invalid_request: "That is not a wallet address: it must be 0x followed by 40 hexadecimal characters.",
  };
  const $ = (id) => document.getElementById(id);
  const root = $("refund");
  const refundId = root.dataset.refundId;
  const refundToken = takeTokenFromFragment();
  let refund;
  let pollTimer;
  let brandingShown = false;

  function takeTokenFromFragment() {
    const token = new URLSearchParams(location.hash.slice(1)).get("rt");
    // Out of the address bar, the history entry and any later copy-paste of the URL.
    if (location.hash) history.replaceState(history.state, "", location.pathname + location.search);
    return token && token.length <= 200 ? token : undefined;
  }

  const post = (suffix, body) =>
    window.UsdcHostedApi.call(`/v1/public/refunds/${encodeURIComponent(refundId)}/${suffix}`, { refundToken, ...body });

  function formatAmount(baseUnits) {
    const value = BigInt(baseUnits);
    const whole = (value / 1000000n).toLocaleString("en-US");
    let fraction = (value % 1000000n).toString().padStart(6, "0").replace(/0+$/, "");
    if (fraction.length < 2) fraction = fraction.padEnd(2, "0");
    return `${whole}.${fraction} USDC`;
  }

  const networkLabel = (r) => `${NETWORK_LABELS[r.network] || r.network || "chain"} · chain id ${r.chainId}`;
  const shopName = () => refund?.shop?.displayName || "The shop";

  function setStatus(message, tone) {
    const status = $("status");
    status.textContent = message;
    status.dataset.tone = tone || "info";
  }

  function showBranding() {
    if (brandingShown || !refund.shop) return;
    brandingShown = true;
    const shop = refund.shop;
    for (const element of document.querySelectorAll(".shop-name")) element.textContent = shop.displayName;
    $("merchant-name").textContent = shop.displayName;
    if (shop.logoUrl) {
      $("merchant-logo").src = shop.logoUrl;
      $("merchant-logo").hidden = false;
    }
    $("merchant").hidden = false;
    document.title = `Your refund from ${shop.displayName}`;
    if (shop.supportUrl) {
      $("support-url").href = shop.supportUrl;
      $("support-url").hidden = false;
    }
    if (shop.supportEmail) {
      $("support-email").href = `mailto:${shop.supportEmail}`;
      $("support-email").textContent = shop.supportEmail;
      $("support-email").hidden = false;
    }
    $("support-separator").hidden = !(shop.supportUrl && shop.supportEmail);
    $("support").hidden = !(shop.supportUrl || shop.supportEmail);
  }

  function render(next) {
    refund = next;
    root.dataset.state = refund.status;
    showBranding();
    const order = refund.externalOrderId ? ` for order ${refund.externalOrderId}` : "";
    $("summary").textContent = `${shopName()} refunds you ${formatAmount(refund.amount)}${order}.`;
    $("summary").hidden = false;
    $("detail-amount").textContent = formatAmount(refund.amount);
    $("detail-network").textContent = networkLabel(refund);
    $("network-name").textContent = NETWORK_LABELS[refund.network] || refund.network || "this network";
    $("detail-destination").textContent = refund.destination || "";
    $("detail-destination-row").hidden = !refund.destination;
    $("detail-hash").textContent = refund.transactionHash || "";
    $("detail-hash-row").hidden = !refund.transactionHash;
    $("details-step").hidden = false;
    $("destination-step").hidden = refund.status !== "awaiting_destination";
    $("connect").hidden = !window.ethereum;
    switch (refund.status) {
      case "awaiting_destination":
        setStatus("Awaiting your address: tell us which wallet should receive the refund.", "warn");
        break;
      case "ready":
        setStatus(`Ready: ${shopName()} will send the refund to your address. This page updates by itself.`, "info");
        break;
      case "pending":
        setStatus("Pending: the refund transfer was seen on the network and is being confirmed.", "info");
        break;
      case "succeeded":
        setStatus("Succeeded: the refund reached your address.", "ok");
        break;
      case "cancelled":
        setStatus(`Cancelled: ${shopName()} cancelled this refund. Contact the shop if you expected it.`, "error");
        break;
      default:
        setStatus(`State: ${refund.status}.`, "info");
    }
    clearTimeout(pollTimer);
    if (refund.status === "ready" || refund.status === "pending") pollTimer = setTimeout(refresh, POLL_MS);
  }

  async function refresh() {
    try {
      render(await post("validate", {}));
    } catch (error) {
      // A restart or a busy moment must not freeze the page: ask again, unless asking cannot help.
      const delay = window.UsdcHostedApi.retryDelay(error, POLL_MS);
      if (delay === undefined) return fail(error);
      setStatus("The service could not be reached just now. This page tries again by itself.", "warn");
      clearTimeout(pollTimer);
      pollTimer = setTimeout(refresh, delay);
    }
  }

  function fail(error) {
    clearTimeout(pollTimer);
    setStatus(REFUSALS[error.code] || `This refund cannot be shown: ${error.message}`, "error");
  }

  function showError(message) {
    $("destination-error").textContent = message;
    $("destination-error").hidden = false;
    $("destination").setAttribute("aria-invalid", "true");
    $("destination").focus();
  }

  $("destination-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    $("destination-error").hidden = true;
    $("destination").removeAttribute("aria-invalid");
    const destination = $("destination").value.trim();
    if (!/^0x[0-9a-fA-F]{40}$/.test(destination)) return showError(REFUSALS.invalid_request);
    $("confirm").disabled = true;
    try {
      render(await post("destination", { destination }));
      $("details-title").focus();
    } catch (error) {
      showError(REFUSALS[error.code] || error.message);
    } finally {
      $("confirm").disabled = false;
    }
  });

  $("connect").addEventListener("click", async () => {
    try {
      const accounts = await window.ethereum.request({ method: "eth_requestAccounts" });
      if (Array.isArray(accounts) && accounts[0]) $("destination").value = accounts[0];
      $("destination").focus();
    } catch (error) {
      showError(`The wallet did not share an address: ${error.message || error}`);
    }
  });

  if (refundToken === undefined) {
    setStatus("This page needs the refund link the shop sent you (it ends with #rt=…). Open that link again.", "error");
  } else {
    refresh();
  }
})();
