import { describe, expect, it } from "vitest";
import { checkHostedOptions, hostedCheckoutUrl, LineItemSchema, withSessionId } from "../../api/checkout/hosted-options.js";
import { eip681Uri } from "../../api/checkout/session-view.js";
import { paymentQrSvg } from "../../api/hosted/payment-qr.js";
import { ProblemError } from "../../api/http/problem.js";
import { CreateSessionBody } from "../../api/routes/checkout-sessions.js";
import { UsdcAmountSchema } from "../../api/routes/portals/schemas.js";
import { baseUnitsString, formatUsdc, parseUsdc, toBaseUnits } from "../../client/src/amounts.js";

/**
 * USDC amounts as base units (6 decimals) wherever they are parsed or written: the
 * client library's helpers, the API's request schemas, the line-item sum, the EIP-681
 * payment link and its QR code. Never a float; anything not exact is refused.
 */

const MAX_UINT256 = 2n ** 256n - 1n;

describe("client: toBaseUnits", () => {
  it.each([
    ["zero", "0", 0n],
    ["one base unit", "1", 1n],
    ["a uint256's maximum, past any float", MAX_UINT256.toString(), MAX_UINT256],
    ["a bigint, as it is (even negative: the caller's own value)", -5n, -5n],
  ] as const)("takes %s", (_case, input, expected) => {
    expect(toBaseUnits(input)).toBe(expected);
  });

  it.each([
    ["a leading zero", "025"],
    ["a minus sign", "-1"],
    ["a plus sign", "+1"],
    ["exponent notation", "1e6"],
    ["a surrounding space", " 25"],
    ["an empty string", ""],
    ["hex", "0x10"],
  ])("refuses %s with a TypeError that says what it got", (_case, input) => {
    expect(() => toBaseUnits(input)).toThrow(new RegExp(`got ${JSON.stringify(input).replace(/[+.]/g, "\\$&")}\\.$`));
  });

  it("refuses a JS number, saying it is one", () => {
    expect(() => toBaseUnits(25 as never)).toThrow(/got a number\.$/);
  });
});

describe("client: parseUsdc (a decimal → base units, never rounded)", () => {
  it.each([
    ["the smallest unit", "0.000001", 1n],
    ["one decimal, padded to six", "0.1", 100_000n],
    ["exactly six decimals", "1.234567", 1_234_567n],
    ["leading zeros of the whole part", "0007.5", 7_500_000n],
    ["surrounding whitespace", " 12.5\n", 12_500_000n],
    ["zero with trailing decimal zeros", "0.000000", 0n],
    [
      "a uint256's maximum written as a decimal",
      `${MAX_UINT256 / 1_000_000n}.${(MAX_UINT256 % 1_000_000n).toString().padStart(6, "0")}`,
      MAX_UINT256,
    ],
  ] as const)("reads %s", (_case, input, expected) => {
    expect(parseUsdc(input)).toBe(expected);
  });

  it.each([
    ["a trailing point", "25."],
    ["no whole part", ".5"],
    ["a minus sign", "-1.5"],
    ["a decimal comma", "1,5"],
    ["seven decimals of zeros (still more than six)", "1.0000000"],
    ["a currency sign", "$5"],
    ["exponent notation", "1e3"],
    ["two points", "1.2.3"],
  ])("refuses %s", (_case, input) => {
    expect(() => parseUsdc(input)).toThrow(TypeError);
  });
});

describe("client: formatUsdc (base units → six decimals, exact)", () => {
  it.each([
    [0n, "0.000000"],
    [1_000_000n, "1.000000"],
    ["999999", "0.999999"],
    [-1n, "-0.000001"],
    [-25_000_123n, "-25.000123"],
    [10n ** 30n, "1000000000000000000000000.000000"],
  ] as const)("%s → %s", (input, expected) => {
    expect(formatUsdc(input)).toBe(expected);
  });

  it("parseUsdc undoes formatUsdc for non-negative amounts, around the decimal boundaries", () => {
    for (const value of [0n, 1n, 9n, 10n, 99_999n, 100_000n, 999_999n, 1_000_000n, 1_000_001n, MAX_UINT256]) {
      expect(parseUsdc(formatUsdc(value))).toBe(value);
    }
  });

  it("refuses a string that is not base units", () => {
    expect(() => formatUsdc("1.5")).toThrow(TypeError);
  });
});

describe("client: baseUnitsString (what a request body carries)", () => {
  it("writes a positive bigint or integer string as its decimal string", () => {
    expect(baseUnitsString(25_000_000n, "totalPriceUsdc")).toBe("25000000");
    expect(baseUnitsString("1", "amount")).toBe("1");
  });

  it.each([
    ["zero", 0n, "amount: must be a positive amount of base units."],
    ["a negative bigint", -1n, "amount: must be a positive amount of base units."],
    ["the string zero", "0", "amount: must be a positive amount of base units."],
    ["a JS number", 25_000_000, /^amount: pass USDC base units as a bigint .* not a number\.$/],
  ] as const)("refuses %s, naming the field", (_case, input, message) => {
    expect(() => baseUnitsString(input as never, "amount")).toThrow(message);
  });
});

describe("API: totalPriceUsdc of a new checkout session", () => {
  const body = (totalPriceUsdc: unknown) => ({
    externalOrderId: "order-1",
    externalProductId: "sku",
    productName: "Tee",
    quantity: 1,
    totalPriceUsdc,
    paymentMethod: "usdc",
    checkoutMode: "hosted_transfer",
    idempotencyKey: "key-1",
  });

  it.each([
    ["one base unit", "1"],
    ["the largest accepted (18 digits)", "999999999999999999"],
  ])("takes %s", (_case, total) => {
    const parsed = CreateSessionBody.safeParse(body(total));
    expect(parsed.success).toBe(true);
    expect(parsed.data?.totalPriceUsdc).toBe(total);
  });

  it.each([
    ["zero", "0"],
    ["a leading zero", "025000000"],
    ["19 digits", "1000000000000000000"],
    ["a negative", "-25000000"],
    ["a decimal", "25.5"],
    ["a JSON number", 25_000_000],
    ["a surrounding space", " 25000000"],
    ["exponent notation", "2.5e7"],
  ])("refuses %s", (_case, total) => {
    const parsed = CreateSessionBody.safeParse(body(total));
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues.map((issue) => issue.path.join("."))).toEqual(["totalPriceUsdc"]);
  });
});

describe("API: other amount fields", () => {
  it.each([
    ["0", true],
    ["1", true],
    ["9".repeat(30), true],
    ["1".repeat(31), false],
    ["00", false],
    ["-1", false],
    ["1.0", false],
  ])("an offering's unit price (UsdcAmountSchema) %s → %s", (value, ok) => {
    expect(UsdcAmountSchema.safeParse(value).success).toBe(ok);
  });

  it.each([
    ["0", true],
    ["9".repeat(18), true],
    ["1".repeat(19), false],
    ["01", false],
  ])("a line item's unit price %s → %s (free items allowed)", (unitPriceUsdc, ok) => {
    const item = { externalProductId: "sku", name: "Tee", quantity: 1, unitPriceUsdc };
    expect(LineItemSchema.safeParse(item).success).toBe(ok);
  });
});

describe("line items must add up to the total, in bigint", () => {
  const settings = { localMode: false };
  const item = (quantity: number, unitPriceUsdc: string) => ({ externalProductId: "sku", name: "Item", quantity, unitPriceUsdc });

  const refusal = (run: () => void) => {
    try {
      run();
    } catch (error) {
      expect(error).toBeInstanceOf(ProblemError);
      return error as ProblemError;
    }
    throw new Error("expected a problem");
  };

  it("accepts an exact sum beyond 2^53 (1e6 × 999 999 999 999 999 999), which a float would round", () => {
    const total = 1_000_000n * 999_999_999_999_999_999n;
    expect(() => checkHostedOptions(settings, { lineItems: [item(1_000_000, "999999999999999999")] }, total)).not.toThrow();
    const error = refusal(() => checkHostedOptions(settings, { lineItems: [item(1_000_000, "999999999999999999")] }, total - 1n));
    expect(error.code).toBe("invalid_request");
  });

  it("a sum one base unit off is invalid_request naming both figures", () => {
    const error = refusal(() =>
      checkHostedOptions(settings, { lineItems: [item(2, "10000000"), item(1, "5000000"), item(3, "0")] }, 25_000_001n),
    );
    expect(error.code).toBe("invalid_request");
    expect(error.extensions).toEqual({
      errors: [{ path: "lineItems", message: "the line items add up to 25000000 base units, but totalPriceUsdc is 25000001" }],
    });
    expect(() =>
      checkHostedOptions(settings, { lineItems: [item(2, "10000000"), item(1, "5000000"), item(3, "0")] }, 25_000_000n),
    ).not.toThrow();
  });

  it.each([
    ["https", "https://shop.example/ok?session={CHECKOUT_SESSION_ID}", false, undefined],
    ["http outside local mode", "http://shop.example/ok", false, "an https: URL (http: is accepted in local mode only)"],
    ["http in local mode", "http://localhost:3000/ok", true, undefined],
    ["a javascript: URL", "javascript:alert(1)", true, "an https: URL"],
    ["a relative path", "/ok", false, "an absolute URL"],
  ] as const)("a successUrl with %s", (_case, successUrl, localMode, message) => {
    const run = () => checkHostedOptions({ localMode }, { successUrl }, 1n);
    if (message === undefined) expect(run).not.toThrow();
    else expect(refusal(run).extensions).toEqual({ errors: [{ path: "successUrl", message }] });
  });

  it("names every bad field in one problem", () => {
    const error = refusal(() =>
      checkHostedOptions(settings, { successUrl: "ftp://x", cancelUrl: "nope", lineItems: [item(1, "1")] }, 2n),
    );
    expect((error.extensions.errors as { path: string }[]).map((entry) => entry.path)).toEqual([
      "successUrl",
      "cancelUrl",
      "lineItems",
    ]);
  });

  it("substitutes the session id URL-encoded, every time the placeholder appears", () => {
    expect(withSessionId("https://s.example/{CHECKOUT_SESSION_ID}/done?id={CHECKOUT_SESSION_ID}", "cs_a/b&c")).toBe(
      "https://s.example/cs_a%2Fb%26c/done?id=cs_a%2Fb%26c",
    );
    expect(hostedCheckoutUrl("https://pay.example", "cs_1", "tok+/=")).toBe("https://pay.example/checkout/cs_1#ct=tok%2B%2F%3D");
  });
});

describe("EIP-681 payment link and its QR code", () => {
  const token = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";
  const recipient = "0x8ba1f109551bD432803012645Ac136ddd64DBA72";

  it("writes the amount due as an exact integer however large (no exponent, no decimals)", () => {
    const amount = (10n ** 24n + 17n).toString();
    expect(eip681Uri({ token, chainId: 8453, recipient, amount })).toBe(
      `ethereum:${token}@8453/transfer?address=${recipient}&uint256=1000000000000000000000017`,
    );
  });

  it("draws the link as an SVG of only <svg> and <path>, no script, link or style, and a different amount draws differently", async () => {
    const uri = eip681Uri({ token, chainId: 8453, recipient, amount: "25000017" });
    const svg = await paymentQrSvg(uri);
    expect(svg.startsWith("<svg")).toBe(true);
    const tags = new Set([...svg.matchAll(/<([a-zA-Z]+)/g)].map((match) => match[1]));
    expect([...tags].sort()).toEqual(["path", "svg"]);
    expect(svg).not.toMatch(/script|href|style=|on[a-z]+=/i);
    expect(await paymentQrSvg(uri)).toBe(svg);
    expect(await paymentQrSvg(eip681Uri({ token, chainId: 8453, recipient, amount: "25000018" }))).not.toBe(svg);
  });
});
