import { OpenAPIHono, z } from "@hono/zod-openapi";
import { getAddress } from "viem";
import type { AppContext } from "../../app-context.js";
import { paymentAddressesOfOtherPartners } from "../../compliance/issuers.js";
import { CALLERS, declareRoute } from "../../http/callers.js";
import type { PortalVariables } from "../../sign-in/portal-auth.js";
import type { AppEnv } from "../app-env.js";
import { jsonResponse, problemResponses } from "./schemas.js";

/**
 * `GET /api/issuer/networks`: the enabled networks with the payment addresses the
 * indexer watches, so the console's draft form can offer a settlement address that
 * will actually be seen (any other is refused with settlement_address_not_watched).
 */
export function issuerNetworkRoutes(context: AppContext) {
  return new OpenAPIHono<AppEnv & { Variables: PortalVariables }>().openapi(
    declareRoute({
      method: "get",
      path: "/networks",
      tags: ["Issuer portal"],
      security: CALLERS.issuer,
      summary: "Enabled networks and their watched payment addresses",
      responses: {
        200: jsonResponse(
          "Networks",
          z.object({
            data: z.array(
              z.object({
                network: z.string(),
                chainId: z.number().int(),
                watchedAddresses: z.array(z.string()),
                availableAddresses: z
                  .array(z.string())
                  .openapi({ description: "Watched addresses no other partner holds: the ones an offering may use" }),
              }),
            ),
          }),
        ),
        ...problemResponses,
      },
    }),
    async (c) => {
      const held = await paymentAddressesOfOtherPartners(context.store, c.get("portalSession").address);
      const heldByOthers = new Set(held.map((row) => `${row.chain_id}:${row.address.toLowerCase()}`));
      return c.json(
        {
          data: context.networks.map((network) => ({
            network: network.name,
            chainId: network.chainId,
            watchedAddresses: network.paymentAddresses.map((address) => getAddress(address)),
            availableAddresses: network.paymentAddresses
              .filter((address) => !heldByOthers.has(`${network.chainId}:${address.toLowerCase()}`))
              .map((address) => getAddress(address)),
          })),
        },
        200,
      );
    },
  );
}
