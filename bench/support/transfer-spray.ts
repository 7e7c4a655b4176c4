import { readFileSync } from "node:fs";
import { join } from "node:path";
import solc from "solc";
import type { Abi, Hex } from "viem";
import { PROJECT_ROOT } from "./processes.js";

/** Compiles bench/contracts/TransferSpray.sol with solc-js (offline) at run time. */
export function compileTransferSpray(): { abi: Abi; bytecode: Hex } {
  const source = "bench/contracts/TransferSpray.sol";
  const input = {
    language: "Solidity",
    sources: { [source]: { content: readFileSync(join(PROJECT_ROOT, source), "utf8") } },
    settings: {
      optimizer: { enabled: true, runs: 200 },
      evmVersion: "cancun",
      outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } },
    },
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input))) as {
    errors?: { severity: string; formattedMessage: string }[];
    contracts?: Record<string, Record<string, { abi: Abi; evm: { bytecode: { object: string } } }>>;
  };
  const errors = (output.errors ?? []).filter((error) => error.severity === "error");
  if (errors.length > 0) throw new Error(errors.map((error) => error.formattedMessage).join("\n"));
  const compiled = output.contracts?.[source]?.TransferSpray;
  if (compiled === undefined) throw new Error("TransferSpray did not compile");
  return { abi: compiled.abi, bytecode: `0x${compiled.evm.bytecode.object}` };
}
