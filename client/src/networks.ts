export type NetworkName = "base" | "base-sepolia" | "local";

/**
 * Where the client sends requests when `baseUrl` is not given. The hosted
 * hostnames are placeholders under the reserved `.example` domain until the
 * service has public ones, so a key can never leak to someone else's host. `local` is what
 * `npm start` prefers; it moves to a free port when 42069 is taken, so a local
 * tool should pass `baseUrl` from `.data/local.json`.
 */
export const DEFAULT_BASE_URLS: Record<NetworkName, string> = {
  base: "https://api.usdc-settlement.example",
  "base-sepolia": "https://sandbox.usdc-settlement.example",
  local: "http://127.0.0.1:42069",
};

export const CHAIN_IDS: Record<NetworkName, number> = { base: 8453, "base-sepolia": 84532, local: 31337 };
