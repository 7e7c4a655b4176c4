import { createHash, randomUUID } from "node:crypto";
import { join } from "node:path";
import { parse } from "csv-parse/sync";
import type { Page } from "playwright-core";
import {
  type Address,
  createWalletClient,
  encodeFunctionData,
  erc20Abi,
  getAddress,
  type Hex,
  http,
  isAddressEqual,
  keccak256,
  parseEther,
  parseEventLogs,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPartner, issueApiKey, issueAuditorKey } from "../api/partners/api-keys.js";
import { openSqliteStore, type Store } from "../api/store/open-store.js";
import { createClient, SettlementApiError } from "../client/src/index.js";
import { rewardDistributorAbi } from "../contracts/generated/index.js";
import { loadOrCreateLocalSecrets } from "../local/local-secrets.js";
import {
  axeFindings,
  type Chromium,
  freshArtifacts,
  injectTestWallet,
  launchChromium,
  requireChromium,
} from "./support/browser.js";
import { type CreatedSession, createSession, publicPost, readSession, submitHash } from "./support/checkout-helpers.js";
import {
  accountWallet,
  adminWallet,
  api,
  expectJson,
  openOffering,
  portalWallet,
  registerIssuer,
  signIn,
} from "./support/portal-client.js";
import { putProvenFundingAddress } from "./support/reward-funding.js";
import { startTestStack, type TestStack, waitFor } from "./support/test-stack.js";

// One stack of the default configuration for what were 2 files (accounting, then rwa-refunds), a
// describe block each reading the stack through sharedStack(). accounting runs first: it reads the demo
// partner's books from a fresh start; rwa-refunds works with an issuer at the stack's second payment
// address. One start, not 2.
let shared: TestStack;
const sharedStack = () => shared;

beforeAll(async () => {
  shared = await startTestStack();
}, 420_000);

afterAll(async () => {
  await shared?.stop();
});

describe("accounting", () => {
  // Accounting (issue 27, SPEC 17) over a real history on Anvil: settled, underpaid, overpaid,
  // unmatched in (straight to the address), unmatched out (to a stranger), a refund sent from
  // the payment address, a reward claim paid from it (it is the partner's funding address) and
  // a late payment. The books must reconcile to `balanceOf` to the base unit.
  let stack: TestStack;
  let store: Store;
  let shop: ReturnType<typeof createWalletClient>;
  let otherPartnerKey: string;
  let toBlock: bigint;
  let settled: CreatedSession;
  let refundId: string;
  let rewardId: string;
  /** A second reward, paid from a funding address that is not a payment address (SPEC 17.1). */
  let fundedRewardId: string;
  let fundingWallet: ReturnType<typeof createWalletClient>;
  const fundingAddress = () => (fundingWallet.account?.address as string).toLowerCase();
  const expected = new Map<string, string>(); // tx hash (lower) -> kind

  type Entry = {
    kind: string;
    reason?: string;
    chainId: number;
    blockNumber: string;
    blockTime: string;
    blockHash: string;
    transactionHash: string;
    logIndex: number;
    from: string;
    to: string;
    value: string;
    paymentAddress: string;
    orderId?: string;
    externalOrderId?: string;
    refundId?: string;
    rewardId?: string;
    metadata?: Record<string, string>;
  };

  /** A real RFC 4180 parser (csv-parse), so the exports are read as a spreadsheet or an accounting tool reads them. */
  function parseCsv(text: string): string[][] {
    expect(text.endsWith("\r\n"), "CRLF row ends").toBe(true);
    return parse(text, { record_delimiter: "\r\n", relax_column_count: false }) as string[][];
  }

  /** Rows as objects by header, after checking the header is exactly the documented one. */
  function csvRecords(text: string, columns: readonly string[]): Record<string, string>[] {
    const [header, ...rows] = parseCsv(text);
    expect(header).toEqual(columns);
    return rows.map((cells) => Object.fromEntries(columns.map((column, index) => [column, cells[index] as string])));
  }

  /** Decimal USDC of base units, written independently of the service's formatter. */
  const usdc = (base: string) => {
    const value = BigInt(base);
    const sign = value < 0n ? "-" : "";
    const abs = value < 0n ? -value : value;
    return `${sign}${abs / 1_000_000n}.${(abs % 1_000_000n).toString().padStart(6, "0")}`;
  };

  const mine = () => stack.testClient.mine({ blocks: 1 });
  const paymentAddress = () => stack.local.partner.paymentAddress.toLowerCase();

  async function sendFromShop(to: string, amount: bigint): Promise<Hex> {
    const hash = await shop.writeContract({
      address: stack.local.contracts.usdc as Address,
      abi: erc20Abi,
      functionName: "transfer",
      args: [to as Address, amount],
      chain: stack.chain,
      account: shop.account!,
    });
    await stack.publicClient.waitForTransactionReceipt({ hash, pollingInterval: 50 });
    return hash;
  }

  async function json(response: Response, status = 200) {
    const text = await response.text();
    expect(response.status, text).toBe(status);
    return JSON.parse(text);
  }

  async function expectProblem(response: Response, status: number, code: string) {
    const text = await response.text();
    expect(response.status, text).toBe(status);
    expect(response.headers.get("content-type")).toContain("application/problem+json");
    expect(JSON.parse(text).code, text).toBe(code);
  }

  /** The documented columns (docs/accounting.md, "CSV"), written out: a change of them is a change of the files accountants keep. */
  const LEDGER_CSV_COLUMNS = [
    "kind",
    "reason",
    "chain_id",
    "block_number",
    "block_time",
    "block_hash",
    "transaction_hash",
    "log_index",
    "from",
    "to",
    "value",
    "value_usdc",
    "payment_address",
    "order_id",
    "external_order_id",
    "refund_id",
    "reward_id",
    "metadata",
    "period_id",
    "entry_kind",
    "balance_effect",
    "balance_effect_usdc",
  ];
  const ORDER_CSV_COLUMNS = [
    "id",
    "external_order_id",
    "status",
    "network",
    "chain_id",
    "total_price",
    "total_price_usdc",
    "amount_paid",
    "amount_paid_usdc",
    "amount_refunded",
    "amount_refunded_usdc",
    "refund_status",
    "transaction_hash",
    "log_index",
    "block_number",
    "payer",
    "payment_address",
    "created_at",
    "updated_at",
    "metadata",
  ];
  const REFUND_CSV_COLUMNS = [
    "id",
    "status",
    "order_id",
    "external_order_id",
    "chain_id",
    "payment_transaction_hash",
    "payment_log_index",
    "amount",
    "amount_usdc",
    "reason",
    "note",
    "destination",
    "transaction_hash",
    "created_at",
    "ready_at",
    "succeeded_at",
    "cancelled_at",
  ];
  /** A text cell a spreadsheet would read as a formula is prefixed with `'` (docs/accounting.md, "CSV"). */
  const neutralised = (text: string) => (/^[=+\-@\t\r]/.test(text) ? `'${text}` : text);

  // The local network indexes from block 1 (genesis holds no transfers); the whole history is [1, toBlock].
  const range = () => `fromBlock=1&toBlock=${toBlock}`;

  /** Every ledger kind, as the reconciliation's sums name them (docs/accounting.md). */
  const KINDS = ["settled", "underpaid", "overpaid", "late", "unmatched_in", "refund", "unmatched_out", "reward_claim"];
  /** Every sum of the reconciliation: the kinds above, and subscription charges (test/subscriptions.test.ts makes them). */
  const SUMMED = [...KINDS, "subscription_charge", "adjustment"];

  async function ledgerPages(limit: number, apiKey?: string, rangeQuery = range()): Promise<Entry[]> {
    const entries: Entry[] = [];
    let cursor: string | null = null;
    for (let pages = 0; pages < 500; pages++) {
      const query = `/v1/ledger?${rangeQuery}&limit=${limit}${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`;
      const page = await json(
        await stack.partnerFetch(query, apiKey === undefined ? {} : { headers: { Authorization: `Bearer ${apiKey}` } }),
      );
      entries.push(...page.data);
      cursor = page.nextCursor;
      if (cursor === null) return entries;
    }
    throw new Error("ledger paging never ended");
  }

  beforeAll(async () => {
    stack = sharedStack();
    store = openSqliteStore(join(stack.dataDir, "app.sqlite"));
    const key = loadOrCreateLocalSecrets(stack.dataDir).paymentPrivateKeys[0] as Hex;
    const account = privateKeyToAccount(key);
    expect(account.address.toLowerCase()).toBe(paymentAddress());
    await stack.testClient.setBalance({ address: account.address, value: parseEther("10") });
    shop = createWalletClient({ chain: stack.chain, account, transport: http(stack.local.rpcUrl) });
    const other = await createPartner(store, { name: "Other shop" });
    otherPartnerKey = (await issueApiKey(store, { partnerId: other.id, mode: "test" })).apiKey;

    // Unmatched in: a transfer straight to the address, outside any session (it is also the refunds' float).
    const topUp = await stack.payUsdc({ from: 0, to: stack.local.partner.paymentAddress as Address, amount: 300_000_000n });
    expected.set(topUp.hash.toLowerCase(), "unmatched_in");

    // Exact: settled. The name starts with "=" for the CSV injection check.
    settled = await createSession(stack, {
      externalOrderId: `=HYPERLINK(1)-${randomUUID()}`,
      productName: "=cmd|' /C calc'!A0",
      metadata: { invoice: 'INV-7, "quoted"', line: "a\r\nb" },
    });
    const paid = await stack.payUsdc({ from: 1, to: settled.payment.recipient, amount: BigInt(settled.payment.amount) });
    expected.set(paid.hash.toLowerCase(), "settled");

    // Underpaid and overpaid: submitted on their sessions, not paying them.
    for (const [delta, kind] of [
      [-1_000_000n, "underpaid"],
      [1_000_000n, "overpaid"],
    ] as const) {
      const session = await createSession(stack);
      const sent = await stack.payUsdc({
        from: 2,
        to: session.payment.recipient,
        amount: BigInt(session.payment.amount) + delta,
      });
      // Submitted on its session (as api-contract.test.ts does) until the service records it unresolved.
      await waitFor(
        async () => {
          await submitHash(stack, session.clientToken, sent.hash);
          const listed = await json(await stack.partnerFetch("/v1/payments?status=unresolved"));
          return listed.data.some((row: { transactionHash: string }) => row.transactionHash === sent.hash.toLowerCase())
            ? true
            : undefined;
        },
        { what: `${kind} submitted`, intervalMs: 250, timeoutMs: 30_000 },
      );
      expected.set(sent.hash.toLowerCase(), kind);
    }
    await mine();
    await waitFor(async () => ((await readSession(stack, settled.id)).status === "settled" ? true : undefined), {
      what: "settled session",
    });

    // Refund to the payer, sent from the payment address.
    const created = await json(
      await stack.partnerFetch("/v1/refunds", {
        method: "POST",
        json: {
          orderId: settled.orderId,
          amount: "5000000",
          destination: "payer",
          reason: "requested_by_customer",
          idempotencyKey: `rf-${randomUUID()}`,
        },
      }),
      201,
    );
    refundId = created.id;
    const refundHash = await sendFromShop(stack.local.accounts[1]?.address as string, 5_000_000n);
    expected.set(refundHash.toLowerCase(), "refund");
    // Unmatched out: to a stranger.
    const strangerHash = await sendFromShop(stack.local.accounts[7]?.address as string, 1_234_567n);
    expected.set(strangerHash.toLowerCase(), "unmatched_out");
    await mine();
    await mine();
    await waitFor(
      async () => {
        const refund = await json(await stack.partnerFetch(`/v1/refunds/${refundId}`));
        return refund.status === "succeeded" ? true : undefined;
      },
      { what: "refund succeeded", timeoutMs: 30_000 },
    );

    // Reward claim: the payment address is the partner's funding address; a third party submits the voucher.
    const distributor = stack.local.contracts.rewardDistributor as Address;
    await json(
      await putProvenFundingAddress(stack, {
        address: shop.account!.address,
        sign: (message) => shop.signMessage({ message, account: shop.account! }),
      }),
    );
    const approval = await shop.writeContract({
      address: stack.local.contracts.usdc as Address,
      abi: erc20Abi,
      functionName: "approve",
      args: [distributor, 1_000_000_000n],
      chain: stack.chain,
      account: shop.account!,
    });
    await stack.publicClient.waitForTransactionReceipt({ hash: approval, pollingInterval: 50 });
    await stack.partnerFetch("/v1/rewards/settings", { method: "PUT", json: {} }); // forgets the cached allowance
    const reward = await json(
      await stack.partnerFetch(`/v1/orders/${settled.orderId}/rewards`, {
        method: "POST",
        json: { amount: "1250000", idempotencyKey: `rw-${randomUUID()}` },
      }),
      201,
    );
    rewardId = reward.id;
    const voucher = await json(
      await publicPost(stack, `/v1/public/rewards/${rewardId}/claim`, {
        clientToken: settled.clientToken,
        walletAddress: stack.local.accounts[5]?.address,
      }),
    );
    const claimer = stack.wallet(6);
    const claimHash = await claimer.sendTransaction({
      to: voucher.transaction.to,
      data: voucher.transaction.data,
      chain: stack.chain,
      account: claimer.account!,
    });
    expect((await stack.publicClient.waitForTransactionReceipt({ hash: claimHash, pollingInterval: 50 })).status).toBe("success");
    expected.set(claimHash.toLowerCase(), "reward_claim");

    // A funding address of its own (a wallet that is no payment address): the books list its claims too.
    fundingWallet = stack.wallet(8);
    const ownFunding = fundingWallet;
    await json(
      await putProvenFundingAddress(stack, {
        address: ownFunding.account!.address,
        sign: (message) => ownFunding.signMessage({ message, account: ownFunding.account! }),
      }),
    );
    const fundingApproval = await fundingWallet.writeContract({
      address: stack.local.contracts.usdc as Address,
      abi: erc20Abi,
      functionName: "approve",
      args: [distributor, 1_000_000_000n],
      chain: stack.chain,
      account: fundingWallet.account!,
    });
    await stack.publicClient.waitForTransactionReceipt({ hash: fundingApproval, pollingInterval: 50 });
    await stack.partnerFetch("/v1/rewards/settings", { method: "PUT", json: {} });
    fundedRewardId = (
      await json(
        await stack.partnerFetch(`/v1/orders/${settled.orderId}/rewards`, {
          method: "POST",
          json: { amount: "2000000", idempotencyKey: `rw-${randomUUID()}` },
        }),
        201,
      )
    ).id;
    const fundedVoucher = await json(
      await publicPost(stack, `/v1/public/rewards/${fundedRewardId}/claim`, {
        clientToken: settled.clientToken,
        walletAddress: stack.local.accounts[5]?.address,
      }),
    );
    const fundedClaimHash = await claimer.sendTransaction({
      to: fundedVoucher.transaction.to,
      data: fundedVoucher.transaction.data,
      chain: stack.chain,
      account: claimer.account!,
    });
    expect((await stack.publicClient.waitForTransactionReceipt({ hash: fundedClaimHash, pollingInterval: 50 })).status).toBe(
      "success",
    );
    expected.set(fundedClaimHash.toLowerCase(), "reward_claim");

    // Late: paid exactly, an hour after its five-minute session expired.
    const lateSession = await createSession(stack, { expiresInSeconds: 300 });
    await stack.testClient.increaseTime({ seconds: 3_600 });
    const late = await stack.payUsdc({ from: 3, to: lateSession.payment.recipient, amount: BigInt(lateSession.payment.amount) });
    await waitFor(async () => ((await submitHash(stack, lateSession.clientToken, late.hash)).status === 422 ? true : undefined), {
      what: "late payment recorded",
      intervalMs: 250,
    });
    expected.set(late.hash.toLowerCase(), "late");
    await mine();
    await waitFor(
      async () => ((await json(await stack.partnerFetch(`/v1/rewards/${rewardId}`))).status === "claimed" ? true : undefined),
      {
        what: "reward claimed",
      },
    );

    toBlock = await stack.publicClient.getBlockNumber();
    // Wait until the index and every worker have caught up with the whole history.
    let seen = "";
    await waitFor(
      async () => {
        const response = await stack.partnerFetch(`/v1/ledger?${range()}&limit=500`);
        seen = `${response.status}`;
        if (response.status !== 200) {
          seen += await response.text();
          return undefined;
        }
        const entries = (await response.json()).data as Entry[];
        const kinds = new Map(
          entries.map((entry) => [entry.transactionHash.toLowerCase(), `${entry.kind}/${entry.reason ?? ""}`]),
        );
        seen = JSON.stringify([...expected].map(([hash, kind]) => [kind, kinds.get(hash)]));
        return [...expected].every(([hash, kind]) => kinds.get(hash)?.split("/")[0] === kind) ? true : undefined;
      },
      { what: "every movement classified", timeoutMs: 30_000, intervalMs: 250 },
    ).catch((error) => {
      throw new Error(`${error}: ${seen}`);
    });
  }, 240_000);

  afterAll(async () => {
    await store?.destroy();
  });

  describe("books over a real history", () => {
    it("the ledger lists every movement once, with its evidence and kind, whatever the page size", async () => {
      const all = await ledgerPages(500);
      for (const limit of [1, 2]) expect(await ledgerPages(limit)).toEqual(all);
      const keys = all.map((entry) => `${entry.chainId}:${entry.transactionHash}:${entry.logIndex}:${entry.paymentAddress}`);
      expect(new Set(keys).size).toBe(keys.length);
      for (const [hash, kind] of expected) {
        const mine = all.filter((entry) => entry.transactionHash.toLowerCase() === hash);
        expect(mine, hash).toHaveLength(1);
        expect(mine[0]?.kind).toBe(kind);
      }
      for (const entry of all) {
        expect(entry.chainId).toBe(stack.local.chainId);
        expect(entry.blockHash).toMatch(/^0x[0-9a-f]{64}$/i);
        expect(entry.transactionHash).toMatch(/^0x[0-9a-f]{64}$/i);
        expect(typeof entry.logIndex).toBe("number");
        expect(BigInt(entry.value)).toBeGreaterThan(0n);
        // The evidence is the chain's: the block hash at that height is the one the ledger names.
        const block = await stack.publicClient.getBlock({ blockNumber: BigInt(entry.blockNumber) });
        expect(block.hash).toBe(entry.blockHash);
      }
      const refund = all.find((entry) => entry.kind === "refund");
      expect(refund?.refundId).toBe(refundId);
      expect(all.find((entry) => entry.kind === "settled")?.orderId).toBe(settled.orderId);
      const claim = all.find((entry) => entry.kind === "reward_claim" && entry.rewardId === rewardId);
      expect(claim).toMatchObject({ rewardId, value: "1250000", orderId: settled.orderId });
      expect(claim?.paymentAddress.toLowerCase()).toBe(paymentAddress());
      expect(claim?.from.toLowerCase()).toBe(paymentAddress());
    });

    it("reconciles to balanceOf at toBlock, and the sums are the ledger's", async () => {
      const report = await json(await stack.partnerFetch(`/v1/reports/reconciliation?${range()}`));
      const row = report.data.find((line: { paymentAddress: string }) => line.paymentAddress.toLowerCase() === paymentAddress());
      expect(row).toBeDefined();
      const balance = await stack.publicClient.readContract({
        address: stack.local.contracts.usdc as Address,
        abi: erc20Abi,
        functionName: "balanceOf",
        args: [stack.local.partner.paymentAddress as Address],
        blockNumber: toBlock,
      });
      expect(row.chainBalance).toBe(balance.toString());
      expect(row.reconciled).toBe(true);
      expect(row.difference).toBe("0");
      const sums = Object.fromEntries(
        Object.entries(row.sums as Record<string, string>).map(([kind, sum]) => [kind, BigInt(sum)]),
      );
      const incoming = ["settled", "underpaid", "overpaid", "late", "unmatched_in"].reduce(
        (total, kind) => total + (sums[kind] ?? 0n),
        0n,
      );
      const outgoing = ["refund", "unmatched_out", "reward_claim"].reduce((total, kind) => total + (sums[kind] ?? 0n), 0n);
      expect(BigInt(row.closingBalance)).toBe(BigInt(row.openingBalance) + incoming - outgoing);
      expect(BigInt(row.closingBalance)).toBe(balance);
      const all = (await ledgerPages(500)).filter((entry) => entry.paymentAddress.toLowerCase() === paymentAddress());
      for (const kind of SUMMED) {
        const ledgerSum = all.filter((entry) => entry.kind === kind).reduce((total, entry) => total + BigInt(entry.value), 0n);
        expect(sums[kind], kind).toBe(ledgerSum);
      }
      for (const kind of KINDS) expect(sums[kind], kind).toBeGreaterThan(0n);
      expect(sums.reward_claim).toBe(1_250_000n);
    });

    it("a funding address that is no payment address is in the books: its claims in the ledger, a row with sums.reward_claim", async () => {
      const entries = (await ledgerPages(500)).filter((entry) => entry.paymentAddress.toLowerCase() === fundingAddress());
      expect(entries).toHaveLength(1);
      expect(entries[0]).toMatchObject({
        kind: "reward_claim",
        rewardId: fundedRewardId,
        orderId: settled.orderId,
        value: "2000000",
      });
      expect(entries[0]?.from.toLowerCase()).toBe(fundingAddress());

      const report = await json(await stack.partnerFetch(`/v1/reports/reconciliation?${range()}`));
      const row = report.data.find((line: { paymentAddress: string }) => line.paymentAddress.toLowerCase() === fundingAddress());
      expect(row).toMatchObject({ role: "funding_address", partnerId: stack.local.partner.id });
      expect(row.sums.reward_claim).toBe("2000000");
      for (const kind of SUMMED.filter((kind) => kind !== "reward_claim")) expect(row.sums[kind], kind).toBe("0");
      const balanceAt = (blockNumber: bigint) =>
        stack.publicClient.readContract({
          address: stack.local.contracts.usdc as Address,
          abi: erc20Abi,
          functionName: "balanceOf",
          args: [fundingWallet.account!.address],
          blockNumber,
        });
      // Opening and chain balances are the chain's; what moved other than claims (its funding) is the difference.
      expect(BigInt(row.openingBalance)).toBe(await balanceAt(0n).catch(() => 0n));
      expect(BigInt(row.chainBalance)).toBe(await balanceAt(toBlock));
      expect(BigInt(row.closingBalance)).toBe(BigInt(row.openingBalance) - 2_000_000n);
      expect(BigInt(row.difference)).toBe(BigInt(row.chainBalance) - BigInt(row.closingBalance));
      // The payment address's row is unchanged by it, still reconciled.
      const payment = report.data.find(
        (line: { paymentAddress: string }) => line.paymentAddress.toLowerCase() === paymentAddress(),
      );
      expect(payment).toMatchObject({ role: "payment_address", reconciled: true });
    });

    it("the sums are the ledger's on any part of the history as well, and each part reconciles", async () => {
      const third = toBlock / 3n;
      const parts: [bigint, bigint][] = [
        [1n, third],
        [third + 1n, 2n * third],
        [2n * third + 1n, toBlock],
        [third, third],
      ];
      const seen = new Set<string>();
      for (const [from, to] of parts) {
        const query = `fromBlock=${from}&toBlock=${to}`;
        const report = await json(await stack.partnerFetch(`/v1/reports/reconciliation?${query}`));
        const row = report.data.find(
          (line: { paymentAddress: string }) => line.paymentAddress.toLowerCase() === paymentAddress(),
        );
        expect(row.reconciled, query).toBe(true);
        const entries = (await ledgerPages(500, undefined, query)).filter(
          (entry) => entry.paymentAddress.toLowerCase() === paymentAddress(),
        );
        for (const kind of SUMMED) {
          const ledgerSum = entries
            .filter((entry) => entry.kind === kind)
            .reduce((total, entry) => total + BigInt(entry.value), 0n);
          expect(BigInt(row.sums[kind]), `${kind} in ${query}`).toBe(ledgerSum);
          if (ledgerSum > 0n) seen.add(kind);
        }
      }
      // The parts between them hold every kind, so each kind's rule was taken on a part.
      expect([...seen].sort()).toEqual([...KINDS].sort());
    });

    it("the ledger CSV, parsed by a real CSV parser, equals the JSON and each row is the chain's transfer", async () => {
      const all = await ledgerPages(500);
      const response = await stack.partnerFetch(`/v1/ledger?${range()}`, { headers: { Accept: "text/csv" } });
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toContain("text/csv");
      const rows = csvRecords(await response.text(), LEDGER_CSV_COLUMNS);
      expect(rows).toHaveLength(all.length);
      for (const [index, row] of rows.entries()) {
        const entry = all[index] as Entry;
        expect(row, `row ${index}`).toEqual({
          kind: entry.kind,
          reason: entry.reason ?? "",
          chain_id: String(entry.chainId),
          block_number: entry.blockNumber,
          block_time: entry.blockTime,
          block_hash: entry.blockHash,
          transaction_hash: entry.transactionHash,
          log_index: String(entry.logIndex),
          from: entry.from,
          to: entry.to,
          value: entry.value,
          value_usdc: usdc(entry.value),
          payment_address: entry.paymentAddress,
          order_id: entry.orderId ?? "",
          external_order_id: entry.externalOrderId === undefined ? "" : neutralised(entry.externalOrderId),
          refund_id: entry.refundId ?? "",
          reward_id: entry.rewardId ?? "",
          metadata: entry.metadata === undefined ? "" : JSON.stringify(entry.metadata),
          // Adjustment columns: empty on every row but an `adjustment` (none before a period is closed).
          period_id: "",
          entry_kind: "",
          balance_effect: "",
          balance_effect_usdc: "",
        });
        // Against the chain: the block (hash and time) and the Transfer log the row names.
        const block = await stack.publicClient.getBlock({ blockNumber: BigInt(row.block_number as string) });
        expect(row.block_hash).toBe(block.hash);
        expect(row.block_time).toBe(new Date(Number(block.timestamp) * 1000).toISOString());
        const receipt = await stack.publicClient.getTransactionReceipt({ hash: row.transaction_hash as Hex });
        const logs = receipt.logs.filter((candidate) => candidate.logIndex === Number(row.log_index));
        if (row.payment_address?.toLowerCase() === fundingAddress()) {
          // A funding-only address's evidence is the distributor's RewardClaimed log.
          const [claim] = parseEventLogs({ abi: rewardDistributorAbi, eventName: "RewardClaimed", logs });
          expect(claim?.address.toLowerCase()).toBe((stack.local.contracts.rewardDistributor as string).toLowerCase());
          expect(claim?.args.funder.toLowerCase()).toBe(row.from?.toLowerCase());
          expect(claim?.args.recipient.toLowerCase()).toBe(row.to?.toLowerCase());
          expect(claim?.args.amount.toString()).toBe(row.value);
          continue;
        }
        const [log] = parseEventLogs({ abi: erc20Abi, eventName: "Transfer", logs });
        expect(log?.address.toLowerCase()).toBe((stack.local.contracts.usdc as string).toLowerCase());
        expect(log?.args.from.toLowerCase()).toBe(row.from?.toLowerCase());
        expect(log?.args.to.toLowerCase()).toBe(row.to?.toLowerCase());
        expect(log?.args.value.toString()).toBe(row.value);
      }
      const byHash = (kind: string) => rows.find((row) => row.kind === kind) as Record<string, string>;
      // What an accountant files each movement under (SPEC 17.1).
      expect(byHash("settled")).toMatchObject({
        order_id: settled.orderId,
        external_order_id: `'${settled.externalOrderId}`,
        metadata: JSON.stringify({ invoice: 'INV-7, "quoted"', line: "a\r\nb" }),
      });
      expect(byHash("refund")).toMatchObject({
        refund_id: refundId,
        reason: "requested_by_customer",
        order_id: settled.orderId,
        value: "5000000",
        value_usdc: "5.000000",
      });
      expect(rows.find((row) => row.reward_id === rewardId)).toMatchObject({
        kind: "reward_claim",
        order_id: settled.orderId,
        value_usdc: "1.250000",
      });
      expect(rows.find((row) => row.reward_id === fundedRewardId)).toMatchObject({
        kind: "reward_claim",
        order_id: settled.orderId,
        payment_address: getAddress(fundingAddress()),
        value: "2000000",
        value_usdc: "2.000000",
      });
      for (const kind of ["underpaid", "overpaid", "late"]) expect(byHash(kind).reason).toBe(kind);
    });

    it("orders CSV: total_price and amounts in base units and decimal USDC, refunds, each paid order against its transfer", async () => {
      const json200 = await json(await stack.partnerFetch(`/v1/orders?${range()}&limit=200`));
      const orders = await stack.partnerFetch(`/v1/orders?${range()}`, { headers: { Accept: "text/csv" } });
      expect(orders.status).toBe(200);
      const rows = csvRecords(await orders.text(), ORDER_CSV_COLUMNS);
      expect(rows.map((row) => row.id)).toEqual(json200.data.map((order: { id: string }) => order.id));
      for (const row of rows) {
        const order = json200.data.find((candidate: { id: string }) => candidate.id === row.id);
        expect(row.total_price).toBe(order.totalPriceUsdc ?? "");
        expect(row.total_price_usdc).toBe(order.totalPriceUsdc === null ? "" : usdc(order.totalPriceUsdc));
        expect(row.amount_refunded).toBe(order.amountRefunded);
        expect(row.amount_refunded_usdc).toBe(usdc(order.amountRefunded));
        expect(row.refund_status).toBe(order.refundStatus);
        if (row.transaction_hash === "") continue;
        const receipt = await stack.publicClient.getTransactionReceipt({ hash: row.transaction_hash as Hex });
        const [log] = parseEventLogs({
          abi: erc20Abi,
          eventName: "Transfer",
          logs: receipt.logs.filter((candidate) => candidate.logIndex === Number(row.log_index)),
        });
        expect(log?.args.value.toString()).toBe(row.amount_paid);
        expect(row.amount_paid_usdc).toBe(usdc(row.amount_paid as string));
        expect(log?.args.to.toLowerCase()).toBe(row.payment_address?.toLowerCase());
      }
      const row = rows.find((cells) => cells.id === settled.orderId) as Record<string, string>;
      expect(row).toMatchObject({
        external_order_id: `'${settled.externalOrderId}`,
        total_price: settled.payment.totalPriceUsdc,
        total_price_usdc: "25.000000",
        amount_refunded: "5000000",
        amount_refunded_usdc: "5.000000",
        refund_status: "partial",
      });
      // A cell starting with = + - @ is neutralised; numbers (also negative ones) are left alone.
      for (const cells of rows)
        for (const cell of Object.values(cells))
          if (!/^-?\d+(\.\d+)?$/.test(cell)) expect(cell, cell).not.toMatch(/^[=+\-@\t\r]/);
    });

    it("reconciliation CSV: every amount in base units and decimal USDC, row for row the JSON, balances the chain's", async () => {
      const report = await json(await stack.partnerFetch(`/v1/reports/reconciliation?${range()}`));
      const response = await stack.partnerFetch(`/v1/reports/reconciliation?${range()}`, { headers: { Accept: "text/csv" } });
      const amounts = ["opening_balance", "closing_balance", "chain_balance", "difference"];
      const columns = [
        "chain_id",
        "partner_id",
        "payment_address",
        "role",
        "from_block",
        "to_block",
        ...amounts.flatMap((name) => [name, `${name}_usdc`]),
        "reconciled",
        ...SUMMED.flatMap((kind) => [kind, `${kind}_usdc`]),
      ];
      const rows = csvRecords(await response.text(), columns);
      expect(rows).toHaveLength(report.data.length);
      for (const [index, row] of rows.entries()) {
        const line = report.data[index];
        expect(row).toMatchObject({
          payment_address: line.paymentAddress,
          role: line.role,
          from_block: report.fromBlock,
          to_block: report.toBlock,
          opening_balance: line.openingBalance,
          opening_balance_usdc: usdc(line.openingBalance),
          closing_balance_usdc: usdc(line.closingBalance),
          difference: line.difference,
          difference_usdc: usdc(line.difference),
          reconciled: String(line.reconciled),
        });
        for (const kind of SUMMED) {
          expect(row[kind], kind).toBe(line.sums[kind]);
          expect(row[`${kind}_usdc`], kind).toBe(usdc(line.sums[kind]));
        }
        const balance = await stack.publicClient.readContract({
          address: stack.local.contracts.usdc as Address,
          abi: erc20Abi,
          functionName: "balanceOf",
          args: [row.payment_address as Address],
          blockNumber: toBlock,
        });
        expect(row.chain_balance).toBe(balance.toString());
      }
    });

    it("refunds CSV: one row per refund, as the JSON list, the sent one tied to its transfer on the chain", async () => {
      const list = await json(await stack.partnerFetch("/v1/refunds?limit=500"));
      const response = await stack.partnerFetch("/v1/refunds", { headers: { Accept: "text/csv" } });
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toContain("text/csv");
      const rows = csvRecords(await response.text(), REFUND_CSV_COLUMNS);
      expect(rows.map((row) => row.id)).toEqual(list.data.map((refund: { id: string }) => refund.id));
      const row = rows.find((cells) => cells.id === refundId) as Record<string, string>;
      expect(row).toMatchObject({
        status: "succeeded",
        order_id: settled.orderId,
        external_order_id: `'${settled.externalOrderId}`,
        amount: "5000000",
        amount_usdc: "5.000000",
        reason: "requested_by_customer",
      });
      const receipt = await stack.publicClient.getTransactionReceipt({ hash: row.transaction_hash as Hex });
      const [log] = parseEventLogs({ abi: erc20Abi, eventName: "Transfer", logs: receipt.logs });
      expect(log?.args.value.toString()).toBe(row.amount);
      expect(log?.args.to.toLowerCase()).toBe(row.destination?.toLowerCase());
      // The filters of the JSON list apply to the CSV too.
      const none = csvRecords(
        await (await stack.partnerFetch("/v1/refunds?status=cancelled", { headers: { Accept: "text/csv" } })).text(),
        REFUND_CSV_COLUMNS,
      );
      expect(none.filter((cells) => cells.id === refundId)).toEqual([]);
    });

    it("evidence of the settled order: transfer with block hash and confirmations, rule, refund, events with deliveries", async () => {
      const evidence = await json(await stack.partnerFetch(`/v1/orders/${settled.orderId}/evidence`));
      expect(evidence.transfers).toHaveLength(1);
      const transfer = evidence.transfers[0];
      expect(transfer.blockHash).toBe((await stack.publicClient.getBlock({ blockNumber: BigInt(transfer.blockNumber) })).hash);
      expect(transfer.confirmations).toBeGreaterThanOrEqual(1);
      expect(transfer.rule).toBe("exact_amount_reference");
      expect(transfer.value).toBe(settled.payment.amount);
      expect(evidence.refunds).toHaveLength(1);
      expect(evidence.refunds[0]).toMatchObject({ id: refundId, status: "succeeded", amount: "5000000" });
      expect(evidence.events.length).toBeGreaterThan(0);
      for (const event of evidence.events) expect(Array.isArray(event.deliveries)).toBe(true);
      expect(evidence.events.map((event: { type: string }) => event.type)).toContain("refund.succeeded");
    });
  });

  describe("read-only and auditor keys", () => {
    let readKey: string;
    let auditorKey: string;

    beforeAll(async () => {
      const created = await json(await stack.partnerFetch("/v1/api-keys", { method: "POST", json: { scope: "read" } }), 201);
      expect(created.key).toMatch(/^rk_test_/);
      readKey = created.key;
      auditorKey = (await issueAuditorKey(store, { mode: "test" })).apiKey;
      expect(auditorKey).toMatch(/^ak_test_/);
    });

    const counts = async () => ({
      sessions: (await store.selectFrom("checkout_session").select(store.fn.countAll().as("n")).executeTakeFirstOrThrow()).n,
      refunds: (await store.selectFrom("refund").select(store.fn.countAll().as("n")).executeTakeFirstOrThrow()).n,
      keys: (await store.selectFrom("api_key").select(store.fn.countAll().as("n")).executeTakeFirstOrThrow()).n,
      events: (await store.selectFrom("event").select(store.fn.countAll().as("n")).executeTakeFirstOrThrow()).n,
    });

    it("are refused with 403 read_only_key on every write route of /v1, and nothing changes", async () => {
      const openapi = await json(await fetch(`${stack.ponder.baseUrl}/openapi.json`));
      const writes: [string, string][] = [];
      for (const [path, operations] of Object.entries(openapi.paths as Record<string, Record<string, unknown>>)) {
        if (!path.startsWith("/v1/") || path.startsWith("/v1/public/")) continue;
        for (const method of Object.keys(operations))
          if (["post", "put", "patch", "delete"].includes(method)) writes.push([method.toUpperCase(), path]);
      }
      expect(writes.length).toBeGreaterThan(5);
      const before = await counts();
      for (const key of [readKey, auditorKey])
        for (const [method, path] of writes) {
          // Closing a period is the one write of a partner's read-only key (SPEC 17.1; tested under "closed periods").
          if (key === readKey && method === "POST" && path === "/v1/reports/periods") continue;
          const url = path.replace(/\{[^}]+\}/g, (name) =>
            name.includes("order") ? settled.orderId : name.includes("refund") ? refundId : "x_1",
          );
          const response = await fetch(`${stack.ponder.baseUrl}${url}`, {
            method,
            headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
            body: method === "DELETE" ? undefined : JSON.stringify({ idempotencyKey: `w-${randomUUID()}`, scope: "read" }),
          });
          await expectProblem(response, 403, "read_only_key");
        }
      expect(await counts()).toEqual(before);
    });

    it("can read: ledger, reconciliation, orders, evidence (the auditor names the partner)", async () => {
      const partnerId = stack.local.partner.id;
      expect(await ledgerPages(500, readKey)).toEqual(await ledgerPages(500));
      const auth = (key: string) => ({ headers: { Authorization: `Bearer ${key}` } });
      await json(await stack.partnerFetch(`/v1/reports/reconciliation?${range()}`, auth(readKey)));
      await json(await stack.partnerFetch(`/v1/orders/${settled.orderId}/evidence`, auth(readKey)));
      await json(await stack.partnerFetch(`/v1/orders/${settled.orderId}/evidence?partnerId=${partnerId}`, auth(auditorKey)));
      const audited = await json(
        await stack.partnerFetch(`/v1/ledger?${range()}&limit=500&partnerId=${partnerId}`, auth(auditorKey)),
      );
      expect(audited.data.map((entry: Entry) => entry.transactionHash)).toEqual(
        (await ledgerPages(500)).map((entry) => entry.transactionHash),
      );
    });
  });

  describe("hostile reads", () => {
    // A function: the key exists only once beforeAll ran (a constant here would read it at collection time).
    const asOther = () => ({ headers: { Authorization: `Bearer ${otherPartnerKey}` } });

    it("another partner sees none of the first partner's entries nor its address's reconciliation, and its evidence is 404", async () => {
      const response = await stack.partnerFetch(`/v1/ledger?${range()}&limit=500`, asOther());
      expect(response.status).toBe(200);
      const entries = (await response.json()).data as Entry[];
      expect(entries.filter((entry) => entry.paymentAddress.toLowerCase() === paymentAddress())).toEqual([]);
      expect(entries.filter((entry) => expected.has(entry.transactionHash.toLowerCase()))).toEqual([]);
      await expectProblem(await stack.partnerFetch(`/v1/orders/${settled.orderId}/evidence`, asOther()), 404, "not_found");
      // Nor a row of the first partner's address in its reconciliation.
      const report = await json(await stack.partnerFetch(`/v1/reports/reconciliation?${range()}`, asOther()));
      expect(report.data.map((row: { paymentAddress: string }) => row.paymentAddress.toLowerCase())).not.toContain(
        paymentAddress(),
      );
    });

    it("malformed ranges are 400 with their documented codes", async () => {
      await expectProblem(await stack.partnerFetch(`/v1/ledger?fromBlock=${toBlock}&toBlock=0`), 400, "invalid_range");
      await expectProblem(await stack.partnerFetch("/v1/ledger?fromBlock=abc&toBlock=5"), 400, "invalid_range");
      await expectProblem(await stack.partnerFetch("/v1/ledger?fromBlock=1&toBlock=99999999"), 400, "range_too_wide");
      await expectProblem(
        await stack.partnerFetch("/v1/reports/reconciliation?from=2020-01-01T00:00:00Z&to=2026-12-31T00:00:00Z"),
        400,
        "range_too_wide",
      );
      await expectProblem(
        await stack.partnerFetch(`/v1/ledger?fromBlock=1&toBlock=${toBlock + 1000n}`),
        400,
        "range_not_indexed",
      );
    });
  });

  describe("the client library reads the books", () => {
    const client = () =>
      createClient({ apiKey: stack.local.partner.apiKey, network: "local", baseUrl: stack.ponder.baseUrl, timeoutMs: 60_000 });
    const text = async (stream: ReadableStream<Uint8Array>) => new Response(stream).text();

    it("ledger, reconciliation and orders: the same answers as the API, paged and as CSV", async () => {
      const books = client();
      const params = { fromBlock: 1n, toBlock };
      const entries = [];
      for await (const entry of books.ledger.iterate({ ...params, limit: 2 })) entries.push(entry);
      expect(entries).toEqual(await ledgerPages(500));
      expect(await books.reports.reconciliation.retrieve(params)).toEqual(
        await json(await stack.partnerFetch(`/v1/reports/reconciliation?${range()}`)),
      );
      const orders = [];
      for await (const order of books.orders.iterate({ ...params, limit: 1 })) orders.push(order);
      expect(orders.map((order) => order.id)).toEqual(
        (await json(await stack.partnerFetch(`/v1/orders?${range()}&limit=200`))).data.map((order: { id: string }) => order.id),
      );
      for (const [csv, path] of [
        [books.ledger.csv(params), "/v1/ledger"],
        [books.reports.reconciliation.csv(params), "/v1/reports/reconciliation"],
        [books.orders.csv(params), "/v1/orders"],
      ] as const) {
        const api = await (await stack.partnerFetch(`${path}?${range()}`, { headers: { Accept: "text/csv" } })).text();
        expect(await text(await csv), path).toBe(api);
      }
      const evidence = await books.orders.evidence(settled.orderId);
      expect(evidence).toEqual(await json(await stack.partnerFetch(`/v1/orders/${settled.orderId}/evidence`)));
    });

    it("a bad range is a SettlementApiError with its code, from JSON and CSV calls alike", async () => {
      const books = client();
      await expect(books.ledger.list({ fromBlock: 5n, toBlock: 1n })).rejects.toMatchObject({
        code: "invalid_range",
        status: 400,
      });
      await expect(books.ledger.csv({ fromBlock: 1n, toBlock: 99_999_999n })).rejects.toMatchObject({ code: "range_too_wide" });
    });

    it("api keys: a read-only key is created (shown once), listed, works for reads, and is revoked", async () => {
      const books = client();
      const created = await books.apiKeys.create();
      expect(created).toMatchObject({ scope: "read" });
      expect(created.key).toMatch(/^rk_test_/);
      const listed = [];
      for await (const key of books.apiKeys.iterate()) listed.push(key);
      expect(listed.find((key) => key.id === created.id)).toMatchObject({ scope: "read", revokedAt: null });
      const reader = createClient({ apiKey: created.key, network: "local", baseUrl: stack.ponder.baseUrl });
      expect((await reader.ledger.list({ fromBlock: 1n, toBlock, limit: 1 })).data).toHaveLength(1);
      await expect(reader.apiKeys.create()).rejects.toMatchObject({ code: "read_only_key", status: 403 });
      await books.apiKeys.revoke(created.id);
      await expect(reader.ledger.list({ fromBlock: 1n, toBlock })).rejects.toMatchObject({ status: 401 });
      const after = (await books.apiKeys.list({ limit: 200 })).data.find((key) => key.id === created.id);
      expect(after?.revokedAt).not.toBeNull();
    });
  });

  // Last in this file: it reorganises the chain's newest blocks.
  describe("closed periods (SPEC 17.1)", () => {
    let readKey: string;
    let auditorKey: string;
    let periodStart: bigint;
    let periodEnd: bigint;
    let lateHash: Hex;
    let goneHash: Hex;
    const asKey = (key: string, init: RequestInit & { json?: unknown } = {}) => ({
      ...init,
      headers: { ...(init.headers as Record<string, string> | undefined), Authorization: `Bearer ${key}` },
    });
    const close = (body: unknown, key?: string) =>
      stack.partnerFetch(
        "/v1/reports/periods",
        key === undefined ? { method: "POST", json: body } : asKey(key, { method: "POST", json: body }),
      );
    const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");
    const ledgerCsvOf = async (from: bigint, to: bigint) =>
      (await stack.partnerFetch(`/v1/ledger?fromBlock=${from}&toBlock=${to}`, { headers: { Accept: "text/csv" } })).text();

    beforeAll(async () => {
      readKey = (await json(await stack.partnerFetch("/v1/api-keys", { method: "POST", json: { scope: "read" } }), 201)).key;
      auditorKey = (await issueAuditorKey(store, { mode: "test" })).apiKey;
      periodStart = toBlock + 1n;
      goneHash = (await stack.payUsdc({ from: 4, to: stack.local.partner.paymentAddress as Address, amount: 2_000_000n })).hash;
      await mine();
      await mine();
      periodEnd = await stack.publicClient.getBlockNumber();
      await waitFor(async () => ((await ledgerCsvOf(periodStart, periodEnd)).includes(goneHash) ? true : undefined), {
        what: "the period's transfer in the ledger",
        intervalMs: 250,
      });
    });

    it("are refused to a platform auditor key, on overlap, for blocks not indexed and for a period not over", async () => {
      await expectProblem(
        await close({ fromBlock: String(periodStart), toBlock: String(periodEnd) }, auditorKey),
        403,
        "read_only_key",
      );
      await expectProblem(
        await close({ fromBlock: String(periodStart), toBlock: String(periodEnd + 1000n) }),
        400,
        "range_not_indexed",
      );
      const future = new Date(Date.now() + 3_600_000).toISOString();
      const dayAgo = new Date(Date.now() - 86_400_000).toISOString();
      await expectProblem(await close({ from: dayAgo, to: future }), 409, "period_not_final");
      await expectProblem(await close({ fromBlock: "1", toBlock: "2", extra: true }), 400, "invalid_request");
      expect((await json(await stack.partnerFetch("/v1/reports/periods"))).data).toEqual([]);
    });

    it("a read-only key closes one: the digest is the SHA-256 of the ledger CSV served then, the same bytes ever after", async () => {
      const served = await ledgerCsvOf(periodStart, periodEnd);
      const closed = await json(await close({ fromBlock: String(periodStart), toBlock: String(periodEnd) }, readKey), 201);
      expect(closed.id).toMatch(/^per_/);
      expect(closed).toMatchObject({ fromBlock: String(periodStart), toBlock: String(periodEnd), adjustments: [] });
      expect(closed.digest).toBe(sha256(served));
      expect(closed.reconciliation).toEqual(
        await json(await stack.partnerFetch(`/v1/reports/reconciliation?fromBlock=${periodStart}&toBlock=${periodEnd}`)),
      );
      const ledger = await stack.partnerFetch(`/v1/reports/periods/${closed.id}/ledger`);
      expect(ledger.headers.get("content-type")).toContain("text/csv");
      expect(await ledger.text()).toBe(served);
      // Periods of one partner never overlap, whichever key asks.
      await expectProblem(await close({ fromBlock: String(periodEnd), toBlock: String(periodEnd) }), 409, "period_overlaps");
      await expectProblem(await close({ fromBlock: "1", toBlock: String(periodStart) }, readKey), 409, "period_overlaps");
      // Another partner neither sees nor reads it; an auditor key reads it naming the partner.
      const other = { headers: { Authorization: `Bearer ${otherPartnerKey}` } };
      await expectProblem(await stack.partnerFetch(`/v1/reports/periods/${closed.id}`, other), 404, "not_found");
      await expectProblem(await stack.partnerFetch(`/v1/reports/periods/${closed.id}/ledger`, other), 404, "not_found");
      expect((await json(await stack.partnerFetch("/v1/reports/periods", other))).data).toEqual([]);
      const audited = await json(
        await stack.partnerFetch(`/v1/reports/periods/${closed.id}?partnerId=${stack.local.partner.id}`, asKey(auditorKey)),
      );
      expect(audited.digest).toBe(closed.digest);
    });

    it("after a reorg that drops its transfer and mines a late one in its range, it is served unchanged, the adjustments listed and reported in the next period", async () => {
      const [closed] = (await json(await stack.partnerFetch("/v1/reports/periods"))).data;
      const bytes = await (await stack.partnerFetch(`/v1/reports/periods/${closed.id}/ledger`)).text();
      const goneBlock = (await stack.publicClient.getTransactionReceipt({ hash: goneHash })).blockNumber;
      // A transfer signed now, mined by the reorg into the block that held the dropped one.
      const late = stack.wallet(9);
      const request = await late.prepareTransactionRequest({
        to: stack.local.contracts.usdc as Address,
        data: encodeFunctionData({
          abi: erc20Abi,
          functionName: "transfer",
          args: [stack.local.partner.paymentAddress as Address, 3_000_000n],
        }),
        chain: stack.chain,
        account: late.account!,
        gas: 100_000n,
      });
      const raw = await late.signTransaction({ ...request, chain: stack.chain, account: late.account! } as never);
      lateHash = keccak256(raw);
      const head = await stack.publicClient.getBlockNumber();
      await stack.reorg(Number(head - goneBlock + 1n), [[raw, 0]]);
      await mine();
      expect((await stack.publicClient.getTransactionReceipt({ hash: lateHash })).blockNumber).toBe(goneBlock);
      await waitFor(
        async () => {
          const now = await ledgerCsvOf(periodStart, periodEnd);
          return now.includes(lateHash) && !now.includes(goneHash) ? true : undefined;
        },
        { what: "the index follows the reorg", intervalMs: 250, timeoutMs: 60_000 },
      );

      const again = await json(await stack.partnerFetch(`/v1/reports/periods/${closed.id}`));
      expect(await (await stack.partnerFetch(`/v1/reports/periods/${closed.id}/ledger`)).text()).toBe(bytes);
      expect(again.digest).toBe(closed.digest);
      expect(again.reconciliation).toEqual(closed.reconciliation);
      const byHash = (hash: string) =>
        again.adjustments.find((adjustment: { transactionHash: string }) => adjustment.transactionHash === hash.toLowerCase());
      expect(byHash(goneHash)).toMatchObject({
        kind: "removed",
        value: "2000000",
        balanceEffect: "-2000000",
        reportedInPeriod: null,
      });
      expect(byHash(lateHash)).toMatchObject({
        kind: "added",
        value: "3000000",
        balanceEffect: "3000000",
        reportedInPeriod: null,
      });
      // Found once: reading again does not find them again.
      expect((await json(await stack.partnerFetch(`/v1/reports/periods/${closed.id}`))).adjustments).toEqual(again.adjustments);

      // The next period, once closed, holds them (the block they were found at is in it); the first is still as closed.
      await mine();
      const nextEnd = await stack.publicClient.getBlockNumber();
      const next = await waitFor(
        async () => {
          const response = await close({ fromBlock: String(periodEnd + 1n), toBlock: String(nextEnd) });
          // Until the index has the new block the range is not indexed yet.
          return response.status === 400 ? undefined : json(response, 201);
        },
        { what: "the next period closed", intervalMs: 250 },
      );
      const first = await json(await stack.partnerFetch(`/v1/reports/periods/${closed.id}`));
      expect(first.adjustments.map((adjustment: { reportedInPeriod: string }) => adjustment.reportedInPeriod)).toEqual(
        first.adjustments.map(() => next.id),
      );
      const nextRead = await json(await stack.partnerFetch(`/v1/reports/periods/${next.id}`));
      expect(
        nextRead.adjustmentsReported.map((adjustment: { transactionHash: string }) => adjustment.transactionHash).sort(),
      ).toEqual([goneHash.toLowerCase(), lateHash.toLowerCase()].sort());
      // The accounting identity across the boundary: the next period opens at the closed one's
      // closing balance, and its `adjustment` sum (the adjustments' balance effects) brings it to the chain's.
      type Row = {
        paymentAddress: string;
        openingBalance: string;
        closingBalance: string;
        reconciled: boolean;
        sums: Record<string, string>;
      };
      const row = (answer: { data: Row[] }) =>
        answer.data.find((line) => line.paymentAddress.toLowerCase() === paymentAddress()) as Row;
      expect(row(next.reconciliation).openingBalance).toBe(row(first.reconciliation).closingBalance);
      expect(row(next.reconciliation).sums.adjustment).toBe("1000000");
      expect(row(next.reconciliation).reconciled).toBe(true);
      const nextRange = `fromBlock=${periodEnd + 1n}&toBlock=${nextEnd}`;
      const nextNow = row(await json(await stack.partnerFetch(`/v1/reports/reconciliation?${nextRange}`)));
      expect(nextNow).toMatchObject({ openingBalance: row(first.reconciliation).closingBalance, reconciled: true });
      expect(nextNow.sums.adjustment).toBe("1000000");
      const balance = await stack.publicClient.readContract({
        address: stack.local.contracts.usdc as Address,
        abi: erc20Abi,
        functionName: "balanceOf",
        args: [stack.local.partner.paymentAddress as Address],
        blockNumber: nextEnd,
      });
      expect(BigInt(nextNow.closingBalance)).toBe(balance);

      // The next period's ledger opens with the adjustments as rows (JSON and CSV, the same in the
      // closed file): kind `adjustment`, the closed period's id, the change as reason, the balance effect.
      // The reorg mined the late transfer into the block number that held the dropped one.
      const lateBlock = await stack.publicClient.getBlock({ blockNumber: goneBlock });
      const closedRow = csvRecords(bytes, LEDGER_CSV_COLUMNS).find(
        (cells) => cells.transaction_hash === goneHash.toLowerCase(),
      ) as Record<string, string>;
      const expectedRows = [
        { hash: goneHash, reason: "removed", from: stack.wallet(4).account!.address, value: "2000000", effect: "-2000000" },
        { hash: lateHash, reason: "added", from: late.account!.address, value: "3000000", effect: "3000000" },
      ];
      const jsonRows = (await json(await stack.partnerFetch(`/v1/ledger?${nextRange}`))).data.filter(
        (entry: Entry) => entry.kind === "adjustment",
      );
      const csvRows = csvRecords(
        await (await stack.partnerFetch(`/v1/ledger?${nextRange}`, { headers: { Accept: "text/csv" } })).text(),
        LEDGER_CSV_COLUMNS,
      ).filter((cells) => cells.kind === "adjustment");
      const filedRows = csvRecords(
        await (await stack.partnerFetch(`/v1/reports/periods/${next.id}/ledger`)).text(),
        LEDGER_CSV_COLUMNS,
      ).filter((cells) => cells.kind === "adjustment");
      expect(filedRows).toEqual(csvRows);
      expect(csvRows).toHaveLength(2);
      expect(jsonRows).toHaveLength(2);
      for (const wanted of expectedRows) {
        const cells = csvRows.find((candidate) => candidate.transaction_hash === wanted.hash.toLowerCase());
        expect(cells, wanted.reason).toMatchObject({
          kind: "adjustment",
          reason: wanted.reason,
          period_id: closed.id,
          entry_kind: "unmatched_in",
          chain_id: String(stack.chain.id),
          block_number: String(goneBlock),
          from: wanted.from,
          to: stack.local.partner.paymentAddress,
          value: wanted.value,
          value_usdc: usdc(wanted.value),
          balance_effect: wanted.effect,
          balance_effect_usdc: usdc(wanted.effect),
          payment_address: stack.local.partner.paymentAddress,
        });
        // The removed transfer's evidence is its row in the closed file; the added one's, its block now.
        if (wanted.reason === "added")
          expect(cells).toMatchObject({
            block_hash: lateBlock.hash,
            block_time: new Date(Number(lateBlock.timestamp) * 1000).toISOString(),
          });
        else expect(cells).toMatchObject({ block_hash: closedRow.block_hash, block_time: closedRow.block_time });
        const entry = jsonRows.find((candidate: Entry) => candidate.transactionHash === wanted.hash.toLowerCase());
        expect(entry).toMatchObject({
          kind: "adjustment",
          reason: wanted.reason,
          periodId: closed.id,
          balanceEffect: wanted.effect,
        });
      }
      // They open the ledger; summing their balance effects gives the reconciliation's `adjustment` sum.
      const firstRows = csvRecords(
        await (await stack.partnerFetch(`/v1/ledger?${nextRange}`, { headers: { Accept: "text/csv" } })).text(),
        LEDGER_CSV_COLUMNS,
      ).slice(0, 2);
      expect(firstRows.map((cells) => cells.kind)).toEqual(["adjustment", "adjustment"]);
      expect(csvRows.reduce((total, cells) => total + BigInt(cells.balance_effect as string), 0n)).toBe(
        BigInt(nextNow.sums.adjustment as string),
      );
      // Paged one entry at a time, the JSON ledger gives the same rows in the same order as the CSV.
      const paged: Entry[] = [];
      let cursor: string | null = null;
      do {
        const page: { data: Entry[]; nextCursor: string | null } = await json(
          await stack.partnerFetch(`/v1/ledger?${nextRange}&limit=1${cursor === null ? "" : `&cursor=${cursor}`}`),
        );
        paged.push(...page.data);
        cursor = page.nextCursor;
      } while (cursor !== null);
      const whole = csvRecords(
        await (await stack.partnerFetch(`/v1/ledger?${nextRange}`, { headers: { Accept: "text/csv" } })).text(),
        LEDGER_CSV_COLUMNS,
      );
      expect(paged.map((entry) => `${entry.kind}:${entry.transactionHash}:${entry.logIndex}`)).toEqual(
        whole.map((cells) => `${cells.kind}:${cells.transaction_hash}:${cells.log_index}`),
      );
      // A range that holds the closed period holds the facts themselves, not adjustments of it.
      const across = await json(await stack.partnerFetch(`/v1/ledger?fromBlock=${periodStart}&toBlock=${nextEnd}&limit=500`));
      expect(across.data.filter((entry: Entry) => entry.kind === "adjustment")).toEqual([]);
      expect(await (await stack.partnerFetch(`/v1/reports/periods/${closed.id}/ledger`)).text()).toBe(bytes);
    });

    it("overlapping closings sent together: one closes, the others are refused with period_overlaps", async () => {
      const periods = (await json(await stack.partnerFetch("/v1/reports/periods"))).data as { toBlock: string }[];
      const from = BigInt(periods.at(-1)?.toBlock as string) + 1n;
      await mine();
      const to = await stack.publicClient.getBlockNumber();
      await waitFor(
        async () => ((await stack.partnerFetch(`/v1/ledger?fromBlock=${from}&toBlock=${to}`)).status === 200 ? true : undefined),
        { what: "the new block indexed", intervalMs: 250 },
      );
      const body = { fromBlock: String(from), toBlock: String(to) };
      const answers = await Promise.all([close(body), close(body, readKey), close(body)]);
      const statuses = answers.map((response) => response.status).sort();
      expect(statuses).toEqual([201, 409, 409]);
      for (const response of answers) if (response.status === 409) expect((await response.json()).code).toBe("period_overlaps");
      expect((await json(await stack.partnerFetch("/v1/reports/periods"))).data).toHaveLength(periods.length + 1);
    });
  });
});

describe("rwa-refunds", () => {
  // An issuer refunds an RWA purchase (issue 26, SPEC 15, docs/refunds.md "Issuers") on a
  // real Anvil: investors pay real test USDC, the refund is sent from the offering's
  // settlement address (a local payment address: the test account sends it), and the
  // service proves it from the index. A full refund gives the units back to the offering
  // and revokes the certificate; a partial one keeps the units.
  let stack: TestStack;
  let store: Store;
  let adminToken: string;
  let issuerToken: string;
  let issuerKey: Hex;
  let issuerPartnerId: string;
  let rivalToken: string;
  let offeringId: string;
  const investorTokens: Record<number, string> = {};

  type Purchase = {
    id: string;
    status: string;
    units: number;
    reservation: string;
    payment: { recipient: Address; amount: string };
    onchainPurchaseId: string;
    amountRefunded: string;
    amountRefundPending: string;
    refundStatus: string;
    certificate: { status: string } | null;
  };

  type Refund = {
    id: string;
    status: string;
    orderId: string | null;
    amount: string;
    destination: string | null;
    instructions: { from: string; to: string; amount: string; uri: string; transaction: { data: string } } | null;
    transactionHash: string | null;
  };

  beforeAll(async () => {
    stack = sharedStack();
    store = openSqliteStore(join(stack.dataDir, "app.sqlite"));
    adminToken = await signIn(stack, "admin", adminWallet(stack));
    const issuerWallet = portalWallet();
    issuerKey = issuerWallet.privateKey;
    const harbour = await registerIssuer(stack, adminToken, issuerWallet, "Harbour Capital");
    issuerToken = harbour.token;
    issuerPartnerId = harbour.issuer.partnerId;
    rivalToken = (await registerIssuer(stack, adminToken, portalWallet(), "Rival Estates")).token;
    offeringId = await openOffering(
      stack,
      { issuer: issuerToken, admin: adminToken },
      { unitPriceUsdc: "2000000", totalUnits: 50 },
    );
    for (const index of [1, 2, 3]) investorTokens[index] = await signIn(stack, "investor", accountWallet(stack, index));
  });
  afterAll(async () => {
    await store?.destroy();
  });

  async function checkout(investor: number, units: number): Promise<Purchase> {
    return expectJson<Purchase>(
      await api(stack, "POST", "/api/rwa/checkout", { token: investorTokens[investor], json: { offeringId, units } }),
      201,
    );
  }

  async function readPurchase(investor: number, id: string): Promise<Purchase> {
    return expectJson<Purchase>(await api(stack, "GET", `/api/rwa/checkout/${id}`, { token: investorTokens[investor] }), 200);
  }

  /** Checkout, a real payment from the investor's wallet, and the settlement the index proves. */
  async function settledPurchase(investor: number, units: number): Promise<Purchase> {
    const purchase = await checkout(investor, units);
    const paid = await stack.payUsdc({ from: investor, to: purchase.payment.recipient, amount: BigInt(purchase.payment.amount) });
    await expectJson(
      await api(stack, "POST", "/api/rwa/settlements/wallet", {
        token: investorTokens[investor],
        json: { purchaseId: purchase.id, transactionHash: paid.hash },
      }),
      200,
    );
    return waitFor(
      async () => {
        const read = await readPurchase(investor, purchase.id);
        return read.status === "settled" ? read : undefined;
      },
      { what: `purchase ${purchase.id} settled` },
    );
  }

  const unitsAvailable = async () =>
    (await expectJson<{ unitsAvailable: number }>(await api(stack, "GET", `/api/rwa/offerings/${offeringId}`), 200))
      .unitsAvailable;

  /** The issuer's refund of a purchase; `token: null` asks anonymously. */
  function refundPurchase(purchaseId: string, body: Record<string, unknown> = {}, token: string | null = issuerToken) {
    return api(stack, "POST", `/api/issuer/purchases/${purchaseId}/refunds`, {
      token: token ?? undefined,
      json: { reason: "requested_by_customer", idempotencyKey: `rf-${randomUUID()}`, ...body },
    });
  }

  const readRefund = async (id: string, token = issuerToken) =>
    expectJson<Refund>(await api(stack, "GET", `/api/issuer/refunds/${id}`, { token }), 200);

  const refundIn = (id: string, status: string) =>
    waitFor(
      async () => {
        const read = await readRefund(id);
        return read.status === status ? read : undefined;
      },
      { what: `refund ${id} ${status}`, timeoutMs: 30_000 },
    );

  /** The issuer's view of a purchase, from the offering's purchase list. */
  async function issuerPurchaseRow(id: string): Promise<Purchase> {
    const list = await expectJson<{ data: Purchase[] }>(
      await api(stack, "GET", `/api/issuer/offerings/${offeringId}/purchases?limit=200`, { token: issuerToken }),
      200,
    );
    const row = list.data.find((candidate) => candidate.id === id);
    if (row === undefined) throw new Error(`purchase ${id} missing from the issuer's list`);
    return row;
  }

  async function expectProblem(response: Response, status: number, code: string) {
    const text = await response.text();
    expect(response.status, text).toBe(status);
    expect(response.headers.get("content-type")).toContain("application/problem+json");
    expect(JSON.parse(text).code).toBe(code);
  }

  /** Every refund row, guard and refund event, the offering and the purchases: "nothing changed" is this, equal before and after. */
  async function state() {
    const [refunds, allowances, events, offering, purchases] = await Promise.all([
      store.selectFrom("refund").selectAll().orderBy("id").execute(),
      store.selectFrom("refund_allowance").selectAll().orderBy("payment_key").execute(),
      store.selectFrom("event").select("id").where("type", "like", "refund.%").orderBy("id").execute(),
      store.selectFrom("offering").select(["units_available", "status"]).where("id", "=", offeringId).execute(),
      store.selectFrom("rwa_purchase").selectAll().orderBy("id").execute(),
    ]);
    return { refunds, allowances, events, offering, purchases };
  }

  const usdcBalance = (address: Address) =>
    stack.publicClient.readContract({
      address: stack.local.contracts.usdc as Address,
      abi: erc20Abi,
      functionName: "balanceOf",
      args: [address],
    });

  describe("an issuer refunds a whole purchase", () => {
    let purchase: Purchase;
    let refund: Refund;
    const investor = () => stack.local.accounts[1]?.address as Address;

    it("a settled purchase with a minted certificate holds its units", async () => {
      const before = await unitsAvailable();
      purchase = await settledPurchase(1, 3);
      expect(await unitsAvailable()).toBe(before - 3);
      const claim = await expectJson(
        await api(stack, "POST", `/api/rwa/certificates/${purchase.id}/claim`, { token: investorTokens[1] }),
        200,
      );
      const wallet = stack.wallet(1);
      const mint = await wallet.sendTransaction({
        to: claim.transaction.to,
        data: claim.transaction.data,
        chain: stack.chain,
        account: wallet.account!,
      });
      await stack.publicClient.waitForTransactionReceipt({ hash: mint });
      const tokenId = BigInt(purchase.onchainPurchaseId).toString();
      await waitFor(
        async () => {
          // 404 certificate_not_found until the index holds the mint.
          const response = await api(stack, "GET", `/api/rwa/verify/certificates/${tokenId}`);
          const verified = response.status === 200 ? await response.json() : undefined;
          return verified?.status === "valid" ? verified : undefined;
        },
        { what: "certificate minted and valid" },
      );
    });

    it("refuses another issuer (as missing), an investor, an anonymous caller and an unpaid purchase, changing nothing", async () => {
      const before = await state();
      await expectProblem(await refundPurchase(purchase.id, {}, rivalToken), 404, "not_found");
      await expectProblem(await refundPurchase(purchase.id, {}, investorTokens[1]), 403, "wrong_portal");
      await expectProblem(await refundPurchase(purchase.id, {}, null), 401, "unauthenticated");
      await expectProblem(await refundPurchase("pur_does_not_exist"), 404, "not_found");
      // The rival cannot list the purchase's refunds either.
      await expectProblem(
        await api(stack, "GET", `/api/issuer/purchases/${purchase.id}/refunds`, { token: rivalToken }),
        404,
        "not_found",
      );
      expect(await state()).toEqual(before);
      // An unpaid purchase has nothing to give back (its reservation is the only change: the checkout's).
      const unpaid = await checkout(3, 1);
      const withUnpaid = await state();
      await expectProblem(await refundPurchase(unpaid.id), 409, "purchase_not_paid");
      expect(await state()).toEqual(withUnpaid);
    });

    it("creates a ready refund to the investor's wallet, replays it, and refuses refunding more", async () => {
      const key = `rf-${randomUUID()}`;
      const response = await refundPurchase(purchase.id, { idempotencyKey: key, reason: "other", note: "deal cancelled" });
      refund = await expectJson<Refund>(response, 201);
      expect(refund.status).toBe("ready");
      expect(refund.amount).toBe(purchase.payment.amount);
      expect(isAddressEqual(refund.destination as Address, investor())).toBe(true);
      expect(isAddressEqual(refund.instructions?.from as Address, purchase.payment.recipient)).toBe(true);
      const replay = await expectJson<Refund>(
        await refundPurchase(purchase.id, { idempotencyKey: key, reason: "other", note: "deal cancelled" }),
        200,
      );
      expect(replay.id).toBe(refund.id);
      // The same key for another request is a conflict, not a second refund.
      await expectProblem(
        await refundPurchase(purchase.id, { idempotencyKey: key, reason: "duplicate" }),
        409,
        "idempotency_conflict",
      );
      const before = await state();
      await expectProblem(await refundPurchase(purchase.id, { amount: "1" }), 409, "refund_exceeds_remaining");
      expect(await state()).toEqual(before);
      // The issuer sees it on the purchase (in progress) and in the purchase's refunds; the rival reads nothing.
      const row = await issuerPurchaseRow(purchase.id);
      expect(row).toMatchObject({ refundStatus: "none", amountRefunded: "0", amountRefundPending: purchase.payment.amount });
      const listed = await expectJson<{ data: Refund[] }>(
        await api(stack, "GET", `/api/issuer/purchases/${purchase.id}/refunds`, { token: issuerToken }),
        200,
      );
      expect(listed.data.map((item) => item.id)).toEqual([refund.id]);
      await expectProblem(await api(stack, "GET", `/api/issuer/refunds/${refund.id}`, { token: rivalToken }), 404, "not_found");
      await expectProblem(
        await api(stack, "POST", `/api/issuer/refunds/${refund.id}/test-send`, { token: rivalToken }),
        404,
        "not_found",
      );
      // The investor's session does not open the issuer's refunds.
      await expectProblem(
        await api(stack, "GET", `/api/issuer/refunds/${refund.id}`, { token: investorTokens[1] }),
        403,
        "wrong_portal",
      );
      // The QR code of the transfer, for the settlement address's wallet.
      const qr = await api(stack, "GET", `/api/issuer/refunds/${refund.id}/qr`, { token: issuerToken });
      expect(qr.status).toBe(200);
      expect(qr.headers.get("content-type")).toContain("image/svg+xml");
    });

    it("sent with the test account, succeeds from the index: units back, refunded in full, certificate revoked", async () => {
      const balanceBefore = await usdcBalance(investor());
      const unitsBefore = await unitsAvailable();
      const sent = await expectJson<{ transactionHash: Hex }>(
        await api(stack, "POST", `/api/issuer/refunds/${refund.id}/test-send`, { token: issuerToken }),
        200,
      );
      const succeeded = await refundIn(refund.id, "succeeded");
      expect(succeeded.transactionHash).toBe(sent.transactionHash);
      expect(await usdcBalance(investor())).toBe(balanceBefore + BigInt(purchase.payment.amount));
      expect(await unitsAvailable()).toBe(unitsBefore + 3);
      const row = await issuerPurchaseRow(purchase.id);
      expect(row).toMatchObject({
        status: "settled",
        reservation: "released",
        refundStatus: "full",
        amountRefunded: purchase.payment.amount,
        amountRefundPending: "0",
      });
      expect(await readPurchase(1, purchase.id)).toMatchObject({ refundStatus: "full", reservation: "released" });
      const tokenId = BigInt(purchase.onchainPurchaseId).toString();
      const verified = await expectJson(await api(stack, "GET", `/api/rwa/verify/certificates/${tokenId}`), 200);
      expect(verified.status).toBe("revoked");
      // The investor no longer holds the units: the holder register leaves the purchase out.
      const holders = await expectJson<{ data: { investor: string }[] }>(
        await api(stack, "GET", `/api/issuer/offerings/${offeringId}/holders`, { token: issuerToken }),
        200,
      );
      expect(holders.data.some((holder) => isAddressEqual(holder.investor as Address, investor()))).toBe(false);
      // The purchases CSV says it too.
      const csv = await (
        await api(stack, "GET", `/api/issuer/offerings/${offeringId}/purchases.csv`, { token: issuerToken })
      ).text();
      const [header, ...lines] = csv.trim().split(/\r?\n/);
      expect(header?.split(",").slice(-2)).toEqual(["amountRefundedUsdc", "refundStatus"]);
      expect(
        lines
          .find((line) => line.startsWith(purchase.id))
          ?.split(",")
          .slice(-2),
      ).toEqual([purchase.payment.amount, "full"]);
      // Nothing remains to refund.
      await expectProblem(await refundPurchase(purchase.id), 409, "refund_exceeds_remaining");
    });
  });

  describe("a partial refund", () => {
    it("gives part of the money back and keeps the units", async () => {
      const purchase = await settledPurchase(2, 2);
      const unitsBefore = await unitsAvailable();
      const refund = await expectJson<Refund>(await refundPurchase(purchase.id, { amount: "1000000" }), 201);
      expect(refund.amount).toBe("1000000");
      await expectJson(await api(stack, "POST", `/api/issuer/refunds/${refund.id}/test-send`, { token: issuerToken }), 200);
      await refundIn(refund.id, "succeeded");
      const row = await issuerPurchaseRow(purchase.id);
      expect(row).toMatchObject({ refundStatus: "partial", amountRefunded: "1000000", reservation: "held" });
      expect(await unitsAvailable()).toBe(unitsBefore);
      const holders = await expectJson<{ data: { investor: string; units: number }[] }>(
        await api(stack, "GET", `/api/issuer/offerings/${offeringId}/holders`, { token: issuerToken }),
        200,
      );
      const holder = holders.data.find((item) =>
        isAddressEqual(item.investor as Address, stack.local.accounts[2]?.address as Address),
      );
      expect(holder?.units).toBe(2);
    });
  });

  // The client library's refund sending methods, against the same stack: the issuer's
  // partner holds an API key like any partner, and its refunds are an RWA purchase's.
  describe("client library: sending a refund", () => {
    let client: ReturnType<typeof createClient>;
    let purchase: Purchase;
    const refusal = (promise: Promise<unknown>) =>
      promise.then(
        () => {
          throw new Error("expected a refusal");
        },
        (error: unknown) => {
          if (!(error instanceof SettlementApiError)) throw error;
          return error;
        },
      );
    const succeeded = (id: string) =>
      waitFor(
        async () => {
          const read = await client.refunds.retrieve(id);
          return read.status === "succeeded" ? read : undefined;
        },
        { what: `refund ${id} succeeded`, timeoutMs: 30_000 },
      );

    beforeAll(async () => {
      const key = await expectJson<{ apiKey: string }>(
        await api(stack, "POST", `/api/admin/partners/${issuerPartnerId}/api-keys`, { token: adminToken }),
        201,
      );
      client = createClient({ apiKey: key.apiKey, network: "local", baseUrl: stack.local.baseUrl });
      purchase = await settledPurchase(2, 1);
    });

    it("qrSvg, authorizationRequest and relayAuthorization: the relayer sends the settlement address's signed refund", async () => {
      const refund = await expectJson<Refund>(await refundPurchase(purchase.id, { amount: "500000" }), 201);
      const svg = await client.refunds.qrSvg(refund.id);
      expect(svg).toContain("<svg");
      const request = await client.refunds.authorizationRequest(refund.id);
      expect(request.message.value).toBe("500000");
      expect(isAddressEqual(request.message.to as Address, stack.local.accounts[2]?.address as Address)).toBe(true);
      expect(isAddressEqual(request.message.from as Address, purchase.payment.recipient)).toBe(true);
      // The settlement address is a local payment address: its key is the stack's.
      const secrets = loadOrCreateLocalSecrets(stack.dataDir);
      const signer = secrets.paymentPrivateKeys
        .map((key) => privateKeyToAccount(key))
        .find((account) => isAddressEqual(account.address, purchase.payment.recipient));
      if (signer === undefined) throw new Error("the settlement address is not a local payment address");
      const { message } = request;
      const signature = await signer.signTypedData({
        domain: { ...request.domain, verifyingContract: request.domain.verifyingContract as Address },
        types: request.types,
        primaryType: "TransferWithAuthorization",
        message: {
          ...message,
          from: message.from as Address,
          to: message.to as Address,
          nonce: message.nonce as Hex,
          value: BigInt(message.value),
          validAfter: BigInt(message.validAfter),
          validBefore: BigInt(message.validBefore),
        },
      });
      const relayed = await client.refunds.relayAuthorization(refund.id, {
        authorization: message,
        signature,
        domain: { chainId: request.domain.chainId },
      });
      expect(relayed.refund.status).toBe("ready");
      const done = await succeeded(refund.id);
      expect(done.transactionHash).toBe(relayed.transactionHash);
      // A succeeded refund has nothing left to send nor to scan.
      expect((await refusal(client.refunds.qrSvg(refund.id))).code).toBe("refund_not_ready");
      expect((await refusal(client.refunds.authorizationRequest(refund.id))).code).toBe("refund_not_ready");
    });

    it("testSend sends with the test account; another partner's key finds nothing", async () => {
      const refund = await expectJson<Refund>(await refundPurchase(purchase.id, { amount: "500000" }), 201);
      const demo = createClient({ apiKey: stack.local.partner.apiKey, network: "local", baseUrl: stack.local.baseUrl });
      expect((await refusal(demo.refunds.testSend(refund.id))).code).toBe("not_found");
      expect((await refusal(demo.refunds.qrSvg(refund.id))).code).toBe("not_found");
      const sent = await client.refunds.testSend(refund.id);
      expect(sent.refund.id).toBe(refund.id);
      const done = await succeeded(refund.id);
      expect(done.transactionHash).toBe(sent.transactionHash);
      expect((await refusal(client.refunds.testSend(refund.id))).code).toBe("refund_not_ready");
    });
  });

  // The console's issuer screen in headless Chromium at 1280 and 390 px: screenshots in
  // test-artifacts/rwa-refunds/ (not committed), axe-core clean, every request to the
  // service's origin. The issuer refunds a purchase in full from the offering's purchase
  // list and sends it with the test account; the index completes it and the units return.
  describe("the console: an issuer refunds a purchase (Chromium)", () => {
    const ARTIFACTS = freshArtifacts("rwa-refunds");
    let chromium: Chromium | undefined;
    let page: Page;
    const requestedUrls: string[] = [];

    async function capture(name: string) {
      for (const width of [1280, 390]) {
        await page.setViewportSize({ width, height: 900 });
        await page.screenshot({ path: join(ARTIFACTS, `${name}-${width}.png`), fullPage: true });
        const blocking = await axeFindings(page, join(ARTIFACTS, `axe-${name}-${width}.json`), { blockingOnly: true });
        expect(blocking, `${name} at ${width} px: accessibility violations`).toEqual([]);
      }
      await page.setViewportSize({ width: 1280, height: 900 });
    }

    beforeAll(async () => {
      requireChromium();
      chromium = await launchChromium("rwa-refunds", { width: 1280, height: 900 });
      chromium.context.on("request", (request) => requestedUrls.push(request.url()));
      await injectTestWallet(chromium.context, { chain: stack.chain, rpcUrl: stack.local.rpcUrl, key: () => issuerKey });
    }, 120_000);
    afterAll(async () => {
      const foreign = requestedUrls.filter((url) => new URL(url).origin !== stack.local.baseUrl);
      expect(foreign).toEqual([]);
      await chromium?.close();
    });

    it("Refund… on a settled purchase, sent with the test account: the purchase shows full and the units come back", {
      timeout: 240_000,
    }, async () => {
      const purchase = await settledPurchase(3, 2);
      const unitsBefore = await unitsAvailable();
      page = await (chromium as Chromium).context.newPage();
      await page.goto(`${stack.local.baseUrl}/console`);
      await page.getByRole("heading", { name: "Sign in to the console" }).waitFor();
      await page.getByRole("radio", { name: /^Issuer/ }).check();
      await page.getByRole("button", { name: "Sign in with wallet" }).click();
      await page.getByRole("button", { name: "Sign out" }).waitFor();
      await page.goto(`${stack.local.baseUrl}/console/issuer/offerings/${offeringId}`);
      await page.getByRole("heading", { name: "Harbour Logistics Note 2031", level: 1 }).waitFor();
      // A purchase refunded in full earlier offers no Refund… any more; this one does.
      await page.getByRole("button", { name: `Refund purchase ${purchase.id}` }).click();
      await page.getByRole("heading", { name: `Refund purchase ${purchase.id}` }).waitFor();
      await capture("01-issuer-refund-form");

      await page.getByRole("button", { name: "Create refund" }).click();
      const created = page.getByRole("status").filter({ hasText: "created: ready" });
      await created.waitFor();
      const refundId = (await created.locator("code").first().textContent()) as string;
      const refund = await readRefund(refundId);
      expect(refund).toMatchObject({ status: "ready", amount: purchase.payment.amount });
      // The send panel opens on the new refund, with the API's exact instructions and the QR code.
      await page.getByRole("heading", { name: `Send refund ${refundId}` }).waitFor();
      expect(await page.getByTestId("refund-calldata").textContent()).toBe(refund.instructions?.transaction.data);
      expect(await page.getByRole("link", { name: "payment link (EIP-681)" }).getAttribute("href")).toBe(
        refund.instructions?.uri,
      );
      await page.getByRole("img", { name: "QR code of the refund's payment link" }).waitFor();
      await capture("02-issuer-refund-send");

      await page.getByRole("button", { name: "Send with the test account" }).click();
      const sent = page.getByRole("status").filter({ hasText: "Sent:" });
      await sent.waitFor({ timeout: 30_000 });
      const done = await refundIn(refundId, "succeeded");
      expect(await sent.locator("code").textContent()).toBe(done.transactionHash);
      await expect.poll(() => page.getByTestId("send-refund-status").textContent(), { timeout: 60_000 }).toBe("succeeded");
      const row = page
        .getByRole("row")
        .filter({ hasText: `${purchase.units}` })
        .filter({ has: page.locator(".status-full") });
      await row.first().waitFor({ timeout: 60_000 });
      expect(await unitsAvailable()).toBe(unitsBefore + 2);
      await page.getByText(`${unitsBefore + 2} of 50 available`).waitFor({ timeout: 60_000 });
      await expect.poll(async () => page.getByRole("button", { name: `Refund purchase ${purchase.id}` }).count()).toBe(0);
      await capture("03-issuer-refunded");
    });
  });
});
