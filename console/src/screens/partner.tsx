import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api } from "../api";
import type { Answer, RowOf, SettlementEvent } from "../api-types";
import type { NavItem } from "../router";
import { Link } from "../router";
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
import { Auditor } from "./partner-auditor";
import { Fulfil, OrderPage, OrderState } from "./partner-order";
import { PaymentPage, paymentPath, RefundPage } from "./partner-payment";
import { Refunds } from "./partner-refunds";
import { Rewards } from "./partner-rewards";
import { SubscriptionPage, Subscriptions } from "./partner-subscriptions";

export const partnerNav: NavItem[] = [
  { path: "sessions", label: "Sessions and orders" },
  { path: "payments", label: "Payments" },
  { path: "events", label: "Events" },
  { path: "webhooks", label: "Webhooks" },
  { path: "api-keys", label: "API keys" },
  { path: "members", label: "Members" },
  { path: "branding", label: "Branding" },
  { path: "rewards", label: "Rewards" },
  { path: "refunds", label: "Refunds" },
  { path: "subscriptions", label: "Subscriptions" },
  { path: "auditor", label: "Auditor" },
];

export function PartnerScreens({ sub }: { sub: string[] }) {
  switch (sub[0]) {
    case "orders":
      return sub[1] ? <OrderPage id={sub[1]} /> : <Sessions />;
    case "payments":
      return sub[1] && sub[2] && sub[3] ? (
        <PaymentPage chainId={sub[1]} transactionHash={sub[2]} logIndex={sub[3]} />
      ) : (
        <Payments />
      );
    case "events":
      return sub[1] ? <EventDetail id={sub[1]} /> : <Events />;
    case "webhooks":
      return <Webhooks />;
    case "api-keys":
      return <ApiKeys />;
    case "members":
      return <Members />;
    case "branding":
      return <Branding />;
    case "rewards":
      return <Rewards />;
    case "refunds":
      // An order id here is the older "Refund…" link, which filled the form in; anything else is a refund.
      return sub[1] && !sub[1].startsWith("ord_") ? <RefundPage id={sub[1]} /> : <Refunds orderId={sub[1]} />;
    case "subscriptions":
      return sub[1] ? <SubscriptionPage id={sub[1]} /> : <Subscriptions />;
    case "auditor":
      return <Auditor />;
    default:
      return <Sessions />;
  }
}

type SessionRow = RowOf<"/api/partner/checkout/sessions">;

function Sessions() {
  const [status, setStatus] = useState("");
  const list = usePagedList<SessionRow>(
    ["partner-sessions", status],
    `/api/partner/checkout/sessions${status ? `?status=${status}` : ""}`,
  );
  return (
    <section aria-labelledby="h-sessions">
      <h1 id="h-sessions">Sessions and orders</h1>
      <Field label="Session status">
        {(id) => (
          <select id={id} value={status} onChange={(event) => setStatus(event.target.value)}>
            <option value="">All</option>
            <option value="awaiting_payment">Awaiting payment</option>
            <option value="payment_pending">Payment pending</option>
            <option value="settled">Settled</option>
            <option value="expired">Expired</option>
          </select>
        )}
      </Field>
      <ListState list={list} what="sessions" />
      <Table caption="Checkout sessions, newest first" head={["Order", "Order total", "Status", "Created", "Action"]}>
        {list.rows.length === 0 && !list.isLoading ? <Empty colSpan={5}>No sessions yet.</Empty> : null}
        {list.rows.map((row) => (
          <tr key={row.id}>
            <td>
              <Link to={`/partner/orders/${encodeURIComponent(row.order.id)}`} aria-label={`Order ${row.externalOrderId}`}>
                {row.externalOrderId}
              </Link>
              <br />
              {row.product.name} × {row.product.quantity}
              <br />
              {/* May break: unbroken, it left the table a pixel too wide at 1280 px on some runs (the dates' widths vary). */}
              <small className="break">{row.order.id}</small>
            </td>
            <td>
              {/* The order's total, not the amount asked of the payer (the total plus its sub-cent reference). */}
              <Money value={row.payment.totalPriceUsdc} />
            </td>
            <td>
              Session <Status value={row.status} />
              <br />
              Order <OrderState order={row.order} />
              {row.order.rewardCount > 0 && (
                <>
                  <br />
                  Rewarded <Money value={row.order.amountRewarded} />
                </>
              )}
            </td>
            <td>
              <When value={row.createdAt} />
            </td>
            <td>
              {row.order.status === "paid" ? <Fulfil orderId={row.order.id} /> : null}
              {row.status === "settled" ? (
                <Link
                  to={`/partner/orders/${encodeURIComponent(row.order.id)}`}
                  aria-label={`Refund order ${row.externalOrderId}`}
                >
                  Refund…
                </Link>
              ) : null}
            </td>
          </tr>
        ))}
      </Table>
      <MoreButton list={list} />
    </section>
  );
}

type PaymentRow = RowOf<"/api/partner/payments">;

type ResolveAction = { key: string; action: "attach"; orderId: string };

function ResolvePayment({
  row,
  mutation,
}: {
  row: PaymentRow;
  mutation: { mutate: (action: ResolveAction) => void; isPending: boolean };
}) {
  const [orderId, setOrderId] = useState("");
  const key = paymentPath(row);
  return (
    <form
      className="inline"
      onSubmit={(event) => {
        event.preventDefault();
        mutation.mutate({ key, action: "attach", orderId });
      }}
    >
      <Field label="Order id">
        {(id) => <input id={id} required maxLength={100} value={orderId} onChange={(e) => setOrderId(e.target.value)} />}
      </Field>
      <button type="submit" disabled={mutation.isPending}>
        Attach
      </button>
      {/* Refunding needs a choice of destination (the payer, an address, the customer's link): its page asks for it. */}
      <Link to={`/partner/payments/${key}`} aria-label={`Refund payment ${row.transactionHash} log ${row.logIndex}`}>
        Refund…
      </Link>
    </form>
  );
}

function Payments() {
  const { token } = useSession();
  const queryClient = useQueryClient();
  const resolve = useMutation({
    mutationFn: (action: ResolveAction) =>
      api(`/api/partner/payments/${action.key}/attach`, { token, json: { orderId: action.orderId } }),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: ["partner-payments"] });
      void queryClient.invalidateQueries({ queryKey: ["partner-sessions"] });
    },
  });
  const [status, setStatus] = useState("");
  const list = usePagedList<PaymentRow>(
    ["partner-payments", status],
    `/api/partner/payments${status ? `?status=${status}` : ""}`,
  );
  return (
    <section aria-labelledby="h-payments">
      <h1 id="h-payments">Payments</h1>
      <p className="hint">
        Every USDC transfer to your payment addresses. An <em>unresolved</em> payment matched no session exactly (wrong amount,
        late, or a second payment of an order). Attach it to one of your orders (it settles that order), or refund it: "Refund…"
        opens the payment, where you choose where the money goes back to.
      </p>
      <Field label="Payment status">
        {(id) => (
          <select id={id} value={status} onChange={(event) => setStatus(event.target.value)}>
            <option value="">All</option>
            <option value="pending">Pending</option>
            <option value="settled">Settled</option>
            <option value="unresolved">Unresolved</option>
            <option value="refund_requested">Refund requested</option>
            <option value="attached">Attached</option>
          </select>
        )}
      </Field>
      <ListState list={list} what="payments" />
      {resolve.isSuccess && (
        <p className="ok" role="status">
          Attached to the order.
        </p>
      )}
      <ProblemBox error={resolve.error} />
      <Table caption="Payments, oldest first" head={["Transaction", "From", "Amount", "Status", "Reason", "Mined", "Resolve"]}>
        {list.rows.length === 0 && !list.isLoading ? <Empty colSpan={7}>No payments.</Empty> : null}
        {list.rows.map((row) => (
          <tr key={`${row.chainId}-${row.transactionHash}-${row.logIndex}`}>
            <td>
              <Link to={`/partner/payments/${paymentPath(row)}`}>
                <Address value={row.transactionHash} />
              </Link>
            </td>
            <td>
              <Address value={row.from} />
            </td>
            <td>
              <Money value={row.amount} />
            </td>
            <td>
              <Status value={row.status} />
            </td>
            <td>{row.reason?.replaceAll("_", " ") ?? "—"}</td>
            <td>
              <When value={row.minedAt} />
            </td>
            <td className="actions">
              {row.status === "unresolved" ? (
                <ResolvePayment row={row} mutation={resolve} />
              ) : row.status === "refund_requested" ? (
                <Link to={`/partner/payments/${paymentPath(row)}`} aria-label={`Refunds of payment ${row.transactionHash}`}>
                  Refunds…
                </Link>
              ) : (
                "—"
              )}
            </td>
          </tr>
        ))}
      </Table>
      <MoreButton list={list} />
    </section>
  );
}

type EventRow = SettlementEvent;

function Events() {
  const list = usePagedList<EventRow>(["partner-events"], "/api/partner/events?limit=50");
  return (
    <section aria-labelledby="h-events">
      <h1 id="h-events">Events</h1>
      <ListState list={list} what="events" />
      <Table caption="Events in the order they were recorded" head={["Event", "Type", "Order", "Recorded"]}>
        {list.rows.length === 0 && !list.isLoading ? <Empty colSpan={4}>No events yet.</Empty> : null}
        {list.rows.map((row) => (
          <tr key={row.id}>
            <td>
              <Link to={`/partner/events/${row.id}`}>{row.id}</Link>
            </td>
            <td>{row.type}</td>
            <td>{row.data.externalOrderId ?? "—"}</td>
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

function EventDetail({ id }: { id: string }) {
  const { token } = useSession();
  const queryClient = useQueryClient();
  const event = useQuery({
    queryKey: ["partner-event", id],
    queryFn: () => api<EventRow>(`/api/partner/events/${id}`, { token }),
  });
  const deliveries = useQuery({
    queryKey: ["partner-event-deliveries", id],
    queryFn: () => api<Answer<"/api/partner/events/{id}/deliveries">>(`/api/partner/events/${id}/deliveries`, { token }),
    // A queued delivery is followed until the endpoint has answered.
    refetchInterval: (query) => (query.state.data?.data.some((delivery) => delivery.status === "pending") ? 1000 : false),
  });
  const redeliver = useMutation({
    mutationFn: (endpointId?: string) =>
      api(`/api/partner/events/${id}/redeliver`, { token, json: endpointId ? { endpointId } : {} }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ["partner-event-deliveries", id] }),
  });
  return (
    <section aria-labelledby="h-event">
      <p>
        <Link to="/partner/events">← All events</Link>
      </p>
      <h1 id="h-event">Event {id}</h1>
      <ProblemBox error={event.error} />
      {event.data && (
        <>
          <p>
            <strong>{event.data.type}</strong> · <When value={event.data.createdAt} />
          </p>
          {/* biome-ignore lint/a11y/noNoninteractiveTabindex: scrollable code must be keyboard reachable */}
          <section className="json" tabIndex={0} aria-label="Event body">
            <pre>{JSON.stringify(event.data, null, 2)}</pre>
          </section>
        </>
      )}
      <h2>Deliveries</h2>
      <ProblemBox error={deliveries.error} />
      <Table
        caption="Deliveries of this event, one per endpoint"
        head={["Endpoint", "Status", "Attempts", "Last answer", "Delivered", "Action"]}
      >
        {deliveries.data?.data.length === 0 ? (
          <Empty colSpan={6}>No endpoint was subscribed when the event was recorded.</Empty>
        ) : null}
        {deliveries.data?.data.map((row) => (
          <tr key={row.id}>
            <td>
              <code>{row.url}</code>
            </td>
            <td>
              <Status value={row.status} />
            </td>
            <td>{row.attempts.length}</td>
            <td>{row.lastStatusCode ?? row.lastError ?? "—"}</td>
            <td>
              <When value={row.deliveredAt} />
            </td>
            <td>
              <button type="button" disabled={redeliver.isPending} onClick={() => redeliver.mutate(row.endpointId)}>
                Redeliver
              </button>
            </td>
          </tr>
        ))}
      </Table>
      <button type="button" disabled={redeliver.isPending} onClick={() => redeliver.mutate(undefined)}>
        Redeliver to every subscribed endpoint
      </button>
      {redeliver.isSuccess && (
        <p role="status" className="ok">
          Queued for redelivery.
        </p>
      )}
      <ProblemBox error={redeliver.error} />
    </section>
  );
}

type Endpoint = RowOf<"/api/partner/webhook-endpoints">;

type TestResult = Answer<"/api/partner/webhook-endpoints/{id}/test", "post">;

function Webhooks() {
  const { token } = useSession();
  const queryClient = useQueryClient();
  const list = usePagedList<Endpoint>(["partner-webhooks"], "/api/partner/webhook-endpoints");
  const [url, setUrl] = useState("");
  const [secret, setSecret] = useState<{ label: string; value: string } | null>(null);
  const refresh = () => queryClient.invalidateQueries({ queryKey: ["partner-webhooks"] });
  const create = useMutation({
    mutationFn: () =>
      api<Answer<"/api/partner/webhook-endpoints", "post">>("/api/partner/webhook-endpoints", { token, json: { url } }),
    onSuccess: (created) => {
      setSecret({ label: `Signing secret of ${created.id}`, value: created.secret });
      setUrl("");
      void refresh();
    },
  });
  const rotate = useMutation({
    mutationFn: (id: string) =>
      api<Answer<"/api/partner/webhook-endpoints/{id}/rotate-secret", "post">>(
        `/api/partner/webhook-endpoints/${id}/rotate-secret`,
        { token, json: {} },
      ),
    onSuccess: (rotated, id) => {
      setSecret({ label: `New signing secret of ${id}`, value: rotated.secret });
      void refresh();
    },
  });
  const remove = useMutation({
    mutationFn: (id: string) => api(`/api/partner/webhook-endpoints/${id}`, { token, method: "DELETE" }),
    onSuccess: refresh,
  });
  const test = useMutation({
    mutationFn: (id: string) => api<TestResult>(`/api/partner/webhook-endpoints/${id}/test`, { token, method: "POST" }),
  });
  return (
    <section aria-labelledby="h-webhooks">
      <h1 id="h-webhooks">Webhook endpoints</h1>
      <AdminOnlyNotice />
      {secret && <SecretOnce label={secret.label} value={secret.value} onDone={() => setSecret(null)} />}
      <form
        onSubmit={(event) => {
          event.preventDefault();
          create.mutate();
        }}
      >
        <Field label="Endpoint URL" hint="Receives every event type, signed with the endpoint's secret (Service-Signature).">
          {(id, describedBy) => (
            <input
              id={id}
              type="url"
              required
              value={url}
              aria-describedby={describedBy}
              onChange={(event) => setUrl(event.target.value)}
            />
          )}
        </Field>
        <button type="submit" disabled={create.isPending}>
          Add endpoint
        </button>
        <ProblemBox error={create.error} />
      </form>
      <ListState list={list} what="endpoints" />
      <Table caption="Your webhook endpoints" head={["URL", "Events", "Created", "Rotation", "Actions"]}>
        {list.rows.length === 0 && !list.isLoading ? <Empty colSpan={5}>No endpoints.</Empty> : null}
        {list.rows.map((row) => (
          <tr key={row.id}>
            <td>
              <code>{row.url}</code>
              <br />
              <small>{row.id}</small>
            </td>
            <td>{row.events.join(", ")}</td>
            <td>
              <When value={row.createdAt} />
            </td>
            <td>
              {row.previousSecretExpiresAt ? (
                <>
                  old secret signs until <When value={row.previousSecretExpiresAt} />
                </>
              ) : (
                "—"
              )}
            </td>
            <td className="actions">
              <button type="button" onClick={() => test.mutate(row.id)} disabled={test.isPending}>
                Send test event
              </button>
              <button type="button" onClick={() => rotate.mutate(row.id)} disabled={rotate.isPending}>
                Rotate secret
              </button>
              <button
                type="button"
                className="danger"
                onClick={() => {
                  if (window.confirm(`Delete the endpoint ${row.url}?`)) remove.mutate(row.id);
                }}
              >
                Delete
              </button>
            </td>
          </tr>
        ))}
      </Table>
      <MoreButton list={list} />
      {test.data && (
        <p className={test.data.ok ? "ok" : "notice"} role="status">
          Test event {test.data.eventId} to {test.variables}: {test.data.ok ? "acknowledged" : "not acknowledged"}
          {test.data.statusCode === null ? "" : `, HTTP ${test.data.statusCode}`}, {test.data.durationMs} ms
          {test.data.error ? ` (${test.data.error})` : ""}.
        </p>
      )}
      <ProblemBox error={rotate.error ?? remove.error ?? test.error} />
    </section>
  );
}

type KeyRow = RowOf<"/api/partner/api-keys">;

const KEY_SCOPES = {
  read: "Read-only: every GET, nothing else (an accountant's or an auditor's)",
  full: "Full: reads and writes, as your servers use it",
} as const;

function ApiKeys() {
  const { token } = useSession();
  const queryClient = useQueryClient();
  const keys = usePagedList<KeyRow>(["partner-keys"], "/api/partner/api-keys");
  // Read-only first and the default: the key handed to someone who only reads cannot write by mistake.
  const [scope, setScope] = useState<keyof typeof KEY_SCOPES>("read");
  const [secret, setSecret] = useState<{ label: string; value: string } | null>(null);
  const refresh = () => queryClient.invalidateQueries({ queryKey: ["partner-keys"] });
  const create = useMutation({
    mutationFn: () => api<Answer<"/api/partner/api-keys", "post">>("/api/partner/api-keys", { token, json: { scope } }),
    onSuccess: (key) => {
      setSecret({ label: key.scope === "read" ? "New read-only API key" : "New full API key", value: key.apiKey });
      void refresh();
    },
  });
  const revoke = useMutation({
    mutationFn: (id: string) => api(`/api/partner/api-keys/${id}`, { token, method: "DELETE" }),
    onSuccess: refresh,
  });
  return (
    <section aria-labelledby="h-keys">
      <h1 id="h-keys">API keys</h1>
      <AdminOnlyNotice />
      {secret && <SecretOnce label={secret.label} value={secret.value} onDone={() => setSecret(null)} />}
      <form
        onSubmit={(event) => {
          event.preventDefault();
          create.mutate();
        }}
      >
        <fieldset>
          <legend>Scope of the new key</legend>
          {(Object.keys(KEY_SCOPES) as (keyof typeof KEY_SCOPES)[]).map((value) => (
            <label key={value} className="choice">
              <input type="radio" name="key-scope" checked={scope === value} onChange={() => setScope(value)} />
              <span>{KEY_SCOPES[value]}</span>
            </label>
          ))}
        </fieldset>
        <button type="submit" disabled={create.isPending}>
          Create API key
        </button>
      </form>
      <ProblemBox error={create.error ?? revoke.error ?? keys.error} />
      <Table caption="Your API keys (prefixes only)" head={["Key", "Scope", "Created", "Revoked", "Action"]}>
        {keys.rows.map((key) => (
          <tr key={key.id}>
            <td>
              <code>{key.prefix}…</code>
            </td>
            <td>{key.scope === "read" ? "read-only" : "full"}</td>
            <td>
              <When value={key.createdAt} />
            </td>
            <td>
              <When value={key.revokedAt} />
            </td>
            <td>
              {key.revokedAt === null && (
                <button
                  type="button"
                  className="danger"
                  aria-label={`Revoke ${key.prefix}…`}
                  onClick={() => {
                    if (window.confirm(`Revoke ${key.prefix}…? Servers using it stop working at once.`)) revoke.mutate(key.id);
                  }}
                >
                  Revoke
                </button>
              )}
            </td>
          </tr>
        ))}
      </Table>
      <MoreButton list={keys} />
    </section>
  );
}

function Members() {
  const { token } = useSession();
  const queryClient = useQueryClient();
  const members = useQuery({
    queryKey: ["partner-members"],
    queryFn: () => api<Answer<"/api/partner/members">>("/api/partner/members", { token }),
  });
  const [address, setAddress] = useState("");
  const [role, setRole] = useState("member");
  const add = useMutation({
    mutationFn: () => api("/api/partner/members", { token, json: { address, role } }),
    onSuccess: () => {
      setAddress("");
      void queryClient.invalidateQueries({ queryKey: ["partner-members"] });
    },
  });
  return (
    <section aria-labelledby="h-members">
      <h1 id="h-members">Members</h1>
      <AdminOnlyNotice />
      <p className="hint">Wallets that may sign in to this partner's console.</p>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          add.mutate();
        }}
      >
        <Field label="Wallet address">
          {(id) => (
            <input id={id} required pattern="0x[0-9a-fA-F]{40}" value={address} onChange={(e) => setAddress(e.target.value)} />
          )}
        </Field>
        <Field label="Role" hint="An admin also manages API keys, members, webhooks and branding.">
          {(id, describedBy) => (
            <select id={id} aria-describedby={describedBy} value={role} onChange={(e) => setRole(e.target.value)}>
              <option value="member">member</option>
              <option value="admin">admin</option>
            </select>
          )}
        </Field>
        <button type="submit" disabled={add.isPending}>
          Add member
        </button>
        <ProblemBox error={add.error} />
      </form>
      <ProblemBox error={members.error} />
      <Table caption="Member wallets" head={["Wallet", "Role", "Added"]}>
        {members.data?.data.map((member) => (
          <tr key={member.address}>
            <td>
              <code>{member.address}</code>
            </td>
            <td>{member.role}</td>
            <td>
              <When value={member.createdAt} />
            </td>
          </tr>
        ))}
      </Table>
    </section>
  );
}

type BrandingData = Answer<"/api/partner/branding">;

/** What the hosted checkout and claim pages show of the partner (docs/deploy.md). */
function Branding() {
  const { token } = useSession();
  const queryClient = useQueryClient();
  const query = useQuery({
    queryKey: ["partner-branding"],
    queryFn: () => api<BrandingData>("/api/partner/branding", { token }),
  });
  return (
    <section aria-labelledby="h-branding">
      <h1 id="h-branding">Branding</h1>
      <AdminOnlyNotice />
      <p className="hint">Your name, logo, colour and support contacts on the hosted checkout and claim pages.</p>
      <ListState list={{ isLoading: query.isLoading, error: query.error }} what="branding" />
      {query.data && (
        <BrandingForm
          current={query.data}
          onSaved={(data) => queryClient.setQueryData(["partner-branding"], data)}
          token={token}
        />
      )}
    </section>
  );
}

function BrandingForm({
  current,
  onSaved,
  token,
}: {
  current: BrandingData;
  onSaved: (data: BrandingData) => void;
  token: string | null;
}) {
  const [form, setForm] = useState({
    displayName: current.displayName,
    accentColor: current.accentColor ?? "",
    supportUrl: current.supportUrl ?? "",
    supportEmail: current.supportEmail ?? "",
  });
  const [file, setFile] = useState<File | null>(null);
  const save = useMutation({
    mutationFn: () =>
      api<BrandingData>("/api/partner/branding", {
        token,
        method: "PATCH",
        json: {
          displayName: form.displayName || null,
          accentColor: form.accentColor || null,
          supportUrl: form.supportUrl || null,
          supportEmail: form.supportEmail || null,
        },
      }),
    onSuccess: onSaved,
  });
  const logo = useMutation({
    mutationFn: (remove: boolean) =>
      remove
        ? api<BrandingData>("/api/partner/branding/logo", { token, method: "DELETE" })
        : api<BrandingData>("/api/partner/branding/logo", { token, method: "PUT", file: file as File }),
    onSuccess: onSaved,
  });
  const text = (name: keyof typeof form, label: string, type: string, hint?: string) => (
    <Field label={label} hint={hint}>
      {(id, describedBy) => (
        <input
          id={id}
          type={type}
          value={form[name]}
          aria-describedby={describedBy}
          onChange={(event) => setForm({ ...form, [name]: event.target.value })}
        />
      )}
    </Field>
  );
  return (
    <>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          save.mutate();
        }}
      >
        {text("displayName", "Display name", "text", "Empty: your partner name.")}
        {text("accentColor", "Accent colour", "text", "A hex colour such as #1a73e8; empty: the default.")}
        {text("supportUrl", "Support URL", "url")}
        {text("supportEmail", "Support email", "email")}
        <button type="submit" className="primary" disabled={save.isPending}>
          Save branding
        </button>
        {save.isSuccess && (
          <p className="ok" role="status">
            Branding saved.
          </p>
        )}
        <ProblemBox error={save.error} />
      </form>
      <h2>Logo</h2>
      {current.logoUrl ? (
        <img className="logo-preview" src={current.logoUrl} alt={`Logo of ${current.displayName}`} />
      ) : (
        <p>No logo.</p>
      )}
      <form
        onSubmit={(event) => {
          event.preventDefault();
          if (file) logo.mutate(false);
        }}
      >
        <Field label="Logo file" hint="PNG or SVG, served from this service's own origin.">
          {(id, describedBy) => (
            <input
              id={id}
              type="file"
              accept="image/png,image/svg+xml"
              aria-describedby={describedBy}
              onChange={(event) => setFile(event.target.files?.[0] ?? null)}
            />
          )}
        </Field>
        <button type="submit" disabled={!file || logo.isPending}>
          Upload logo
        </button>
        {current.logoUrl && (
          <button type="button" className="danger" disabled={logo.isPending} onClick={() => logo.mutate(true)}>
            Remove logo
          </button>
        )}
        <ProblemBox error={logo.error} />
      </form>
    </>
  );
}

/**
 * Changing keys, members, webhook endpoints and branding needs a member whose role is
 * admin (the service refuses anyone else with 403); a `member` is told so up front.
 */
function AdminOnlyNotice() {
  const { token } = useSession();
  const profile = useQuery({
    queryKey: ["partner-profile"],
    queryFn: () => api<Answer<"/api/partner/profile">>("/api/partner/profile", { token }),
  });
  if (profile.data?.memberRole !== "member") return null;
  return (
    <p className="notice">
      Your role is <strong>member</strong>: you can read this page, but only an admin member can change it.
    </p>
  );
}
