import { html } from "hono/html";

/**
 * The hosted pages' markup. Server-side they know only the session id: every
 * detail of the session is read by the page's script with the client token, which
 * reaches the page by postMessage (checkout) or a form POST (claim), never a URL.
 */
const head = (title: string) => html`<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${title}</title>
<link rel="stylesheet" href="/assets/hosted.css">
</head>`;

export function checkoutPage(params: { sessionId: string }) {
  return html`<!doctype html>
<html lang="en">
${head("Pay with USDC")}
<body>
<header id="merchant" class="merchant" hidden>
  <div class="merchant-id">
    <img id="merchant-logo" class="merchant-logo" alt="" hidden>
    <span id="merchant-name" class="merchant-name"></span>
  </div>
  <a id="back-link" class="back-link" hidden>Back to <span id="back-shop"></span></a>
</header>
<main id="checkout" class="card" data-session-id="${params.sessionId}" aria-labelledby="checkout-title">
  <h1 id="checkout-title">Pay with USDC</h1>
  <section id="order-summary" class="order-summary" aria-label="Order summary" hidden>
    <ul id="line-items" class="line-items"></ul>
    <p class="order-total"><span>Total</span> <strong id="order-total"></strong></p>
  </section>
  <p id="status" class="status" role="status" aria-live="polite">Loading the checkout…</p>

  <section id="details-step" aria-labelledby="details-title" hidden>
    <h2 id="details-title" tabindex="-1">1. Your details</h2>
    <form id="details-form" novalidate>
      <fieldset>
        <legend>Contact</legend>
        <div class="field">
          <label for="email">Email <span class="required">(required)</span></label>
          <input id="email" name="email" type="email" autocomplete="email" required aria-describedby="email-hint">
          <p id="email-hint" class="hint">For the receipt and questions about your order.</p>
        </div>
        <div class="field">
          <label for="contact-name">Name</label>
          <input id="contact-name" name="name" type="text" autocomplete="name" maxlength="200">
        </div>
      </fieldset>
      <fieldset id="delivery-fields" hidden disabled>
        <legend>Delivery address</legend>
        <div class="field">
          <label for="delivery-name">Full name <span class="required">(required)</span></label>
          <input id="delivery-name" name="deliveryName" type="text" autocomplete="shipping name" required maxlength="200">
        </div>
        <div class="field">
          <label for="line1">Address <span class="required">(required)</span></label>
          <input id="line1" name="line1" type="text" autocomplete="shipping address-line1" required maxlength="200">
        </div>
        <div class="field">
          <label for="line2">Address line 2</label>
          <input id="line2" name="line2" type="text" autocomplete="shipping address-line2" maxlength="200">
        </div>
        <div class="row">
          <div class="field">
            <label for="postal-code">Postal code <span class="required">(required)</span></label>
            <input id="postal-code" name="postalCode" type="text" autocomplete="shipping postal-code" required maxlength="20">
          </div>
          <div class="field">
            <label for="city">City <span class="required">(required)</span></label>
            <input id="city" name="city" type="text" autocomplete="shipping address-level2" required maxlength="100">
          </div>
        </div>
        <div class="row">
          <div class="field">
            <label for="region">Region</label>
            <input id="region" name="region" type="text" autocomplete="shipping address-level1" maxlength="100">
          </div>
          <div class="field">
            <label for="country">Country code <span class="required">(required)</span></label>
            <input id="country" name="country" type="text" autocomplete="shipping country" required minlength="2" maxlength="2"
              pattern="[A-Za-z]{2}" aria-describedby="country-hint">
            <p id="country-hint" class="hint">Two letters, for example PT or US.</p>
          </div>
        </div>
      </fieldset>
      <p id="details-error" class="error" role="alert" hidden></p>
      <button type="submit" class="primary">Continue to payment</button>
    </form>
  </section>

  <section id="payment-step" aria-labelledby="payment-title" hidden>
    <h2 id="payment-title" tabindex="-1">2. Send the payment</h2>
    <div id="mismatch" class="notice" hidden>
      <h3 id="mismatch-title">The amount we received is not the amount of this order</h3>
      <p id="mismatch-message"></p>
      <p>Your money is not lost: it reached the payment address of <span class="shop-name"></span>, which has been told
        about it and can credit or refund it.</p>
      <p id="mismatch-next"></p>
    </div>
    <div class="amount-due">
      <p class="amount-label">Send exactly</p>
      <p class="amount-value"><strong id="amount"></strong> <span>USDC</span>
        <button type="button" class="copy" data-copy="amount" aria-label="Copy amount">Copy</button></p>
      <p class="hint" id="amount-hint"></p>
    </div>
    <div id="pay-actions" class="pay-actions">
      <a id="wallet-link" class="button primary" href="#">Open in your wallet app</a>
      <button type="button" id="test-pay" class="secondary" hidden>Pay with a test account</button>
    </div>
    <figure class="qr">
      <div id="qr"></div>
      <figcaption>Or scan this code with a wallet app on another device.</figcaption>
    </figure>
    <dl class="payment">
      <div>
        <dt>To address</dt>
        <dd><code class="address grouped"><span id="recipient" class="visually-hidden"></span><span id="recipient-groups"
          aria-hidden="true"></span></code>
          <button type="button" class="copy" data-copy="recipient" aria-label="Copy address">Copy</button></dd>
      </div>
      <div>
        <dt>Network</dt>
        <dd id="network"></dd>
      </div>
      <div>
        <dt>Token</dt>
        <dd>USDC <code id="token-address" class="address"></code></dd>
      </div>
      <div>
        <dt>Time left</dt>
        <dd><span id="countdown" role="timer" aria-live="off"></span></dd>
      </div>
    </dl>
    <span id="copy-status" class="visually-hidden" aria-live="polite"></span>
    <form id="hash-form" novalidate>
      <div class="field">
        <label for="transaction-hash">Transaction hash</label>
        <input id="transaction-hash" name="transactionHash" type="text" inputmode="text" autocomplete="off" spellcheck="false"
          pattern="0x[0-9a-fA-F]{64}" aria-describedby="hash-hint" required>
        <p id="hash-hint" class="hint">After sending, paste the transaction hash (0x followed by 64 characters) from your wallet.
          We also notice the payment without it.</p>
      </div>
      <p id="hash-error" class="error" role="alert" hidden></p>
      <button type="submit" class="primary">Submit transaction hash</button>
    </form>
    <section id="gasless" class="gasless" hidden></section>
  </section>

  <section id="pending-step" aria-labelledby="pending-title" hidden>
    <h2 id="pending-title" tabindex="-1">Confirming your payment</h2>
    <p id="pending-message" class="pending-message"></p>
    <p>The network confirms each payment a few times before the shop ships. Keep this page open; it updates by itself.</p>
    <p>Transaction: <code id="pending-hash" class="address"></code></p>
  </section>

  <section id="done-step" aria-labelledby="done-title" hidden>
    <h2 id="done-title" tabindex="-1">Payment received</h2>
    <p id="done-message"></p>
    <p id="done-paid" hidden></p>
    <p>Transaction: <code id="done-hash" class="address"></code></p>
    <p id="redirect-line" hidden><span id="redirect-message"></span>
      <a id="success-link" class="button primary"></a></p>
  </section>

  <section id="rewards-step" class="rewards" aria-labelledby="rewards-title" hidden>
    <h2 id="rewards-title" tabindex="-1">Claim your reward</h2>
    <p>The shop gives you USDC back for this purchase. It is paid from the shop's wallet to a wallet of yours: send the claim from your wallet (it pays a small network fee), or let us send it for you if your wallet holds no ETH.</p>
    <div id="reward-address-field" class="field" hidden>
      <label for="reward-address">Your wallet address</label>
      <input id="reward-address" type="text" inputmode="text" autocomplete="off" spellcheck="false" aria-describedby="reward-address-hint">
      <p id="reward-address-hint" class="hint">The reward is paid to this address on the network of your payment.</p>
    </div>
    <p id="reward-wallet-line" hidden>Connected wallet: <code id="reward-account" class="address"></code></p>
    <p id="reward-error" class="error" role="alert" hidden></p>
    <ul id="rewards-list" class="rewards-list"></ul>
  </section>

  <section id="closed-step" aria-labelledby="closed-title" hidden>
    <h2 id="closed-title" tabindex="-1">This checkout is closed</h2>
    <p id="closed-message"></p>
    <p id="late-message" hidden></p>
    <p><a id="restart-link" class="button primary" hidden>Start again</a></p>
  </section>

  <p id="support" class="support" hidden>Need help? Contact <span class="shop-name"></span>:
    <a id="support-url" hidden>support page</a><span id="support-separator" hidden> or </span><a id="support-email" hidden></a></p>
</main>
<script src="/assets/hosted-api.js"></script>
<script src="/assets/gasless.js"></script>
<script src="/assets/reward-claim.js"></script>
<script src="/assets/checkout-page.js"></script>
</body>
</html>`;
}

export function claimPage(params: { sessionId: string; clientToken?: string }) {
  return html`<!doctype html>
<html lang="en">
${head("Claim your certificate")}
<body>
<header id="merchant" class="merchant" hidden>
  <div class="merchant-id">
    <img id="merchant-logo" class="merchant-logo" alt="" hidden>
    <span id="merchant-name" class="merchant-name"></span>
  </div>
  <a id="back-link" class="back-link" hidden>Back to <span id="back-shop"></span></a>
</header>
<main id="claim" class="card" data-session-id="${params.sessionId}" data-client-token="${params.clientToken ?? ""}" aria-labelledby="claim-title">
  <h1 id="claim-title">Claim your certificate</h1>
  <p id="summary" class="summary" hidden></p>
  <p id="status" class="status" role="status" aria-live="polite">Loading…</p>
  <section id="wallet-step" aria-labelledby="wallet-title" hidden>
    <h2 id="wallet-title" tabindex="-1">Mint it to your wallet</h2>
    <p>The certificate is a non-transferable token minted to the wallet you connect. Your wallet sends one transaction and pays its network fee.</p>
    <p id="account-line" hidden>Connected wallet: <code id="account" class="address"></code></p>
    <p id="claim-error" class="error" role="alert" hidden></p>
    <div class="actions">
      <button type="button" id="connect" class="primary">Connect wallet</button>
      <button type="button" id="mint" class="primary" hidden>Mint certificate</button>
    </div>
  </section>
  <section id="result-step" aria-labelledby="result-title" hidden>
    <h2 id="result-title" tabindex="-1">Certificate</h2>
    <p id="result-message"></p>
    <p id="mint-line" hidden>Transaction: <code id="mint-hash" class="address"></code> <a id="mint-link" hidden target="_blank" rel="noopener noreferrer">View on the block explorer</a></p>
  </section>
  <section id="rewards-step" class="rewards" aria-labelledby="rewards-title" hidden>
    <h2 id="rewards-title" tabindex="-1">Claim your reward</h2>
    <p>The shop gives you USDC back for this purchase. It is paid from the shop's wallet to a wallet of yours: send the claim from your wallet (it pays a small network fee), or let us send it for you if your wallet holds no ETH.</p>
    <div id="reward-address-field" class="field" hidden>
      <label for="reward-address">Your wallet address</label>
      <input id="reward-address" type="text" inputmode="text" autocomplete="off" spellcheck="false" aria-describedby="reward-address-hint">
      <p id="reward-address-hint" class="hint">The reward is paid to this address on the network of your payment.</p>
    </div>
    <p id="reward-wallet-line" hidden>Connected wallet: <code id="reward-account" class="address"></code></p>
    <p id="reward-error" class="error" role="alert" hidden></p>
    <ul id="rewards-list" class="rewards-list"></ul>
  </section>
</main>
<script src="/assets/hosted-api.js"></script>
<script src="/assets/reward-claim.js"></script>
<script src="/assets/claim-page.js"></script>
</body>
</html>`;
}

/**
 * The customer's refund page (`/refund/:refundId#rt=<token>`): it reads the refund
 * token from the fragment, removes it from the address bar, and with it reads the
 * refund and names the receiving address. The server knows only the refund's id.
 */
export function refundPage(params: { refundId: string }) {
  return html`<!doctype html>
<html lang="en">
${head("Your refund")}
<body>
<header id="merchant" class="merchant" hidden>
  <div class="merchant-id">
    <img id="merchant-logo" class="merchant-logo" alt="" hidden>
    <span id="merchant-name" class="merchant-name"></span>
  </div>
</header>
<main id="refund" class="card" data-refund-id="${params.refundId}" aria-labelledby="refund-title">
  <h1 id="refund-title">Your refund</h1>
  <p id="summary" class="summary" hidden></p>
  <p id="status" class="status" role="status" aria-live="polite">Loading your refund…</p>
  <section id="destination-step" aria-labelledby="destination-title" hidden>
    <h2 id="destination-title" tabindex="-1">Where should the refund go?</h2>
    <div class="notice" id="exchange-warning">
      <h3>Use a wallet you control</h3>
      <p>Name a wallet address that you hold the keys to. An exchange deposit address may not credit a transfer sent
        this way, and money sent there can be hard to get back. The address cannot be changed once you confirm it.</p>
    </div>
    <form id="destination-form" novalidate>
      <div class="field">
        <label for="destination">Your wallet address on <span id="network-name"></span></label>
        <input id="destination" name="destination" type="text" inputmode="text" autocomplete="off" spellcheck="false"
          pattern="0x[0-9a-fA-F]{40}" required aria-describedby="destination-hint">
        <p id="destination-hint" class="hint">0x followed by 40 characters. The refund is sent in USDC on this network.</p>
      </div>
      <p id="destination-error" class="error" role="alert" hidden></p>
      <div class="actions">
        <button type="button" id="connect" class="secondary" hidden>Use my connected wallet</button>
        <button type="submit" id="confirm" class="primary">Confirm this address</button>
      </div>
    </form>
  </section>
  <section id="details-step" aria-labelledby="details-title" hidden>
    <h2 id="details-title" tabindex="-1">Refund details</h2>
    <dl class="payment">
      <div><dt>Amount</dt><dd id="detail-amount"></dd></div>
      <div><dt>Network</dt><dd id="detail-network"></dd></div>
      <div id="detail-destination-row" hidden><dt>To address</dt><dd><code id="detail-destination" class="address"></code></dd></div>
      <div id="detail-hash-row" hidden><dt>Transaction</dt><dd><code id="detail-hash" class="address"></code></dd></div>
    </dl>
  </section>
  <p id="support" class="support" hidden>Questions about this refund? Contact <span class="shop-name"></span>:
    <a id="support-url" hidden>support page</a><span id="support-separator" hidden> or </span><a id="support-email" hidden></a></p>
</main>
<script src="/assets/hosted-api.js"></script>
<script src="/assets/refund-page.js"></script>
</body>
</html>`;
}

const merchantHeader = html`<header id="merchant" class="merchant" hidden>
  <div class="merchant-id">
    <img id="merchant-logo" class="merchant-logo" alt="" hidden>
    <span id="merchant-name" class="merchant-name"></span>
  </div>
  <a id="back-link" class="back-link" hidden>Back to <span id="back-shop"></span></a>
</header>`;

const supportLine = html`<p id="support" class="support" hidden>Questions about this subscription? Contact <span class="shop-name"></span>:
    <a id="support-url" hidden>support page</a><span id="support-separator" hidden> or </span><a id="support-email" hidden></a></p>`;

/**
 * The hosted subscribe page (`/subscribe/:id#st=<token>`): the terms in plain words, the
 * customer's wallet signs them and an EIP-2612 permit, the service relays (no ETH). As the
 * refund page, it knows only the id; the script reads the token from the fragment.
 */
export function subscribePage(params: { subscriptionId: string }) {
  return html`<!doctype html>
<html lang="en">
${head("Subscribe with USDC")}
<body>
${merchantHeader}
<main id="subscribe" class="card" data-subscription-id="${params.subscriptionId}" aria-labelledby="subscribe-title">
  <h1 id="subscribe-title">Subscribe with USDC</h1>
  <p id="status" class="status" role="status" aria-live="polite">Loading the subscription…</p>
  <section id="terms-step" aria-labelledby="terms-title" hidden>
    <h2 id="terms-title" tabindex="-1">What you agree to</h2>
    <p id="terms-product" class="summary"></p>
    <ul id="terms-list" class="terms-list"></ul>
    <dl class="payment">
      <div><dt>Amount</dt><dd id="terms-amount"></dd></div>
      <div><dt>Every</dt><dd id="terms-period"></dd></div>
      <div><dt>Paid to</dt><dd><code id="terms-payee" class="address"></code></dd></div>
      <div><dt>Network</dt><dd id="terms-network"></dd></div>
    </dl>
  </section>
  <section id="wallet-step" aria-labelledby="wallet-title" hidden>
    <h2 id="wallet-title" tabindex="-1">Subscribe from your wallet</h2>
    <p>Your wallet signs twice, with no network fee: the terms above, and a USDC allowance for the subscription
      contract (<span id="permit-words"></span>). We send them to the network and pay the fee; you need no ETH.</p>
    <p id="account-line" hidden>Connected wallet: <code id="account" class="address"></code></p>
    <p id="wallet-error" class="error" role="alert" hidden></p>
    <div class="actions">
      <button type="button" id="connect" class="primary">Connect wallet</button>
      <button type="button" id="sign" class="primary" hidden>Sign and subscribe</button>
    </div>
    <p id="no-wallet" class="hint" hidden>This page needs a wallet in your browser (an extension such as a browser wallet).</p>
  </section>
  <section id="pending-step" aria-labelledby="pending-title" hidden>
    <h2 id="pending-title" tabindex="-1">Registering your subscription</h2>
    <p>The network is confirming it. Keep this page open; it updates by itself.</p>
    <p>Transaction: <span id="pending-hash"></span></p>
  </section>
  <section id="done-step" aria-labelledby="done-title" hidden>
    <h2 id="done-title" tabindex="-1">You are subscribed</h2>
    <p id="done-message"></p>
    <p id="done-next" hidden></p>
    <p><a id="manage-link" class="button primary">Manage or cancel your subscription</a></p>
    <p id="success-line" hidden><a id="success-link">Back to <span class="shop-name"></span></a></p>
  </section>
  ${supportLine}
</main>
<script src="/assets/hosted-api.js"></script>
<script src="/assets/subscription-common.js"></script>
<script src="/assets/subscribe-page.js"></script>
</body>
</html>`;
}

/**
 * The customer's subscription page (`/subscription/:id#st=<token>`): its state, terms, next
 * charge, past charges with their transactions, and a signed, relayed Cancel.
 */
export function subscriptionPage(params: { subscriptionId: string }) {
  return html`<!doctype html>
<html lang="en">
${head("Your subscription")}
<body>
${merchantHeader}
<main id="subscription" class="card" data-subscription-id="${params.subscriptionId}" aria-labelledby="subscription-title">
  <h1 id="subscription-title">Your subscription</h1>
  <p id="summary" class="summary" hidden></p>
  <p id="status" class="status" role="status" aria-live="polite">Loading your subscription…</p>
  <section id="details-step" aria-labelledby="details-title" hidden>
    <h2 id="details-title" tabindex="-1">Details</h2>
    <dl class="payment">
      <div><dt>Amount</dt><dd id="detail-amount"></dd></div>
      <div><dt>Every</dt><dd id="detail-period"></dd></div>
      <div><dt>Next charge</dt><dd id="detail-next"></dd></div>
      <div><dt>Network</dt><dd id="detail-network"></dd></div>
      <div id="detail-wallet-row" hidden><dt>From wallet</dt><dd><code id="detail-wallet" class="address"></code></dd></div>
      <div><dt>Paid to</dt><dd><code id="detail-payee" class="address"></code></dd></div>
    </dl>
  </section>
  <section id="charges-step" aria-labelledby="charges-title" hidden>
    <h2 id="charges-title">Past charges</h2>
    <p id="no-charges" class="hint" hidden>No charge yet.</p>
    <ul id="charges-list" class="charges-list"></ul>
  </section>
  <section id="cancel-step" aria-labelledby="cancel-title" hidden>
    <h2 id="cancel-title" tabindex="-1">Cancel</h2>
    <p>Cancelling stops every later charge at once; what was already charged stays paid. Your wallet signs the cancel
      with no network fee, and we send it to the network. You can also call <code>cancel</code> on the subscription
      contract from any wallet tool.</p>
    <p id="cancel-error" class="error" role="alert" hidden></p>
    <p id="cancel-sent" role="status" hidden></p>
    <div class="actions">
      <button type="button" id="cancel" class="primary">Cancel subscription</button>
    </div>
  </section>
  ${supportLine}
</main>
<script src="/assets/hosted-api.js"></script>
<script src="/assets/subscription-common.js"></script>
<script src="/assets/subscription-page.js"></script>
</body>
</html>`;
}
