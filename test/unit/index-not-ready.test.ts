import { describe, expect, it } from "vitest";
import { IndexNotReadyError, unavailableProblemFor } from "../../api/http/unavailable-problems.js";

describe("a read of the index that cannot be answered now", () => {
  it("is a retryable 503 index_not_ready: a bounded read that timed out, or tables not created yet", () => {
    const missingTable = Object.assign(new Error('relation "usdc_transfer" does not exist'), { code: "42P01" });
    const wrapped = new Error("query failed", { cause: missingTable });
    for (const error of [new IndexNotReadyError("no answer within 5000 ms"), missingTable, wrapped]) {
      const problem = unavailableProblemFor(error);
      expect(problem?.status).toBe(503);
      expect(problem?.code).toBe("index_not_ready");
    }
  });

  it("leaves other failures alone (they stay a 500 and are logged)", () => {
    expect(unavailableProblemFor(new Error("something else"))).toBeUndefined();
    expect(unavailableProblemFor(Object.assign(new Error("syntax"), { code: "42601" }))).toBeUndefined();
  });
});
