import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppContext } from "../../app-context.js";
import type { PortalActor } from "../../audit/audit-log.js";
import { CALLERS, declareRoute } from "../../http/callers.js";
import {
  addMember,
  MAX_MEMBERS_PER_PARTNER,
  MEMBER_ROLES,
  memberView,
  pageOfMembers,
  removeMember,
} from "../../partners/members.js";
import type { PartnerVariables } from "../../partners/partner-auth.js";
import type { PortalSession } from "../../sign-in/portal-sessions.js";
import type { AppEnv } from "../app-env.js";
import { AddressSchema, jsonBody, jsonResponse, problemResponses } from "./schemas.js";

const MemberSchema = z
  .object({ partnerId: z.string(), address: z.string(), role: z.enum(MEMBER_ROLES), createdAt: z.string() })
  .openapi("PartnerMember");
const AddBody = z.object({ address: AddressSchema, role: z.enum(MEMBER_ROLES).default("member") }).strict();
const AddressParam = z.object({ address: AddressSchema });
/** `?cursor=&limit=` of a members list; the default page holds every member a partner may have. */
export const MembersQuery = z.object({
  cursor: z
    .string()
    .max(500)
    .optional()
    .openapi({ description: "`nextCursor` of the previous page; anything else is `invalid_cursor`" }),
  limit: z.coerce.number().int().min(1).max(MAX_MEMBERS_PER_PARTNER).default(MAX_MEMBERS_PER_PARTNER),
});

type Env = AppEnv & { Variables: PartnerVariables & { portalSession?: PortalSession } };

/**
 * Who acts: the member wallet when the console calls (partner portal session),
 * otherwise the partner's API key (audited as the partner itself).
 */
function actorOf(c: Context<Env>): PortalActor {
  const session = c.get("portalSession");
  return session === undefined
    ? { role: "partner", address: `api_key:${c.get("partner").id}` }
    : { role: "partner", address: session.address };
}

/**
 * `/v1/members` (API key) and `/api/partner/members` (member wallet): the wallets
 * that may sign in to the partner portal of the console.
 */
export function memberRoutes(context: AppContext) {
  const tags = ["Partner members"];
  return new OpenAPIHono<Env>()
    .openapi(
      declareRoute({
        method: "get",
        path: "/",
        security: CALLERS.partnerRead,
        tags,
        summary: "List the partner's console members",
        description: "Oldest first. A page holds every member by default (a partner has at most 100).",
        request: { query: MembersQuery },
        responses: { 200: jsonResponse("Members", z.object({ data: z.array(MemberSchema), nextCursor: z.string().nullable() })) },
      }),
      async (c) => c.json(await pageOfMembers(context.store, { partnerId: c.get("partner").id, ...c.req.valid("query") }), 200),
    )
    .openapi(
      declareRoute({
        method: "post",
        path: "/",
        security: CALLERS.partnerAdminChange,
        tags,
        summary: "Register a wallet as a console member of the partner",
        request: { body: jsonBody(AddBody) },
        responses: { 201: jsonResponse("The member", MemberSchema), ...problemResponses },
      }),
      async (c) => {
        const body = c.req.valid("json");
        const row = await addMember(context.store, actorOf(c), {
          partnerId: c.get("partner").id,
          address: body.address,
          role: body.role,
        });
        return c.json(memberView(row), 201);
      },
    )
    .openapi(
      declareRoute({
        method: "delete",
        path: "/{address}",
        security: CALLERS.partnerAdminChange,
        tags,
        summary: "Remove a console member",
        request: { params: AddressParam },
        responses: { 204: { description: "Removed" }, ...problemResponses },
      }),
      async (c) => {
        await removeMember(context.store, actorOf(c), { partnerId: c.get("partner").id, address: c.req.valid("param").address });
        return c.body(null, 204);
      },
    );
}
