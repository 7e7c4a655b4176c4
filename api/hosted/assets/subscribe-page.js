// The hosted subscribe page (`/subscribe/<id>#st=<token>`). The token is read from the
// fragment and removed from the address bar; with it the page reads the subscription,
// states its terms in plain words, and, once the customer connects a wallet, asks the
// service for the exact terms and permit to sign (typed data the service builds), has the
// wallet sign both (no fee), and hands the signatures to the service, which sends them.
// The page says "subscribed" only when the service saw the registration on the chain.
(() => {
  const POLL_MS = 2000;
  const S = window.UsdcSubscription;
  const { $ } = S;
  const root = $("subscribe");
  const subscriptionId = root.dataset.subscriptionId;
  const clientToken = S.takeTokenFromFragment();
  let subscription;
  let account;

  const call = (suffix, body) => S.call(subscriptionId, suffix, clientToken, body);

  function renderTerms() {
    const amount = S.formatAmount(subscription.amount);
    const period = S.periodWords(subscription.periodSeconds);
    const shop = subscription.shop.displayName;
    $("terms-product").textContent = `${shop}: ${subscription.productName}`;
    $("terms-amount").textContent = amount;
    $("terms-period").textContent = period + S.periodNote(subscription.interval);
    $("terms-payee").textContent = subscription.payee;
    $("terms-network").textContent = S.networkLabel(subscription);
    const lines = [
      `You pay ${amount} every ${period}${S.periodNote(subscription.interval)}, from your wallet straight to ${shop}.`,
      "The first charge is made now, as soon as your subscription is registered.",
      subscription.endAt
        ? `The charges stop on ${S.formatDate(subscription.endAt)}.`
        : "It runs until you or the shop cancel it.",
      "You can cancel at any time from the subscription page, with no fee; no later charge is made.",
    ];
    $("terms-list").replaceChildren(
      ...lines.map((line) => {
        const item = document.createElement("li");
        item.textContent = line;
        return item;
      }),
    );
    $("permit-words").textContent =
      `it lets the contract take ${amount} once per period, covering at most 12 charges before it must be renewed`;
    $("terms-step").hidden = false;
  }

  function render(next) {
    subscription = next;
    root.dataset.state = subscription.status;
    S.showBranding(subscription, "Subscribe");
    renderTerms();
    stop();
    const awaiting = subscription.status === "awaiting_authorization";
    // Sent already (this page, before a reload, or another tab): wait for it rather than sign again.
    if (awaiting && subscription.authorizationTransactionHash && $("pending-step").hidden) {
      $("pending-hash").replaceChildren(S.transactionElement(subscription.authorizationTransactionHash, subscription.chainId));
      $("pending-step").hidden = false;
    }
    $("wallet-step").hidden = !awaiting || !$("pending-step").hidden;
    switch (subscription.status) {
      case "awaiting_authorization":
        if (!$("pending-step").hidden) {
          S.setStatus("Sent: waiting for the network to register your subscription.", "info");
          later();
        } else {
          S.setStatus("Read the terms, then connect your wallet to subscribe.", "info");
          const injected = window.ethereum !== undefined;
          $("connect").hidden = !injected || account !== undefined;
          $("no-wallet").hidden = injected;
        }
        return;
      case "active":
      case "past_due":
        return showDone();
      case "cancelled":
        return S.setStatus("This subscription was cancelled. Ask the shop for a new link to subscribe again.", "error");
      case "ended":
        return S.setStatus("This subscription has ended.", "info");
      case "expired":
        return S.setStatus("This subscription link expired before it was signed. Ask the shop for a new link.", "error");
      default:
        return S.setStatus(`State: ${subscription.status}.`, "info");
    }
  }

  function showDone() {
    $("wallet-step").hidden = true;
    $("pending-step").hidden = true;
    const wasHidden = $("done-step").hidden;
    $("done-step").hidden = false;
    S.setStatus("Subscribed.", "ok");
    const shop = subscription.shop.displayName;
    $("done-message").textContent =
      `You are subscribed to ${subscription.productName} from ${shop}: ${S.formatAmount(subscription.amount)} every ` +
      `${S.periodWords(subscription.periodSeconds)}. The first charge is being made now.`;
    if (subscription.nextChargeAt) {
      $("done-next").textContent = `Next charge: ${S.formatDate(subscription.nextChargeAt)}.`;
      $("done-next").hidden = false;
    }
    // The same token opens the customer's page; it goes in the fragment again, never to a server.
    $("manage-link").href = `/subscription/${encodeURIComponent(subscriptionId)}#st=${encodeURIComponent(clientToken)}`;
    if (subscription.successUrl) {
      $("success-link").href = subscription.successUrl;
      $("success-line").hidden = false;
    }
    if (wasHidden) $("done-title").focus();
  }

  const { refresh, later, stop } = S.reader({
    load: () => call("validate", {}),
    render,
    sections: ["terms-step", "wallet-step", "pending-step", "done-step"],
    pollMs: POLL_MS,
  });

  function showError(message) {
    $("wallet-error").textContent = message;
    $("wallet-error").hidden = false;
  }

  $("connect").addEventListener("click", async () => {
    $("wallet-error").hidden = true;
    try {
      account = await S.connect(subscription.chainId);
      $("account").textContent = account;
      $("account-line").hidden = false;
      $("connect").hidden = true;
      $("sign").hidden = false;
      $("sign").focus();
    } catch (error) {
      showError(`The wallet did not connect: ${error?.message || error}`);
    }
  });

  function splitSignature(signature) {
    const hex = signature.slice(2);
    let v = Number.parseInt(hex.slice(128, 130), 16);
    if (v < 27) v += 27;
    return { r: `0x${hex.slice(0, 64)}`, s: `0x${hex.slice(64, 128)}`, v };
  }

  $("sign").addEventListener("click", async () => {
    $("wallet-error").hidden = true;
    $("sign").disabled = true;
    try {
      const issued = await call("terms", { subscriber: account });
      $("permit-words").textContent =
        `it lets the contract take up to ${S.formatAmount(issued.permit.value)} in all, one charge of ` +
        `${S.formatAmount(subscription.amount)} per period`;
      S.setStatus("Confirm the subscription terms in your wallet (no fee).", "info");
      const signature = await S.signTypedData(account, issued.typedData);
      S.setStatus("Confirm the USDC allowance in your wallet (no fee).", "info");
      const permit = splitSignature(await S.signTypedData(account, issued.permit.typedData));
      S.setStatus("Sending your subscription…", "info");
      const sent = await call("authorize", { signature, permit: { deadline: issued.permit.deadline, ...permit } });
      $("pending-hash").replaceChildren(S.transactionElement(sent.transactionHash, subscription.chainId));
      $("wallet-step").hidden = true;
      $("pending-step").hidden = false;
      $("pending-title").focus();
      await refresh();
    } catch (error) {
      S.setStatus("Read the terms, then connect your wallet to subscribe.", "info");
      showError(S.refusal(error));
    } finally {
      $("sign").disabled = false;
    }
  });

  if (clientToken === undefined) {
    S.setStatus("This page needs the subscription link the shop sent you (it ends with #st=…). Open that link again.", "error");
  } else {
    refresh();
  }
})();
