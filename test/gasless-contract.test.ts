import {
  type Abi,
  type Address,
  BaseError,
  ContractFunctionRevertedError,
  createPublicClient,
  createWalletClient,
  type Hex,
  http,
  type PublicClient,
  parseEventLogs,
  toHex,
} from "viem";
import { generatePrivateKey, type HDAccount, mnemonicToAccount, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readTokenDomain, type TransferAuthorization, transferAuthorizationTypedData } from "../api/gasless/eip3009.js";
import { testUsdcAbi } from "../contracts/generated/index.js";
import { ANVIL_MNEMONIC, type AnvilInstance, startAnvil } from "../local/anvil.js";
import { deployContracts, localChain } from "../local/deploy.js";
import { compileSolidityFiles } from "../scripts/compile-contracts-lib.js";

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

const walletOf = (account: HDAccount) => createWalletClient({ account, chain: localChain(anvil), transport: http(anvil.rpcUrl) });
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
  anvil = await startAnvil();
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

afterAll(async () => {
  await anvil?.stop();
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
      await revertReason("transferWithAuthorization", auth, await signTransfer(auth, privateKeyToAccount(generatePrivateKey()))),
    ).toBe("EIP3009: invalid signature");
    const receipt = await submit("transferWithAuthorization", auth, await signTransfer(auth, walletOwner));
    expect(receipt.status).toBe("success");
    expect(await balanceOf(smartWallet)).toBe(3_000_000n);
  });
});
