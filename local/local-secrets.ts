import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Hex, toHex } from "viem";
import { generatePrivateKey, mnemonicToAccount, privateKeyToAccount } from "viem/accounts";
import { createSecretsKeyFileIfMissing } from "../api/outbox/secret-box.js";
import { generateApiKey } from "../api/partners/api-keys.js";
import { ANVIL_MNEMONIC } from "./anvil.js";

/**
 * Keys of a local stack, generated once per data directory and kept (mode 0600)
 * so that a second `npm start` reuses the same partner key and addresses.
 */
export type LocalSecrets = {
  demoApiKey: string;
  adminPrivateKey: Hex;
  voucherPrivateKey: Hex;
  /** Keys of the payment addresses, so that funds sent to them can be moved on. */
  paymentPrivateKeys: Hex[];
};

export const PAYMENT_ADDRESS_COUNT = 4;

export function loadOrCreateLocalSecrets(dataDir: string): LocalSecrets {
  const path = join(dataDir, "local-secrets.json");
  if (existsSync(path)) return JSON.parse(readFileSync(path, "utf8")) as LocalSecrets;
  const secrets: LocalSecrets = {
    demoApiKey: generateApiKey("test"),
    adminPrivateKey: generatePrivateKey(),
    voucherPrivateKey: generatePrivateKey(),
    paymentPrivateKeys: Array.from({ length: PAYMENT_ADDRESS_COUNT }, () => generatePrivateKey()),
  };
  writeFileSync(path, JSON.stringify(secrets, null, 2), { mode: 0o600 });
  return secrets;
}

export function voucherKeyFile(dataDir: string): string {
  return join(dataDir, "voucher.key");
}

/** The service reads its voucher key from a file; locally the stack writes it. */
export function writeVoucherKeyFile(dataDir: string, privateKey: Hex): string {
  const path = voucherKeyFile(dataDir);
  writeFileSync(path, `${privateKey}\n`, { mode: 0o600 });
  return path;
}

/**
 * The key that encrypts webhook secrets at rest (SECRETS_KEY_FILE); generated once
 * per data directory and kept, or the secrets already stored could not be read.
 */
export function ensureSecretsKeyFile(dataDir: string): string {
  return createSecretsKeyFileIfMissing(join(dataDir, "secrets.key"));
}

/** Anvil's funded development accounts. */
export function anvilAccounts(count = 10): { address: Hex; privateKey: Hex }[] {
  return Array.from({ length: count }, (_, addressIndex) => {
    const account = mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex });
    const privateKey = toHex(account.getHdKey().privateKey as Uint8Array);
    return { address: account.address, privateKey };
  });
}

export const addressOf = (privateKey: Hex) => privateKeyToAccount(privateKey).address;

/**
 * The local relayer of gasless payments: account 14 of Anvil's mnemonic, past the ten
 * funded accounts that tests and tools send from (so its nonces are its own) and past
 * the console's test accounts 10 to 13 (api/sign-in/test-identities.ts): until issue 40
 * it was account 10, the admin test account, so one key was both a portal admin and the
 * relayer. The stack gives it ETH at every start.
 */
export const LOCAL_RELAYER_ACCOUNT_INDEX = 14;

export function localRelayerAccount(): { address: Hex; privateKey: Hex } {
  const account = mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: LOCAL_RELAYER_ACCOUNT_INDEX });
  return { address: account.address, privateKey: toHex(account.getHdKey().privateKey as Uint8Array) };
}

/** `LOCAL_RELAYER_KEY_FILE`: 64 hex digits, like every key file. */
export function writeRelayerKeyFile(dataDir: string, privateKey: Hex): string {
  const path = join(dataDir, "relayer-local.key");
  writeFileSync(path, `${privateKey.slice(2)}\n`, { mode: 0o600 });
  return path;
}
