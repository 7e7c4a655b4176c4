import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { startShop } from "./shop.js";

const PROJECT_ROOT = resolve(fileURLToPath(new URL("../..", import.meta.url)));

/** `npm run shop`: the sample shop against the stack `npm start` runs (reads `.data/local.json`). */
const dataDir = process.env.DATA_DIR ?? join(PROJECT_ROOT, ".data");
const shop = await startShop({
  local: process.env.LOCAL_JSON ?? join(dataDir, "local.json"),
  port: Number(process.env.SHOP_PORT ?? 4000),
  storeFile: join(dataDir, "shop.sqlite"),
});
console.log(`
  Harbour Goods (sample shop)   ${shop.url}
  Settlement service            ${shop.client.baseUrl}
  Webhook endpoint              ${shop.webhookEndpoint.url} (${shop.webhookEndpoint.id})
  Ctrl-C stops the shop.
`);

let stopping = false;
const shutdown = async () => {
  if (stopping) return;
  stopping = true;
  await shop.stop();
  process.exit(0);
};
process.on("SIGINT", shutdown);
process.on("SIGTERM", shutdown);
