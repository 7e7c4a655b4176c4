/** Hono environment shared by every route: the request id set by middleware. */
export type AppEnv = { Variables: { requestId: string } };
