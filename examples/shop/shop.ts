import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { type Context, Hono } from "hono";
import { getCookie, setCookie } from "hono/cookie";
import {
  type CreatedCheckoutSession,
  createClient,
  createEventReceiver,
  type NetworkName,
  type SettlementClient,
  type SettlementEvent,
} from "../../client/src/index.js";
import { type CartLine, cartTotal, productById } from "./catalogue.js";
import { type CheckoutView, cartPage, cataloguePage, notFoundPage, orderPage } from "./pages.js";
import { openShopStore, type ShopOrder, type ShopStore } from "./shop-store.js";

/** What the shop needs of `.data/local.json` (SPEC section 9); `network` is `base` or `base-sepolia` in fork mode. */
export type LocalServiceConfig = { baseUrl: string; network: NetworkName; partner: { apiKey: string } };

export type Shop = {
  url: string;
  port: number;
  client: SettlementClient;
  store: ShopStore;
  webhookEndpoint: { id: string; url: string };
  stop: () => Promise<void>;
};

const ASSETS: Record<string, { file: string; type: string }> = {
  "shop.js": { file: "assets/shop.js", type: "text/javascript; charset=utf-8" },
  "shop.css": { file: "assets/shop.css", type: "text/css; charset=utf-8" },
};

/**
 * The sample partner shop, in-process: catalogue and cart, checkout sessions
 * created server-side with the client library, the hosted checkout component on
 * the order page, and a webhook receiver that fulfils on `purchase.settled`.
 * Registers its webhook endpoint with the service when it starts.
 */
export async function startShop(options: {
  /** `.data/local.json` as read, or its path. */
  local: LocalServiceConfig | string;
  /** 0: any free port. */
  port?: number;
  /** SQLite file for carts, orders and processed event ids; default in memory. */
  storeFile?: string;
  /** Where the service reaches the webhook; default the shop's own loopback address. */
  publicUrl?: string;
}): Promise<Shop> {
  const local: LocalServiceConfig =
    typeof options.local === "string" ? (JSON.parse(readFileSync(options.local, "utf8")) as LocalServiceConfig) : options.local;
  const client = createClient({ apiKey: local.partner.apiKey, network: local.network, baseUrl: local.baseUrl });
  const store = openShopStore(options.storeFile ?? ":memory:");
  const serviceOrigin = new URL(client.baseUrl).origin;
  // Filled once the endpoint is registered (its URL needs the port); until then every event is refused.
  const webhookSecrets: string[] = [];

  const receive = createEventReceiver({
    secret: webhookSecrets,
    store: store.processedEvents,
    apply: (event) => applyEvent({ client, store }, event),
    onError: (error, event) => console.error(`[shop] webhook ${event?.id ?? "(unverified)"}: ${String(error)}`),
  });

  const app = new Hono();
  app.use("*", async (c, next) => {
    await next();
    c.header(
      "Content-Security-Policy",
      [
        "default-src 'self'",
        `script-src 'self' ${serviceOrigin}`,
        `frame-src ${serviceOrigin}`,
        `form-action 'self' ${serviceOrigin}`,
        "style-src 'self'",
        "img-src 'self'",
        "connect-src 'self'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
      ].join("; "),
    );
    c.header("X-Content-Type-Options", "nosniff");
  });

  app.get("/", (c) => c.html(cataloguePage()));

  const cartIdOf = (c: Context) => {
    let cartId = getCookie(c, "cart");
    if (cartId === undefined || !/^[a-f0-9]{32}$/.test(cartId)) {
      cartId = randomBytes(16).toString("hex");
      setCookie(c, "cart", cartId, { httpOnly: true, sameSite: "Lax", path: "/" });
    }
    return cartId;
  };
  const linesOf = (rows: { product_id: string; quantity: number }[]): CartLine[] =>
    rows.flatMap((row) => {
      const product = productById(row.product_id);
      return product === undefined ? [] : [{ product, quantity: row.quantity }];
    });

  app.post("/cart/items", async (c) => {
    const form = await c.req.parseBody();
    const product = typeof form.productId === "string" ? productById(form.productId) : undefined;
    if (product === undefined) return c.html(notFoundPage(), 404);
    store.addToCart(cartIdOf(c), product.id, 1);
    return c.redirect("/cart", 303);
  });

  app.get("/cart", (c) => {
    const lines = linesOf(store.cart(cartIdOf(c)));
    return c.html(cartPage(lines, cartTotal(lines)));
  });

  // The total comes from the shop's catalogue, never from the browser.
  app.post("/checkout", (c) => {
    const cartId = cartIdOf(c);
    const lines = linesOf(store.cart(cartId));
    if (lines.length === 0) return c.redirect("/cart", 303);
    const orderId = `hg-${randomBytes(6).toString("hex")}`;
    store.createOrder({
      id: orderId,
      lines: lines.map((line) => ({ productId: line.product.id, quantity: line.quantity })),
      totalPriceUsdc: cartTotal(lines),
    });
    store.clearCart(cartId);
    return c.redirect(`/orders/${orderId}`, 303);
  });

  app.get("/orders/:id", async (c) => {
    const order = store.order(c.req.param("id"));
    if (order === undefined) return c.html(notFoundPage(), 404);
    const lines = orderLines(order);
    const wantsCheckout =
      order.status === "awaiting_payment" || (certificateIncluded(lines) && order.certificate_status !== "minted");
    const checkout = wantsCheckout ? await checkoutFor({ client, store }, order, lines) : undefined;
    c.header("Cache-Control", "no-store");
    return c.html(orderPage(store.order(order.id) ?? order, lines, checkout));
  });

  app.get("/orders/:id/status", (c) => {
    const order = store.order(c.req.param("id"));
    if (order === undefined) return c.json({ error: "not found" }, 404);
    const statusText = { awaiting_payment: "Awaiting payment", paid: "Paid", fulfilled: "Paid and handed to shipping" }[
      order.status
    ];
    return c.json({ status: order.status, statusText, certificate: order.certificate_status });
  });

  // Handed the untouched Request: the signature is checked over the raw body.
  app.post("/webhooks/settlement", (c) => receive(c.req.raw));

  app.get("/assets/:name", (c) => {
    const asset = ASSETS[c.req.param("name")];
    if (asset === undefined) return c.notFound();
    return c.body(readFileSync(new URL(asset.file, import.meta.url), "utf8"), 200, { "Content-Type": asset.type });
  });

  const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const started = serve({ fetch: app.fetch, port: options.port ?? 4000, hostname: "127.0.0.1" }, () => resolve(started));
  });
  const port = (server.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}`;

  let endpoint: { id: string; url: string; secret: string };
  try {
    endpoint = await registerWebhook(client, `${options.publicUrl ?? url}/webhooks/settlement`);
  } catch (error) {
    server.close();
    store.close();
    throw error;
  }
  webhookSecrets.push(endpoint.secret);

  return {
    url,
    port,
    client,
    store,
    webhookEndpoint: { id: endpoint.id, url: endpoint.url },
    async stop() {
      await client.webhookEndpoints.delete(endpoint.id).catch(() => undefined);
      await new Promise<void>((resolve) => server.close(() => resolve()));
      store.close();
    },
  };
}

type ShopDeps = { client: SettlementClient; store: ShopStore };

function orderLines(order: ShopOrder): CartLine[] {
  const lines = JSON.parse(order.lines_json) as { productId: string; quantity: number }[];
  return lines.flatMap((line) => {
    const product = productById(line.productId);
    return product === undefined ? [] : [{ product, quantity: line.quantity }];
  });
}

const certificateIncluded = (lines: CartLine[]) => lines.some((line) => line.product.certificate);

/**
 * The checkout session of an order, created server-side with the API key. The
 * idempotency key is derived from the order and its checkout attempt: asking again
 * answers the same session with a fresh client token; after an expiry the shop
 * moves to the next attempt, a new key for the same order (seed section 7).
 */
async function checkoutFor({ client, store }: ShopDeps, order: ShopOrder, lines: CartLine[]): Promise<CheckoutView> {
  const units = lines.reduce((sum, line) => sum + line.quantity, 0);
  const only = lines.length === 1 ? lines[0] : undefined;
  const create = (attempt: number) =>
    client.checkout.sessions.create({
      externalOrderId: order.id,
      externalProductId: only?.product.id ?? "cart",
      productName: only?.product.name ?? `${units} items from Harbour Goods`,
      productCategory: only?.product.category ?? "mixed",
      quantity: units,
      totalPriceUsdc: BigInt(order.total_price_usdc),
      shippingRequired: lines.some((line) => line.product.ships),
      certificate: { enabled: certificateIncluded(lines) },
      idempotencyKey: `checkout-${order.id}-${attempt}`,
    });
  let attempt = order.checkout_attempt;
  let session: CreatedCheckoutSession = await create(attempt);
  if (session.status === "expired") {
    attempt += 1;
    session = await create(attempt);
  }
  store.updateOrder(order.id, { checkout_attempt: attempt, session_id: session.id, service_order_id: session.orderId });
  return {
    baseUrl: client.baseUrl,
    sessionId: session.id,
    clientToken: session.clientToken,
    certificate: certificateIncluded(lines),
  };
}

/** The effect of one verified, first-seen event. Throwing makes the receiver answer 500, so it is delivered again. */
async function applyEvent({ client, store }: ShopDeps, event: SettlementEvent): Promise<void> {
  const order = typeof event.data.externalOrderId === "string" ? store.order(event.data.externalOrderId) : undefined;
  if (event.type === "purchase.settled" && order !== undefined && typeof event.data.orderId === "string") {
    store.updateOrder(order.id, { status: "paid", service_order_id: event.data.orderId });
    const fulfilmentReference = `ship-${order.id}`;
    await client.orders.fulfil(event.data.orderId, { fulfilmentReference, idempotencyKey: `fulfil-${order.id}` });
    store.updateOrder(order.id, { status: "fulfilled", fulfilment_reference: fulfilmentReference });
  } else if (event.type === "certificate.minted" && order !== undefined) {
    store.updateOrder(order.id, {
      certificate_status: "minted",
      certificate_transaction: typeof event.data.transactionHash === "string" ? event.data.transactionHash : null,
    });
  }
  // Every other type (and events of orders this shop does not know) is recorded only.
  store.recordApplied(event);
}

/** One endpoint per shop URL: a restarted shop replaces its old endpoint (the secret is shown only at creation). */
async function registerWebhook(client: SettlementClient, url: string) {
  for await (const existing of client.webhookEndpoints.iterate()) {
    if (existing.url === url) await client.webhookEndpoints.delete(existing.id);
  }
  return client.webhookEndpoints.create({ url });
}
