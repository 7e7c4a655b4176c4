import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PROJECT_ROOT } from "../local/local-stack.js";
import { renderErrorsDoc } from "./errors-docs.js";

const path = join(PROJECT_ROOT, "docs", "errors.md");
writeFileSync(path, renderErrorsDoc(readFileSync(path, "utf8")));
console.log(`wrote ${path}`);
