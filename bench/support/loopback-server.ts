import type { Server } from "node:http";
import type { AddressInfo } from "node:net";

export type LoopbackServer = { port: number; url: string; close: () => Promise<void> };

/** Listens on 127.0.0.1 (a free port unless one is named), keeping connections alive under load. */
export async function listenOnLoopback(server: Server, port = 0): Promise<LoopbackServer> {
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve());
  });
  const actual = (server.address() as AddressInfo).port;
  return {
    port: actual,
    url: `http://127.0.0.1:${actual}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
