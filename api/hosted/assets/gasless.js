// "Pay from a connected wallet, no ETH needed" (EIP-3009), beside the plain transfer.
// The customer's injected wallet signs TransferWithAuthorization for exactly this
// session (its payment address, its displayed amount, valid until its expiry, a fresh
// random nonce) against the token's own EIP-712 domain: the typed data the service
// serves for that wallet (the session read with `payer`), signed as served. The service
// relays it and pays the gas. Nothing here moves money by itself: the
// session settles from the chain like any transfer, and the page's poll shows it.
(() => {
  const mounted = new WeakMap();

  const sessionPath = (options, suffix) => `/v1/public/checkout/sessions/${encodeURIComponent(options.sessionId)}/${suffix}`;

  /**
   * What the connected wallet signs, as the service builds it for that wallet (the session
   * read with `payer`): the page adds nothing and changes nothing.
   */
  async function servedTypedData(options, from) {
    const session = await window.UsdcHostedApi.post(sessionPath(options, "validate"), options.clientToken, { payer: from });
    const typedData = session.gasless?.typedData;
    if (!typedData) throw new Error("Paying from a connected wallet is not offered for this checkout any more.");
    return typedData;
  }

  async function ensureChain(provider, chainId) {
    const current = await provider.request({ method: "eth_chainId" });
    if (Number.parseInt(current, 16) === chainId) return;
    await provider.request({ method: "wallet_switchEthereumChain", params: [{ chainId: `0x${chainId.toString(16)}` }] });
  }

  function build(container) {
    container.replaceChildren();
    const heading = document.createElement("h3");
    heading.id = "gasless-title";
    heading.textContent = "Or pay from a connected wallet, no ETH needed";
    const text = document.createElement("p");
    text.textContent =
      "Your wallet signs a USDC transfer of exactly this amount to this shop, valid until this checkout expires. " +
      "We send it to the network and pay the fee.";
    const button = document.createElement("button");
    button.type = "button";
    button.id = "gasless-pay";
    button.className = "secondary";
    button.textContent = "Pay from a connected wallet, no ETH needed";
    const status = document.createElement("p");
    status.id = "gasless-status";
    status.setAttribute("role", "status");
    status.setAttribute("aria-live", "polite");
    const error = document.createElement("p");
    error.id = "gasless-error";
    error.className = "error";
    error.setAttribute("role", "alert");
    error.hidden = true;
    container.setAttribute("aria-labelledby", heading.id);
    container.append(heading, text, button, status, error);
    return { button, status, error };
  }

  async function pay(state) {
    const { ui, options } = state;
    const provider = window.ethereum;
    ui.error.hidden = true;
    ui.button.disabled = true;
    try {
      ui.status.textContent = "Connecting your wallet…";
      const [from] = await provider.request({ method: "eth_requestAccounts" });
      await ensureChain(provider, state.session.chainId);
      ui.status.textContent = "Confirm the signature in your wallet (no fee).";
      const data = await servedTypedData(options, from);
      const signature = await provider.request({ method: "eth_signTypedData_v4", params: [from, JSON.stringify(data)] });
      ui.status.textContent = "Sending your payment…";
      const answer = await window.UsdcHostedApi.post(sessionPath(options, "authorizations"), options.clientToken, {
        authorization: data.message,
        signature,
        domain: { chainId: data.domain.chainId, verifyingContract: data.domain.verifyingContract },
      });
      state.submitted = answer.transactionHash;
      ui.status.textContent = `Payment sent (transaction ${answer.transactionHash}). Waiting for the network…`;
      if (typeof options.onSubmitted === "function") options.onSubmitted(answer);
    } catch (failure) {
      ui.status.textContent = "";
      ui.error.textContent = failure?.message ? failure.message : "The wallet did not sign.";
      ui.error.hidden = false;
      ui.button.disabled = false;
    }
  }

  window.UsdcGasless = {
    /**
     * Shows the option in `container` while the session awaits payment and the
     * service offers it (`session.gasless.available`) and a wallet is injected.
     * Called on every render of the payment step; builds its controls once.
     */
    offer(container, options) {
      const session = options.session;
      const usable = window.ethereum !== undefined && session.status === "awaiting_payment" && session.gasless?.available;
      let state = mounted.get(container);
      if (!usable && !state?.submitted) {
        container.hidden = true;
        return;
      }
      if (state === undefined) {
        state = { ui: build(container), options, session, submitted: undefined };
        state.ui.button.addEventListener("click", () => pay(state));
        mounted.set(container, state);
      }
      state.options = options;
      state.session = session;
      container.hidden = false;
    },
  };
})();
