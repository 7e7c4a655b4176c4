import type { Abi, Hex } from "viem";
import { compileSolidityFiles } from "../../scripts/compile-contracts-lib.js";

/** Compiles bench/contracts/TransferSpray.sol with solc-js (offline) at run time. */
export function compileTransferSpray(): { abi: Abi; bytecode: Hex } {
  const compiled = compileSolidityFiles(["bench/contracts/TransferSpray.sol"]).find(
    (contract) => contract.name === "TransferSpray",
  );
  if (compiled === undefined) throw new Error("TransferSpray did not compile");
  return { abi: compiled.abi as Abi, bytecode: compiled.bytecode as Hex };
}
