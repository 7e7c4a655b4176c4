// Everything Ponder's own files (ponder.config.ts, src/api/index.ts) take from the
// service, in one module: api/load-runtime.ts loads it as one bundle.
export {
  indexerCacheEnabled,
  pgliteIndexDirectory,
  prepareStart,
  rememberStartedConfig,
  roleOfPonderCommand,
  schemaOfPonderCommand,
} from "./config/startup";
export { refuseClosedPreflightsInServer } from "./http/cors-policy";
export { ponderListenAddress, refuseTakenPort } from "./http/listen-port";
export { indexerTransport } from "./indexed/indexer-transport";
export { startService } from "./service";
