import type { Kysely } from "kysely";
import { problems } from "../http/problem.js";
import type { Database } from "../store/database.js";
import { findOrderOfPartner, type Order } from "./order-record.js";

/** The partner's own order; another partner's is as missing as one that does not exist. */
export async function findPartnerOrder(db: Kysely<Database>, params: { partnerId: string; orderId: string }): Promise<Order> {
  const order = await findOrderOfPartner(db, params);
  if (order === undefined) throw problems.notFound(`Order ${params.orderId}`);
  return order;
}
