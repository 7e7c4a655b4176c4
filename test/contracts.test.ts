import {
  type Abi,
  type Address,
  BaseError,
  ContractFunctionRevertedError,
  createPublicClient,
  createTestClient,
  createWalletClient,
  getAddress,
  getContract,
  type Hex,
  http,
  keccak256,
  type LocalAccount,
  type PublicClient,
  parseEther,
  parseEventLogs,
  parseSignature,
  type TestClient,
  toHex,
} from "viem";
import { generatePrivateKey, type HDAccount, mnemonicToAccount, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CertificateVoucher, signCertificateVoucher } from "../api/certificates/voucher-typed-data.js";
import { readTokenDomain, type TransferAuthorization, transferAuthorizationTypedData } from "../api/gasless/eip3009.js";
import { type RewardVoucher, rewardIdOnChain, rewardVoucherDomain, signRewardVoucher } from "../api/rewards/reward-voucher.js";
import {
  cancelTypedData,
  OPEN_ENDED,
  permitTypedData,
  type SubscriptionTerms,
  subscriptionDomain,
  subscriptionIdOnChain,
  subscriptionSalt,
  subscriptionTypedData,
} from "../api/subscriptions/subscription-terms.js";
import { certificateNftAbi, rewardDistributorAbi, subscriptionManagerAbi, testUsdcAbi } from "../contracts/generated/index.js";
import { ANVIL_MNEMONIC, type AnvilInstance, startAnvil } from "../local/anvil.js";
import { type ContractDeployment, deployContracts, localChain } from "../local/deploy.js";
import { compileSolidityFiles } from "../scripts/compile-contracts-lib.js";

// Our contracts on one bare Anvil, no indexer: what were 4 files (gasless-contract, contracts,
// reward-distributor, subscription-manager), a describe block each, run in that order, each deploying
// its own contracts and reading the Anvil through sharedAnvil(). subscription-manager runs last: it
// moves the chain's clock forward by whole periods. One Anvil, not 4.
let shared: AnvilInstance;
const sharedAnvil = () => shared;

beforeAll(async () => {
  shared = await startAnvil();
});

afterAll(async () => {
  await shared?.stop();
});

describe("gasless-contract", () => {
  // TestUSDC's EIP-3009 against the EIP's rules, on a bare Anvil (no indexer): a holder
  // signs, anyone submits; expired, not-yet-valid, reused, cancelled and forged
  // authorizations revert; receiveWithAuthorization only from the payee; EIP-1271 wallets.

  const holder = mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: 1 });
  const relayer = mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: 2 });
  const payee = mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: 3 });
  const walletOwner = privateKeyToAccount(generatePrivateKey());

  let anvil: AnvilInstance;
  let publicClient: PublicClient;
  let usdc: Address;

  const walletOf = (account: HDAccount) =>
    createWalletClient({ account, chain: localChain(anvil), transport: http(anvil.rpcUrl) });
  const randomNonce = (): Hex => toHex(crypto.getRandomValues(new Uint8Array(32)));
  const chainTime = async () => (await publicClient.getBlock()).timestamp;
  const balanceOf = (address: Address) =>
    publicClient.readContract({ address: usdc, abi: testUsdcAbi, functionName: "balanceOf", args: [address] });

  async function authorization(overrides: Partial<TransferAuthorization> = {}): Promise<TransferAuthorization> {
    const now = await chainTime();
    return {
      from: holder.address,
      to: payee.address,
      value: 1_000_000n,
      validAfter: 0n,
      validBefore: now + 600n,
      nonce: randomNonce(),
      ...overrides,
    };
  }

  async function signTransfer(auth: TransferAuthorization, signer: { signTypedData: HDAccount["signTypedData"] } = holder) {
    const domain = await readTokenDomain(publicClient, { token: usdc, chainId: anvil.chainId });
    return signer.signTypedData(transferAuthorizationTypedData(domain, auth));
  }

  const args = (auth: TransferAuthorization, signature: Hex) =>
    [auth.from, auth.to, auth.value, auth.validAfter, auth.validBefore, auth.nonce, signature] as const;

  async function submit(
    functionName: "transferWithAuthorization" | "receiveWithAuthorization",
    auth: TransferAuthorization,
    signature: Hex,
    sender: HDAccount = relayer,
  ) {
    const hash = await walletOf(sender).writeContract({
      address: usdc,
      abi: testUsdcAbi,
      functionName,
      args: args(auth, signature),
      chain: localChain(anvil),
    });
    return publicClient.waitForTransactionReceipt({ hash });
  }

  /** The revert reason of a call, as the token states it. */
  async function revertReason(
    functionName: "transferWithAuthorization" | "receiveWithAuthorization",
    auth: TransferAuthorization,
    signature: Hex,
    sender: HDAccount = relayer,
  ) {
    try {
      await publicClient.simulateContract({
        account: sender,
        address: usdc,
        abi: testUsdcAbi,
        functionName,
        args: args(auth, signature),
      });
    } catch (error) {
      const reverted = error instanceof BaseError ? error.walk((cause) => cause instanceof ContractFunctionRevertedError) : null;
      if (reverted instanceof ContractFunctionRevertedError) return reverted.reason;
      throw error;
    }
    return "did not revert";
  }

  beforeAll(async () => {
    anvil = sharedAnvil();
    publicClient = createPublicClient({
      chain: localChain(anvil),
      transport: http(anvil.rpcUrl),
      pollingInterval: 50,
    }) as PublicClient;
    const deployer = mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: 0 });
    const deployment = await deployContracts({
      rpcUrl: anvil.rpcUrl,
      chainId: anvil.chainId,
      deployerPrivateKey: toHex(deployer.getHdKey().privateKey!),
      voucherSigner: deployer.address,
      mintTo: [{ address: holder.address, amount: 100_000_000n }],
    });
    usdc = deployment.usdc;
  });

  describe("TestUSDC EIP-3009", () => {
    it("publishes the EIP-712 domain the service signs against (ERC-5267)", async () => {
      const domain = await readTokenDomain(publicClient, { token: usdc, chainId: anvil.chainId });
      expect(domain).toEqual({ name: "USD Coin", version: "1", chainId: anvil.chainId, verifyingContract: usdc });
    });

    it("moves the holder's USDC when anyone submits the signed authorization, and marks the nonce used", async () => {
      const auth = await authorization();
      const before = await balanceOf(payee.address);
      const receipt = await submit("transferWithAuthorization", auth, await signTransfer(auth));
      expect(receipt.status).toBe("success");
      expect((await balanceOf(payee.address)) - before).toBe(auth.value);
      const used = parseEventLogs({ abi: testUsdcAbi, logs: receipt.logs, eventName: "AuthorizationUsed" });
      expect(used).toHaveLength(1);
      expect(used[0]!.args).toEqual({ authorizer: holder.address, nonce: auth.nonce });
      expect(
        await publicClient.readContract({
          address: usdc,
          abi: testUsdcAbi,
          functionName: "authorizationState",
          args: [holder.address, auth.nonce],
        }),
      ).toBe(true);
    });

    it("accepts the (v, r, s) form as well", async () => {
      const auth = await authorization();
      const signature = await signTransfer(auth);
      const r = `0x${signature.slice(2, 66)}` as Hex;
      const s = `0x${signature.slice(66, 130)}` as Hex;
      const v = Number.parseInt(signature.slice(130, 132), 16);
      const hash = await walletOf(relayer).writeContract({
        address: usdc,
        abi: testUsdcAbi,
        functionName: "transferWithAuthorization",
        args: [auth.from, auth.to, auth.value, auth.validAfter, auth.validBefore, auth.nonce, v, r, s],
        chain: localChain(anvil),
      });
      expect((await publicClient.waitForTransactionReceipt({ hash })).status).toBe("success");
    });

    it("refuses a reused nonce", async () => {
      const auth = await authorization();
      const signature = await signTransfer(auth);
      await submit("transferWithAuthorization", auth, signature);
      expect(await revertReason("transferWithAuthorization", auth, signature)).toBe("EIP3009: authorization is used or canceled");
    });

    it("refuses an expired authorization and one not yet valid", async () => {
      const now = await chainTime();
      const expired = await authorization({ validBefore: now });
      expect(await revertReason("transferWithAuthorization", expired, await signTransfer(expired))).toBe(
        "EIP3009: authorization is expired",
      );
      const early = await authorization({ validAfter: now + 3600n, validBefore: now + 7200n });
      expect(await revertReason("transferWithAuthorization", early, await signTransfer(early))).toBe(
        "EIP3009: authorization is not yet valid",
      );
    });

    it("refuses a signature by anyone but `from`, and a signed authorization whose fields were changed", async () => {
      const auth = await authorization();
      expect(await revertReason("transferWithAuthorization", auth, await signTransfer(auth, payee))).toBe(
        "EIP3009: invalid signature",
      );
      const signature = await signTransfer(auth);
      expect(await revertReason("transferWithAuthorization", { ...auth, value: auth.value + 1n }, signature)).toBe(
        "EIP3009: invalid signature",
      );
      expect(await revertReason("transferWithAuthorization", { ...auth, to: relayer.address }, signature)).toBe(
        "EIP3009: invalid signature",
      );
    });

    it("refuses an authorization its holder cancelled, and a cancellation signed by someone else", async () => {
      const auth = await authorization();
      const signature = await signTransfer(auth);
      const domain = await readTokenDomain(publicClient, { token: usdc, chainId: anvil.chainId });
      const cancelTypes = {
        CancelAuthorization: [
          { name: "authorizer", type: "address" },
          { name: "nonce", type: "bytes32" },
        ],
      } as const;
      const forged = await payee.signTypedData({
        domain,
        types: cancelTypes,
        primaryType: "CancelAuthorization",
        message: { authorizer: holder.address, nonce: auth.nonce },
      });
      await expect(
        publicClient.simulateContract({
          account: relayer,
          address: usdc,
          abi: testUsdcAbi,
          functionName: "cancelAuthorization",
          args: [holder.address, auth.nonce, forged],
        }),
      ).rejects.toThrow(/invalid signature/);
      const cancel = await holder.signTypedData({
        domain,
        types: cancelTypes,
        primaryType: "CancelAuthorization",
        message: { authorizer: holder.address, nonce: auth.nonce },
      });
      const hash = await walletOf(relayer).writeContract({
        address: usdc,
        abi: testUsdcAbi,
        functionName: "cancelAuthorization",
        args: [holder.address, auth.nonce, cancel],
        chain: localChain(anvil),
      });
      const receipt = await publicClient.waitForTransactionReceipt({ hash });
      expect(parseEventLogs({ abi: testUsdcAbi, logs: receipt.logs, eventName: "AuthorizationCanceled" })).toHaveLength(1);
      expect(await revertReason("transferWithAuthorization", auth, signature)).toBe("EIP3009: authorization is used or canceled");
    });

    it("lets only the payee submit receiveWithAuthorization", async () => {
      const auth = await authorization();
      const domain = await readTokenDomain(publicClient, { token: usdc, chainId: anvil.chainId });
      const signature = await holder.signTypedData({
        domain,
        types: { ReceiveWithAuthorization: transferAuthorizationTypedData(domain, auth).types.TransferWithAuthorization },
        primaryType: "ReceiveWithAuthorization",
        message: auth,
      });
      expect(await revertReason("receiveWithAuthorization", auth, signature, relayer)).toBe("EIP3009: caller must be the payee");
      // A TransferWithAuthorization signature is not a ReceiveWithAuthorization one.
      expect(await revertReason("receiveWithAuthorization", auth, await signTransfer(auth), payee)).toBe(
        "EIP3009: invalid signature",
      );
      const fundPayee = await submit("receiveWithAuthorization", auth, signature, payee).catch(async (error) => {
        throw error;
      });
      expect(fundPayee.status).toBe("success");
    });

    it("accepts an EIP-1271 smart wallet's authorization signed by its owner, and refuses a stranger's", async () => {
      const compiled = compileSolidityFiles(["test/contracts/OwnedSmartWallet.sol"]);
      const walletContract = compiled.find((contract) => contract.name === "OwnedSmartWallet")!;
      const deployHash = await walletOf(relayer).deployContract({
        abi: walletContract.abi as Abi,
        bytecode: walletContract.bytecode as Hex,
        args: [walletOwner.address],
        chain: localChain(anvil),
      });
      const smartWallet = (await publicClient.waitForTransactionReceipt({ hash: deployHash })).contractAddress as Address;
      const seed = await authorization({ to: smartWallet, value: 5_000_000n });
      await submit("transferWithAuthorization", seed, await signTransfer(seed));

      const auth = await authorization({ from: smartWallet, value: 2_000_000n });
      expect(
        await revertReason(
          "transferWithAuthorization",
          auth,
          await signTransfer(auth, privateKeyToAccount(generatePrivateKey())),
        ),
      ).toBe("EIP3009: invalid signature");
      const receipt = await submit("transferWithAuthorization", auth, await signTransfer(auth, walletOwner));
      expect(receipt.status).toBe("success");
      expect(await balanceOf(smartWallet)).toBe(3_000_000n);
    });
  });
});

describe("contracts", () => {
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
      anvil = sharedAnvil();
      publicClient = createPublicClient({ chain: localChain(anvil), transport: http(anvil.rpcUrl), pollingInterval: 100 });
      deployment = await deployContracts({
        rpcUrl: anvil.rpcUrl,
        chainId: anvil.chainId,
        deployerPrivateKey: privateKeyOf(deployer),
        voucherSigner: privateKeyToAccount(voucherPrivateKey).address,
        mintTo: [{ address: buyer.address, amount: 1_000_000_000n }],
      });
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
});

describe("reward-distributor", () => {
  const ONE_DAY = 86_400n;
  /** The token's errors too, so a refused transferFrom decodes (TestUSDC is OpenZeppelin's ERC20). */
  const claimAbi = [...rewardDistributorAbi, ...testUsdcAbi.filter((item) => item.type === "error")];

  const anvilAccount = (index: number): HDAccount => mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: index });
  const privateKeyOf = (account: HDAccount): Hex => toHex(account.getHdKey().privateKey!);

  /** The custom error a failed call reverted with, read from the decoded revert data. */
  async function revertErrorName(call: Promise<unknown>): Promise<string | undefined> {
    try {
      await call;
    } catch (error) {
      const reverted = error instanceof BaseError ? error.walk((cause) => cause instanceof ContractFunctionRevertedError) : null;
      if (reverted instanceof ContractFunctionRevertedError) return reverted.data?.errorName ?? reverted.reason;
      throw error;
    }
    throw new Error("expected the call to revert, but it succeeded");
  }

  let rewardCounter = 0;
  const newRewardId = () => rewardIdOnChain(`rw_contract_${++rewardCounter}_${Date.now()}`);

  describe("RewardDistributor", () => {
    const deployer = anvilAccount(0);
    const funder = anvilAccount(1);
    const recipient = anvilAccount(2);
    const submitter = anvilAccount(3);
    const poorFunder = anvilAccount(4);
    const voucherPrivateKey = generatePrivateKey();

    let anvil: AnvilInstance;
    let deployment: ContractDeployment;
    let publicClient: PublicClient;

    const walletOf = (account: HDAccount) =>
      createWalletClient({ account, chain: localChain(anvil), transport: http(anvil.rpcUrl) });

    const balanceOf = (address: Address) =>
      publicClient.readContract({ address: deployment.usdc, abi: testUsdcAbi, functionName: "balanceOf", args: [address] });

    async function voucherFor(overrides: Partial<RewardVoucher> = {}): Promise<RewardVoucher> {
      return {
        rewardId: newRewardId(),
        funder: funder.address,
        recipient: recipient.address,
        token: deployment.usdc,
        amount: 2_500_000n,
        deadline: (await publicClient.getBlock()).timestamp + ONE_DAY,
        ...overrides,
      };
    }

    const sign = (voucher: RewardVoucher, privateKey: Hex = voucherPrivateKey) =>
      signRewardVoucher({ privateKey, chainId: anvil.chainId, contract: deployment.rewardDistributor, voucher });

    const claim = (voucher: RewardVoucher, signature: Hex, from: HDAccount = submitter) =>
      walletOf(from).writeContract({
        address: deployment.rewardDistributor,
        abi: claimAbi,
        functionName: "claim",
        args: [voucher, signature],
      });

    async function approve(owner: HDAccount, amount: bigint) {
      const hash = await walletOf(owner).writeContract({
        address: deployment.usdc,
        abi: testUsdcAbi,
        functionName: "approve",
        args: [deployment.rewardDistributor, amount],
      });
      await publicClient.waitForTransactionReceipt({ hash });
    }

    beforeAll(async () => {
      anvil = sharedAnvil();
      publicClient = createPublicClient({ chain: localChain(anvil), transport: http(anvil.rpcUrl), pollingInterval: 100 });
      deployment = await deployContracts({
        rpcUrl: anvil.rpcUrl,
        chainId: anvil.chainId,
        deployerPrivateKey: privateKeyOf(deployer),
        voucherSigner: privateKeyToAccount(voucherPrivateKey).address,
        mintTo: [{ address: funder.address, amount: 1_000_000_000n }],
      });
      await approve(funder, 100_000_000n);
    });

    it("exposes its EIP-712 domain through EIP-5267, and the service signs against the same domain", async () => {
      const [fields, name, version, chainId, verifyingContract, salt, extensions] = await publicClient.readContract({
        address: deployment.rewardDistributor,
        abi: rewardDistributorAbi,
        functionName: "eip712Domain",
      });
      expect({ fields, name, version, chainId, verifyingContract, salt, extensions }).toEqual({
        fields: "0x0f",
        name: "RewardDistributor",
        version: "1",
        chainId: BigInt(anvil.chainId),
        verifyingContract: deployment.rewardDistributor,
        salt: `0x${"0".repeat(64)}`,
        extensions: [],
      });
      expect(rewardVoucherDomain({ chainId: anvil.chainId, contract: deployment.rewardDistributor })).toEqual({
        name,
        version,
        chainId: Number(chainId),
        verifyingContract,
      });
      expect(
        await publicClient.readContract({
          address: deployment.rewardDistributor,
          abi: rewardDistributorAbi,
          functionName: "voucherSigner",
        }),
      ).toBe(privateKeyToAccount(voucherPrivateKey).address);
    });

    it("pays the recipient from the funder when anyone submits a valid voucher, and emits RewardClaimed", async () => {
      const voucher = await voucherFor();
      const [funderBefore, recipientBefore, submitterBefore] = await Promise.all([
        balanceOf(funder.address),
        balanceOf(recipient.address),
        balanceOf(submitter.address),
      ]);
      const hash = await claim(voucher, await sign(voucher));
      const receipt = await publicClient.waitForTransactionReceipt({ hash });
      expect(receipt.status).toBe("success");
      expect(await balanceOf(funder.address)).toBe(funderBefore - voucher.amount);
      expect(await balanceOf(recipient.address)).toBe(recipientBefore + voucher.amount);
      expect(await balanceOf(submitter.address)).toBe(submitterBefore);
      const claimed = parseEventLogs({ abi: rewardDistributorAbi, logs: receipt.logs, eventName: "RewardClaimed" });
      expect(claimed.map((event) => event.args)).toEqual([
        {
          rewardId: voucher.rewardId,
          funder: funder.address,
          recipient: recipient.address,
          token: deployment.usdc,
          amount: voucher.amount,
        },
      ]);
      expect(
        await publicClient.readContract({
          address: deployment.rewardDistributor,
          abi: rewardDistributorAbi,
          functionName: "claimed",
          args: [voucher.rewardId],
        }),
      ).toBe(true);
    });

    it("refuses a replay of a claimed voucher, by anyone", async () => {
      const voucher = await voucherFor();
      const signature = await sign(voucher);
      await publicClient.waitForTransactionReceipt({ hash: await claim(voucher, signature) });
      expect(await revertErrorName(claim(voucher, signature))).toBe("AlreadyClaimed");
      expect(await revertErrorName(claim(voucher, signature, recipient))).toBe("AlreadyClaimed");
    });

    it("refuses a second voucher of the same reward id (another wallet, re-signed): once per reward", async () => {
      const first = await voucherFor();
      await publicClient.waitForTransactionReceipt({ hash: await claim(first, await sign(first)) });
      const second = { ...first, recipient: submitter.address };
      expect(await revertErrorName(claim(second, await sign(second)))).toBe("AlreadyClaimed");
    });

    it("refuses a voucher signed by another key", async () => {
      const voucher = await voucherFor();
      expect(await revertErrorName(claim(voucher, await sign(voucher, generatePrivateKey())))).toBe("InvalidVoucherSignature");
      expect(await revertErrorName(claim(voucher, "0x1234"))).toBe("InvalidVoucherSignature");
    });

    it("refuses a voucher whose amount, recipient, funder or token was changed after signing", async () => {
      const voucher = await voucherFor();
      const signature = await sign(voucher);
      for (const tampered of [
        { ...voucher, amount: voucher.amount + 1n },
        { ...voucher, recipient: submitter.address },
        { ...voucher, funder: poorFunder.address },
        { ...voucher, token: deployment.certificate },
        { ...voucher, deadline: voucher.deadline + 1n },
      ]) {
        expect(await revertErrorName(claim(tampered, signature))).toBe("InvalidVoucherSignature");
      }
      // The untouched voucher still pays: the refusals changed nothing.
      await publicClient.waitForTransactionReceipt({ hash: await claim(voucher, signature) });
    });

    it("refuses a voucher signed for another distributor (the domain binds the contract)", async () => {
      const voucher = await voucherFor();
      const elsewhere = await signRewardVoucher({
        privateKey: voucherPrivateKey,
        chainId: anvil.chainId,
        contract: deployment.certificate,
        voucher,
      });
      expect(await revertErrorName(claim(voucher, elsewhere))).toBe("InvalidVoucherSignature");
    });

    it("refuses a voucher after its deadline", async () => {
      const now = (await publicClient.getBlock()).timestamp;
      const voucher = await voucherFor({ deadline: now + 60n });
      const signature = await sign(voucher);
      const testClient = createTestClient({ mode: "anvil", chain: localChain(anvil), transport: http(anvil.rpcUrl) });
      await testClient.increaseTime({ seconds: 120 });
      await testClient.mine({ blocks: 1 });
      expect(await revertErrorName(claim(voucher, signature))).toBe("VoucherExpired");
    });

    it("refuses a zero amount", async () => {
      const voucher = await voucherFor({ amount: 0n });
      expect(await revertErrorName(claim(voucher, await sign(voucher)))).toBe("ZeroAmount");
    });

    it("reverts when the funder has not approved the distributor, or not enough, and pays nothing", async () => {
      const hash = await walletOf(funder).writeContract({
        address: deployment.usdc,
        abi: testUsdcAbi,
        functionName: "transfer",
        args: [poorFunder.address, 10_000_000n],
      });
      await publicClient.waitForTransactionReceipt({ hash });
      const noAllowance = await voucherFor({ funder: poorFunder.address, amount: 1_000_000n });
      const before = await balanceOf(recipient.address);
      expect(await revertErrorName(claim(noAllowance, await sign(noAllowance)))).toBe("ERC20InsufficientAllowance");
      await approve(poorFunder, 500_000n);
      expect(await revertErrorName(claim(noAllowance, await sign(noAllowance)))).toBe("ERC20InsufficientAllowance");
      expect(await balanceOf(recipient.address)).toBe(before);
      // The refused reward is still claimable once the funder approves enough.
      await approve(poorFunder, 1_000_000n);
      await publicClient.waitForTransactionReceipt({ hash: await claim(noAllowance, await sign(noAllowance)) });
      expect(await balanceOf(recipient.address)).toBe(before + 1_000_000n);
    });

    it("only the owner may change the voucher signer", async () => {
      const change = walletOf(submitter).writeContract({
        address: deployment.rewardDistributor,
        abi: rewardDistributorAbi,
        functionName: "setVoucherSigner",
        args: [submitter.address],
      });
      expect(await revertErrorName(change)).toBe("OwnableUnauthorizedAccount");
    });
  });
});

describe("subscription-manager", () => {
  // SubscriptionManager on a bare Anvil (no indexer): signed terms registered by anyone,
  // charged by anyone at most once per period and only inside [start, end), straight from
  // the subscriber to the payee, stopped by the subscriber or the payee; every refusal by its
  // custom error. Each test registers terms of its own (a fresh salt), so none depends on another.

  const DAY = 86_400;
  const AMOUNT = 9_990_000n;
  /** The token's errors too, so a refused transferFrom and a refused permit decode. */
  const managerAbi = [...subscriptionManagerAbi, ...testUsdcAbi.filter((item) => item.type === "error")];

  const anvilAccount = (index: number): HDAccount => mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: index });

  const deployer = anvilAccount(0);
  const subscriber = anvilAccount(1);
  const payee = anvilAccount(2);
  const relayer = anvilAccount(3);
  const stranger = anvilAccount(4);
  const otherPayee = anvilAccount(5);

  let anvil: AnvilInstance;
  let deployment: ContractDeployment;
  let publicClient: PublicClient;
  let testClient: TestClient;
  let manager: Address;
  let usdc: Address;
  let saltCounter = 0;

  const walletOf = (account: HDAccount | LocalAccount) =>
    createWalletClient({ account, chain: localChain(anvil), transport: http(anvil.rpcUrl) });
  const chainTime = async () => Number((await publicClient.getBlock()).timestamp);
  const balanceOf = (address: Address) =>
    publicClient.readContract({ address: usdc, abi: testUsdcAbi, functionName: "balanceOf", args: [address] });

  /** The custom error a failed call reverted with, read from the decoded revert data. */
  async function revertErrorName(call: Promise<unknown>): Promise<string | undefined> {
    try {
      await call;
    } catch (error) {
      const reverted = error instanceof BaseError ? error.walk((cause) => cause instanceof ContractFunctionRevertedError) : null;
      if (reverted instanceof ContractFunctionRevertedError) return reverted.data?.errorName ?? reverted.reason;
      throw error;
    }
    throw new Error("expected the call to revert, but it succeeded");
  }

  async function termsFor(overrides: Partial<SubscriptionTerms> = {}): Promise<SubscriptionTerms> {
    const start = await chainTime();
    return {
      subscriber: subscriber.address,
      payee: payee.address,
      token: usdc,
      amount: AMOUNT,
      period: 30 * DAY,
      start,
      end: OPEN_ENDED,
      salt: subscriptionSalt(`sub_contract_${++saltCounter}_${Date.now()}`),
      ...overrides,
    };
  }

  const idOf = (terms: SubscriptionTerms) => subscriptionIdOnChain({ chainId: anvil.chainId, contract: manager, terms });

  const signTerms = (terms: SubscriptionTerms, signer: { signTypedData: LocalAccount["signTypedData"] } = subscriber) =>
    signer.signTypedData(subscriptionTypedData({ chainId: anvil.chainId, contract: manager, terms }));

  const signCancel = (onchainId: Hex, signer: { signTypedData: LocalAccount["signTypedData"] } = subscriber) =>
    signer.signTypedData(cancelTypedData({ chainId: anvil.chainId, contract: manager, onchainId }));

  async function mined(hash: Promise<Hex>) {
    const receipt = await publicClient.waitForTransactionReceipt({ hash: await hash });
    expect(receipt.status).toBe("success");
    return receipt;
  }

  const subscribe = (terms: SubscriptionTerms, signature: Hex, from: HDAccount = relayer) =>
    walletOf(from).writeContract({ address: manager, abi: managerAbi, functionName: "subscribe", args: [terms, signature] });

  const charge = (onchainId: Hex, from: HDAccount = relayer) =>
    walletOf(from).writeContract({ address: manager, abi: managerAbi, functionName: "charge", args: [onchainId] });

  const cancel = (onchainId: Hex, from: HDAccount) =>
    walletOf(from).writeContract({ address: manager, abi: managerAbi, functionName: "cancel", args: [onchainId] });

  const cancelWithSignature = (onchainId: Hex, signature: Hex, from: HDAccount = relayer) =>
    walletOf(from).writeContract({
      address: manager,
      abi: managerAbi,
      functionName: "cancelWithSignature",
      args: [onchainId, signature],
    });

  async function approve(owner: HDAccount, amount: bigint) {
    await mined(
      walletOf(owner).writeContract({ address: usdc, abi: testUsdcAbi, functionName: "approve", args: [manager, amount] }),
    );
  }

  /** Registered, signed by the subscriber, submitted by the relayer. */
  async function registered(overrides: Partial<SubscriptionTerms> = {}) {
    const terms = await termsFor(overrides);
    await mined(subscribe(terms, await signTerms(terms)));
    return { terms, onchainId: idOf(terms) };
  }

  /** Moves the chain's clock forward and mines a block, so the next call sees the new time. */
  async function passTime(seconds: number) {
    await testClient.increaseTime({ seconds });
    await testClient.mine({ blocks: 1 });
  }

  async function signPermit(owner: LocalAccount, value: bigint, deadline: bigint) {
    const nonce = await publicClient.readContract({
      address: usdc,
      abi: testUsdcAbi,
      functionName: "nonces",
      args: [owner.address],
    });
    const domain = await readTokenDomain(publicClient, { token: usdc, chainId: anvil.chainId });
    return parseSignature(
      await owner.signTypedData(permitTypedData(domain, { owner: owner.address, spender: manager, value, nonce, deadline })),
    );
  }

  beforeAll(async () => {
    anvil = sharedAnvil();
    publicClient = createPublicClient({ chain: localChain(anvil), transport: http(anvil.rpcUrl), pollingInterval: 100 });
    testClient = createTestClient({ mode: "anvil", chain: localChain(anvil), transport: http(anvil.rpcUrl) });
    deployment = await deployContracts({
      rpcUrl: anvil.rpcUrl,
      chainId: anvil.chainId,
      deployerPrivateKey: toHex(deployer.getHdKey().privateKey!),
      voucherSigner: deployer.address,
      mintTo: [{ address: subscriber.address, amount: 1_000_000_000n }],
    });
    manager = deployment.subscriptionManager;
    usdc = deployment.usdc;
    await approve(subscriber, 2n ** 256n - 1n);
  });

  describe("SubscriptionManager: terms and registration", () => {
    it("exposes its EIP-712 domain, and the service's terms hash is the contract's on-chain id", async () => {
      const [fields, name, version, chainId, verifyingContract, salt, extensions] = await publicClient.readContract({
        address: manager,
        abi: subscriptionManagerAbi,
        functionName: "eip712Domain",
      });
      expect({ fields, name, version, chainId, verifyingContract, salt, extensions }).toEqual({
        fields: "0x0f",
        name: "SubscriptionManager",
        version: "1",
        chainId: BigInt(anvil.chainId),
        verifyingContract: manager,
        salt: `0x${"0".repeat(64)}`,
        extensions: [],
      });
      expect(subscriptionDomain({ chainId: anvil.chainId, contract: manager })).toEqual({
        name,
        version,
        chainId: Number(chainId),
        verifyingContract,
      });
      const terms = await termsFor();
      expect(
        await publicClient.readContract({
          address: manager,
          abi: subscriptionManagerAbi,
          functionName: "subscriptionId",
          args: [terms],
        }),
      ).toBe(idOf(terms));
    });

    it("registers terms the subscriber signed, submitted by anyone, emits Subscribed and moves no money", async () => {
      const terms = await termsFor({ end: (await chainTime()) + 365 * DAY });
      const before = await balanceOf(subscriber.address);
      const receipt = await mined(subscribe(terms, await signTerms(terms), stranger));
      const events = parseEventLogs({ abi: subscriptionManagerAbi, logs: receipt.logs, eventName: "Subscribed" });
      expect(events.map((event) => event.args)).toEqual([
        {
          id: idOf(terms),
          subscriber: subscriber.address,
          payee: payee.address,
          token: usdc,
          amount: AMOUNT,
          period: terms.period,
          start: terms.start,
          end: terms.end,
        },
      ]);
      expect(await balanceOf(subscriber.address)).toBe(before);
      expect(await balanceOf(manager)).toBe(0n);
      const registration = await publicClient.readContract({
        address: manager,
        abi: subscriptionManagerAbi,
        functionName: "registrationOf",
        args: [idOf(terms)],
      });
      expect(registration).toMatchObject({ registered: true, cancelled: false, nextPeriod: 0, payee: payee.address });
    });

    it("refuses to register the same terms twice, also after a cancel", async () => {
      const { terms, onchainId } = await registered();
      const signature = await signTerms(terms);
      expect(await revertErrorName(subscribe(terms, signature))).toBe("AlreadySubscribed");
      await mined(cancel(onchainId, subscriber));
      expect(await revertErrorName(subscribe(terms, signature, subscriber))).toBe("AlreadySubscribed");
    });

    it("refuses terms whose payee, amount, subscriber, token, period, window or salt changed after signing", async () => {
      const terms = await termsFor();
      const signature = await signTerms(terms);
      for (const tampered of [
        { ...terms, payee: otherPayee.address },
        { ...terms, amount: terms.amount + 1n },
        { ...terms, subscriber: stranger.address },
        { ...terms, token: deployment.certificate },
        { ...terms, period: terms.period - 1 },
        { ...terms, start: terms.start - 1 },
        { ...terms, end: terms.end - 1 },
        { ...terms, salt: terms.salt + 1n },
      ]) {
        expect(await revertErrorName(subscribe(tampered, signature))).toBe("InvalidSignature");
      }
      // The untouched terms still register: the refusals changed nothing.
      await mined(subscribe(terms, signature));
    });

    it("refuses terms signed by anyone but the subscriber, or for another manager", async () => {
      const terms = await termsFor();
      expect(await revertErrorName(subscribe(terms, await signTerms(terms, payee)))).toBe("InvalidSignature");
      expect(await revertErrorName(subscribe(terms, await signTerms(terms, privateKeyToAccount(generatePrivateKey()))))).toBe(
        "InvalidSignature",
      );
      expect(await revertErrorName(subscribe(terms, "0x1234"))).toBe("InvalidSignature");
      const elsewhere = await subscriber.signTypedData(
        subscriptionTypedData({ chainId: anvil.chainId, contract: deployment.rewardDistributor, terms }),
      );
      expect(await revertErrorName(subscribe(terms, elsewhere))).toBe("InvalidSignature");
    });

    it("refuses terms that could never be charged, whoever signed them", async () => {
      const now = await chainTime();
      const cases: [Partial<SubscriptionTerms>, string][] = [
        [{ amount: 0n }, "ZeroAmount"],
        [{ period: 0 }, "ZeroPeriod"],
        [{ payee: "0x0000000000000000000000000000000000000000" }, "ZeroPayee"],
        [{ start: now + DAY, end: now + DAY }, "EndNotAfterStart"],
        [{ start: now - 2 * DAY, end: now - DAY }, "TermsEnded"],
      ];
      for (const [overrides, error] of cases) {
        const terms = await termsFor(overrides);
        expect(await revertErrorName(subscribe(terms, await signTerms(terms)))).toBe(error);
      }
    });
  });

  describe("SubscriptionManager: charges", () => {
    it("pays exactly the amount from the subscriber to the payee, whoever calls, and emits Charged", async () => {
      const { onchainId } = await registered();
      const [subscriberBefore, payeeBefore, callerBefore] = await Promise.all([
        balanceOf(subscriber.address),
        balanceOf(payee.address),
        balanceOf(stranger.address),
      ]);
      const receipt = await mined(charge(onchainId, stranger));
      expect(
        parseEventLogs({ abi: subscriptionManagerAbi, logs: receipt.logs, eventName: "Charged" }).map((e) => e.args),
      ).toEqual([{ id: onchainId, periodIndex: 0n, amount: AMOUNT }]);
      const transfers = parseEventLogs({ abi: testUsdcAbi, logs: receipt.logs, eventName: "Transfer" });
      expect(transfers.map((event) => event.args)).toEqual([{ from: subscriber.address, to: payee.address, value: AMOUNT }]);
      expect(await balanceOf(subscriber.address)).toBe(subscriberBefore - AMOUNT);
      expect(await balanceOf(payee.address)).toBe(payeeBefore + AMOUNT);
      expect(await balanceOf(stranger.address)).toBe(callerBefore);
      expect(await balanceOf(manager)).toBe(0n);
    });

    it("charges at most once per period: a second charge in the same period reverts, the next period pays", async () => {
      const { onchainId } = await registered({ period: DAY });
      await mined(charge(onchainId));
      expect(await revertErrorName(charge(onchainId))).toBe("AlreadyCharged");
      expect(await revertErrorName(charge(onchainId, payee))).toBe("AlreadyCharged");
      await passTime(DAY);
      const next = await mined(charge(onchainId));
      expect(parseEventLogs({ abi: subscriptionManagerAbi, logs: next.logs, eventName: "Charged" })[0]?.args.periodIndex).toBe(
        1n,
      );
      expect(await revertErrorName(charge(onchainId))).toBe("AlreadyCharged");
    });

    it("never charges a missed period later: after a gap the charge is for the current period only", async () => {
      const { onchainId } = await registered({ period: DAY });
      await passTime(3 * DAY + 60);
      const receipt = await mined(charge(onchainId));
      expect(parseEventLogs({ abi: subscriptionManagerAbi, logs: receipt.logs, eventName: "Charged" })[0]?.args.periodIndex).toBe(
        3n,
      );
      expect(await revertErrorName(charge(onchainId))).toBe("AlreadyCharged");
    });

    it("refuses a charge before the start and after the end", async () => {
      const now = await chainTime();
      const { onchainId: future } = await registered({ start: now + 10 * DAY, end: now + 20 * DAY });
      expect(await revertErrorName(charge(future))).toBe("NotStarted");
      const { onchainId: short } = await registered({ period: DAY, start: now, end: now + 2 * DAY });
      await mined(charge(short));
      await passTime(2 * DAY + 60);
      expect(await revertErrorName(charge(short))).toBe("SubscriptionEnded");
    });

    it("refuses a charge of an id nobody registered", async () => {
      expect(await revertErrorName(charge(toHex(crypto.getRandomValues(new Uint8Array(32)))))).toBe("UnknownSubscription");
    });

    it("reverts without an allowance or balance and spends no period: once approved, the same period pays", async () => {
      const poor = privateKeyToAccount(generatePrivateKey());
      await mined(
        walletOf(subscriber).writeContract({
          address: usdc,
          abi: testUsdcAbi,
          functionName: "transfer",
          args: [poor.address, AMOUNT],
        }),
      );
      await testClient.setBalance({ address: poor.address, value: parseEther("1") });
      const terms = await termsFor({ subscriber: poor.address });
      await mined(subscribe(terms, await signTerms(terms, poor)));
      const onchainId = idOf(terms);
      expect(await revertErrorName(charge(onchainId))).toBe("ERC20InsufficientAllowance");
      await mined(
        walletOf(poor).writeContract({ address: usdc, abi: testUsdcAbi, functionName: "approve", args: [manager, AMOUNT] }),
      );
      await mined(charge(onchainId));
      await passTime(terms.period);
      await mined(
        walletOf(poor).writeContract({ address: usdc, abi: testUsdcAbi, functionName: "approve", args: [manager, AMOUNT] }),
      );
      expect(await revertErrorName(charge(onchainId))).toBe("ERC20InsufficientBalance");
      expect(await balanceOf(payee.address)).toBeGreaterThan(0n);
    });

    it("pays only the payee the subscriber signed for: no caller can redirect a charge", async () => {
      const { onchainId } = await registered();
      const before = await balanceOf(otherPayee.address);
      const receipt = await mined(charge(onchainId, otherPayee));
      const transfers = parseEventLogs({ abi: testUsdcAbi, logs: receipt.logs, eventName: "Transfer" });
      expect(transfers.map((event) => event.args.to)).toEqual([payee.address]);
      expect(await balanceOf(otherPayee.address)).toBe(before);
    });
  });

  describe("SubscriptionManager: cancellation", () => {
    it("the subscriber cancels; no charge follows, and a second cancel reverts", async () => {
      const { onchainId } = await registered();
      const receipt = await mined(cancel(onchainId, subscriber));
      expect(
        parseEventLogs({ abi: subscriptionManagerAbi, logs: receipt.logs, eventName: "Cancelled" }).map((e) => e.args),
      ).toEqual([{ id: onchainId, by: subscriber.address }]);
      expect(await revertErrorName(charge(onchainId))).toBe("SubscriptionCancelled");
      expect(await revertErrorName(cancel(onchainId, payee))).toBe("SubscriptionCancelled");
    });

    it("the payee cancels too; nobody else may", async () => {
      const { onchainId } = await registered({ period: DAY });
      await mined(charge(onchainId));
      expect(await revertErrorName(cancel(onchainId, stranger))).toBe("NotSubscriberOrPayee");
      expect(await revertErrorName(cancel(onchainId, otherPayee))).toBe("NotSubscriberOrPayee");
      const receipt = await mined(cancel(onchainId, payee));
      expect(parseEventLogs({ abi: subscriptionManagerAbi, logs: receipt.logs, eventName: "Cancelled" })[0]?.args.by).toBe(
        payee.address,
      );
      await passTime(DAY);
      expect(await revertErrorName(charge(onchainId))).toBe("SubscriptionCancelled");
      expect(await revertErrorName(cancel(toHex(crypto.getRandomValues(new Uint8Array(32))), subscriber))).toBe(
        "UnknownSubscription",
      );
    });

    it("a gasless cancel: the subscriber signs Cancel(id), anyone submits it, once", async () => {
      const { onchainId } = await registered();
      const signature = await signCancel(onchainId);
      const receipt = await mined(cancelWithSignature(onchainId, signature, stranger));
      expect(
        parseEventLogs({ abi: subscriptionManagerAbi, logs: receipt.logs, eventName: "Cancelled" }).map((e) => e.args),
      ).toEqual([{ id: onchainId, by: subscriber.address }]);
      expect(await revertErrorName(cancelWithSignature(onchainId, signature))).toBe("SubscriptionCancelled");
      expect(await revertErrorName(charge(onchainId))).toBe("SubscriptionCancelled");
    });

    it("refuses a gasless cancel signed by the payee, another key, or for another subscription", async () => {
      const { onchainId } = await registered();
      const { onchainId: other } = await registered();
      expect(await revertErrorName(cancelWithSignature(onchainId, await signCancel(onchainId, payee)))).toBe("InvalidSignature");
      expect(
        await revertErrorName(
          cancelWithSignature(onchainId, await signCancel(onchainId, privateKeyToAccount(generatePrivateKey()))),
        ),
      ).toBe("InvalidSignature");
      expect(await revertErrorName(cancelWithSignature(onchainId, await signCancel(other)))).toBe("InvalidSignature");
      expect(await revertErrorName(cancelWithSignature(toHex(crypto.getRandomValues(new Uint8Array(32))), "0x12"))).toBe(
        "UnknownSubscription",
      );
      // Still running: the refusals cancelled nothing.
      await mined(charge(onchainId));
    });
  });

  describe("SubscriptionManager: a wallet without ETH subscribes with a permit", () => {
    it("TestUSDC's EIP-2612 permit sets an allowance from a signature alone", async () => {
      const owner = privateKeyToAccount(generatePrivateKey());
      const deadline = BigInt((await chainTime()) + DAY);
      const { v, r, s } = await signPermit(owner, 123n, deadline);
      await mined(
        walletOf(relayer).writeContract({
          address: usdc,
          abi: testUsdcAbi,
          functionName: "permit",
          args: [owner.address, manager, 123n, deadline, Number(v), r, s],
        }),
      );
      expect(
        await publicClient.readContract({
          address: usdc,
          abi: testUsdcAbi,
          functionName: "allowance",
          args: [owner.address, manager],
        }),
      ).toBe(123n);
      expect(
        await publicClient.readContract({ address: usdc, abi: testUsdcAbi, functionName: "nonces", args: [owner.address] }),
      ).toBe(1n);
    });

    async function fundedWalletWithoutEth() {
      const owner = privateKeyToAccount(generatePrivateKey());
      await mined(
        walletOf(subscriber).writeContract({
          address: usdc,
          abi: testUsdcAbi,
          functionName: "transfer",
          args: [owner.address, 12n * AMOUNT],
        }),
      );
      expect(await publicClient.getBalance({ address: owner.address })).toBe(0n);
      return owner;
    }

    const subscribeWithPermit = (
      terms: SubscriptionTerms,
      signature: Hex,
      permitValue: bigint,
      deadline: bigint,
      permit: { v?: bigint; r: Hex; s: Hex },
    ) =>
      walletOf(relayer).writeContract({
        address: manager,
        abi: managerAbi,
        functionName: "subscribeWithPermit",
        args: [terms, signature, permitValue, deadline, Number(permit.v), permit.r, permit.s],
      });

    it("registers and sets the allowance in one transaction the relayer sends; the charge then pays", async () => {
      const owner = await fundedWalletWithoutEth();
      const terms = await termsFor({ subscriber: owner.address });
      const deadline = BigInt((await chainTime()) + DAY);
      const permitValue = 12n * AMOUNT;
      const permit = await signPermit(owner, permitValue, deadline);
      const receipt = await mined(subscribeWithPermit(terms, await signTerms(terms, owner), permitValue, deadline, permit));
      expect(parseEventLogs({ abi: subscriptionManagerAbi, logs: receipt.logs, eventName: "Subscribed" })[0]?.args.id).toBe(
        idOf(terms),
      );
      expect(
        await publicClient.readContract({
          address: usdc,
          abi: testUsdcAbi,
          functionName: "allowance",
          args: [owner.address, manager],
        }),
      ).toBe(permitValue);
      await mined(charge(idOf(terms)));
      expect(await balanceOf(owner.address)).toBe(11n * AMOUNT);
    });

    it("still registers when someone sent the same permit first (its allowance is there)", async () => {
      const owner = await fundedWalletWithoutEth();
      const terms = await termsFor({ subscriber: owner.address });
      const deadline = BigInt((await chainTime()) + DAY);
      const permitValue = 3n * AMOUNT;
      const permit = await signPermit(owner, permitValue, deadline);
      await mined(
        walletOf(stranger).writeContract({
          address: usdc,
          abi: testUsdcAbi,
          functionName: "permit",
          args: [owner.address, manager, permitValue, deadline, Number(permit.v), permit.r, permit.s],
        }),
      );
      await mined(subscribeWithPermit(terms, await signTerms(terms, owner), permitValue, deadline, permit));
      await mined(charge(idOf(terms)));
    });

    it("refuses when the permit does not apply and no allowance covers it, registering nothing", async () => {
      const owner = await fundedWalletWithoutEth();
      const terms = await termsFor({ subscriber: owner.address });
      const signature = await signTerms(terms, owner);
      const deadline = BigInt((await chainTime()) + DAY);
      const permitValue = 3n * AMOUNT;
      const byAnother = await signPermit(privateKeyToAccount(generatePrivateKey()), permitValue, deadline);
      expect(await revertErrorName(subscribeWithPermit(terms, signature, permitValue, deadline, byAnother))).toBe(
        "PermitNotApplied",
      );
      const ownPermit = await signPermit(owner, permitValue, deadline);
      // A permit for less than the value it is sent with does not apply either.
      expect(await revertErrorName(subscribeWithPermit(terms, signature, permitValue + 1n, deadline, ownPermit))).toBe(
        "PermitNotApplied",
      );
      expect(
        await publicClient.readContract({
          address: manager,
          abi: subscriptionManagerAbi,
          functionName: "registrationOf",
          args: [idOf(terms)],
        }),
      ).toMatchObject({ registered: false });
      // Terms checks come first: a tampered term is refused whatever the permit.
      expect(
        await revertErrorName(subscribeWithPermit({ ...terms, amount: 1n }, signature, permitValue, deadline, ownPermit)),
      ).toBe("InvalidSignature");
      await mined(subscribeWithPermit(terms, signature, permitValue, deadline, ownPermit));
    });
  });

  describe("SubscriptionManager: a contract wallet subscriber (ERC-1271)", () => {
    it("registers, is charged and cancels by its owner's signatures", async () => {
      const walletOwner = privateKeyToAccount(generatePrivateKey());
      const compiled = compileSolidityFiles(["test/contracts/OwnedSmartWallet.sol"]);
      const walletContract = compiled.find((contract) => contract.name === "OwnedSmartWallet")!;
      const deployed = await mined(
        walletOf(relayer).deployContract({
          abi: walletContract.abi as Abi,
          bytecode: walletContract.bytecode as Hex,
          args: [walletOwner.address],
        }),
      );
      const smartWallet = getAddress(deployed.contractAddress as Address);
      await mined(
        walletOf(subscriber).writeContract({
          address: usdc,
          abi: testUsdcAbi,
          functionName: "transfer",
          args: [smartWallet, AMOUNT],
        }),
      );
      // The wallet's own approve call, sent as the wallet (it has no execute function of its own).
      await testClient.impersonateAccount({ address: smartWallet });
      await testClient.setBalance({ address: smartWallet, value: parseEther("1") });
      const approveHash = await createWalletClient({ chain: localChain(anvil), transport: http(anvil.rpcUrl) }).writeContract({
        account: smartWallet,
        address: usdc,
        abi: testUsdcAbi,
        functionName: "approve",
        args: [manager, AMOUNT],
      });
      await mined(Promise.resolve(approveHash));
      await testClient.stopImpersonatingAccount({ address: smartWallet });

      const terms = await termsFor({ subscriber: smartWallet });
      expect(await revertErrorName(subscribe(terms, await signTerms(terms, privateKeyToAccount(generatePrivateKey()))))).toBe(
        "InvalidSignature",
      );
      await mined(subscribe(terms, await signTerms(terms, walletOwner)));
      const onchainId = idOf(terms);
      await mined(charge(onchainId));
      expect(await balanceOf(smartWallet)).toBe(0n);
      expect(await revertErrorName(cancelWithSignature(onchainId, await signCancel(onchainId, subscriber)))).toBe(
        "InvalidSignature",
      );
      const receipt = await mined(cancelWithSignature(onchainId, await signCancel(onchainId, walletOwner)));
      expect(parseEventLogs({ abi: subscriptionManagerAbi, logs: receipt.logs, eventName: "Cancelled" })[0]?.args.by).toBe(
        smartWallet,
      );
    });
  });
});
