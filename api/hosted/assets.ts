import { readFileSync } from "node:fs";

const CONTENT_TYPES = { js: "text/javascript; charset=utf-8", css: "text/css; charset=utf-8" } as const;

/**
 * The hosted pages' own script and style, plus the partner-facing component
 * (`/assets/checkout-component.js`). Plain browser files beside this module, read
 * once; nothing is fetched from anywhere else.
 */
export const HOSTED_ASSETS = [
  "checkout-component.js",
  "hosted-api.js",
  "checkout-page.js",
  "claim-page.js",
  "gasless.js",
  "hosted.css",
] as const;
export type HostedAssetName = (typeof HOSTED_ASSETS)[number];

const cache = new Map<HostedAssetName, { body: string; contentType: string }>();

export function hostedAsset(name: string): { body: string; contentType: string } | undefined {
  if (!(HOSTED_ASSETS as readonly string[]).includes(name)) return undefined;
  const asset = name as HostedAssetName;
  let loaded = cache.get(asset);
  if (loaded === undefined) {
    const extension = asset.endsWith(".css") ? "css" : "js";
    loaded = { body: readFileSync(new URL(`./assets/${asset}`, import.meta.url), "utf8"), contentType: CONTENT_TYPES[extension] };
    cache.set(asset, loaded);
  }
  return loaded;
}
