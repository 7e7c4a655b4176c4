import { relative } from "node:path";

/**
 * `@hono/node-server`'s `serveStatic` resolves its `root` and `path` against the
 * working directory, while the service's files (the console build, the hosted
 * assets) sit at absolute paths beside its modules, wherever it was started from.
 * This is the directory as `serveStatic` wants it: relative to the working
 * directory, "." when it is the working directory (an empty root would make the
 * file path absolute).
 */
export function servedFrom(absoluteDir: string): string {
  return relative(process.cwd(), absoluteDir) || ".";
}

/** `serveStatic`'s `next` when no file matched: the caller answers 404 itself. */
export const noFile = async () => {};
