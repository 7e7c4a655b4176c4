import { type Address, type Hex, keccak256, type TypedDataDomain, toHex } from "viem";
import { signTypedData } from "viem/accounts";

/** Must match the EIP712 constructor arguments of contracts/RewardDistributor.sol. */
export const REWARD_DOMAIN_NAME = "RewardDistributor";
export const REWARD_DOMAIN_VERSION = "1";

export const rewardVoucherTypes = {
  RewardVoucher: [
    { name: "rewardId", type: "bytes32" },
    { name: "funder", type: "address" },
    { name: "recipient", type: "address" },
    { name: "token", type: "address" },
    { name: "amount", type: "uint256" },
    { name: "deadline", type: "uint256" },
  ],
} as const;

export type RewardVoucher = {
  /** keccak256 of the reward's API id (`rw_…`): `rewardIdOnChain`. */
  rewardId: Hex;
  funder: Address;
  recipient: Address;
  token: Address;
  amount: bigint;
  /** Unix seconds; the claim reverts once the block timestamp is past it. */
  deadline: bigint;
};

/** The bytes32 a reward goes by on chain: keccak256 of its API id, so events name the API's reward. */
export function rewardIdOnChain(rewardId: string): Hex {
  return keccak256(toHex(rewardId));
}

export function rewardVoucherDomain(params: { chainId: number; contract: Address }): TypedDataDomain {
  return {
    name: REWARD_DOMAIN_NAME,
    version: REWARD_DOMAIN_VERSION,
    chainId: params.chainId,
    verifyingContract: params.contract,
  };
}

export function signRewardVoucher(params: {
  privateKey: Hex;
  chainId: number;
  contract: Address;
  voucher: RewardVoucher;
}): Promise<Hex> {
  return signTypedData({
    privateKey: params.privateKey,
    domain: rewardVoucherDomain(params),
    types: rewardVoucherTypes,
    primaryType: "RewardVoucher",
    message: params.voucher,
  });
}
