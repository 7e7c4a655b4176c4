import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { CLIENT_TYPES_PATH, renderClientTypes, staleClientTypes } from "./client-types.js";
import { openApiDocument } from "./openapi-document.js";

// `npm run client:types`: the client library's request and response types from the
// document the service's routes describe (built in process: no chain, no running
// service). With `--check`, writes nothing and fails when the committed file is stale.
const generated = await renderClientTypes(await openApiDocument());
if (process.argv.includes("--check")) {
  const stale = staleClientTypes(existsSync(CLIENT_TYPES_PATH) ? readFileSync(CLIENT_TYPES_PATH, "utf8") : "", generated);
  if (stale !== undefined) {
    console.error(stale);
    process.exit(1);
  }
  console.log(`${CLIENT_TYPES_PATH} is up to date`);
} else {
  mkdirSync(dirname(CLIENT_TYPES_PATH), { recursive: true });
  writeFileSync(CLIENT_TYPES_PATH, generated);
  console.log(`wrote ${CLIENT_TYPES_PATH}`);
}
