import { fileURLToPath } from "node:url";

/**
 * The hosted pages' own script and style, plus the partner-facing component
 * (`/assets/checkout-component.js`). Plain browser files beside this module;
 * only these names are served, nothing is fetched from anywhere else.
 */
export const HOSTED_ASSETS = [
  "checkout-component.js",
  "hosted-api.js",
  "checkout-page.js",
  "claim-page.js",
  "gasless.js",
  "reward-claim.js",
  "hosted.css",
  "refund-page.js",
  "subscription-common.js",
  "subscribe-page.js",
  "subscription-page.js",
] as const;
export type HostedAssetName = (typeof HOSTED_ASSETS)[number];

/** The directory of the hosted assets, absolute (`api/hosted/assets/`). */
export const HOSTED_ASSETS_DIR = fileURLToPath(new URL("./assets/", import.meta.url));

/** The asset of that name, or undefined for any other name (a path, a file beside them that is not listed). */
export function hostedAssetName(name: string): HostedAssetName | undefined {
  return HOSTED_ASSETS.find((asset) => asset === name);
}
