import { type ChildProcess, spawn } from "node:child_process";
import { get } from "node:http";
import { join } from "node:path";
import { stopChild } from "./stop-child.js";

export type PonderProcess = {
  baseUrl: string;
  port: number;
  process: ChildProcess;
  /** Everything the process printed, for diagnosing a failed start. */
  output: () => string;
  stop: (signal?: NodeJS.Signals) => Promise<void>;
};

export type SpawnedPonder = {
  process: ChildProcess;
  /**
   * The port Ponder actually serves on. Ponder moves on when the asked one is taken; our
   * `ponder start` and `ponder serve` refuse to instead (api/http/listen-port.ts), but
   * another Ponder command (`dev`) still may.
   */
  port: () => number;
  output: () => string;
  stop: (signal?: NodeJS.Signals) => Promise<void>;
};

type PonderParams = {
  root: string;
  /** `start`: indexer + API + workers; `serve`: an API replica (API + workers, no indexing)
   * over the Postgres databases of a `ponder start` elsewhere. */
  command?: "start" | "serve";
  port: number;
  env: NodeJS.ProcessEnv;
  /** Also print the process' output here (the `npm start` banner does). */
  inheritOutput?: boolean;
};

function ponderBin(root: string): string {
  return join(root, "node_modules", "ponder", "dist", "esm", "bin", "ponder.js");
}

/**
 * V8's heap limit for the service, in MiB, unless NODE_OPTIONS sets one. Node's default
 * on this 24 GiB machine is about 4 GiB, and V8 collects lazily below it: during a cold
 * index of 100,000 transfers the heap grew to 510 MiB of which about 130 MiB was live.
 * At 384 the same index peaks at 610 to 733 MiB resident on PGlite (876 without) and
 * 409 MiB on a Postgres server, at about the same speed (docs/operations.md, "Memory").
 */
const SERVICE_HEAP_MIB = 384;

/**
 * Ponder's indexing cache (PONDER_CACHE_BYTES) unless the environment sets it. Ponder
 * sizes it as a fifth of the heap limit, 128 MiB at SERVICE_HEAP_MIB; its estimate of
 * 100,000 transfer rows is above 64 MiB (evicting them made the cold index 3.5 times
 * slower) and below 256 MiB, at which the whole table stays cached during a backfill.
 */
const SERVICE_INDEXING_CACHE_BYTES = 256 * 2 ** 20;

/** Node's flags for the service: the heap limit unless NODE_OPTIONS already sets one. */
function nodeFlags(env: NodeJS.ProcessEnv): string[] {
  return /--max-old-space-size/.test(env.NODE_OPTIONS ?? "") ? [] : [`--max-old-space-size=${SERVICE_HEAP_MIB}`];
}

/** Starts Ponder and returns at once (the benchmark times the start from here). */
export function spawnPonder(params: PonderParams): SpawnedPonder {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PONDER_TELEMETRY_DISABLED: "true",
    PONDER_CACHE_BYTES: process.env.PONDER_CACHE_BYTES ?? String(SERVICE_INDEXING_CACHE_BYTES),
    ...params.env,
  };
  const child = spawn(
    process.execPath,
    [
      ...nodeFlags(env),
      ponderBin(params.root),
      params.command ?? "start",
      "--schema",
      params.env.DATABASE_SCHEMA ?? process.env.DATABASE_SCHEMA ?? "public",
      "--port",
      String(params.port),
      "--hostname",
      "127.0.0.1",
      "--log-format",
      "json",
    ],
    {
      cwd: params.root,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let port = params.port;
  const output = collectOutput(child, (text) => {
    if (params.inheritOutput) process.stdout.write(text);
    // Where Ponder says it serves: the port asked for, or the next one under `ponder dev`.
    const created = /"msg":"Created HTTP server","port":(\d+)/.exec(text);
    if (created) port = Number(created[1]);
  });
  const stop = (signal: NodeJS.Signals = "SIGTERM") => stopChild(child, signal);
  return { process: child, port: () => port, output, stop };
}

/** Keeps the last megabytes a child prints (stdout and stderr), handing each chunk to `onText` too. */
function collectOutput(child: ChildProcess, onText: (text: string) => void = () => {}): () => string {
  let output = "";
  const collect = (chunk: Buffer) => {
    const text = chunk.toString();
    output += text;
    if (output.length > 2_000_000) output = output.slice(-1_000_000);
    onText(text);
  };
  child.stdout?.on("data", collect);
  child.stderr?.on("data", collect);
  return () => output;
}

/**
 * Waits until the process answers `/ready` with 200; throws with the end of its output when
 * it exits first (`<name> exited with code …`) or the timeout passes (it is then killed).
 */
async function waitUntilReady(params: {
  name: string;
  process: ChildProcess;
  port: () => number;
  output: () => string;
  timeoutMs: number;
}): Promise<void> {
  const deadline = Date.now() + params.timeoutMs;
  for (;;) {
    if (params.process.exitCode !== null) {
      throw new Error(`${params.name} exited with code ${params.process.exitCode}:\n${params.output().slice(-4000)}`);
    }
    try {
      if ((await readyStatus(params.port())) === 200) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      params.process.kill("SIGKILL");
      throw new Error(`${params.name} was not ready within the timeout:\n${params.output().slice(-4000)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Runs Ponder (by default `ponder start`: indexer + API + workers in one process)
 * with the given environment and waits until the historical backfill is done (`/ready`).
 */
export async function startPonder(params: PonderParams & { readyTimeoutMs?: number }): Promise<PonderProcess> {
  const ponder = spawnPonder(params);
  await waitUntilReady({ name: "ponder", ...ponder, timeoutMs: params.readyTimeoutMs ?? 120_000 });
  const port = ponder.port();
  return { baseUrl: `http://127.0.0.1:${port}`, port, process: ponder.process, output: ponder.output, stop: ponder.stop };
}

/**
 * `GET /ready` on a connection of its own, closed after the answer. `/ready` is Ponder's
 * route, not our app's, so it is answered before our first request has raised the server's
 * keep-alive timeout (api/http/keep-alive.ts) from Node's 5 s: a pooled `fetch` connection
 * from this poll could be reused by the caller's next request just as the server closes it
 * ("other side closed", seen on a loaded machine).
 */
function readyStatus(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = get(
      { host: "127.0.0.1", port, path: "/ready", agent: false, headers: { Connection: "close" } },
      (response) => {
        response.resume();
        response.on("end", () => resolve(response.statusCode ?? 0));
      },
    );
    request.on("error", reject);
    request.setTimeout(10_000, () => request.destroy(new Error("no answer from /ready within 10 s")));
  });
}

/**
 * Starts an API replica as a plain Hono server (`node bin/serve-replica.js`, what `npm run
 * serve:replica` runs) on `port`, with the heap limit the service's processes get, and waits
 * for its `/ready`. `env` names the views schema as DATABASE_SCHEMA, as for `ponder serve`.
 */
export async function startPlainReplica(params: {
  root: string;
  port: number;
  env: NodeJS.ProcessEnv;
  readyTimeoutMs?: number;
}): Promise<PonderProcess> {
  const env: NodeJS.ProcessEnv = { ...process.env, ...params.env, PORT: String(params.port) };
  const child = spawn(
    process.execPath,
    [...nodeFlags(env), join(params.root, "bin", "serve-replica.js"), "--hostname", "127.0.0.1"],
    { cwd: params.root, env, stdio: ["ignore", "pipe", "pipe"] },
  );
  const output = collectOutput(child);
  const stop = (signal: NodeJS.Signals = "SIGTERM") => stopChild(child, signal);
  await waitUntilReady({
    name: "the replica",
    process: child,
    port: () => params.port,
    output,
    timeoutMs: params.readyTimeoutMs ?? 120_000,
  });
  return { baseUrl: `http://127.0.0.1:${params.port}`, port: params.port, process: child, output, stop };
}
