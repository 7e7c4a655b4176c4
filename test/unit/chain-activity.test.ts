import { beforeAll, describe, expect, it, vi } from "vitest";

// The signal that lets the settlement and refund workers read the indexed head rarely while
// the indexer is idle. Order matters: the module's state is the process's (one file, one order).
// A worker runs several files in one process (vitest.config.ts), and one of them may have used
// the indexer's transport already: this file takes a copy of the module of its own.
let activity: typeof import("../../api/indexed/chain-activity.js");

beforeAll(async () => {
  vi.resetModules();
  activity = await import("../../api/indexed/chain-activity.js");
});

describe("indexMayMove", () => {
  it("is always true in a process whose indexer does not use our transport (it cannot tell)", () => {
    expect(activity.indexMayMove()).toBe(true);
    expect(activity.indexMayMove(Date.now() + 3_600_000)).toBe(true);
  });

  it("is false once the transport is in use and has seen nothing new", () => {
    activity.noteIndexerTransport();
    expect(activity.indexMayMove()).toBe(false);
  });

  it("is true for two seconds after a new block or a block-data request, then false again", () => {
    activity.noteChainActivity();
    const at = Date.now();
    expect(activity.indexMayMove(at)).toBe(true);
    expect(activity.indexMayMove(at + 1_500)).toBe(true);
    expect(activity.indexMayMove(at + 2_500)).toBe(false);
  });
});

describe("indexReadGate", () => {
  it("opens at every call while the index may move", () => {
    activity.noteChainActivity();
    const gate = activity.indexReadGate(60_000);
    expect([gate(), gate(), gate()]).toEqual([true, true, true]);
  });

  it("is closed between two openings once the activity is over", () => {
    activity.noteChainActivity();
    const idleFrom = Date.now() + 2_500;
    const gate = activity.indexReadGate(1_000);
    expect(gate(idleFrom)).toBe(true);
    expect(gate(idleFrom + 10)).toBe(false);
    expect(gate(idleFrom + 999)).toBe(false);
    expect(gate(idleFrom + 1_000)).toBe(true);
    expect(gate(idleFrom + 1_001)).toBe(false);
  });
});
