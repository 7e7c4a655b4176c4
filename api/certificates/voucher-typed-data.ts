import type { Address, Hex, TypedDataDomain } from "viem";
import { signTypedData } from "viem/accounts";

/** Must match the EIP712 constructor arguments of contracts/CertificateNFT.sol. */
export const CERTIFICATE_DOMAIN_NAME = "Settlement Certificate";
export const CERTIFICATE_DOMAIN_VERSION = "1";

export const certificateVoucherTypes = {
  Voucher: [
    { name: "buyer", type: "address" },
    { name: "purchaseId", type: "bytes32" },
    { name: "tokenURI", type: "string" },
    { name: "deadline", type: "uint256" },
  ],
} as const;

export type CertificateVoucher = {
  buyer: Address;
  purchaseId: Hex;
  tokenURI: string;
  /** Unix seconds; the claim reverts once the block timestamp is past it. */
  deadline: bigint;
};

export function certificateVoucherDomain(params: { chainId: number; contract: Address }): TypedDataDomain {
  return {
    name: CERTIFICATE_DOMAIN_NAME,
    version: CERTIFICATE_DOMAIN_VERSION,
    chainId: params.chainId,
    verifyingContract: params.contract,
  };
}

export function signCertificateVoucher(params: {
  privateKey: Hex;
  chainId: number;
  contract: Address;
  voucher: CertificateVoucher;
}): Promise<Hex> {
  return signTypedData({
    privateKey: params.privateKey,
    domain: certificateVoucherDomain(params),
    types: certificateVoucherTypes,
    primaryType: "Voucher",
    message: params.voucher,
  });
}
