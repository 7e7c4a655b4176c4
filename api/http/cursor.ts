import type { z } from "zod";
import { problems } from "./problem.js";

/** Opaque keyset cursors: base64url JSON, validated on the way back in. */
export function encodeCursor(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString("base64url");
}

export function decodeCursor<schema extends z.ZodType>(cursor: string, schema: schema): z.infer<schema> {
  try {
    return schema.parse(JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")));
  } catch {
    throw problems.invalidRequest("`cursor` is not a cursor this service issued.");
  }
}
