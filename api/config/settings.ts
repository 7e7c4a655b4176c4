import type { Address, Hex } from "viem";

import type { ServiceConfig } from "./config.js";
import type { NetworkName } from "./networks.js";
import type { DispatcherOptions, PortalSettings, RelayLimits, RequestLimits, WatchdogSettings } from "./option-types.js";

/** Service-wide settings, from the configuration validated once at start (`config.ts`). */
export type ServiceSettings = {
  /** Local development: http and loopback webhook URLs allowed, test API keys. */
  localMode: boolean;
  /** Admin wallets of the compliance portal. */
  adminAddresses: Address[];
  /** The key that signs certificate vouchers (EIP-712); read from VOUCHER_KEY_FILE. */
  voucherPrivateKey: Hex | undefined;
  /** Public origin used in links we hand out (hosted checkout, EIP-681 fallback); empty: taken from the request. */
  publicBaseUrl: string | undefined;
  /** The index's Postgres schema: whose recorded start says which addresses are watched. */
  indexSchema: string;
  dispatcher: DispatcherOptions;
  portal: PortalSettings;
  /** Gasless relayer keys by network (`<NET>_RELAYER_KEY_FILE`). */
  relayerKeys: Partial<Record<NetworkName, Hex>>;
  requestLimits: RequestLimits;
  watchdog: WatchdogSettings;
  /** The API server's port from the environment, if set. */
  port: string | undefined;
  /** Gasless payment: a relayed transaction still unmined after this long is replaced with a higher fee. */
  relayerReplaceAfterMs: number;
  /** Gasless payment: health warns when a relayer holds less ETH than this (wei). */
  relayerLowBalanceWei: bigint;
  /** The relayer's limits per partner and session (docs/gasless.md, "Limits"). */
  relayLimits: RelayLimits;
};

export function settingsOf(config: ServiceConfig): ServiceSettings {
  return {
    localMode: config.localMode,
    adminAddresses: config.adminAddresses,
    voucherPrivateKey: config.voucherPrivateKey,
    publicBaseUrl: config.publicBaseUrl,
    indexSchema: config.recordedIndexSchema ?? config.databaseSchema,
    dispatcher: config.dispatcher,
    portal: config.portal,
    relayerKeys: config.relayerKeys,
    requestLimits: config.requestLimits,
    watchdog: config.watchdog,
    port: config.port,
    relayerReplaceAfterMs: config.relayerReplaceAfterMs,
    relayerLowBalanceWei: config.relayerLowBalanceWei,
    relayLimits: config.relayLimits,
  };
}
