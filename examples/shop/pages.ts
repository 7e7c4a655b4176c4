import { html, raw } from "hono/html";
import { formatUsdc } from "../../client/src/index.js";
import { CATALOGUE, type CartLine } from "./catalogue.js";
import type { ShopOrder } from "./shop-store.js";

const layout = (title: string, body: unknown, head: unknown = "") => html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · Harbour Goods</title>
<link rel="stylesheet" href="/assets/shop.css">
${head}
</head>
<body>
<header><a href="/" class="brand">Harbour Goods</a> <a href="/cart">Cart</a></header>
<main>${body}</main>
</body>
</html>`;

const usdc = (value: bigint | string) => `${formatUsdc(value)} USDC`;

export function cataloguePage() {
  return layout(
    "Shop",
    html`<h1>Harbour Goods</h1>
<p>Small things, paid in USDC on Base.</p>
<ul class="products">
${CATALOGUE.map(
  (product) => html`<li>
  <h2>${product.name}</h2>
  <p>${product.description}</p>
  <p class="price">${usdc(product.priceUsdc)}</p>
  <form method="post" action="/cart/items">
    <input type="hidden" name="productId" value="${product.id}">
    <button type="submit" aria-label="Add ${product.name} to cart">Add to cart</button>
  </form>
</li>`,
)}
</ul>`,
  );
}

export function cartPage(lines: CartLine[], total: bigint) {
  return layout(
    "Cart",
    html`<h1>Your cart</h1>
${
  lines.length === 0
    ? html`<p>Your cart is empty. <a href="/">Browse the shop</a>.</p>`
    : html`<table>
<thead><tr><th scope="col">Product</th><th scope="col">Quantity</th><th scope="col">Price</th></tr></thead>
<tbody>
${lines.map((line) => html`<tr><td>${line.product.name}</td><td>${line.quantity}</td><td>${usdc(line.product.priceUsdc * BigInt(line.quantity))}</td></tr>`)}
</tbody>
<tfoot><tr><th scope="row" colspan="2">Total</th><td id="cart-total">${usdc(total)}</td></tr></tfoot>
</table>
<form method="post" action="/checkout"><button type="submit">Check out with USDC</button></form>`
}`,
  );
}

export type CheckoutView = { baseUrl: string; sessionId: string; clientToken: string; certificate: boolean };

const statusText: Record<ShopOrder["status"], string> = {
  awaiting_payment: "Awaiting payment",
  paid: "Paid: confirmed by the settlement service's signed event",
  fulfilled: "Paid and handed to shipping",
};

export function orderPage(order: ShopOrder, lines: CartLine[], checkout: CheckoutView | undefined) {
  // A data block, not a script: the page's own /assets/shop.js reads it. `<` is
  // escaped so the JSON cannot close the element.
  const config = checkout === undefined ? "" : JSON.stringify({ orderId: order.id, ...checkout }).replaceAll("<", "\\u003c");
  const serviceScript =
    checkout === undefined ? "" : html`<script src="${checkout.baseUrl}/assets/checkout-component.js"></script>`;
  return layout(
    `Order ${order.id}`,
    html`<h1>Order ${order.id}</h1>
<ul class="lines">${lines.map((line) => html`<li>${line.quantity} × ${line.product.name}</li>`)}</ul>
<p>Total: <strong>${usdc(order.total_price_usdc)}</strong></p>
<p>Status: <strong id="order-status" data-status="${order.status}">${statusText[order.status]}</strong></p>
${order.certificate_status === "minted" ? html`<p id="certificate-status">Certificate minted in transaction <code>${order.certificate_transaction}</code>.</p>` : ""}
${
  checkout !== undefined && order.status === "awaiting_payment"
    ? html`<section aria-labelledby="pay-title">
<h2 id="pay-title">Pay</h2>
<p id="checkout-state" role="status" aria-live="polite"></p>
<usdc-checkout id="checkout" session-id="${checkout.sessionId}" base-url="${checkout.baseUrl}" frame-title="Pay with USDC"></usdc-checkout>
</section>
<section id="thanks" hidden aria-labelledby="thanks-title">
<h2 id="thanks-title" tabindex="-1">Thank you!</h2>
<p id="thanks-message"></p>
</section>`
    : ""
}
${
  checkout?.certificate && order.certificate_status !== "minted"
    ? html`<section id="claim" ${order.status === "awaiting_payment" ? "hidden" : ""} aria-labelledby="claim-title">
<h2 id="claim-title">Certificate of authenticity</h2>
<p>Mint your non-transferable certificate to your own wallet.</p>
<form method="post" action="${checkout.baseUrl}/claim/${checkout.sessionId}">
  <input type="hidden" name="clientToken" value="${checkout.clientToken}">
  <button type="submit">Claim your certificate</button>
</form>
</section>`
    : ""
}
${checkout === undefined ? "" : html`<script type="application/json" id="checkout-config">${raw(config)}</script>`}`,
    html`${serviceScript}<script src="/assets/shop.js" defer></script>`,
  );
}

export function notFoundPage() {
  return layout("Not found", html`<h1>Not found</h1><p><a href="/">Back to the shop</a></p>`);
}
