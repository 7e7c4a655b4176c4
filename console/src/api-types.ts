import type { paths } from "../../client/src/generated/openapi.js";

/**
 * The console's view of the service's answers, taken from the types `npm run client:types`
 * generates from the OpenAPI document (client/src/generated/openapi.ts), never written by
 * hand: a field the routes stop sending fails `tsc` here instead of showing `undefined` on a
 * screen. Type-only: nothing of the client library reaches the console's bundle.
 *
 *   type Member = RowOf<"/api/partner/members">;            // one row of a list
 *   type Branding = Answer<"/api/partner/branding">;         // a whole JSON answer
 *   type Key = Answer<"/api/partner/api-keys", "post">;     // another method's answer
 */
type Method = "get" | "post" | "put" | "patch" | "delete";

type JsonBody<response> = response extends { content: { "application/json": infer body } } ? body : never;

/** The JSON body of the first success (200, then 201, then 202) an operation declares. */
type Success<operation> = operation extends { responses: infer responses }
  ? 200 extends keyof responses
    ? JsonBody<responses[200]>
    : 201 extends keyof responses
      ? JsonBody<responses[201]>
      : 202 extends keyof responses
        ? JsonBody<responses[202]>
        : never
  : never;

/** What `path` answers to `method` (GET unless named). */
export type Answer<path extends keyof paths, method extends Method = "get"> = Success<
  NonNullable<paths[path][method & keyof paths[path]]>
>;

/** One item of a list answer's `data`. */
export type RowOf<path extends keyof paths, method extends Method = "get"> =
  Answer<path, method> extends { data: (infer row)[] } ? row : never;

/** An event as the service records and sends it, typed per `type` (the client library's union). */
export type { SettlementEvent } from "../../client/src/types.js";
