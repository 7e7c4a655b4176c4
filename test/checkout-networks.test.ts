import { join } from "node:path";
import { type Address, createWalletClient, type Hex, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { insertPaymentAddress } from "../api/partners/payment-addresses.js";
import { openSqliteStore } from "../api/store/open-store.js";
import { testUsdcAbi } from "../contracts/generated/index.js";
import { type AnvilInstance, startAnvil } from "../local/anvil.js";
import { deployTestUsdc, localChain } from "../local/deploy.js";
import { addressOf, anvilAccounts, loadOrCreateLocalSecrets } from "../local/local-secrets.js";
import { createSession, sessionBody, submitHash } from "./support/checkout-helpers.js";
import { newDataDir, startTestStack, type TestStack, waitFor } from "./support/test-stack.js";

// Two indexed networks: the local chain and a second Anvil standing in for Base
// Sepolia (chain id 84532) with its own USDC, watched at the same payment address.
let stack: TestStack;
let sepolia: AnvilInstance;
let sepoliaUsdc: Address;
const [deployer, payer] = anvilAccounts(2) as [{ address: Hex; privateKey: Hex }, { address: Hex; privateKey: Hex }];

beforeAll(async () => {
  sepolia = await startAnvil({ chainId: 84532 });
  sepoliaUsdc = await deployTestUsdc({ rpcUrl: sepolia.rpcUrl, chainId: 84532, deployerPrivateKey: deployer.privateKey });
  const owner = createWalletClient({
    chain: localChain({ rpcUrl: sepolia.rpcUrl, chainId: 84532 }),
    transport: http(sepolia.rpcUrl),
    account: privateKeyToAccount(deployer.privateKey),
  });
  await owner.writeContract({ address: sepoliaUsdc, abi: testUsdcAbi, functionName: "mint", args: [payer.address, 10n ** 12n] });

  const dataDir = newDataDir();
  const paymentAddress = addressOf(loadOrCreateLocalSecrets(dataDir).paymentPrivateKeys[0]!);
  stack = await startTestStack({
    dataDir,
    env: {
      NETWORKS: "local,base-sepolia",
      BASE_SEPOLIA_RPC_URL: sepolia.rpcUrl,
      BASE_SEPOLIA_USDC_ADDRESS: sepoliaUsdc,
      BASE_SEPOLIA_PAYMENT_ADDRESSES: paymentAddress,
      BASE_SEPOLIA_START_BLOCK: "0",
    },
  });
  // The demo partner also holds its address on base-sepolia.
  const store = openSqliteStore(join(dataDir, "app.sqlite"));
  await insertPaymentAddress(store, {
    partnerId: stack.local.partner.id,
    network: "base-sepolia",
    chainId: 84532,
    address: paymentAddress,
  });
  await store.destroy();
});
afterAll(async () => {
  await stack?.stop();
  await sepolia?.stop();
});

describe("networks", () => {
  it("refuses a hash of a transfer made on another network", async () => {
    const session = await createSession(stack);
    expect(session.network).toBe("local");
    const wallet = createWalletClient({
      chain: localChain({ rpcUrl: sepolia.rpcUrl, chainId: 84532 }),
      transport: http(sepolia.rpcUrl),
      account: privateKeyToAccount(payer.privateKey),
    });
    const hash = await wallet.writeContract({
      address: sepoliaUsdc,
      abi: testUsdcAbi,
      functionName: "transfer",
      args: [session.payment.recipient, BigInt(session.payment.amount)],
    });
    // The transfer is indexed on base-sepolia ...
    await waitFor(async () => {
      const page = await (await stack.partnerFetch(`/v1/transfers?txHash=${hash}&network=base-sepolia`)).json();
      return page.data.length > 0 ? page : undefined;
    });
    // ... and does not pay a session on local.
    const response = await submitHash(stack, session.clientToken, hash);
    expect(response.status).toBe(422);
    expect(await response.json()).toMatchObject({ code: "wrong_network", reason: "wrong_network" });
  });

  it("creates a session on the network the partner names, and refuses one that is not enabled", async () => {
    const onSepolia = await createSession(stack, { network: "base-sepolia" });
    expect(onSepolia).toMatchObject({ network: "base-sepolia", chainId: 84532 });
    const response = await stack.partnerFetch("/v1/checkout/sessions", {
      method: "POST",
      json: sessionBody({ network: "base" }),
    });
    expect(response.status).toBe(422);
    expect(await response.json()).toMatchObject({
      code: "unsupported_network",
      detail: "Enabled networks: local, base-sepolia.",
    });
  });
});
