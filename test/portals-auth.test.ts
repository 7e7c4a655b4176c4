import { createHash } from "node:crypto";
import { request } from "node:http";
import { join } from "node:path";
import {
  type Abi,
  type Address,
  encodeFunctionData,
  type Hex,
  isAddressEqual,
  keccak256,
  serializeErc6492Signature,
  toHex,
} from "viem";
import { mnemonicToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TEST_ACCOUNT_INDEX } from "../api/sign-in/test-accounts.js";
import { openSqliteStore, type Store } from "../api/store/open-store.js";
import { ANVIL_MNEMONIC } from "../local/anvil.js";
import { compileSolidityFiles } from "../scripts/compile-contracts-lib.js";
import { adminWallet, api, challenge, expectJson, portalWallet, registerIssuer, signIn } from "./support/portal-client.js";
import { startTestStack, type TestStack } from "./support/test-stack.js";

// Short challenges so that expiry can be shown on the wall clock.
const CHALLENGE_TTL_SECONDS = 3;

let stack: TestStack;
let store: Store;

beforeAll(async () => {
  stack = await startTestStack({ env: { SIWE_CHALLENGE_TTL_SECONDS: String(CHALLENGE_TTL_SECONDS) } });
  store = openSqliteStore(join(stack.dataDir, "app.sqlite"));
});
afterAll(async () => {
  await store?.destroy();
  await stack?.stop();
});

async function verify(role: string, message: string, signature: string) {
  return api(stack, "POST", `/api/${role}/auth/verify`, { json: { message, signature } });
}

async function expectProblem(response: Response, status: number, code: string) {
  const text = await response.text();
  expect(response.status, text).toBe(status);
  expect(response.headers.get("content-type")).toContain("application/problem+json");
  expect(JSON.parse(text).code).toBe(code);
}

/** A request with a Host header of our choosing (fetch cannot set Host). */
function rawPost(
  path: string,
  host: string,
  body: unknown,
): Promise<{ status: number; body: { message: string; code: string } }> {
  const url = new URL(stack.ponder.baseUrl);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        hostname: url.hostname,
        port: url.port,
        path,
        method: "POST",
        headers: { Host: host, "Content-Type": "application/json" },
      },
      (res) => {
        let text = "";
        res.on("data", (chunk) => {
          text += chunk;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
      },
    );
    req.on("error", reject);
    req.end(JSON.stringify(body));
  });
}

describe("SIWE sign-in", () => {
  it("issues an EIP-4361 message bound to domain, chain, portal and a short expiry, and answers with a session", async () => {
    const wallet = portalWallet();
    const issued = await challenge(stack, "investor", wallet.address);
    const host = new URL(stack.ponder.baseUrl).host;
    expect(issued.message).toContain(`${host} wants you to sign in with your Ethereum account:\n${wallet.address}`);
    expect(issued.message).toContain("Chain ID: 31337");
    expect(issued.message).toContain(`URI: ${stack.ponder.baseUrl}/api/investor`);
    expect(issued.message).toContain(`Nonce: ${issued.nonce}`);
    expect(issued.message).toContain("Expiration Time: ");
    expect(Date.parse(issued.expiresAt) - Date.now()).toBeLessThanOrEqual(CHALLENGE_TTL_SECONDS * 1000);

    const response = await verify("investor", issued.message, await wallet.sign(issued.message));
    const session = await expectJson(response, 200);
    expect(session).toMatchObject({ role: "investor", address: wallet.address });
    const lifetime = Date.parse(session.expiresAt) - Date.now();
    expect(lifetime).toBeGreaterThan(7.9 * 3600_000);
    expect(lifetime).toBeLessThanOrEqual(8 * 3600_000);

    const current = await expectJson(await api(stack, "GET", "/api/investor/auth/session", { token: session.token }), 200);
    expect(current).toMatchObject({ role: "investor", address: wallet.address });
  });

  it("uses 128-bit nonces from a CSPRNG, not viem's generateSiweNonce", async () => {
    const wallet = portalWallet();
    const nonces = await Promise.all(
      Array.from({ length: 5 }, async () => (await challenge(stack, "investor", wallet.address)).nonce),
    );
    for (const nonce of nonces) expect(nonce).toMatch(/^[0-9a-f]{32}$/);
    // Consecutive generateSiweNonce() values share most characters; ours share about 1/16 by position.
    const [a, b] = nonces as [string, string];
    const same = [...a].filter((char, index) => b[index] === char).length;
    expect(same).toBeLessThan(12);
    expect(new Set(nonces).size).toBe(5);
  });

  it("stores the session token only as its SHA-256", async () => {
    const wallet = portalWallet();
    const token = await signIn(stack, "investor", wallet);
    const rows = await store
      .selectFrom("portal_session")
      .selectAll()
      .where("address", "=", wallet.address.toLowerCase())
      .execute();
    expect(rows).toHaveLength(1);
    expect(rows[0]!.token_hash).toBe(createHash("sha256").update(token).digest("hex"));
    expect(JSON.stringify(rows)).not.toContain(token);
  });

  it("refuses a reused nonce", async () => {
    const wallet = portalWallet();
    const { message } = await challenge(stack, "investor", wallet.address);
    const signature = await wallet.sign(message);
    await expectJson(await verify("investor", message, signature), 200);
    await expectProblem(await verify("investor", message, signature), 401, "challenge_used");
  });

  it("gives one session when the same signed challenge is submitted many times at once", async () => {
    const wallet = portalWallet();
    const { message } = await challenge(stack, "investor", wallet.address);
    const signature = await wallet.sign(message);
    const responses = await Promise.all(Array.from({ length: 8 }, () => verify("investor", message, signature)));
    expect(responses.filter((response) => response.status === 200)).toHaveLength(1);
    expect(responses.filter((response) => response.status === 401)).toHaveLength(7);
    const sessions = await store
      .selectFrom("portal_session")
      .select("id")
      .where("address", "=", wallet.address.toLowerCase())
      .execute();
    expect(sessions).toHaveLength(1);
  });

  it("refuses an expired message", async () => {
    const wallet = portalWallet();
    const { message } = await challenge(stack, "investor", wallet.address);
    const signature = await wallet.sign(message);
    await new Promise((resolve) => setTimeout(resolve, CHALLENGE_TTL_SECONDS * 1000 + 500));
    await expectProblem(await verify("investor", message, signature), 401, "challenge_expired");
  });

  it("refuses a message issued for another domain", async () => {
    const wallet = portalWallet();
    // Issue 40: in local mode only a loopback name is the service's. A page on another name
    // reaches us only through DNS rebinding, and would get a challenge naming its own domain.
    const rebound = await rawPost("/api/investor/auth/challenge", "evil.example", { address: wallet.address });
    expect(rebound.status).toBe(403);
    expect(rebound.body.code).toBe("cross_origin_refused");

    // A challenge names the name it was asked on ...
    const otherName = `localhost:${new URL(stack.ponder.baseUrl).port}`;
    const elsewhereIssued = await rawPost("/api/investor/auth/challenge", otherName, { address: wallet.address });
    expect(elsewhereIssued.status).toBe(200);
    expect(elsewhereIssued.body.message.startsWith(`${otherName} wants you to sign in`)).toBe(true);
    const signature = await wallet.sign(elsewhereIssued.body.message);
    // ... and the signed message only works on the domain it names, not on another.
    await expectProblem(await verify("investor", elsewhereIssued.body.message, signature), 401, "wrong_domain");

    // And a challenge for our domain cannot be verified on another.
    const ours = await challenge(stack, "investor", wallet.address);
    const oursSignature = await wallet.sign(ours.message);
    const elsewhere = await rawPost("/api/investor/auth/verify", otherName, { message: ours.message, signature: oursSignature });
    expect(elsewhere.status).toBe(401);
    expect(elsewhere.body.code).toBe("wrong_domain");
    const reboundVerify = await rawPost("/api/investor/auth/verify", "evil.example", {
      message: ours.message,
      signature: oursSignature,
    });
    expect(reboundVerify.status).toBe(403);
  });

  it("refuses a chain that is not enabled, and a message moved to another chain", async () => {
    const wallet = portalWallet();
    await expectProblem(
      await api(stack, "POST", "/api/investor/auth/challenge", { json: { address: wallet.address, chainId: 8453 } }),
      422,
      "unsupported_chain",
    );
    const { message } = await challenge(stack, "investor", wallet.address);
    const moved = message.replace("Chain ID: 31337", "Chain ID: 1");
    await expectProblem(await verify("investor", moved, await wallet.sign(moved)), 401, "message_altered");
  });

  it("refuses a signature by another wallet", async () => {
    const wallet = portalWallet();
    const other = portalWallet();
    const { message } = await challenge(stack, "investor", wallet.address);
    await expectProblem(await verify("investor", message, await other.sign(message)), 401, "invalid_signature");
    // The challenge is still usable by its own wallet: a bad signature does not burn it.
    await expectJson(await verify("investor", message, await wallet.sign(message)), 200);
  });

  it("refuses an altered message, even when the challenged wallet signed the alteration", async () => {
    const wallet = portalWallet();
    const { message } = await challenge(stack, "investor", wallet.address);
    const later = message.replace(/Expiration Time: .*/, "Expiration Time: 2099-01-01T00:00:00.000Z");
    await expectProblem(await verify("investor", later, await wallet.sign(later)), 401, "message_altered");
    const otherWallet = portalWallet();
    const swapped = message.replace(wallet.address, otherWallet.address);
    await expectProblem(await verify("investor", swapped, await otherWallet.sign(swapped)), 401, "message_altered");
  });

  it("binds a challenge to its portal", async () => {
    const admin = adminWallet(stack);
    const { message } = await challenge(stack, "investor", admin.address);
    await expectProblem(await verify("admin", message, await admin.sign(message)), 401, "wrong_portal");
  });

  it("lets only configured admins and registered issuers sign in to their portals", async () => {
    const stranger = portalWallet();
    await expectProblem(
      await api(stack, "POST", "/api/admin/auth/challenge", { json: { address: stranger.address } }),
      403,
      "portal_not_allowed",
    );
    await expectProblem(
      await api(stack, "POST", "/api/issuer/auth/challenge", { json: { address: stranger.address } }),
      403,
      "portal_not_allowed",
    );
    const adminToken = await signIn(stack, "admin", adminWallet(stack));
    const { token } = await registerIssuer(stack, adminToken, stranger, "Stranger Capital");
    expect(token).toMatch(/^pst_/);
  });

  it("binds a session to its role", async () => {
    const investorToken = await signIn(stack, "investor", adminWallet(stack));
    const asInvestor = await api(stack, "GET", "/api/admin/audit-log", { token: investorToken });
    await expectProblem(asInvestor, 403, "wrong_portal");
    await expectProblem(await api(stack, "GET", "/api/admin/audit-log"), 401, "unauthenticated");
    await expectProblem(await api(stack, "GET", "/api/admin/audit-log", { token: "pst_forged" }), 401, "unauthenticated");
  });

  it("revokes a session at logout", async () => {
    const token = await signIn(stack, "admin", adminWallet(stack));
    await expectJson(await api(stack, "GET", "/api/admin/auth/session", { token }), 200);
    expect((await api(stack, "POST", "/api/admin/auth/logout", { token })).status).toBe(204);
    await expectProblem(await api(stack, "GET", "/api/admin/auth/session", { token }), 401, "unauthenticated");
    await expectProblem(await api(stack, "GET", "/api/admin/issuers", { token }), 401, "unauthenticated");
    const audit = await store.selectFrom("audit_log").select("action").where("action", "like", "auth.%").execute();
    expect(audit.map((row) => row.action)).toEqual(expect.arrayContaining(["auth.sign_in", "auth.sign_out"]));
  });

  it("cuts off an issuer at once when an admin disables it", async () => {
    const adminToken = await signIn(stack, "admin", adminWallet(stack));
    const wallet = portalWallet();
    const { issuer, token } = await registerIssuer(stack, adminToken, wallet, "Short-lived Issuer");
    await expectJson(await api(stack, "GET", "/api/issuer/profile", { token }), 200);
    await expectJson(await api(stack, "POST", `/api/admin/issuers/${issuer.id}/disable`, { token: adminToken }), 200);
    await expectProblem(await api(stack, "GET", "/api/issuer/profile", { token }), 403, "portal_not_allowed");
  });
});

describe("smart-contract wallets", () => {
  let factory: { address: Address; abi: Abi };
  const owner = portalWallet();
  const stranger = portalWallet();

  beforeAll(async () => {
    const compiled = compileSolidityFiles(["test/contracts/OwnedSmartWallet.sol"]);
    const factoryContract = compiled.find((contract) => contract.name === "OwnedSmartWalletFactory")!;
    const hash = await stack.wallet(7).deployContract({
      abi: factoryContract.abi as Abi,
      bytecode: factoryContract.bytecode as Hex,
      account: stack.wallet(7).account!,
      chain: stack.chain,
    });
    const receipt = await stack.publicClient.waitForTransactionReceipt({ hash });
    factory = { address: receipt.contractAddress!, abi: factoryContract.abi as Abi };
  });

  const predict = (salt: Hex) =>
    stack.publicClient.readContract({
      address: factory.address,
      abi: factory.abi,
      functionName: "predict",
      args: [owner.address, salt],
    }) as Promise<Address>;

  it("signs in a deployed EIP-1271 wallet with its owner's signature and refuses anyone else's", async () => {
    const salt = keccak256(toHex("deployed wallet"));
    const hash = await stack.wallet(7).writeContract({
      address: factory.address,
      abi: factory.abi,
      functionName: "deploy",
      args: [owner.address, salt],
      account: stack.wallet(7).account!,
      chain: stack.chain,
    });
    await stack.publicClient.waitForTransactionReceipt({ hash });
    const walletAddress = await predict(salt);
    expect(await stack.publicClient.getCode({ address: walletAddress })).toMatch(/^0x[0-9a-f]{10,}/);

    const { message } = await challenge(stack, "investor", walletAddress);
    await expectProblem(await verify("investor", message, await stranger.sign(message)), 401, "invalid_signature");
    const session = await expectJson(await verify("investor", message, await owner.sign(message)), 200);
    expect(isAddressEqual(session.address, walletAddress)).toBe(true);
    expect(isAddressEqual(session.address, owner.address)).toBe(false);
  });

  it("signs in a wallet that is not deployed yet through its EIP-6492 signature, deploying nothing", async () => {
    const salt = keccak256(toHex("counterfactual wallet"));
    const walletAddress = await predict(salt);
    expect(await stack.publicClient.getCode({ address: walletAddress })).toBeUndefined();
    const deployCall = encodeFunctionData({ abi: factory.abi, functionName: "deploy", args: [owner.address, salt] });
    const wrapped = async (signer: typeof owner, message: string) =>
      serializeErc6492Signature({ address: factory.address, data: deployCall, signature: await signer.sign(message) });

    const { message } = await challenge(stack, "investor", walletAddress);
    await expectProblem(await verify("investor", message, await wrapped(stranger, message)), 401, "invalid_signature");
    const session = await expectJson(await verify("investor", message, await wrapped(owner, message)), 200);
    expect(isAddressEqual(session.address, walletAddress)).toBe(true);
    // The check simulated the deployment; the chain is unchanged.
    expect(await stack.publicClient.getCode({ address: walletAddress })).toBeUndefined();
  });
});

/** A request with headers of our choosing (fetch cannot set Host), answering status, headers and body. */
function rawRequest(
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }> {
  const url = new URL(stack.ponder.baseUrl);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        hostname: url.hostname,
        port: url.port,
        path,
        method,
        headers: { ...(body === undefined ? {} : { "Content-Type": "application/json" }), ...headers },
      },
      (res) => {
        let text = "";
        res.on("data", (chunk) => {
          text += chunk;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
      },
    );
    req.on("error", reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

// Issue 40, finding 4: in local mode any web page got every console role's session from the
// test-account sign-in (`access-control-allow-origin: *`, a preflight allowing Authorization,
// and DNS rebinding through a Host of the attacker's), then read the portals' answers.
describe("cross-origin access (issue 40, finding 4)", () => {
  const ATTACKER = "http://attacker.example";
  const own = () => new URL(stack.ponder.baseUrl);

  it("the test-account sign-in refuses a foreign Origin, a cross-site fetch and a foreign Host", async () => {
    const foreignOrigin = await rawRequest("POST", "/api/admin/auth/test-account", { Host: own().host, Origin: ATTACKER }, {});
    expect(foreignOrigin.status, foreignOrigin.text).toBe(403);
    expect(JSON.parse(foreignOrigin.text).code).toBe("cross_origin_refused");
    expect(foreignOrigin.headers["access-control-allow-origin"]).toBeUndefined();

    const crossSite = await rawRequest(
      "POST",
      "/api/admin/auth/test-account",
      { Host: own().host, "Sec-Fetch-Site": "cross-site" },
      {},
    );
    expect(crossSite.status, crossSite.text).toBe(403);
    expect(JSON.parse(crossSite.text).code).toBe("cross_origin_refused");

    // DNS rebinding: attacker.example resolves to 127.0.0.1, so the page is "same-origin" with itself.
    const rebound = `attacker.example:${own().port}`;
    const rebinding = await rawRequest(
      "POST",
      "/api/admin/auth/test-account",
      { Host: rebound, Origin: `http://${rebound}` },
      {},
    );
    expect(rebinding.status, rebinding.text).toBe(403);
    expect(JSON.parse(rebinding.text).code).toBe("cross_origin_refused");

    // The console, served from the service's own origin, still signs in (and so do tools without a browser).
    const sameOrigin = await rawRequest(
      "POST",
      "/api/admin/auth/test-account",
      { Host: own().host, Origin: own().origin, "Sec-Fetch-Site": "same-origin" },
      {},
    );
    expect(sameOrigin.status, sameOrigin.text).toBe(200);
    expect(JSON.parse(sameOrigin.text).token).toMatch(/\S{20,}/);
    const viaLocalhost = `localhost:${own().port}`;
    const localhost = await rawRequest(
      "POST",
      "/api/admin/auth/test-account",
      { Host: viaLocalhost, Origin: `http://${viaLocalhost}` },
      {},
    );
    expect(localhost.status, localhost.text).toBe(200);
    expect((await api(stack, "POST", "/api/investor/auth/test-account")).status).toBe(200);
  });

  it("portal and partner answers carry no access-control-allow-origin for a foreign origin, and their preflight fails", async () => {
    const token = await signIn(stack, "admin", adminWallet(stack));
    const partners = await rawRequest("GET", "/api/admin/partners", { Origin: ATTACKER, Authorization: `Bearer ${token}` });
    expect(partners.status).toBe(200);
    expect(partners.headers["access-control-allow-origin"]).toBeUndefined();
    const payments = await rawRequest("GET", "/v1/payments", {
      Origin: ATTACKER,
      Authorization: `Bearer ${stack.local.partner.apiKey}`,
    });
    expect(payments.status).toBe(200);
    expect(payments.headers["access-control-allow-origin"]).toBeUndefined();

    for (const path of ["/api/admin/partners", "/api/admin/auth/test-account", "/v1/payments", "/api"]) {
      const preflight = await rawRequest("OPTIONS", path, {
        Origin: ATTACKER,
        "Access-Control-Request-Method": "GET",
        "Access-Control-Request-Headers": "authorization,content-type",
      });
      expect(preflight.headers["access-control-allow-origin"], path).toBeUndefined();
      expect(preflight.headers["access-control-allow-headers"], path).toBeUndefined();
      expect(preflight.headers["access-control-allow-methods"], path).toBeUndefined();
    }
  });

  it("the customer's browser routes stay open to every origin: they carry no ambient credential", async () => {
    const preflight = await rawRequest("OPTIONS", "/v1/public/checkout/payments", {
      Origin: ATTACKER,
      "Access-Control-Request-Method": "POST",
      "Access-Control-Request-Headers": "content-type",
    });
    expect(preflight.headers["access-control-allow-origin"]).toBe("*");
    const read = await rawRequest("GET", "/v1/public/checkout/sessions/cs_missing", { Origin: ATTACKER });
    expect(read.headers["access-control-allow-origin"]).toBe("*");
  });
});

// Issue 40: a production-mode instance started by the local stack kept the admin test account in
// ADMIN_ADDRESSES, and the other test accounts kept their seeded roles. Their keys are public
// (Anvil's mnemonic): outside local mode they are nobody. Last in this file: it restarts the service.
describe("production mode started by the local stack (issue 40)", () => {
  const testAccountWallet = (role: "admin" | "partner" | "issuer" | "investor") => {
    const account = mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: TEST_ACCOUNT_INDEX[role] });
    return portalWallet(toHex(account.getHdKey().privateKey as Uint8Array));
  };

  it("carries no test identity: no test account signs in to any portal; the configured admin still does", {
    timeout: 180_000,
  }, async () => {
    await stack.restartService({
      LOCAL_MODE: "false",
      PUBLIC_BASE_URL: stack.ponder.baseUrl,
      DATABASE_SCHEMA: "production_mode",
    });
    for (const role of ["admin", "partner", "issuer", "investor"] as const) {
      const wallet = testAccountWallet(role);
      const asked = await api(stack, "POST", `/api/${role}/auth/challenge`, { json: { address: wallet.address } });
      await expectProblem(asked, 403, "portal_not_allowed");
    }
    // The test-account routes are not there at all.
    expect((await api(stack, "POST", "/api/admin/auth/test-account")).status).toBe(404);
    expect(await signIn(stack, "admin", adminWallet(stack))).toMatch(/\S{20,}/);
  });
});
