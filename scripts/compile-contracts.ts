import { mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { compileContracts, GENERATED_DIR, PROJECT_ROOT } from "./compile-contracts-lib.js";

function writeGeneratedFiles(files: Record<string, string>): void {
  const generatedDir = join(PROJECT_ROOT, GENERATED_DIR);
  // Remove modules of contracts that no longer exist, so the directory matches the sources exactly.
  rmSync(generatedDir, { recursive: true, force: true });
  for (const [path, content] of Object.entries(files)) {
    const target = join(PROJECT_ROOT, path);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, content);
  }
  console.log(`wrote ${readdirSync(generatedDir).length} files to ${GENERATED_DIR}`);
}

try {
  writeGeneratedFiles(compileContracts());
} catch (error) {
  console.error((error as Error).message);
  process.exit(1);
}
