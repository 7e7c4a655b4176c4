import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import { problem, problems } from "../http/problem.js";
import { bearerChallenge, challengeWith, REALMS } from "../http/www-authenticate.js";
import type { Store } from "../store/open-store.js";
import { findKeyHolder, findPartner, type Partner } from "./api-keys.js";

/**
 * Whose data a request may read: one partner's (a partner's key, full or read-only,
 * or an auditor key narrowed with `partnerId=`), or every partner's (an auditor key
 * without `partnerId=`, on the routes mounted `acrossPartners`).
 */
export type ReadScope = { partnerId: string } | { partnerId: undefined };

export type PartnerVariables = {
  /** Set whenever the request is about one partner (always, except an auditor reading across partners). */
  partner: Partner;
  /** What the key may do; unset behind the console's member session (a member reads its own partner). */
  keyAccess?: { kind: "partner"; scope: "full" | "read" } | { kind: "auditor" };
};

/** Methods a read-only or auditor key may call: reading only. */
const READ_METHODS = new Set(["GET", "HEAD"]);
/**
 * The one write a partner's read-only key may make: closing a period of the books is
 * its accountant's act (SPEC 17.1, docs/accounting.md "Closed periods"). Never a
 * platform auditor key's: it reads every partner and closes none.
 */
const READ_KEY_WRITES = new Set(["POST /v1/reports/periods"]);

/**
 * `Authorization: Bearer <API_KEY>` for partner server calls (docs/quick-start.md).
 * The one place keys are told apart (docs/accounting.md): a full key (`sk_…`) calls
 * everything; a read-only key (`rk_…`) and a platform auditor key (`ak_…`) call
 * every GET and nothing else (`403 read_only_key`). An auditor names the partner with
 * `partnerId=`; without it, only the routes mounted `acrossPartners` answer (every
 * partner's books), the others ask for it.
 */
export function partnerAuth(store: Store, options: { acrossPartners?: boolean } = {}) {
  return createMiddleware<{ Variables: PartnerVariables }>(async (c, next) => {
    const refuse = (detail: string, keyRefused = false) => {
      challengeWith(c, bearerChallenge(REALMS.partnerApi, keyRefused));
      return problems.unauthenticated(detail);
    };
    const header = c.req.header("Authorization");
    if (header === undefined) throw refuse("Send the partner API key as `Authorization: Bearer <API_KEY>`.");
    const match = /^Bearer\s+(\S+)$/i.exec(header);
    if (match === null) throw refuse("The Authorization header must be `Bearer <API_KEY>`.");
    const holder = await findKeyHolder(store, match[1] as string);
    if (holder === undefined) throw refuse("The API key is not valid or has been revoked.", true);
    const readOnly = holder.kind === "auditor" || holder.scope === "read";
    const readKeyMayWrite = holder.kind === "partner" && READ_KEY_WRITES.has(`${c.req.method} ${c.req.path.replace(/\/+$/, "")}`);
    if (readOnly && !READ_METHODS.has(c.req.method) && !readKeyMayWrite) {
      throw problem(
        "read_only_key",
        `${holder.kind === "auditor" ? "An auditor key" : "A read-only key"} may only read (GET); ${c.req.method} needs a full API key.`,
      );
    }
    const asked = c.req.query("partnerId");
    if (holder.kind === "partner") {
      // A partner's key reads its own books only: naming another partner finds nothing.
      if (asked !== undefined && asked !== holder.partner.id) throw problems.notFound(`Partner ${asked.slice(0, 100)}`);
      c.set("partner", holder.partner);
      c.set("keyAccess", { kind: "partner", scope: holder.scope });
    } else {
      c.set("keyAccess", { kind: "auditor" });
      if (asked !== undefined) {
        const partner = await findPartner(store, asked);
        if (partner === undefined) throw problems.notFound(`Partner ${asked.slice(0, 100)}`);
        c.set("partner", partner);
      } else if (!options.acrossPartners) {
        throw problems.invalidRequest("An auditor key names the partner it reads: add `partnerId=<partner id>` to the query.");
      }
    }
    await next();
  });
}

/** Whose data this request reads: the partner the key (or member session) is for, or every partner (an auditor). */
export function readScope(c: Pick<Context<{ Variables: PartnerVariables }>, "get">): ReadScope {
  const partner = c.get("partner") as Partner | undefined;
  return { partnerId: partner?.id };
}
