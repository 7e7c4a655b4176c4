import {
  type Address,
  BaseError,
  ContractFunctionRevertedError,
  createPublicClient,
  createTestClient,
  createWalletClient,
  type Hex,
  http,
  type PublicClient,
  parseEventLogs,
  toHex,
} from "viem";
import { generatePrivateKey, type HDAccount, mnemonicToAccount, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RewardVoucher, rewardIdOnChain, rewardVoucherDomain, signRewardVoucher } from "../api/rewards/reward-voucher.js";
import { rewardDistributorAbi, testUsdcAbi } from "../contracts/generated/index.js";
import { ANVIL_MNEMONIC, type AnvilInstance, startAnvil } from "../local/anvil.js";
import { type ContractDeployment, deployContracts, localChain } from "../local/deploy.js";

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
    anvil = await startAnvil();
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

  afterAll(async () => {
    await anvil?.stop();
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
