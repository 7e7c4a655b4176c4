import {
  type Abi,
  type Address,
  BaseError,
  ContractFunctionRevertedError,
  createPublicClient,
  createTestClient,
  createWalletClient,
  getAddress,
  type Hex,
  http,
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
import { readTokenDomain } from "../api/gasless/eip3009.js";
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
import { subscriptionManagerAbi, testUsdcAbi } from "../contracts/generated/index.js";
import { ANVIL_MNEMONIC, type AnvilInstance, startAnvil } from "../local/anvil.js";
import { type ContractDeployment, deployContracts, localChain } from "../local/deploy.js";
import { compileSolidityFiles } from "../scripts/compile-contracts-lib.js";

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
  anvil = await startAnvil();
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

afterAll(async () => {
  await anvil?.stop();
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
    expect(parseEventLogs({ abi: subscriptionManagerAbi, logs: receipt.logs, eventName: "Charged" }).map((e) => e.args)).toEqual([
      { id: onchainId, periodIndex: 0n, amount: AMOUNT },
    ]);
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
    expect(parseEventLogs({ abi: subscriptionManagerAbi, logs: next.logs, eventName: "Charged" })[0]?.args.periodIndex).toBe(1n);
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
