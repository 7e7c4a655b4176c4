import { hostname } from "node:os";
import {
  type Account,
  type Address,
  BaseError,
  createWalletClient,
  encodeFunctionData,
  type Hex,
  http,
  type PublicClient,
  type WalletClient,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import type { AppContext } from "../app-context.js";
import type { NetworkConfig } from "../config/networks.js";
import type { Store } from "../store/open-store.js";
import type { RelayedAuthorizationTable } from "../store/relay-tables.js";
import { eip3009Abi } from "./eip3009.js";
import { assertRelayAllowed, type RelayCharge, recordRelayCharge } from "./relay-charges.js";

/**
 * One relayer per network: the key in `<NET>_RELAYER_KEY_FILE` pays the gas of
 * `transferWithAuthorization`. Its nonces are serialised twice: one promise queue
 * in this process, and a lease row in the store so that API replicas sharing the
 * key never send two transactions with one nonce.
 */
export type Relayer = {
  network: NetworkConfig;
  address: Address;
  account: Account;
  wallet: WalletClient;
  client: PublicClient;
  /** Runs `task` after every earlier task of this relayer, holding its store lease. */
  exclusive: <result>(task: (lease: { nextNonce: number }) => Promise<{ result: result; nextNonce?: number }>) => Promise<result>;
};

const LEASE_TTL_MS = 30_000;
const LEASE_WAIT_MS = 15_000;
const holderId = `${hostname()}:${process.pid}`;
const relayers = new Map<number, Relayer>();

/** The relayer of a network, or undefined when gasless payment is off there (no key configured). */
export function relayerOf(context: Pick<AppContext, "rpc">, network: NetworkConfig, store: Store): Relayer | undefined {
  if (network.relayerPrivateKey === undefined) return undefined;
  const existing = relayers.get(network.chainId);
  if (existing !== undefined) return existing;
  const client = context.rpc.get(network.chainId);
  if (client === undefined) return undefined;
  const account = privateKeyToAccount(network.relayerPrivateKey);
  const wallet = createWalletClient({ account, transport: http(network.rpcUrl, { retryCount: 1, timeout: 10_000 }) });
  let tail: Promise<unknown> = Promise.resolve();
  const leaseId = `${network.chainId}:${account.address.toLowerCase()}`;
  const relayer: Relayer = {
    network,
    address: account.address,
    account,
    wallet,
    client,
    exclusive(task) {
      const run = tail.then(async () => {
        const lease = await acquireLease(store, leaseId);
        let nextNonce = lease.nextNonce;
        try {
          const outcome = await task(lease);
          if (outcome.nextNonce !== undefined) nextNonce = Math.max(nextNonce, outcome.nextNonce);
          return outcome.result;
        } finally {
          await releaseLease(store, leaseId, nextNonce);
        }
      });
      tail = run.catch(() => undefined);
      return run;
    },
  };
  relayers.set(network.chainId, relayer);
  return relayer;
}

async function acquireLease(store: Store, id: string): Promise<{ nextNonce: number }> {
  const deadline = Date.now() + LEASE_WAIT_MS;
  for (;;) {
    const now = Date.now();
    await store
      .insertInto("relayer_lease")
      .values({ id, holder: holderId, expires_at: now + LEASE_TTL_MS, next_nonce: 0, updated_at: now })
      .onConflict((oc) =>
        oc
          .column("id")
          .doUpdateSet({ holder: holderId, expires_at: now + LEASE_TTL_MS, updated_at: now })
          .where((eb) => eb.or([eb("relayer_lease.expires_at", "<", now), eb("relayer_lease.holder", "=", holderId)])),
      )
      .execute();
    const lease = await store.selectFrom("relayer_lease").selectAll().where("id", "=", id).executeTakeFirstOrThrow();
    if (lease.holder === holderId && Number(lease.expires_at) === now + LEASE_TTL_MS) return { nextNonce: lease.next_nonce };
    if (Date.now() > deadline) throw new Error(`relayer lease ${id} is held by ${lease.holder}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function releaseLease(store: Store, id: string, nextNonce: number) {
  await store
    .updateTable("relayer_lease")
    .set({ expires_at: 0, next_nonce: nextNonce, updated_at: Date.now() })
    .where("id", "=", id)
    .where("holder", "=", holderId)
    .execute();
}

/** Why a relay did not happen, recorded on the authorization and shown on the session. */
export class RelayFailure extends Error {
  override name = "RelayFailure";
  constructor(
    readonly code: "relayer_out_of_funds" | "authorization_rejected_on_chain" | "relay_failed",
    detail: string,
  ) {
    super(detail);
  }
}

const authorizationArgs = (row: RelayedAuthorizationTable) =>
  [
    row.from_address as Address,
    row.to_address as Address,
    BigInt(row.value),
    BigInt(row.valid_after),
    BigInt(row.valid_before),
    row.nonce as Hex,
    row.signature as Hex,
  ] as const;

function shortReason(error: unknown): string {
  if (error instanceof BaseError) return error.shortMessage;
  return String(error);
}

export type SentTransaction = {
  hash: Hex;
  nonce: number;
  gasLimit: bigint;
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
};

/** A contract call for the relayer to send: the target and its encoded calldata. */
export type RelayedCall = { to: Address; data: Hex };

/**
 * THE entry of every transaction the relayer sends (docs/gasless.md, "Limits"): a
 * gasless payment today, refund sends and reward claims tomorrow. Inside the
 * relayer's lease (one sender at a time, across processes) it simulates the call (a
 * call that would revert is never sent), prices it, checks the charge against the
 * partner's quotas and daily gas budget (`assertRelayAllowed`), refuses when the
 * relayer cannot pay the gas, signs with the next nonce, sends, and records the
 * charge, so concurrent calls count each other. Refusals of the limits are problems
 * (`isRelayLimitRefusal`); the relayer's own failures are `RelayFailure`s.
 */
export function relayContractCall(
  context: Pick<AppContext, "store" | "settings">,
  relayer: Relayer,
  params: { charge: RelayCharge; call: RelayedCall },
): Promise<SentTransaction> {
  const { charge, call } = params;
  return relayer.exclusive(async (lease) => {
    const { client } = relayer;
    let gas: bigint;
    try {
      gas = await client.estimateGas({ account: relayer.account, to: call.to, data: call.data });
    } catch (error) {
      if (/insufficient funds/i.test(String(error))) {
        throw new RelayFailure("relayer_out_of_funds", "The relayer has no ETH left to pay the network fee.");
      }
      throw new RelayFailure("authorization_rejected_on_chain", `The token refuses this authorization: ${shortReason(error)}`);
    }
    const fees = await client.estimateFeesPerGas();
    const gasLimit = (gas * 12n) / 10n;
    const maxCost = gasLimit * fees.maxFeePerGas;
    await assertRelayAllowed(context.store, context.settings.relayLimits, { ...charge, estimatedCostWei: maxCost });
    const balance = await client.getBalance({ address: relayer.address });
    if (balance < maxCost) {
      throw new RelayFailure(
        "relayer_out_of_funds",
        `The relayer holds ${balance} wei, less than the ${maxCost} wei this transaction may cost.`,
      );
    }
    const chainNonce = await client.getTransactionCount({ address: relayer.address, blockTag: "pending" });
    const nonce = Math.max(chainNonce, lease.nextNonce);
    let hash: Hex;
    try {
      hash = await relayer.wallet.sendTransaction({
        account: relayer.account,
        chain: null,
        to: call.to,
        data: call.data,
        nonce,
        gas: gasLimit,
        maxFeePerGas: fees.maxFeePerGas,
        maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
      });
    } catch (error) {
      if (/insufficient funds/i.test(String(error))) {
        throw new RelayFailure("relayer_out_of_funds", "The relayer has no ETH left to pay the network fee.");
      }
      throw new RelayFailure("relay_failed", `The transaction could not be sent: ${shortReason(error)}`);
    }
    await recordRelayCharge(context.store, { ...charge, transactionHash: hash, reservedWei: maxCost });
    const sent = { hash, nonce, gasLimit, maxFeePerGas: fees.maxFeePerGas, maxPriorityFeePerGas: fees.maxPriorityFeePerGas };
    return { result: sent, nextNonce: nonce + 1 };
  });
}

/**
 * Sends `transferWithAuthorization` for a stored authorization through the relayer's
 * one entry (`relayContractCall`), charged to the session's partner.
 */
export function sendAuthorization(
  context: Pick<AppContext, "store" | "settings">,
  relayer: Relayer,
  row: RelayedAuthorizationTable,
  charge: Omit<RelayCharge, "chainId" | "purpose">,
): Promise<SentTransaction> {
  const data = encodeFunctionData({ abi: eip3009Abi, functionName: "transferWithAuthorization", args: authorizationArgs(row) });
  return relayContractCall(context, relayer, {
    charge: { ...charge, chainId: row.chain_id, purpose: "payment" },
    call: { to: row.token_address as Address, data },
  });
}

/**
 * Sends the same authorization again with the same nonce and at least 25% higher
 * fees (nodes want 10% or more to replace), so a transaction stuck under a fee
 * spike is replaced rather than joined by a second one.
 */
export function replaceStuckTransaction(relayer: Relayer, row: RelayedAuthorizationTable): Promise<SentTransaction | undefined> {
  return relayer.exclusive(async () => {
    const nonce = row.relayer_nonce as number;
    const mined = await relayer.client.getTransactionCount({ address: relayer.address, blockTag: "latest" });
    if (mined > nonce) return { result: undefined };
    const current = await relayer.client.estimateFeesPerGas();
    const bump = (previous: string | null, now: bigint) => {
      const raised = ((previous === null ? 0n : BigInt(previous)) * 125n) / 100n + 1n;
      return raised > now ? raised : now;
    };
    const maxPriorityFeePerGas = bump(row.max_priority_fee_per_gas, current.maxPriorityFeePerGas);
    let maxFeePerGas = bump(row.max_fee_per_gas, current.maxFeePerGas);
    if (maxFeePerGas < maxPriorityFeePerGas) maxFeePerGas = maxPriorityFeePerGas;
    const hash = await relayer.wallet.writeContract({
      account: relayer.account,
      chain: null,
      address: row.token_address as Address,
      abi: eip3009Abi,
      functionName: "transferWithAuthorization",
      args: authorizationArgs(row),
      nonce,
      gas: BigInt(row.gas_limit ?? "150000"),
      maxFeePerGas,
      maxPriorityFeePerGas,
    });
    return { result: { hash, nonce, gasLimit: BigInt(row.gas_limit ?? "150000"), maxFeePerGas, maxPriorityFeePerGas } };
  });
}
