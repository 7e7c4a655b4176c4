import { afterAll, beforeAll, describe, expect, it } from "vitest";
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
  stack = await startTestStack();
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
afterAll(async () => {
  await stack?.stop();
});

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
