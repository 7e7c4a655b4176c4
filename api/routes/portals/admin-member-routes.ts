import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppContext } from "../../app-context.js";
import { CALLERS, declareRoute } from "../../http/callers.js";
import { addMember, MEMBER_ROLES, memberView, pageOfMembers } from "../../partners/members.js";
import type { PortalVariables } from "../../sign-in/portal-auth.js";
import type { AppEnv } from "../app-env.js";
import { MembersQuery } from "./partner-member-routes.js";
import { AddressSchema, IdParam, jsonBody, jsonResponse, problemResponses } from "./schemas.js";

const MemberSchema = z.object({ partnerId: z.string(), address: z.string(), role: z.enum(MEMBER_ROLES), createdAt: z.string() });

/** `/api/admin/partners/{id}/members`: an admin registers a partner's console users. */
export function adminMemberRoutes(context: AppContext) {
  const tags = ["Admin portal"];
  return new OpenAPIHono<AppEnv & { Variables: PortalVariables }>()
    .openapi(
      declareRoute({
        method: "get",
        path: "/{id}/members",
        security: CALLERS.admin,
        tags,
        summary: "A partner's console members",
        request: { params: IdParam, query: MembersQuery },
        responses: {
          200: jsonResponse("Members", z.object({ data: z.array(MemberSchema), nextCursor: z.string().nullable() })),
          ...problemResponses,
        },
      }),
      async (c) =>
        c.json(await pageOfMembers(context.store, { partnerId: c.req.valid("param").id, ...c.req.valid("query") }), 200),
    )
    .openapi(
      declareRoute({
        method: "post",
        path: "/{id}/members",
        security: CALLERS.admin,
        tags,
        summary: "Register a wallet as a console member of a partner",
        request: {
          params: IdParam,
          body: jsonBody(z.object({ address: AddressSchema, role: z.enum(MEMBER_ROLES).default("member") })),
        },
        responses: { 201: jsonResponse("The member", MemberSchema), ...problemResponses },
      }),
      async (c) => {
        const body = c.req.valid("json");
        const actor = { role: "admin" as const, address: c.get("portalSession").address };
        const row = await addMember(context.store, actor, {
          partnerId: c.req.valid("param").id,
          address: body.address,
          role: body.role,
        });
        return c.json(memberView(row), 201);
      },
    );
}
