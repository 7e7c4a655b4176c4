// Hosted checkout page, framed by the partner's <usdc-checkout> component.
// The client token arrives by postMessage from the framing page (whose origin the
// component names in `?parentOrigin=`); it lives in this closure only, never in a
// URL or in storage. Every message back goes to that origin and nowhere else.
(() => {
  const CHANNEL = "usdc-checkout";
  const POLL_MS = 2500;
  const NETWORK_LABELS = {
    base: "Base",
    "base-sepolia": "Base Sepolia (test network)",
    local: "Local test chain (Anvil)",
  };
  const $ = (id) => document.getElementById(id);
  const root = $("checkout");
  const sessionId = root.dataset.sessionId;
  const parentOrigin = readParentOrigin();

  let clientToken;
  let session;
  let state;
  let completed = false;
  let pollTimer;
  let countdownTimer;
  let qrShown = false;

  // ---------- amounts: bigint math only, never a float ----------
  function formatUsdc(baseUnits) {
    const value = BigInt(baseUnits);
    const whole = value / 1000000n;
    const fraction = (value % 1000000n).toString().padStart(6, "0");
    return `${whole}.${fraction}`;
  }

  function networkLabel(name, chainId) {
    return `${NETWORK_LABELS[name] || name} · chain id ${chainId}`;
  }

  // ---------- talking to the framing page ----------
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

  function tellParent(type, payload) {
    if (parentOrigin === undefined || window.parent === window) return;
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

  const validate = () => api(`/v1/public/checkout/sessions/${encodeURIComponent(sessionId)}/validate`, {});

  // ---------- state ----------
  function setState(next, message, tone) {
    const status = $("status");
    if (status.textContent !== message) status.textContent = message;
    status.dataset.tone = tone || "info";
    if (next === state) return;
    state = next;
    tellParent("state", { state: next, message });
  }

  function show(stepId) {
    for (const id of ["details-step", "payment-step", "done-step", "closed-step"]) $(id).hidden = id !== stepId;
    // Move focus to the new step only while the customer works in this frame, never
    // stealing it from the shop's page.
    const heading = $(stepId).querySelector("h2");
    if (heading && document.hasFocus()) heading.focus();
  }

  function render(next) {
    session = next;
    const product = session.product;
    $("summary").textContent =
      `${product.quantity} × ${product.name} · order total ${formatUsdc(session.payment.totalPriceUsdc)} USDC`;
    $("summary").hidden = false;

    if (session.status === "settled") return complete();
    if (session.status === "expired") return closeExpired();
    if (session.status === "payment_pending") {
      showPayment();
      return setState("payment_pending", "Payment seen on chain, waiting for confirmation. Keep this page open.", "warn");
    }
    if (!session.contactProvided) {
      if (state !== "awaiting_details") showDetails();
      return setState("awaiting_details", "Enter your details to continue.");
    }
    showPayment();
    if (state === "payment_not_found" || state === "payment_rejected") return;
    setState("awaiting_payment", "Waiting for your payment.");
  }

  // ---------- step 1: contact and delivery ----------
  function showDetails() {
    const delivery = $("delivery-fields");
    delivery.hidden = !session.shippingRequired;
    delivery.disabled = !session.shippingRequired;
    show("details-step");
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
      render(await api(`/v1/public/checkout/sessions/${encodeURIComponent(sessionId)}/details`, body));
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
    $("amount").textContent = formatUsdc(payment.amount);
    const reference = BigInt(payment.amount) - BigInt(payment.totalPriceUsdc);
    $("amount-hint").textContent =
      `Order total ${formatUsdc(payment.totalPriceUsdc)} USDC plus ${formatUsdc(reference)} USDC that identifies your payment. ` +
      "Send this exact amount.";
    $("recipient").textContent = payment.recipient;
    $("token-address").textContent = payment.tokenAddress;
    $("network").textContent = networkLabel(session.network, session.chainId);
    $("wallet-link").href = payment.uri;
    if (!qrShown) {
      qrShown = true;
      loadQr().catch(() => {
        qrShown = false;
      });
    }
    startCountdown();
    if ($("payment-step").hidden) show("payment-step");
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
    const button = event.submitter || $("hash-form").querySelector("button");
    button.disabled = true;
    setState("checking", "Checking your transaction…");
    try {
      const result = await api("/v1/public/checkout/payments", { transactionHash: hash });
      if (result.status === "settled") {
        render(result.session);
      } else {
        session = result.session;
        setState("payment_pending", "Payment found, waiting for confirmation. Keep this page open.", "warn");
      }
    } catch (failure) {
      if (handleClosed(failure)) return;
      const network = NETWORK_LABELS[session.network] || session.network;
      const notFound = failure.code === "payment_not_found";
      const message = notFound
        ? `Payment not found: check the hash and the network (${network}).`
        : `This transaction does not pay this checkout: ${failure.message}`;
      setState(notFound ? "payment_not_found" : "payment_rejected", message, "error");
      error.textContent = message;
      error.hidden = false;
      input.setAttribute("aria-invalid", "true");
      input.focus();
    } finally {
      button.disabled = false;
    }
  }

  // ---------- the end states ----------
  function complete() {
    stopTimers();
    $("done-message").textContent =
      "Your payment is confirmed. The shop has been notified and will take it from here. You can close this window.";
    $("done-hash").textContent = session.transactionHash || "";
    show("done-step");
    setState("settled", "Payment received. Thank you!", "ok");
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
      "This checkout session has expired and no payment was received. Return to the shop to start a new checkout for this order. " +
      "If you already sent USDC, keep the transaction hash and contact the shop.";
    show("closed-step");
    setState("expired", "Session expired.", "error");
  }

  function handleClosed(failure) {
    if (failure.code === "session_expired" || failure.status === 410) {
      closeExpired();
      return true;
    }
    if (failure.code === "invalid_client_token") {
      stopTimers();
      $("closed-message").textContent = "This checkout link is not valid. Return to the shop and start the checkout again.";
      show("closed-step");
      setState("error", "This checkout could not be opened.", "error");
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
    const text = source.textContent;
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
  root.addEventListener("click", copy);

  if (parentOrigin === undefined || window.parent === window) {
    setState("error", "Open this checkout from the shop's page: it cannot be used on its own.", "error");
  } else {
    window.addEventListener("message", onParentMessage);
    watchSize();
    tellParent("ready", {});
  }
})();
