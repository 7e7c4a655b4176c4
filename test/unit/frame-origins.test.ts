import { describe, expect, it } from "vitest";
import { checkoutFrameAncestor, parseFrameOrigin } from "../../api/hosted/frame-origins.js";

describe("who may frame the hosted checkout (issue 24, finding 7)", () => {
  const declared = ["https://shop.example"];

  it("is nobody when the page is opened on its own", () => {
    expect(checkoutFrameAncestor({ parentOrigin: undefined, declared, localMode: false })).toBe("'none'");
  });

  it("is the component's page when the partner declared its origin", () => {
    expect(checkoutFrameAncestor({ parentOrigin: "https://shop.example", declared, localMode: false })).toBe(
      "https://shop.example",
    );
  });

  it("is nobody for an undeclared origin, a look-alike, or something that is not an origin", () => {
    for (const parentOrigin of [
      "https://evil.example",
      "https://shop.example.evil.example",
      "http://shop.example",
      "https://shop.example:8443",
      "https://shop.example/path",
      "*",
      "https://shop.example; script-src *",
      "'self'",
      "",
    ]) {
      expect(checkoutFrameAncestor({ parentOrigin, declared, localMode: false }), parentOrigin).toBe("'none'");
    }
  });

  it("lets a loopback page frame it in local mode only", () => {
    expect(checkoutFrameAncestor({ parentOrigin: "http://localhost:5173", declared: [], localMode: true })).toBe(
      "http://localhost:5173",
    );
    expect(checkoutFrameAncestor({ parentOrigin: "http://127.0.0.1:8080", declared: [], localMode: true })).toBe(
      "http://127.0.0.1:8080",
    );
    expect(checkoutFrameAncestor({ parentOrigin: "http://localhost:5173", declared: [], localMode: false })).toBe("'none'");
    expect(checkoutFrameAncestor({ parentOrigin: "http://shop.test:8080", declared: [], localMode: true })).toBe("'none'");
  });

  it("accepts https origins (http in local mode only) written as the browser writes them", () => {
    expect(parseFrameOrigin("https://shop.example", false)).toEqual({ origin: "https://shop.example" });
    expect(parseFrameOrigin("https://shop.example/", false)).toEqual({ origin: "https://shop.example" });
    expect(parseFrameOrigin("http://shop.test:8080", true)).toEqual({ origin: "http://shop.test:8080" });
    for (const value of [
      "http://shop.example",
      "https://shop.example/checkout",
      "https://user:pw@shop.example",
      "https://shop.example?x=1",
      "https://SHOP.example:443",
      "javascript:alert(1)",
      "shop.example",
      "*",
    ]) {
      expect("problem" in parseFrameOrigin(value, false), value).toBe(true);
    }
  });
});
