import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useCallback } from "react";
import { api } from "../api";
import type { Answer, RowOf } from "../api-types";
import { Link, navigate } from "../router";
import { useSession } from "../session";
import { Address, ListState, Money, Status, usePagedList, When } from "../ui";
import { CreateRefund, type RefundRow, RefundTable, SendRefund, useFollowInFlight } from "./partner-refunds";

type Payment = RowOf<"/api/partner/payments">;

/** `chainId/transactionHash/logIndex`: how a payment is named in its routes and the console's paths. */
export const paymentPath = (payment: { chainId: number; transactionHash: string; logIndex: number }) =>
  `${payment.chainId}/${payment.transactionHash}/${payment.logIndex}`;

/**
 * `/console/partner/payments/<chainId>/<hash>/<logIndex>`: one transfer, where it went and, for
 * an unresolved one (a duplicate, a wrong amount, a late payment), the refund of it: to the
 * payer, to an address the customer gave, or through the customer's link.
 */
export function PaymentPage({
  chainId,
  transactionHash,
  logIndex,
}: {
  chainId: string;
  transactionHash: string;
  logIndex: string;
}) {
  const { token } = useSession();
  const queryClient = useQueryClient();
  const key = `${chainId}/${transactionHash}/${logIndex}`;
  const payment = useQuery({
    queryKey: ["partner-payment", key],
    queryFn: () => api<Payment>(`/api/partner/payments/${key}`, { token }),
  });
  // The service selects this payment's refunds (`paymentId=`, the refund's own name of its payment).
  const paymentId = `${chainId}:${transactionHash}:${logIndex}`;
  const refunds = usePagedList<RefundRow>(
    ["partner-refunds", "payment", paymentId],
    `/api/partner/refunds?limit=100&paymentId=${encodeURIComponent(paymentId)}`,
  );
  const refresh = useCallback(() => {
    void queryClient.invalidateQueries({ queryKey: ["partner-payment", key] });
    void queryClient.invalidateQueries({ queryKey: ["partner-refunds"] });
    void queryClient.invalidateQueries({ queryKey: ["partner-payments"] });
  }, [queryClient, key]);
  const data = payment.data;
  const own = refunds.rows;
  useFollowInFlight(own, refresh);
  return (
    <section aria-labelledby="h-payment">
      <p>
        <Link to="/partner/payments">← Payments</Link>
      </p>
      <h1 id="h-payment">Payment</h1>
      <ListState list={{ isLoading: payment.isLoading, error: payment.error }} what="the payment" />
      {data && (
        <>
          <dl className="facts" aria-label="The payment">
            <dt>Transaction</dt>
            <dd>
              <code className="break">{data.transactionHash}</code> (log {data.logIndex}, chain {data.chainId})
            </dd>
            <dt>Status</dt>
            <dd data-testid="payment-status">
              <Status value={data.status} />
              {data.reason && ` (${data.reason.replaceAll("_", " ")})`}
            </dd>
            <dt>Amount</dt>
            <dd>
              <Money value={data.amount} />
              {data.expectedAmount !== null && (
                <>
                  {" "}
                  (the session asked for <Money value={data.expectedAmount} />)
                </>
              )}
            </dd>
            <dt>From</dt>
            <dd>
              <code className="break">{data.from}</code>
            </dd>
            <dt>To (payment address)</dt>
            <dd>
              <code className="break">{data.to}</code>
            </dd>
            <dt>Block</dt>
            <dd>
              {data.blockNumber} · <When value={data.minedAt} />
            </dd>
            <dt>Order</dt>
            <dd>
              {data.orderId ? <Link to={`/partner/orders/${encodeURIComponent(data.orderId)}`}>{data.orderId}</Link> : "none"}
            </dd>
          </dl>
          {/* Still refundable once a refund of it exists (a part, or a cancelled one): the service checks the sum. */}
          {(data.status === "unresolved" || data.status === "refund_requested") && (
            <CreateRefund
              payment={{ chainId: data.chainId, transactionHash: data.transactionHash, logIndex: data.logIndex }}
              remaining={remainingOf(data.amount, own)}
              rows={own}
              onCreated={refresh}
            />
          )}
        </>
      )}
      <h2>Refunds of this payment</h2>
      <ListState list={refunds} what="refunds" />
      <RefundTable rows={own} onChanged={refresh} onSend={(id) => navigateToRefund(id)} showOrder={false} />
    </section>
  );
}

/** The payment less its refunds that are not cancelled (the first 100 of them; the service checks the exact sum). */
function remainingOf(amount: string, refunds: readonly RefundRow[]): string {
  const left = refunds.reduce((sum, row) => (row.status === "cancelled" ? sum : sum - BigInt(row.amount)), BigInt(amount));
  return (left > 0n ? left : 0n).toString();
}

const navigateToRefund = (id: string) => navigate(`/partner/refunds/${encodeURIComponent(id)}`);

/** `/console/partner/refunds/<id>`: one refund, what it pays back, and its send panel while it is ready. */
export function RefundPage({ id }: { id: string }) {
  const { token } = useSession();
  const queryClient = useQueryClient();
  const refund = useQuery({
    queryKey: ["partner-refunds", "one", id],
    queryFn: () => api<Answer<"/api/partner/refunds/{id}">>(`/api/partner/refunds/${encodeURIComponent(id)}`, { token }),
    // A sent refund completes when the index shows its transfer.
    refetchInterval: (query) => (query.state.data?.status === "ready" || query.state.data?.status === "pending" ? 2000 : false),
  });
  const refresh = useCallback(() => void queryClient.invalidateQueries({ queryKey: ["partner-refunds"] }), [queryClient]);
  const data = refund.data;
  return (
    <section aria-labelledby="h-refund">
      <p>
        <Link to="/partner/refunds">← Refunds</Link>
      </p>
      <h1 id="h-refund">Refund {id}</h1>
      <ListState list={{ isLoading: refund.isLoading, error: refund.error }} what="the refund" />
      {data && (
        <>
          <dl className="facts" aria-label="The refund">
            <dt>Status</dt>
            <dd>
              <Status value={data.status} />
            </dd>
            <dt>Amount</dt>
            <dd>
              <Money value={data.amount} />
            </dd>
            <dt>Of</dt>
            <dd>
              {data.orderId ? (
                <Link to={`/partner/orders/${encodeURIComponent(data.orderId)}`}>
                  order {data.externalOrderId ?? data.orderId}
                </Link>
              ) : (
                <Link to={`/partner/payments/${paymentPath(data.payment)}`}>
                  payment <Address value={data.payment.transactionHash} />
                </Link>
              )}
            </dd>
            <dt>Reason</dt>
            <dd>{data.reason.replaceAll("_", " ")}</dd>
            <dt>To</dt>
            <dd>{data.destination ? <code className="break">{data.destination}</code> : "waiting for the customer's address"}</dd>
            <dt>Transaction</dt>
            <dd>
              <Address value={data.transactionHash} />
            </dd>
            <dt>Created</dt>
            <dd>
              <When value={data.createdAt} />
            </dd>
          </dl>
          {(data.status === "ready" || data.status === "pending" || data.status === "succeeded") && (
            <SendRefund refund={data} onSent={refresh} onClose={() => navigate("/partner/refunds")} />
          )}
        </>
      )}
    </section>
  );
}
