import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Address, createPublicClient, getAddress, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { certificateNftAbi, rewardDistributorAbi, subscriptionManagerAbi } from "../contracts/generated/index.js";
import { type AnvilInstance, startAnvil } from "../local/anvil.js";
import { anvilAccounts } from "../local/local-secrets.js";
import { settlement } from "./support/operator-cli.js";

// `settlement contracts deploy` against an Anvil that answers as Base Sepolia (chain 84532):
// what an operator runs once before going live (docs/deploy.md).
let anvil: AnvilInstance;
let dir: string;
let env: NodeJS.ProcessEnv;
const voucherKey = generatePrivateKey();

beforeAll(async () => {
  anvil = await startAnvil({ chainId: 84532 });
  dir = mkdtempSync(join(tmpdir(), "settlement-deploy-"));
  writeFileSync(join(dir, "voucher.key"), voucherKey.slice(2));
  writeFileSync(join(dir, "deployer.key"), anvilAccounts()[3]!.privateKey);
  writeFileSync(join(dir, "empty.key"), generatePrivateKey());
  env = { BASE_SEPOLIA_RPC_URL: anvil.rpcUrl, VOUCHER_KEY_FILE: join(dir, "voucher.key") };
}, 60_000);

afterAll(async () => {
  await anvil?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("settlement contracts deploy", () => {
  it("deploys the three contracts, the voucher key trusted by two, and prints the variables to set", async () => {
    const run = await settlement(
      ["contracts", "deploy", "--network", "base-sepolia", "--deployer-key-file", join(dir, "deployer.key"), "--json"],
      env,
    );
    expect(run.code, run.stderr).toBe(0);
    const out = run.json();
    const node = createPublicClient({ transport: http(anvil.rpcUrl) });
    const signer = privateKeyToAccount(voucherKey).address;
    expect(await node.readContract({ address: out.certificate, abi: certificateNftAbi, functionName: "voucherSigner" })).toBe(
      signer,
    );
    expect(
      await node.readContract({ address: out.rewardDistributor, abi: rewardDistributorAbi, functionName: "voucherSigner" }),
    ).toBe(signer);
    const [, name, version, chainId, verifyingContract] = await node.readContract({
      address: out.rewardDistributor,
      abi: rewardDistributorAbi,
      functionName: "eip712Domain",
    });
    expect({ name, version, chainId, verifyingContract }).toEqual({
      name: "RewardDistributor",
      version: "1",
      chainId: 84532n,
      verifyingContract: getAddress(out.rewardDistributor as Address),
    });
    const [, managerName, , managerChainId, managerContract] = await node.readContract({
      address: out.subscriptionManager,
      abi: subscriptionManagerAbi,
      functionName: "eip712Domain",
    });
    expect({ managerName, managerChainId, managerContract }).toEqual({
      managerName: "SubscriptionManager",
      managerChainId: 84532n,
      managerContract: getAddress(out.subscriptionManager as Address),
    });
    expect(out.variables).toEqual({
      BASE_SEPOLIA_CERTIFICATE_ADDRESS: out.certificate,
      BASE_SEPOLIA_REWARD_DISTRIBUTOR_ADDRESS: out.rewardDistributor,
      BASE_SEPOLIA_SUBSCRIPTION_MANAGER_ADDRESS: out.subscriptionManager,
    });
    const text = await settlement(
      ["contracts", "deploy", "--network", "base-sepolia", "--deployer-key-file", join(dir, "deployer.key")],
      env,
    );
    expect(text.stdout).toMatch(/BASE_SEPOLIA_REWARD_DISTRIBUTOR_ADDRESS=0x[0-9a-fA-F]{40}/);
    expect(text.stdout).toMatch(/BASE_SEPOLIA_SUBSCRIPTION_MANAGER_ADDRESS=0x[0-9a-fA-F]{40}/);
  }, 60_000);

  it("refuses a node of another chain and a deployer without ETH, deploying nothing", async () => {
    const node = createPublicClient({ transport: http(anvil.rpcUrl) });
    const before = await node.getBlockNumber();
    const wrongChain = await settlement(
      ["contracts", "deploy", "--network", "base", "--deployer-key-file", join(dir, "deployer.key")],
      { ...env, BASE_RPC_URL: anvil.rpcUrl },
    );
    expect(wrongChain.code).toBe(1);
    expect(wrongChain.stderr).toContain("is chain 84532, not base (8453)");
    const empty = await settlement(
      ["contracts", "deploy", "--network", "base-sepolia", "--deployer-key-file", join(dir, "empty.key")],
      env,
    );
    expect(empty.code).toBe(1);
    expect(empty.stderr).toContain("holds no ETH");
    const missing = await settlement(["contracts", "deploy", "--network", "base-sepolia"], env);
    expect(missing.code).toBe(2);
    expect(await node.getBlockNumber()).toBe(before);
  }, 60_000);
});
