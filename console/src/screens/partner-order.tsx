import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useCallback, useState } from "react";
import { api } from "../api";
import type { Answer } from "../api-types";
import { Link } from "../router";
import { useSession } from "../session";
import { Address, Empty, Field, ListState, Money, ProblemBox, Status, Table, usePagedList, When } from "../ui";
import { CreateRefund, type RefundRow, RefundTable, SendRefund, useFollowInFlight } from "./partner-refunds";
import { GrantForm, RewardTable } from "./partner-rewards";

type Order = Answer<"/api/partner/orders/{orderId}">;

type RewardRow = Answer<"/api/partner/rewards">["data"][number];

/**
 * The parts of `GET …/orders/:id/evidence` this page shows. The route declares its answer as
 * an open record (docs/accounting.md describes it), so the generated types cannot name them.
 */
type Evidence = {
  transfers: {
    chainId: number;
    network: string | null;
    transactionHash: string;
    logIndex: number;
    blockNumber: string;
    blockHash: string;
    inIndex: boolean;
    from: string;
    value: string;
    minedAt: string;
    confirmations: number | null;
    requiredConfirmations: number | null;
    paymentStatus: string;
    description: string;
  }[];
  events: {
    id: string;
    type: string;
    createdAt: string;
    deliveries: { id: string; url: string; status: string; attemptCount: number; lastStatusCode: number | null }[];
  }[];
};

/** What may still be refunded: paid, less what has been refunded and what is on its way. */
function refundable(order: Order): string | null {
  if (order.amountPaid === null) return null;
  const left = BigInt(order.amountPaid) - BigInt(order.amountRefunded) - BigInt(order.amountRefundPending);
  return (left > 0n ? left : 0n).toString();
}

/**
 * `/console/partner/orders/<id>`: the place where work on one order happens. Everything the
 * service knows of it (its session, the transfers that paid it and how each matched, refunds,
 * rewards, certificate, events and their deliveries) and the actions in context: refund with
 * what remains shown, grant a reward, mark fulfilled, resend an event.
 */
export function OrderPage({ id }: { id: string }) {
  const { token } = useSession();
  const queryClient = useQueryClient();
  const path = `/api/partner/orders/${encodeURIComponent(id)}`;
  const order = useQuery({ queryKey: ["partner-order", id], queryFn: () => api<Order>(path, { token }) });
  const evidence = useQuery({
    queryKey: ["partner-order-evidence", id],
    queryFn: () => api<Evidence>(`${path}/evidence`, { token }),
  });
  const refunds = usePagedList<RefundRow>(
    ["partner-refunds", "order", id],
    `/api/partner/refunds?orderId=${encodeURIComponent(id)}`,
  );
  const rewards = usePagedList<RewardRow>(
    ["partner-rewards", "order", id],
    `/api/partner/rewards?orderId=${encodeURIComponent(id)}`,
  );
  const [sending, setSending] = useState<string | null>(null);
  const refresh = useCallback(() => {
    for (const key of [["partner-order", id], ["partner-order-evidence", id], ["partner-refunds"], ["partner-rewards"]])
      void queryClient.invalidateQueries({ queryKey: key });
    void queryClient.invalidateQueries({ queryKey: ["partner-sessions"] });
  }, [queryClient, id]);
  useFollowInFlight(refunds.rows, refresh);
  const chosen = refunds.rows.find((row) => row.id === sending);
  const data = order.data;
  return (
    <section aria-labelledby="h-order">
      <p>
        <Link to="/partner/sessions">← Sessions and orders</Link>
      </p>
      <h1 id="h-order">Order {data?.externalOrderId ?? id}</h1>
      <ListState list={{ isLoading: order.isLoading, error: order.error }} what="the order" />
      {data && (
        <>
          <dl className="facts" aria-label="The order">
            <dt>Order id</dt>
            <dd>
              <code className="break">{data.id}</code>
            </dd>
            <dt>Status</dt>
            <dd data-testid="order-status">
              <OrderState order={data} />
            </dd>
            <dt>Order total</dt>
            <dd>
              <Money value={data.totalPriceUsdc} />
            </dd>
            <dt>Paid</dt>
            <dd>
              <Money value={data.amountPaid} />
              {data.underpaid ? " (less than the total: attached by hand and accepted)" : ""}
            </dd>
            <dt>Refunded</dt>
            <dd data-testid="order-refunded">
              <Money value={data.amountRefunded} />
              {BigInt(data.amountRefundPending) > 0n && (
                <>
                  {" "}
                  and <Money value={data.amountRefundPending} /> on its way
                </>
              )}
            </dd>
            <dt>Rewards</dt>
            <dd>{data.rewardIds.length === 0 ? "none" : `${data.rewardIds.length} (below)`}</dd>
            <dt>Fulfilment</dt>
            <dd>
              {data.fulfilment ? (
                <>
                  {data.fulfilment.reference ?? "fulfilled"} · <When value={data.fulfilment.fulfilledAt} />
                </>
              ) : (
                "not yet"
              )}
            </dd>
            <dt>Certificate</dt>
            <dd>
              {data.certificate.enabled ? (
                <>
                  <Status value={data.certificate.status} />
                  {data.certificate.tokenId !== null && ` token ${data.certificate.tokenId}`}
                  {data.certificate.mintTransactionHash && (
                    <>
                      {" "}
                      <Address value={data.certificate.mintTransactionHash} />
                    </>
                  )}
                </>
              ) : (
                "none for this order"
              )}
            </dd>
            <dt>Created</dt>
            <dd>
              <When value={data.createdAt} />
            </dd>
          </dl>
          {data.status === "paid" && <Fulfil orderId={data.id} onDone={refresh} />}

          <h2>Session</h2>
          {data.session ? (
            <dl className="facts" aria-label="The checkout session">
              <dt>Session</dt>
              <dd>
                <code className="break">{data.session.id}</code> <Status value={data.session.status} />
              </dd>
              <dt>Asked to pay (total + reference)</dt>
              <dd>
                <Money value={data.session.payment.amount} />
              </dd>
              <dt>To (payment address)</dt>
              <dd>
                <code className="break">{data.session.payment.recipient}</code>
              </dd>
              <dt>Network</dt>
              <dd>
                {data.network ?? "—"} {data.chainId !== null && `(chain ${data.chainId})`}
              </dd>
            </dl>
          ) : (
            <p>No session.</p>
          )}
        </>
      )}

      <h2>Payments and their evidence</h2>
      <ProblemBox error={evidence.error} />
      <Table caption="Transfers that paid this order" head={["Transaction", "From", "Amount", "Block", "Confirmations", "Rule"]}>
        {evidence.data?.transfers.length === 0 && <Empty colSpan={6}>No transfer paid this order.</Empty>}
        {evidence.data?.transfers.map((transfer) => (
          <tr key={`${transfer.transactionHash}-${transfer.logIndex}`}>
            <td>
              <Link to={`/partner/payments/${transfer.chainId}/${transfer.transactionHash}/${transfer.logIndex}`}>
                <Address value={transfer.transactionHash} />
              </Link>{" "}
              <small>log {transfer.logIndex}</small>
              <br />
              <Status value={transfer.paymentStatus} />
            </td>
            <td>
              <Address value={transfer.from} />
            </td>
            <td>
              <Money value={transfer.value} />
            </td>
            <td>
              {transfer.blockNumber}
              <br />
              <Address value={transfer.blockHash} />
            </td>
            <td>
              {transfer.confirmations ?? "—"}
              {transfer.requiredConfirmations !== null && ` of ${transfer.requiredConfirmations}`}
              {transfer.inIndex ? "" : " (not in the index)"}
            </td>
            <td>{transfer.description}</td>
          </tr>
        ))}
      </Table>

      <h2>Refunds</h2>
      {data && data.amountPaid !== null && (
        <CreateRefund fixedOrderId={data.id} remaining={refundable(data)} rows={refunds.rows} onCreated={refresh} />
      )}
      <ListState list={refunds} what="refunds" />
      <RefundTable rows={refunds.rows} onChanged={refresh} onSend={setSending} showOrder={false} />
      {chosen && <SendRefund refund={chosen} onSent={refresh} onClose={() => setSending(null)} />}

      <h2>Rewards</h2>
      {data?.amountPaid !== null && data !== undefined && <GrantForm token={token} onGranted={refresh} fixedOrderId={data.id} />}
      <ListState list={rewards} what="rewards" />
      <RewardTable rows={rewards.rows} token={token} onChanged={refresh} />

      <h2>Events and deliveries</h2>
      <OrderEvents events={evidence.data?.events} onResent={refresh} />
    </section>
  );
}

/** The order's state in words: paid, refunded in part or in full, rewarded, fulfilled. */
export function OrderState({
  order,
}: {
  order: { status: string; refundStatus: string; amountRefunded: string; fulfilledAt?: string | null };
}) {
  return (
    <>
      <Status value={order.status} />
      {order.refundStatus !== "none" && (
        <>
          {", "}
          <span className="status status-refunded">{order.refundStatus === "full" ? "refunded" : "partly refunded"}</span> (
          <Money value={order.amountRefunded} />)
        </>
      )}
    </>
  );
}

function OrderEvents({ events, onResent }: { events: Evidence["events"] | undefined; onResent: () => void }) {
  const { token } = useSession();
  const resend = useMutation({
    mutationFn: (eventId: string) => api(`/api/partner/events/${encodeURIComponent(eventId)}/redeliver`, { token, json: {} }),
    onSuccess: onResent,
  });
  return (
    <>
      {resend.isSuccess && (
        <p role="status" className="ok">
          Event {resend.variables} queued for redelivery.
        </p>
      )}
      <ProblemBox error={resend.error} />
      <Table caption="Events of this order, oldest first" head={["Event", "Recorded", "Deliveries", "Action"]}>
        {events?.length === 0 && <Empty colSpan={4}>No events yet.</Empty>}
        {events?.map((event) => (
          <tr key={event.id}>
            <td>
              <Link to={`/partner/events/${event.id}`}>{event.type}</Link>
              <br />
              <small className="break">{event.id}</small>
            </td>
            <td>
              <When value={event.createdAt} />
            </td>
            <td>
              {event.deliveries.length === 0
                ? "no endpoint subscribed"
                : event.deliveries.map((delivery) => (
                    <span key={delivery.id} className="break">
                      <Status value={delivery.status} /> {delivery.url}
                      {delivery.lastStatusCode === null ? "" : ` (HTTP ${delivery.lastStatusCode})`}
                      <br />
                    </span>
                  ))}
            </td>
            <td>
              <button
                type="button"
                aria-label={`Resend event ${event.id}`}
                disabled={resend.isPending || event.deliveries.length === 0}
                onClick={() => resend.mutate(event.id)}
              >
                Resend
              </button>
            </td>
          </tr>
        ))}
      </Table>
    </>
  );
}

export function Fulfil({ orderId, onDone }: { orderId: string; onDone?: () => void }) {
  const { token } = useSession();
  const queryClient = useQueryClient();
  const [reference, setReference] = useState("");
  const mutation = useMutation({
    mutationFn: () =>
      api(`/api/partner/orders/${orderId}/fulfilment`, {
        token,
        json: { fulfilmentReference: reference, idempotencyKey: `console-${orderId}-${reference}` },
      }),
    onSuccess: () => {
      onDone?.();
      return queryClient.invalidateQueries({ queryKey: ["partner-sessions"] });
    },
  });
  return (
    <form
      className="inline fulfil"
      onSubmit={(event) => {
        event.preventDefault();
        mutation.mutate();
      }}
    >
      <Field label="Fulfilment reference">
        {(id) => <input id={id} required maxLength={200} value={reference} onChange={(e) => setReference(e.target.value)} />}
      </Field>
      <button type="submit" disabled={mutation.isPending}>
        Mark fulfilled
      </button>
      <ProblemBox error={mutation.error} />
    </form>
  );
}
