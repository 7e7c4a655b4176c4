import { type Address, ContractFunctionExecutionError, createWalletClient, defineChain, erc20Abi, type Hex, http } from "viem";
import { mnemonicToAccount } from "viem/accounts";
import type { AppContext } from "../app-context.js";
import type { CheckoutSession } from "../checkout/session-record.js";
import { isAnvilNode } from "../config/anvil-node.js";
import { networkByChainId } from "../config/enabled-networks.js";
import { ProblemError, problem, problems } from "../http/problem.js";
import { type SubmissionResult, submitTransactionHash } from "./submit-transaction-hash.js";

/** Anvil's well-known development mnemonic: its accounts hold test USDC on the local chain and its forks only. */
const ANVIL_MNEMONIC = "test test test test test test test test test test test junk";
/** The funded Anvil account the service pays test payments from. */
export const TEST_PAYER_INDEX = 9;
const INDEX_WAIT_MS = 20_000;

/**
 * Test payments exist in local mode only (elsewhere the route is not found): on the
 * local chain, and in fork mode (`FORK_URL=… npm start`) on the Anvil fork of Base or
 * Base Sepolia, whose test accounts the stack funded with the fork's own USDC.
 */
export async function testPaymentsEnabled(
  context: Pick<AppContext, "settings" | "rpc">,
  session?: CheckoutSession,
): Promise<boolean> {
  if (!context.settings.localMode) return false;
  if (session === undefined || session.network === "local") return true;
  return isAnvilNode(context, session.chainId);
}

export type TestPaymentResult = {
  transactionHash: Hex;
  from: Address;
  amount: string;
  /** The answer of the hash submission on the session, when submitted. */
  submission: SubmissionResult | { problem: { code: string; detail: string; [key: string]: unknown } } | null;
};

// One sender account: transfers go out one at a time so their nonces never collide.
let queue: Promise<unknown> = Promise.resolve();

/**
 * Sends `amount` (default: the session's exact amount) of the local test USDC from a
 * funded Anvil account to the session's address, waits until the index holds it,
 * then (unless `submit` is false) submits the hash on the session as a customer would.
 */
export async function sendTestPayment(
  context: AppContext,
  params: { session: CheckoutSession; amount?: bigint; submit: boolean },
): Promise<TestPaymentResult> {
  const { session } = params;
  if (!(await testPaymentsEnabled(context, session))) throw problems.notFound("Test payments");
  const network = networkByChainId(context, session.chainId);
  if (network === undefined) throw problems.notFound("Test payments");
  if (session.status === "settled" || session.status === "expired") {
    throw new ProblemError({
      code: "session_not_open",
      title: "The session takes no payment",
      detail: `The session is ${session.status}.`,
    });
  }
  const amount = params.amount ?? session.amountDue;
  const account = mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: TEST_PAYER_INDEX });
  const chain = defineChain({
    id: network.chainId,
    name: network.name,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [network.rpcUrl] } },
  });
  const wallet = createWalletClient({ account, chain, transport: http(network.rpcUrl) });
  const client = context.rpc.get(network.chainId);
  if (client === undefined) throw problems.notFound("Test payments");

  // An amount the test account cannot pay is the caller's mistake, not ours (issue 24): a 4xx, nothing sent.
  const balance = await client.readContract({
    address: session.tokenAddress,
    abi: erc20Abi,
    functionName: "balanceOf",
    args: [account.address],
  });
  if (amount > balance)
    throw testPaymentRefused(`The test account ${account.address} holds ${balance} base units, less than ${amount}.`);
  const send = async () => {
    const hash = await wallet.writeContract({
      address: session.tokenAddress,
      abi: erc20Abi,
      functionName: "transfer",
      args: [session.paymentAddress, amount],
    });
    await client.waitForTransactionReceipt({ hash, pollingInterval: 100 });
    return hash;
  };
  const sent = queue.then(send, send);
  queue = sent.catch(() => undefined);
  const transactionHash = await sent.catch((error: unknown) => {
    // The chain refused the transfer (a balance spent meanwhile, an amount the token rejects).
    if (error instanceof ContractFunctionExecutionError) throw testPaymentRefused(error.shortMessage);
    throw error;
  });

  await waitUntilIndexed(context, transactionHash);
  if (!params.submit) return { transactionHash, from: account.address, amount: amount.toString(), submission: null };
  try {
    const submission = await submitTransactionHash(context, { session, transactionHash });
    return { transactionHash, from: account.address, amount: amount.toString(), submission };
  } catch (error) {
    if (!(error instanceof ProblemError)) throw error;
    return {
      transactionHash,
      from: account.address,
      amount: amount.toString(),
      submission: { problem: { code: error.code, detail: error.message, ...error.extensions } },
    };
  }
}

async function waitUntilIndexed(context: AppContext, transactionHash: Hex): Promise<void> {
  const deadline = Date.now() + INDEX_WAIT_MS;
  while (Date.now() < deadline) {
    if ((await context.indexed.transfersByHash(transactionHash)).length > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function testPaymentRefused(detail: string): ProblemError {
  return problem("test_payment_refused", `${detail} Nothing was sent.`);
}
