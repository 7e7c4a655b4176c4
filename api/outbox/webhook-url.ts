import { lookup } from "node:dns/promises";
import { BlockList, isIP } from "node:net";
import ipaddr from "ipaddr.js";

/**
 * Which webhook URLs the service will call. A webhook URL is chosen by a partner, so
 * without this check the service could be made to call its own network (cloud
 * metadata at 169.254.169.254, an admin port on 127.0.0.1, a database on 10.x).
 * The check runs when an endpoint is created and again before every attempt, on the
 * addresses DNS gives at that moment; the attempt then connects to exactly those
 * addresses, so a name cannot be re-pointed between the check and the connection.
 */
export type WebhookUrlPolicy = {
  /** Local development: `http:` and loopback (127.0.0.0/8, ::1, localhost) allowed. */
  localMode: boolean;
};

export type ResolvedAddress = { address: string; family: 4 | 6 };

export type WebhookUrlCheck = { ok: true; url: URL; addresses: ResolvedAddress[] } | { ok: false; reason: string; url?: URL };

export const MAX_WEBHOOK_URL_LENGTH = 2048;

type AddressKind = "public" | "loopback" | "private" | "link-local" | "unspecified" | "multicast" | "reserved";

// ipaddr.js names the ranges of the IANA IPv4 and IPv6 special-purpose address
// registries; each name maps to the kind the policy judges. Anything it calls
// `unicast` is an ordinary public address; a name it may add later is refused
// (reserved) until it is mapped here.
const IPV4_KINDS: Record<string, AddressKind> = {
  unicast: "public",
  unspecified: "unspecified",
  broadcast: "reserved",
  multicast: "multicast",
  linkLocal: "link-local",
  loopback: "loopback",
  carrierGradeNat: "private",
  private: "private",
};

const IPV6_KINDS: Record<string, AddressKind> = {
  unicast: "public",
  unspecified: "unspecified",
  linkLocal: "link-local",
  multicast: "multicast",
  loopback: "loopback",
  uniqueLocal: "private",
  deprecatedSiteLocal: "private",
};

// Ranges ipaddr.js does not single out: IPv4-compatible addresses (deprecated;
// ipaddr.js reads `::a.b.c.d` as `::ffff:a.b.c.d`, so Node's own parser judges them),
// the well-known NAT64 prefix (judged by its IPv4 address) and local-use NAT64.
const IPV4_COMPATIBLE = new BlockList();
IPV4_COMPATIBLE.addSubnet("::", 96, "ipv6");
const NAT64_WELL_KNOWN = ipaddr.parseCIDR("64:ff9b::/96");

/** What kind of address this is; anything unparsable counts as reserved. */
export function classifyAddress(address: string): AddressKind {
  const text = address.split("%")[0] as string;
  // `isIP` first: only the standard notations (ipaddr.js also reads `2130706433` or `0x7f.1`).
  const family = isIP(text);
  if (family === 4) return IPV4_KINDS[ipaddr.IPv4.parse(text).range()] ?? "reserved";
  if (family !== 6) return "reserved";
  const parsed = ipaddr.IPv6.parse(text);
  const range = parsed.range();
  if (range !== "unspecified" && range !== "loopback" && IPV4_COMPATIBLE.check(text, "ipv6")) return "reserved";
  const embedded = (offset: number) =>
    parsed
      .toByteArray()
      .slice(offset, offset + 4)
      .join(".");
  // IPv4 inside IPv6 (mapped ::ffff:a.b.c.d, NAT64 64:ff9b::a.b.c.d): judge the IPv4 address.
  if (range === "ipv4Mapped" || parsed.match(NAT64_WELL_KNOWN)) return classifyAddress(embedded(12));
  if (range === "rfc6052") return "private"; // local-use NAT64, 64:ff9b:1::/48
  // 6to4 (2002:aabb:ccdd::/48) routes to the IPv4 address in bytes 2..5.
  if (range === "6to4") return classifyAddress(embedded(2));
  return IPV6_KINDS[range] ?? "reserved";
}

export function isAllowedAddress(address: string, policy: WebhookUrlPolicy): boolean {
  const kind = classifyAddress(address);
  return kind === "public" || (kind === "loopback" && policy.localMode);
}

export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export const resolveAll: Resolver = async (hostname) =>
  (await lookup(hostname, { all: true, verbatim: true })).map((entry) => ({
    address: entry.address,
    family: entry.family === 6 ? 6 : 4,
  }));

/**
 * Checks a webhook URL against the policy, resolving its host name. Never throws:
 * a refusal carries a reason a partner can act on.
 */
export async function checkWebhookUrl(
  input: string,
  policy: WebhookUrlPolicy,
  resolve: Resolver = resolveAll,
): Promise<WebhookUrlCheck> {
  if (input.length > MAX_WEBHOOK_URL_LENGTH)
    return { ok: false, reason: `The URL is longer than ${MAX_WEBHOOK_URL_LENGTH} characters.` };
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    return { ok: false, reason: "The URL is not a valid absolute URL." };
  }
  if (url.protocol !== "https:" && !(url.protocol === "http:" && policy.localMode)) {
    return { ok: false, url, reason: policy.localMode ? "The URL must use https or http." : "The URL must use https." };
  }
  if (url.username !== "" || url.password !== "") {
    return { ok: false, url, reason: "The URL must not carry credentials; deliveries are authenticated by their signature." };
  }
  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  let addresses: ResolvedAddress[];
  if (isIP(host) !== 0) {
    addresses = [{ address: host, family: isIP(host) === 6 ? 6 : 4 }];
  } else {
    try {
      addresses = await resolve(host);
    } catch (error) {
      const code = (error as { code?: string }).code ?? String(error);
      return { ok: false, url, reason: `The host name ${host} does not resolve (${code}).` };
    }
    if (addresses.length === 0) return { ok: false, url, reason: `The host name ${host} does not resolve.` };
  }
  const forbidden = addresses.find((entry) => !isAllowedAddress(entry.address, policy));
  if (forbidden !== undefined) {
    const kind = classifyAddress(forbidden.address);
    const where = forbidden.address === host ? host : `${host} resolves to ${forbidden.address}, which`;
    return {
      ok: false,
      url,
      reason: `${where} is a ${kind} address; webhooks are delivered only to public addresses${
        policy.localMode ? " (or loopback in local mode)" : ""
      }.`,
    };
  }
  return { ok: true, url, addresses };
}
