import { execFileSync, spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { type Address, getAddress, type Hex, keccak256, toHex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signCertificateVoucher } from "../api/certificates/voucher-typed-data.js";
import { TEST_ACCOUNT_INDEX, testAccountAddress } from "../api/sign-in/test-accounts.js";
import {
  OPEN_ENDED,
  subscriptionIdOnChain,
  subscriptionSalt,
  subscriptionTypedData,
} from "../api/subscriptions/subscription-terms.js";
import { certificateNftAbi, subscriptionManagerAbi, testUsdcAbi } from "../contracts/generated/index.js";
import { loadOrCreateLocalSecrets } from "../local/local-secrets.js";
import { PROJECT_ROOT } from "../local/local-stack.js";
import { createAppWithoutChain } from "../scripts/openapi-document.js";
import { axeFindings, type Chromium, freshArtifacts, launchChromium } from "./support/browser.js";
import { createSession } from "./support/checkout-helpers.js";
import { api, expectJson } from "./support/portal-client.js";
import { startTestStack, type TestStack, waitFor } from "./support/test-stack.js";

// What `npm start` runs, the embedded index, on one stack for what were 2 files (foundation, then
// devloop-newcomer), a describe block each reading the stack through sharedStack(). foundation runs
// first: its last case reads what the service said on stderr under DEBUG=vite:deps. One start, not 2.
let shared: TestStack;
const sharedStack = () => shared;

beforeAll(async () => {
  shared = await startTestStack({ index: "embedded", env: { DEBUG: "vite:deps" } });
}, 420_000);

afterAll(async () => {
  await shared?.stop();
});

describe("foundation", () => {
  let stack: TestStack;

  beforeAll(async () => {
    // The embedded default (PGlite), as `npm start` runs it. Vite's dependency optimizer
    // says what it does on stderr under this DEBUG (the last test reads it).
    stack = sharedStack();
  });
  afterAll(async () => {});

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
      expect(Object.keys(local.contracts).sort()).toEqual(["certificate", "rewardDistributor", "subscriptionManager", "usdc"]);
      expect(local.contracts.subscriptionManager).toMatch(/^0x[0-9a-fA-F]{40}$/);
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
      expect(Object.keys(openApi.paths)).toEqual(
        expect.arrayContaining(["/v1/checkout/sessions", "/v1/transfers", "/v1/health"]),
      );
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

  /** The items a GraphQL query over one of Ponder's tables answers, once it answers some. */
  async function indexedItems<Item>(table: string, where: string, fields: string): Promise<Item[]> {
    const query = `{ ${table}(where: { ${where} }) { items { ${fields} } } }`;
    return waitFor(async () => {
      const response = await fetch(`${stack.ponder.baseUrl}/graphql`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ query }),
      });
      const body = (await response.json()) as { data?: Record<string, { items: Item[] }> };
      const items = body.data?.[table]?.items;
      return items !== undefined && items.length > 0 ? items : undefined;
    });
  }

  describe("indexed subscription events", () => {
    it("records Subscribed, Charged and Cancelled, and the charge's transfer to the payment address", async () => {
      const subscriberKey = stack.local.accounts[6]!.privateKey as Hex;
      const subscriber = stack.wallet(6);
      const manager = stack.local.contracts.subscriptionManager as Address;
      const send = async (write: Promise<Hex>) => {
        const receipt = await stack.publicClient.waitForTransactionReceipt({ hash: await write });
        expect(receipt.status).toBe("success");
        return receipt;
      };
      const account = subscriber.account!;
      await send(
        subscriber.writeContract({
          address: stack.local.contracts.usdc as Address,
          abi: testUsdcAbi,
          functionName: "approve",
          args: [manager, 5_000_000n],
          chain: stack.chain,
          account,
        }),
      );
      const terms = {
        subscriber: account.address,
        payee: stack.local.partner.paymentAddress as Address,
        token: stack.local.contracts.usdc as Address,
        amount: 5_000_000n,
        period: 30 * 86_400,
        start: Number((await stack.publicClient.getBlock()).timestamp),
        end: OPEN_ENDED,
        salt: subscriptionSalt("sub_foundation_test"),
      };
      const typed = { chainId: stack.local.chainId, contract: manager, terms };
      const signature = await privateKeyToAccount(subscriberKey).signTypedData(subscriptionTypedData(typed));
      const onchainId = subscriptionIdOnChain(typed);
      const write = (functionName: "subscribe" | "charge" | "cancel", args: readonly unknown[]) =>
        send(
          subscriber.writeContract({
            address: manager,
            abi: subscriptionManagerAbi,
            functionName,
            args: args as never,
            chain: stack.chain,
            account,
          }),
        );
      const subscribed = await write("subscribe", [terms, signature]);
      const charged = await write("charge", [onchainId]);
      const cancelled = await write("cancel", [onchainId]);

      const id = `subscriptionId: "${onchainId}"`;
      expect(
        await indexedItems("subscriptionSubscribeds", id, "subscriber payee token amount period start end transactionHash"),
      ).toEqual([
        {
          subscriber: account.address.toLowerCase(),
          payee: terms.payee.toLowerCase(),
          token: terms.token.toLowerCase(),
          amount: "5000000",
          period: String(terms.period),
          start: String(terms.start),
          end: String(OPEN_ENDED),
          transactionHash: subscribed.transactionHash,
        },
      ]);
      expect(await indexedItems("subscriptionChargeds", id, "periodIndex amount transactionHash")).toEqual([
        { periodIndex: "0", amount: "5000000", transactionHash: charged.transactionHash },
      ]);
      expect(await indexedItems("subscriptionCancelleds", id, "by transactionHash")).toEqual([
        { by: account.address.toLowerCase(), transactionHash: cancelled.transactionHash },
      ]);
      // The money moved as a plain USDC transfer to the payment address, which the index already watches.
      const page = await transfersByHash(charged.transactionHash);
      expect(page.data.map((transfer) => transfer.amount)).toEqual(["5000000"]);
    });
  });
});

describe("devloop-newcomer", () => {
  // What stopped a newcomer after the first payment (issue 29): the README's component
  // snippet as written, the console without a browser wallet (a test account per role,
  // local mode only), and `events:listen -- --help`. One stack, one Chromium.

  const ARTIFACTS = freshArtifacts("devloop-newcomer");
  let stack: TestStack;
  let chromium: Chromium;
  let shop: Server;
  let shopPage = "";
  const base = () => stack.ponder.baseUrl;

  beforeAll(async () => {
    // What a newcomer's `npm start` runs: the embedded index.
    stack = sharedStack();
    chromium = await launchChromium("devloop-newcomer");
    shop = createServer((_request, response) => {
      response.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
      response.end(shopPage);
    });
    await new Promise<void>((resolve) => shop.listen(0, "127.0.0.1", resolve));
  });
  afterAll(async () => {
    await chromium?.close();
    shop?.close();
  });

  /** The README's component snippet, exactly as written there (the fenced html block). */
  function readmeSnippet(): string {
    const readme = readFileSync(join(PROJECT_ROOT, "README.md"), "utf8");
    const block = /```html\n([\s\S]*?)```/.exec(readme)?.[1];
    if (block === undefined) throw new Error("README.md has no html snippet");
    return block
      .split("\n")
      .map((line) => line.trim())
      .join("\n");
  }

  describe("the README's <usdc-checkout session-id client-token> snippet", () => {
    it("renders the hosted checkout in a frame, in Chromium, from a shop on another origin", async () => {
      const session = await createSession(stack, { shippingRequired: false });
      const snippet = readmeSnippet();
      expect(snippet).toContain('client-token="ct_…"');
      const html = snippet
        .replace("http://127.0.0.1:42069", base())
        .replace('session-id="cs_…"', `session-id="${session.id}"`)
        .replace('client-token="ct_…"', `client-token="${session.clientToken}"`);
      shopPage = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Shop</title></head><body><main><h1>Checkout</h1>\n${html}\n</main></body></html>`;
      const page = await chromium.context.newPage();
      try {
        await page.goto(`http://127.0.0.1:${(shop.address() as AddressInfo).port}/cart`);
        const frame = await waitForFrame(page, `/checkout/${session.id}`);
        await frame.locator("#checkout:not([data-state='loading'])").waitFor({ timeout: 30_000 });
        expect(["awaiting_details", "awaiting_payment"]).toContain(await frame.locator("#checkout").getAttribute("data-state"));
        // The token was read and taken off the element: it does not stay in the DOM.
        expect(await page.locator("usdc-checkout").getAttribute("client-token")).toBeNull();
        expect(await page.content()).not.toContain(session.clientToken);
        await page.screenshot({ path: join(ARTIFACTS, "readme-snippet-1280.png") });
      } finally {
        await page.close();
      }
    });

    it("renders as well from properties set by script", async () => {
      const session = await createSession(stack, { shippingRequired: false });
      shopPage = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Shop</title></head><body><main>
<script src="${base()}/assets/checkout-component.js"></script>
<usdc-checkout id="pay"></usdc-checkout>
<script>const el = document.getElementById("pay"); el.sessionId = ${JSON.stringify(session.id)}; el.clientToken = ${JSON.stringify(session.clientToken)};</script>
</main></body></html>`;
      const page = await chromium.context.newPage();
      try {
        await page.goto(`http://127.0.0.1:${(shop.address() as AddressInfo).port}/props`);
        const frame = await waitForFrame(page, `/checkout/${session.id}`);
        await frame.locator("#checkout:not([data-state='loading'])").waitFor({ timeout: 30_000 });
        expect(["awaiting_details", "awaiting_payment"]).toContain(await frame.locator("#checkout").getAttribute("data-state"));
        expect(await page.locator("usdc-checkout").getAttribute("session-id")).toBe(session.id);
      } finally {
        await page.close();
      }
    });
  });

  async function waitForFrame(page: Page, path: string) {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const frame = page.frames().find((candidate) => candidate.url().includes(path));
      if (frame !== undefined) return frame;
      if (Date.now() > deadline) throw new Error(`no frame of ${path}`);
      await page.waitForTimeout(100);
    }
  }

  describe("local mode: sign in to the console with a test account", () => {
    const roles = [
      { role: "investor", name: "Investor", screen: /Investor/ },
      { role: "partner", name: "Partner", screen: /Partner/ },
      { role: "issuer", name: "Issuer", screen: /Issuer/ },
      { role: "admin", name: "Administrator", screen: /Administrator/ },
    ] as const;

    it("lists one seeded test account per role, and signs each in through the portal's own rules", async () => {
      const listed = await expectJson(await api(stack, "GET", "/api/local/test-accounts"), 200);
      expect(listed.data.map((row: { role: string }) => row.role).sort()).toEqual(["admin", "investor", "issuer", "partner"]);
      for (const { role } of roles) {
        const session = await expectJson(await api(stack, "POST", `/api/${role}/auth/test-account`), 200);
        expect(session).toMatchObject({ role, address: testAccountAddress(role) });
        // The session is a real one of that portal.
        const current = await expectJson(await api(stack, "GET", `/api/${role}/auth/session`, { token: session.token }), 200);
        expect(current.role).toBe(role);
      }
      // The demo partner has its member; the seeded investor is approved.
      const partnerToken = (await expectJson(await api(stack, "POST", "/api/partner/auth/test-account"), 200)).token;
      const profile = await expectJson(await api(stack, "GET", "/api/partner/profile", { token: partnerToken }), 200);
      expect(profile.id).toBe(stack.local.partner.id);
      expect(TEST_ACCOUNT_INDEX.admin).toBeGreaterThanOrEqual(10);
      // An unknown role is refused before anything is signed.
      expect((await api(stack, "POST", "/api/operator/auth/test-account")).status).toBe(400);
    });

    it("offers 'Sign in with a test account' for each role in Chromium (screenshots at 1280 and 390 px, axe-core)", async () => {
      const origin = new URL(base()).origin;
      for (const { role, name } of roles) {
        const page = await chromium.context.newPage();
        const outside: string[] = [];
        page.on("request", (request) => {
          if (!request.url().startsWith(origin) && !request.url().startsWith("data:")) outside.push(request.url());
        });
        try {
          await page.setViewportSize({ width: 1280, height: 900 });
          await page.goto(`${base()}/console`);
          await page.getByRole("heading", { name: "Sign in to the console" }).waitFor({ timeout: 30_000 });
          const button = page.getByRole("button", { name: `Sign in with a test account: ${name}` });
          await button.waitFor({ timeout: 30_000 });
          if (role === "investor") {
            for (const width of [1280, 390]) {
              await page.setViewportSize({ width, height: 900 });
              await page.screenshot({ path: join(ARTIFACTS, `sign-in-${width}.png`), fullPage: true });
              expect(await axeFindings(page, join(ARTIFACTS, `axe-sign-in-${width}.json`), { blockingOnly: true })).toEqual([]);
            }
            await page.setViewportSize({ width: 1280, height: 900 });
          }
          await button.click();
          await page.getByRole("button", { name: "Sign out" }).waitFor({ timeout: 30_000 });
          await page.getByRole("navigation", { name: `${name} screens` }).waitFor();
          for (const width of [1280, 390]) {
            await page.setViewportSize({ width, height: 900 });
            await page.screenshot({ path: join(ARTIFACTS, `${role}-signed-in-${width}.png`), fullPage: true });
            const serious = await axeFindings(page, join(ARTIFACTS, `axe-${role}-${width}.json`), { blockingOnly: true });
            expect(serious, `${role} at ${width}`).toEqual([]);
          }
          expect(outside).toEqual([]);
        } finally {
          await page.close();
        }
      }
    });

    it("is absent outside local mode: the routes answer 404 and nothing is signed", async () => {
      const keyFile = join(stack.dataDir, "absent-test-secrets.key");
      writeFileSync(keyFile, `${"ab".repeat(32)}\n`, { mode: 0o600 });
      const app = await createAppWithoutChain({
        LOCAL_MODE: "false",
        PUBLIC_BASE_URL: "https://pay.example.com",
        SECRETS_KEY_FILE: keyFile,
      });
      try {
        const list = await app.app.request("/api/local/test-accounts");
        expect(list.status).toBe(404);
        for (const role of ["investor", "partner", "issuer", "admin"]) {
          const refused = await app.app.request(`/api/${role}/auth/test-account`, { method: "POST" });
          expect(refused.status).toBe(404);
          expect(((await refused.json()) as { code: string }).code).toBe("not_found");
        }
        const document = (await (await app.app.request("/openapi.json")).json()) as { paths: Record<string, unknown> };
        expect(Object.keys(document.paths).filter((path) => path.includes("test-account"))).toEqual([]);
      } finally {
        await app.close();
      }
    });
  });

  describe("npm run events:listen", () => {
    it("--help prints every option and exits 0; the signing secret is kept in DATA_DIR across starts", async () => {
      const run = (args: string[]) =>
        new Promise<{ code: number | null; out: string }>((resolve) => {
          const child = spawn(
            process.execPath,
            [join(PROJECT_ROOT, "node_modules", "tsx", "dist", "cli.mjs"), "scripts/events-listen.ts", ...args],
            {
              cwd: PROJECT_ROOT,
              env: { ...process.env, DATA_DIR: stack.dataDir, LISTEN_SECRET: "" },
              stdio: ["ignore", "pipe", "pipe"],
            },
          );
          let out = "";
          child.stdout?.on("data", (chunk: Buffer) => {
            out += chunk.toString();
          });
          child.stderr?.on("data", (chunk: Buffer) => {
            out += chunk.toString();
          });
          child.once("exit", (code) => resolve({ code, out }));
        });
      const help = await run(["--help"]);
      expect(help.code).toBe(0);
      for (const option of ["--forward-to", "--from-start", "--interval", "--print-secret", "--new-secret", "--help"])
        expect(help.out).toContain(option);
      const first = await run(["--print-secret"]);
      const second = await run(["--print-secret"]);
      expect(first.out.trim()).toMatch(/^whsec_[0-9a-f]{48}$/);
      expect(second.out.trim()).toBe(first.out.trim());
      expect(readFileSync(join(stack.dataDir, "events-listen-secret"), "utf8").trim()).toBe(first.out.trim());
      const unknown = await run(["--bogus"]);
      expect(unknown.code).toBe(2);
      expect(unknown.out).toContain("usage: npm run events:listen");
    });
  });
});
