import { encodeFunctionData, type Hex } from "viem";
import type { AppContext } from "../app-context.js";
import { networkByChainId } from "../config/enabled-networks.js";
import {
  type AuthorizationSubmission,
  assertAuthorizationOnChain,
  assertAuthorizationTerms,
} from "../gasless/authorization-checks.js";
import {
  eip3009Abi,
  randomAuthorizationNonce,
  readTokenDomain,
  transferAuthorizationTypedDataForWallet,
} from "../gasless/eip3009.js";
import { assertRelayAllowed, assertRelayedAmount, type RelayCharge } from "../gasless/relay-charges.js";
import { RelayFailure, relayContractCall, relayerOf } from "../gasless/relayer.js";
import { type ProblemCode, ProblemError } from "../http/problem.js";
import type { Refund } from "./refund-record.js";
import { partnerRefund, refundInstructions, viewRefund } from "./refunds.js";
import { refundNotReady } from "./test-account-send.js";

/**
 * Gasless refund sends (SPEC 15, docs/refunds.md "Without ETH"): the payment address
 * signs an EIP-3009 `transferWithAuthorization` of exactly the refund, to its
 * destination, and the network's relayer submits it through its one entry
 * (`relayContractCall`: simulated first, charged to the partner as a `refund` relay
 * under the same daily quota and gas budget as gasless payments and reward claims).
 * The service never marks the refund because the relayer sent something: the refund
 * stays `ready` until the index shows the outgoing transfer, then moves as for any
 * wallet's transfer. One relayed send per refund: a second is refused
 * (`refund_already_relayed`), also between concurrent requests, since the relayer's
 * lease serialises the subject quota set to one here.
 */

/** How long the authorization the console is handed stays valid: long enough to sign, short enough not to linger. */
export const REFUND_AUTHORIZATION_VALIDITY_SECONDS = 3_600n;

const TITLE = "The authorization cannot send this refund";
const refused = (code: ProblemCode, detail: string, status?: 409 | 422 | 503) =>
  new ProblemError({ code, title: TITLE, detail, ...(status === undefined ? {} : { status }) });

function readyRefund(refund: Refund) {
  const instructions = refundInstructions(refund);
  if (refund.status !== "ready" || instructions === null) throw refundNotReady(refund.status);
  return instructions;
}

function relayerFor(context: AppContext, refund: Refund) {
  const network = networkByChainId(context, refund.chainId);
  const relayer = network === undefined ? undefined : relayerOf(context, network, context.store);
  if (relayer === undefined) {
    throw refused("gasless_unavailable", "No relayer runs on this refund's network: send the refund from a wallet.", 503);
  }
  return relayer;
}

const chargeOf = (refund: Refund): RelayCharge => ({
  partnerId: refund.partnerId,
  chainId: refund.chainId,
  purpose: "refund",
  subjectId: refund.id,
});

/** The relayer's limits with one relayed send per refund (the per-subject quota, counted inside the relayer's lease). */
const oneSendPerRefund = (context: AppContext): AppContext => ({
  ...context,
  settings: { ...context.settings, relayLimits: { ...context.settings.relayLimits, sessionRelays: 1 } },
});

async function assertRelayable(context: AppContext, refund: Refund) {
  const limits = context.settings.relayLimits;
  assertRelayedAmount(limits, refund.amount);
  try {
    await assertRelayAllowed(context.store, { ...limits, sessionRelays: 1 }, chargeOf(refund));
  } catch (error) {
    if (error instanceof ProblemError && error.code === "relay_session_limit") throw alreadyRelayed();
    throw error;
  }
}

const alreadyRelayed = () =>
  new ProblemError({
    code: "refund_already_relayed",
    detail:
      "The relayer already sent this refund's authorization: wait for the index to show the transfer. Send it otherwise only once that authorization's validBefore has passed, or the money could leave twice.",
  });

/**
 * What the payment address signs (`GET /v1/refunds/{id}/authorization`): the token's
 * own EIP-712 domain and a `TransferWithAuthorization` of the refund, with a fresh
 * random nonce and an hour of validity by chain time.
 */
export async function refundAuthorizationRequest(context: AppContext, params: { partnerId: string; refundId: string }) {
  const refund = await partnerRefund(context.store, params);
  const instructions = readyRefund(refund);
  const relayer = relayerFor(context, refund);
  await assertRelayable(context, refund);
  const domain = await readTokenDomain(relayer.client, { token: refund.tokenAddress, chainId: refund.chainId });
  const block = await relayer.client.getBlock({ blockTag: "latest" });
  return {
    refundId: refund.id,
    relayer: relayer.address,
    ...transferAuthorizationTypedDataForWallet(domain, {
      from: instructions.from,
      to: instructions.to,
      value: BigInt(instructions.amount),
      validAfter: 0n,
      validBefore: block.timestamp + REFUND_AUTHORIZATION_VALIDITY_SECONDS,
      nonce: randomAuthorizationNonce(),
    }),
  };
}

/**
 * Checks a signed authorization against the refund and the chain, then has the
 * relayer send it (`POST /v1/refunds/{id}/authorization`). Answers the relayer's
 * transaction and the refund as it reads now: still `ready` until the index sees it.
 */
export async function relayRefundAuthorization(
  context: AppContext,
  params: { partnerId: string; refundId: string; submission: AuthorizationSubmission },
) {
  const refund = await partnerRefund(context.store, params);
  const instructions = readyRefund(refund);
  const { authorization, signature } = params.submission;
  const relayer = relayerFor(context, refund);
  await assertRelayable(context, refund);
  assertAuthorizationTerms(
    params.submission,
    { chainId: refund.chainId, token: refund.tokenAddress, from: instructions.from, to: instructions.to, value: refund.amount },
    {
      subject: "This refund is sent",
      payer: `The refund leaves the payment address ${instructions.from}: it signs.`,
      recipient: `The authorization must pay the refund's destination ${instructions.to}.`,
    },
    refused,
  );
  const client = relayer.client;
  await assertAuthorizationOnChain(
    client,
    { chainId: refund.chainId, token: refund.tokenAddress, submission: params.submission },
    {
      signature: "The signature is not the payment address's over this authorization.",
      balance: (balance) => `The payment address holds ${balance} base units, less than the refund.`,
    },
    refused,
  );
  const data = encodeFunctionData({
    abi: eip3009Abi,
    functionName: "transferWithAuthorization",
    args: [
      authorization.from,
      authorization.to,
      authorization.value,
      authorization.validAfter,
      authorization.validBefore,
      authorization.nonce,
      signature,
    ],
  });
  let hash: Hex;
  try {
    hash = (
      await relayContractCall(oneSendPerRefund(context), relayer, {
        charge: chargeOf(refund),
        call: { to: refund.tokenAddress, data },
      })
    ).hash;
  } catch (error) {
    if (error instanceof ProblemError && error.code === "relay_session_limit") throw alreadyRelayed();
    if (!(error instanceof RelayFailure)) throw error;
    throw refused(error.code, error.message, error.code === "authorization_rejected_on_chain" ? 422 : 503);
  }
  return {
    transactionHash: hash,
    relayer: relayer.address,
    refund: await viewRefund(context.store, await partnerRefund(context.store, params)),
  };
}
