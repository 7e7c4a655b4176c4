import { lookup } from "node:dns/promises";
import { isIP } from "node:net";

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

type Range = { bytes: number[]; bits: number; kind: AddressKind };
type AddressKind = "public" | "loopback" | "private" | "link-local" | "unspecified" | "multicast" | "reserved";

const v4 = (cidr: string, kind: AddressKind): Range => {
  const [address, bits] = cidr.split("/") as [string, string];
  return { bytes: address.split(".").map(Number), bits: Number(bits), kind };
};
const v6 = (cidr: string, kind: AddressKind): Range => {
  const [address, bits] = cidr.split("/") as [string, string];
  return { bytes: [...(ipv6Bytes(address) ?? [])], bits: Number(bits), kind };
};

// IANA IPv4 and IPv6 special-purpose address registries, plus multicast and the
// reserved class E: everything that is not an ordinary public unicast address.
const IPV4_RANGES: Range[] = [
  v4("0.0.0.0/8", "unspecified"),
  v4("10.0.0.0/8", "private"),
  v4("100.64.0.0/10", "private"),
  v4("127.0.0.0/8", "loopback"),
  v4("169.254.0.0/16", "link-local"),
  v4("172.16.0.0/12", "private"),
  v4("192.0.0.0/24", "reserved"),
  v4("192.0.2.0/24", "reserved"),
  v4("192.31.196.0/24", "reserved"),
  v4("192.52.193.0/24", "reserved"),
  v4("192.88.99.0/24", "reserved"),
  v4("192.168.0.0/16", "private"),
  v4("192.175.48.0/24", "reserved"),
  v4("198.18.0.0/15", "reserved"),
  v4("198.51.100.0/24", "reserved"),
  v4("203.0.113.0/24", "reserved"),
  v4("224.0.0.0/4", "multicast"),
  v4("240.0.0.0/4", "reserved"),
];

const IPV6_RANGES: Range[] = [
  v6("::/128", "unspecified"),
  v6("::1/128", "loopback"),
  v6("::/96", "reserved"), // IPv4-compatible (deprecated)
  v6("64:ff9b:1::/48", "private"), // local-use NAT64
  v6("100::/64", "reserved"), // discard-only
  v6("2001::/23", "reserved"), // IETF protocol assignments (Teredo, benchmarking, ORCHID, ...)
  v6("2001:db8::/32", "reserved"), // documentation
  v6("3fff::/20", "reserved"), // documentation
  v6("5f00::/16", "reserved"), // SRv6 SIDs
  v6("fc00::/7", "private"), // unique local
  v6("fe80::/10", "link-local"),
  v6("fec0::/10", "private"), // site-local (deprecated)
  v6("ff00::/8", "multicast"),
];

function inRange(bytes: Uint8Array | number[], range: Range): boolean {
  let bits = range.bits;
  for (let index = 0; bits > 0; index++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if (((bytes[index] ?? 0) & mask) !== ((range.bytes[index] ?? 0) & mask)) return false;
  }
  return true;
}

function ipv4Bytes(address: string): number[] | undefined {
  const parts = address.split(".");
  if (parts.length !== 4 || parts.some((part) => !/^\d{1,3}$/.test(part) || Number(part) > 255)) return undefined;
  return parts.map(Number);
}

/** 16 bytes of an IPv6 address (zone id dropped, embedded dotted IPv4 tail allowed). */
export function ipv6Bytes(address: string): Uint8Array | undefined {
  let text = address.split("%")[0] as string;
  const bytes = new Uint8Array(16);
  const lastColon = text.lastIndexOf(":");
  const tail = text.slice(lastColon + 1);
  if (tail.includes(".")) {
    const embedded = ipv4Bytes(tail);
    if (embedded === undefined) return undefined;
    bytes.set(embedded, 12);
    text = `${text.slice(0, lastColon + 1)}0:0`;
  }
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const head = halves[0] === "" ? [] : (halves[0] as string).split(":");
  const rest = halves.length === 2 ? (halves[1] === "" ? [] : (halves[1] as string).split(":")) : [];
  const missing = 8 - head.length - rest.length;
  if (halves.length === 1 ? head.length !== 8 : missing < 1) return undefined;
  const groups = halves.length === 1 ? head : [...head, ...Array<string>(missing).fill("0"), ...rest];
  for (const [index, group] of groups.entries()) {
    if (!/^[0-9a-fA-F]{1,4}$/.test(group)) return undefined;
    const value = Number.parseInt(group, 16);
    // Keep an embedded IPv4 tail set above: its placeholder groups are "0".
    if (index < 6 || !tail.includes(".")) {
      bytes[index * 2] = value >> 8;
      bytes[index * 2 + 1] = value & 0xff;
    }
  }
  return bytes;
}

/** What kind of address this is; anything unparsable counts as reserved. */
export function classifyAddress(address: string): AddressKind {
  const family = isIP(address.split("%")[0] as string);
  if (family === 4) {
    const bytes = ipv4Bytes(address);
    if (bytes === undefined) return "reserved";
    return IPV4_RANGES.find((range) => inRange(bytes, range))?.kind ?? "public";
  }
  if (family !== 6) return "reserved";
  const bytes = ipv6Bytes(address);
  if (bytes === undefined) return "reserved";
  // IPv4 inside IPv6 (mapped ::ffff:a.b.c.d, NAT64 64:ff9b::a.b.c.d): judge the IPv4 address.
  const embedded = (offset: number) => Array.from(bytes.slice(offset, offset + 4)).join(".");
  if (inRange(bytes, v6("::ffff:0:0/96", "reserved")) || inRange(bytes, v6("64:ff9b::/96", "reserved"))) {
    return classifyAddress(embedded(12));
  }
  // 6to4 (2002:aabb:ccdd::/48) routes to the IPv4 address in bytes 2..5.
  if (inRange(bytes, v6("2002::/16", "reserved"))) return classifyAddress(embedded(2));
  return IPV6_RANGES.find((range) => inRange(bytes, range))?.kind ?? "public";
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
