import { existsSync, writeFileSync } from "node:fs";
import { isAddress } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import type { AppContext } from "../api/app-context.js";
import { appendAudit, OPERATOR } from "../api/audit/audit-log.js";
import { issuerView, registerIssuer } from "../api/compliance/issuers.js";
import { ConfigError, type ServiceConfig } from "../api/config/config.js";
import { envPrefix } from "../api/config/networks.js";
import { settingsOf } from "../api/config/settings.js";
import { prepareStart } from "../api/config/startup.js";
import { problems } from "../api/http/problem.js";
import { redactUrl } from "../api/logging/redact.js";
import { createSecretBox, createSecretsKeyFileIfMissing, readSecretsKeyFile } from "../api/outbox/secret-box.js";
import { sendTestEvent } from "../api/outbox/test-event.js";
import { liveWebhookEndpoint } from "../api/outbox/webhook-endpoints.js";
import {
  apiKeyModeFor,
  findApiKey,
  issueAuditorKey,
  partnersWithLiveKeyCounts,
  revokeAuditorKey,
} from "../api/partners/api-keys.js";
import { addMember, listMembers, MEMBER_ROLES, memberView } from "../api/partners/members.js";
import {
  addPartnerPaymentAddress,
  createPartnerKey,
  createPartnerWithKey,
  revokePartnerKey,
} from "../api/partners/partner-admin.js";
import { listPaymentAddresses } from "../api/partners/payment-addresses.js";
import type { PartnerMemberRole } from "../api/store/member-tables.js";
import { migrateStore, openStore, type Store } from "../api/store/open-store.js";
import { type Command, type CommandContext, UsageError } from "./command-kit.js";
import { deployServiceContracts } from "./deploy-contracts.js";
import { reportCommand } from "./report.js";

export { type CommandContext, UsageError };

function option(context: CommandContext, name: string): string {
  const value = context.options[name];
  if (typeof value !== "string" || value.trim() === "") throw new UsageError(`--${name} is required.`);
  return value.trim();
}

function argument(context: CommandContext, index: number, what: string): string {
  const value = context.args[index];
  if (value === undefined) throw new UsageError(`${what} is required.`);
  return value;
}

function mode(context: CommandContext, config: ServiceConfig): "live" | "test" {
  const value = context.options.mode ?? apiKeyModeFor(config);
  if (value !== "live" && value !== "test") throw new UsageError("--mode must be live or test.");
  return value;
}

/** Variables a store command cannot do without; the others are `config check`'s business. */
const STORE_VARIABLES = /^(STORE_URL|DATA_DIR|NETWORKS)\b/;

/** Opens the configured store (migrated) for one command. */
async function withStore<result>(
  context: CommandContext,
  run: (store: Store, config: ServiceConfig) => Promise<result>,
): Promise<result> {
  const { config, problems: found } = context.readConfig();
  const blocking = found.filter((problem) => STORE_VARIABLES.test(problem));
  if (blocking.length > 0) throw new ConfigError(blocking);
  const store = openStore(config);
  try {
    await migrateStore(store);
    return await run(store, config);
  } finally {
    await store.destroy();
  }
}

const at = (value: string | null) => value ?? "-";

export const commands: Record<string, Command> = {
  "contracts deploy": deployServiceContracts,
  "report ledger": reportCommand,
  "report reconciliation": reportCommand,
  "report orders": reportCommand,
  async "config check"(context) {
    const config = await prepareStart(context.env, "check");
    const networks = config.networks.map((network) => ({
      name: network.name,
      chainId: network.chainId,
      usdc: network.usdc,
      startBlock: network.startBlock,
      confirmations: network.confirmations,
      paymentAddresses: network.paymentAddresses,
    }));
    const store = config.storeUrl === undefined ? `sqlite:${config.dataDir}/app.sqlite` : redactUrl(config.storeUrl);
    const index = config.databaseUrl === undefined ? `pglite:${config.dataDir}/ponder` : "postgres (DATABASE_URL)";
    const lines = [
      "Configuration is valid.",
      `store: ${store}`,
      `index: ${index}, schema ${config.databaseSchema}`,
      ...networks.map(
        (network) =>
          `${network.name} (chain ${network.chainId}): USDC ${network.usdc}, from block ${network.startBlock}, ${network.confirmations} confirmations, ${network.paymentAddresses.length} payment address(es)`,
      ),
    ];
    return {
      text: lines.join("\n"),
      json: { ok: true, networks, localMode: config.localMode, indexSchema: config.databaseSchema },
    };
  },

  async "secrets generate"(context) {
    const file = argument(context, 0, "The key file to write");
    if (existsSync(file)) {
      throw problems.invalidRequest(`${file} exists; a key file is never overwritten (secrets sealed with it would be lost).`);
    }
    // A valid secp256k1 key serves every key file: voucher signer, relayer, secret box.
    const key = generatePrivateKey();
    writeFileSync(file, `${key.slice(2)}\n`, { mode: 0o600, flag: "wx" });
    const address = privateKeyToAccount(key).address;
    return {
      text: `Wrote ${file} (mode 0600). As a signing key (VOUCHER_KEY_FILE, <NET>_RELAYER_KEY_FILE) its address is ${address}.`,
      json: { file, address },
    };
  },

  async "partner create"(context) {
    return withStore(context, async (store, config) => {
      const name = option(context, "name");
      const { partner, key } = await createPartnerWithKey(store, OPERATOR, { name, mode: mode(context, config) });
      return {
        text: `Created partner ${partner.id} (${name}).\nAPI key ${key.id}: ${key.apiKey}\nThe key is shown only now: store it in the partner's server.`,
        json: { partner: { id: partner.id, name }, apiKey: { id: key.id, apiKey: key.apiKey } },
      };
    });
  },

  async "partner list"(context) {
    return withStore(context, async (store) => {
      const partners = (await partnersWithLiveKeyCounts(store)).map((partner) => ({
        ...partner,
        createdAt: new Date(Number(partner.createdAt)).toISOString(),
      }));
      return {
        text:
          partners.length === 0
            ? "No partner."
            : partners.map((p) => `${p.id}\t${p.name}\t${p.activeApiKeys} active key(s)`).join("\n"),
        json: { partners },
      };
    });
  },

  async "api-key create"(context) {
    return withStore(context, async (store, config) => {
      const partnerId = option(context, "partner");
      const scope = context.options.scope ?? "full";
      if (scope !== "full" && scope !== "read") throw new UsageError("--scope must be full or read.");
      const key = await createPartnerKey(store, OPERATOR, { partnerId, mode: mode(context, config), scope });
      return {
        text: `API key ${key.id} (${scope}) for ${partnerId}: ${key.apiKey}\nThe key is shown only now.`,
        json: { partnerId, apiKey: { id: key.id, apiKey: key.apiKey, scope } },
      };
    });
  },

  async "api-key revoke"(context) {
    return withStore(context, async (store) => {
      const keyId = argument(context, 0, "The API key id (key_…)");
      const key = await findApiKey(store, keyId);
      if (key === undefined) throw problems.notFound(`API key ${keyId}`);
      await revokePartnerKey(store, OPERATOR, { partnerId: key.partner_id, keyId });
      return { text: `Revoked ${keyId} of ${key.partner_id}.`, json: { keyId, partnerId: key.partner_id, revoked: true } };
    });
  },

  async "auditor-key create"(context) {
    return withStore(context, async (store, config) => {
      const label = typeof context.options.name === "string" ? context.options.name : undefined;
      const key = await issueAuditorKey(store, { mode: mode(context, config), label });
      await store.transaction().execute((trx) =>
        appendAudit(trx, {
          actor: OPERATOR,
          action: "auditor_key.create",
          target: { type: "auditor_key", id: key.id },
          details: { label },
        }),
      );
      return {
        text: `Auditor key ${key.id}: ${key.apiKey}\nIt reads every partner's books (GET only). The key is shown only now.`,
        json: { auditorKey: { id: key.id, apiKey: key.apiKey } },
      };
    });
  },

  async "auditor-key revoke"(context) {
    return withStore(context, async (store) => {
      const keyId = argument(context, 0, "The auditor key id (aud_…)");
      if (!(await revokeAuditorKey(store, { keyId }))) throw problems.notFound(`Auditor key ${keyId}`);
      await store.transaction().execute((trx) =>
        appendAudit(trx, {
          actor: OPERATOR,
          action: "auditor_key.revoke",
          target: { type: "auditor_key", id: keyId },
          details: {},
        }),
      );
      return { text: `Revoked ${keyId}.`, json: { keyId, revoked: true } };
    });
  },

  async "payment-address add"(context) {
    return withStore(context, async (store, config) => {
      const address = argument(context, 0, "The payment address");
      if (!isAddress(address, { strict: false })) throw problems.invalidRequest(`"${address}" is not an address.`);
      const appContext = operatorContext(store, config);
      const added = await addPartnerPaymentAddress(appContext, OPERATOR, {
        partnerId: option(context, "partner"),
        network: option(context, "network"),
        address,
      });
      const note = added.watching
        ? "The indexer watches it."
        : "watching: false until an indexer whose build watches it serves the index: a restart on one machine, a new build schema in a fleet (docs/deploy.md); its payments are then found from the start block on.";
      return { text: `Added ${added.address} on ${added.network} (${added.id}). ${note}`, json: added };
    });
  },

  async "payment-address list"(context) {
    return withStore(context, async (store, config) => {
      const partnerId = typeof context.options.partner === "string" ? context.options.partner : undefined;
      const rows = await listPaymentAddresses(store, { partnerId, indexSchema: config.databaseSchema });
      const fromEnv = config.networks.flatMap((network) =>
        network.paymentAddresses.map((address) => ({
          network: network.name,
          address,
          variable: `${envPrefix(network.name)}PAYMENT_ADDRESSES`,
        })),
      );
      return {
        text:
          rows.length === 0
            ? "No payment address in the store."
            : rows.map((row) => `${row.address}\t${row.network}\t${row.partnerId}\twatching: ${row.watching}`).join("\n"),
        json: { paymentAddresses: rows, environment: partnerId === undefined ? fromEnv : [] },
      };
    });
  },

  async "issuer register"(context) {
    return withStore(context, async (store) => {
      const address = option(context, "address");
      if (!isAddress(address, { strict: false })) throw problems.invalidRequest(`"${address}" is not an address.`);
      const issuer = issuerView(await registerIssuer(store, OPERATOR, { address, name: option(context, "name") }));
      return { text: `Registered issuer ${issuer.id} (${issuer.address}) with partner ${issuer.partnerId}.`, json: issuer };
    });
  },

  async "member add"(context) {
    return withStore(context, async (store) => {
      const address = argument(context, 0, "The member's wallet address");
      const role = typeof context.options.role === "string" ? context.options.role : undefined;
      if (role !== undefined && !(MEMBER_ROLES as readonly string[]).includes(role)) {
        throw problems.invalidRequest(`--role must be one of ${MEMBER_ROLES.join(", ")}.`);
      }
      const member = memberView(
        await addMember(store, OPERATOR, {
          partnerId: option(context, "partner"),
          address,
          role: role as PartnerMemberRole | undefined,
        }),
      );
      return { text: `${member.address} is a member of ${member.partnerId} (${member.role}).`, json: member };
    });
  },

  async "member list"(context) {
    return withStore(context, async (store) => {
      const members = (await listMembers(store, { partnerId: option(context, "partner") })).map(memberView);
      return {
        text: members.length === 0 ? "No member." : members.map((m) => `${m.address}\t${at(m.role)}\t${m.createdAt}`).join("\n"),
        json: { members },
      };
    });
  },

  async "webhook test"(context) {
    return withStore(context, async (store, config) => {
      const endpointId = argument(context, 0, "The webhook endpoint id (we_…)");
      if (config.secretsKey === undefined && !config.localMode) {
        throw new ConfigError(["SECRETS_KEY_FILE is not set: the endpoint's secret cannot be read to sign the test event"]);
      }
      // In local mode the service generates the key on first use; so does the CLI, as it would for the service.
      const key = config.secretsKey ?? readSecretsKeyFile(createSecretsKeyFileIfMissing(config.secretsKeyPath as string));
      const endpoint = await liveWebhookEndpoint(store, endpointId);
      if (endpoint === undefined) throw problems.notFound(`Webhook endpoint ${endpointId}`);
      // The partner's own test-event call, on the endpoint's partner, then audited as the operator's act.
      const outcome = await sendTestEvent(store, {
        partnerId: endpoint.partner_id,
        endpointId,
        secretBox: createSecretBox(key),
        policy: { localMode: config.localMode },
        timeoutMs: config.dispatcher.attemptTimeoutMs,
      });
      await store.transaction().execute((trx) =>
        appendAudit(trx, {
          actor: OPERATOR,
          action: "webhook_endpoint.test",
          target: { type: "webhook_endpoint", id: endpoint.id },
          details: { partnerId: endpoint.partner_id, eventId: outcome.eventId, ok: outcome.ok, statusCode: outcome.statusCode },
        }),
      );
      const result = { endpointId, partnerId: endpoint.partner_id, url: endpoint.url, eventId: outcome.eventId, outcome };
      if (!outcome.ok) {
        throw new Error(
          `the endpoint ${result.url} did not accept the test event ${result.eventId}: ${outcome.error ?? `HTTP ${outcome.statusCode}`}`,
        );
      }
      return { text: `Delivered test event ${result.eventId} to ${result.url}: HTTP ${outcome.statusCode}.`, json: result };
    });
  },
};

/** The slice of an app context the shared domain functions need, built from the configuration. */
function operatorContext(store: Store, config: ServiceConfig): Pick<AppContext, "store" | "networks" | "settings"> {
  return {
    store,
    networks: config.networks,
    settings: settingsOf(config),
  };
}
