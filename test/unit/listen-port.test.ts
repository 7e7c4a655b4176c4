import { createServer } from "node:http";
import { describe, expect, it } from "vitest";
import { ponderListenAddress, refuseTakenPort } from "../../api/http/listen-port.js";
import { findFreePort } from "../../local/ports.js";

describe("the port a fleet process serves on (issue 42)", () => {
  it("reads it as Ponder 0.16 does: PORT wins over --port, 42069 by default", () => {
    const argv = ["node", "ponder.js", "serve", "--port", "4069", "--hostname", "127.0.0.1"];
    expect(ponderListenAddress(argv, {})).toEqual({ port: 4069, hostname: "127.0.0.1" });
    expect(ponderListenAddress(argv, { PORT: "5000" })).toEqual({ port: 5000, hostname: "127.0.0.1" });
    expect(ponderListenAddress(["node", "ponder.js", "start", "-p", "4070"], {})).toEqual({ port: 4070 });
    expect(ponderListenAddress(["node", "ponder.js", "start"], {})).toEqual({ port: 42069 });
  });

  it("refuses a port another process listens on, and lets a free one be", async () => {
    const port = await findFreePort();
    await expect(refuseTakenPort({ port, hostname: "127.0.0.1" })).resolves.toBeUndefined();
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(port, "127.0.0.1", resolve));
    try {
      await expect(refuseTakenPort({ port, hostname: "127.0.0.1" })).rejects.toThrow(`port ${port} on 127.0.0.1 is taken`);
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });
});
