import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api } from "../api";
import type { Answer, RowOf } from "../api-types";
import { Link } from "../router";
import { useSession } from "../session";
import { Address, Empty, Field, ListState, Money, MoreButton, ProblemBox, Status, Table, usePagedList, When } from "../ui";

/**
 * The partner's subscriptions (SPEC 18, docs/subscriptions.md): the list, one subscription with
 * its charges, and the partner's cancel. That cancel is off chain (the service stops charging;
 * the terms stay registered, since only the customer's or the payment address's key may cancel
 * there), which the screen says before it is confirmed.
 */

type SubscriptionRow = RowOf<"/api/partner/subscriptions">;
type Subscription = Answer<"/api/partner/subscriptions/{id}">;

const DAY = 86_400;

/** The period as the chain runs it: a month is a fixed 30 days (the pages say the same). */
export function periodWords(seconds: number): string {
  if (seconds === DAY) return "every day";
  if (seconds % DAY === 0) return `every ${seconds / DAY} days`;
  if (seconds % 3_600 === 0) return seconds === 3_600 ? "every hour" : `every ${seconds / 3_600} hours`;
  return `every ${seconds} s`;
}

const CANCELLABLE = new Set(["awaiting_authorization", "active", "past_due"]);

export function Subscriptions() {
  const [status, setStatus] = useState("");
  const list = usePagedList<SubscriptionRow>(
    ["partner-subscriptions", status],
    `/api/partner/subscriptions${status ? `?status=${status}` : ""}`,
  );
  return (
    <section aria-labelledby="h-subscriptions">
      <h1 id="h-subscriptions">Subscriptions</h1>
      <p className="hint">
        Each charge moves USDC straight from the customer's wallet to your payment address, and is paid only once the index shows
        it. Create subscriptions with your API (<code>POST /v1/subscriptions</code>) and send the customer its link.
      </p>
      <Field label="Subscription status">
        {(id) => (
          <select id={id} value={status} onChange={(event) => setStatus(event.target.value)}>
            <option value="">All</option>
            <option value="awaiting_authorization">Awaiting the customer's signature</option>
            <option value="active">Active</option>
            <option value="past_due">Past due</option>
            <option value="cancelled">Cancelled</option>
            <option value="ended">Ended</option>
            <option value="expired">Expired</option>
          </select>
        )}
      </Field>
      <ListState list={list} what="subscriptions" />
      <Table
        caption="Your subscriptions"
        head={["Subscription", "Product", "Customer wallet", "Amount", "Status", "Next charge"]}
      >
        {list.rows.length === 0 && !list.isLoading && <Empty colSpan={6}>No subscriptions yet.</Empty>}
        {list.rows.map((row) => (
          <tr key={row.id}>
            <td>
              <Link to={`/partner/subscriptions/${row.id}`} aria-label={`Subscription ${row.id}`}>
                <code className="break">{row.id}</code>
              </Link>
              <br />
              <small>{row.externalCustomerId}</small>
            </td>
            <td>{row.productName}</td>
            <td>
              <Address value={row.subscriber} />
            </td>
            <td>
              <Money value={row.amount} /> <small>{periodWords(row.periodSeconds)}</small>
            </td>
            <td>
              <Status value={row.status} />
            </td>
            <td>
              <When value={row.nextChargeAt} />
            </td>
          </tr>
        ))}
      </Table>
      <MoreButton list={list} />
    </section>
  );
}

/** `/console/partner/subscriptions/<id>`: one subscription, its charges with their transactions, and Cancel. */
export function SubscriptionPage({ id }: { id: string }) {
  const { token } = useSession();
  const queryClient = useQueryClient();
  const path = `/api/partner/subscriptions/${encodeURIComponent(id)}`;
  const read = useQuery({ queryKey: ["partner-subscription", id], queryFn: () => api<Subscription>(path, { token }) });
  const data = read.data;
  return (
    <section aria-labelledby="h-subscription">
      <p>
        <Link to="/partner/subscriptions">← Subscriptions</Link>
      </p>
      <h1 id="h-subscription">Subscription</h1>
      <ListState list={{ isLoading: read.isLoading, error: read.error }} what="the subscription" />
      {data && (
        <>
          <dl className="facts">
            <dt>Id</dt>
            <dd>
              <code className="break">{data.id}</code>
            </dd>
            <dt>Product</dt>
            <dd>{data.productName}</dd>
            <dt>Customer</dt>
            <dd>{data.externalCustomerId}</dd>
            <dt>Status</dt>
            <dd>
              <Status value={data.status} />
              {data.cancelledBy && <> · Cancelled by {data.cancelledBy.replaceAll("_", " ")}</>}
              {data.cancelAtPeriodEnd && data.status !== "cancelled" && <> · cancels at the end of the period</>}
            </dd>
            <dt>Amount</dt>
            <dd>
              <Money value={data.amount} /> {periodWords(data.periodSeconds)}
            </dd>
            <dt>Next charge</dt>
            <dd>
              <When value={data.nextChargeAt} />
            </dd>
            <dt>Customer wallet</dt>
            <dd>{data.subscriber ? <code className="break">{data.subscriber}</code> : "—"}</dd>
            <dt>Paid to</dt>
            <dd>
              <code className="break">{data.payee}</code>
            </dd>
          </dl>
          <Table caption="Charges" head={["Period", "Amount", "Status", "Transaction", "Order"]}>
            {data.charges.length === 0 && <Empty colSpan={5}>No charge yet.</Empty>}
            {data.charges.map((charge) => (
              <tr key={charge.id}>
                <td>
                  {charge.periodIndex + 1}
                  <br />
                  <small>
                    <When value={charge.paidAt ?? charge.createdAt} />
                  </small>
                </td>
                <td>
                  <Money value={charge.amount} />
                </td>
                <td>
                  <Status value={charge.status} />
                  {charge.failureReason && <small> ({charge.failureReason.replaceAll("_", " ")})</small>}
                </td>
                <td>{charge.transactionHash ? <code className="break">{charge.transactionHash}</code> : "—"}</td>
                <td>
                  {charge.orderId ? (
                    <Link to={`/partner/orders/${charge.orderId}`}>
                      <code className="break">{charge.orderId}</code>
                    </Link>
                  ) : (
                    "—"
                  )}
                </td>
              </tr>
            ))}
          </Table>
          {CANCELLABLE.has(data.status) && !data.cancelAtPeriodEnd && (
            <CancelSubscription
              id={data.id}
              path={path}
              onDone={() => {
                void queryClient.invalidateQueries({ queryKey: ["partner-subscription", id] });
                void queryClient.invalidateQueries({ queryKey: ["partner-subscriptions"] });
              }}
            />
          )}
        </>
      )}
    </section>
  );
}

function CancelSubscription({ id, path, onDone }: { id: string; path: string; onDone: () => void }) {
  const { token } = useSession();
  const [asking, setAsking] = useState(false);
  const [atPeriodEnd, setAtPeriodEnd] = useState(false);
  const cancel = useMutation({
    mutationFn: () => api<Subscription>(`${path}/cancel`, { token, json: { atPeriodEnd } }),
    onSuccess: () => {
      setAsking(false);
      onDone();
    },
  });
  return (
    <section aria-labelledby={`h-cancel-${id}`}>
      <h2 id={`h-cancel-${id}`}>Cancel</h2>
      <p className="hint">
        The service stops charging at once (or at the end of the period paid for). The customer's signed terms stay on the chain:
        only the customer's wallet or your payment address can cancel them there.
      </p>
      <ProblemBox error={cancel.error} />
      {!asking ? (
        <button type="button" onClick={() => setAsking(true)}>
          Cancel subscription
        </button>
      ) : (
        <div className="row">
          <label>
            <input type="checkbox" checked={atPeriodEnd} onChange={(event) => setAtPeriodEnd(event.target.checked)} /> At the end
            of the period paid for
          </label>
          <button type="button" disabled={cancel.isPending} onClick={() => cancel.mutate()}>
            Yes, cancel it
          </button>
          <button type="button" onClick={() => setAsking(false)}>
            Keep it
          </button>
        </div>
      )}
    </section>
  );
}
