import { parseArgs } from "node:util";
import { ConfigError, readConfig } from "../api/config/config.js";
import { ProblemError } from "../api/http/problem.js";
import { redactSecrets } from "../api/logging/redact.js";
import { type CommandContext, commands, UsageError } from "./commands.js";

/**
 * The operator CLI (docs/deploy.md): `npx settlement <command>`. It works on the
 * store the environment configures (STORE_URL or `<DATA_DIR>/app.sqlite`) and
 * records each change in the audit log as actor `operator`.
 *
 * Exit codes: 0 done; 1 refused (the problem is printed, nothing changed);
 * 2 usage error; 78 configuration error (EX_CONFIG).
 */
export const EXIT = { ok: 0, refused: 1, usage: 2, config: 78 } as const;

export const USAGE = `Usage: npx settlement <command> [options] [--json]

  config check                         validate the configuration as the service would at start
  secrets generate <file>              write a new key file (64 hex digits, mode 0600)
  partner create --name <name> [--mode live|test]
                                       a partner and its first API key (shown once)
  partner list
  api-key create --partner <id> [--mode live|test] [--scope full|read]
  auditor-key create [--name <label>] [--mode live|test]
                                       a platform auditor key (GET only, every partner; shown once)
  auditor-key revoke <keyId>
  api-key revoke <keyId>
  payment-address add --partner <id> --network <name> <address>
  payment-address list [--partner <id>]
  issuer register --address <wallet> --name <name>
  member add --partner <id> <wallet> [--role admin|member]
  member list --partner <id>
  webhook test <endpointId>            send a signed test event to a partner's endpoint now
  contracts deploy --network <name> --deployer-key-file <file>
                                       deploy the certificate, reward and subscription contracts
                                       (vouchers: VOUCHER_KEY_FILE) and print the variables to set
  report ledger|reconciliation|orders --from-block <n> --to-block <n> | --from <iso> --to <iso>
         [--partner <id>] [--status <s>] [--chain-id <id>] [--csv] [--url <service>]
                                       the books across partners (or one), read from the running
                                       service (--url; by default on 127.0.0.1, port PORT or 42069);
                                       --csv streams the export exactly as the API's

The environment is the service's (docs/configuration.md). --json prints one JSON
document for scripts. Exit codes: 0 done, 1 refused, 2 usage, 78 configuration.`;

/** Where the CLI writes; every line passes `redactSecrets` (an RPC URL's credentials never reach a terminal or a log). */
type Output = { write: (text: string) => unknown };

const redacting = (stream: Output): Output => ({ write: (text: string) => stream.write(redactSecrets(text)) });

export async function runCli(
  argv: string[],
  env: NodeJS.ProcessEnv,
  rawOut: Output = process.stdout,
  rawErr: Output = process.stderr,
): Promise<number> {
  const out = redacting(rawOut);
  const err = redacting(rawErr);
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (error) {
    err.write(`${(error as Error).message}\n\n${USAGE}\n`);
    return EXIT.usage;
  }
  const { positionals, values } = parsed;
  const json = values.json === true;
  const [group, action, ...rest] = positionals;
  if (values.help || group === undefined || group === "help") {
    out.write(`${USAGE}\n`);
    return group === undefined && !values.help ? EXIT.usage : EXIT.ok;
  }
  const command = commands[`${group} ${action ?? ""}`.trim()];
  if (command === undefined) {
    err.write(`Unknown command "${[group, action].filter(Boolean).join(" ")}".\n\n${USAGE}\n`);
    return EXIT.usage;
  }
  // A report names its kind as the command's second word and reads it again as its first argument.
  const args = group === "report" && action !== undefined ? [action, ...rest] : rest;
  const context: CommandContext = { env, args, options: values, readConfig: () => readConfig(env) };
  try {
    const result = await command(context);
    // A CSV export goes out byte for byte as the service sent it (it equals the API's), unredacted.
    if (result.body !== undefined) {
      for await (const chunk of result.body) rawOut.write(chunk);
      return EXIT.ok;
    }
    out.write(json ? `${JSON.stringify(result.json, null, 2)}\n` : `${result.text}\n`);
    return EXIT.ok;
  } catch (error) {
    return report(error, json, out, err);
  }
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      json: { type: "boolean" },
      help: { type: "boolean", short: "h" },
      name: { type: "string" },
      mode: { type: "string" },
      partner: { type: "string" },
      scope: { type: "string" },
      network: { type: "string" },
      address: { type: "string" },
      role: { type: "string" },
      "deployer-key-file": { type: "string" },
      // settlement report …
      from: { type: "string" },
      to: { type: "string" },
      "from-block": { type: "string" },
      "to-block": { type: "string" },
      "chain-id": { type: "string" },
      status: { type: "string" },
      url: { type: "string" },
      csv: { type: "boolean" },
    },
  });
}

function report(error: unknown, json: boolean, out: Output, err: Output): number {
  if (error instanceof UsageError) {
    err.write(`${error.message}\n\n${USAGE}\n`);
    return EXIT.usage;
  }
  if (error instanceof ConfigError) {
    if (json) out.write(`${JSON.stringify({ ok: false, problems: error.problems }, null, 2)}\n`);
    else err.write(`${error.message}\n`);
    return EXIT.config;
  }
  if (error instanceof ProblemError) {
    const problem = { code: error.code, title: error.title, detail: error.message };
    if (json) out.write(`${JSON.stringify({ ok: false, error: problem }, null, 2)}\n`);
    else err.write(`${error.title}: ${error.message} (${error.code})\n`);
    return EXIT.refused;
  }
  const message = (error as Error)?.message ?? String(error);
  if (json) out.write(`${JSON.stringify({ ok: false, error: { code: "failed", detail: message } }, null, 2)}\n`);
  else err.write(`Failed: ${message}\n`);
  return EXIT.refused;
}
