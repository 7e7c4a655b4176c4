import type { BenchResults } from "../results.js";
import type { VerifierRun } from "../scenarios/hash-submission.js";
import type { Summary } from "./stats.js";

const ms = (value: number | undefined) => (value === undefined || !Number.isFinite(value) ? "-" : `${value} ms`);
const seconds = (value: number | undefined) => (value === undefined ? "-" : `${(value / 1000).toFixed(1)} s`);
const mib = (bytes: number | undefined) => (bytes === undefined ? "-" : `${Math.round(bytes / 2 ** 20)} MiB`);
const verdict = (met: boolean) => (met ? "met" : "NOT met");

function table(header: string[], rows: (string | number)[][]): string {
  const cells = [header, ...rows.map((row) => row.map(String))];
  const widths = header.map((_, column) => Math.max(...cells.map((row) => (row[column] ?? "").length)));
  const line = (row: string[]) => `| ${row.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join(" | ")} |`;
  return [
    line(cells[0] as string[]),
    `|${widths.map((width) => "-".repeat(width + 2)).join("|")}|`,
    ...cells.slice(1).map(line),
  ].join("\n");
}

const summaryRow = (label: string, summary: Summary) => [
  label,
  ms(summary.p50),
  ms(summary.p95),
  ms(summary.p99),
  ms(summary.max),
];

/** The printed table (also the text pasted into bench/README.md). */
export function renderReport(results: BenchResults): string {
  const out: string[] = [];
  const { machine } = results;
  out.push(
    `Benchmark ${results.startedAt} (${results.config.quick ? "BENCH_QUICK" : "full run"}), commit ${results.commit ?? "?"}${results.workingTreeDirty ? " + uncommitted changes" : ""}`,
    `Machine: ${machine.cpus} cores (${machine.cpuModel}), ${machine.memoryGiB} GiB, node ${machine.node}; everything on loopback`,
    `Ponder's index: ${results.config.postgresIndex ? "a PostgreSQL server on loopback (BENCH_POSTGRES=1)" : "embedded PGlite"}`,
    "",
  );

  const latency = results.latency;
  if (latency !== undefined) {
    out.push(
      `## Settlement latency: ${latency.purchases} purchases paid at ${latency.payRatePerS}/s, Anvil block time ${latency.blockTimeS} s, ${latency.requiredConfirmations} confirmations required`,
      `Measured to: ${latency.measuredAt === "webhook" ? "purchase.settled arriving at the webhook receiver" : 'GET /v1/orders/:id showing "paid" (webhooks not available)'} (${latency.measuredAtNote})`,
      `Mined: ${latency.minedObservation}; indexed: ${latency.indexObservation}, stamped on the answer, so an upper bound; written: the event's settledAt`,
      "",
      table(
        ["stage", "p50", "p95", "p99", "max"],
        [
          summaryRow("chain: send → block with the transfer produced", latency.sendToMined),
          summaryRow("chain: confirmation wait (→ confirming block)", latency.confirmationWait),
          summaryRow("chain floor (send → confirming block)", latency.chainFloor),
          summaryRow("ours: confirming block → purchase.settled", latency.overhead),
          ...(latency.confirmedToRecorded === undefined
            ? []
            : [summaryRow("  of which: confirming block → settlement written", latency.confirmedToRecorded)]),
          ...(latency.confirmedToIndexed === undefined
            ? []
            : [summaryRow("    (confirming block → Ponder's index at it, upper bound)", latency.confirmedToIndexed)]),
          ...(latency.recordedToDelivered === undefined
            ? []
            : [summaryRow("  of which: settlement written → webhook received", latency.recordedToDelivered)]),
          summaryRow("mined → purchase.settled", latency.minedToSettled),
          summaryRow("total: send → purchase.settled", latency.sendToSettled),
          summaryRow("(block interval observed)", latency.blockInterval),
        ],
      ),
      "",
      `Settled ${latency.settled}/${latency.purchases}${latency.missing > 0 ? ` (${latency.missing} never observed within the wait)` : ""}` +
        (latency.measuredAt === "webhook" ? `, signature failures: ${latency.webhookSignatureFailures}` : ""),
      `Goal: our overhead above the chain floor < ${latency.goal.overheadP50UnderMs} ms at p50: ${verdict(latency.goal.met)} (p50 ${ms(latency.overhead.p50)})`,
      "",
    );
  }

  const gasless = results.gasless;
  if (gasless !== undefined) {
    out.push(
      `## Gasless payment (EIP-3009 authorization relayed by the service): ${gasless.purchases} purchases at ${gasless.payRatePerS}/s, same chain settings`,
      "Each payer holds USDC and no ETH; its authorization is signed in advance. Measured to purchase.settled at a webhook receiver.",
      "",
      table(
        ["stage", "p50", "p95", "p99", "max"],
        [
          summaryRow("signed authorization received → transaction submitted (answer)", gasless.receivedToSubmitted),
          summaryRow("transaction submitted → purchase.settled", gasless.submittedToSettled),
          summaryRow("total: authorization received → purchase.settled", gasless.receivedToSettled),
          ...(latency === undefined
            ? []
            : [summaryRow("(plain transfer, above: send → purchase.settled)", latency.sendToSettled)]),
        ],
      ),
      "",
      `Settled ${gasless.settled}/${gasless.purchases}; gas per relayed payment: ${gasless.gasUsedPerPayment === undefined ? "-" : `p50 ${gasless.gasUsedPerPayment.p50}, max ${gasless.gasUsedPerPayment.max}`}`,
      "",
    );
  }

  const hash = results.hashSubmission;
  if (hash !== undefined) {
    const rows: (string | number)[][] = [];
    const add = (label: string, runs: VerifierRun[], calls: (run: VerifierRun) => string) => {
      for (const run of runs) {
        rows.push([
          label,
          run.connections,
          run.rps,
          ms(run.latency.p50),
          ms(run.latency.p99),
          run.non2xx + run.errors + run.timeouts,
          calls(run),
        ]);
      }
    };
    add("service (index)", hash.service, (run) => `${run.rpcCallsPerVerified.toFixed(2)} receipt`);
    add("baseline, direct RPC", hash.baselineDirect, (run) => run.rpcCallsPerVerified.toFixed(2));
    add(`baseline, RPC +${hash.rpcDelayMs} ms`, hash.baselineDelayed, (run) => run.rpcCallsPerVerified.toFixed(2));
    const reference = hash.ponderStatusReference;
    rows.push([
      "(Ponder GET /status: 1 index read)",
      reference.connections,
      reference.rps,
      ms(reference.latency.p50),
      ms(reference.latency.p99),
      reference.non2xx + reference.errors + reference.timeouts,
      "-",
    ]);
    const ratios = Object.entries(hash.goals.throughputRatioVsDelayedBaseline)
      .map(([key, value]) => `${key.replace("c", "c=")}: ${value}x`)
      .join(", ");
    out.push(
      `## Hash submission, hit path: ${hash.targets} settled payments submitted again (answer "settled"), ${results.config.durationS} s per run`,
      `Precheck: ${hash.precheck.settled}/${hash.precheck.submitted} answered "settled"${Object.keys(hash.precheck.other).length > 0 ? ` (others: ${JSON.stringify(hash.precheck.other)})` : ""}, receipt look-ups by the service: ${hash.precheck.receiptCalls}`,
      "",
      table(["verifier", "conc.", "req/s", "p50", "p99", "non-2xx/err", "RPC calls / verified"], rows),
      "",
      `Service RPC calls counted at a proxy in front of its LOCAL_RPC_URL, method eth_getTransactionReceipt (Ponder's indexing does not use it); the baseline makes eth_getTransactionReceipt + eth_blockNumber per request.`,
      `Goals: p99 < ${hash.goals.p99UnderMsAt64} ms at 64 concurrent: ${verdict(hash.goals.p99Met)} (${ms(hash.goals.p99At64)}); ` +
        `zero RPC calls per verified payment: ${verdict(hash.goals.zeroRpcOnHitPath)}; ` +
        `several (≥3) times the delayed baseline's throughput: ${verdict(hash.goals.severalTimesDelayedBaseline)} (${ratios})`,
      "",
    );
  }

  const sessions = results.sessionCreation;
  if (sessions !== undefined) {
    out.push(
      `## Session creation: POST /v1/checkout/sessions, ${sessions.connections} concurrent, ${sessions.durationS} s, new order and idempotency key per request`,
      "",
      table(
        ["conc.", "created/s", "p50", "p99", "201s", "other statuses"],
        [
          [
            sessions.connections,
            sessions.rps,
            ms(sessions.latency.p50),
            ms(sessions.latency.p99),
            sessions.created,
            JSON.stringify(Object.fromEntries(Object.entries(sessions.statusCodes).filter(([code]) => code !== "201"))),
          ],
        ],
      ),
      "",
    );
  }

  const indexer = results.indexer;
  if (indexer !== undefined) {
    const cold = indexer.coldStart;
    const raw = indexer.rawRpc;
    out.push(
      `## Indexer: ${indexer.transfers.toLocaleString("en")} USDC transfers in ${indexer.blocksWithTransfers} blocks over a ${indexer.blockRange.blocks.toLocaleString("en")}-block range, cold \`ponder start\` (new data dir, no RPC cache, workers off)`,
      `Generation: ${seconds(indexer.generation.ms)} (${indexer.generation.note})`,
      "",
      table(
        ["step", "time"],
        [
          ["ponder: spawn → HTTP server up (build, schema)", seconds(cold.serverUpMs)],
          ["ponder: spawn → /ready (backfill done)", seconds(cold.readyMs)],
          [`ponder: spawn → ${cold.indexedCount.toLocaleString("en")} rows indexed`, seconds(cold.indexedAllMs)],
          [
            "ponder: transfers indexed per second (from spawn)",
            cold.transfersPerS === undefined ? "-" : `${cold.transfersPerS}/s`,
          ],
          [
            `raw eth_getLogs, whole range in one call (${raw.getLogsSingleCount.toLocaleString("en")} logs)`,
            ms(raw.getLogsSingleMs),
          ],
          [`raw eth_getLogs, ${raw.getLogsChunks} calls of 500 blocks, sequential`, ms(raw.getLogsChunkedMs)],
          [`raw eth_getBlockByNumber (with txs) for the ${indexer.blocksWithTransfers} blocks`, ms(raw.getBlocksMs)],
        ],
      ),
      "",
      `Ponder's RPC calls during the cold start: ${JSON.stringify(cold.ponderRpcCalls)}${indexer.timedOut ? " (TIMED OUT before indexing everything)" : ""}`,
      "",
      "Restarts of the indexed service (same data directory; payments to every address wait until the index is at head again):",
      "",
      table(
        ["restart", "→ /ready", "→ index at head", "rows", "RPC calls"],
        [
          ["cold start (above)", cold, cold.ponderRpcCalls] as const,
          [
            "same watched addresses (same schema)",
            indexer.restartSameAddresses,
            indexer.restartSameAddresses.ponderRpcCalls,
          ] as const,
          [
            `one more watched address (fresh schema ${indexer.restartAddedAddress.schema}, re-index)`,
            indexer.restartAddedAddress,
            indexer.restartAddedAddress.ponderRpcCalls,
          ] as const,
        ].map(([label, run, calls]) => [
          label,
          seconds(run.readyMs),
          seconds(run.indexedAllMs),
          run.indexedCount.toLocaleString("en"),
          String(Object.values(calls).reduce((sum, n) => sum + n, 0)),
        ]),
      ),
      "",
      `RPC calls, same addresses: ${JSON.stringify(indexer.restartSameAddresses.ponderRpcCalls)}; one more address: ${JSON.stringify(indexer.restartAddedAddress.ponderRpcCalls)}`,
      "",
    );
  }

  const subscriptions = results.subscriptionCharges;
  if (subscriptions !== undefined) {
    out.push(
      `## Subscriptions: ${subscriptions.subscriptions.toLocaleString("en")} active subscriptions whose first period starts at the same chain second`,
      "The start's block is stamped by the bench; from it the worker charges every due period through the relayer. Measured to subscription.charged at a webhook receiver.",
      "",
      table(
        ["stage", "p50", "p95", "p99", "max"],
        [
          ...(subscriptions.startToMined === undefined
            ? []
            : [summaryRow("start's block seen → the charge in a block seen", subscriptions.startToMined)]),
          ...(subscriptions.startToCharged === undefined
            ? []
            : [summaryRow("start's block seen → subscription.charged", subscriptions.startToCharged)]),
        ],
      ),
      "",
      `Active before the start ${subscriptions.activated}/${subscriptions.subscriptions}; charged ${subscriptions.charged}/${subscriptions.subscriptions} within ${seconds(subscriptions.waitedForChargesMs)}; charges reaching the chain: ${subscriptions.submittedPerS ?? "-"}/s`,
      "",
    );
  }

  const books = results.books;
  if (books !== undefined) {
    out.push(
      `## Books: ${books.transfers.toLocaleString("en")} indexed transfers to one payment address, blocks ${books.range.fromBlock}..${books.range.toBlock}`,
      "",
      table(
        ["figure", "value"],
        [
          ["GET /v1/reports/reconciliation, first call", ms(books.reconciliationMs.first)],
          ["GET /v1/reports/reconciliation, again", ms(books.reconciliationMs.second)],
          [
            "GET /v1/ledger, Accept: text/csv, whole range",
            `${books.export.rows.toLocaleString("en")} rows in ${ms(books.export.ms)} (${books.export.rowsPerS.toLocaleString("en")} rows/s), first byte ${ms(books.export.firstByteMs)}`,
          ],
          ["service RSS before the export", mib(books.rss.beforeExportBytes)],
          ["service RSS, peak during the export", mib(books.rss.peakDuringExportBytes)],
          ["peak RSS growth during the export", mib(books.rss.peakGrowthBytes)],
        ],
      ),
      `(${books.note})`,
      "",
    );
  }

  const backfill = results.fleetBackfill;
  if (backfill !== undefined) {
    out.push(
      `## Fleet backfill: ${backfill.transfers.toLocaleString("en")} transfers in ${backfill.blocksWithTransfers} blocks, cold \`ponder start\` on Postgres`,
      `Shape: ${backfill.shape}. Load average (1, 5, 15 min) ${backfill.loadAverage.before.join(", ")} before the spawn, ${backfill.loadAverage.after.join(", ")} after.`,
      "",
      table(
        ["step", "value"],
        [
          ["spawn → backfill indexing started (start-up)", seconds(backfill.startupMs)],
          [`spawn → ${backfill.indexedCount.toLocaleString("en")} rows indexed`, seconds(backfill.indexedAllMs)],
          [
            "transfers indexed per second after start-up",
            backfill.transfersPerS === undefined ? "-" : `${backfill.transfersPerS}/s`,
          ],
          ["indexer peak RSS", mib(backfill.peakRssBytes)],
        ],
      ),
      backfill.timedOut ? "(TIMED OUT before indexing everything)" : "",
      "",
    );
  }

  const deploy = results.fleetDeploy;
  if (deploy !== undefined) {
    out.push(
      "## Fleet deploy: a new build under load, docs/deploy.md's steps",
      `Shape: ${deploy.shape}. Load average (1, 5, 15 min) ${deploy.loadAverage.before.join(", ")} before, ${deploy.loadAverage.after.join(", ")} after.`,
      "",
      table(
        ["figure", "value"],
        [
          ["reads through the replicas", deploy.reads],
          ["5xx answers / refused connections", `${deploy.fiveXx} / ${deploy.refused}`],
          ["payments settled", `${deploy.settled}/${deploy.payments}`],
          ["longest gap between two settlements", ms(deploy.longestSettlementGapMs)],
          ["longest send → purchase.settled", ms(deploy.longestSentToSettledMs)],
          ["new index behind the head at its /ready", `${deploy.newIndexBehindAtReadyBlocks ?? "-"} blocks`],
          ...deploy.steps.map((entry) => [entry.step, `+${seconds(entry.atMs)}`]),
        ],
      ),
      ...deploy.examples.map((example) => `- ${example}`),
      "",
    );
  }

  const peaks: [string, number | undefined][] = [
    ["settlement latency", results.latency?.peakRssBytes],
    ["hash submission (service)", results.hashSubmission?.peakRssBytes.service],
    ["session creation", results.sessionCreation?.peakRssBytes],
    ["subscription charges", results.subscriptionCharges?.peakRssBytes],
    ["indexer cold start", results.indexer?.peakRssBytes],
    ["baseline verifier, direct (for scale)", results.hashSubmission?.peakRssBytes.baselineDirect],
    [`baseline verifier, +delay (for scale)`, results.hashSubmission?.peakRssBytes.baselineDelayed],
  ];
  const shown = peaks.filter(([, bytes]) => bytes !== undefined);
  if (shown.length > 0) {
    out.push(
      "## Memory: peak resident set size (pidusage every 200 ms, process and its children)",
      "",
      table(
        ["scenario", "peak RSS"],
        shown.map(([label, bytes]) => [label, mib(bytes)]),
      ),
      "",
    );
  }

  if (results.errors.length > 0) {
    out.push("## Harness errors", ...results.errors.map((error) => `- ${error.scenario}: ${error.message.split("\n")[0]}`), "");
  }
  return out.join("\n");
}
