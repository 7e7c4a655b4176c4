/**
 * Closes a test's own HTTP server, and resolves at once when the file's `beforeAll` failed
 * before it made one (`server?.close(resolve)` would then never resolve, and the `afterAll`
 * would wait out vitest's hook time-out).
 */
export function closeServer(server: { close: (callback: () => void) => unknown } | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (server === undefined) resolve();
    else server.close(() => resolve());
  });
}
