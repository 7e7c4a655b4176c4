import { type Address, getAddress } from "viem";
import type { AppContext } from "../app-context.js";
import { type CheckoutSession, sessionOwners } from "../checkout/session-record.js";
import { networkByChainId } from "../config/enabled-networks.js";
import type { Store } from "../store/open-store.js";
import type { RelayedAuthorizationTable } from "../store/relay-tables.js";
import { paymentTypedDataForWallet, readTokenDomain } from "./eip3009.js";
import {
  authorizationOfTransaction,
  latestAuthorizationOfSession,
  latestAuthorizations,
} from "./relayed-authorization-record.js";
import { relayerOf } from "./relayer.js";

/** The relay of one authorization as partners, admins and the customer's page see it (never the signature). */
export function relayView(row: RelayedAuthorizationTable) {
  return {
    id: row.id,
    status: row.status,
    from: getAddress(row.from_address),
    transactionHash: row.transaction_hash,
    replacedTransactions: (JSON.parse(row.transaction_hashes) as string[]).filter((hash) => hash !== row.transaction_hash),
    relayer: row.relayer_address === null ? null : getAddress(row.relayer_address),
    gasUsed: row.gas_used,
    effectiveGasPrice: row.effective_gas_price,
    /** What relaying cost the service, in wei of ETH. */
    gasCostWei: row.gas_cost_wei,
    failure: row.failure_code === null ? null : { code: row.failure_code, detail: row.failure_detail },
    submittedAt: row.submitted_at === null ? null : new Date(Number(row.submitted_at)).toISOString(),
  };
}

/**
 * `gasless` of a session read: whether the customer may pay by signature, the EIP-712
 * domain the wallet must sign against (read from the token itself), when the payer's
 * wallet is known the typed data it signs (`paymentTypedDataForWallet`), and the latest
 * relayed authorization with its outcome (a failed relay is reported here).
 */
export async function gaslessSessionView(context: AppContext, session: CheckoutSession, payer?: Address) {
  return gaslessViewOf(context, session, await latestAuthorizationOfSession(context.store, session.id), payer);
}

/** `gasless` of a session whose latest relayed authorization was read with it (`sessionWithSurroundings`). */
export async function gaslessViewOf(
  context: AppContext,
  session: CheckoutSession,
  latest: RelayedAuthorizationTable | undefined,
  payer?: Address,
) {
  const network = networkByChainId(context, session.chainId);
  const relayer = network === undefined ? undefined : relayerOf(context, network, context.store);
  const domain =
    relayer === undefined || session.status !== "awaiting_payment"
      ? null
      : await readTokenDomain(relayer.client, { token: session.tokenAddress, chainId: session.chainId }).catch(() => null);
  return {
    gasless: {
      available: domain !== null,
      domain,
      typedData: domain === null || payer === undefined ? null : paymentTypedDataForWallet(domain, session, payer),
      authorization: latest === undefined ? null : relayView(latest),
    },
  };
}

/** The relay behind a credited transfer, if it was a gasless payment (gas spent per payment). */
export async function relayOfTransaction(store: Store, params: { chainId: number; transactionHash: string }) {
  const row = await authorizationOfTransaction(store, params);
  return row === undefined ? null : relayView(row);
}

/** Each relayer's address and ETH balance, for `/v1/health`. */
export async function relayerHealth(context: AppContext) {
  return Promise.all(
    context.networks.flatMap((network) => {
      const relayer = relayerOf(context, network, context.store);
      if (relayer === undefined) return [];
      return [
        relayer.client
          .getBalance({ address: relayer.address })
          .then((balance) => ({ balance, error: undefined as string | undefined }))
          .catch((error: unknown) => ({ balance: undefined, error: String(error) }))
          .then(({ balance }) => {
            const low = balance === undefined || balance < context.settings.relayerLowBalanceWei;
            const floor = context.settings.relayLimits.balanceFloorWei;
            return {
              network: network.name,
              chainId: network.chainId,
              address: relayer.address,
              balanceWei: balance?.toString() ?? null,
              lowBalanceWei: context.settings.relayerLowBalanceWei.toString(),
              lowBalance: low,
              balanceFloorWei: floor.toString(),
              /** Under the floor, health is `degraded` (issue 24): gasless payments are about to fail for everyone. */
              belowFloor: balance !== undefined && balance < floor,
              warning: low
                ? balance === undefined
                  ? "The relayer's balance could not be read."
                  : "The relayer is low on ETH: top it up or gasless payments will be refused (relayer_out_of_funds)."
                : null,
            };
          }),
      ];
    }),
  );
}

/** Every relayed authorization, newest first, with the partner and order of its session (the admin's list). */
export async function listRelays(store: Store, params: { status?: RelayedAuthorizationTable["status"]; limit: number }) {
  const relays = await latestAuthorizations(store, params);
  // Each relay's session names its partner and order (every relay has its session: a foreign key).
  const owners = await sessionOwners(
    store,
    relays.map((relay) => relay.session_id),
  );
  return relays.flatMap((relay) => {
    const owner = owners.get(relay.session_id);
    return owner === undefined ? [] : [{ ...relay, partner_id: owner.partnerId, order_id: owner.orderId }];
  });
}
