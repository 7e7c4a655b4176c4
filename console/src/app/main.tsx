import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { type Chain, custom, defineChain } from "viem";
import { createConfig, injected, WagmiProvider } from "wagmi";
import { api } from "../api";
import type { Answer } from "../api-types";
import { SessionProvider } from "../session";
import { App } from "./app";
import "../console.css";

type Health = Answer<"/v1/health">;

/**
 * The chains come from the service's own health answer. The console never talks to
 * a node itself: reads come from the service's API, and everything that needs the
 * chain (signing, sending) goes through the injected wallet, which brings its own
 * node. wagmi's public transport therefore refuses every call instead of reaching
 * out to some default RPC URL.
 */
async function start() {
  const health = await api<Health>("/v1/health").catch((error: unknown) => (error as { body?: Health }).body ?? { chains: [] });
  const chains = health.chains.map((chain) =>
    defineChain({
      id: chain.chainId,
      name: chain.network,
      nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
      rpcUrls: { default: { http: [] } },
    }),
  );
  if (chains.length === 0)
    chains.push(
      defineChain({
        id: 31337,
        name: "local",
        nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
        rpcUrls: { default: { http: [] } },
      }),
    );
  const noPublicRpc = custom({
    request: async ({ method }: { method: string }) => {
      throw new Error(`The console does not call a node (${method}); the service answers reads and the wallet sends.`);
    },
  });
  const config = createConfig({
    chains: chains as unknown as [Chain, ...Chain[]],
    connectors: [injected()],
    multiInjectedProviderDiscovery: false,
    transports: Object.fromEntries(chains.map((chain) => [chain.id, noPublicRpc])),
  });
  const queryClient = new QueryClient({ defaultOptions: { queries: { retry: false, refetchOnWindowFocus: false } } });
  const root = document.getElementById("root");
  if (root === null) return;
  createRoot(root).render(
    <StrictMode>
      <WagmiProvider config={config}>
        <QueryClientProvider client={queryClient}>
          <SessionProvider>
            <App />
          </SessionProvider>
        </QueryClientProvider>
      </WagmiProvider>
    </StrictMode>,
  );
}

void start();
