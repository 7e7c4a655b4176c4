import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { PROJECT_ROOT } from "../local/local-stack.js";
import { renderConfigurationDoc } from "./config-docs.js";

const path = join(PROJECT_ROOT, "docs", "configuration.md");
writeFileSync(path, renderConfigurationDoc());
console.log(`wrote ${path}`);
