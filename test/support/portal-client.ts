import { type Address, type Hex, isAddressEqual } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import type { TestStack } from "./test-stack.js";

/** A portal: `partner` signs in member wallets of a partner (the console's fourth role). */
export type Role = "investor" | "issuer" | "admin" | "partner";

/** A wallet that signs in to the portals with real EIP-191 signatures. */
export type PortalWallet = { address: Address; privateKey: Hex; sign: (message: string) => Promise<Hex> };

export function portalWallet(privateKey: Hex = generatePrivateKey()): PortalWallet {
  const account = privateKeyToAccount(privateKey);
  return { address: account.address, privateKey, sign: (message) => account.signMessage({ message }) };
}

/** fetch against the service with an optional portal token and JSON body. */
export async function api(
  stack: TestStack,
  method: string,
  path: string,
  options: { token?: string; json?: unknown; headers?: Record<string, string> } = {},
): Promise<Response> {
  const headers = new Headers(options.headers);
  if (options.token !== undefined) headers.set("Authorization", `Bearer ${options.token}`);
  if (options.json !== undefined) headers.set("Content-Type", "application/json");
  return fetch(`${stack.ponder.baseUrl}${path}`, {
    method,
    headers,
    body: options.json === undefined ? undefined : JSON.stringify(options.json),
  });
}

/** The JSON of a response, failing with its body when the status is not the expected one. */
// biome-ignore lint/suspicious/noExplicitAny: tests read loosely typed answers and assert their shape
export async function expectJson<body = any>(response: Response, status: number): Promise<body> {
  const text = await response.text();
  if (response.status !== status) throw new Error(`expected ${status}, got ${response.status}: ${text}`);
  return (text === "" ? undefined : JSON.parse(text)) as body;
}

export async function challenge(stack: TestStack, role: Role, address: Address, chainId?: number) {
  return expectJson<{ message: string; nonce: string; expiresAt: string }>(
    await api(stack, "POST", `/api/${role}/auth/challenge`, { json: { address, chainId } }),
    200,
  );
}

/** Challenge, sign, verify: a session token for `role`. */
export async function signIn(stack: TestStack, role: Role, wallet: PortalWallet): Promise<string> {
  const { message } = await challenge(stack, role, wallet.address);
  const signature = await wallet.sign(message);
  const session = await expectJson<{ token: string; address: string; role: string }>(
    await api(stack, "POST", `/api/${role}/auth/verify`, { json: { message, signature } }),
    200,
  );
  if (session.role !== role || !isAddressEqual(session.address as Address, wallet.address)) throw new Error("wrong session");
  return session.token;
}

export const adminWallet = (stack: TestStack) => portalWallet(stack.local.admin.privateKey as Hex);
export const accountWallet = (stack: TestStack, index: number) => portalWallet(stack.local.accounts[index]!.privateKey as Hex);

/** Registers `wallet` as an issuer (through the admin portal) and signs it in. */
export async function registerIssuer(stack: TestStack, adminToken: string, wallet: PortalWallet, name: string) {
  const issuer = await expectJson<{ id: string; partnerId: string }>(
    await api(stack, "POST", "/api/admin/issuers", { token: adminToken, json: { address: wallet.address, name } }),
    201,
  );
  return { issuer, token: await signIn(stack, "issuer", wallet) };
}

export function offeringDraft(stack: TestStack, overrides: Record<string, unknown> = {}) {
  return {
    name: "Harbour Logistics Note 2031",
    description: "Senior secured note financing a container terminal.",
    network: "local",
    unitPriceUsdc: "1000000",
    minUnits: 1,
    maxUnitsPerInvestor: 100,
    totalUnits: 1000,
    opensAt: new Date(Date.now() - 60_000).toISOString(),
    closesAt: new Date(Date.now() + 30 * 24 * 3600_000).toISOString(),
    settlementAddress: stack.deployment.paymentAddresses[1],
    certificate: { enabled: true },
    eligibility: { requireKyc: false },
    ...overrides,
  };
}

/** Draft → submit → approve: an open offering's id. */
export async function openOffering(
  stack: TestStack,
  tokens: { issuer: string; admin: string },
  overrides: Record<string, unknown> = {},
): Promise<string> {
  const draft = await expectJson<{ id: string }>(
    await api(stack, "POST", "/api/issuer/offerings", { token: tokens.issuer, json: offeringDraft(stack, overrides) }),
    201,
  );
  await expectJson(await api(stack, "POST", `/api/issuer/offerings/${draft.id}/submit`, { token: tokens.issuer }), 200);
  await expectJson(await api(stack, "POST", `/api/admin/offerings/${draft.id}/approve`, { token: tokens.admin }), 200);
  return draft.id;
}
