import { LOCAL_STACK_VARIABLES, NETWORK_VARIABLES, SERVICE_VARIABLES, type Variable } from "../api/config/variables.js";

const GROUPS: Record<Variable["group"], string> = {
  networks: "Networks",
  storage: "Storage",
  keys: "Key files",
  service: "Service",
  webhooks: "Webhook delivery",
  portals: "Portals",
  limits: "Request limits",
  indexer: "Indexer watchdog and transport",
  local: "Local stack (`npm start` only)",
};

function table(entries: [string, Variable][]): string {
  const rows = [
    ["variable", "meaning", "required / default"],
    ...entries.map(([name, variable]) => [
      `\`${name}\``,
      variable.description,
      variable.required ? `required ${variable.required}` : (variable.default ?? "unset"),
    ]),
  ];
  // Columns padded as a Markdown formatter would lay them out, so the file reads well as text too.
  const widths = [0, 1, 2].map((column) => Math.max(...rows.map((row) => [...(row[column] ?? "")].length)));
  const line = (cells: string[]) => `| ${cells.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join(" | ")} |`;
  const [header, ...body] = rows;
  return [line(header ?? []), `| ${widths.map((width) => "-".repeat(width)).join(" | ")} |`, ...body.map(line)].join("\n");
}

/** `docs/configuration.md`, generated from `api/config/variables.ts` (`npm run docs:config`). */
export function renderConfigurationDoc(): string {
  const byGroup = new Map<Variable["group"], [string, Variable][]>();
  const add = (name: string, variable: Variable) =>
    byGroup.set(variable.group, [...(byGroup.get(variable.group) ?? []), [name, variable]]);
  for (const [name, variable] of Object.entries(SERVICE_VARIABLES)) add(name, variable);
  for (const [name, variable] of Object.entries(NETWORK_VARIABLES)) add(`<NET>_${name}`, variable);
  for (const [name, variable] of Object.entries(LOCAL_STACK_VARIABLES)) add(name, variable);
  const sections = (Object.keys(GROUPS) as Variable["group"][])
    .filter((group) => byGroup.has(group))
    .map((group) => `## ${GROUPS[group]}\n\n${table(byGroup.get(group) ?? [])}`);
  return `# Configuration

<!-- Generated from api/config/variables.ts by \`npm run docs:config\`; a test fails when this file is stale. -->

Every environment variable the service (\`ponder start\`, \`ponder serve\`), its workers and the
operator CLI (\`npx settlement\`) read. They are read and validated once, in \`ponder.config.ts\`,
before Ponder opens its database or starts indexing: every problem (a missing variable, a malformed
value, an unreadable key file, an RPC URL whose \`eth_chainId\` is not the network's) is listed in
one message and the process exits. \`npx settlement config check\` runs the same validation without
starting anything (exit code 78 on a problem).

\`<NET>\` is \`BASE\`, \`BASE_SEPOLIA\` or \`LOCAL\`: \`NETWORKS=base\` reads \`BASE_RPC_URL\`,
\`BASE_START_BLOCK\`, ... An empty value counts as unset. Values that may carry a credential
(database and RPC URLs) are never repeated in an error message.

**Key files** all have one format: 64 hex digits (32 bytes), with or without \`0x\`, surrounding
whitespace ignored. \`npx settlement secrets generate <file>\` writes one (mode 0600).

**Watched payment addresses** come from two places: \`<NET>_PAYMENT_ADDRESSES\` and the store's
payment addresses (\`npx settlement payment-address add\`). The indexer reads both when it starts;
an address added while it runs shows \`watching: false\` (CLI, admin API, \`/v1/health\`) until an
indexer whose build watches it serves the index: a restart on one machine, a new build schema in a
fleet, either re-indexing from the RPC cache (see [deploy.md](deploy.md)).

${sections.join("\n\n")}
`;
}
