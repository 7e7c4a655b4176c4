import type { AppContext } from "../app-context.js";

/** Whether each chain's node is an Anvil (the local chain, or `npm start`'s fork of Base): asked once per chain. */
const anvilNodes = new Map<number, Promise<boolean>>();

/**
 * Whether the node behind `chainId` is Anvil: its `web3_clientVersion` says `anvil/…`.
 * A real Base node never does, so a test payment can only ever move a chain's
 * worth of nothing: the fork's copy of the token, or the local TestUSDC.
 */
export function isAnvilNode(context: Pick<AppContext, "rpc">, chainId: number): Promise<boolean> {
  let known = anvilNodes.get(chainId);
  if (known === undefined) {
    const client = context.rpc.get(chainId);
    known =
      client === undefined
        ? Promise.resolve(false)
        : client
            .request({ method: "web3_clientVersion" })
            .then((version) => String(version).toLowerCase().startsWith("anvil"))
            .catch(() => false);
    // A node that did not answer is asked again next time; a known answer is kept.
    void known.then((anvil) => {
      if (!anvil) anvilNodes.delete(chainId);
    });
    anvilNodes.set(chainId, known);
  }
  return known;
}

/** Anvil's well-known development mnemonic: its accounts hold ETH and test USDC on the local chain and its forks only. */
export const ANVIL_MNEMONIC = "test test test test test test test test test test test junk";
