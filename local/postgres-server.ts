import { execFileSync } from "node:child_process";
import { chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { findFreePort } from "./ports.js";

export type PostgresServer = {
  /** The server's `postgres` database. */
  url: string;
  /** Where its cluster, socket and log lie (`stopPostgresServer` takes it). */
  directory: string;
  /** Creates an empty database and returns its URL. */
  createDatabase: (name: string) => Promise<string>;
  /**
   * Runs `pg_ctl` on the server's cluster: `restart -m fast` (every connection ended, as a
   * real server's restart does), or a `stop -m fast` and a later `start` for an outage.
   */
  control: (action: "restart" | "stop" | "start") => void;
  stop: () => Promise<void>;
};

/** Runs one statement on its own connection to `url`. */
async function runStatement(url: string, statement: string): Promise<void> {
  const client = new pg.Client(url);
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

function plainName(name: string): string {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`not a plain database name: ${name}`);
  return name;
}

/** Creates an empty database `name` on the server whose `postgres` database is `serverUrl`; answers its URL. */
export async function createDatabase(serverUrl: string, name: string): Promise<string> {
  await runStatement(serverUrl, `create database ${plainName(name)}`);
  return serverUrl.replace(/\/postgres$/, `/${name}`);
}

/** Drops database `name` of that server, ending the sessions still connected to it. */
export async function dropDatabase(serverUrl: string, name: string): Promise<void> {
  await runStatement(serverUrl, `drop database if exists ${plainName(name)} with (force)`);
}

/** Debian keeps the server programs in /usr/lib/postgresql/<version>/bin, off the PATH. */
function postgresBinDirectory(): string {
  const root = "/usr/lib/postgresql";
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((version) => existsSync(join(root, version, "bin", "initdb")))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions.length === 0) {
    throw new Error(
      "PostgreSQL's server programs are missing: install Debian's package (apt-get install -y postgresql); .ci/run does.",
    );
  }
  return join(root, versions[0]!, "bin");
}

/**
 * A throw-away PostgreSQL server of our own on a free loopback port (tests and
 * benchmarks): a new cluster
 * in a temporary directory, trust authentication, no fsync. Postgres refuses to
 * run as root, so as root it runs as the `postgres` user Debian's package creates.
 */
export async function startPostgresServer(): Promise<PostgresServer> {
  const bin = postgresBinDirectory();
  const directory = mkdtempSync(join(tmpdir(), "settlement-postgres-"));
  const data = join(directory, "data");
  const asRoot = process.getuid?.() === 0;
  const run = (program: string, args: string[]) =>
    execFileSync(asRoot ? "runuser" : join(bin, program), asRoot ? ["-u", "postgres", "--", join(bin, program), ...args] : args, {
      stdio: "pipe",
    });
  if (asRoot) {
    mkdirSync(data);
    const uid = Number(execFileSync("id", ["-u", "postgres"]).toString().trim());
    const gid = Number(execFileSync("id", ["-g", "postgres"]).toString().trim());
    chownSync(directory, uid, gid);
    chownSync(data, uid, gid);
  }
  run("initdb", ["-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"]);
  const port = await findFreePort();
  const options = `-p ${port} -k ${directory} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`;
  try {
    run("pg_ctl", ["-D", data, "-l", join(directory, "server.log"), "-w", "-o", options, "start"]);
  } catch (error) {
    const log = existsSync(join(directory, "server.log")) ? readFileSync(join(directory, "server.log"), "utf8") : "";
    throw new Error(`PostgreSQL did not start: ${String(error)}\n${log.slice(-2000)}`);
  }
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const logFile = join(directory, "server.log");
  return {
    url,
    createDatabase: (name) => createDatabase(url, name),
    control(action) {
      if (action === "stop") run("pg_ctl", ["-D", data, "-m", "fast", "-w", "stop"]);
      else
        run("pg_ctl", ["-D", data, "-l", logFile, "-w", "-o", options, ...(action === "restart" ? ["-m", "fast"] : []), action]);
    },
    directory,
    async stop() {
      stopPostgresServer(directory);
    },
  };
}

/**
 * Stops the server whose cluster `startPostgresServer` made in `directory` and removes it: what
 * `stop()` does, for a process other than the one that started it (the tests' global teardown
 * stops the server a test worker started).
 */
export function stopPostgresServer(directory: string): void {
  const bin = postgresBinDirectory();
  const data = join(directory, "data");
  const asRoot = process.getuid?.() === 0;
  const pgCtl = join(bin, "pg_ctl");
  const args = ["-D", data, "-m", "immediate", "stop"];
  try {
    execFileSync(asRoot ? "runuser" : pgCtl, asRoot ? ["-u", "postgres", "--", pgCtl, ...args] : args, { stdio: "pipe" });
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}
