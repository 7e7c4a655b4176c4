import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import { existsSync, writeFileSync } from "node:fs";
import { readKeyFile } from "../config/config.js";

/**
 * Webhook signing secrets must be read back to sign each delivery, so unlike API
 * keys they cannot be stored hashed. They are stored AES-256-GCM encrypted under a
 * key that lives outside the store (a file named by `SECRETS_KEY_FILE`), so a copy
 * of the database alone reveals no secret.
 *
 * Stored form: `v1.<key id>.<iv>.<tag>.<ciphertext>` (base64url parts). The key id
 * (first 8 hex of SHA-256 of the key) says which key sealed a value, so the key can
 * be replaced later by re-sealing. The row id is the additional authenticated data:
 * a sealed secret copied onto another endpoint row does not open.
 */
export type SecretBox = {
  seal: (plaintext: string, context: string) => string;
  open: (sealed: string, context: string) => string;
};

export function createSecretBox(key: Buffer): SecretBox {
  if (key.length !== 32) throw new Error("the secrets key must be 32 bytes");
  const keyId = createHash("sha256").update(key).digest("hex").slice(0, 8);
  return {
    seal(plaintext, context) {
      const iv = randomBytes(12);
      const cipher = createCipheriv("aes-256-gcm", key, iv);
      cipher.setAAD(Buffer.from(context));
      const ciphertext = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
      const tag = cipher.getAuthTag();
      return ["v1", keyId, iv.toString("base64url"), tag.toString("base64url"), ciphertext.toString("base64url")].join(".");
    },
    open(sealed, context) {
      const [version, sealedKeyId, iv, tag, ciphertext] = sealed.split(".");
      if (version !== "v1" || iv === undefined || tag === undefined || ciphertext === undefined) {
        throw new Error("a sealed secret has an unknown format");
      }
      if (sealedKeyId !== keyId) throw new Error(`a secret was sealed with key ${sealedKeyId}, not the configured key ${keyId}`);
      // The tag length is fixed: without it GCM accepts a tag cut to 4 bytes, which a forger needs far fewer tries to match.
      const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(iv, "base64url"), { authTagLength: 16 });
      decipher.setAAD(Buffer.from(context));
      decipher.setAuthTag(Buffer.from(tag, "base64url"));
      return Buffer.concat([decipher.update(Buffer.from(ciphertext, "base64url")), decipher.final()]).toString("utf8");
    },
  };
}

/** 32 random bytes in hex, the content of a secrets key file. */
export function generateSecretsKey(): string {
  return randomBytes(32).toString("hex");
}

/** Writes a new key file (mode 0600) unless one exists; the one that exists always wins. */
export function createSecretsKeyFileIfMissing(path: string): string {
  if (existsSync(path)) return path;
  try {
    writeFileSync(path, `${generateSecretsKey()}\n`, { mode: 0o600, flag: "wx" });
  } catch (error) {
    // Another process wrote it first: use theirs.
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
  return path;
}

/** Reads a key file in the one key-file format: 64 hex digits, with or without `0x`. */
export function readSecretsKeyFile(path: string): Buffer {
  const key = readKeyFile("SECRETS_KEY_FILE", path);
  if ("problem" in key) throw new Error(key.problem);
  return Buffer.from(key.key.slice(2), "hex");
}
