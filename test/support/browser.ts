import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium, type Frame, type Page } from "playwright-core";
import { type Address, type Chain, createPublicClient, createWalletClient, type Hex, http, isAddressEqual } from "viem";
import { privateKeyToAccount } from "viem/accounts";

// What every page test shares: Debian's Chromium with the flags of this closed
// network, a folder of artefacts (screenshots, axe-core reports; not committed), and
// axe-core run inside the page from the installed package.

const CHROMIUM = "/usr/bin/chromium";

/** No update checks, sync, QUIC or first-run fetches: the browser talks to the service under test only. */
const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** Fails early, with the fix, when the browser is not installed (before a test starts a chain). */
export function requireChromium(): void {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `${CHROMIUM} is missing: install Debian's package (apt-get update && apt-get install -y chromium); .ci/run does.`,
    );
  }
}

/** `test-artifacts/<name>`, emptied: what a run leaves behind is this run's only. */
export function freshArtifacts(name: string): string {
  const folder = join(process.cwd(), "test-artifacts", name);
  rmSync(folder, { recursive: true, force: true });
  mkdirSync(folder, { recursive: true });
  return folder;
}

export type Chromium = { context: BrowserContext; close: () => Promise<void> };

/** A headless Chromium with its own profile folder, removed again by `close`. */
export async function launchChromium(
  name: string,
  viewport?: { width: number; height: number },
  extraArgs: string[] = [],
): Promise<Chromium> {
  requireChromium();
  const userDataDir = mkdtempSync(join(tmpdir(), `chromium-${name}-`));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: [...CHROMIUM_ARGS, ...extraArgs],
    ...(viewport === undefined ? {} : { viewport }),
  });
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}

type AxeViolation = { id: string; impact: string | null; help: string; nodes: { target: unknown }[] };

let axeSource: string | undefined;

/**
 * Runs axe-core in the page or frame, writes its violations to `reportPath` (JSON)
 * and answers them as readable lines: all of them, or with `blockingOnly` the
 * serious and critical ones. The caller asserts, so a failure names its screen.
 */
export async function axeFindings(
  target: Page | Frame,
  reportPath: string,
  options: { blockingOnly: boolean },
): Promise<string[]> {
  axeSource ??= readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
  await target.evaluate(axeSource);
  const result = (await target.evaluate(() =>
    (window as unknown as { axe: { run: (context: Document, options: unknown) => Promise<unknown> } }).axe.run(document, {
      resultTypes: ["violations"],
    }),
  )) as { violations: AxeViolation[] };
  writeFileSync(reportPath, JSON.stringify(result.violations, null, 2));
  return result.violations
    .filter((violation) => !options.blockingOnly || violation.impact === "serious" || violation.impact === "critical")
    .map(
      (violation) =>
        `${violation.id} (${violation.impact}): ${violation.help} at ${JSON.stringify(violation.nodes.map((node) => node.target))}`,
    );
}

/**
 * `window.ethereum` in every page of `browser`, forwarding each request to a key held
 * in this process: accounts, chain id, `personal_sign` (SIWE), `eth_signTypedData_v4`
 * (EIP-3009, reward vouchers) and `eth_sendTransaction` are answered with that key, and
 * a switch to any chain but the stack's is refused as a wallet that lacks it would;
 * every other request (reads) goes to the chain, or with `reads: "refuse"` is refused
 * (a page that must not read through the wallet). `key` is read at each request, so a
 * test may change wallets between steps; `onRequest` sees each request first.
 */
export async function injectTestWallet(
  browser: BrowserContext,
  params: {
    chain: Chain;
    rpcUrl: string;
    key: () => Hex;
    onRequest?: (method: string, params: unknown[]) => void;
    reads?: "node" | "refuse";
  },
): Promise<void> {
  const chainIdHex = `0x${params.chain.id.toString(16)}`;
  const reader = createPublicClient({ chain: params.chain, transport: http(params.rpcUrl) });
  await browser.exposeFunction("__testWalletRequest", async (method: string, args: unknown[]) => {
    params.onRequest?.(method, args);
    const account = privateKeyToAccount(params.key());
    switch (method) {
      case "eth_requestAccounts":
      case "eth_accounts":
        return [account.address];
      case "eth_chainId":
        return chainIdHex;
      case "wallet_switchEthereumChain": {
        const wanted = (args[0] as { chainId: string }).chainId;
        if (wanted.toLowerCase() !== chainIdHex) throw new Error(`test wallet has no chain ${wanted}`);
        return null;
      }
      case "personal_sign": {
        const [message, from] = args as [Hex, Address];
        if (!isAddressEqual(from, account.address)) throw new Error("unknown signer");
        return account.signMessage({ message: { raw: message } });
      }
      case "eth_signTypedData_v4": {
        const [from, typed] = args as [Address, string];
        if (!isAddressEqual(from, account.address)) throw new Error("unknown signer");
        const { domain, types, primaryType, message } = JSON.parse(typed);
        delete types.EIP712Domain;
        return account.signTypedData({ domain, types, primaryType, message });
      }
      case "eth_sendTransaction": {
        const transaction = args[0] as { from: Address; to: Address; data: Hex; value?: Hex };
        if (!isAddressEqual(transaction.from, account.address)) throw new Error("unknown sender");
        const wallet = createWalletClient({ account, chain: params.chain, transport: http(params.rpcUrl) });
        return wallet.sendTransaction({
          account,
          chain: params.chain,
          to: transaction.to,
          data: transaction.data,
          value: transaction.value === undefined ? undefined : BigInt(transaction.value),
        });
      }
      default:
        if (params.reads === "refuse") throw new Error(`test wallet: ${method} is not supported`);
        return reader.request({ method, params: args } as never);
    }
  });
  await browser.addInitScript(() => {
    const target = window as unknown as Record<string, unknown>;
    const forward = target.__testWalletRequest as (method: string, params: unknown[]) => Promise<unknown>;
    target.ethereum = {
      isTestWallet: true,
      request: ({ method, params }: { method: string; params?: unknown[] }) => forward(method, params ?? []),
      on: () => undefined,
      removeListener: () => undefined,
    };
  });
}
