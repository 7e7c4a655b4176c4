// USDC hosted checkout component, for partner pages:
//
//   <script src="https://<service>/assets/checkout-component.js"></script>
//   UsdcCheckout.mount(element, { sessionId, clientToken, onComplete, onStateChange })
//
// or the custom element, in either form:
//
//   <usdc-checkout session-id="cs_..." client-token="..."></usdc-checkout>   (attributes, in the HTML)
//   element.sessionId = "cs_..."; element.clientToken = "...";                (properties, from script)
//
// and the `complete` / `statechange` events. It frames `/checkout/:sessionId` of the
// service and hands the client token to the frame by postMessage, addressed to the
// service's origin only; it listens only to that frame from that origin. The token
// never goes into a URL; a `client-token` attribute is read once and removed from the
// element, so it does not stay in the DOM. No wallet is needed: the customer pays by
// sending USDC from anywhere.
//
// The completion callback is for the customer's page only: fulfil an order on the
// signed `purchase.settled` event that your server receives, never on this callback.
(() => {
  const CHANNEL = "usdc-checkout";
  const SESSION_ID = /^[A-Za-z0-9_-]{1,100}$/;
  const scriptOrigin = document.currentScript ? new URL(document.currentScript.src, location.href).origin : location.origin;

  function serviceBase(baseUrl) {
    const url = new URL(baseUrl || scriptOrigin, location.href);
    return { base: url.href.replace(/\/+$/, ""), origin: url.origin };
  }

  /**
   * Frames the hosted checkout into `element` (an element or a shadow root).
   * Returns `{ unmount() }`.
   */
  function mount(element, options) {
    const { sessionId, clientToken, onComplete, onStateChange } = options || {};
    if (!element || typeof element.replaceChildren !== "function") throw new TypeError("mount: pass the element to mount into.");
    if (typeof sessionId !== "string" || !SESSION_ID.test(sessionId))
      throw new TypeError("mount: `sessionId` is not a session id.");
    if (typeof clientToken !== "string" || clientToken === "") throw new TypeError("mount: `clientToken` is required.");
    const service = serviceBase(options.baseUrl);

    const frame = document.createElement("iframe");
    frame.title = options.title || "Pay with USDC";
    frame.src = `${service.base}/checkout/${encodeURIComponent(sessionId)}?parentOrigin=${encodeURIComponent(location.origin)}`;
    frame.allow = "clipboard-write";
    frame.style.width = "100%";
    frame.style.minHeight = "32rem";
    frame.style.border = "0";
    frame.style.display = "block";

    let completed = false;
    let tokenSent = false;
    const onMessage = (event) => {
      if (event.source !== frame.contentWindow || event.origin !== service.origin) return;
      const message = event.data;
      if (!message || message.source !== CHANNEL || message.sessionId !== sessionId) return;
      switch (message.type) {
        case "ready":
          if (tokenSent) return;
          tokenSent = true;
          frame.contentWindow.postMessage({ source: CHANNEL, type: "init", sessionId, clientToken }, service.origin);
          return;
        case "state":
          if (typeof onStateChange === "function") onStateChange({ state: message.state, message: message.message });
          return;
        case "resize":
          // The frame reports its content height; the initial minimum only covers loading.
          if (Number.isFinite(message.height)) {
            frame.style.minHeight = "0";
            frame.style.height = `${Math.ceil(message.height) + 2}px`;
          }
          return;
        case "complete":
          if (completed) return;
          completed = true;
          if (typeof onComplete === "function") onComplete(message.data);
          return;
      }
    };
    window.addEventListener("message", onMessage);
    element.replaceChildren(frame);
    return {
      unmount() {
        window.removeEventListener("message", onMessage);
        frame.remove();
      },
    };
  }

  /**
   * Opens the certificate claim page with the client token in a POST body (never
   * the URL). The partner page's CSP must allow the service in `form-action`.
   */
  function openClaim(options) {
    const { sessionId, clientToken, target } = options || {};
    if (typeof sessionId !== "string" || !SESSION_ID.test(sessionId))
      throw new TypeError("openClaim: `sessionId` is not a session id.");
    if (typeof clientToken !== "string" || clientToken === "") throw new TypeError("openClaim: `clientToken` is required.");
    const service = serviceBase(options.baseUrl);
    const form = document.createElement("form");
    form.method = "post";
    form.action = `${service.base}/claim/${encodeURIComponent(sessionId)}`;
    form.target = target || "_self";
    form.hidden = true;
    const input = document.createElement("input");
    input.type = "hidden";
    input.name = "clientToken";
    input.value = clientToken;
    form.append(input);
    document.body.append(form);
    form.submit();
    form.remove();
  }

  class UsdcCheckoutElement extends HTMLElement {
    static get observedAttributes() {
      return ["session-id", "base-url", "client-token"];
    }

    #token;
    #mounted;

    constructor() {
      super();
      this.attachShadow({ mode: "open" });
    }

    /** Set it from script (or as the `client-token` attribute); it is never reflected to an attribute. */
    set clientToken(value) {
      this.#token = value;
      this.#render();
    }

    get clientToken() {
      return undefined;
    }

    /** The same as the `session-id` attribute. */
    set sessionId(value) {
      if (typeof value === "string" && value !== "") this.setAttribute("session-id", value);
      else this.removeAttribute("session-id");
    }

    get sessionId() {
      return this.getAttribute("session-id") || undefined;
    }

    connectedCallback() {
      this.#takeTokenAttribute();
      this.#render();
    }

    /** Moves a `client-token` attribute into the private field and off the element. */
    #takeTokenAttribute() {
      const attribute = this.getAttribute("client-token");
      if (attribute === null) return false;
      this.removeAttribute("client-token");
      if (attribute === "") return false;
      this.#token = attribute;
      return true;
    }

    disconnectedCallback() {
      this.#mounted?.unmount();
      this.#mounted = undefined;
    }

    attributeChangedCallback(name) {
      // The removal of a taken token attribute changes nothing; a new one replaces the token.
      if (name === "client-token" && !this.#takeTokenAttribute()) return;
      if (this.#mounted) {
        this.#mounted.unmount();
        this.#mounted = undefined;
      }
      this.#render();
    }

    #render() {
      const sessionId = this.getAttribute("session-id");
      if (this.#mounted || !this.isConnected || !sessionId || !this.#token) return;
      this.#mounted = mount(this.shadowRoot, {
        sessionId,
        clientToken: this.#token,
        baseUrl: this.getAttribute("base-url") || undefined,
        title: this.getAttribute("frame-title") || undefined,
        onStateChange: (detail) => this.dispatchEvent(new CustomEvent("statechange", { detail, bubbles: true, composed: true })),
        onComplete: (detail) => this.dispatchEvent(new CustomEvent("complete", { detail, bubbles: true, composed: true })),
      });
    }
  }

  if (!customElements.get("usdc-checkout")) customElements.define("usdc-checkout", UsdcCheckoutElement);
  window.UsdcCheckout = Object.freeze({ mount, openClaim, version: "1" });
})();
