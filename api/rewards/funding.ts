import { type Address, erc20Abi, type PublicClient } from "viem";
import { problem } from "../http/problem.js";

/** How long one read of a funder's allowance and balance answers (SPEC 16: at most 10 s). */
export const FUNDING_READ_TTL_MS = 10_000;

export type FundingRead = { allowance: bigint; balance: bigint; readAt: number };

const cache = new Map<string, { at: number; value: Promise<FundingRead> }>();

/**
 * The funder's allowance to the distributor and its token balance, read together
 * and cached per (chain, token, funder, distributor) for `FUNDING_READ_TTL_MS`:
 * a burst of claims and settings reads costs one pair of RPC calls.
 */
export function readFunding(
  client: PublicClient,
  params: { chainId: number; token: Address; funder: Address; distributor: Address; now?: number },
): Promise<FundingRead> {
  const now = params.now ?? Date.now();
  const key = [params.chainId, params.token, params.funder, params.distributor].join(":").toLowerCase();
  const cached = cache.get(key);
  if (cached !== undefined && now - cached.at <= FUNDING_READ_TTL_MS) return cached.value;
  const value = (async () => {
    try {
      const [allowance, balance] = await Promise.all([
        client.readContract({
          address: params.token,
          abi: erc20Abi,
          functionName: "allowance",
          args: [params.funder, params.distributor],
        }),
        client.readContract({ address: params.token, abi: erc20Abi, functionName: "balanceOf", args: [params.funder] }),
      ]);
      return { allowance, balance, readAt: now };
    } catch (error) {
      throw problem(
        "rpc_unavailable",
        `The funding address's allowance and balance could not be read: ${String(error).slice(0, 200)}`,
      );
    }
  })();
  cache.set(key, { at: now, value });
  value.catch(() => {
    if (cache.get(key)?.value === value) cache.delete(key);
  });
  return value;
}

/** Forgets the cached read of a funder (after the console's approve, the next read is fresh). */
export function forgetFunding(params: { chainId: number; token: Address; funder: Address; distributor: Address }): void {
  cache.delete([params.chainId, params.token, params.funder, params.distributor].join(":").toLowerCase());
}

/** Whether a funder can pay `amount` on top of `alreadyOut` (its other vouchers still out): pure. */
export function fundingCovers(read: Pick<FundingRead, "allowance" | "balance">, amount: bigint, alreadyOut: bigint): boolean {
  const needed = amount + alreadyOut;
  return read.allowance >= needed && read.balance >= needed;
}
