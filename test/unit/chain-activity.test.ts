import { describe, expect, it } from "vitest";
import { indexMayMove, noteChainActivity, noteIndexerTransport } from "../../api/indexed/chain-activity.js";

// The signal that lets the settlement and refund workers read the indexed head rarely while
// the indexer is idle. Order matters: the module's state is the process's (one file, one order).
describe("indexMayMove", () => {
  it("is always true in a process whose indexer does not use our transport (it cannot tell)", () => {
    expect(indexMayMove()).toBe(true);
    expect(indexMayMove(Date.now() + 3_600_000)).toBe(true);
  });

  it("is false once the transport is in use and has seen nothing new", () => {
    noteIndexerTransport();
    expect(indexMayMove()).toBe(false);
  });

  it("is true for two seconds after a new block or a block-data request, then false again", () => {
    noteChainActivity();
    const at = Date.now();
    expect(indexMayMove(at)).toBe(true);
    expect(indexMayMove(at + 1_500)).toBe(true);
    expect(indexMayMove(at + 2_500)).toBe(false);
  });
});
