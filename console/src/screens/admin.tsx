import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api } from "../api";
import type { RowOf } from "../api-types";
import type { NavItem } from "../router";
import { useSession } from "../session";
import {
  Address,
  Empty,
  Field,
  ListState,
  Money,
  MoreButton,
  ProblemBox,
  SecretOnce,
  Status,
  Table,
  usePagedList,
  When,
} from "../ui";
import { AdminAuditor } from "./admin-auditor";
import { UnknownRewardClaims } from "./admin-rewards";
import type { OfferingRow } from "./investor";

export const adminNav: NavItem[] = [
  { path: "review", label: "Offering review" },
  { path: "investors", label: "Investors" },
  { path: "issuers", label: "Issuers" },
  { path: "partners", label: "Partners" },
  { path: "payments", label: "Unresolved payments" },
  { path: "deliveries", label: "Event deliveries" },
  { path: "audit", label: "Audit log" },
  { path: "reward-claims", label: "Unknown reward claims" },
  { path: "auditor", label: "Auditor" },
];

export function AdminScreens({ sub }: { sub: string[] }) {
  switch (sub[0]) {
    case "investors":
      return <Investors />;
    case "issuers":
      return <Issuers />;
    case "partners":
      return <Partners />;
    case "payments":
      return <Payments />;
    case "deliveries":
      return <Deliveries />;
    case "audit":
      return <Audit />;
    case "reward-claims":
      return <UnknownRewardClaims />;
    case "auditor":
      return <AdminAuditor />;
    default:
      return <Review />;
  }
}

function useAdminAction(invalidate: string) {
  const { token } = useSession();
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: ({ path, json, method }: { path: string; json?: unknown; method?: string }) =>
      api<Record<string, unknown>>(path, { token, json, method }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: [invalidate] }),
  });
}

function Review() {
  const [status, setStatus] = useState("in_review");
  const list = usePagedList<OfferingRow>(["admin-offerings", status], `/api/admin/offerings${status ? `?status=${status}` : ""}`);
  const action = useAdminAction("admin-offerings");
  const [reasons, setReasons] = useState<Record<string, string>>({});
  return (
    <section aria-labelledby="h-review">
      <h1 id="h-review">Offering review</h1>
      <Field label="Offering status">
        {(id) => (
          <select id={id} value={status} onChange={(event) => setStatus(event.target.value)}>
            <option value="in_review">In review</option>
            <option value="open">Open</option>
            <option value="paused">Paused</option>
            <option value="rejected">Rejected</option>
            <option value="draft">Draft</option>
            <option value="closed">Closed</option>
            <option value="">All</option>
          </select>
        )}
      </Field>
      <ListState list={list} what="offerings" />
      <ProblemBox error={action.error} />
      {list.rows.length === 0 && !list.isLoading && <p>Nothing here.</p>}
      <ul className="cards">
        {list.rows.map((offering) => (
          <li key={offering.id} className="card">
            <h2>{offering.name}</h2>
            <p>
              {offering.issuer.name} · <Status value={offering.status} />
            </p>
            <p>{offering.description}</p>
            <dl className="facts">
              <dt>Unit price</dt>
              <dd>
                <Money value={offering.unitPriceUsdc} />
              </dd>
              <dt>Units</dt>
              <dd>{offering.totalUnits}</dd>
              <dt>KYC required</dt>
              <dd>{offering.eligibility.requireKyc ? "yes" : "no"}</dd>
              <dt>Jurisdictions</dt>
              <dd>{offering.eligibility.jurisdictions?.join(", ") ?? "any"}</dd>
              <dt>Window</dt>
              <dd>
                <When value={offering.opensAt} /> to <When value={offering.closesAt} />
              </dd>
            </dl>
            {offering.status === "in_review" && (
              <div className="row">
                <button
                  type="button"
                  className="primary"
                  onClick={() => action.mutate({ path: `/api/admin/offerings/${offering.id}/approve`, json: {} })}
                >
                  Approve {offering.name}
                </button>
                <Field label="Reason for rejection">
                  {(id) => (
                    <input
                      id={id}
                      value={reasons[offering.id] ?? ""}
                      onChange={(e) => setReasons({ ...reasons, [offering.id]: e.target.value })}
                    />
                  )}
                </Field>
                <button
                  type="button"
                  className="danger"
                  onClick={() =>
                    action.mutate({
                      path: `/api/admin/offerings/${offering.id}/reject`,
                      json: { reason: reasons[offering.id] || "Not approved" },
                    })
                  }
                >
                  Reject
                </button>
              </div>
            )}
            {offering.status === "open" && (
              <button
                type="button"
                onClick={() => action.mutate({ path: `/api/admin/offerings/${offering.id}/pause`, json: {} })}
              >
                Pause
              </button>
            )}
          </li>
        ))}
      </ul>
      <MoreButton list={list} />
    </section>
  );
}

type InvestorRow = RowOf<"/api/admin/investors">;

function Investors() {
  const list = usePagedList<InvestorRow>(["admin-investors"], "/api/admin/investors");
  const action = useAdminAction("admin-investors");
  const [form, setForm] = useState({ address: "", kycStatus: "approved", jurisdiction: "", accredited: false });
  return (
    <section aria-labelledby="h-investors">
      <h1 id="h-investors">Investor eligibility</h1>
      <form
        className="grid"
        onSubmit={(event) => {
          event.preventDefault();
          action.mutate({
            path: `/api/admin/investors/${form.address.trim()}/eligibility`,
            method: "PUT",
            json: {
              kycStatus: form.kycStatus,
              jurisdiction: form.jurisdiction.trim().toUpperCase() || null,
              accredited: form.accredited,
            },
          });
        }}
      >
        <Field label="Investor wallet">
          {(id) => (
            <input
              id={id}
              required
              pattern="0x[0-9a-fA-F]{40}"
              value={form.address}
              onChange={(e) => setForm({ ...form, address: e.target.value })}
            />
          )}
        </Field>
        <Field label="KYC status">
          {(id) => (
            <select id={id} value={form.kycStatus} onChange={(e) => setForm({ ...form, kycStatus: e.target.value })}>
              <option value="approved">Approved</option>
              <option value="pending">Pending</option>
              <option value="needs_update">Needs update</option>
              <option value="rejected">Rejected</option>
            </select>
          )}
        </Field>
        <Field label="Jurisdiction" hint="ISO country code, e.g. DE">
          {(id, describedBy) => (
            <input
              id={id}
              maxLength={2}
              aria-describedby={describedBy}
              value={form.jurisdiction}
              onChange={(e) => setForm({ ...form, jurisdiction: e.target.value })}
            />
          )}
        </Field>
        <label className="check">
          <input type="checkbox" checked={form.accredited} onChange={(e) => setForm({ ...form, accredited: e.target.checked })} />{" "}
          Accredited investor
        </label>
        <button type="submit" className="primary" disabled={action.isPending}>
          Save eligibility
        </button>
      </form>
      {action.isSuccess && (
        <p className="ok" role="status">
          Saved.
        </p>
      )}
      <ProblemBox error={action.error} />
      <ListState list={list} what="investors" />
      <Table caption="Investors on record" head={["Wallet", "KYC", "Jurisdiction", "Accredited", "Frozen", "Action"]}>
        {list.rows.length === 0 && !list.isLoading ? <Empty colSpan={6}>No investor records.</Empty> : null}
        {list.rows.map((row) => (
          <tr key={row.address}>
            <td>
              <code>{row.address}</code>
            </td>
            <td>
              <Status value={row.kycStatus} />
            </td>
            <td>{row.jurisdiction ?? "—"}</td>
            <td>{row.accredited ? "yes" : "no"}</td>
            <td>{row.frozen ? `yes: ${row.frozenReason ?? ""}` : "no"}</td>
            <td>
              {row.frozen ? (
                <button
                  type="button"
                  onClick={() => action.mutate({ path: `/api/admin/investors/${row.address}/unfreeze`, json: {} })}
                >
                  Unfreeze
                </button>
              ) : (
                <button
                  type="button"
                  className="danger"
                  onClick={() => {
                    const reason = window.prompt("Reason for freezing this wallet");
                    if (reason) action.mutate({ path: `/api/admin/investors/${row.address}/freeze`, json: { reason } });
                  }}
                >
                  Freeze
                </button>
              )}
            </td>
          </tr>
        ))}
      </Table>
      <MoreButton list={list} />
    </section>
  );
}

type IssuerRow = RowOf<"/api/admin/issuers">;

function Issuers() {
  const list = usePagedList<IssuerRow>(["admin-issuers"], "/api/admin/issuers");
  const action = useAdminAction("admin-issuers");
  const [form, setForm] = useState({ address: "", name: "" });
  return (
    <section aria-labelledby="h-issuers">
      <h1 id="h-issuers">Issuers</h1>
      <form
        className="grid"
        onSubmit={(event) => {
          event.preventDefault();
          action.mutate({ path: "/api/admin/issuers", json: { address: form.address.trim(), name: form.name } });
        }}
      >
        <Field label="Issuer wallet">
          {(id) => (
            <input
              id={id}
              required
              pattern="0x[0-9a-fA-F]{40}"
              value={form.address}
              onChange={(e) => setForm({ ...form, address: e.target.value })}
            />
          )}
        </Field>
        <Field label="Issuer name">
          {(id) => <input id={id} required value={form.name} onChange={(e) => setForm({ ...form, name: e.target.value })} />}
        </Field>
        <button type="submit" className="primary" disabled={action.isPending}>
          Register issuer
        </button>
      </form>
      <ProblemBox error={action.error} />
      <ListState list={list} what="issuers" />
      <Table caption="Registered issuers" head={["Name", "Wallet", "Partner", "Status", "Registered", "Action"]}>
        {list.rows.length === 0 && !list.isLoading ? <Empty colSpan={6}>No issuers.</Empty> : null}
        {list.rows.map((row) => (
          <tr key={row.id}>
            <td>{row.name}</td>
            <td>
              <code>{row.address}</code>
            </td>
            <td>{row.partnerId}</td>
            <td>
              <Status value={row.status} />
            </td>
            <td>
              <When value={row.createdAt} />
            </td>
            <td>
              {row.status === "active" && (
                <button
                  type="button"
                  className="danger"
                  onClick={() =>
                    window.confirm(`Disable ${row.name}?`) &&
                    action.mutate({ path: `/api/admin/issuers/${row.id}/disable`, json: {} })
                  }
                >
                  Disable
                </button>
              )}
            </td>
          </tr>
        ))}
      </Table>
      <MoreButton list={list} />
    </section>
  );
}

type PartnerRow = RowOf<"/api/admin/partners">;

function Partners() {
  const list = usePagedList<PartnerRow>(["admin-partners"], "/api/admin/partners");
  const action = useAdminAction("admin-partners");
  const [name, setName] = useState("");
  const [secret, setSecret] = useState<string | null>(null);
  const [members, setMembers] = useState<Record<string, string>>({});
  const [roles, setRoles] = useState<Record<string, string>>({});
  const [added, setAdded] = useState<string | null>(null);
  return (
    <section aria-labelledby="h-partners">
      <h1 id="h-partners">Partners</h1>
      {secret && <SecretOnce label="The new partner's API key" value={secret} onDone={() => setSecret(null)} />}
      <form
        onSubmit={(event) => {
          event.preventDefault();
          action.mutate(
            { path: "/api/admin/partners", json: { name } },
            { onSuccess: (answer) => setSecret(String((answer.apiKey as { apiKey: string }).apiKey)) },
          );
        }}
      >
        <Field label="Partner name">
          {(id) => <input id={id} required value={name} onChange={(e) => setName(e.target.value)} />}
        </Field>
        <button type="submit" disabled={action.isPending}>
          Create partner
        </button>
      </form>
      <ProblemBox error={action.error} />
      {added && (
        <p className="ok" role="status">
          {added}
        </p>
      )}
      <ListState list={list} what="partners" />
      <ul className="cards">
        {list.rows.map((partner) => (
          <li key={partner.id} className="card">
            <h2>
              {partner.name} <small>{partner.id}</small>
            </h2>
            {partner.issuerId && <p>Issuer partner ({partner.issuerId})</p>}
            <p>
              Keys:{" "}
              {partner.apiKeys.map((key) => (
                <code key={key.id} className={key.revokedAt ? "revoked" : undefined}>
                  {key.prefix}… {key.revokedAt ? "(revoked) " : ""}
                </code>
              ))}
            </p>
            <p>
              Payment addresses:{" "}
              {partner.paymentAddresses.length === 0
                ? "none"
                : partner.paymentAddresses.map((address) => (
                    <span key={address.address}>
                      <Address value={address.address} /> ({address.network}){" "}
                    </span>
                  ))}
            </p>
            <form
              className="inline"
              onSubmit={(event) => {
                event.preventDefault();
                action.mutate(
                  {
                    path: `/api/admin/partners/${partner.id}/members`,
                    json: { address: (members[partner.id] ?? "").trim(), role: roles[partner.id] ?? "member" },
                  },
                  {
                    onSuccess: (member) =>
                      setAdded(`${String(member.address)} is now a member of ${partner.name} (${String(member.role)}).`),
                  },
                );
              }}
            >
              <Field label={`Add a member wallet to ${partner.name}`}>
                {(id) => (
                  <input
                    id={id}
                    required
                    pattern="0x[0-9a-fA-F]{40}"
                    value={members[partner.id] ?? ""}
                    onChange={(e) => setMembers({ ...members, [partner.id]: e.target.value })}
                  />
                )}
              </Field>
              <Field label="Role" hint="An admin also manages API keys, members, webhooks and branding.">
                {(id, describedBy) => (
                  <select
                    id={id}
                    aria-describedby={describedBy}
                    value={roles[partner.id] ?? "member"}
                    onChange={(e) => setRoles({ ...roles, [partner.id]: e.target.value })}
                  >
                    <option value="member">member</option>
                    <option value="admin">admin</option>
                  </select>
                )}
              </Field>
              <button type="submit">Add member</button>
            </form>
          </li>
        ))}
      </ul>
      <MoreButton list={list} />
    </section>
  );
}

type PaymentRow = RowOf<"/api/admin/payments">;

function Payments() {
  const list = usePagedList<PaymentRow>(["admin-payments"], "/api/admin/payments?status=unresolved");
  const action = useAdminAction("admin-payments");
  const [orders, setOrders] = useState<Record<string, string>>({});
  return (
    <section aria-labelledby="h-payments">
      <h1 id="h-payments">Unresolved payments</h1>
      <p className="hint">
        Transfers to a payment address that matched no session exactly. Attach one to an order; a refund is the partner's, from
        the payment's page in its console.
      </p>
      <ProblemBox error={action.error} />
      <ListState list={list} what="payments" />
      <Table caption="Payments to resolve" head={["Transaction", "Partner", "From", "Amount", "Reason", "Mined", "Resolve"]}>
        {list.rows.length === 0 && !list.isLoading ? <Empty colSpan={7}>No unresolved payments.</Empty> : null}
        {list.rows.map((row) => {
          const key = `${row.chainId}/${row.transactionHash}/${row.logIndex}`;
          return (
            <tr key={key}>
              <td>
                <Address value={row.transactionHash} />
              </td>
              <td>{row.partnerId ?? "—"}</td>
              <td>
                <Address value={row.from} />
              </td>
              <td>
                <Money value={row.amount} />
              </td>
              <td>{row.reason ?? "—"}</td>
              <td>
                <When value={row.minedAt} />
              </td>
              <td className="actions">
                <Field label="Order id">
                  {(id) => (
                    <input id={id} value={orders[key] ?? ""} onChange={(e) => setOrders({ ...orders, [key]: e.target.value })} />
                  )}
                </Field>
                <button
                  type="button"
                  onClick={() =>
                    action.mutate({ path: `/api/admin/payments/${key}/attach`, json: { orderId: orders[key] ?? "" } })
                  }
                >
                  Attach
                </button>
              </td>
            </tr>
          );
        })}
      </Table>
      <MoreButton list={list} />
    </section>
  );
}

type DeliveryRow = RowOf<"/api/admin/event-deliveries">;

function Deliveries() {
  const [status, setStatus] = useState("");
  const list = usePagedList<DeliveryRow>(
    ["admin-deliveries", status],
    `/api/admin/event-deliveries${status ? `?status=${status}` : ""}`,
  );
  return (
    <section aria-labelledby="h-deliveries">
      <h1 id="h-deliveries">Event deliveries</h1>
      <Field label="Delivery status">
        {(id) => (
          <select id={id} value={status} onChange={(event) => setStatus(event.target.value)}>
            <option value="">All</option>
            <option value="pending">Pending</option>
            <option value="delivered">Delivered</option>
            <option value="failed">Failed</option>
          </select>
        )}
      </Field>
      <ListState list={list} what="deliveries" />
      <Table
        caption="Webhook deliveries of every partner"
        head={["Event", "Endpoint", "Status", "Attempts", "Last answer", "Created"]}
      >
        {list.rows.length === 0 && !list.isLoading ? <Empty colSpan={6}>No deliveries.</Empty> : null}
        {list.rows.map((row) => (
          <tr key={row.id}>
            <td>{row.eventId}</td>
            <td>
              <code>{row.url}</code>
            </td>
            <td>
              <Status value={row.status} />
            </td>
            <td>{row.attemptCount}</td>
            <td>{row.lastStatusCode ?? "—"}</td>
            <td>
              <When value={row.createdAt} />
            </td>
          </tr>
        ))}
      </Table>
      <MoreButton list={list} />
    </section>
  );
}

type AuditRow = RowOf<"/api/admin/audit-log">;

function Audit() {
  const list = usePagedList<AuditRow>(["admin-audit"], "/api/admin/audit-log");
  return (
    <section aria-labelledby="h-audit">
      <h1 id="h-audit">Audit log</h1>
      <ListState list={list} what="the audit log" />
      <Table caption="Audit log, newest first" head={["When", "Actor", "Action", "Target"]}>
        {list.rows.map((row) => (
          <tr key={row.id}>
            <td>
              <When value={row.createdAt} />
            </td>
            <td>
              {row.actor.role} <Address value={row.actor.address} />
            </td>
            <td>{row.action}</td>
            <td>
              {row.target.type} {row.target.id}
            </td>
          </tr>
        ))}
      </Table>
      <MoreButton list={list} />
    </section>
  );
}
