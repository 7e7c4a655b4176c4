import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createSecretBox,
  createSecretsKeyFileIfMissing,
  generateSecretsKey,
  readSecretsKeyFile,
} from "../../api/outbox/secret-box.js";
import { generateWebhookSecret, signingSecrets } from "../../api/outbox/webhook-endpoints.js";
import {
  apiKeyModeFor,
  createPartner,
  findApiKeyOfPartner,
  findKeyHolder,
  generateApiKey,
  hashApiKey,
  issueApiKey,
  issueAuditorKey,
  markApiKeyRevoked,
  revokeAuditorKey,
} from "../../api/partners/api-keys.js";
import type { Store } from "../../api/store/open-store.js";
import type { WebhookEndpointTable } from "../../api/store/webhook-tables.js";
import { unitStore } from "../support/unit-store.js";

// Issue 25: secrets at rest and API keys, as functions (and on a real SQLite store
// for the key records), without a stack.
const KEY = Buffer.alloc(32, 7);
const box = createSecretBox(KEY);

/** A sealed value with one of its five dot-separated parts replaced. */
function withPart(sealed: string, index: number, change: (part: string) => string): string {
  const parts = sealed.split(".");
  parts[index] = change(parts[index] as string);
  return parts.join(".");
}

const flipFirstByte = (part: string) => {
  const bytes = Buffer.from(part, "base64url");
  bytes[0] = (bytes[0] as number) ^ 0x01;
  return bytes.toString("base64url");
};

describe("secret box", () => {
  it("names its key by the first 8 hex digits of the key's SHA-256", () => {
    const keyId = createHash("sha256").update(KEY).digest("hex").slice(0, 8);
    const parts = box.seal("whsec_x", "we_1").split(".");
    expect(parts).toHaveLength(5);
    expect(parts[0]).toBe("v1");
    expect(parts[1]).toBe(keyId);
    // A 96-bit IV and a 128-bit tag.
    expect([Buffer.from(parts[2] as string, "base64url").length, Buffer.from(parts[3] as string, "base64url").length]).toEqual([
      12, 16,
    ]);
  });

  it.each([
    ["an empty secret", ""],
    ["a webhook secret", "whsec_0123456789"],
    ["non-ASCII text", "sécret ✓ 秘密"],
    ["a long secret", "x".repeat(10_000)],
  ])("opens what it sealed: %s", (_case, plaintext) => {
    expect(box.open(box.seal(plaintext, "we_1"), "we_1")).toBe(plaintext);
  });

  it("opens a sealed value with a second box built from the same key bytes (a restart)", () => {
    expect(createSecretBox(Buffer.from(KEY)).open(box.seal("whsec_a", "we_1"), "we_1")).toBe("whsec_a");
  });

  it.each([
    ["the IV", 2],
    ["the tag", 3],
    ["the ciphertext", 4],
  ])("refuses a value whose %s was changed", (_case, index) => {
    const sealed = box.seal("whsec_tamper", "we_1");
    expect(() => box.open(withPart(sealed, index, flipFirstByte), "we_1")).toThrow(/unable to authenticate data/);
  });

  it("refuses a tag cut short, which GCM would otherwise accept", () => {
    const sealed = box.seal("whsec_short", "we_1");
    const cut = withPart(sealed, 3, (tag) => Buffer.from(tag, "base64url").subarray(0, 8).toString("base64url"));
    expect(() => box.open(cut, "we_1")).toThrow(/authentication tag length/);
  });

  it("refuses a value sealed for another endpoint row", () => {
    expect(() => box.open(box.seal("whsec_row", "we_1"), "we_10")).toThrow(/unable to authenticate data/);
  });

  it("names both key ids when a value was sealed under another key", () => {
    const other = createSecretBox(Buffer.alloc(32, 8));
    const sealed = other.seal("whsec_k", "we_1");
    const [, sealedId] = sealed.split(".");
    const configuredId = box.seal("x", "y").split(".")[1];
    expect(() => box.open(sealed, "we_1")).toThrow(
      `a secret was sealed with key ${sealedId}, not the configured key ${configuredId}`,
    );
  });

  it.each([
    ["another version", (sealed: string) => withPart(sealed, 0, () => "v2")],
    ["a missing part", (sealed: string) => sealed.split(".").slice(0, 4).join(".")],
    ["plain text", () => "whsec_stored_in_clear"],
  ])("refuses %s as an unknown format", (_case, change) => {
    expect(() => box.open(change(box.seal("whsec_f", "we_1")), "we_1")).toThrow("a sealed secret has an unknown format");
  });

  it.each([0, 16, 31, 33, 64])("refuses a key of %i bytes", (length) => {
    expect(() => createSecretBox(Buffer.alloc(length))).toThrow("the secrets key must be 32 bytes");
  });
});

describe("secrets key file", () => {
  let directory: string;
  beforeAll(() => {
    directory = mkdtempSync(join(tmpdir(), "cfg-secrets-"));
  });
  afterAll(() => rmSync(directory, { recursive: true, force: true }));

  it("generates 64 lower-case hex digits, new each time", () => {
    const first = generateSecretsKey();
    expect(first).toMatch(/^[0-9a-f]{64}$/);
    expect(generateSecretsKey()).not.toBe(first);
  });

  it("writes a key file readable only by its owner, which the key-file reader accepts", () => {
    const path = join(directory, "new.key");
    expect(createSecretsKeyFileIfMissing(path)).toBe(path);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const text = readFileSync(path, "utf8");
    expect(text).toMatch(/^[0-9a-f]{64}\n$/);
    expect(readSecretsKeyFile(path).toString("hex")).toBe(text.trim());
  });

  it("keeps the key file that exists", () => {
    const path = join(directory, "existing.key");
    writeFileSync(path, `0x${"12".repeat(32)}`);
    createSecretsKeyFileIfMissing(path);
    expect(readFileSync(path, "utf8")).toBe(`0x${"12".repeat(32)}`);
    expect(readSecretsKeyFile(path)).toEqual(Buffer.alloc(32, 0x12));
  });

  it("throws the configuration's problem for a file that is not a key", () => {
    const path = join(directory, "bad.key");
    writeFileSync(path, "not a key");
    expect(() => readSecretsKeyFile(path)).toThrow(
      `SECRETS_KEY_FILE: ${path} must hold 64 hex digits (32 bytes), with or without 0x`,
    );
  });
});

describe("signing secrets of an endpoint", () => {
  const NOW = 1_800_000_000_000;
  const row = (previous: { secret: string; expiresAt: number } | undefined): WebhookEndpointTable => ({
    id: "we_sign",
    partner_id: "ptr_a",
    url: "https://hooks.example/x",
    events_json: '["*"]',
    secret_ciphertext: box.seal("whsec_current", "we_sign"),
    previous_secret_ciphertext: previous === undefined ? null : box.seal(previous.secret, "we_sign"),
    previous_secret_expires_at: previous?.expiresAt ?? null,
    created_at: NOW,
    updated_at: NOW,
    deleted_at: null,
  });

  it.each([
    ["no rotation: the current secret only", undefined, ["whsec_current"]],
    ["a rotation under way: current, then previous", { secret: "whsec_old", expiresAt: NOW + 1 }, ["whsec_current", "whsec_old"]],
    ["the previous secret's last instant is over", { secret: "whsec_old", expiresAt: NOW }, ["whsec_current"]],
    ["the previous secret expired long ago", { secret: "whsec_old", expiresAt: NOW - 86_400_000 }, ["whsec_current"]],
  ])("%s", (_case, previous, expected) => {
    expect(signingSecrets(row(previous), box, NOW)).toEqual(expected);
  });

  it("generates webhook secrets as whsec_ and 32 random bytes in base64url", () => {
    const secret = generateWebhookSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(secret.slice(6), "base64url")).toHaveLength(32);
    expect(generateWebhookSecret()).not.toBe(secret);
  });
});

describe("API key format", () => {
  it("hashes a key to the hex SHA-256 of its text", () => {
    expect(hashApiKey("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    expect(hashApiKey("sk_test_a")).not.toBe(hashApiKey("sk_test_b"));
  });

  it.each([
    ["local mode on Base", { localMode: true, networks: [{ name: "base" }] }, "test"],
    ["Base mainnet outside local mode", { localMode: false, networks: [{ name: "base" }] }, "live"],
    ["Base Sepolia only", { localMode: false, networks: [{ name: "base-sepolia" }] }, "test"],
    ["the local chain only", { localMode: false, networks: [{ name: "local" }] }, "test"],
    ["Base beside a test network", { localMode: false, networks: [{ name: "base-sepolia" }, { name: "base" }] }, "live"],
    ["no network", { localMode: false, networks: [] }, "test"],
  ])("a key issued with %s is a %s key", (_case, params, mode) => {
    expect(apiKeyModeFor(params)).toBe(mode);
  });

  it.each([
    ["test", "full", "sk_test_"],
    ["live", "full", "sk_live_"],
    ["test", "read", "rk_test_"],
    ["live", "read", "rk_live_"],
    ["live", "auditor", "ak_live_"],
  ] as const)("a %s %s key starts %s and carries 32 random bytes", (mode, scope, prefix) => {
    const key = generateApiKey(mode, scope);
    expect(key.startsWith(prefix)).toBe(true);
    expect(Buffer.from(key.slice(prefix.length), "base64url")).toHaveLength(32);
    expect(key.slice(prefix.length)).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it("makes a full key when no scope is named", () => {
    expect(generateApiKey("test")).toMatch(/^sk_test_/);
  });
});

describe("API key records", () => {
  let store: Store;
  let close: () => Promise<void>;
  beforeAll(async () => {
    ({ store, close } = await unitStore());
    await createPartner(store, { id: "ptr_a", name: "A" });
    await createPartner(store, { id: "ptr_b", name: "B" });
  });
  afterAll(() => close());

  it("stores the key's hash and its first 12 characters, never the key", async () => {
    const issued = await issueApiKey(store, { partnerId: "ptr_a", mode: "test", now: 1_000 });
    const row = await store.selectFrom("api_key").selectAll().where("id", "=", issued.id).executeTakeFirstOrThrow();
    expect(row).toMatchObject({
      partner_id: "ptr_a",
      key_hash: hashApiKey(issued.apiKey),
      key_prefix: issued.apiKey.slice(0, 12),
      scope: "full",
      revoked_at: null,
    });
    expect(Number(row.created_at)).toBe(1_000);
    expect(JSON.stringify(row)).not.toContain(issued.apiKey);
  });

  it("finds the partner and scope of a live key, and nobody for an unknown one", async () => {
    const full = await issueApiKey(store, { partnerId: "ptr_a", mode: "test" });
    const read = await issueApiKey(store, { partnerId: "ptr_a", mode: "test", scope: "read" });
    expect(await findKeyHolder(store, full.apiKey)).toEqual({
      kind: "partner",
      partner: { id: "ptr_a", name: "A" },
      scope: "full",
      keyId: full.id,
    });
    expect(read.apiKey).toMatch(/^rk_test_/);
    expect(await findKeyHolder(store, read.apiKey)).toMatchObject({ kind: "partner", scope: "read", keyId: read.id });
    expect(await findKeyHolder(store, `${full.apiKey}x`)).toBeUndefined();
  });

  it("revokes a key once: the second revocation changes nothing and the key no longer authenticates", async () => {
    const issued = await issueApiKey(store, { partnerId: "ptr_a", mode: "test" });
    expect(await markApiKeyRevoked(store, { keyId: issued.id, now: 5_000 })).toBe(true);
    expect(await markApiKeyRevoked(store, { keyId: issued.id, now: 6_000 })).toBe(false);
    expect(await findKeyHolder(store, issued.apiKey)).toBeUndefined();
    expect(await findApiKeyOfPartner(store, { partnerId: "ptr_a", keyId: issued.id })).toEqual({
      id: issued.id,
      scope: "full",
      revoked_at: 5_000,
    });
  });

  it("does not show one partner another partner's key", async () => {
    const issued = await issueApiKey(store, { partnerId: "ptr_b", mode: "test" });
    expect(await findApiKeyOfPartner(store, { partnerId: "ptr_a", keyId: issued.id })).toBeUndefined();
    expect(await findApiKeyOfPartner(store, { partnerId: "ptr_b", keyId: issued.id })).toMatchObject({ id: issued.id });
  });

  it("an auditor key authenticates as an auditor until revoked", async () => {
    const issued = await issueAuditorKey(store, { mode: "live", label: "books 2026" });
    expect(issued.apiKey).toMatch(/^ak_live_/);
    expect(await findKeyHolder(store, issued.apiKey)).toEqual({ kind: "auditor", keyId: issued.id });
    expect(await revokeAuditorKey(store, { keyId: issued.id })).toBe(true);
    expect(await revokeAuditorKey(store, { keyId: issued.id })).toBe(false);
    expect(await findKeyHolder(store, issued.apiKey)).toBeUndefined();
  });
});
