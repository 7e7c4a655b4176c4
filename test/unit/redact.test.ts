import { describe, expect, it } from "vitest";
import { redactSecrets, redactUrl } from "../../api/logging/redact.js";

// Issue 24, finding 4: the one redaction of credentials in URLs.
describe("redactUrl", () => {
  it("hides userinfo, path, query and fragment, and keeps the endpoint", () => {
    expect(redactUrl("https://alice:s3cret@rpc.example.com/")).toBe("https://***@rpc.example.com/");
    expect(redactUrl("https://base-mainnet.g.alchemy.com/v2/Xq3bT9kP0aLm4Zr7Yc2Wd8Ne")).toBe(
      "https://base-mainnet.g.alchemy.com/***",
    );
    expect(redactUrl("https://rpc.example.com/base?apikey=abc&chain=8453")).toBe("https://rpc.example.com/***?***");
    expect(redactUrl("wss://node.example.com:8546/ws/0123456789abcdef0123#frag")).toBe("wss://node.example.com:8546/***#***");
    expect(redactUrl("http://127.0.0.1:8545")).toBe("http://127.0.0.1:8545/");
    expect(redactUrl("postgres://app:pw@db:5432/settlement")).toBe("postgres://***@db:5432/***");
  });

  // Issue 40 (second review, still open): a provider's key need not look like one. A short
  // key, one with a dot, or a query that is all key, were printed whole.
  it("hides every path segment after the host and the whole query, whatever they look like", () => {
    expect(redactUrl("https://base.example.com/v2/k3y.abc")).toBe("https://base.example.com/***");
    expect(redactUrl("https://rpc.example.com/sh0rt-key/")).toBe("https://rpc.example.com/***");
    expect(redactUrl("https://rpc.example.com/?Xq3bT9kP0aLm")).toBe("https://rpc.example.com/?***");
    expect(redactUrl("https://rpc.example.com/base?apikey=abc&chain=8453")).toBe("https://rpc.example.com/***?***");
    expect(redactUrl("http://127.0.0.1:8545")).toBe("http://127.0.0.1:8545/");
    expect(redactUrl("http://127.0.0.1:8545/")).toBe("http://127.0.0.1:8545/");
    expect(redactUrl("not a url://x/y")).not.toContain("y");
  });
});

describe("redactSecrets", () => {
  it("redacts every URL inside a message and keeps the words around it", () => {
    const message =
      "BASE_RPC_URL: eth_chainId failed (Request cannot be constructed from a URL that includes credentials: https://bob:hunter2@rpc.example.com/v2/0123456789abcdefABCDEF.)";
    const redacted = redactSecrets(message);
    expect(redacted).not.toContain("hunter2");
    expect(redacted).not.toContain("0123456789abcdefABCDEF");
    expect(redacted).toBe(
      "BASE_RPC_URL: eth_chainId failed (Request cannot be constructed from a URL that includes credentials: https://***@rpc.example.com/***.)",
    );
    expect(redactSecrets('{"error":"HTTP request failed. URL: https://x.io/?key=zzz"}')).toBe(
      '{"error":"HTTP request failed. URL: https://x.io/?***"}',
    );
    expect(redactSecrets("no url here")).toBe("no url here");
  });
});
