import {
  type Address,
  type Chain,
  createPublicClient,
  createWalletClient,
  defineChain,
  getAddress,
  type Hash,
  type Hex,
  http,
  type PublicClient,
  type TransactionReceipt,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import {
  certificateNftAbi,
  certificateNftBytecode,
  rewardDistributorAbi,
  rewardDistributorBytecode,
  subscriptionManagerAbi,
  subscriptionManagerBytecode,
  testUsdcAbi,
  testUsdcBytecode,
} from "../contracts/generated/index.js";

export type ContractDeployment = {
  usdc: Address;
  certificate: Address;
  rewardDistributor: Address;
  subscriptionManager: Address;
  deployBlock: number;
  voucherSigner: Address;
};

export const CERTIFICATE_NAME = "Settlement Certificate";
export const CERTIFICATE_SYMBOL = "CERT";

type ChainParams = { rpcUrl: string; chainId: number; deployerPrivateKey: Hex };

export function localChain(params: { rpcUrl: string; chainId: number }): Chain {
  return defineChain({
    id: params.chainId,
    name: `local-${params.chainId}`,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [params.rpcUrl] } },
  });
}

function deployerClients(params: ChainParams) {
  const chain = localChain(params);
  const account = privateKeyToAccount(params.deployerPrivateKey);
  const wallet = createWalletClient({ account, chain, transport: http(params.rpcUrl) });
  const publicClient = createPublicClient({ chain, transport: http(params.rpcUrl), pollingInterval: 200 });
  return { account, wallet, publicClient };
}

async function successfulReceipt(publicClient: PublicClient, hash: Hash, what: string): Promise<TransactionReceipt> {
  const receipt = await publicClient.waitForTransactionReceipt({ hash });
  if (receipt.status !== "success") throw new Error(`${what} reverted (transaction ${hash})`);
  return receipt;
}

function deployedAddress(receipt: TransactionReceipt, what: string): Address {
  if (!receipt.contractAddress) throw new Error(`${what} deployment has no contract address`);
  return getAddress(receipt.contractAddress);
}

export async function deployTestUsdc(params: ChainParams): Promise<Address> {
  const { account, wallet, publicClient } = deployerClients(params);
  const hash = await wallet.deployContract({ abi: testUsdcAbi, bytecode: testUsdcBytecode, args: [account.address] });
  return deployedAddress(await successfulReceipt(publicClient, hash, "TestUSDC"), "TestUSDC");
}

/** The certificate contract alone: on a fork of Base, USDC is already there (Circle's). */
export async function deployCertificate(
  params: ChainParams & { voucherSigner: Address },
): Promise<{ certificate: Address; deployBlock: number }> {
  const { account, wallet, publicClient } = deployerClients(params);
  const hash = await wallet.deployContract({
    abi: certificateNftAbi,
    bytecode: certificateNftBytecode,
    args: [CERTIFICATE_NAME, CERTIFICATE_SYMBOL, params.voucherSigner, account.address],
  });
  const receipt = await successfulReceipt(publicClient, hash, "CertificateNFT");
  return { certificate: deployedAddress(receipt, "CertificateNFT"), deployBlock: Number(receipt.blockNumber) };
}

/** The reward distributor alone (a fork, or a data directory deployed before rewards existed). */
export async function deployRewardDistributor(
  params: ChainParams & { voucherSigner: Address },
): Promise<{ rewardDistributor: Address; deployBlock: number }> {
  const { account, wallet, publicClient } = deployerClients(params);
  const hash = await wallet.deployContract({
    abi: rewardDistributorAbi,
    bytecode: rewardDistributorBytecode,
    args: [params.voucherSigner, account.address],
  });
  const receipt = await successfulReceipt(publicClient, hash, "RewardDistributor");
  return { rewardDistributor: deployedAddress(receipt, "RewardDistributor"), deployBlock: Number(receipt.blockNumber) };
}

/**
 * The subscription manager alone (a fork, an operator's network, or a data directory deployed before
 * subscriptions existed). It takes no key of the service: the subscribers' signatures are its only authority.
 */
export async function deploySubscriptionManager(
  params: ChainParams,
): Promise<{ subscriptionManager: Address; deployBlock: number }> {
  const { wallet, publicClient } = deployerClients(params);
  const hash = await wallet.deployContract({ abi: subscriptionManagerAbi, bytecode: subscriptionManagerBytecode });
  const receipt = await successfulReceipt(publicClient, hash, "SubscriptionManager");
  return { subscriptionManager: deployedAddress(receipt, "SubscriptionManager"), deployBlock: Number(receipt.blockNumber) };
}

export async function deployContracts(
  params: ChainParams & { voucherSigner: Address; mintTo: { address: Address; amount: bigint }[] },
): Promise<ContractDeployment> {
  const { account, wallet, publicClient } = deployerClients(params);
  // Explicit nonces let all transactions be sent before any is mined, which matters when anvil runs with --block-time.
  let nonce = await publicClient.getTransactionCount({ address: account.address, blockTag: "pending" });
  const nextNonce = () => nonce++;

  const usdcHash = await wallet.deployContract({
    abi: testUsdcAbi,
    bytecode: testUsdcBytecode,
    args: [account.address],
    nonce: nextNonce(),
  });
  const certificateHash = await wallet.deployContract({
    abi: certificateNftAbi,
    bytecode: certificateNftBytecode,
    args: [CERTIFICATE_NAME, CERTIFICATE_SYMBOL, params.voucherSigner, account.address],
    nonce: nextNonce(),
  });
  const distributorHash = await wallet.deployContract({
    abi: rewardDistributorAbi,
    bytecode: rewardDistributorBytecode,
    args: [params.voucherSigner, account.address],
    nonce: nextNonce(),
  });
  const subscriptionManagerHash = await wallet.deployContract({
    abi: subscriptionManagerAbi,
    bytecode: subscriptionManagerBytecode,
    nonce: nextNonce(),
  });
  const usdcReceipt = await successfulReceipt(publicClient, usdcHash, "TestUSDC");
  const certificateReceipt = await successfulReceipt(publicClient, certificateHash, "CertificateNFT");
  const distributorReceipt = await successfulReceipt(publicClient, distributorHash, "RewardDistributor");
  const subscriptionManagerReceipt = await successfulReceipt(publicClient, subscriptionManagerHash, "SubscriptionManager");
  const usdc = deployedAddress(usdcReceipt, "TestUSDC");

  const mintHashes: Hash[] = [];
  for (const { address, amount } of params.mintTo) {
    mintHashes.push(
      await wallet.writeContract({
        address: usdc,
        abi: testUsdcAbi,
        functionName: "mint",
        args: [address, amount],
        nonce: nextNonce(),
      }),
    );
  }
  await Promise.all(mintHashes.map((hash) => successfulReceipt(publicClient, hash, "USDC mint")));

  return {
    usdc,
    certificate: deployedAddress(certificateReceipt, "CertificateNFT"),
    rewardDistributor: deployedAddress(distributorReceipt, "RewardDistributor"),
    subscriptionManager: deployedAddress(subscriptionManagerReceipt, "SubscriptionManager"),
    deployBlock: Number(usdcReceipt.blockNumber),
    voucherSigner: params.voucherSigner,
  };
}
