import {
  type Address,
  BaseError,
  ContractFunctionRevertedError,
  createPublicClient,
  createTestClient,
  createWalletClient,
  getAddress,
  type Hash,
  http,
  parseAbi,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { KNOWN_NETWORKS, type NetworkName } from "../api/config/networks.js";
import { localChain } from "./deploy.js";

/**
 * Fork mode of the local stack (`FORK_URL=<rpc> npm start`): Anvil forks Base or
 * Base Sepolia, keeps its chain id, and the service runs that network with its
 * canonical USDC. This module checks the upstream before anything starts and funds
 * the test accounts with the fork's USDC the way a developer would by hand.
 */

/** Networks a fork may be of: those with a canonical USDC. */
export type ForkableNetwork = Exclude<NetworkName, "local">;

export type ForkTarget = {
  url: string;
  network: ForkableNetwork;
  chainId: number;
  usdc: Address;
  /** The upstream block the fork starts at (its latest when none was asked for). */
  blockNumber: number;
};

export class ForkError extends Error {
  override name = "ForkError";
}

/**
 * A path segment that is safe to show: a version (`v2`) or a short word such as `rpc`
 * or `base-sepolia`. Anything else (long, with digits, mixed case: an API key, a
 * project id) is shown as `…`.
 */
function harmlessSegment(segment: string): boolean {
  return /^v\d{1,2}$/.test(segment) || (segment.length <= 12 && /^[a-z]+(?:-[a-z]+)*$/.test(segment));
}

/**
 * An RPC URL often carries an API key in its path, its query or its userinfo: show
 * where it points without them (`https://base-mainnet.example.com/v2/…`).
 */
export function redactRpcUrl(url: string): string {
  try {
    const parsed = new URL(url);
    const segments = parsed.pathname.split("/").filter((segment) => segment !== "");
    const path = segments.map((segment) => (harmlessSegment(segment) ? segment : "…")).join("/");
    return `${parsed.protocol}//${parsed.host}${path === "" ? "" : `/${path}`}`;
  } catch {
    return "(not a URL)";
  }
}

/** `text` with every URL in it redacted as `redactRpcUrl` does (Anvil's messages name the upstream). */
export function redactUrlsIn(text: string): string {
  return text.replace(/\b(?:https?|wss?):\/\/[^\s)"'<>]+/g, (found) => redactRpcUrl(found.replace(/[.,;:]+$/, "")));
}

/**
 * What `npm start` says when the chain exits on its own. In fork mode it names the
 * upstream (redacted) and shows Anvil's own last lines: an upstream that stopped
 * answering makes Anvil panic at the next block it mines.
 */
export function chainExitMessage(params: {
  code: number | null;
  signal: string | null;
  forkUrl?: string;
  anvilLines: string[];
}): string {
  const how = params.signal === null ? `code ${params.code}` : `signal ${params.signal}`;
  const lines = params.anvilLines.map((line) => `    ${redactUrlsIn(line)}`);
  const said = lines.length === 0 ? "Anvil printed nothing." : `Anvil's last lines:\n${lines.join("\n")}`;
  if (params.forkUrl === undefined) return `the chain (Anvil) exited (${how}); stopping the service. ${said}`;
  return (
    `the chain (an Anvil fork of ${redactRpcUrl(params.forkUrl)}) exited (${how}); stopping the service. ` +
    `A fork reads state from that RPC endpoint: if it stopped answering or refused a request (rate limit, expired key), ` +
    `Anvil stops. Check the endpoint and run FORK_URL=… npm start again.\n${said}`
  );
}

const FORKABLE: ForkableNetwork[] = ["base", "base-sepolia"];

function forkableList(): string {
  return FORKABLE.map((name) => `${name} (${KNOWN_NETWORKS[name].chainId})`).join(", ");
}

/**
 * Asks the fork URL for its chain id and head, before Anvil starts: a URL that does
 * not answer, answers a chain we do not settle on, or lacks the block asked for is
 * refused here with a message naming the variable.
 */
export async function resolveForkTarget(params: { url: string; blockNumber?: number; timeoutMs?: number }): Promise<ForkTarget> {
  const shown = redactRpcUrl(params.url);
  if (!/^https?:\/\//.test(params.url)) {
    throw new ForkError(`FORK_URL must be an http:// or https:// RPC URL of a Base or Base Sepolia node (got ${shown}).`);
  }
  if (params.blockNumber !== undefined && !(Number.isSafeInteger(params.blockNumber) && params.blockNumber >= 0)) {
    throw new ForkError("FORK_BLOCK_NUMBER must be a block number (a non-negative integer).");
  }
  const client = createPublicClient({ transport: http(params.url, { retryCount: 1, timeout: params.timeoutMs ?? 15_000 }) });
  let chainId: number;
  let head: bigint;
  try {
    [chainId, head] = await Promise.all([client.getChainId(), client.getBlockNumber({ cacheTime: 0 })]);
  } catch (error) {
    const reason = error instanceof BaseError ? error.shortMessage : String(error);
    throw new ForkError(`FORK_URL ${shown} does not answer as an Ethereum RPC endpoint (${reason}). Nothing was started.`);
  }
  const network = FORKABLE.find((name) => KNOWN_NETWORKS[name].chainId === chainId);
  if (network === undefined) {
    throw new ForkError(
      `FORK_URL ${shown} answers chain id ${chainId}, which is not a chain the service settles on: fork one of ${forkableList()}. Nothing was started.`,
    );
  }
  if (params.blockNumber !== undefined && BigInt(params.blockNumber) > head) {
    throw new ForkError(
      `FORK_BLOCK_NUMBER ${params.blockNumber} is ahead of ${network}'s head (${head}) at ${shown}. Nothing was started.`,
    );
  }
  const usdc = KNOWN_NETWORKS[network].canonicalUsdc;
  if (usdc === undefined) throw new ForkError(`${network} has no canonical USDC`);
  return { url: params.url, network, chainId, usdc, blockNumber: params.blockNumber ?? Number(head) };
}

/** The part of Circle's FiatToken the funding path uses (TestUSDC implements the same). */
const fiatTokenMinterAbi = parseAbi([
  "function masterMinter() view returns (address)",
  "function configureMinter(address minter, uint256 minterAllowedAmount) returns (bool)",
  "function mint(address to, uint256 amount) returns (bool)",
  "function balanceOf(address account) view returns (uint256)",
]);

function revertReason(error: unknown): string {
  if (error instanceof BaseError) {
    const reverted = error.walk((cause) => cause instanceof ContractFunctionRevertedError);
    if (reverted instanceof ContractFunctionRevertedError && reverted.reason) return reverted.reason;
    return error.shortMessage;
  }
  return String(error);
}

/**
 * A fork forked at an older block starts its clock at that block's timestamp, so a
 * payment mined now would look older than the session it pays. Moves the fork's clock
 * to the wall clock (never backwards), as a fork of the live chain already is.
 */
export async function alignForkClock(params: { rpcUrl: string; chainId: number; now?: number }): Promise<void> {
  const chain = localChain(params);
  const publicClient = createPublicClient({ chain, transport: http(params.rpcUrl) });
  const testClient = createTestClient({ chain, mode: "anvil", transport: http(params.rpcUrl) });
  const latest = await publicClient.getBlock({ blockTag: "latest" });
  const now = Math.floor((params.now ?? Date.now()) / 1000);
  const behind = now - Number(latest.timestamp);
  if (behind > 0) await testClient.increaseTime({ seconds: behind });
}

/**
 * Mints the fork's USDC to `accounts` as a developer would on a fork of Base:
 * impersonates the token's `masterMinter()` (given ETH for gas with
 * `anvil_setBalance`), has it `configureMinter(minter, total)`, and mints from the
 * minter. A token without that role, a paused token or a blacklisted account is
 * reported in words, with what to do instead.
 */
export async function fundAccountsWithForkUsdc(params: {
  rpcUrl: string;
  chainId: number;
  usdc: Address;
  minterPrivateKey: `0x${string}`;
  accounts: { address: Address; amount: bigint }[];
}): Promise<{ masterMinter: Address; minter: Address }> {
  const chain = localChain(params);
  const transport = http(params.rpcUrl);
  const publicClient = createPublicClient({ chain, transport, pollingInterval: 200 });
  const testClient = createTestClient({ chain, mode: "anvil", transport });
  const minter = privateKeyToAccount(params.minterPrivateKey);
  const token = params.usdc;
  const cannotFund = (why: string) =>
    new ForkError(
      `Cannot fund the test accounts with the fork's USDC at ${token}: ${why}. ` +
        "The stack mints USDC the way Circle's FiatToken allows (impersonating masterMinter() to configureMinter, then mint); " +
        "fund the accounts another way (e.g. anvil_impersonateAccount of a large holder and transfer) or fork a chain whose USDC is Circle's.",
    );

  const code = await publicClient.getCode({ address: token });
  if (code === undefined || code === "0x") throw cannotFund("there is no contract at that address on the fork");

  let masterMinter: Address;
  try {
    masterMinter = getAddress(
      await publicClient.readContract({ address: token, abi: fiatTokenMinterAbi, functionName: "masterMinter" }),
    );
  } catch (error) {
    throw cannotFund(`the token has no masterMinter() role (${revertReason(error)})`);
  }
  if (masterMinter === "0x0000000000000000000000000000000000000000") throw cannotFund("its masterMinter() is the zero address");

  const total = params.accounts.reduce((sum, account) => sum + account.amount, 0n);
  await testClient.setBalance({ address: masterMinter, value: 10n ** 18n });
  await testClient.impersonateAccount({ address: masterMinter });
  try {
    const asMasterMinter = createWalletClient({ chain, account: masterMinter, transport });
    let hash: Hash;
    try {
      hash = await asMasterMinter.writeContract({
        address: token,
        abi: fiatTokenMinterAbi,
        functionName: "configureMinter",
        args: [minter.address, total],
      });
    } catch (error) {
      throw cannotFund(`its masterMinter ${masterMinter} could not configureMinter (${revertReason(error)})`);
    }
    const receipt = await publicClient.waitForTransactionReceipt({ hash });
    if (receipt.status !== "success") throw cannotFund(`configureMinter reverted (transaction ${hash})`);
  } finally {
    await testClient.stopImpersonatingAccount({ address: masterMinter });
  }

  const asMinter = createWalletClient({ chain, account: minter, transport });
  let nonce = await publicClient.getTransactionCount({ address: minter.address, blockTag: "pending" });
  const hashes: Hash[] = [];
  for (const account of params.accounts) {
    try {
      hashes.push(
        await asMinter.writeContract({
          address: token,
          abi: fiatTokenMinterAbi,
          functionName: "mint",
          args: [account.address, account.amount],
          nonce: nonce++,
        }),
      );
    } catch (error) {
      throw cannotFund(`minting to ${account.address} failed (${revertReason(error)})`);
    }
  }
  for (const hash of hashes) {
    const receipt = await publicClient.waitForTransactionReceipt({ hash });
    if (receipt.status !== "success") throw cannotFund(`a mint reverted (transaction ${hash})`);
  }
  return { masterMinter, minter: minter.address };
}
