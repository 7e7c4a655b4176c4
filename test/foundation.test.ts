import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type Address, getAddress, type Hex, keccak256, toHex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signCertificateVoucher } from "../api/certificates/voucher-typed-data.js";
import { certificateNftAbi } from "../contracts/generated/index.js";
import { loadOrCreateLocalSecrets } from "../local/local-secrets.js";
import { startTestStack, type TestStack, waitFor } from "./support/test-stack.js";

let stack: TestStack;

beforeAll(async () => {
  // The embedded default (PGlite), as `npm start` runs it. Vite's dependency optimizer
  // says what it does on stderr under this DEBUG (the last test reads it).
  stack = await startTestStack({ index: "embedded", env: { DEBUG: "vite:deps" } });
});
afterAll(async () => {
  await stack?.stop();
});

type TransferPage = {
  data: { transactionHash: string; amount: string; to: string; confirmations: number; blockNumber: string }[];
  nextCursor: string | null;
};

async function transfersByHash(hash: string): Promise<TransferPage> {
  const response = await stack.partnerFetch(`/v1/transfers?txHash=${hash}`);
  expect(response.status).toBe(200);
  return (await response.json()) as TransferPage;
}

describe("local stack", () => {
  it("writes .data/local.json with everything the README lists", () => {
    const local = JSON.parse(readFileSync(join(stack.dataDir, "local.json"), "utf8"));
    expect(Object.keys(local).sort()).toEqual(
      ["accounts", "admin", "baseUrl", "chainId", "contracts", "network", "partner", "rpcUrl"].sort(),
    );
    expect(local.network).toBe("local");
    expect(local.chainId).toBe(31337);
    expect(local.partner.apiKey).toMatch(/^sk_test_/);
    expect(local.accounts).toHaveLength(10);
    expect(local.admin.privateKey).toMatch(/^0x[0-9a-f]{64}$/);
  });

  it("funds every Anvil account with test USDC", async () => {
    const balance = await stack.publicClient.readContract({
      address: stack.local.contracts.usdc as Address,
      abi: [
        {
          type: "function",
          name: "balanceOf",
          stateMutability: "view",
          inputs: [{ type: "address" }],
          outputs: [{ type: "uint256" }],
        },
      ],
      functionName: "balanceOf",
      args: [stack.local.accounts[3]!.address as Address],
    });
    expect(balance).toBe(1_000_000_000_000n);
  });

  it("reports indexer head, lag and store in /v1/health", async () => {
    const response = await fetch(`${stack.ponder.baseUrl}/v1/health`);
    expect(response.status).toBe(200);
    const health = await response.json();
    expect(health.status).toBe("ok");
    expect(health.store.ok).toBe(true);
    expect(health.chains[0]).toMatchObject({ network: "local", chainId: 31337 });
    expect(BigInt(health.chains[0].indexedBlock)).toBeGreaterThan(0n);
  });

  it("keeps no build transformer (esbuild) running once it has started", () => {
    // api/end-build-transformer.ts: Vite's esbuild child held 70-150 MiB for the life of the service.
    const children = childCommands(stack.ponder.process.pid);
    expect(children).not.toMatch(/esbuild/);
    // What started esbuild again after it was ended: Vite's background scan of the
    // console's imports for pre-bundling, on a loaded machine (vite.config.ts turns it off).
    expect(stack.ponder.output()).not.toMatch(/vite:deps/);
  });
});

/** The command lines of a process' children (`ps` exits 1 when there are none). */
function childCommands(pid: number | undefined): string {
  try {
    return execFileSync("ps", ["-o", "args=", "--ppid", String(pid)], { encoding: "utf8" });
  } catch {
    return "";
  }
}

describe("API documentation", () => {
  it("serves the OpenAPI document and self-contained human docs with every problem code", async () => {
    const openApi = await (await fetch(`${stack.ponder.baseUrl}/openapi.json`)).json();
    expect(openApi.openapi).toBe("3.1.0");
    expect(Object.keys(openApi.paths)).toEqual(expect.arrayContaining(["/v1/checkout/sessions", "/v1/transfers", "/v1/health"]));
    const docs = await fetch(`${stack.ponder.baseUrl}/docs`);
    expect(docs.headers.get("content-type")).toContain("text/html");
    expect(await docs.text()).not.toMatch(/<script[^>]+src="https?:/);
    const catalogue = await (await fetch(`${stack.ponder.baseUrl}/docs/problems`)).text();
    expect(catalogue).toContain('id="problem-wrong_amount"');
  });
});

describe("indexed transfers", () => {
  it("shows a USDC transfer to a payment address by transaction hash within a few blocks", async () => {
    const paid = await stack.payUsdc({ from: 1, to: stack.local.partner.paymentAddress as Address, amount: 25_000_123n });
    const page = await waitFor(
      async () => {
        const result = await transfersByHash(paid.hash);
        return result.data.length > 0 ? result : undefined;
      },
      { what: "the transfer in /v1/transfers" },
    );
    expect(page.data).toHaveLength(1);
    expect(page.data[0]).toMatchObject({
      transactionHash: paid.hash,
      amount: "25000123",
      to: getAddress(stack.local.partner.paymentAddress),
      blockNumber: paid.blockNumber.toString(),
    });
    // Bounded: it was indexed no more than a few blocks after it was mined.
    const head = await stack.publicClient.getBlockNumber();
    expect(head - paid.blockNumber).toBeLessThanOrEqual(3n);
  });

  it("does not index a transfer to an address it does not watch", async () => {
    const unwatched = stack.local.accounts[7]!.address as Address;
    const paid = await stack.payUsdc({ from: 2, to: unwatched, amount: 1_000_000n });
    // Prove the indexer has moved past that block before concluding it is absent.
    const marker = await stack.payUsdc({ from: 2, to: stack.local.partner.paymentAddress as Address, amount: 7n });
    await waitFor(async () => ((await transfersByHash(marker.hash)).data.length > 0 ? true : undefined));
    expect(marker.blockNumber).toBeGreaterThan(paid.blockNumber);
    expect((await transfersByHash(paid.hash)).data).toEqual([]);
  });

  it("filters by sender and block range and pages with a cursor", async () => {
    const to = stack.local.partner.paymentAddress as Address;
    const first = await stack.payUsdc({ from: 4, to, amount: 1n });
    await stack.payUsdc({ from: 4, to, amount: 2n });
    const last = await stack.payUsdc({ from: 4, to, amount: 3n });
    await waitFor(async () => ((await transfersByHash(last.hash)).data.length > 0 ? true : undefined));

    const sender = stack.local.accounts[4]!.address;
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const query = new URLSearchParams({
        from: sender,
        fromBlock: first.blockNumber.toString(),
        toBlock: last.blockNumber.toString(),
        limit: "2",
      });
      if (cursor) query.set("cursor", cursor);
      const response = await stack.partnerFetch(`/v1/transfers?${query}`);
      const page = (await response.json()) as TransferPage;
      seen.push(...page.data.map((transfer) => transfer.amount));
      cursor = page.nextCursor;
    } while (cursor !== null);
    expect(seen).toEqual(["1", "2", "3"]);
  });

  it("rejects a malformed filter with problem+json and a stable code", async () => {
    const response = await stack.partnerFetch("/v1/transfers?txHash=0x1234");
    expect(response.status).toBe(400);
    expect(response.headers.get("content-type")).toContain("application/problem+json");
    expect((await response.json()).code).toBe("invalid_request");
  });
});

describe("partner API key", () => {
  it("refuses a request without a key", async () => {
    const response = await fetch(`${stack.ponder.baseUrl}/v1/transfers`);
    expect(response.status).toBe(401);
    expect(response.headers.get("content-type")).toContain("application/problem+json");
    const problem = await response.json();
    expect(problem).toMatchObject({ status: 401, code: "unauthenticated" });
  });

  it("refuses a wrong key", async () => {
    const response = await stack.partnerFetch("/v1/transfers", { headers: { Authorization: "Bearer sk_test_not-a-real-key" } });
    expect(response.status).toBe(401);
    expect((await response.json()).code).toBe("unauthenticated");
  });
});

describe("indexed certificate mints", () => {
  it("records a valid claim's CertificateClaimed event", async () => {
    const buyer = stack.wallet(5);
    const purchaseId = keccak256(toHex("foundation-test-purchase"));
    const voucher = {
      buyer: buyer.account!.address,
      purchaseId,
      tokenURI: "data:application/json,{}",
      deadline: BigInt(Math.floor(Date.now() / 1000) + 3600),
    };
    const signature = await signCertificateVoucher({
      privateKey: loadOrCreateLocalSecrets(stack.dataDir).voucherPrivateKey,
      chainId: stack.local.chainId,
      contract: stack.local.contracts.certificate as Address,
      voucher,
    });
    const hash = await buyer.writeContract({
      address: stack.local.contracts.certificate as Address,
      abi: certificateNftAbi,
      functionName: "claim",
      args: [voucher, signature],
      chain: stack.chain,
      account: buyer.account!,
    });
    await stack.publicClient.waitForTransactionReceipt({ hash });

    const query = `{ certificateMints(where: { purchaseId: "${purchaseId}" }) { items { tokenId buyer transactionHash } } }`;
    const mint = await waitFor(async () => {
      const response = await fetch(`${stack.ponder.baseUrl}/graphql`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ query }),
      });
      const body = (await response.json()) as {
        data?: { certificateMints: { items: { tokenId: string; buyer: Hex; transactionHash: Hex }[] } };
      };
      return body.data?.certificateMints.items[0];
    });
    expect(mint).toEqual({
      tokenId: BigInt(purchaseId).toString(),
      buyer: buyer.account!.address.toLowerCase(),
      transactionHash: hash,
    });
  });
});
