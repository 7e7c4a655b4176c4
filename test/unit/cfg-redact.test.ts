import { describe, expect, it } from "vitest";
import { logJson, redactSecrets, redactUrl } from "../../api/logging/redact.js";

// Issue 25: the edges of the one credential redaction, beyond test/unit/redact.test.ts.
describe("redactUrl edges", () => {
  it.each([
    ["a password without a user name", "https://:pw@rpc.example/", "https://***@rpc.example/"],
    ["a user name without a password", "https://apikey@rpc.example/", "https://***@rpc.example/"],
    // Issue 40: no path segment is kept for looking harmless (short, dotted: still a key).
    ["a short segment (hidden)", "https://h.example/p/0123456789abcde", "https://h.example/***"],
    ["a segment with a dot (hidden)", "https://h.example/v1.0123456789abcdef", "https://h.example/***"],
    ["a percent-encoded segment", "https://h.example/%30123456789abcdef", "https://h.example/***"],
    ["a query, names and all", "https://h.example/?k=1&k=2&chain=8453", "https://h.example/?***"],
    ["a query name without a value (it may be the key)", "https://h.example/?debug", "https://h.example/?***"],
    ["an empty fragment (dropped)", "https://h.example/x#", "https://h.example/***"],
    ["an IPv6 host and port", "http://[::1]:8545/rpc", "http://[::1]:8545/***"],
    ["text that is not a URL", "not a url", "***"],
    ["an unparsable URL with credentials, cut after the host", "https://u:pw@bad host/v2/key", "https://bad host/***"],
  ])("%s", (_case, input, expected) => {
    expect(redactUrl(input)).toBe(expected);
  });

  it("hides a path segment whose percent-encoding does not decode instead of throwing", () => {
    // decodeURIComponent throws a URIError on `%ZZ`; the redaction runs on every log line.
    expect(redactUrl("https://rpc.example/v2/%ZZsecret")).toBe("https://rpc.example/***");
    expect(redactSecrets("fetch https://rpc.example/%E0%A4%A failed")).toBe("fetch https://rpc.example/*** failed");
  });
});

describe("redactSecrets edges", () => {
  it.each([
    [
      "two URLs in one sentence, punctuation kept outside",
      "see https://a.io/?k=1, then https://b.io/?k=2.",
      "see https://a.io/?***, then https://b.io/?***.",
    ],
    ["a URL in parentheses", "(https://u:p@h.example/x)", "(https://***@h.example/***)"],
    ["a URL in single quotes", "'wss://h.example/0123456789abcdefXYZ'", "'wss://h.example/***'"],
    ["a URL in angle brackets", "<https://h.example/?t=1>", "<https://h.example/?***>"],
    ["a URL in square brackets", "[https://h.example/?t=1]", "[https://h.example/?***]"],
    ["a URL ending in a semicolon", "url=https://h.example/?token=abc;", "url=https://h.example/?***;"],
    [
      "a postgres URL in an error",
      "connect ECONNREFUSED postgresql://app:pw@db:5432/x",
      "connect ECONNREFUSED postgresql://***@db:5432/***",
    ],
    ["a scheme with nothing after it", "ponder:// no", "ponder:// no"],
  ])("%s", (_case, input, expected) => {
    expect(redactSecrets(input)).toBe(expected);
  });
});

describe("logJson", () => {
  it("writes one JSON line to stderr with the URLs in it redacted", () => {
    const lines: unknown[][] = [];
    const original = console.error;
    console.error = (...args: unknown[]) => lines.push(args);
    try {
      logJson({ msg: "rpc failed", url: "https://user:hunter2@rpc.example/v2/0123456789abcdefABCDEF?key=k" });
    } finally {
      console.error = original;
    }
    expect(lines).toEqual([['{"msg":"rpc failed","url":"https://***@rpc.example/***?***"}']]);
  });
});
