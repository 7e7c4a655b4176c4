import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useCallback, useRef, useState } from "react";
import { api } from "../api";
import type { RowOf } from "../api-types";
import { useSession } from "../session";
import { Field, ListState, Money, MoreButton, ProblemBox, usePagedList } from "../ui";
import { optionalRefundAmount, ReasonField, type RefundRow, RefundTable, SendRefund, useFollowInFlight } from "./partner-refunds";

/**
 * The issuer refunds one of its purchases (SPEC 15, docs/refunds.md "Issuers"): to the
 * investor's wallet that paid, all that remains or a part. A full refund returns the
 * units to the offering; a partial one keeps them. Sending is the partner's refund
 * panel, reached through `/api/issuer/refunds` (the refund leaves the settlement address).
 */

const ISSUER_REFUNDS = "/api/issuer/refunds";

export type RefundablePurchase = RowOf<"/api/issuer/offerings/{id}/purchases">;

export function PurchaseRefunds({
  purchase,
  onChanged,
  onClose,
}: {
  purchase: RefundablePurchase;
  onChanged: () => void;
  onClose: () => void;
}) {
  const { token } = useSession();
  const queryClient = useQueryClient();
  const [amount, setAmount] = useState("");
  const [reason, setReason] = useState("requested_by_customer");
  const [sending, setSending] = useState<string | null>(null);
  const path = `/api/issuer/purchases/${encodeURIComponent(purchase.id)}/refunds`;
  const list = usePagedList<RefundRow>(["issuer-purchase-refunds", purchase.id], path);
  // The parent's callback may change each render; the poll below keeps one refresh.
  const changed = useRef(onChanged);
  changed.current = onChanged;
  const refresh = useCallback(() => {
    void queryClient.invalidateQueries({ queryKey: ["issuer-purchase-refunds", purchase.id] });
    changed.current();
  }, [queryClient, purchase.id]);
  useFollowInFlight(list.rows, refresh);
  const create = useMutation({
    mutationFn: () => {
      const baseUnits = optionalRefundAmount(amount);
      return api<RefundRow>(path, {
        token,
        json: {
          ...(baseUnits === undefined ? {} : { amount: baseUnits.toString() }),
          reason,
          idempotencyKey: `console-${crypto.randomUUID()}`,
        },
      });
    },
    onSuccess: (refund) => {
      setSending(refund.id);
      refresh();
    },
  });
  const chosen = list.rows.find((row) => row.id === sending);
  return (
    <>
      <section aria-labelledby="h-purchase-refund" className="pay">
        <h2 id="h-purchase-refund">Refund purchase {purchase.id}</h2>
        <p>
          The money goes back to the investor's wallet that paid, <code className="break">{purchase.investor}</code>, from the
          offering's settlement address. Paid <Money value={purchase.payment?.amount ?? purchase.totalPriceUsdc} />; refunded{" "}
          <Money value={purchase.amountRefunded} />, in progress <Money value={purchase.amountRefundPending} />.
        </p>
        <p className="hint">
          A full refund returns its {purchase.units} unit(s) to the offering and revokes the certificate. A partial refund keeps
          the units with the investor.
        </p>
        <form
          aria-label={`New refund of purchase ${purchase.id}`}
          onSubmit={(event) => {
            event.preventDefault();
            create.mutate();
          }}
        >
          <Field label="Amount (USDC)" hint="Leave empty to refund all that remains.">
            {(id, describedBy) => (
              <input
                id={id}
                inputMode="decimal"
                value={amount}
                aria-describedby={describedBy}
                onChange={(event) => setAmount(event.target.value)}
              />
            )}
          </Field>
          <ReasonField reason={reason} onChange={setReason} />
          <div className="row">
            <button type="submit" className="primary" disabled={create.isPending}>
              Create refund
            </button>
            <button type="button" onClick={onClose}>
              Close
            </button>
          </div>
          {create.data && (
            <p role="status">
              Refund <code>{create.data.id}</code> of <Money value={create.data.amount} /> created:{" "}
              {create.data.status.replaceAll("_", " ")}.
            </p>
          )}
          <ProblemBox error={create.error} />
        </form>
        <h3>Refunds of this purchase</h3>
        <ListState list={list} what="refunds" />
        <RefundTable rows={list.rows} onChanged={refresh} onSend={setSending} basePath={ISSUER_REFUNDS} showOrder={false} />
        <MoreButton list={list} />
      </section>
      {/* Beside the form, not inside it: a panel in a panel leaves a phone too little width. */}
      {chosen && (
        <SendRefund
          refund={chosen}
          onSent={refresh}
          onClose={() => setSending(null)}
          basePath={ISSUER_REFUNDS}
          fromLabel="From (settlement address)"
        />
      )}
    </>
  );
}
