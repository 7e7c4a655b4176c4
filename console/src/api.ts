/** Every call the console makes goes to this origin, through the service's own API routes. */

export type Role = "investor" | "issuer" | "admin" | "partner";

/** An RFC 9457 problem from the service (or a network failure dressed as one). */
export class ApiProblem extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    readonly detail: string,
    readonly code: string,
    readonly body: Record<string, unknown> = {},
  ) {
    super(detail);
  }
}

type Listener = () => void;
let onSessionLost: Listener = () => undefined;
/** Called when a signed-in call answers 401: the session expired or was revoked. */
export function setSessionLostHandler(listener: Listener) {
  onSessionLost = listener;
}

export async function api<T = unknown>(
  path: string,
  options: { method?: string; json?: unknown; token?: string | null; raw?: boolean; file?: Blob; accept?: string } = {},
): Promise<T> {
  // `accept: "text/csv"` with `raw` reads an export (the Auditor view's downloads).
  const headers: Record<string, string> = { Accept: options.accept ?? "application/json" };
  if (options.token) headers.Authorization = `Bearer ${options.token}`;
  if (options.json !== undefined) headers["Content-Type"] = "application/json";
  // A file goes as its raw bytes under its own type (the logo upload).
  if (options.file !== undefined) headers["Content-Type"] = options.file.type;
  let response: Response;
  try {
    response = await fetch(path, {
      method: options.method ?? (options.json === undefined ? "GET" : "POST"),
      headers,
      body: options.file ?? (options.json === undefined ? undefined : JSON.stringify(options.json)),
    });
  } catch (error) {
    throw new ApiProblem(0, "The service cannot be reached", String(error), "network_error");
  }
  if (!response.ok) {
    const text = await response.text();
    let body: Record<string, unknown> = {};
    try {
      body = JSON.parse(text) as Record<string, unknown>;
    } catch {
      body = { title: `HTTP ${response.status}`, detail: text.slice(0, 300) };
    }
    const problem = new ApiProblem(
      response.status,
      String(body.title ?? `HTTP ${response.status}`),
      String(body.detail ?? ""),
      String(body.code ?? "unknown"),
      body,
    );
    if (response.status === 401 && options.token) onSessionLost();
    throw problem;
  }
  if (options.raw) return (await response.text()) as T;
  if (response.status === 204) return undefined as T;
  return (await response.json()) as T;
}

export type Page<T> = { data: T[]; nextCursor: string | null };
