import { getAddress } from "viem";
import { generatePrivateKey } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifySignature } from "../client/src/signature.js";
import { createSession } from "./support/checkout-helpers.js";
import {
  accountWallet,
  adminWallet,
  api,
  expectJson,
  offeringDraft,
  openOffering,
  portalWallet,
  type Role,
  registerIssuer,
  signIn,
} from "./support/portal-client.js";
import { startTestStack, type TestStack } from "./support/test-stack.js";
import { startWebhookReceiver } from "./support/webhook-receiver.js";

// The portals on one stack of the default configuration, for what were 2 files (console-partner-portal,
// then portals-authz), a describe block each reading the stack through sharedStack(). The partner
// portal runs first: it counts the demo partner's members, and portals-authz adds one. One start, not 2.
let shared: TestStack;
const sharedStack = () => shared;

beforeAll(async () => {
  shared = await startTestStack();
}, 420_000);

afterAll(async () => {
  await shared?.stop();
});

describe("console-partner-portal", () => {
  // The partner portal behind the console: member wallets of a partner sign in with SIWE
  // and reach exactly what the partner's API key reaches, through the same routes.

  let stack: TestStack;
  let adminToken: string;
  let rival: { id: string; apiKey: string };

  beforeAll(async () => {
    stack = sharedStack();
    adminToken = await signIn(stack, "admin", adminWallet(stack));
    const created = await expectJson(
      await api(stack, "POST", "/api/admin/partners", { token: adminToken, json: { name: "Rival shop" } }),
      201,
    );
    rival = { id: created.partner.id, apiKey: created.apiKey.apiKey };
  }, 120_000);

  afterAll(async () => {});

  const partnerSignIn = (wallet: ReturnType<typeof portalWallet>) => signIn(stack, "partner" as never, wallet);

  describe("partner portal: members sign in and act for their partner only", () => {
    const member = portalWallet(generatePrivateKey());
    const stranger = portalWallet(generatePrivateKey());

    it("refuses a wallet that is no member, at challenge", async () => {
      const refused = await expectJson(
        await api(stack, "POST", "/api/partner/auth/challenge", { json: { address: stranger.address } }),
        403,
      );
      expect(refused).toMatchObject({ code: "portal_not_allowed", portal: "partner" });
    });

    it("adds members through the partner's API key, once", async () => {
      const added = await expectJson(
        await stack.partnerFetch("/v1/members", { method: "POST", json: { address: member.address } }),
        201,
      );
      expect(added).toMatchObject({ partnerId: stack.local.partner.id, address: member.address, role: "member" });
      const again = await expectJson(
        await stack.partnerFetch("/v1/members", { method: "POST", json: { address: member.address } }),
        409,
      );
      expect(again.code).toBe("member_exists");
      // Another partner's key sees its own (empty) member list, not ours.
      const rivals = await expectJson(
        await api(stack, "GET", "/v1/members", { headers: { Authorization: `Bearer ${rival.apiKey}` } }),
        200,
      );
      expect(rivals.data).toEqual([]);
    });

    it("gives a member the partner's sessions and nothing of another partner's", async () => {
      const own = await createSession(stack, { externalOrderId: "portal-own" });
      const rivalSession = await expectJson(
        await api(stack, "POST", "/v1/checkout/sessions", {
          headers: { Authorization: `Bearer ${rival.apiKey}` },
          json: {
            externalOrderId: "rival-1",
            externalProductId: "sku",
            productName: "Rival tee",
            quantity: 1,
            totalPriceUsdc: "1000000",
            paymentMethod: "usdc",
            checkoutMode: "hosted_transfer",
            idempotencyKey: "rival-1",
          },
        }),
        // The rival has no payment address: creation is refused, so it has no session at all.
        422,
      );
      expect(rivalSession.code).toBe("no_payment_address");

      const token = await partnerSignIn(member);
      const list = await expectJson(await api(stack, "GET", "/api/partner/checkout/sessions?limit=1", { token }), 200);
      expect(list.data).toHaveLength(1);
      expect(list.data[0]).toMatchObject({ id: own.id, order: { status: "awaiting_payment" } });
      // The same list through the API key, page for page.
      const byKey = await expectJson(await stack.partnerFetch("/v1/checkout/sessions?limit=1"), 200);
      expect(byKey.data[0].id).toBe(own.id);

      // Choosing a partner the wallet does not belong to is refused.
      const chosen = await expectJson(
        await api(stack, "GET", "/api/partner/checkout/sessions", { token, headers: { "X-Partner-Id": rival.id } }),
        403,
      );
      expect(chosen.code).toBe("portal_not_allowed");
      // A rival member reads nothing of ours.
      const rivalMember = portalWallet(generatePrivateKey());
      await expectJson(
        await api(stack, "POST", `/api/admin/partners/${rival.id}/members`, {
          token: adminToken,
          json: { address: rivalMember.address },
        }),
        201,
      );
      const rivalToken = await partnerSignIn(rivalMember);
      await expectJson(await api(stack, "GET", `/api/partner/checkout/sessions/${own.id}`, { token: rivalToken }), 404);
      await expectJson(await api(stack, "GET", `/api/partner/orders/${own.orderId}`, { token: rivalToken }), 404);
      const rivalList = await expectJson(await api(stack, "GET", "/api/partner/checkout/sessions", { token: rivalToken }), 200);
      expect(rivalList.data).toEqual([]);
    });

    it("keeps roles apart: an investor or admin session opens no partner route, a member session no admin route", async () => {
      const investorToken = await signIn(stack, "investor", stranger);
      expect((await expectJson(await api(stack, "GET", "/api/partner/events", { token: investorToken }), 403)).code).toBe(
        "wrong_portal",
      );
      expect((await expectJson(await api(stack, "GET", "/api/partner/api-keys", { token: adminToken }), 403)).code).toBe(
        "wrong_portal",
      );
      const token = await partnerSignIn(member);
      await expectJson(await api(stack, "GET", "/api/admin/partners", { token }), 403);
      await expectJson(
        await api(stack, "POST", `/api/admin/partners/${rival.id}/members`, { token, json: { address: member.address } }),
        403,
      );
      await expectJson(await api(stack, "GET", "/api/partner/events"), 401);
      // The route declares its callers, not its mount (docs/http-conventions.md): the partner's own key
      // reads its own events here as under /v1, and a key of no partner is refused.
      await expectJson(await stack.partnerFetch("/api/partner/events"), 200);
      await expectJson(await api(stack, "GET", "/api/partner/events", { token: "sk_test_not_a_key" }), 401);
    });

    it("lets a member whose role is member read keys, members, webhooks and branding but change none; an admin member may", async () => {
      const token = await partnerSignIn(member);
      expect((await expectJson(await api(stack, "GET", "/api/partner/profile", { token }), 200)).memberRole).toBe("member");
      const before = {
        keys: await expectJson(await api(stack, "GET", "/api/partner/api-keys", { token }), 200),
        endpoints: await expectJson(await api(stack, "GET", "/api/partner/webhook-endpoints", { token }), 200),
        branding: await expectJson(await api(stack, "GET", "/api/partner/branding", { token }), 200),
        members: await expectJson(await api(stack, "GET", "/api/partner/members", { token }), 200),
      };
      const changes: [string, string, { json?: unknown }][] = [
        ["POST", "/api/partner/api-keys", {}],
        ["DELETE", `/api/partner/api-keys/${before.keys.data[0].id}`, {}],
        ["POST", "/api/partner/members", { json: { address: portalWallet(generatePrivateKey()).address, role: "admin" } }],
        ["DELETE", `/api/partner/members/${member.address}`, {}],
        ["POST", "/api/partner/webhook-endpoints", { json: { url: "http://127.0.0.1:9/hook" } }],
        ["PATCH", "/api/partner/branding", { json: { displayName: "Taken over" } }],
        ["PUT", "/api/partner/branding/logo", {}],
        ["DELETE", "/api/partner/branding/logo", {}],
      ];
      for (const [method, path, options] of changes) {
        const refused = await expectJson(await api(stack, method, path, { token, ...options }), 403);
        expect([method, path, refused.code]).toEqual([method, path, "forbidden"]);
      }
      // Nothing changed.
      expect(await expectJson(await api(stack, "GET", "/api/partner/api-keys", { token }), 200)).toEqual(before.keys);
      expect(await expectJson(await api(stack, "GET", "/api/partner/webhook-endpoints", { token }), 200)).toEqual(
        before.endpoints,
      );
      expect(await expectJson(await api(stack, "GET", "/api/partner/branding", { token }), 200)).toEqual(before.branding);
      expect(await expectJson(await api(stack, "GET", "/api/partner/members", { token }), 200)).toEqual(before.members);

      // The partner makes it an admin member (remove, add again with the role): now it may.
      await expectJson(await stack.partnerFetch(`/v1/members/${member.address}`, { method: "DELETE" }), 204);
      await expectJson(
        await stack.partnerFetch("/v1/members", { method: "POST", json: { address: member.address, role: "admin" } }),
        201,
      );
      const adminToken = await partnerSignIn(member);
      expect((await expectJson(await api(stack, "GET", "/api/partner/profile", { token: adminToken }), 200)).memberRole).toBe(
        "admin",
      );
    });

    it("issues an API key once and revokes it; the member's removal ends its access", async () => {
      const token = await partnerSignIn(member);
      const key = await expectJson(await api(stack, "POST", "/api/partner/api-keys", { token }), 201);
      const works = await api(stack, "GET", "/v1/events", { headers: { Authorization: `Bearer ${key.apiKey}` } });
      expect(works.status).toBe(200);
      const keys = await expectJson(await api(stack, "GET", "/api/partner/api-keys", { token }), 200);
      expect(keys.data.map((k: { id: string }) => k.id)).toContain(key.id);
      expect(JSON.stringify(keys)).not.toContain(key.apiKey);
      // Paged like every list: one key a page, oldest first, each once; a crafted cursor is refused.
      const paged: string[] = [];
      let cursor: string | null = null;
      do {
        const path: string = `/api/partner/api-keys?limit=1${cursor === null ? "" : `&cursor=${cursor}`}`;
        const page = await expectJson(await api(stack, "GET", path, { token }), 200);
        expect(page.data.length).toBeLessThanOrEqual(1);
        paged.push(...page.data.map((k: { id: string }) => k.id));
        cursor = page.nextCursor;
      } while (cursor !== null);
      expect(paged).toEqual(keys.data.map((k: { id: string }) => k.id));
      expect(paged.length).toBeGreaterThanOrEqual(2);
      const crafted = Buffer.from(JSON.stringify({ t: "x", id: 1 })).toString("base64url");
      expect((await expectJson(await api(stack, "GET", `/api/partner/api-keys?cursor=${crafted}`, { token }), 400)).code).toBe(
        "invalid_cursor",
      );
      await expectJson(await api(stack, "DELETE", `/api/partner/api-keys/${key.id}`, { token }), 204);
      expect((await api(stack, "GET", "/v1/events", { headers: { Authorization: `Bearer ${key.apiKey}` } })).status).toBe(401);

      const audit = await expectJson(
        await api(stack, "GET", "/api/admin/audit-log?action=partner.api_key.create", { token: adminToken }),
        200,
      );
      expect(audit.data[0].actor).toMatchObject({ role: "partner", address: getAddress(member.address) });

      await expectJson(await stack.partnerFetch(`/v1/members/${member.address}`, { method: "DELETE" }), 204);
      expect((await expectJson(await api(stack, "GET", "/api/partner/events", { token }), 403)).code).toBe("portal_not_allowed");
    });
  });

  describe("partner portal: branding and the webhook test event", () => {
    it("an admin member sets the partner's branding; a rival's member reads its own", async () => {
      const member = portalWallet(generatePrivateKey());
      await expectJson(
        await stack.partnerFetch("/v1/members", { method: "POST", json: { address: member.address, role: "admin" } }),
        201,
      );
      const token = await partnerSignIn(member);
      const set = await expectJson(
        await api(stack, "PATCH", "/api/partner/branding", {
          token,
          json: { displayName: "Portal shop", accentColor: "#0b6e4f" },
        }),
        200,
      );
      expect(set).toMatchObject({ displayName: "Portal shop", accentColor: "#0b6e4f" });
      expect(await expectJson(await stack.partnerFetch("/v1/branding"), 200)).toMatchObject({ displayName: "Portal shop" });
      const bad = await expectJson(
        await api(stack, "PATCH", "/api/partner/branding", { token, json: { accentColor: "red" } }),
        400,
      );
      expect(bad.code).toBe("invalid_request");
      const rivals = await expectJson(
        await api(stack, "GET", "/v1/branding", { headers: { Authorization: `Bearer ${rival.apiKey}` } }),
        200,
      );
      expect(rivals.displayName).not.toBe("Portal shop");
      await expectJson(await api(stack, "GET", "/api/partner/branding"), 401);
    });

    it("sends one signed webhook.test to the partner's own endpoint only", async () => {
      const receiver = await startWebhookReceiver();
      try {
        const endpoint = await expectJson(
          await stack.partnerFetch("/v1/webhook-endpoints", { method: "POST", json: { url: receiver.url("/portal-test") } }),
          201,
        );
        const path = `/v1/webhook-endpoints/${endpoint.id}/test`;
        // Anonymous: no key, no session.
        expect((await expectJson(await api(stack, "POST", path), 401)).code).toBeTruthy();
        await expectJson(await api(stack, "POST", `/api/partner/webhook-endpoints/${endpoint.id}/test`), 401);
        // Another partner, by key and by member session: the endpoint does not exist for it.
        const byRivalKey = await expectJson(
          await api(stack, "POST", path, { headers: { Authorization: `Bearer ${rival.apiKey}` } }),
          404,
        );
        expect(byRivalKey.code).toBe("not_found");
        const rivalMember = portalWallet(generatePrivateKey());
        await expectJson(
          await api(stack, "POST", `/api/admin/partners/${rival.id}/members`, {
            token: adminToken,
            json: { address: rivalMember.address },
          }),
          201,
        );
        const rivalToken = await partnerSignIn(rivalMember);
        await expectJson(
          await api(stack, "POST", `/api/partner/webhook-endpoints/${endpoint.id}/test`, { token: rivalToken }),
          404,
        );
        expect(receiver.received).toHaveLength(0);

        // The owner: one signed delivery, answered with its outcome.
        const result = await expectJson(await stack.partnerFetch(path, { method: "POST" }), 200);
        expect(result).toMatchObject({ ok: true, statusCode: 204, error: null });
        expect(Number.isInteger(result.durationMs)).toBe(true);
        expect(receiver.received).toHaveLength(1);
        const hook = receiver.received[0] as (typeof receiver.received)[number];
        expect(hook.type).toBe("webhook.test");
        expect(hook.eventId).toBe(result.eventId);
        verifySignature({ payload: hook.rawBody, header: String(hook.headers["service-signature"]), secrets: [endpoint.secret] });
        expect(JSON.parse(hook.rawBody.toString("utf8"))).toMatchObject({
          type: "webhook.test",
          data: { endpointId: endpoint.id },
        });
        // Outside the outbox: no event recorded.
        const events = await expectJson(await stack.partnerFetch("/v1/events?limit=100"), 200);
        expect(events.data.map((e: { type: string }) => e.type)).not.toContain("webhook.test");

        // A refusing endpoint is an outcome, not an error of the call.
        receiver.respond(() => 500);
        const refused = await expectJson(await stack.partnerFetch(path, { method: "POST" }), 200);
        expect(refused).toMatchObject({ ok: false, statusCode: 500 });
        await expectJson(await stack.partnerFetch(`/v1/webhook-endpoints/${endpoint.id}`, { method: "DELETE" }), 200);
        await expectJson(await stack.partnerFetch(path, { method: "POST" }), 404);
      } finally {
        await receiver.close();
      }
    });
  });

  describe("partner members list: paged like every list", () => {
    it("pages with limit and cursor, each member once, and refuses a crafted cursor", async () => {
      const asRival = (path: string) => api(stack, "GET", path, { headers: { Authorization: `Bearer ${rival.apiKey}` } });
      for (let i = 0; i < 3; i++) {
        const wallet = portalWallet(generatePrivateKey());
        await expectJson(
          await api(stack, "POST", "/v1/members", {
            headers: { Authorization: `Bearer ${rival.apiKey}` },
            json: { address: wallet.address },
          }),
          201,
        );
      }
      const all = await expectJson(await asRival("/v1/members"), 200);
      expect(all.data.length).toBeGreaterThanOrEqual(3);
      expect(all.nextCursor).toBeNull();

      const paged: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const page: { data: { address: string }[]; nextCursor: string | null } = await expectJson(
          await asRival(`/v1/members?limit=1${cursor === null ? "" : `&cursor=${cursor}`}`),
          200,
        );
        expect(page.data).toHaveLength(1);
        paged.push(...page.data.map((m) => m.address));
        cursor = page.nextCursor;
        pages++;
      } while (cursor !== null && pages < 200);
      expect(paged).toEqual(all.data.map((m: { address: string }) => m.address));

      // The admin portal's view of the same list pages the same way.
      const byAdmin: string[] = [];
      let adminCursor: string | null = null;
      do {
        const path = `/api/admin/partners/${rival.id}/members?limit=2${adminCursor === null ? "" : `&cursor=${adminCursor}`}`;
        const page: { data: { address: string }[]; nextCursor: string | null } = await expectJson(
          await api(stack, "GET", path, { token: adminToken }),
          200,
        );
        expect(page.data.length).toBeLessThanOrEqual(2);
        byAdmin.push(...page.data.map((m) => m.address));
        adminCursor = page.nextCursor;
      } while (adminCursor !== null && byAdmin.length < 200);
      expect(byAdmin).toEqual(paged);

      const crafted = Buffer.from(JSON.stringify({ t: 1e300, a: "0x00" })).toString("base64url");
      expect((await expectJson(await asRival(`/v1/members?cursor=${crafted}`), 400)).code).toBe("invalid_cursor");
      expect((await expectJson(await asRival("/v1/members?limit=0"), 400)).code).toBe("invalid_request");
    });
  });
});

describe("portals-authz", () => {
  /**
   * Who may call each portal route. The test reads /openapi.json and fails if a
   * route under /api is missing here, so every new route gets a row.
   */
  type Access = "public" | Role;
  const ACCESS: Record<string, Access> = {
    "POST /api/investor/auth/challenge": "public",
    "POST /api/investor/auth/verify": "public",
    "POST /api/investor/auth/logout": "investor",
    "GET /api/investor/auth/session": "investor",
    "POST /api/issuer/auth/challenge": "public",
    "POST /api/issuer/auth/verify": "public",
    "POST /api/issuer/auth/logout": "issuer",
    "GET /api/issuer/auth/session": "issuer",
    "POST /api/admin/auth/challenge": "public",
    "POST /api/admin/auth/verify": "public",
    "POST /api/admin/auth/logout": "admin",
    "GET /api/admin/auth/session": "admin",
    "GET /api/investor/profile": "investor",
    "GET /api/rwa/offerings": "public",
    "GET /api/rwa/offerings/{id}": "public",
    "GET /api/rwa/offerings/{id}/eligibility": "investor",
    "GET /api/rwa/verify/certificates/{tokenId}": "public",
    "GET /api/rwa/verify/transactions/{hash}": "public",
    "GET /api/rwa/verify/wallets/{address}": "public",
    "POST /api/rwa/checkout": "investor",
    "GET /api/rwa/checkout": "investor",
    "GET /api/rwa/checkout/{id}": "investor",
    "POST /api/rwa/settlements/wallet": "investor",
    "POST /api/rwa/settlements/authorization": "investor",
    "GET /api/rwa/settlements/authorization/{purchaseId}": "investor",
    "GET /api/rwa/certificates": "investor",
    "POST /api/rwa/certificates/{purchaseId}/claim": "investor",
    "GET /api/issuer/profile": "issuer",
    "POST /api/issuer/offerings": "issuer",
    "GET /api/issuer/offerings": "issuer",
    "GET /api/issuer/offerings/{id}": "issuer",
    "PUT /api/issuer/offerings/{id}": "issuer",
    "POST /api/issuer/offerings/{id}/submit": "issuer",
    "POST /api/issuer/offerings/{id}/pause": "issuer",
    "POST /api/issuer/offerings/{id}/resume": "issuer",
    "POST /api/issuer/offerings/{id}/close": "issuer",
    "GET /api/issuer/offerings/{id}/purchases": "issuer",
    "GET /api/issuer/offerings/{id}/purchases.csv": "issuer",
    "GET /api/issuer/offerings/{id}/holders": "issuer",
    "GET /api/issuer/offerings/{id}/holders.csv": "issuer",
    "POST /api/admin/issuers": "admin",
    "GET /api/admin/issuers": "admin",
    "POST /api/admin/issuers/{id}/disable": "admin",
    "GET /api/admin/investors": "admin",
    "GET /api/admin/investors/{address}": "admin",
    "PUT /api/admin/investors/{address}/eligibility": "admin",
    "POST /api/admin/investors/{address}/freeze": "admin",
    "POST /api/admin/investors/{address}/unfreeze": "admin",
    "GET /api/admin/offerings": "admin",
    "GET /api/admin/offerings/{id}": "admin",
    "POST /api/admin/offerings/{id}/approve": "admin",
    "POST /api/admin/offerings/{id}/reject": "admin",
    "POST /api/admin/offerings/{id}/pause": "admin",
    "POST /api/admin/offerings/{id}/resume": "admin",
    "POST /api/admin/offerings/{id}/close": "admin",
    "POST /api/admin/partners": "admin",
    "GET /api/admin/partners": "admin",
    "GET /api/admin/partners/{id}": "admin",
    "POST /api/admin/partners/{id}/api-keys": "admin",
    "DELETE /api/admin/partners/{id}/api-keys/{keyId}": "admin",
    "POST /api/admin/partners/{id}/payment-addresses": "admin",
    "GET /api/admin/event-deliveries": "admin",
    "GET /api/admin/audit-log": "admin",
    "GET /api/admin/payments": "admin",
    "POST /api/admin/payments/{chainId}/{transactionHash}/{logIndex}/attach": "admin",
    // Local mode only (the test stack runs in local mode): sign in with a test account (docs/console.md).
    "GET /api/local/test-accounts": "public",
    "POST /api/{role}/auth/test-account": "public",
    "GET /api/admin/reward-claims": "admin",
    "GET /api/partner/orders": "partner",
    "GET /api/partner/orders/{orderId}/evidence": "partner",
    // The console's Auditor view (docs/console.md): the accounting reads behind the member session.
    "GET /api/partner/ledger": "partner",
    "GET /api/partner/reports/reconciliation": "partner",
    // The operator's books across partners (docs/accounting.md): the same reads behind the admin session.
    "GET /api/admin/ledger": "admin",
    "GET /api/admin/reports/reconciliation": "admin",
    "GET /api/admin/orders": "admin",
    "GET /api/admin/orders/{orderId}": "admin",
    "GET /api/admin/orders/{orderId}/evidence": "admin",
    "GET /api/partner/refunds": "partner",
    "GET /api/partner/refunds/{id}": "partner",
    "POST /api/partner/refunds": "partner",
    "POST /api/partner/refunds/{id}/cancel": "partner",
    "GET /api/partner/refunds/{id}/qr": "partner",
    "POST /api/partner/refunds/{id}/test-send": "partner",
    "GET /api/partner/refunds/{id}/authorization": "partner",
    "POST /api/partner/refunds/{id}/authorization": "partner",
    "GET /api/partner/rewards": "partner",
    "GET /api/partner/rewards/settings": "partner",
    "PUT /api/partner/rewards/settings": "partner",
    "POST /api/partner/rewards/settings/funding-challenge": "partner",
    "POST /api/partner/rewards/settings/test-fund": "partner",
    "GET /api/partner/rewards/{rewardId}": "partner",
    "POST /api/partner/orders/{orderId}/rewards": "partner",
    "POST /api/partner/rewards/{rewardId}/revoke": "partner",
    "GET /api/partner/subscriptions": "partner",
    "GET /api/partner/subscriptions/{id}": "partner",
    "GET /api/partner/subscriptions/settings": "partner",
    "PUT /api/partner/subscriptions/settings": "partner",
    "POST /api/partner/subscriptions": "partner",
    "POST /api/partner/subscriptions/{id}/cancel": "partner",
    "POST /api/partner/auth/challenge": "public",
    "POST /api/partner/auth/verify": "public",
    "DELETE /api/partner/api-keys/{keyId}": "partner",
    "DELETE /api/partner/members/{address}": "partner",
    "DELETE /api/partner/webhook-endpoints/{id}": "partner",
    "GET /api/partner/api-keys": "partner",
    "GET /api/partner/auth/session": "partner",
    "GET /api/partner/checkout/sessions": "partner",
    "GET /api/partner/checkout/sessions/{id}": "partner",
    "GET /api/partner/events": "partner",
    "GET /api/partner/events/{id}": "partner",
    "GET /api/partner/events/{id}/deliveries": "partner",
    "GET /api/partner/members": "partner",
    "GET /api/partner/orders/{orderId}": "partner",
    "GET /api/partner/payments": "partner",
    "GET /api/partner/payments/{chainId}/{transactionHash}/{logIndex}": "partner",
    "GET /api/partner/profile": "partner",
    "GET /api/partner/webhook-endpoints": "partner",
    "GET /api/partner/webhook-endpoints/{id}": "partner",
    "POST /api/partner/api-keys": "partner",
    "POST /api/partner/auth/logout": "partner",
    "POST /api/partner/checkout/sessions": "partner",
    "POST /api/partner/checkout/sessions/{id}/test-payment": "partner",
    "POST /api/partner/events/{id}/redeliver": "partner",
    "POST /api/partner/members": "partner",
    "POST /api/partner/orders/{orderId}/fulfilment": "partner",
    "POST /api/partner/payments/{chainId}/{transactionHash}/{logIndex}/attach": "partner",
    "POST /api/partner/payments/{chainId}/{transactionHash}/{logIndex}/refund-requested": "partner",
    "POST /api/partner/webhook-endpoints": "partner",
    "POST /api/partner/webhook-endpoints/{id}/rotate-secret": "partner",
    "POST /api/partner/webhook-endpoints/{id}/test": "partner",
    "GET /api/partner/branding": "partner",
    "PATCH /api/partner/branding": "partner",
    "PUT /api/partner/branding/logo": "partner",
    "DELETE /api/partner/branding/logo": "partner",
    "GET /api/admin/partners/{id}/members": "admin",
    "GET /api/admin/relayed-authorizations": "admin",
    "POST /api/admin/partners/{id}/members": "admin",
    "GET /api/issuer/networks": "issuer",
    // An issuer refunds its RWA purchases (docs/refunds.md "Issuers") and sends them with its partner's refund routes.
    "GET /api/issuer/purchases/{purchaseId}/refunds": "issuer",
    "POST /api/issuer/purchases/{purchaseId}/refunds": "issuer",
    "GET /api/issuer/refunds": "issuer",
    "POST /api/issuer/refunds": "issuer",
    "GET /api/issuer/refunds/{id}": "issuer",
    "POST /api/issuer/refunds/{id}/cancel": "issuer",
    "GET /api/issuer/refunds/{id}/qr": "issuer",
    "POST /api/issuer/refunds/{id}/test-send": "issuer",
    "GET /api/issuer/refunds/{id}/authorization": "issuer",
    "POST /api/issuer/refunds/{id}/authorization": "issuer",
  };

  /** Routes on a resource that belongs to one issuer or one investor: others get 404, never the resource. */
  const OWNED_BY_ISSUER = [
    ...Object.keys(ACCESS).filter((route) => route.includes("/api/issuer/offerings/{id}")),
    "GET /api/issuer/purchases/{purchaseId}/refunds",
  ];
  const OWNED_BY_INVESTOR = [
    "GET /api/rwa/checkout/{id}",
    "POST /api/rwa/certificates/{purchaseId}/claim",
    "POST /api/rwa/settlements/wallet",
    "GET /api/rwa/settlements/authorization/{purchaseId}",
  ];

  let stack: TestStack;
  const tokens = {} as Record<Role | "otherIssuer" | "otherInvestor", string>;
  let offeringId: string;
  let purchaseId: string;
  const stranger = portalWallet().address;

  beforeAll(async () => {
    stack = sharedStack();
    tokens.admin = await signIn(stack, "admin", adminWallet(stack));
    tokens.issuer = (await registerIssuer(stack, tokens.admin, portalWallet(), "Issuer A")).token;
    tokens.otherIssuer = (await registerIssuer(stack, tokens.admin, portalWallet(), "Issuer B")).token;
    tokens.investor = await signIn(stack, "investor", accountWallet(stack, 1));
    tokens.otherInvestor = await signIn(stack, "investor", accountWallet(stack, 2));
    tokens.partner = await partnerMemberToken();
    offeringId = await openOffering(stack, { issuer: tokens.issuer, admin: tokens.admin });
    const purchase = await expectJson(
      await api(stack, "POST", "/api/rwa/checkout", { token: tokens.investor, json: { offeringId, units: 1 } }),
      201,
    );
    purchaseId = purchase.id;
  });
  afterAll(async () => {});

  /** A new member wallet of the demo partner, registered with the partner's API key, signed in. */
  async function partnerMemberToken(): Promise<string> {
    const member = portalWallet();
    await expectJson(await stack.partnerFetch("/v1/members", { method: "POST", json: { address: member.address } }), 201);
    return signIn(stack, "partner", member);
  }

  async function freshToken(role: Role): Promise<string> {
    if (role === "admin") return signIn(stack, "admin", adminWallet(stack));
    if (role === "partner") return partnerMemberToken();
    if (role === "investor") return signIn(stack, "investor", portalWallet());
    return (await registerIssuer(stack, tokens.admin, portalWallet(), "Issuer C")).token;
  }

  function concretePath(template: string): string {
    const values: Record<string, string> = {
      tokenId: "1",
      hash: `0x${"ab".repeat(32)}`,
      address: stranger,
      purchaseId,
      keyId: "key_unknown",
      chainId: "31337",
      transactionHash: `0x${"cd".repeat(32)}`,
      logIndex: "0",
    };
    let id = offeringId;
    if (template.startsWith("/api/rwa/checkout/")) id = purchaseId;
    if (template.startsWith("/api/admin/issuers/")) id = "iss_unknown";
    if (template.startsWith("/api/admin/partners/")) id = "ptr_unknown";
    return template.replace(/\{(\w+)\}/g, (_, name: string) => (name === "id" ? id : (values[name] as string)));
  }

  async function call(route: string, token?: string, json: unknown = {}) {
    const [method, template] = route.split(" ") as [string, string];
    const response = await api(stack, method, concretePath(template), {
      token,
      json: method === "GET" || method === "DELETE" ? undefined : json,
    });
    const text = await response.text();
    const code = response.headers.get("content-type")?.includes("json") && text ? JSON.parse(text).code : undefined;
    return { status: response.status, code: code as string | undefined, text };
  }

  describe("authorisation matrix", () => {
    it("lists every /api route of the OpenAPI document", async () => {
      const document = await expectJson(await api(stack, "GET", "/openapi.json"), 200);
      const routes = Object.entries(document.paths as Record<string, Record<string, unknown>>)
        .filter(([path]) => path.startsWith("/api/"))
        .flatMap(([path, operations]) => Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`));
      expect(routes.sort()).toEqual(Object.keys(ACCESS).sort());
      for (const route of routes) {
        const [method, path] = route.split(" ") as [string, string];
        const operation = (document.paths[path] as Record<string, { security?: unknown[] }>)[method.toLowerCase()];
        // Public operations say so with an empty list (`security: []`); protected ones name their scheme.
        expect((operation?.security?.length ?? 0) > 0, route).toBe(ACCESS[route] !== "public");
      }
    });

    it("refuses anonymous callers on every protected route with 401", async () => {
      for (const [route, access] of Object.entries(ACCESS)) {
        const { status, code } = await call(route);
        if (access === "public") expect([401, 403], `${route} is public`).not.toContain(status);
        else expect({ route, status, code }).toEqual({ route, status: 401, code: "unauthenticated" });
      }
    });

    it("refuses a session of another role on every protected route with 403", async () => {
      for (const [route, access] of Object.entries(ACCESS)) {
        if (access === "public") continue;
        for (const role of ["investor", "issuer", "admin"] as const) {
          if (role === access) continue;
          const { status, code } = await call(route, tokens[role]);
          expect({ route, role, status, code }).toEqual({ route, role, status: 403, code: "wrong_portal" });
        }
      }
    });

    it("hides one issuer's offerings from another issuer", async () => {
      for (const route of OWNED_BY_ISSUER) {
        const body = route.startsWith("PUT") ? offeringDraft(stack) : {};
        const { status, code } = await call(route, tokens.otherIssuer, body);
        expect({ route, status, code }).toEqual({ route, status: 404, code: "not_found" });
      }
    });

    it("hides one investor's purchases from another investor", async () => {
      for (const route of OWNED_BY_INVESTOR) {
        const body = route.includes("settlements") ? { purchaseId, transactionHash: `0x${"cd".repeat(32)}` } : {};
        const { status, code } = await call(route, tokens.otherInvestor, body);
        expect({ route, status, code }).toEqual({ route, status: 404, code: "not_found" });
      }
    });

    it("lets the right role through on every route", async () => {
      const denied = ["unauthenticated", "wrong_portal", "portal_not_allowed"];
      for (const [route, access] of Object.entries(ACCESS)) {
        if (access === "public") continue;
        // Logging out ends the session, so it gets a session of its own.
        const token = route.endsWith("/logout") ? await freshToken(access) : tokens[access];
        const body = route === "PUT /api/issuer/offerings/{id}" ? offeringDraft(stack) : {};
        const { status, code, text } = await call(route, token, body);
        expect(status, `${route}: ${text}`).not.toBe(401);
        expect(denied, `${route}: ${text}`).not.toContain(code);
        expect(status, `${route}: ${text}`).toBeLessThan(500);
      }
    });
  });
});
