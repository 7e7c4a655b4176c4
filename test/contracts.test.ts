import {
  type Address,
  BaseError,
  ContractFunctionRevertedError,
  createPublicClient,
  createTestClient,
  createWalletClient,
  getContract,
  type Hex,
  http,
  keccak256,
  type PublicClient,
  parseEventLogs,
  toHex,
} from "viem";
import { generatePrivateKey, type HDAccount, mnemonicToAccount, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CertificateVoucher, signCertificateVoucher } from "../api/certificates/voucher-typed-data.js";
import { certificateNftAbi, testUsdcAbi } from "../contracts/generated/index.js";
import { ANVIL_MNEMONIC, type AnvilInstance, startAnvil } from "../local/anvil.js";
import { type ContractDeployment, deployContracts, localChain } from "../local/deploy.js";

const ERC5192_INTERFACE_ID = "0xb45a3c0e";
const ERC721_INTERFACE_ID = "0x80ac58cd";
const ONE_DAY = 86_400n;

function anvilAccount(index: number): HDAccount {
  return mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: index });
}

function privateKeyOf(account: HDAccount): Hex {
  return toHex(account.getHdKey().privateKey!);
}

/** The custom error a failed call reverted with, read from the decoded revert data. */
async function revertErrorName(call: Promise<unknown>): Promise<string | undefined> {
  try {
    await call;
  } catch (error) {
    const reverted = error instanceof BaseError ? error.walk((cause) => cause instanceof ContractFunctionRevertedError) : null;
    if (reverted instanceof ContractFunctionRevertedError) return reverted.data?.errorName;
    throw error;
  }
  throw new Error("expected the call to revert, but it succeeded");
}

async function revertReason(call: Promise<unknown>): Promise<string | undefined> {
  try {
    await call;
  } catch (error) {
    const reverted = error instanceof BaseError ? error.walk((cause) => cause instanceof ContractFunctionRevertedError) : null;
    if (reverted instanceof ContractFunctionRevertedError) return reverted.reason;
    throw error;
  }
  throw new Error("expected the call to revert, but it succeeded");
}

let purchaseCounter = 0;
function newPurchaseId(): Hex {
  purchaseCounter += 1;
  return keccak256(toHex(`purchase-${purchaseCounter}-${Date.now()}`));
}

describe("contracts", () => {
  const deployer = anvilAccount(0);
  const buyer = anvilAccount(1);
  const stranger = anvilAccount(2);
  const voucherPrivateKey = generatePrivateKey();

  let anvil: AnvilInstance;
  let deployment: ContractDeployment;
  let publicClient: PublicClient;

  const walletOf = (account: HDAccount) =>
    createWalletClient({ account, chain: localChain(anvil), transport: http(anvil.rpcUrl) });

  async function chainTime(): Promise<bigint> {
    return (await publicClient.getBlock()).timestamp;
  }

  async function voucherFor(purchaseId: Hex, overrides: Partial<CertificateVoucher> = {}): Promise<CertificateVoucher> {
    return {
      buyer: buyer.address,
      purchaseId,
      tokenURI: `ipfs://certificate/${purchaseId}`,
      deadline: (await chainTime()) + ONE_DAY,
      ...overrides,
    };
  }

  function sign(voucher: CertificateVoucher, privateKey: Hex = voucherPrivateKey): Promise<Hex> {
    return signCertificateVoucher({ privateKey, chainId: anvil.chainId, contract: deployment.certificate, voucher });
  }

  function claim(from: HDAccount, voucher: CertificateVoucher, signature: Hex) {
    return walletOf(from).writeContract({
      address: deployment.certificate,
      abi: certificateNftAbi,
      functionName: "claim",
      args: [voucher, signature],
    });
  }

  async function claimCertificate(purchaseId: Hex) {
    const voucher = await voucherFor(purchaseId);
    const hash = await claim(buyer, voucher, await sign(voucher));
    return publicClient.waitForTransactionReceipt({ hash });
  }

  function revoke(from: HDAccount, tokenId: bigint) {
    return walletOf(from).writeContract({
      address: deployment.certificate,
      abi: certificateNftAbi,
      functionName: "revoke",
      args: [tokenId, "refunded"],
    });
  }

  beforeAll(async () => {
    anvil = await startAnvil();
    publicClient = createPublicClient({ chain: localChain(anvil), transport: http(anvil.rpcUrl), pollingInterval: 100 });
    deployment = await deployContracts({
      rpcUrl: anvil.rpcUrl,
      chainId: anvil.chainId,
      deployerPrivateKey: privateKeyOf(deployer),
      voucherSigner: privateKeyToAccount(voucherPrivateKey).address,
      mintTo: [{ address: buyer.address, amount: 1_000_000_000n }],
    });
  });

  afterAll(async () => {
    await anvil?.stop();
  });

  describe("TestUSDC", () => {
    const readUsdc = <F extends "name" | "symbol" | "decimals">(functionName: F) =>
      publicClient.readContract({ address: deployment.usdc, abi: testUsdcAbi, functionName });

    const balanceOf = (address: Address) =>
      publicClient.readContract({ address: deployment.usdc, abi: testUsdcAbi, functionName: "balanceOf", args: [address] });

    it("looks like USDC", async () => {
      expect(await readUsdc("name")).toBe("USD Coin");
      expect(await readUsdc("symbol")).toBe("USDC");
      expect(await readUsdc("decimals")).toBe(6);
    });

    it("mints to the deployment's mintTo accounts and on the owner's request", async () => {
      expect(await balanceOf(buyer.address)).toBe(1_000_000_000n);
      const before = await balanceOf(stranger.address);
      const hash = await walletOf(deployer).writeContract({
        address: deployment.usdc,
        abi: testUsdcAbi,
        functionName: "mint",
        args: [stranger.address, 25_000_000n],
      });
      await publicClient.waitForTransactionReceipt({ hash });
      expect(await balanceOf(stranger.address)).toBe(before + 25_000_000n);
    });

    it("refuses mints from anyone but a minter (the owner, at deployment)", async () => {
      const mint = walletOf(stranger).writeContract({
        address: deployment.usdc,
        abi: testUsdcAbi,
        functionName: "mint",
        args: [stranger.address, 1n],
      });
      expect(await revertReason(mint)).toBe("FiatToken: caller is not a minter");
    });
  });

  describe("CertificateNFT", () => {
    const certificate = () => getContract({ address: deployment.certificate, abi: certificateNftAbi, client: publicClient });

    it("mints a locked certificate to the buyer for a valid voucher", async () => {
      const purchaseId = newPurchaseId();
      const tokenId = BigInt(purchaseId);
      const receipt = await claimCertificate(purchaseId);
      expect(receipt.status).toBe("success");

      const events = parseEventLogs({ abi: certificateNftAbi, logs: receipt.logs });
      const claimed = events.find((event) => event.eventName === "CertificateClaimed");
      expect(claimed?.args).toEqual({ purchaseId, tokenId, buyer: buyer.address });
      const locked = events.find((event) => event.eventName === "Locked");
      expect(locked?.args).toEqual({ tokenId });

      expect(await certificate().read.ownerOf([tokenId])).toBe(buyer.address);
      expect(await certificate().read.locked([tokenId])).toBe(true);
      expect(await certificate().read.tokenURI([tokenId])).toBe(`ipfs://certificate/${purchaseId}`);
      expect(await certificate().read.purchaseIdOf([tokenId])).toBe(purchaseId);
      expect(await certificate().read.claimed([purchaseId])).toBe(true);
    });

    it("declares ERC-5192 and ERC-721 support", async () => {
      const supports = (interfaceId: Hex) =>
        publicClient.readContract({
          address: deployment.certificate,
          abi: certificateNftAbi,
          functionName: "supportsInterface",
          args: [interfaceId],
        });
      expect(await supports(ERC5192_INTERFACE_ID)).toBe(true);
      expect(await supports(ERC721_INTERFACE_ID)).toBe(true);
      expect(await supports("0xffffffff")).toBe(false);
    });

    it("reports locked() only for existing tokens", async () => {
      expect(await revertErrorName(certificate().read.locked([BigInt(newPurchaseId())]))).toBe("ERC721NonexistentToken");
    });

    it("refuses to transfer a certificate", async () => {
      const purchaseId = newPurchaseId();
      await claimCertificate(purchaseId);
      const transfer = walletOf(buyer).writeContract({
        address: deployment.certificate,
        abi: certificateNftAbi,
        functionName: "transferFrom",
        args: [buyer.address, stranger.address, BigInt(purchaseId)],
      });
      expect(await revertErrorName(transfer)).toBe("Soulbound");
    });

    it("refuses a voucher signed by another key", async () => {
      const voucher = await voucherFor(newPurchaseId());
      const forged = await sign(voucher, generatePrivateKey());
      expect(await revertErrorName(claim(buyer, voucher, forged))).toBe("InvalidVoucherSignature");
    });

    it("refuses a malformed signature with the same error", async () => {
      const voucher = await voucherFor(newPurchaseId());
      expect(await revertErrorName(claim(buyer, voucher, "0x1234"))).toBe("InvalidVoucherSignature");
    });

    it("refuses a claim sent by someone other than the buyer", async () => {
      const voucher = await voucherFor(newPurchaseId());
      expect(await revertErrorName(claim(stranger, voucher, await sign(voucher)))).toBe("SenderNotBuyer");
    });

    it("refuses an expired voucher", async () => {
      const voucher = await voucherFor(newPurchaseId(), { deadline: (await chainTime()) + 60n });
      const signature = await sign(voucher);
      const testClient = createTestClient({ mode: "anvil", chain: localChain(anvil), transport: http(anvil.rpcUrl) });
      await testClient.increaseTime({ seconds: 120 });
      await testClient.mine({ blocks: 1 });
      expect(await revertErrorName(claim(buyer, voucher, signature))).toBe("VoucherExpired");
    });

    it("mints at most one certificate per purchase", async () => {
      const purchaseId = newPurchaseId();
      await claimCertificate(purchaseId);
      const retry = await voucherFor(purchaseId, { tokenURI: "ipfs://another" });
      expect(await revertErrorName(claim(buyer, retry, await sign(retry)))).toBe("AlreadyClaimed");
    });

    it("lets the owner revoke a certificate, which burns it for good", async () => {
      const purchaseId = newPurchaseId();
      const tokenId = BigInt(purchaseId);
      await claimCertificate(purchaseId);

      const receipt = await publicClient.waitForTransactionReceipt({ hash: await revoke(deployer, tokenId) });
      const revoked = parseEventLogs({ abi: certificateNftAbi, logs: receipt.logs, eventName: "CertificateRevoked" });
      expect(revoked[0]?.args).toEqual({ tokenId, purchaseId, reason: "refunded" });
      expect(await revertErrorName(certificate().read.ownerOf([tokenId]))).toBe("ERC721NonexistentToken");
      expect(await certificate().read.claimed([purchaseId])).toBe(true);

      const again = await voucherFor(purchaseId);
      expect(await revertErrorName(claim(buyer, again, await sign(again)))).toBe("AlreadyClaimed");
    });

    it("refuses revocation by anyone but the owner", async () => {
      const purchaseId = newPurchaseId();
      await claimCertificate(purchaseId);
      expect(await revertErrorName(revoke(stranger, BigInt(purchaseId)))).toBe("OwnableUnauthorizedAccount");
      expect(await certificate().read.ownerOf([BigInt(purchaseId)])).toBe(buyer.address);
    });
  });
});
