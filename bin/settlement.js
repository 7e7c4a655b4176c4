#!/usr/bin/env node
// The operator CLI (`npx settlement <command>`): TypeScript run through tsx.
import { register } from "tsx/esm/api";

register();
const { runCli } = await import("../cli/main.ts");
process.exitCode = await runCli(process.argv.slice(2), process.env);
