import type { MiddlewareHandler } from "hono";

const JSON_MEDIA_TYPE = /^application\/([\w.-]+\+)?json\s*(;|$)/i;

/**
 * An empty body sent with `Content-Type: application/json` is no body (docs/http-conventions.md,
 * "Empty bodies"): many HTTP clients label every POST as JSON. Dropping the label
 * lets a route whose body is optional take it as `{}`, and a route that needs a body
 * list the fields it lacks, instead of refusing it as malformed JSON. A non-empty
 * body is left alone, malformed or not.
 */
export function emptyJsonBodyIsNoBody(): MiddlewareHandler {
  return async (c, next) => {
    const raw = c.req.raw;
    const type = raw.headers.get("Content-Type");
    if (type !== null && JSON_MEDIA_TYPE.test(type) && (await hasEmptyBody(raw))) {
      const headers = new Headers(raw.headers);
      headers.delete("Content-Type");
      headers.delete("Content-Length");
      c.req.raw = new Request(raw.url, { method: raw.method, headers, signal: raw.signal });
    }
    await next();
  };
}

async function hasEmptyBody(request: Request): Promise<boolean> {
  if (request.body === null) return true;
  const length = request.headers.get("Content-Length");
  if (length !== null) return length.trim() === "0";
  // Chunked: the body limit has already buffered it, so reading a copy is cheap.
  return (await request.clone().arrayBuffer()).byteLength === 0;
}
