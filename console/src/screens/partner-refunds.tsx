import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useCallback, useEffect, useState } from "react";
import { erc20Abi, type Hex, isAddressEqual } from "viem";
import { useConnect, useConnection, useConnectors, useSignTypedData, useWriteContract } from "wagmi";
import { api } from "../api";
import type { Answer, RowOf } from "../api-types";
import { parseUsdc } from "../money";
import { useSession } from "../session";
import { Address, Empty, Field, ListState, Money, MoreButton, ProblemBox, Status, Table, usePagedList, When } from "../ui";

/**
 * The partner's refunds (SPEC 15, docs/refunds.md): the list, a refund created from an
 * order (all that remains or a part; to the payer, to an address the shop holds, or
 * to the address the customer enters on the refund page), cancel, and sending a
 * `ready` refund: from the connected wallet (which must be the payment address), from
 * any other wallet with the EIP-681 link, QR code or calldata, and in local mode with
 * the test account. The service never says a refund succeeded because something was
 * sent: the list follows the index, which completes it.
 */

/** What the payment address signs for a gasless send (`GET …/authorization`). */
type AuthorizationRequest = Answer<"/api/partner/refunds/{id}/authorization">;

export type RefundRow = RowOf<"/api/partner/refunds">;

export const REASONS: [string, string][] = [
  ["requested_by_customer", "Requested by the customer"],
  ["duplicate", "Duplicate payment"],
  ["wrong_amount", "Wrong amount"],
  ["late", "Paid late"],
  ["other", "Other"],
];

const IN_FLIGHT = new Set(["ready", "pending"]);

/** A sent refund completes when the index shows its transfer: `refresh` every 2 s while one of `rows` is in flight. */
export function useFollowInFlight(rows: readonly RefundRow[], refresh: () => void) {
  const inFlight = rows.some((row) => IN_FLIGHT.has(row.status));
  useEffect(() => {
    if (!inFlight) return;
    const timer = setInterval(refresh, 2_000);
    return () => clearInterval(timer);
  }, [inFlight, refresh]);
}

/** A refund form's optional amount: empty asks for all that remains, anything else must be a positive USDC amount. */
export function optionalRefundAmount(text: string): bigint | undefined {
  if (text.trim() === "") return undefined;
  const baseUnits = parseUsdc(text);
  if (baseUnits === undefined) throw new Error("Enter an amount of USDC, for example 12.5.");
  if (baseUnits <= 0n) throw new Error("Enter a positive amount of USDC, or leave it empty.");
  return baseUnits;
}

export function ReasonField({ reason, onChange }: { reason: string; onChange: (reason: string) => void }) {
  return (
    <Field label="Reason">
      {(id) => (
        <select id={id} value={reason} onChange={(event) => onChange(event.target.value)}>
          {REASONS.map(([value, label]) => (
            <option key={value} value={value}>
              {label}
            </option>
          ))}
        </select>
      )}
    </Field>
  );
}

/** Where a portal reaches its refunds: the partner member's, or the issuer's (as its partner). */
const PARTNER_REFUNDS = "/api/partner/refunds";

export function Refunds({ orderId }: { orderId?: string }) {
  const [status, setStatus] = useState("");
  const [selected, setSelected] = useState<string | null>(null);
  const queryClient = useQueryClient();
  const list = usePagedList<RefundRow>(["partner-refunds", status], `/api/partner/refunds${status ? `?status=${status}` : ""}`);
  const refresh = useCallback(() => void queryClient.invalidateQueries({ queryKey: ["partner-refunds"] }), [queryClient]);
  useFollowInFlight(list.rows, refresh);
  const chosen = list.rows.find((row) => row.id === selected);
  return (
    <section aria-labelledby="h-refunds">
      <h1 id="h-refunds">Refunds</h1>
      <p className="hint">
        Money goes back from your payment address; the service proves each refund from the chain, as it proves payments.
      </p>
      <CreateRefund initialOrderId={orderId ?? ""} rows={list.rows} onCreated={refresh} />
      <h2 id="h-refund-list">Your refunds</h2>
      <Field label="Refund status">
        {(id) => (
          <select id={id} value={status} onChange={(event) => setStatus(event.target.value)}>
            <option value="">All</option>
            <option value="awaiting_destination">Awaiting the customer's address</option>
            <option value="ready">Ready to send</option>
            <option value="pending">Pending</option>
            <option value="succeeded">Succeeded</option>
            <option value="cancelled">Cancelled</option>
          </select>
        )}
      </Field>
      <ListState list={list} what="refunds" />
      <RefundTable rows={list.rows} onChanged={refresh} onSend={setSelected} />
      <MoreButton list={list} />
      {chosen && <SendRefund refund={chosen} onSent={refresh} onClose={() => setSelected(null)} />}
    </section>
  );
}

/** The transfer an unresolved payment's refund goes back from (`POST /v1/refunds { payment }`). */
export type PaymentRef = { chainId: number; transactionHash: string; logIndex: number };

/**
 * A new refund: of an order typed in (the Refunds screen), of one order (its page, with what
 * remains refundable shown), or of one unresolved payment (its row or page; nothing else
 * refunds a duplicate or a late payment). `rows` are the refunds in view, so the confirmation
 * says where the new refund is now rather than the state it was created in.
 */
export function CreateRefund({
  initialOrderId = "",
  fixedOrderId,
  payment,
  remaining,
  rows = [],
  onCreated,
}: {
  initialOrderId?: string;
  fixedOrderId?: string;
  payment?: PaymentRef;
  remaining?: string | null;
  rows?: readonly RefundRow[];
  onCreated: () => void;
}) {
  const { token } = useSession();
  const [typedOrderId, setOrderId] = useState(initialOrderId);
  const orderId = fixedOrderId ?? typedOrderId;
  const [amount, setAmount] = useState("");
  const [to, setTo] = useState<"customer" | "payer" | "address">("customer");
  const [address, setAddress] = useState("");
  const [reason, setReason] = useState(payment ? "duplicate" : "requested_by_customer");
  const create = useMutation({
    mutationFn: () => {
      const baseUnits = optionalRefundAmount(amount);
      const destination = to === "payer" ? "payer" : to === "address" ? address : undefined;
      return api<RefundRow>("/api/partner/refunds", {
        token,
        json: {
          ...(payment ? { payment } : { orderId }),
          ...(baseUnits === undefined ? {} : { amount: baseUnits.toString() }),
          reason,
          ...(destination === undefined ? {} : { destination }),
          idempotencyKey: `console-${crypto.randomUUID()}`,
        },
      });
    },
    onSuccess: onCreated,
  });
  const created = create.data === undefined ? undefined : (rows.find((row) => row.id === create.data.id) ?? create.data);
  const what = payment ? "this payment" : fixedOrderId ? "this order" : "an order";
  return (
    <form
      aria-labelledby="h-new-refund"
      onSubmit={(event) => {
        event.preventDefault();
        create.mutate();
      }}
    >
      <h2 id="h-new-refund">Refund {what}</h2>
      {remaining !== undefined && (
        <p data-testid="refund-remaining">
          Refundable now: <Money value={remaining} />
          {remaining !== null && BigInt(remaining) === 0n ? " (nothing is left to refund)" : ""}
        </p>
      )}
      {fixedOrderId === undefined && payment === undefined && (
        <Field label="Order id" hint="A paid order (ord_…). Its refunds together never exceed what was paid.">
          {(id, describedBy) => (
            <input
              id={id}
              value={orderId}
              required
              spellCheck={false}
              aria-describedby={describedBy}
              onChange={(event) => setOrderId(event.target.value.trim())}
            />
          )}
        </Field>
      )}
      <Field label="Amount (USDC)" hint="Leave empty to refund all that remains refundable.">
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
      <fieldset>
        <legend>Send it to</legend>
        <label className="choice">
          <input type="radio" name="refund-to" checked={to === "customer"} onChange={() => setTo("customer")} />
          <span>
            Ask the customer
            <small>They enter their address on the refund page; you send them its link.</small>
          </span>
        </label>
        <label className="choice">
          <input type="radio" name="refund-to" checked={to === "payer"} onChange={() => setTo("payer")} />
          <span>
            The payer
            <small>The address the payment came from: only when it is the customer's own wallet, never an exchange's.</small>
          </span>
        </label>
        <label className="choice">
          <input type="radio" name="refund-to" checked={to === "address"} onChange={() => setTo("address")} />
          <span>
            An address the customer gave you
            <small>Checked like the refund page's: never a payment address, the zero address or the token.</small>
          </span>
        </label>
        {to === "address" && (
          <Field label="Customer's address">
            {(id) => (
              <input
                id={id}
                required
                spellCheck={false}
                value={address}
                onChange={(event) => setAddress(event.target.value.trim())}
              />
            )}
          </Field>
        )}
      </fieldset>
      <ReasonField reason={reason} onChange={setReason} />
      <button
        type="submit"
        className="primary"
        disabled={
          create.isPending ||
          (!orderId && !payment) ||
          (remaining !== undefined && remaining !== null && BigInt(remaining) === 0n)
        }
      >
        Create refund
      </button>
      {create.data && created && (
        <div role="status" className="secret">
          <p>
            Refund <code>{create.data.id}</code> of <Money value={create.data.amount} />{" "}
            {created.status === create.data.status
              ? `created: ${created.status.replaceAll("_", " ")}.`
              : `created; now ${created.status.replaceAll("_", " ")}.`}
          </p>
          {create.data.customerUrl && created.status === "awaiting_destination" && (
            <>
              <p>Send your customer this link; it is shown only now (creating it again issues a new one):</p>
              <code data-testid="refund-customer-url">{create.data.customerUrl}</code>
            </>
          )}
        </div>
      )}
      <ProblemBox error={create.error} />
    </form>
  );
}

export function RefundTable({
  rows,
  onChanged,
  onSend,
  basePath = PARTNER_REFUNDS,
  showOrder = true,
}: {
  rows: RefundRow[];
  onChanged: () => void;
  onSend: (id: string) => void;
  basePath?: string;
  /** Off where every row is of one order (an issuer's purchase): the column would repeat it. */
  showOrder?: boolean;
}) {
  const { token } = useSession();
  const cancel = useMutation({
    mutationFn: (id: string) => api<RefundRow>(`${basePath}/${encodeURIComponent(id)}/cancel`, { token, json: {} }),
    onSuccess: onChanged,
  });
  return (
    <>
      <ProblemBox error={cancel.error} />
      <Table
        caption="Refunds, newest first"
        head={["Refund", ...(showOrder ? ["Order"] : []), "Amount", "Status", "To, transaction", "Actions"]}
      >
        {rows.length === 0 && <Empty colSpan={showOrder ? 6 : 5}>No refunds yet.</Empty>}
        {rows.map((row) => (
          <tr key={row.id}>
            <td>
              <code className="break">{row.id}</code>
              <br />
              <small>
                <When value={row.createdAt} />
              </small>
            </td>
            {showOrder && (
              <td>
                {row.externalOrderId ?? "—"}
                {row.orderId && (
                  <>
                    <br />
                    <small>
                      <code className="break">{row.orderId}</code>
                    </small>
                  </>
                )}
              </td>
            )}
            <td>
              <Money value={row.amount} />
            </td>
            <td>
              <Status value={row.status} />
            </td>
            <td>
              <Address value={row.destination} />
              <br />
              <Address value={row.transactionHash} />
            </td>
            <td>
              {row.status === "ready" && (
                <button type="button" aria-label={`Send refund ${row.id}`} onClick={() => onSend(row.id)}>
                  Send…
                </button>
              )}
              {(row.status === "ready" || row.status === "awaiting_destination") && (
                <button
                  type="button"
                  aria-label={`Cancel refund ${row.id}`}
                  disabled={cancel.isPending}
                  onClick={() => cancel.mutate(row.id)}
                >
                  Cancel
                </button>
              )}
            </td>
          </tr>
        ))}
      </Table>
    </>
  );
}

/** Sending one `ready` refund: the connected wallet, the test account (local mode), or any wallet by its instructions. */
export function SendRefund({
  refund,
  onSent,
  onClose,
  basePath = PARTNER_REFUNDS,
  fromLabel = "From (your payment address)",
}: {
  refund: RefundRow;
  onSent: () => void;
  onClose: () => void;
  basePath?: string;
  fromLabel?: string;
}) {
  const { token } = useSession();
  const instructions = refund.instructions;
  const connection = useConnection();
  const connectors = useConnectors();
  const { connectAsync } = useConnect();
  const { writeContractAsync } = useWriteContract();
  const local = useQuery({
    queryKey: ["local-test-accounts"],
    queryFn: () => api<Answer<"/api/local/test-accounts">>("/api/local/test-accounts"),
  });
  const qr = useQuery({
    queryKey: ["refund-qr", refund.id, refund.status],
    enabled: refund.status === "ready",
    queryFn: async () => {
      const svg = await api<string>(`${basePath}/${encodeURIComponent(refund.id)}/qr`, { token, raw: true });
      return `data:image/svg+xml;charset=utf-8,${encodeURIComponent(svg)}`;
    },
  });
  const { signTypedDataAsync } = useSignTypedData();
  /** The connected wallet, which must be the payment address the refund leaves. */
  const paymentAddressWallet = async (from: string) => {
    let account = connection.address;
    if (!account) {
      const connector = connectors[0];
      if (!connector) throw new Error("No wallet found in this browser: use the instructions below with any wallet.");
      account = (await connectAsync({ connector })).accounts[0];
    }
    if (!account || !isAddressEqual(account, from as Hex)) {
      throw new Error(`Connect the payment address ${from}: the refund must leave the address that received the money.`);
    }
    return account;
  };
  const fromWallet = useMutation({
    mutationFn: async () => {
      if (!instructions) throw new Error("This refund has no transfer to send.");
      const account = await paymentAddressWallet(instructions.from);
      return writeContractAsync({
        address: instructions.tokenAddress as Hex,
        abi: erc20Abi,
        functionName: "transfer",
        args: [instructions.to as Hex, BigInt(instructions.amount)],
        chainId: instructions.chainId,
        account,
      });
    },
    onSuccess: onSent,
  });
  const gasless = useMutation({
    mutationFn: async () => {
      const path = `${basePath}/${encodeURIComponent(refund.id)}/authorization`;
      const request = await api<AuthorizationRequest>(path, { token });
      const account = await paymentAddressWallet(request.message.from);
      const { message } = request;
      const signature = await signTypedDataAsync({
        account,
        // The document types an address as a string; the signer wants its 0x form.
        domain: { ...request.domain, verifyingContract: request.domain.verifyingContract as Hex },
        types: request.types,
        primaryType: request.primaryType,
        message: {
          ...message,
          value: BigInt(message.value),
          validAfter: BigInt(message.validAfter),
          validBefore: BigInt(message.validBefore),
        },
      });
      return api<Answer<"/api/partner/refunds/{id}/authorization", "post">>(path, {
        token,
        json: {
          authorization: message,
          signature,
          domain: { chainId: request.domain.chainId, verifyingContract: request.domain.verifyingContract },
        },
      });
    },
    onSuccess: onSent,
  });
  const testAccount = useMutation({
    mutationFn: () =>
      api<Answer<"/api/partner/refunds/{id}/test-send", "post">>(`${basePath}/${encodeURIComponent(refund.id)}/test-send`, {
        token,
        json: {},
      }),
    onSuccess: onSent,
  });
  const sentHash = fromWallet.data ?? gasless.data?.transactionHash ?? testAccount.data?.transactionHash;
  return (
    <section aria-labelledby="h-send-refund" className="pay">
      <h2 id="h-send-refund">Send refund {refund.id}</h2>
      {instructions === null ? (
        <p>This refund has no transfer to send.</p>
      ) : (
        <>
          <dl className="facts" aria-label="The refund's transfer">
            <dt>{fromLabel}</dt>
            <dd>
              <code>{instructions.from}</code>
            </dd>
            <dt>To</dt>
            <dd>
              <code>{instructions.to}</code>
            </dd>
            <dt>Exact amount</dt>
            <dd>
              <Money value={instructions.amount} />
            </dd>
            <dt>Status</dt>
            <dd data-testid="send-refund-status">
              <Status value={refund.status} />
            </dd>
          </dl>
          {refund.status !== "ready" && (
            <p role="status" data-testid="send-refund-outcome">
              {refund.status === "succeeded" ? (
                <>
                  Succeeded: the index shows the transfer <Address value={refund.transactionHash} />. Nothing more to send.
                </>
              ) : refund.status === "pending" ? (
                "On its way: waiting for the index to show the transfer. Do not send it again."
              ) : (
                `This refund is ${refund.status.replaceAll("_", " ")}: there is nothing to send.`
              )}
            </p>
          )}
          <div className="row">
            {refund.status === "ready" && (
              <>
                <button
                  type="button"
                  className="primary"
                  disabled={refund.status !== "ready" || fromWallet.isPending}
                  onClick={() => fromWallet.mutate()}
                >
                  Send from the connected wallet
                </button>
                <button type="button" disabled={refund.status !== "ready" || gasless.isPending} onClick={() => gasless.mutate()}>
                  Sign, the relayer sends (no ETH needed)
                </button>
                {local.isSuccess && (
                  <button
                    type="button"
                    disabled={refund.status !== "ready" || testAccount.isPending}
                    onClick={() => testAccount.mutate()}
                  >
                    Send with the test account
                  </button>
                )}
              </>
            )}
            <button type="button" onClick={onClose}>
              Close
            </button>
          </div>
          {sentHash && (
            <p role="status">
              Sent: <code>{sentHash}</code>. The refund succeeds once the index shows the transfer.
            </p>
          )}
          <ProblemBox error={fromWallet.error ?? gasless.error ?? testAccount.error} />
          {/* Once sent, the link and calldata would only invite a second payment of the same refund. */}
          {refund.status === "ready" && (
            <>
              <h3>From any other wallet</h3>
              <p>
                Send exactly this amount of USDC from the payment address to the destination: open the{" "}
                <a href={instructions.uri}>payment link (EIP-681)</a> in the wallet, scan the code, or send the calldata below to
                the token contract.
              </p>
              {qr.data && (
                <img className="qr" src={qr.data} alt="QR code of the refund's payment link" width={200} height={200} />
              )}
              <dl className="facts" aria-label="Transaction for any wallet">
                <dt>Payment link</dt>
                <dd>
                  <code>{instructions.uri}</code>
                </dd>
                <dt>Send to (token contract)</dt>
                <dd>
                  <code>{instructions.transaction.to}</code>
                </dd>
                <dt>Calldata</dt>
                <dd>
                  <code data-testid="refund-calldata">{instructions.transaction.data}</code>
                </dd>
                <dt>Chain id</dt>
                <dd>{instructions.transaction.chainId}</dd>
              </dl>
            </>
          )}
        </>
      )}
    </section>
  );
}
