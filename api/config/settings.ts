import { readFileSync } from "node:fs";
import { type Address, getAddress, type Hex, isAddress, isHex } from "viem";
import { z } from "zod";

/** Service-wide settings from the environment, validated once at start. */
export type ServiceSettings = {
  /** Local development: http and loopback webhook URLs allowed, test API keys. */
  localMode: boolean;
  /** Admin wallets of the compliance portal. */
  adminAddresses: Address[];
  /** The key that signs certificate vouchers (EIP-712); read from VOUCHER_KEY_FILE. */
  voucherPrivateKey: Hex | undefined;
  /** Public origin used in links we hand out (hosted checkout, EIP-681 fallback); empty: taken from the request. */
  publicBaseUrl: string | undefined;
  /** Gasless payment: a relayed transaction still unmined after this long is replaced with a higher fee. */
  relayerReplaceAfterMs: number;
  /** Gasless payment: health warns when a relayer holds less ETH than this (wei). */
  relayerLowBalanceWei: bigint;
};

const settingsSchema = z.object({
  LOCAL_MODE: z.enum(["true", "false"]).default("false"),
  ADMIN_ADDRESSES: z.string().default(""),
  VOUCHER_KEY_FILE: z.string().optional(),
  PUBLIC_BASE_URL: z.string().url().optional(),
  RELAYER_REPLACE_AFTER_SECONDS: z.coerce.number().int().min(1).max(3600).default(30),
  // 0.002 ETH: some 400 relayed payments on Base at its usual fees.
  RELAYER_LOW_BALANCE_WEI: z
    .string()
    .regex(/^\d{1,30}$/, "a whole number of wei")
    .default("2000000000000000"),
});

export function loadSettings(env: NodeJS.ProcessEnv = process.env): ServiceSettings {
  const values = settingsSchema.parse(env);
  const adminAddresses = values.ADMIN_ADDRESSES.split(",")
    .map((item) => item.trim())
    .filter(Boolean);
  for (const address of adminAddresses) {
    if (!isAddress(address, { strict: false })) throw new Error(`ADMIN_ADDRESSES holds "${address}", which is not an address`);
  }
  let voucherPrivateKey: Hex | undefined;
  if (values.VOUCHER_KEY_FILE !== undefined) {
    const key = readFileSync(values.VOUCHER_KEY_FILE, "utf8").trim();
    if (!isHex(key) || key.length !== 66) throw new Error("VOUCHER_KEY_FILE must hold a 32-byte private key in hex");
    voucherPrivateKey = key;
  }
  return {
    localMode: values.LOCAL_MODE === "true",
    adminAddresses: adminAddresses.map((address) => getAddress(address)),
    voucherPrivateKey,
    publicBaseUrl: values.PUBLIC_BASE_URL?.replace(/\/$/, ""),
    relayerReplaceAfterMs: values.RELAYER_REPLACE_AFTER_SECONDS * 1000,
    relayerLowBalanceWei: BigInt(values.RELAYER_LOW_BALANCE_WEI),
  };
}
