import { createServer } from "node:http";

/**
 * Where Ponder's server will listen, read as Ponder 0.16 reads it
 * (`internal/options.js`): the `PORT` variable wins over `--port`/`-p`, 42069 by
 * default; `--hostname`/`-H`, else Node's default (every interface).
 */
export function ponderListenAddress(argv: readonly string[], env: NodeJS.ProcessEnv): { port: number; hostname?: string } {
  const option = (...names: string[]) => {
    for (const name of names) {
      const index = argv.indexOf(name);
      if (index !== -1) return argv[index + 1];
    }
    return undefined;
  };
  const hostname = option("--hostname", "-H");
  const port = Number(env.PORT ?? option("--port", "-p") ?? 42069);
  return hostname === undefined ? { port } : { port, hostname };
}

/**
 * Fails when another process listens on the port the service is about to serve on.
 * Ponder 0.16 quietly moves to the next free port instead (`utils/port.js`), and in a
 * fleet the next port is another process' (a replica's): the load balancer would then
 * send one process' traffic to the other. Other errors (a privileged port, say) are
 * left to Ponder's own start to report.
 */
export async function refuseTakenPort(address: { port: number; hostname?: string }): Promise<void> {
  const where = `port ${address.port}${address.hostname === undefined ? "" : ` on ${address.hostname}`}`;
  const taken = await new Promise<boolean>((resolve) => {
    const probe = createServer();
    probe.once("error", (error: NodeJS.ErrnoException) => resolve(error.code === "EADDRINUSE"));
    probe.listen(address.port, address.hostname, () => probe.close(() => resolve(false)));
  });
  if (taken) {
    throw new Error(
      `The service's ${where} is taken by another process: stop it, or give this process another port (PORT or --port). Ponder would otherwise serve on the next free port, which in a fleet may be another process' port.`,
    );
  }
}
