import { OpenAPIHono, z } from "@hono/zod-openapi";
import { closePeriod, listPeriods, periodLedgerCsv, readPeriod } from "../accounting/closed-periods.js";
import { csvResponseHeaders, wantsCsv } from "../accounting/csv-export.js";
import { LEDGER_KINDS, SUM_KINDS } from "../accounting/ledger-rules.js";
import { ledgerCsv, ledgerReport, reconciliationCsv, reconciliationReport } from "../accounting/reports.js";
import { answerIdentityChallenge } from "../accounting/service-identity.js";
import type { AppContext } from "../app-context.js";
import { CALLERS, declaredFor, declareRoute } from "../http/callers.js";
import { errorResponses } from "../http/openapi-contract.js";
import { problems } from "../http/problem.js";
import { type PartnerVariables, readScope } from "../partners/partner-auth.js";
import type { AppEnv } from "./app-env.js";

/** A range (docs/accounting.md, "Ranges"): kept as text here so that the one parser answers `invalid_range`. */
export const RangeQuerySchema = z.object({
  chainId: z.string().max(20).optional().openapi({ description: "Needed only when several networks are enabled" }),
  fromBlock: z.string().max(40).optional().openapi({ description: "First block, inclusive (with `toBlock`)" }),
  toBlock: z.string().max(40).optional().openapi({ description: "Last block, inclusive" }),
  from: z
    .string()
    .max(40)
    .optional()
    .openapi({ description: "ISO 8601, inclusive (with `to`), resolved to blocks by timestamp" }),
  to: z.string().max(40).optional().openapi({ description: "ISO 8601, exclusive" }),
  partnerId: z.string().max(100).optional().openapi({ description: "Auditor keys: narrow to one partner" }),
});

export const csvContent = {
  "text/csv": { schema: z.string().openapi({ description: "RFC 4180, columns in docs/accounting.md" }) },
};

export const LedgerEntrySchema = z
  .object({
    kind: z.enum(LEDGER_KINDS),
    reason: z.string().optional(),
    chainId: z.number().int(),
    blockNumber: z.string(),
    blockTime: z.string().openapi({ description: "The block's timestamp, ISO 8601 UTC" }),
    blockHash: z.string(),
    transactionHash: z.string(),
    logIndex: z.number().int(),
    from: z.string(),
    to: z.string(),
    value: z.string().openapi({ description: "USDC base units" }),
    paymentAddress: z.string(),
    orderId: z.string().optional(),
    externalOrderId: z.string().optional().openapi({ description: "The partner's own id of the order, when there is one" }),
    refundId: z.string().optional(),
    rewardId: z.string().optional(),
    metadata: z.record(z.string(), z.string()).optional().openapi({ description: "The order's metadata" }),
    periodId: z
      .string()
      .optional()
      .openapi({ description: "`adjustment` rows: the closed period whose range the fact touches (`reason` is its change)" }),
    entryKind: z.string().optional().openapi({ description: "`adjustment` rows: the ledger kind of the fact it reports" }),
    balanceEffect: z
      .string()
      .optional()
      .openapi({ description: "`adjustment` rows: signed base units, what it changes of the address's balance" }),
  })
  .openapi("LedgerEntry");

const SumsSchema = z.object(Object.fromEntries(SUM_KINDS.map((kind) => [kind, z.string()])) as Record<string, z.ZodString>);

export const ReconciliationSchema = z
  .object({
    fromBlock: z.string(),
    toBlock: z.string(),
    data: z.array(
      z.object({
        chainId: z.number().int(),
        partnerId: z.string(),
        paymentAddress: z.string(),
        role: z.enum(["payment_address", "funding_address"]).openapi({
          description:
            "`funding_address`: a rewards funding address that is not a payment address; the index watches its reward claims only, so its difference is what else moved through it",
        }),
        openingBalance: z.string(),
        closingBalance: z.string(),
        chainBalance: z.string(),
        difference: z.string().openapi({ description: "chainBalance − closingBalance" }),
        reconciled: z.boolean(),
        sums: SumsSchema,
      }),
    ),
  })
  .openapi("Reconciliation");

const rangeProblems = errorResponses("invalid_range", "range_too_wide", "range_not_indexed");

const ledgerRoute = declareRoute({
  method: "get",
  path: "/",
  summary: "The ledger: every movement through the payment addresses in a range, with its evidence and kind",
  security: CALLERS.booksRead,
  request: {
    query: RangeQuerySchema.extend({
      cursor: z.string().max(500).optional(),
      limit: z.coerce.number().int().min(1).max(500).default(100),
    }),
  },
  responses: {
    200: {
      description: "A page of entries (or, with `Accept: text/csv`, the whole range as CSV)",
      content: {
        "application/json": {
          schema: z.object({
            fromBlock: z.string(),
            toBlock: z.string(),
            data: z.array(LedgerEntrySchema),
            nextCursor: z.string().nullable(),
          }),
        },
        ...csvContent,
      },
    },
    ...rangeProblems,
  },
});

const reconciliationRoute = declareRoute({
  method: "get",
  path: "/reconciliation",
  summary:
    "Reconciliation: per payment address, opening and closing balances from the index, sums per kind, and the chain's balance",
  security: CALLERS.booksRead,
  request: { query: RangeQuerySchema },
  responses: {
    200: {
      description: "One row per payment address",
      content: { "application/json": { schema: ReconciliationSchema }, ...csvContent },
    },
    ...rangeProblems,
  },
});

const CSV_HEADERS = csvResponseHeaders;

/**
 * Whom the books are read for: a partner (its keys, its members, an auditor key), or the
 * operator (`/api/admin/...`, an admin's session), each route declared for that audience.
 */
export type BooksAudience = "partner" | "operator";

const forAudience = <route extends { security?: unknown; middleware?: unknown }>(route: route, audience: BooksAudience) =>
  audience === "partner" ? route : declaredFor(route, CALLERS.operatorBooks);

/** `/v1/ledger` (docs/accounting.md). */
export function ledgerRoutes(context: AppContext, audience: BooksAudience = "partner") {
  return new OpenAPIHono<AppEnv & { Variables: PartnerVariables }>().openapi(forAudience(ledgerRoute, audience), async (c) => {
    const { cursor, limit, ...query } = c.req.valid("query");
    const scope = readScope(c);
    if (wantsCsv(c.req.header("Accept"))) return c.body(await ledgerCsv(context, { scope, query }), 200, CSV_HEADERS("ledger"));
    return c.json(await ledgerReport(context, { scope, query, cursor, limit }), 200);
  });
}

/** `/v1/reports/...` (docs/accounting.md). */
export function reportRoutes(context: AppContext, audience: BooksAudience = "partner") {
  return new OpenAPIHono<AppEnv & { Variables: PartnerVariables }>().openapi(
    forAudience(reconciliationRoute, audience),
    async (c) => {
      const query = c.req.valid("query");
      const scope = readScope(c);
      if (wantsCsv(c.req.header("Accept")))
        return c.body(await reconciliationCsv(context, { scope, query }), 200, CSV_HEADERS("reconciliation"));
      return c.json(await reconciliationReport(context, { scope, query }), 200);
    },
  );
}

const identityRoute = declareRoute({
  method: "post",
  path: "/",
  security: CALLERS.anyone,
  summary: "The operator CLI's check, before it sends the auditor key it issued for a report, that this service holds its store",
  request: {
    body: {
      required: true,
      content: {
        "application/json": {
          schema: z
            .object({
              keyId: z.string().min(1).max(100).openapi({ description: "The id (`aud_…`) of the auditor key the CLI issued" }),
              challenge: z.string().regex(/^[0-9a-f]{64}$/, "32 random bytes in lower-case hex"),
            })
            .strict(),
        },
      },
    },
  },
  responses: {
    200: {
      description: "HMAC-SHA256 of the challenge keyed by the key's stored hash (docs/accounting.md)",
      content: { "application/json": { schema: z.object({ proof: z.string() }) } },
    },
    ...errorResponses("not_found"),
  },
});

/** `/v1/public/report-identity` (docs/accounting.md, "From the operator CLI"): no credential, it proves who answers. */
export function reportIdentityRoutes(context: AppContext) {
  return new OpenAPIHono<AppEnv>().openapi(identityRoute, async (c) => {
    const body = c.req.valid("json");
    const proof = await answerIdentityChallenge(context.store, body);
    if (proof === undefined) throw problems.notFound(`Auditor key ${body.keyId}`);
    return c.json({ proof }, 200);
  });
}

const AdjustmentSchema = z
  .object({
    kind: z.enum(["added", "removed", "moved", "reclassified"]).openapi({
      description:
        "`added`: indexed after closing (late, or mined into the range by a reorg); `removed`: reorged away; `moved`: mined again in another block of the range; `reclassified`: the service made something else of it",
    }),
    periodId: z.string().openapi({ description: "The closed period it touches" }),
    entryKind: z.string(),
    transactionHash: z.string(),
    logIndex: z.number().int(),
    paymentAddress: z.string(),
    value: z.string(),
    balanceEffect: z.string().openapi({ description: "Signed base units: its effect on the address's closing balance" }),
    detectedAt: z.string(),
    detectedBlock: z.string(),
    reportedInPeriod: z
      .string()
      .nullable()
      .openapi({ description: "The period holding `detectedBlock`; null while that is the next open period" }),
  })
  .openapi("PeriodAdjustment");

const PeriodSchema = z
  .object({
    id: z.string(),
    chainId: z.number().int(),
    fromBlock: z.string(),
    toBlock: z.string(),
    from: z.string(),
    to: z.string(),
    closedAt: z.string(),
    digest: z.string().openapi({ description: "SHA-256 (hex) of the period's ledger CSV as served at closing" }),
    reconciliation: ReconciliationSchema,
    adjustments: z.array(AdjustmentSchema).openapi({ description: "Later facts touching this closed period" }),
    adjustmentsReported: z
      .array(AdjustmentSchema)
      .openapi({ description: "Adjustments of earlier closed periods found within this period's blocks" }),
  })
  .openapi("ClosedPeriod");

const PeriodParam = z.object({ id: z.string().max(100) });
const periodQuery = z.object({
  partnerId: z.string().max(100).optional().openapi({ description: "Auditor keys: the partner" }),
});

const closePeriodRoute = declareRoute({
  method: "post",
  path: "/",
  summary: "Close a period of the books: its ledger CSV and reconciliation are kept as served now",
  security: CALLERS.periodClose,
  request: {
    body: {
      required: true,
      content: {
        "application/json": {
          schema: z
            .object({
              chainId: z.string().max(20).optional(),
              fromBlock: z.string().max(40).optional(),
              toBlock: z.string().max(40).optional(),
              from: z.string().max(40).optional(),
              to: z.string().max(40).optional(),
            })
            .strict(),
        },
      },
    },
  },
  responses: {
    201: { description: "The closed period", content: { "application/json": { schema: PeriodSchema } } },
    ...errorResponses("invalid_range", "range_too_wide", "range_not_indexed", "period_overlaps", "period_not_final"),
  },
});

const listPeriodsRoute = declareRoute({
  method: "get",
  path: "/",
  summary: "Your closed periods, with the adjustments found since each was closed",
  security: CALLERS.partnerRead,
  request: { query: periodQuery },
  responses: {
    200: {
      description: "Every closed period",
      content: { "application/json": { schema: z.object({ data: z.array(PeriodSchema) }) } },
    },
  },
});

const readPeriodRoute = declareRoute({
  method: "get",
  path: "/{id}",
  summary: "A closed period: its figures as closed, and the adjustments found since",
  security: CALLERS.partnerRead,
  request: { params: PeriodParam, query: periodQuery },
  responses: {
    200: { description: "The period", content: { "application/json": { schema: PeriodSchema } } },
    ...errorResponses("not_found"),
  },
});

const periodLedgerRoute = declareRoute({
  method: "get",
  path: "/{id}/ledger",
  summary: "A closed period's ledger CSV, the same bytes as served at closing",
  security: CALLERS.partnerRead,
  request: { params: PeriodParam, query: periodQuery },
  responses: {
    200: { description: "RFC 4180 CSV (its SHA-256 is the period's digest)", content: csvContent },
    ...errorResponses("not_found"),
  },
});

/** `/v1/reports/periods` (docs/accounting.md, "Closed periods"): a partner's own, whoever's key reads. */
export function periodRoutes(context: AppContext) {
  return new OpenAPIHono<AppEnv & { Variables: PartnerVariables }>()
    .openapi(closePeriodRoute, async (c) =>
      c.json(await closePeriod(context, { partnerId: c.get("partner").id, query: c.req.valid("json") }), 201),
    )
    .openapi(listPeriodsRoute, async (c) => c.json(await listPeriods(context, { partnerId: c.get("partner").id }), 200))
    .openapi(readPeriodRoute, async (c) =>
      c.json(await readPeriod(context, { partnerId: c.get("partner").id, periodId: c.req.valid("param").id }), 200),
    )
    .openapi(periodLedgerRoute, async (c) =>
      c.body(await periodLedgerCsv(context, { partnerId: c.get("partner").id, periodId: c.req.valid("param").id }), 200, {
        ...CSV_HEADERS(`ledger-${c.req.valid("param").id}`),
        "Cache-Control": "private, max-age=0",
      }),
    );
}
