// Hosted checkout page. Two ways in, one page:
// - framed by the partner's <usdc-checkout> component: the client token arrives by
//   postMessage from the framing page (whose origin the component names in
//   `?parentOrigin=`), and every message back goes to that origin only;
// - standalone, from the session's `url`: the token rides in the URL fragment
//   (`#ct=…`, never sent to a server nor put in a Referer), is read once and removed
//   from the address bar with history.replaceState.
// The token lives in this closure only, never in storage.
//
// States (reported to the component as `statechange`; see the README): loading,
// awaiting_details, awaiting_payment, checking, payment_not_found, payment_rejected,
// wrong_amount, payment_pending, settled, expired, error.
(() => {
  const CHANNEL = "usdc-checkout";
  const POLL_MS = 2500;
  // A hash the service could not check (a restart, a busy moment) is sent again by itself.
  const HASH_RETRY_MS = 3000;
  const HASH_RETRY_LIMIT = 40;
  const REDIRECT_MS = 4000;
  const NETWORK_LABELS = {
    base: "Base",
    "base-sepolia": "Base Sepolia (test network)",
    local: "Local test chain (Anvil)",
  };
  const $ = (id) => document.getElementById(id);
  const root = $("checkout");
  const sessionId = root.dataset.sessionId;
  const parentOrigin = readParentOrigin();
  const framed = parentOrigin !== undefined && window.parent !== window;

  let clientToken;
  let session;
  let state;
  /** Set while a hash waits to be sent again (a restart, a busy moment). */
  let hashRetryTimer;
  let hashRetries = 0;
  let completed = false;
  let pollTimer;
  let countdownTimer;
  let redirectTimer;
  let qrShown = false;
  let brandingShown = false;
  let prefilled = false;

  // ---------- amounts: bigint math only, never a float ----------
  /** The exact amount, every decimal: what the customer must send. */
  function formatExact(baseUnits) {
    const value = BigInt(baseUnits);
    const whole = value / 1000000n;
    const fraction = (value % 1000000n).toString().padStart(6, "0");
    return `${whole}.${fraction}`;
  }

  /** As a merchant writes a price: "25.00 USDC", more decimals only when they are not zero. */
  function formatPrice(baseUnits) {
    const value = BigInt(baseUnits);
    const whole = (value / 1000000n).toLocaleString("en-US");
    let fraction = (value % 1000000n).toString().padStart(6, "0").replace(/0+$/, "");
    if (fraction.length < 2) fraction = fraction.padEnd(2, "0");
    return `${whole}.${fraction} USDC`;
  }

  function networkLabel(name, chainId) {
    return `${NETWORK_LABELS[name] || name} · chain id ${chainId}`;
  }

  /** 0x1234 5678 …: groups of four wrap between them, never inside one. */
  function groupedAddress(address) {
    // Read out (and copied) whole; shown in groups that wrap between them, never inside one.
    $("recipient").textContent = address;
    const groups = [address.slice(0, 6), ...(address.slice(6).match(/.{1,4}/g) || [])];
    const shown = $("recipient-groups");
    shown.replaceChildren();
    groups.forEach((group, index) => {
      const span = document.createElement("span");
      span.className = "group";
      span.textContent = group;
      shown.append(span);
      if (index < groups.length - 1) shown.append(" ");
    });
  }

  // ---------- the token: from the framing page, or from the fragment ----------
  function readParentOrigin() {
    const value = new URLSearchParams(location.search).get("parentOrigin");
    if (!value) return undefined;
    try {
      const origin = new URL(value).origin;
      return origin === value && origin !== "null" ? origin : undefined;
    } catch {
      return undefined;
    }
  }

  function takeTokenFromFragment() {
    const token = new URLSearchParams(location.hash.slice(1)).get("ct");
    // Out of the address bar, the history entry and any later copy-paste of the URL.
    if (location.hash) history.replaceState(history.state, "", location.pathname + location.search);
    return token && token.length <= 200 ? token : undefined;
  }

  function tellParent(type, payload) {
    if (!framed) return;
    window.parent.postMessage({ source: CHANNEL, sessionId, type, ...payload }, parentOrigin);
  }

  function onParentMessage(event) {
    if (event.source !== window.parent || event.origin !== parentOrigin) return;
    const message = event.data;
    if (!message || message.source !== CHANNEL || message.sessionId !== sessionId) return;
    if (message.type !== "init" || typeof message.clientToken !== "string" || clientToken !== undefined) return;
    clientToken = message.clientToken;
    start();
  }

  // ---------- API (same origin; the token rides in the JSON body) ----------
  const api = (path, body) => window.UsdcHostedApi.post(path, clientToken, body);
  const sessionPath = (suffix) => `/v1/public/checkout/sessions/${encodeURIComponent(sessionId)}/${suffix}`;
  const validate = () => api(sessionPath("validate"), {});

  // ---------- state ----------
  function setState(next, message, tone) {
    const status = $("status");
    if (status.textContent !== message) status.textContent = message;
    status.dataset.tone = tone || "info";
    root.dataset.state = next;
    if (next === state) return;
    state = next;
    tellParent("state", { state: next, message });
  }

  function show(stepId) {
    for (const id of ["details-step", "payment-step", "pending-step", "done-step", "closed-step"]) $(id).hidden = id !== stepId;
    // Move focus to the new step only while the customer works in this page, never
    // stealing it from the shop's page around the frame.
    const heading = $(stepId).querySelector("h2");
    if (heading && document.hasFocus()) heading.focus();
  }

  function shopName() {
    return session?.merchant?.displayName || "the shop";
  }

  function render(next) {
    session = next;
    showBranding();
    showSummary();

    if (session.status === "settled") return complete();
    if (session.status === "expired") return closeExpired();
    if (session.status === "payment_pending") return showPending();
    if (!session.contactProvided) {
      if (state !== "awaiting_details") showDetails();
      return setState("awaiting_details", "Enter your details to continue.");
    }
    showPayment();
    if (showMismatch()) return;
    // A refusal stays until the customer acts; a hash waiting to be checked again keeps saying so.
    if (state === "payment_not_found" || state === "payment_rejected" || hashRetryTimer !== undefined) return;
    setState("awaiting_payment", "Waiting for your payment.");
  }

  // ---------- the partner's brand and the order ----------
  function showBranding() {
    if (brandingShown || !session.merchant) return;
    brandingShown = true;
    const merchant = session.merchant;
    for (const element of document.querySelectorAll(".shop-name")) element.textContent = merchant.displayName;
    if (merchant.accentColor && /^#[0-9a-f]{6}$/i.test(merchant.accentColor)) {
      // CSSOM, which the page's CSP allows (no inline style attribute).
      document.documentElement.style.setProperty("--accent", readableAccent(merchant.accentColor));
    }
    if (!framed) {
      $("merchant-name").textContent = merchant.displayName;
      if (merchant.logoUrl) {
        $("merchant-logo").src = merchant.logoUrl;
        $("merchant-logo").hidden = false;
      }
      if (session.cancelUrl) {
        $("back-link").href = session.cancelUrl;
        $("back-shop").textContent = merchant.displayName;
        $("back-link").hidden = false;
      }
      $("merchant").hidden = false;
      document.title = `Pay ${merchant.displayName} with USDC`;
    }
    if (merchant.supportUrl) {
      $("support-url").href = merchant.supportUrl;
      $("support-url").hidden = false;
    }
    if (merchant.supportEmail) {
      $("support-email").href = `mailto:${merchant.supportEmail}`;
      $("support-email").textContent = merchant.supportEmail;
      $("support-email").hidden = false;
    }
    $("support-separator").hidden = !(merchant.supportUrl && merchant.supportEmail);
  }

  /** The partner's colour, darkened until white text on it keeps 4.5:1 (and links on white too). */
  function readableAccent(hex) {
    let [r, g, b] = [1, 3, 5].map((i) => Number.parseInt(hex.slice(i, i + 2), 16));
    const luminance = () =>
      [r, g, b]
        .map((c) => c / 255)
        .map((c) => (c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4))
        .reduce((sum, c, i) => sum + c * [0.2126, 0.7152, 0.0722][i], 0);
    while (1.05 / (luminance() + 0.05) < 4.6) [r, g, b] = [r, g, b].map((c) => Math.floor(c * 0.9));
    return `#${[r, g, b].map((c) => c.toString(16).padStart(2, "0")).join("")}`;
  }

  function showSummary() {
    const items = session.lineItems || [
      {
        name: session.product.name,
        quantity: session.product.quantity,
        unitPriceUsdc: undefined,
      },
    ];
    const list = $("line-items");
    list.replaceChildren(
      ...items.map((item) => {
        const li = document.createElement("li");
        const name = document.createElement("span");
        name.textContent = `${item.quantity} × ${item.name}`;
        li.append(name);
        if (item.unitPriceUsdc !== undefined) {
          const price = document.createElement("span");
          price.className = "line-price";
          price.textContent = formatPrice(BigInt(item.unitPriceUsdc) * BigInt(item.quantity));
          li.append(price);
        }
        return li;
      }),
    );
    $("order-total").textContent = formatPrice(session.payment.totalPriceUsdc);
    $("order-summary").hidden = false;
  }

  // ---------- step 1: contact and delivery ----------
  function showDetails() {
    const delivery = $("delivery-fields");
    delivery.hidden = !session.shippingRequired;
    delivery.disabled = !session.shippingRequired;
    prefill();
    show("details-step");
  }

  /** The partner's `customer` prefill; the customer can change any of it. */
  function prefill() {
    if (prefilled || !session.customer) return;
    prefilled = true;
    const customer = session.customer;
    const set = (id, value) => {
      if (value && !$(id).value) $(id).value = value;
    };
    set("email", customer.email);
    set("contact-name", customer.name);
    const d = customer.delivery || {};
    set("delivery-name", d.name);
    set("line1", d.line1);
    set("line2", d.line2);
    set("postal-code", d.postalCode);
    set("city", d.city);
    set("region", d.region);
    set("country", d.country);
  }

  function fieldValue(id) {
    return $(id).value.trim();
  }

  function checkField(id, ok, message, problems) {
    const input = $(id);
    input.setAttribute("aria-invalid", ok ? "false" : "true");
    if (!ok) problems.push({ input, message });
  }

  async function submitDetails(event) {
    event.preventDefault();
    const problems = [];
    checkField("email", /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(fieldValue("email")), "Enter a valid email address.", problems);
    if (session.shippingRequired) {
      checkField("delivery-name", fieldValue("delivery-name") !== "", "Enter the full name for delivery.", problems);
      checkField("line1", fieldValue("line1") !== "", "Enter the delivery address.", problems);
      checkField("postal-code", fieldValue("postal-code") !== "", "Enter the postal code.", problems);
      checkField("city", fieldValue("city") !== "", "Enter the city.", problems);
      checkField("country", /^[A-Za-z]{2}$/.test(fieldValue("country")), "Enter a two-letter country code.", problems);
    }
    const error = $("details-error");
    if (problems.length > 0) {
      error.textContent = problems.map((problem) => problem.message).join(" ");
      error.hidden = false;
      problems[0].input.focus();
      return;
    }
    error.hidden = true;
    const optional = (id) => fieldValue(id) || undefined;
    const body = { contact: { email: fieldValue("email"), name: optional("contact-name") } };
    if (session.shippingRequired) {
      body.delivery = {
        name: fieldValue("delivery-name"),
        line1: fieldValue("line1"),
        line2: optional("line2"),
        city: fieldValue("city"),
        postalCode: fieldValue("postal-code"),
        region: optional("region"),
        country: fieldValue("country").toUpperCase(),
      };
    }
    const button = event.submitter || $("details-form").querySelector("button");
    button.disabled = true;
    try {
      render(await api(sessionPath("details"), body));
    } catch (failure) {
      if (!handleClosed(failure)) {
        error.textContent = failure.message;
        error.hidden = false;
      }
    } finally {
      button.disabled = false;
    }
  }

  // ---------- step 2: payment ----------
  function showPayment() {
    const payment = session.payment;
    $("amount").textContent = formatExact(payment.amount);
    const reference = BigInt(payment.amount) - BigInt(payment.totalPriceUsdc);
    $("amount-hint").textContent =
      `The order total ${formatPrice(payment.totalPriceUsdc)} plus ${formatExact(reference)} USDC that identifies your payment. ` +
      "Send this exact amount, and if an exchange takes a withdrawal fee, add it on top.";
    groupedAddress(payment.recipient);
    $("token-address").textContent = payment.tokenAddress;
    $("network").textContent = networkLabel(session.network, session.chainId);
    $("wallet-link").href = payment.uri;
    $("test-pay").hidden = !session.testPayments;
    if (!qrShown) {
      qrShown = true;
      loadQr().catch(() => {
        qrShown = false;
      });
    }
    startCountdown();
    // Paying by signature, relayed by the service (gasless.js): an option beside the transfer.
    if (window.UsdcGasless) window.UsdcGasless.offer($("gasless"), { sessionId, clientToken, session, onSubmitted: poll });
    if ($("payment-step").hidden) show("payment-step");
  }

  /** A transfer of the wrong amount was submitted on this session: say what arrived and what to do. */
  function showMismatch() {
    const unresolved = session.unresolvedPayment;
    const box = $("mismatch");
    if (!unresolved || (unresolved.reason !== "underpaid" && unresolved.reason !== "overpaid")) {
      box.hidden = true;
      return false;
    }
    const received = formatExact(unresolved.amount);
    const expected = formatExact(unresolved.expectedAmount);
    $("mismatch-message").textContent =
      `We received ${received} USDC, but this order needs exactly ${expected} USDC` +
      (unresolved.reason === "underpaid" ? " (an exchange may have taken a withdrawal fee)." : ".");
    $("mismatch-next").textContent =
      unresolved.reason === "underpaid"
        ? `To finish now, send the exact amount below as a new payment; ${shopName()} will refund or credit the first one. ` +
          `Or wait for ${shopName()} to contact you.`
        : `${shopName()} will credit the order or refund the difference. You can also send the exact amount below as a new payment.`;
    box.hidden = false;
    setState("wrong_amount", `We received ${received} USDC instead of ${expected} USDC. Your money is not lost.`, "warn");
    return true;
  }

  async function loadQr() {
    const response = await fetch(`/checkout/${encodeURIComponent(sessionId)}/qr`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ clientToken }),
      credentials: "omit",
    });
    if (!response.ok) throw new Error("QR code unavailable");
    const parsed = new DOMParser().parseFromString(await response.text(), "image/svg+xml");
    const svg = document.importNode(parsed.documentElement, true);
    if (svg.nodeName.toLowerCase() !== "svg") throw new Error("not an svg");
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", "QR code of the payment request (EIP-681 link)");
    svg.setAttribute("focusable", "false");
    $("qr").replaceChildren(svg);
  }

  function startCountdown() {
    if (countdownTimer !== undefined) return;
    const expiresAt = Date.parse(session.expiresAt);
    const tick = () => {
      const left = Math.max(0, Math.floor((expiresAt - Date.now()) / 1000));
      const minutes = Math.floor(left / 60);
      const seconds = String(left % 60).padStart(2, "0");
      const text =
        left >= 3600 ? `${Math.floor(minutes / 60)} h ${String(minutes % 60).padStart(2, "0")} min` : `${minutes}:${seconds}`;
      $("countdown").textContent = left === 0 ? "expired" : text;
      $("countdown").setAttribute("aria-label", left === 0 ? "expired" : `${minutes} minutes ${left % 60} seconds left`);
      if (left === 0) {
        clearInterval(countdownTimer);
        poll();
      }
    };
    tick();
    countdownTimer = setInterval(tick, 1000);
  }

  function describeRejection(failure) {
    const network = NETWORK_LABELS[session.network] || session.network;
    if (failure.code === "payment_not_found") return `Payment not found: check the hash and the network (${network}).`;
    return `This transaction does not pay this checkout: ${failure.message}`;
  }

  async function submitHash(event) {
    event.preventDefault();
    const input = $("transaction-hash");
    const error = $("hash-error");
    const hash = input.value.trim();
    if (!/^0x[0-9a-fA-F]{64}$/.test(hash)) {
      input.setAttribute("aria-invalid", "true");
      error.textContent = "A transaction hash is 0x followed by 64 hexadecimal characters.";
      error.hidden = false;
      input.focus();
      return;
    }
    input.setAttribute("aria-invalid", "false");
    error.hidden = true;
    hashRetries = 0;
    await sendHash(hash, event.submitter || $("hash-form").querySelector("button"));
  }

  async function sendHash(hash, button) {
    const input = $("transaction-hash");
    const error = $("hash-error");
    clearTimeout(hashRetryTimer);
    hashRetryTimer = undefined;
    button.disabled = true;
    setState("checking", "Checking your transaction…");
    try {
      render((await api("/v1/public/checkout/payments", { transactionHash: hash })).session);
    } catch (failure) {
      if (handleClosed(failure)) return;
      if (failure.problem?.recordedForShop) {
        input.value = "";
        return poll();
      }
      // A restart or a busy moment is not a verdict on the payment: say so, and check again.
      const retry = window.UsdcHostedApi.retryDelay(failure, HASH_RETRY_MS);
      if (retry !== undefined && hashRetries < HASH_RETRY_LIMIT) {
        hashRetries++;
        setState(
          "checking",
          "The service is busy or restarting. Your payment is safe on the network: this page checks the hash again by itself.",
          "warn",
        );
        hashRetryTimer = setTimeout(() => {
          hashRetryTimer = undefined;
          // The poll may have found the payment meanwhile: then there is nothing to send.
          if (session.status === "awaiting_payment" && session.contactProvided) sendHash(hash, button);
        }, retry);
        return;
      }
      const message = describeRejection(failure);
      setState(failure.code === "payment_not_found" ? "payment_not_found" : "payment_rejected", message, "error");
      error.textContent = message;
      error.hidden = false;
      input.setAttribute("aria-invalid", "true");
      input.focus();
    } finally {
      button.disabled = false;
    }
  }

  /** Local mode only: the service pays from one of Anvil's funded accounts. */
  async function payWithTestAccount() {
    const button = $("test-pay");
    button.disabled = true;
    setState("checking", "Sending a test payment…");
    try {
      const result = await api(sessionPath("test-payment"), {});
      render(result.session);
    } catch (failure) {
      if (!handleClosed(failure)) setState("payment_rejected", `The test payment failed: ${failure.message}`, "error");
    } finally {
      button.disabled = false;
    }
  }

  // ---------- payment seen, waiting for confirmations ----------
  function showPending() {
    const required = session.requiredConfirmations || 1;
    const seen = Math.min(session.confirmations || 0, required);
    const text = `Payment seen, ${seen} of ${required} confirmations.`;
    $("pending-message").textContent = text;
    $("pending-hash").textContent = session.transactionHash || "";
    if ($("pending-step").hidden) show("pending-step");
    setState("payment_pending", `${text} Keep this page open.`, "warn");
  }

  // ---------- the end states ----------
  function complete() {
    stopTimers();
    $("done-message").textContent = `Your payment is confirmed and ${shopName()} has been notified.`;
    $("done-hash").textContent = session.transactionHash || "";
    show("done-step");
    setState("settled", "Payment received. Thank you!", "ok");
    // A reward to claim keeps the customer here: the way back is a link, not a timed redirect.
    const rewardToClaim = window.UsdcRewards ? window.UsdcRewards.render(session, clientToken) : false;
    if (rewardToClaim && !framed && session.successUrl) {
      $("success-link").textContent = `Return to ${shopName()}`;
      $("success-link").href = session.successUrl;
      $("redirect-message").textContent = "";
      $("redirect-line").hidden = false;
    } else if (!framed && session.successUrl) {
      $("redirect-message").textContent = `Taking you back to ${shopName()} in a few seconds… `;
      $("success-link").textContent = `Return to ${shopName()} now`;
      $("success-link").href = session.successUrl;
      $("redirect-line").hidden = false;
      if (redirectTimer === undefined) redirectTimer = setTimeout(() => location.assign(session.successUrl), REDIRECT_MS);
    }
    if (completed) return;
    completed = true;
    tellParent("complete", {
      data: {
        session: {
          id: session.id,
          externalOrderId: session.externalOrderId,
          orderId: session.orderId,
          purchaseId: session.purchaseId,
          status: session.status,
          network: session.network,
          chainId: session.chainId,
          amount: session.payment.amount,
          totalPriceUsdc: session.payment.totalPriceUsdc,
        },
        transactionHash: session.transactionHash,
        // A voucher exists only after the customer names a wallet on the claim page.
        certificate: undefined,
      },
    });
  }

  function closeExpired() {
    stopTimers();
    $("closed-message").textContent =
      "This checkout session has expired and no payment was received for it in time. Start again to get a new payment request " +
      "for your order.";
    const late = session?.unresolvedPayment && session.unresolvedPayment.reason === "late";
    if (late) {
      $("late-message").textContent =
        `A payment of ${formatExact(session.unresolvedPayment.amount)} USDC arrived after the checkout expired. Your money is not ` +
        `lost: ${shopName()} has been told and will credit or refund it.`;
    }
    $("late-message").hidden = !late;
    if (session?.cancelUrl) {
      $("restart-link").href = session.cancelUrl;
      $("restart-link").hidden = false;
    } else {
      $("closed-message").textContent += " Return to the shop to start a new checkout.";
    }
    showSupport();
    show("closed-step");
    setState("expired", "Session expired.", "error");
  }

  function showSupport() {
    const merchant = session?.merchant;
    $("support").hidden = !(merchant && (merchant.supportUrl || merchant.supportEmail));
  }

  function fail(message, status) {
    stopTimers();
    $("closed-message").textContent = message;
    showSupport();
    show("closed-step");
    setState("error", status, "error");
  }

  function handleClosed(failure) {
    if (failure.code === "session_expired" || failure.status === 410) {
      closeExpired();
      return true;
    }
    if (failure.code === "invalid_client_token") {
      fail(
        "This checkout link is not valid. Return to the shop and start the checkout again.",
        "This checkout could not be opened.",
      );
      return true;
    }
    return false;
  }

  function stopTimers() {
    clearTimeout(pollTimer);
    clearInterval(countdownTimer);
    pollTimer = undefined;
  }

  // ---------- polling ----------
  async function poll() {
    clearTimeout(pollTimer);
    try {
      render(await validate());
    } catch (failure) {
      if (handleClosed(failure)) return;
    }
    if (state !== "settled" && state !== "expired" && state !== "error") pollTimer = setTimeout(poll, POLL_MS);
  }

  function start() {
    setState("loading", "Loading the checkout…");
    poll();
  }

  // ---------- copy buttons ----------
  async function copy(event) {
    const button = event.target.closest("button[data-copy]");
    if (!button) return;
    const source = $(button.dataset.copy);
    const text = source.dataset.value || source.textContent;
    try {
      await navigator.clipboard.writeText(text);
    } catch {
      const range = document.createRange();
      range.selectNodeContents(source);
      const selection = window.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
      document.execCommand("copy");
    }
    $("copy-status").textContent = `${button.getAttribute("aria-label").replace("Copy ", "")} copied.`;
  }

  // ---------- size: the component sizes the frame to the page ----------
  function watchSize() {
    // The body, not the document: the document is never shorter than the frame, so it could only grow.
    const report = () => tellParent("resize", { height: Math.ceil(document.body.getBoundingClientRect().height) });
    new ResizeObserver(report).observe(document.body);
    report();
  }

  $("details-form").addEventListener("submit", submitDetails);
  $("hash-form").addEventListener("submit", submitHash);
  $("test-pay").addEventListener("click", payWithTestAccount);
  root.addEventListener("click", copy);

  if (framed) {
    window.addEventListener("message", onParentMessage);
    watchSize();
    tellParent("ready", {});
  } else {
    clientToken = takeTokenFromFragment();
    if (clientToken === undefined) {
      fail(
        "Open this checkout from the link or the page the shop gave you: the link carries the key to your checkout.",
        "This checkout could not be opened.",
      );
    } else {
      start();
    }
  }
})();
