import type { ServiceConfig } from "../api/config/config.js";

/** A usage mistake (a missing or malformed option): printed with the usage, exit 2. */
export class UsageError extends Error {
  override name = "UsageError";
}

export type CommandContext = {
  env: NodeJS.ProcessEnv;
  args: string[];
  options: Record<string, string | boolean | undefined>;
  readConfig: () => { config: ServiceConfig; problems: string[] };
};

/**
 * What a command prints: `text` for people, `json` for scripts (`--json`); or `body`,
 * printed as it comes and exactly as given (a CSV export streamed, whatever `--json`).
 */
export type CommandResult = { text: string; json: unknown; body?: AsyncIterable<string> };
export type Command = (context: CommandContext) => Promise<CommandResult>;
