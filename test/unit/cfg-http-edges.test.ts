import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { MAX_RANGE_MS, parseRange, rangeNetwork } from "../../api/accounting/range.js";
import type { NetworkConfig } from "../../api/config/networks.js";
import { keysetPage } from "../../api/http/cursor.js";
import { ProblemError, problem, problemResponse, problems, problemTypeUri } from "../../api/http/problem.js";
import { PROBLEM_CATALOGUE, PROBLEM_CODES, PROBLEM_REGISTRY, problemStatuses } from "../../api/http/problem-catalogue.js";
import { unitNetwork } from "../support/unit-store.js";

// Issue 25: the HTTP edges as functions: keyset cursors, accounting ranges and the
// problem registry, without a stack.

/** The code and detail of the ProblemError `run` throws. */
function refusal(run: () => unknown): { code: string; status: number; detail: string } {
  try {
    run();
  } catch (error) {
    if (!(error instanceof ProblemError)) throw error;
    return { code: error.code, status: error.status, detail: error.message };
  }
  throw new Error("expected a ProblemError");
}

async function asyncRefusal(run: () => Promise<unknown>): Promise<string> {
  try {
    await run();
  } catch (error) {
    if (!(error instanceof ProblemError)) throw error;
    return error.code;
  }
  throw new Error("expected a ProblemError");
}

describe("keysetPage", () => {
  const rows = Array.from({ length: 7 }, (_, index) => ({ t: 1_000 + index, id: `r${index}` }));
  const key = z.object({ t: z.number().int(), i: z.string() });
  /** The rows after `after` in (t, id) order, as a list's query reads them. */
  const fetch = async (after: { t: number; i: string } | undefined, take: number) =>
    rows.filter((row) => after === undefined || row.t > after.t || (row.t === after.t && row.id > after.i)).slice(0, take);
  const page = (cursor: string | undefined, limit = 3) =>
    keysetPage({ cursor, limit, key, fetch, keyOf: (row) => ({ t: row.t, i: row.id }) });
  const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");

  it("walks every row once, in order, and ends with a null cursor", async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const answer = await page(cursor);
      seen.push(...answer.data.map((row) => row.id));
      cursor = answer.nextCursor ?? undefined;
      pages++;
    } while (cursor !== undefined);
    expect(seen).toEqual(["r0", "r1", "r2", "r3", "r4", "r5", "r6"]);
    expect(pages).toBe(3);
  });

  it("makes the cursor the base64url JSON of the page's last row's key", async () => {
    const answer = await page(undefined);
    expect(answer.nextCursor).toBe(encode({ t: 1_002, i: "r2" }));
  });

  it("gives no next cursor when the rows fill the page exactly", async () => {
    const answer = await page(undefined, 7);
    expect([answer.data.length, answer.nextCursor]).toEqual([7, null]);
  });

  it("asks the query for one row more than the page", async () => {
    const takes: number[] = [];
    await keysetPage({
      cursor: undefined,
      limit: 25,
      key,
      fetch: async (after, take) => {
        takes.push(take);
        return fetch(after, take);
      },
      keyOf: (row) => ({ t: row.t, i: row.id }),
    });
    expect(takes).toEqual([26]);
  });

  it("shows a page through its view", async () => {
    const answer = await keysetPage({
      cursor: undefined,
      limit: 2,
      key,
      fetch,
      keyOf: (row) => ({ t: row.t, i: row.id }),
      view: (page) => page.map((row) => row.id.toUpperCase()),
    });
    expect(answer.data).toEqual(["R0", "R1"]);
  });

  it.each([
    ["garbage characters", "not a cursor!"],
    ["base64 with padding", `${encode({ t: 1, i: "r1" })}=`],
    ["base64url of text that is not JSON", Buffer.from("{t:1").toString("base64url")],
    ["JSON of another shape", encode({ t: "1001", i: "r1" })],
    ["JSON missing a field", encode({ t: 1_001 })],
    ["a fraction where a whole number goes", encode({ t: 1_001.5, i: "r1" })],
    ["a number beyond safe integers", Buffer.from('{"t":18446744073709551616,"i":"r1"}').toString("base64url")],
    ["1e300", Buffer.from('{"t":1e300,"i":"r1"}').toString("base64url")],
    ["a cursor longer than 512 characters", encode({ t: 1, i: "r".repeat(400) })],
  ])("refuses %s as invalid_cursor", async (_case, cursor) => {
    expect(await asyncRefusal(() => page(cursor))).toBe("invalid_cursor");
  });

  it("accepts a cursor it did not issue but that decodes to a valid key (keys are not secrets)", async () => {
    expect((await page(encode({ t: 1_004, i: "r4" }))).data.map((row) => row.id)).toEqual(["r5", "r6"]);
  });

  describe("with a cursor that names a row", () => {
    const named = (cursor: string | undefined) =>
      keysetPage({
        cursor,
        limit: 2,
        fetch,
        resolveCursor: async (id) => {
          const row = rows.find((candidate) => candidate.id === id);
          return row === undefined ? undefined : { t: row.t, i: row.id };
        },
        cursorOf: (row) => row.id,
      });

    it("resolves the named row and continues after it, its next cursor naming the page's last row", async () => {
      expect(await named("r3")).toEqual({ data: rows.slice(4, 6), nextCursor: "r5" });
    });

    it("refuses a name of no row, and an over-long one before resolving it", async () => {
      expect(await asyncRefusal(() => named("r99"))).toBe("invalid_cursor");
      expect(await asyncRefusal(() => named("r".repeat(513)))).toBe("invalid_cursor");
    });
  });
});

describe("parseRange", () => {
  it.each([
    ["one block", { fromBlock: "8", toBlock: "8" }, { chainId: undefined, basis: "blocks", fromBlock: 8n, toBlock: 8n }],
    [
      "leading zeros",
      { fromBlock: "0007", toBlock: "010" },
      { chainId: undefined, basis: "blocks", fromBlock: 7n, toBlock: 10n },
    ],
    [
      "the highest block there can be",
      { fromBlock: "9223372036854775807", toBlock: "9223372036854775807" },
      { chainId: undefined, basis: "blocks", fromBlock: 2n ** 63n - 1n, toBlock: 2n ** 63n - 1n },
    ],
    [
      "a chain id",
      { chainId: "8453", fromBlock: "1", toBlock: "2" },
      { chainId: 8453, basis: "blocks", fromBlock: 1n, toBlock: 2n },
    ],
    [
      "a time with an offset and nanoseconds",
      { from: "2026-01-01T02:00:00.123456789+02:00", to: "2026-01-02" },
      { chainId: undefined, basis: "times", fromTime: Date.UTC(2026, 0, 1, 0, 0, 0, 123), toTime: Date.UTC(2026, 0, 2) },
    ],
    [
      "a time without seconds",
      { from: "2026-01-01T10:30Z", to: "2026-01-01T10:31Z" },
      { chainId: undefined, basis: "times", fromTime: Date.UTC(2026, 0, 1, 10, 30), toTime: Date.UTC(2026, 0, 1, 10, 31) },
    ],
    [
      "a leap day",
      { from: "2028-02-29", to: "2028-03-01" },
      { chainId: undefined, basis: "times", fromTime: Date.UTC(2028, 1, 29), toTime: Date.UTC(2028, 2, 1) },
    ],
    [
      "exactly 366 days",
      { from: "2024-01-01", to: "2025-01-01" },
      { chainId: undefined, basis: "times", fromTime: Date.UTC(2024, 0, 1), toTime: Date.UTC(2024, 0, 1) + MAX_RANGE_MS },
    ],
  ])("accepts %s", (_case, query, expected) => {
    expect(parseRange(query)).toEqual(expected);
  });

  it.each([
    ["only fromBlock", { fromBlock: "5" }, "Give both `fromBlock` and `toBlock`."],
    ["only toBlock", { toBlock: "5" }, "Give both `fromBlock` and `toBlock`."],
    ["only to", { to: "2026-01-01" }, "Give both `from` and `to`."],
    ["a block and a time", { toBlock: "5", from: "2026-01-01" }, "Give either `fromBlock`/`toBlock` or `from`/`to`, not both."],
    ["a hex chain id", { chainId: "0x2105", fromBlock: "1", toBlock: "2" }, "`chainId` must be a chain id in decimal digits."],
    ["an empty chain id", { chainId: "", fromBlock: "1", toBlock: "2" }, "`chainId` must be a chain id in decimal digits."],
    ["a blank before a block", { fromBlock: " 1", toBlock: "2" }, "`fromBlock` must be a block number in decimal digits."],
    ["a negative toBlock", { fromBlock: "1", toBlock: "-2" }, "`toBlock` must be a block number in decimal digits."],
    [
      "a block past 2^63-1",
      { fromBlock: "9223372036854775808", toBlock: "9223372036854775808" },
      "`fromBlock` is beyond any block.",
    ],
    [
      "a time without a zone",
      { from: "2026-01-01T10:00", to: "2026-01-02" },
      "`from` must be an ISO 8601 time such as 2026-01-01T00:00:00Z (or a date, read as UTC midnight).",
    ],
    [
      "month 13",
      { from: "2026-01-01", to: "2026-13-01" },
      "`to` must be an ISO 8601 time such as 2026-01-01T00:00:00Z (or a date, read as UTC midnight).",
    ],
    [
      "February 30",
      { from: "2026-02-30", to: "2026-03-05" },
      "`from` must be an ISO 8601 time such as 2026-01-01T00:00:00Z (or a date, read as UTC midnight).",
    ],
    [
      "April 31 with a time",
      { from: "2026-04-01", to: "2026-04-31T00:00:00Z" },
      "`to` must be an ISO 8601 time such as 2026-01-01T00:00:00Z (or a date, read as UTC midnight).",
    ],
    [
      "February 29 of a common year",
      { from: "2027-02-29", to: "2027-03-05" },
      "`from` must be an ISO 8601 time such as 2026-01-01T00:00:00Z (or a date, read as UTC midnight).",
    ],
    [
      "an empty range of times",
      { from: "2026-01-01", to: "2026-01-01T00:00:00Z" },
      "`to` must be after `from` (`to` is exclusive).",
    ],
  ])("refuses %s with invalid_range", (_case, query, detail) => {
    expect(refusal(() => parseRange(query))).toEqual({ code: "invalid_range", status: 400, detail });
  });

  it("refuses 366 days and a millisecond as range_too_wide", () => {
    expect(refusal(() => parseRange({ from: "2024-01-01", to: "2025-01-01T00:00:00.001Z" }))).toEqual({
      code: "range_too_wide",
      status: 400,
      detail: "A range covers at most 366 days; ask for the period in parts.",
    });
  });
});

describe("rangeNetwork", () => {
  const base: NetworkConfig = { ...unitNetwork, name: "base", chainId: 8453 };

  it("takes the only network when no chain is named", () => {
    expect(rangeNetwork([unitNetwork], undefined)).toBe(unitNetwork);
  });

  it("takes the named one of several", () => {
    expect(rangeNetwork([unitNetwork, base], 8453)).toBe(base);
  });

  it("asks which one when several are enabled and none is named", () => {
    expect(refusal(() => rangeNetwork([unitNetwork, base], undefined)).detail).toBe(
      "Several networks are enabled: name one with `chainId` (31337, 8453).",
    );
  });

  it("refuses a chain that is not enabled, even with one network", () => {
    expect(refusal(() => rangeNetwork([unitNetwork], 8453))).toEqual({
      code: "invalid_range",
      status: 400,
      detail: "Chain 8453 is not enabled here (31337).",
    });
  });
});

describe("problems", () => {
  it("takes status and title from the registry and the detail given", () => {
    const raised = problem("invalid_cursor", "try again");
    expect([raised.status, raised.code, raised.title, raised.message, raised.extensions]).toEqual([
      400,
      "invalid_cursor",
      "The cursor is not valid",
      "try again",
      {},
    ]);
  });

  it("uses the title as the detail when none is given", () => {
    expect(problem("range_not_indexed").message).toBe(PROBLEM_REGISTRY.range_not_indexed.title);
  });

  it("answers a code registered with several statuses with its first, and refuses one not listed", () => {
    const first = problemStatuses("purchase_not_paid")[0];
    expect(problem("purchase_not_paid").status).toBe(first);
    expect(() => new ProblemError({ code: "invalid_cursor", status: 404 })).toThrow(
      "problem invalid_cursor is registered with status 400, not 404",
    );
  });

  it.each([
    ["invalidRequest", problems.invalidRequest("bad", [{ path: "amount", message: "required" }]), 400, "invalid_request", "bad"],
    ["unauthenticated", problems.unauthenticated("no key"), 401, "unauthenticated", "no key"],
    ["forbidden", problems.forbidden("not yours"), 403, "forbidden", "not yours"],
    ["notFound", problems.notFound("Order ord_1"), 404, "not_found", "Order ord_1 was not found"],
  ])("problems.%s answers %i %s", (_name, raised, status, code, detail) => {
    expect([raised.status, raised.code, raised.message]).toEqual([status, code, detail]);
  });

  it("lists field errors of an invalid request as an extension, and none without them", () => {
    expect(problems.invalidRequest("bad", [{ path: "a", message: "m" }]).extensions).toEqual({
      errors: [{ path: "a", message: "m" }],
    });
    expect(problems.invalidRequest("bad").extensions).toEqual({});
  });

  it("points a problem's type at its entry of the catalogue page", () => {
    expect(problemTypeUri("invalid_webhook_url")).toBe("/docs/problems#problem-invalid_webhook_url");
  });

  it("answers application/problem+json whose members an extension cannot replace", async () => {
    const app = new Hono();
    app.get("/v1/things", (c) =>
      problemResponse(c, problem("invalid_range", "blocks please", { status: 200, code: "ok", hint: "fromBlock" })),
    );
    const response = await app.request("/v1/things?x=1");
    expect(response.status).toBe(400);
    expect(response.headers.get("content-type")).toBe("application/problem+json");
    expect(await response.json()).toEqual({
      hint: "fromBlock",
      type: "/docs/problems#problem-invalid_range",
      title: "The range is not valid",
      status: 400,
      detail: "blocks please",
      code: "invalid_range",
      instance: "/v1/things",
    });
  });

  it("catalogues every code once, with a status, a title and a meaning, in docs/errors.md", () => {
    const guide = readFileSync(join(import.meta.dirname, "../../docs/errors.md"), "utf8");
    expect(PROBLEM_CATALOGUE.map((row) => row.code)).toEqual(PROBLEM_CODES);
    expect(new Set(PROBLEM_CODES).size).toBe(PROBLEM_CODES.length);
    const incomplete = PROBLEM_CATALOGUE.filter(
      (row) =>
        row.status < 400 ||
        row.status > 599 ||
        row.statuses[0] !== row.status ||
        row.title.trim() === "" ||
        row.meaning.trim() === "" ||
        !guide.includes(`\`${row.code}\``),
    ).map((row) => row.code);
    expect(incomplete).toEqual([]);
  });
});
