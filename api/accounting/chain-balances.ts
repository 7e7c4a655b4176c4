import { type Address, erc20Abi } from "viem";
import type { AppContext } from "../app-context.js";
import type { NetworkConfig } from "../config/networks.js";

/**
 * The token balance of each address at the end of `blockNumber`, read from the chain
 * (an archive read when the block is old). The one place accounting asks the chain.
 */
export async function chainBalancesAt(
  context: Pick<AppContext, "rpc">,
  params: { network: NetworkConfig; addresses: readonly string[]; blockNumber: bigint },
): Promise<Map<string, bigint>> {
  const client = context.rpc.get(params.network.chainId);
  if (client === undefined) throw new Error(`no RPC client for chain ${params.network.chainId}`);
  // Before the token contract existed (a local chain indexed from block 1, the token deployed in it)
  // every balance is 0: a read there would fail to decode, not answer 0.
  const code = await client.getCode({ address: params.network.usdc, blockNumber: params.blockNumber });
  if (code === undefined || code === "0x") return new Map(params.addresses.map((address) => [address.toLowerCase(), 0n]));
  const balances = await Promise.all(
    params.addresses.map((address) =>
      client.readContract({
        address: params.network.usdc,
        abi: erc20Abi,
        functionName: "balanceOf",
        args: [address as Address],
        blockNumber: params.blockNumber,
      }),
    ),
  );
  return new Map(params.addresses.map((address, index) => [address.toLowerCase(), balances[index] as bigint]));
}
