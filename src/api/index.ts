import { db } from "ponder:api";
import schema from "ponder:schema";
import { graphql } from "ponder";
import { loadRuntime } from "../../api/load-runtime";

// Ponder's API entry: hand the indexed tables to our app, which lives outside
// `src/` so that changing it never triggers a re-index.
const { startService, refuseClosedPreflightsInServer } = await loadRuntime();
// Before Ponder creates its server: it answers every preflight with `*` ahead of our app
// (docs/security.md, "Cross-origin access").
refuseClosedPreflightsInServer();
const app = await startService({ db, schema });

// Read-only GraphQL over the indexed chain facts (public on-chain data).
app.use("/graphql", graphql({ db, schema }));

export default app;
