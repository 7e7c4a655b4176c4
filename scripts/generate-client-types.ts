import { mkdirSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { CLIENT_TYPES_PATH, renderClientTypes } from "./client-types.js";
import { openApiDocument } from "./openapi-document.js";

// `npm run client:types`: the client library's request and response types from the
// document the service's routes describe (built in process: no chain, no running service).
mkdirSync(dirname(CLIENT_TYPES_PATH), { recursive: true });
writeFileSync(CLIENT_TYPES_PATH, await renderClientTypes(await openApiDocument()));
console.log(`wrote ${CLIENT_TYPES_PATH}`);
