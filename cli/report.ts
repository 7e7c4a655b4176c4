import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { parseRange, type RangeQuery } from "../api/accounting/range.js";
import { isIdentityProof } from "../api/accounting/service-identity.js";
import { appendAudit, OPERATOR } from "../api/audit/audit-log.js";
import { ConfigError } from "../api/config/config.js";
import { ProblemError } from "../api/http/problem.js";
import { PROBLEM_REGISTRY, type ProblemCode, problemStatuses } from "../api/http/problem-catalogue.js";
import { apiKeyModeFor, hashApiKey, issueAuditorKey, revokeAuditorKey } from "../api/partners/api-keys.js";
import { migrateStore, openStore } from "../api/store/open-store.js";
import { type CommandContext, type CommandResult, UsageError } from "./command-kit.js";

/**
 * `settlement report ledger|reconciliation|orders` (docs/accounting.md, "From the
 * operator CLI"). The books are computed from Ponder's index, which only the running
 * service holds open (PGlite allows one process), so the CLI asks the service: the
 * very routes partners and auditors call, hence the same domain functions and the
 * same JSON and CSV. It reads as a platform auditor, across partners or one with
 * `--partner`, through an auditor key it issues for this one report in the store
 * and revokes when the report is read; the report is recorded in the audit log.
 * The range is checked here first by the routes' own parser, so a bad range is
 * refused with its documented code even when the service is down. The key goes only to
 * a service that first proves it holds the same store (service-identity.ts): another
 * process on the port never sees it.
 */
const REPORTS = {
  ledger: { path: "/v1/ledger", pageLimit: 500, paged: true },
  reconciliation: { path: "/v1/reports/reconciliation", pageLimit: undefined, paged: false },
  orders: { path: "/v1/orders", pageLimit: 200, paged: true },
} as const;

type ReportName = keyof typeof REPORTS;

const text = (value: string | boolean | undefined) => (typeof value === "string" ? value : undefined);

/** The range as the routes take it, from `--from-block/--to-block` or `--from/--to` (and `--chain-id`). */
function rangeQuery(context: CommandContext): RangeQuery {
  const query: RangeQuery = {
    chainId: text(context.options["chain-id"]),
    fromBlock: text(context.options["from-block"]),
    toBlock: text(context.options["to-block"]),
    from: text(context.options.from),
    to: text(context.options.to),
  };
  parseRange(query);
  return query;
}

/** `local.json` of a local stack (`npm start`): beside the store, or one level up for a fork's data directory. */
function localBaseUrl(dataDir: string): string | undefined {
  const candidates = [join(dataDir, "local.json")];
  if (basename(dataDir).startsWith("fork-")) candidates.push(join(dirname(dataDir), "local.json"));
  for (const path of candidates) {
    if (!existsSync(path)) continue;
    try {
      const baseUrl = (JSON.parse(readFileSync(path, "utf8")) as { baseUrl?: unknown }).baseUrl;
      if (typeof baseUrl === "string") return baseUrl;
    } catch {}
  }
  return undefined;
}

/**
 * Where the service answers: `--url`; else, in local mode, the `baseUrl` that the local
 * stack wrote in `local.json` (its port is free-chosen, so the default port may be
 * another stack's); else the loopback port it listens on (PORT, 42069 by default).
 */
function serviceUrl(context: CommandContext): string {
  const { config } = context.readConfig();
  const given =
    text(context.options.url) ??
    (config.localMode ? localBaseUrl(config.dataDir) : undefined) ??
    `http://127.0.0.1:${context.env.PORT?.trim() || "42069"}`;
  let url: URL;
  try {
    url = new URL(given);
  } catch {
    throw new UsageError(`--url must be the service's URL, such as http://127.0.0.1:42069 (got "${given}").`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new UsageError("--url must be an http(s) URL.");
  return url.origin;
}

/**
 * Asks the service at `base` to prove it holds the store the key was issued in
 * (HMAC of a fresh challenge keyed by the key's stored hash), before the key is sent.
 */
async function checkServiceIdentity(base: string, key: { id: string; apiKey: string }): Promise<void> {
  const challenge = randomBytes(32).toString("hex");
  const url = new URL("/v1/public/report-identity", base);
  let proof: unknown;
  try {
    const response = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: JSON.stringify({ keyId: key.id, challenge }),
    });
    proof = response.ok ? ((await response.json()) as { proof?: unknown }).proof : undefined;
  } catch (error) {
    throw new Error(`the service does not answer at ${base} (${(error as Error).message}); start it, or give --url`);
  }
  if (!isIdentityProof(hashApiKey(key.apiKey), challenge, proof))
    throw new Error(
      `the service at ${base} could not prove it holds this store (another service, or another stack's): no key was sent to it; give the right --url`,
    );
}

/** The service's problem as the CLI reports it (exit 1, its code printed). */
async function refusal(response: Response): Promise<Error> {
  const body = await response.text();
  let problem: { code?: string; title?: string; detail?: string } = {};
  try {
    problem = JSON.parse(body);
  } catch {}
  const code = problem.code as ProblemCode | undefined;
  if (code !== undefined && code in PROBLEM_REGISTRY && problemStatuses(code).includes(response.status as never))
    return new ProblemError({ code, status: response.status as never, title: problem.title, detail: problem.detail });
  return new Error(`the service answered ${response.status}: ${body.slice(0, 300)}`);
}

/**
 * An auditor key valid for this report only, issued in the configured store and
 * audited; `close` revokes it and closes the store, whatever happened in between.
 */
async function openReportKey(context: CommandContext, details: Record<string, unknown>) {
  const { config, problems: found } = context.readConfig();
  const blocking = found.filter((problem) => /^(STORE_URL|DATA_DIR|NETWORKS)\b/.test(problem));
  if (blocking.length > 0) throw new ConfigError(blocking);
  const store = openStore(config);
  let keyId: string | undefined;
  const close = async () => {
    try {
      if (keyId !== undefined) await revokeAuditorKey(store, { keyId });
    } finally {
      await store.destroy();
    }
  };
  try {
    await migrateStore(store);
    const key = await issueAuditorKey(store, {
      mode: apiKeyModeFor(config),
      label: "settlement report (CLI, revoked after the report)",
    });
    keyId = key.id;
    await store
      .transaction()
      .execute((trx) =>
        appendAudit(trx, { actor: OPERATOR, action: "report.read", target: { type: "auditor_key", id: key.id }, details }),
      );
    return { id: key.id, apiKey: key.apiKey, close };
  } catch (error) {
    await close();
    throw error;
  }
}

function reportUrl(base: string, name: ReportName, query: RangeQuery, extra: Record<string, string | undefined>) {
  const url = new URL(REPORTS[name].path, base);
  for (const [key, value] of Object.entries({ ...query, ...extra })) if (value !== undefined) url.searchParams.set(key, value);
  return url;
}

async function call(url: URL, apiKey: string, accept: string): Promise<Response> {
  let response: Response;
  try {
    response = await fetch(url, { headers: { Authorization: `Bearer ${apiKey}`, Accept: accept } });
  } catch (error) {
    throw new Error(`the service does not answer at ${url.origin} (${(error as Error).message}); start it, or give --url`);
  }
  if (!response.ok) throw await refusal(response);
  return response;
}

function summary(name: ReportName, report: { fromBlock?: string; toBlock?: string; data: Record<string, unknown>[] }) {
  const head = report.fromBlock === undefined ? [] : [`Blocks ${report.fromBlock} to ${report.toBlock}.`];
  if (report.data.length === 0) return [...head, `No ${name === "orders" ? "order" : "entry"}.`].join("\n");
  const line = (row: Record<string, unknown>) =>
    name === "ledger"
      ? [
          row.blockNumber,
          row.kind,
          row.value,
          row.paymentAddress,
          row.transactionHash,
          row.orderId ?? row.refundId ?? row.rewardId ?? "",
        ]
      : name === "reconciliation"
        ? [
            row.paymentAddress,
            row.partnerId,
            `opening ${row.openingBalance}`,
            `closing ${row.closingBalance}`,
            `chain ${row.chainBalance}`,
            row.reconciled
              ? "reconciled"
              : row.role === "funding_address"
                ? // Only its claims are indexed: the rest of what moved through it is its difference, not a fault.
                  `funding address (moved other than claims: ${row.difference})`
                : `UNRECONCILED (difference ${row.difference})`,
          ]
        : [row.id, row.status, row.totalPriceUsdc, row.amountPaid, row.createdAt];
  return [...head, ...report.data.map((row) => line(row).join("\t"))].join("\n");
}

export async function reportCommand(context: CommandContext): Promise<CommandResult> {
  const name = context.args[0];
  if (name === undefined || !(name in REPORTS)) throw new UsageError("report needs one of: ledger, reconciliation, orders.");
  const report = REPORTS[name as ReportName];
  const query = rangeQuery(context);
  const status = text(context.options.status);
  if (status !== undefined && name !== "orders") throw new UsageError("--status applies to `report orders` only.");
  const extra = { partnerId: text(context.options.partner), status };
  const base = serviceUrl(context);
  const details = { report: name, ...query, partnerId: extra.partnerId ?? null, csv: context.options.csv === true };

  if (context.options.csv === true) {
    // Streamed as the service streams it; the key stays valid until the last row is read.
    const url = reportUrl(base, name as ReportName, query, extra);
    const key = await openReportKey(context, details);
    let response: Response;
    try {
      await checkServiceIdentity(base, key);
      response = await call(url, key.apiKey, "text/csv");
    } catch (error) {
      await key.close();
      throw error;
    }
    const body = response.body;
    async function* chunks() {
      const decoder = new TextDecoder();
      try {
        const reader = body?.getReader();
        for (;;) {
          if (reader === undefined) break;
          const { done, value } = await reader.read();
          if (done) break;
          yield decoder.decode(value, { stream: true });
        }
        yield decoder.decode();
      } finally {
        await key.close();
      }
    }
    return { text: "", json: undefined, body: chunks() };
  }

  const key = await openReportKey(context, details);
  const result = await checkServiceIdentity(base, key)
    .then(() => read(key.apiKey))
    .finally(key.close);
  return { text: summary(name as ReportName, result), json: result };

  async function read(apiKey: string) {
    if (!report.paged)
      return (await (await call(reportUrl(base, name as ReportName, query, extra), apiKey, "application/json")).json()) as {
        fromBlock?: string;
        toBlock?: string;
        data: Record<string, unknown>[];
      };
    // Every page, in order: the report is the whole range, as its CSV is.
    const data: Record<string, unknown>[] = [];
    let first: { fromBlock?: string; toBlock?: string } = {};
    let cursor: string | undefined;
    do {
      const url = reportUrl(base, name as ReportName, query, { ...extra, limit: String(report.pageLimit), cursor });
      const page = (await (await call(url, apiKey, "application/json")).json()) as {
        fromBlock?: string;
        toBlock?: string;
        data: Record<string, unknown>[];
        nextCursor: string | null;
      };
      if (cursor === undefined) first = { fromBlock: page.fromBlock, toBlock: page.toBlock };
      data.push(...page.data);
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
    return { ...(first.fromBlock === undefined ? {} : first), data };
  }
}
