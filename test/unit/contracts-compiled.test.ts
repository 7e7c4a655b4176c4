import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { compileContracts, GENERATED_DIR, PROJECT_ROOT } from "../../scripts/compile-contracts-lib.js";

// The committed ABIs and bytecode are what the sources compile to (solc in this process): no chain.
// test/contracts.test.ts runs the contracts themselves on one Anvil.

describe("compiled contracts", () => {
  it("match the committed contracts/generated files byte for byte", () => {
    const compiled = compileContracts();
    const committed = readdirSync(join(PROJECT_ROOT, GENERATED_DIR))
      .sort()
      .map((file) => `${GENERATED_DIR}/${file}`);
    expect(Object.keys(compiled).sort()).toEqual(committed);
    for (const [path, content] of Object.entries(compiled)) {
      expect(readFileSync(join(PROJECT_ROOT, path), "utf8"), path).toBe(content);
    }
  });
});
