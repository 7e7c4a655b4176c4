import { randomBytes } from "node:crypto";
import { type Address, getAddress, type Hex } from "viem";
import type { AppContext } from "../app-context.js";
import { type CheckoutSession, findSession } from "../checkout/session-record.js";
import { networkByChainId } from "../config/enabled-networks.js";
import { type ProblemCode, ProblemError } from "../http/problem.js";
import type { RelayedAuthorizationTable } from "../store/relay-tables.js";
import { type AuthorizationSubmission, assertAuthorizationOnChain, assertAuthorizationTerms } from "./authorization-checks.js";
import { lastValidSecond, type TransferAuthorization } from "./eip3009.js";
import { assertRelayAllowed, assertRelayedAmount, isRelayLimitRefusal } from "./relay-charges.js";
import {
  authorizationOfPayerNonce,
  insertAuthorization,
  markSubmitted,
  recordRelayFailure,
  sessionHasLiveAuthorization,
} from "./relayed-authorization-record.js";
import { RelayFailure, relayerOf, sendAuthorization } from "./relayer.js";

export type RelayAnswer = {
  status: "submitted" | "mined";
  authorizationId: string;
  transactionHash: Hex;
  relayer: Address;
};

function refused(code: ProblemCode, detail: string, status: 409 | 422 | 503 = 422): ProblemError {
  return new ProblemError({ status, code, title: "The authorization cannot pay this checkout", detail });
}

/**
 * Checks a signed EIP-3009 `TransferWithAuthorization` against the session and the
 * chain, stores it under unique keys (one live authorization per session, one
 * submission per authorization), then has the network's relayer submit it. The
 * payment itself is credited later from the index, exactly as a plain transfer.
 */
export async function submitAuthorization(
  context: AppContext,
  params: { session: CheckoutSession; submission: AuthorizationSubmission; requiredPayer?: Address },
): Promise<RelayAnswer> {
  const { session, submission } = params;
  const { authorization, signature } = submission;
  const network = networkByChainId(context, session.chainId);
  if (network === undefined) throw new Error(`session ${session.id} is on a network that is not enabled`);
  const relayer = relayerOf(context, network, context.store);
  if (relayer === undefined) {
    throw refused("gasless_unavailable", `Paying without gas is not offered on ${network.name}; send a plain transfer.`, 503);
  }
  const token = session.tokenAddress;

  // Replaying the very authorization this session already holds answers what it got.
  const previous = await authorizationOfPayerNonce(context.store, {
    chainId: session.chainId,
    token: session.tokenAddress,
    from: authorization.from,
    nonce: authorization.nonce,
  });
  if (previous !== undefined) {
    if (
      previous.session_id === session.id &&
      previous.signature === signature.toLowerCase() &&
      previous.transaction_hash !== null
    ) {
      return answerOf(previous);
    }
    throw refused("authorization_already_submitted", "This authorization (payer and nonce) was already submitted.", 409);
  }

  if (session.status !== "awaiting_payment") {
    throw refused("session_not_open", `The session is ${session.status}; it takes no new payment.`, 409);
  }
  // The relayer's limits (issue 24): refused before any RPC call and before anything is stored.
  const limits = context.settings.relayLimits;
  assertRelayedAmount(limits, session.amountDue);
  const charge = { partnerId: session.partnerId, subjectId: session.id };
  await assertRelayAllowed(context.store, limits, { ...charge, chainId: session.chainId, purpose: "payment" });
  const requiredPayer = params.requiredPayer ?? session.requiredPayer ?? undefined;
  assertAuthorizationTerms(
    submission,
    {
      chainId: session.chainId,
      token,
      to: session.paymentAddress,
      value: session.amountDue,
      ...(requiredPayer === undefined ? {} : { from: requiredPayer }),
    },
    {
      subject: "This checkout is paid",
      recipient: `The authorization must pay ${session.paymentAddress}.`,
      payer: "Only the investor's own wallet may pay this purchase.",
    },
    refused,
  );
  const sessionEnd = lastValidSecond(session);
  if (authorization.validBefore > sessionEnd) {
    throw refused("authorization_outlives_session", `validBefore must be at most the session's expiry (${sessionEnd}).`);
  }

  await assertAuthorizationOnChain(
    relayer.client,
    { chainId: session.chainId, token, submission },
    {
      signature: "The signature is not the payer's over this authorization and token.",
      balance: (balance) => `The payer holds ${balance} base units, less than the amount.`,
    },
    refused,
  );

  const row = await storeAuthorization(context, { session, authorization, signature });
  // A plain transfer may have been credited while we checked: never pay a session twice.
  const current = await findSession(context.store, session.id);
  if (current?.status !== "awaiting_payment") {
    await recordRelayFailure(context, row.id, "session_not_open", `The session became ${current?.status} before sending.`);
    throw refused("session_not_open", `The session is ${current?.status}; it takes no new payment.`, 409);
  }
  try {
    const sent = await sendAuthorization(context, relayer, row, charge);
    const now = Date.now();
    const updated = {
      status: "submitted" as const,
      relayer_address: relayer.address.toLowerCase(),
      relayer_nonce: sent.nonce,
      transaction_hash: sent.hash.toLowerCase(),
      transaction_hashes: JSON.stringify([sent.hash.toLowerCase()]),
      gas_limit: sent.gasLimit.toString(),
      max_fee_per_gas: sent.maxFeePerGas.toString(),
      max_priority_fee_per_gas: sent.maxPriorityFeePerGas.toString(),
      submitted_at: now,
      updated_at: now,
    };
    await markSubmitted(context.store, row.id, updated);
    return answerOf({ ...row, ...updated });
  } catch (error) {
    if (isRelayLimitRefusal(error)) {
      await recordRelayFailure(context, row.id, error.code, error.message);
      throw error;
    }
    const failure =
      error instanceof RelayFailure ? error : new RelayFailure("relay_failed", `The relayer failed: ${String(error)}`);
    await recordRelayFailure(context, row.id, failure.code, failure.message);
    throw refused(failure.code, failure.message, failure.code === "authorization_rejected_on_chain" ? 422 : 503);
  }
}

function answerOf(row: RelayedAuthorizationTable): RelayAnswer {
  return {
    status: row.status === "mined" ? "mined" : "submitted",
    authorizationId: row.id,
    transactionHash: row.transaction_hash as Hex,
    relayer: getAddress(row.relayer_address as Address),
  };
}

async function storeAuthorization(
  context: AppContext,
  params: { session: CheckoutSession; authorization: TransferAuthorization; signature: Hex },
): Promise<RelayedAuthorizationTable> {
  const { session, authorization } = params;
  const now = Date.now();
  const row: RelayedAuthorizationTable = {
    id: `auth_${randomBytes(12).toString("hex")}`,
    session_id: session.id,
    live_session_id: session.id,
    chain_id: session.chainId,
    token_address: session.tokenAddress.toLowerCase(),
    from_address: authorization.from.toLowerCase(),
    to_address: authorization.to.toLowerCase(),
    value: authorization.value.toString(),
    valid_after: authorization.validAfter.toString(),
    valid_before: authorization.validBefore.toString(),
    nonce: authorization.nonce.toLowerCase(),
    signature: params.signature.toLowerCase(),
    status: "queued",
    relayer_address: null,
    relayer_nonce: null,
    transaction_hash: null,
    transaction_hashes: "[]",
    gas_limit: null,
    max_fee_per_gas: null,
    max_priority_fee_per_gas: null,
    replacements: 0,
    submitted_at: null,
    gas_used: null,
    effective_gas_price: null,
    gas_cost_wei: null,
    block_number: null,
    failure_code: null,
    failure_detail: null,
    created_at: now,
    updated_at: now,
  };
  try {
    await insertAuthorization(context.store, row);
  } catch (error) {
    // Either unique key: this session already has a live authorization, or this one was stored meanwhile.
    if (await sessionHasLiveAuthorization(context.store, session.id)) {
      throw refused("authorization_in_progress", "A gasless payment of this checkout is already under way.", 409);
    }
    if (/unique|duplicate/i.test(String(error))) {
      throw refused("authorization_already_submitted", "This authorization (payer and nonce) was already submitted.", 409);
    }
    throw error;
  }
  return row;
}
