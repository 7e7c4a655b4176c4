import { describe, expect, it } from "vitest";
import { indexChannel, listenStatement } from "../../api/indexed/index-notifications.js";
import { reconnectDelayMs } from "../../api/store/postgres-session.js";
import { waitBetweenTicks } from "../../api/workers/run-worker.js";

describe("waiting between ticks", () => {
  const settlement = { intervalMs: 20, wokenByIndex: true, safetyPollMs: 1_000 };

  it("polls at the worker's own interval while the index's notifications do not arrive", () => {
    expect(waitBetweenTicks({ ...settlement, pushConnected: false })).toBe(20);
  });

  it("waits the safety-net poll while they arrive, for a worker the index wakes", () => {
    expect(waitBetweenTicks({ ...settlement, pushConnected: true })).toBe(1_000);
  });

  it("keeps the interval of a worker the index does not wake (the dispatcher, reservations)", () => {
    expect(waitBetweenTicks({ ...settlement, wokenByIndex: false, pushConnected: true })).toBe(20);
  });

  it("never polls a worker more often than its own interval", () => {
    expect(waitBetweenTicks({ intervalMs: 5_000, wokenByIndex: true, pushConnected: true, safetyPollMs: 1_000 })).toBe(5_000);
  });
});

describe("reconnecting a dedicated Postgres session", () => {
  it("tries again at once after a session that was open, then backs off to a ceiling", () => {
    expect([0, 1, 2, 3, 4, 5, 6, 50].map(reconnectDelayMs)).toEqual([0, 250, 500, 1_000, 2_000, 4_000, 5_000, 5_000]);
  });
});

describe("the index's channel", () => {
  it("is Ponder's live-query channel of the index schema", () => {
    expect(indexChannel("build_7")).toBe("build_7_live_query");
  });

  it("is quoted as an identifier in LISTEN, its case kept and a quote doubled", () => {
    expect(listenStatement("Build_live_query")).toBe('LISTEN "Build_live_query"');
    expect(listenStatement('a"b')).toBe('LISTEN "a""b"');
  });
});
