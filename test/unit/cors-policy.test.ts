import { describe, expect, it } from "vitest";
import { closedToOtherOrigins } from "../../api/http/cors-policy.js";
import { requireOwnOrigin } from "../../api/http/same-origin.js";

// Issue 40, finding 4: which routes another origin may read, and who may use the local sign-in.
describe("closedToOtherOrigins", () => {
  it.each([
    ["/api/admin/partners", true],
    ["/api/admin/auth/test-account", true],
    ["/api", true],
    ["/v1/payments", true],
    ["/v1", true],
    ["/v1/publicity", true],
    ["/v1/public/checkout/payments", false],
    ["/checkout/cs_1", false],
    ["/claim/x", false],
    ["/refund/x", false],
    ["/subscribe/sub_1", false],
    ["/subscription/sub_1", false],
    ["/console/assets/index.js", false],
    ["/graphql", false],
    ["/apiary", false],
  ])("%s: %s", (path, closed) => {
    expect(closedToOtherOrigins(path)).toBe(closed);
  });
});

const code = (run: () => void) => {
  try {
    run();
  } catch (error) {
    return (error as { code?: string }).code;
  }
  return "accepted";
};

describe("requireOwnOrigin", () => {
  const local = (host: string | undefined, origin?: string, fetchSite?: string) =>
    code(() => requireOwnOrigin({ host, origin, fetchSite }, undefined));

  it("in local mode, answers the service's loopback names from its own pages and from tools", () => {
    expect(local("127.0.0.1:42069", "http://127.0.0.1:42069", "same-origin")).toBe("accepted");
    expect(local("localhost:42069", "http://localhost:42069")).toBe("accepted");
    expect(local("[::1]:42069", "http://[::1]:42069")).toBe("accepted");
    expect(local("127.0.0.1:42069")).toBe("accepted");
    expect(local("127.0.0.1:42069", undefined, "none")).toBe("accepted");
  });

  it("refuses another origin, a cross-site or same-site browser fetch, and a rebound host name", () => {
    expect(local("127.0.0.1:42069", "http://attacker.example")).toBe("cross_origin_refused");
    expect(local("127.0.0.1:42069", "null")).toBe("cross_origin_refused");
    expect(local("127.0.0.1:42069", "http://localhost:42069")).toBe("cross_origin_refused");
    expect(local("127.0.0.1:42069", "http://127.0.0.1:3000")).toBe("cross_origin_refused");
    expect(local("127.0.0.1:42069", undefined, "cross-site")).toBe("cross_origin_refused");
    expect(local("127.0.0.1:42069", undefined, "same-site")).toBe("cross_origin_refused");
    expect(local("attacker.example:42069", "http://attacker.example:42069")).toBe("cross_origin_refused");
    expect(local("attacker.example:42069")).toBe("cross_origin_refused");
    expect(local("127.0.0.1.attacker.example:42069")).toBe("cross_origin_refused");
    expect(local(undefined)).toBe("cross_origin_refused");
  });

  it("with PUBLIC_BASE_URL, only its host and origin", () => {
    const base = "https://pay.example.com";
    const check = (host: string, origin?: string) => code(() => requireOwnOrigin({ host, origin, fetchSite: undefined }, base));
    expect(check("pay.example.com", "https://pay.example.com")).toBe("accepted");
    expect(check("pay.example.com", "http://pay.example.com")).toBe("cross_origin_refused");
    expect(check("127.0.0.1:42069", "http://127.0.0.1:42069")).toBe("cross_origin_refused");
  });
});
