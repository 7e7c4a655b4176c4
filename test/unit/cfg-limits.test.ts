import { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OPERATOR } from "../../api/audit/audit-log.js";
import { clientIp } from "../../api/http/client-ip.js";
import { ProblemError } from "../../api/http/problem.js";
import { limitBody, limitRate } from "../../api/http/request-limits.js";
import { createPartner } from "../../api/partners/api-keys.js";
import { addMember, MAX_MEMBERS_PER_PARTNER, membershipsOf, removeMember } from "../../api/partners/members.js";
import type { Store } from "../../api/store/open-store.js";
import { unitStore } from "../support/unit-store.js";

// Issue 25: request limits and tenant caps, in process (Hono's `app.request`: no
// socket, no stack) and on a real SQLite store.

function app(configure: (app: Hono) => void): Hono {
  const built = new Hono();
  configure(built);
  return built;
}

describe("body limit", () => {
  const limited = app((built) => {
    built.use(limitBody(1024));
    built.post("/echo", async (c) => c.text(String((await c.req.text()).length)));
  });

  it("passes a body of exactly the limit", async () => {
    const response = await limited.request("/echo", { method: "POST", body: "x".repeat(1024) });
    expect([response.status, await response.text()]).toEqual([200, "1024"]);
  });

  it("refuses a declared body one byte over with 413 payload_too_large, naming the limit, and closes the connection", async () => {
    const response = await limited.request("/echo", { method: "POST", body: "x".repeat(1025) });
    expect(response.status).toBe(413);
    expect(response.headers.get("connection")).toBe("close");
    expect(response.headers.get("content-type")).toBe("application/problem+json");
    expect(await response.json()).toMatchObject({
      code: "payload_too_large",
      status: 413,
      detail: "This route takes at most 1024 bytes of body.",
      maxBytes: 1024,
    });
  });

  it("refuses a streamed body without a length as soon as it passes the limit", async () => {
    const chunks = ["x".repeat(600), "x".repeat(600)];
    const body = new ReadableStream({
      pull(controller) {
        const chunk = chunks.shift();
        if (chunk === undefined) controller.close();
        else controller.enqueue(new TextEncoder().encode(chunk));
      },
    });
    const response = await limited.request("/echo", { method: "POST", body, duplex: "half" } as RequestInit);
    expect(response.status).toBe(413);
    expect(((await response.json()) as { code: string }).code).toBe("payload_too_large");
  });
});

describe("rate limit", () => {
  const build = (trustProxy: boolean) =>
    app((built) => {
      built.use("/a/*", limitRate("sign-in", { limit: 2, windowMs: 60_000 }, trustProxy));
      built.use("/b/*", limitRate("lookup", { limit: 2, windowMs: 60_000 }, trustProxy));
      built.get("/a/x", (c) => c.text("a"));
      built.get("/b/x", (c) => c.text("b"));
    });
  const statuses = async (target: Hono, path: string, times: number, headers: Record<string, string> = {}) => {
    const seen: number[] = [];
    for (let index = 0; index < times; index++) seen.push((await target.request(path, { headers })).status);
    return seen;
  };

  it("allows the limit, then answers 429 rate_limited with Retry-After and the limit in its detail", async () => {
    const limited = build(false);
    expect(await statuses(limited, "/a/x", 2)).toEqual([200, 200]);
    const refused = await limited.request("/a/x");
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(Number(refused.headers.get("retry-after"))).toBeLessThanOrEqual(60);
    expect(await refused.json()).toMatchObject({
      code: "rate_limited",
      status: 429,
      detail: "At most 2 sign-in requests per 60 s per client; retry after the time in Retry-After.",
    });
  });

  it("counts each scope on its own", async () => {
    const limited = build(false);
    expect(await statuses(limited, "/a/x", 3)).toEqual([200, 200, 429]);
    expect(await statuses(limited, "/b/x", 2)).toEqual([200, 200]);
  });

  it("behind a trusted proxy counts each forwarded client on its own", async () => {
    const limited = build(true);
    expect(await statuses(limited, "/a/x", 3, { "X-Forwarded-For": "203.0.113.1, 10.0.0.1" })).toEqual([200, 200, 429]);
    expect(await statuses(limited, "/a/x", 1, { "X-Forwarded-For": "203.0.113.2" })).toEqual([200]);
  });

  it("without a trusted proxy ignores X-Forwarded-For, so a client cannot reset its count by inventing one", async () => {
    const limited = build(false);
    expect(await statuses(limited, "/a/x", 2, { "X-Forwarded-For": "203.0.113.1" })).toEqual([200, 200]);
    expect(await statuses(limited, "/a/x", 1, { "X-Forwarded-For": "203.0.113.99" })).toEqual([429]);
  });
});

describe("clientIp", () => {
  const ipOf = async (trustProxy: boolean, headers: Record<string, string>) => {
    const probe = app((built) => built.get("/", (c) => c.text(clientIp(c, trustProxy))));
    return (await probe.request("/", { headers })).text();
  };

  it.each([
    ["the first forwarded entry behind a trusted proxy", true, { "X-Forwarded-For": " 198.51.100.7 , 10.0.0.2" }, "198.51.100.7"],
    ["no forwarded entry: no socket in process", true, {}, "unknown"],
    ["an empty forwarded header", true, { "X-Forwarded-For": "" }, "unknown"],
    ["a forwarded entry without a trusted proxy", false, { "X-Forwarded-For": "198.51.100.7" }, "unknown"],
  ])("takes %s", async (_case, trustProxy, headers, expected) => {
    expect(await ipOf(trustProxy, headers)).toBe(expected);
  });
});

describe("members per partner", () => {
  let store: Store;
  let close: () => Promise<void>;
  const wallet = (index: number) => `0x${index.toString(16).padStart(40, "0")}`;

  async function code(run: () => Promise<unknown>): Promise<string> {
    try {
      await run();
    } catch (error) {
      if (error instanceof ProblemError) return error.code;
      throw error;
    }
    return "added";
  }

  beforeAll(async () => {
    ({ store, close } = await unitStore());
    await createPartner(store, { id: "ptr_m", name: "M" });
    await createPartner(store, { id: "ptr_n", name: "N" });
  });
  afterAll(() => close());

  it(`admits ${MAX_MEMBERS_PER_PARTNER} members, refuses one more with member_limit_reached, and admits it after a removal`, async () => {
    for (let index = 1; index <= MAX_MEMBERS_PER_PARTNER; index++)
      await addMember(store, OPERATOR, { partnerId: "ptr_m", address: wallet(index) });
    expect(await code(() => addMember(store, OPERATOR, { partnerId: "ptr_m", address: wallet(1_000) }))).toBe(
      "member_limit_reached",
    );
    // The cap is per partner.
    expect(await code(() => addMember(store, OPERATOR, { partnerId: "ptr_n", address: wallet(1_000) }))).toBe("added");
    await removeMember(store, { role: "admin", address: wallet(9_999) }, { partnerId: "ptr_m", address: wallet(1) });
    expect(await code(() => addMember(store, OPERATOR, { partnerId: "ptr_m", address: wallet(1_000) }))).toBe("added");
  });

  it("refuses the same wallet twice in any letter case, and a partner that does not exist", async () => {
    const address = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
    expect(await code(() => addMember(store, OPERATOR, { partnerId: "ptr_n", address }))).toBe("added");
    expect(await code(() => addMember(store, OPERATOR, { partnerId: "ptr_n", address: address.toLowerCase() }))).toBe(
      "member_exists",
    );
    expect(await code(() => addMember(store, OPERATOR, { partnerId: "ptr_nobody", address }))).toBe("not_found");
    expect((await membershipsOf(store, address.toUpperCase().replace("0X", "0x"))).length).toBe(1);
  });
});
