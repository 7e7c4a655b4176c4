import { join } from "node:path";
import type { Address } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openSqliteStore, type Store } from "../api/store/open-store.js";
import { createSession } from "./support/checkout-helpers.js";
import {
  adminWallet,
  api,
  expectJson,
  offeringDraft,
  openOffering,
  type PortalWallet,
  portalWallet,
  registerIssuer,
  signIn,
} from "./support/portal-client.js";
import { startTestStack, type TestStack, waitFor } from "./support/test-stack.js";

// Reservations here last 8 s and go back on sale as soon as they expired.
const RESERVATION_SECONDS = 8;

let stack: TestStack;
let store: Store;
let adminToken: string;
let issuerToken: string;
let issuer: { id: string; partnerId: string };
let otherIssuerToken: string;

beforeAll(async () => {
  stack = await startTestStack({ env: { RWA_RESERVATION_SECONDS: String(RESERVATION_SECONDS), RWA_RELEASE_GRACE_SECONDS: "0" } });
  store = openSqliteStore(join(stack.dataDir, "app.sqlite"));
  adminToken = await signIn(stack, "admin", adminWallet(stack));
  const registered = await registerIssuer(stack, adminToken, portalWallet(), "Harbour Capital");
  issuerToken = registered.token;
  issuer = registered.issuer;
  otherIssuerToken = (await registerIssuer(stack, adminToken, portalWallet(), "Rival Estates")).token;
});
afterAll(async () => {
  await store?.destroy();
  await stack?.stop();
});

async function expectProblem(response: Response, status: number, code: string) {
  const text = await response.text();
  expect(response.status, text).toBe(status);
  expect(response.headers.get("content-type")).toContain("application/problem+json");
  const problem = JSON.parse(text);
  expect(problem.code).toBe(code);
  return problem;
}

const issuerPost = (path: string, json?: unknown) => api(stack, "POST", `/api/issuer${path}`, { token: issuerToken, json });
const adminPost = (path: string, json?: unknown) => api(stack, "POST", `/api/admin${path}`, { token: adminToken, json });

async function investors(
  count: number,
  options: { kycApproved?: boolean } = {},
): Promise<{ wallet: PortalWallet; token: string }[]> {
  return Promise.all(
    Array.from({ length: count }, async () => {
      const wallet = portalWallet();
      if (options.kycApproved) {
        await expectJson(
          await api(stack, "PUT", `/api/admin/investors/${wallet.address}/eligibility`, {
            token: adminToken,
            json: { kycStatus: "approved", jurisdiction: "DE" },
          }),
          200,
        );
      }
      return { wallet, token: await signIn(stack, "investor", wallet) };
    }),
  );
}

const buy = (token: string, offeringId: string, units: number) =>
  api(stack, "POST", "/api/rwa/checkout", { token, json: { offeringId, units } });

describe("offering lifecycle", () => {
  it("goes draft → in_review → rejected → in_review → open → paused → open → closed, each step audited", async () => {
    const draft = await expectJson(await issuerPost("/offerings", offeringDraft(stack)), 201);
    expect(draft).toMatchObject({ status: "draft", unitsAvailable: 1000, issuer: { name: "Harbour Capital" } });
    await expectProblem(await api(stack, "GET", `/api/rwa/offerings/${draft.id}`), 404, "not_found");
    await expectProblem(
      await api(stack, "GET", `/api/issuer/offerings/${draft.id}`, { token: otherIssuerToken }),
      404,
      "not_found",
    );
    await expectProblem(await adminPost(`/offerings/${draft.id}/approve`), 409, "invalid_offering_state");

    expect((await expectJson(await issuerPost(`/offerings/${draft.id}/submit`), 200)).status).toBe("in_review");
    const review = await expectJson(await api(stack, "GET", "/api/admin/offerings?status=in_review", { token: adminToken }), 200);
    expect(review.data.map((offering: { id: string }) => offering.id)).toContain(draft.id);
    await expectProblem(await adminPost(`/offerings/${draft.id}/reject`, {}), 400, "invalid_request");
    const rejected = await expectJson(await adminPost(`/offerings/${draft.id}/reject`, { reason: "Prospectus missing" }), 200);
    expect(rejected).toMatchObject({ status: "rejected", reviewReason: "Prospectus missing" });

    const edited = await expectJson(
      await api(stack, "PUT", `/api/issuer/offerings/${draft.id}`, {
        token: issuerToken,
        json: offeringDraft(stack, { description: "With prospectus." }),
      }),
      200,
    );
    expect(edited).toMatchObject({ status: "rejected", description: "With prospectus." });
    await expectJson(await issuerPost(`/offerings/${draft.id}/submit`), 200);
    expect((await expectJson(await adminPost(`/offerings/${draft.id}/approve`), 200)).status).toBe("open");
    await expectProblem(
      await api(stack, "PUT", `/api/issuer/offerings/${draft.id}`, { token: issuerToken, json: offeringDraft(stack) }),
      409,
      "invalid_offering_state",
    );
    const open = await expectJson(await api(stack, "GET", "/api/rwa/offerings"), 200);
    expect(open.data.map((offering: { id: string }) => offering.id)).toContain(draft.id);

    const [investor] = await investors(1);
    expect((await expectJson(await issuerPost(`/offerings/${draft.id}/pause`), 200)).status).toBe("paused");
    await expectProblem(await buy(investor!.token, draft.id, 1), 409, "offering_paused");
    expect((await expectJson(await issuerPost(`/offerings/${draft.id}/resume`), 200)).status).toBe("open");

    expect(
      await expectJson(await adminPost(`/offerings/${draft.id}/pause`, { reason: "Complaint under review" }), 200),
    ).toMatchObject({
      status: "paused",
      pausedBy: "admin",
    });
    await expectProblem(await issuerPost(`/offerings/${draft.id}/resume`), 409, "invalid_offering_state");
    expect((await expectJson(await adminPost(`/offerings/${draft.id}/resume`), 200)).status).toBe("open");

    expect(await expectJson(await issuerPost(`/offerings/${draft.id}/close`), 200)).toMatchObject({
      status: "closed",
      closeReason: "closed_by_issuer",
    });
    await expectProblem(await buy(investor!.token, draft.id, 1), 409, "offering_not_open");
    const closed = await expectJson(await api(stack, "GET", "/api/rwa/offerings?status=closed"), 200);
    expect(closed.data.map((offering: { id: string }) => offering.id)).toContain(draft.id);

    const audit = await expectJson(
      await api(stack, "GET", `/api/admin/audit-log?targetId=${draft.id}&limit=100`, { token: adminToken }),
      200,
    );
    expect(
      audit.data.map((entry: { action: string; actor: { role: string } }) => `${entry.actor.role}:${entry.action}`).reverse(),
    ).toEqual([
      "issuer:offering.draft",
      "issuer:offering.submit",
      "admin:offering.reject",
      "issuer:offering.update",
      "issuer:offering.submit",
      "admin:offering.approve",
      "issuer:offering.pause",
      "issuer:offering.resume",
      "admin:offering.pause",
      "admin:offering.resume",
      "issuer:offering.close",
    ]);
    expect(audit.data.find((entry: { action: string }) => entry.action === "offering.reject").details).toMatchObject({
      reason: "Prospectus missing",
    });
  });

  it("pages the audit log with a cursor, newest first", async () => {
    const seen: number[] = [];
    let cursor: string | null = null;
    do {
      const query: string = cursor === null ? "limit=3" : `limit=3&cursor=${cursor}`;
      const page: { data: { seq: number }[]; nextCursor: string | null } = await expectJson(
        await api(stack, "GET", `/api/admin/audit-log?${query}`, { token: adminToken }),
        200,
      );
      seen.push(...page.data.map((entry) => entry.seq));
      cursor = page.nextCursor;
    } while (cursor !== null);
    expect(seen.length).toBeGreaterThan(10);
    expect(seen).toEqual([...seen].sort((a, b) => b - a));
    expect(new Set(seen).size).toBe(seen.length);
  });

  it("pages offerings with a cursor, newest first, for investors, their issuer and the admin", async () => {
    const opened: string[] = [];
    for (let index = 0; index < 5; index++) {
      opened.push(await openOffering(stack, { issuer: issuerToken, admin: adminToken }, { totalUnits: 10 }));
    }
    const pageAll = async (path: string, token?: string) => {
      const ids: string[] = [];
      let cursor: string | null = null;
      do {
        const query: string = cursor === null ? "limit=2" : `limit=2&cursor=${cursor}`;
        const page: { data: { id: string }[]; nextCursor: string | null } = await expectJson(
          await api(stack, "GET", `${path}?${query}`, { token }),
          200,
        );
        expect(page.data.length).toBeLessThanOrEqual(2);
        ids.push(...page.data.map((offering) => offering.id));
        cursor = page.nextCursor;
      } while (cursor !== null);
      expect(new Set(ids).size).toBe(ids.length);
      return ids.filter((id) => opened.includes(id));
    };
    const newestFirst = [...opened].reverse();
    expect(await pageAll("/api/rwa/offerings")).toEqual(newestFirst);
    expect(await pageAll("/api/issuer/offerings", issuerToken)).toEqual(newestFirst);
    expect(await pageAll("/api/admin/offerings", adminToken)).toEqual(newestFirst);
  });

  it("accepts only a settlement address the indexer watches and no other partner owns", async () => {
    const unwatched = stack.local.accounts[9]!.address;
    const problem = await expectProblem(
      await issuerPost("/offerings", offeringDraft(stack, { settlementAddress: unwatched })),
      422,
      "settlement_address_not_watched",
    );
    expect(problem.watchedAddresses).toHaveLength(stack.deployment.paymentAddresses.length);
    // The demo shop's address belongs to the demo partner.
    await expectProblem(
      await issuerPost("/offerings", offeringDraft(stack, { settlementAddress: stack.local.partner.paymentAddress })),
      409,
      "settlement_address_taken",
    );
    await expectProblem(
      await issuerPost("/offerings", offeringDraft(stack, { minUnits: 5, maxUnitsPerInvestor: 2 })),
      400,
      "invalid_request",
    );
    // Once approved, the address is recorded as the issuer's partner's payment address.
    const partner = await expectJson(
      await api(stack, "GET", `/api/admin/partners/${issuer.partnerId}`, { token: adminToken }),
      200,
    );
    expect(partner.paymentAddresses.map((row: { address: string }) => row.address)).toEqual([
      stack.deployment.paymentAddresses[1],
    ]);
    expect(partner.issuerId).toBe(issuer.id);
  });
});

describe("investor eligibility", () => {
  it("applies KYC, allowed jurisdictions and accreditation with expiry as compliance records them", async () => {
    const offeringId = await openOffering(
      stack,
      { issuer: issuerToken, admin: adminToken },
      { eligibility: { requireKyc: true, jurisdictions: ["DE", "fr"], requireAccreditation: true } },
    );
    const [investor] = await investors(1);
    const address = investor!.wallet.address;
    const verdict = () =>
      api(stack, "GET", `/api/rwa/offerings/${offeringId}/eligibility`, { token: investor!.token }).then((r) =>
        expectJson(r, 200),
      );

    expect(await verdict()).toEqual({
      eligible: false,
      reasons: ["kyc_required", "jurisdiction_unknown", "accreditation_required"],
    });
    const refused = await expectProblem(await buy(investor!.token, offeringId, 1), 403, "not_eligible");
    expect(refused.reasons).toEqual(["kyc_required", "jurisdiction_unknown", "accreditation_required"]);

    const setEligibility = (json: unknown) =>
      api(stack, "PUT", `/api/admin/investors/${address}/eligibility`, { token: adminToken, json }).then((r) =>
        expectJson(r, 200),
      );
    await setEligibility({
      kycStatus: "approved",
      jurisdiction: "US",
      accredited: true,
      accreditationExpiresAt: "2020-01-01T00:00:00Z",
    });
    expect(await verdict()).toEqual({ eligible: false, reasons: ["jurisdiction_not_allowed", "accreditation_expired"] });
    await setEligibility({ kycStatus: "needs_update", jurisdiction: "FR", accredited: true });
    expect(await verdict()).toEqual({ eligible: false, reasons: ["kyc_required"] });
    const record = await setEligibility({
      kycStatus: "approved",
      jurisdiction: "de",
      accredited: true,
      accreditationExpiresAt: "2099-01-01T00:00:00Z",
    });
    expect(record).toMatchObject({ kycStatus: "approved", jurisdiction: "DE", accredited: true, frozen: false });
    expect(await verdict()).toEqual({ eligible: true, reasons: [] });
    await expectJson(await buy(investor!.token, offeringId, 1), 201);

    const profile = await expectJson(await api(stack, "GET", "/api/investor/profile", { token: investor!.token }), 200);
    expect(profile).toMatchObject({ address, kycStatus: "approved", jurisdiction: "DE", accredited: true });

    await expectJson(await adminPost(`/investors/${address}/freeze`, { reason: "court order" }), 200);
    expect(await verdict()).toEqual({ eligible: false, reasons: ["wallet_frozen"] });
    await expectProblem(await buy(investor!.token, offeringId, 1), 403, "wallet_frozen");
    const frozen = await expectJson(await api(stack, "GET", "/api/admin/investors?frozen=true", { token: adminToken }), 200);
    expect(frozen.data.map((row: { address: Address }) => row.address)).toEqual([address]);
    const audit = await expectJson(
      await api(stack, "GET", `/api/admin/audit-log?targetId=${address.toLowerCase()}`, { token: adminToken }),
      200,
    );
    expect(audit.data.map((entry: { action: string }) => entry.action)).toContain("investor.freeze");
  });

  it("refuses investors from blocked jurisdictions", async () => {
    const offeringId = await openOffering(
      stack,
      { issuer: issuerToken, admin: adminToken },
      { eligibility: { requireKyc: false, blockedJurisdictions: ["US"] } },
    );
    const [investor] = await investors(1);
    await expectJson(
      await api(stack, "PUT", `/api/admin/investors/${investor!.wallet.address}/eligibility`, {
        token: adminToken,
        json: { kycStatus: "pending", jurisdiction: "US" },
      }),
      200,
    );
    const problem = await expectProblem(await buy(investor!.token, offeringId, 1), 403, "not_eligible");
    expect(problem.reasons).toEqual(["jurisdiction_blocked"]);
  });
});

describe("reservations", () => {
  it("sells exactly the available units when many investors race for the last ones", async () => {
    const offeringId = await openOffering(
      stack,
      { issuer: issuerToken, admin: adminToken },
      { totalUnits: 7, maxUnitsPerInvestor: 5 },
    );
    // KYC-approved: wallets without it may together hold only a share of an offering unpaid (docs/security.md).
    const crowd = await investors(20, { kycApproved: true });
    const responses = await Promise.all(crowd.map((investor) => buy(investor.token, offeringId, 1)));
    const statuses = responses.map((response) => response.status);
    expect(statuses.filter((status) => status === 201)).toHaveLength(7);
    expect(statuses.filter((status) => status === 409)).toHaveLength(13);
    for (const response of responses.filter((r) => r.status === 409))
      expect((await response.json()).code).toBe("insufficient_units");
    const offering = await expectJson(await api(stack, "GET", `/api/rwa/offerings/${offeringId}`), 200);
    expect(offering.unitsAvailable).toBe(0);
    const held = await store
      .selectFrom("rwa_purchase")
      .select("units")
      .where("offering_id", "=", offeringId)
      .where("released_at", "is", null)
      .execute();
    expect(held.reduce((sum, row) => sum + row.units, 0)).toBe(7);
  });

  it("holds one investor to the per-investor limit under concurrency", async () => {
    const offeringId = await openOffering(
      stack,
      { issuer: issuerToken, admin: adminToken },
      // Two: under the cap of three unpaid purchases per wallet, so the per-investor limit is what refuses.
      { totalUnits: 100, maxUnitsPerInvestor: 2 },
    );
    const [investor] = await investors(1);
    const responses = await Promise.all(Array.from({ length: 8 }, () => buy(investor!.token, offeringId, 1)));
    expect(responses.filter((response) => response.status === 201)).toHaveLength(2);
    for (const response of responses.filter((r) => r.status !== 201)) {
      expect(response.status).toBe(409);
      expect((await response.json()).code).toBe("investor_limit_exceeded");
    }
    expect((await expectJson(await api(stack, "GET", `/api/rwa/offerings/${offeringId}`), 200)).unitsAvailable).toBe(98);
  });

  it("puts units back on sale once an unpaid purchase has expired", async () => {
    const offeringId = await openOffering(stack, { issuer: issuerToken, admin: adminToken }, { totalUnits: 2 });
    const [first, second] = await investors(2);
    const purchase = await expectJson(await buy(first!.token, offeringId, 2), 201);
    await expectProblem(await buy(second!.token, offeringId, 1), 409, "insufficient_units");
    // Block timestamps are whole seconds: a block mined 1.5 s after the expiry is
    // stamped at least 0.5 s past it, whatever fraction of a second the expiry fell on.
    await new Promise((resolve) => setTimeout(resolve, RESERVATION_SECONDS * 1000 + 1500));
    // Units come back only once the index has passed the expiry: a new block shows it has.
    await stack.testClient.mine({ blocks: 1 });
    await waitFor(
      async () => {
        const offering = await expectJson(await api(stack, "GET", `/api/rwa/offerings/${offeringId}`), 200);
        return offering.unitsAvailable === 2 ? true : undefined;
      },
      { what: "units released" },
    );
    const expired = await expectJson(await api(stack, "GET", `/api/rwa/checkout/${purchase.id}`, { token: first!.token }), 200);
    expect(expired).toMatchObject({ status: "expired", reservation: "released" });
    await expectJson(await buy(second!.token, offeringId, 2), 201);
  });
});

describe("partners, keys and payment addresses", () => {
  it("keeps each partner to its own sessions and orders", async () => {
    const other = await expectJson(await adminPost("/partners", { name: "Other Shop" }), 201);
    const asOther = (path: string, method = "GET", json?: unknown) =>
      stack.partnerFetch(path, {
        method,
        headers: { Authorization: `Bearer ${other.apiKey.apiKey}`, ...(json ? { "Content-Type": "application/json" } : {}) },
        body: json === undefined ? undefined : JSON.stringify(json),
      });
    const session = await createSession(stack, { certificate: { enabled: false } });
    expect((await stack.partnerFetch(`/v1/orders/${session.orderId}`)).status).toBe(200);
    await expectProblem(await asOther(`/v1/orders/${session.orderId}`), 404, "not_found");
    await expectProblem(await asOther(`/v1/checkout/sessions/${session.id}`), 404, "not_found");
    await expectProblem(
      await asOther(`/v1/orders/${session.orderId}/fulfilment`, "POST", {
        fulfilmentReference: "parcel-x",
        idempotencyKey: "fulfil-x",
      }),
      404,
      "not_found",
    );
  });

  it("creates a partner whose API key is shown once and works at once", async () => {
    const created = await expectJson(await adminPost("/partners", { name: "Corner Bookshop" }), 201);
    expect(created.apiKey.apiKey).toMatch(/^sk_test_/);
    const partnerId = created.partner.id;
    const transfers = await stack.partnerFetch("/v1/transfers", {
      headers: { Authorization: `Bearer ${created.apiKey.apiKey}` },
    });
    expect(transfers.status).toBe(200);
    const listed = await api(stack, "GET", "/api/admin/partners", { token: adminToken });
    const text = await listed.text();
    expect(text).not.toContain(created.apiKey.apiKey);
    expect(JSON.parse(text).data.map((partner: { id: string }) => partner.id)).toContain(partnerId);

    // An address the running indexer does not watch is taken, and says so until a restart.
    const unwatched = await expectJson(
      await adminPost(`/partners/${partnerId}/payment-addresses`, {
        network: "local",
        address: stack.local.accounts[8]!.address,
      }),
      201,
    );
    expect(unwatched).toMatchObject({ address: stack.local.accounts[8]!.address, watching: false });
    const address = stack.deployment.paymentAddresses[3]!;
    const added = await expectJson(
      await adminPost(`/partners/${partnerId}/payment-addresses`, { network: "local", address }),
      201,
    );
    expect(added).toMatchObject({ network: "local", chainId: 31337, address, watching: true });
    await expectProblem(
      await adminPost(`/partners/${partnerId}/payment-addresses`, { network: "local", address }),
      409,
      "payment_address_taken",
    );

    const second = await expectJson(await adminPost(`/partners/${partnerId}/api-keys`), 201);
    const withSecond = { headers: { Authorization: `Bearer ${second.apiKey}` } };
    expect((await stack.partnerFetch("/v1/transfers", withSecond)).status).toBe(200);
    expect(
      (await api(stack, "DELETE", `/api/admin/partners/${partnerId}/api-keys/${second.id}`, { token: adminToken })).status,
    ).toBe(204);
    expect((await stack.partnerFetch("/v1/transfers", withSecond)).status).toBe(401);
    const details = await expectJson(await api(stack, "GET", `/api/admin/partners/${partnerId}`, { token: adminToken }), 200);
    expect(details.apiKeys).toHaveLength(2);
    expect(details.apiKeys.filter((key: { revokedAt: string | null }) => key.revokedAt !== null)).toHaveLength(1);
  });

  it("lists event deliveries for the admin", async () => {
    const page = await expectJson(await api(stack, "GET", "/api/admin/event-deliveries?limit=10", { token: adminToken }), 200);
    expect(Array.isArray(page.data)).toBe(true);
    expect(page).toHaveProperty("nextCursor");
  });
});
