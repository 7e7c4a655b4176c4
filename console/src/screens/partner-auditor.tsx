import { useMutation, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { api } from "../api";
import type { Answer, RowOf } from "../api-types";
import { formatUsdc } from "../money";
import { useSession } from "../session";
import { Address, Empty, Field, ListState, Money, MoreButton, ProblemBox, Status, Table, usePagedList } from "../ui";

/** A period as the accounting routes take it (docs/accounting.md, "Ranges"). */
export type Period = { kind: "dates"; from: string; to: string } | { kind: "blocks"; fromBlock: string; toBlock: string };

type ReconciliationRow = RowOf<"/api/partner/reports/reconciliation">;
type Reconciliation = Answer<"/api/partner/reports/reconciliation">;

type LedgerEntry = RowOf<"/api/partner/ledger">;

const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);

/** The query string of a period; dates are UTC days, `to` is the day after the last one (exclusive). */
export function periodQuery(period: Period): string {
  const params =
    period.kind === "dates"
      ? new URLSearchParams({ from: period.from, to: nextDay(period.to) })
      : new URLSearchParams({ fromBlock: period.fromBlock, toBlock: period.toBlock });
  return params.toString();
}

function nextDay(date: string): string {
  const time = Date.parse(`${date}T00:00:00Z`);
  return Number.isNaN(time) ? date : new Date(time + 86_400_000).toISOString().slice(0, 10);
}

export function periodLabel(period: Period): string {
  return period.kind === "dates"
    ? `${period.from}_${period.to}`
    : `blocks-${period.fromBlock}-${period.toBlock}`.replace(/[^\w.-]/g, "");
}

/**
 * Where a view's books come from: `/api/partner` (a member's own partner) or `/api/admin`
 * (the operator, every partner); both mount the same handlers as `/v1/ledger`,
 * `/v1/reports/reconciliation` and `/v1/orders`.
 */
export type BooksBase = "/api/partner" | "/api/admin";

/** Across partners: who owns each payment address (lower case), to name the partner on each row. */
export type PartnerNames = { byId: ReadonlyMap<string, string>; byAddress: ReadonlyMap<string, { id: string; name: string }> };

export function defaultPeriod(): Period {
  return { kind: "dates", from: day(-30), to: day(0) };
}

/**
 * The Auditor view (docs/console.md): a period's reconciliation, ledger and CSV exports,
 * read-only. Every read goes through the member's session to `/api/partner/...`.
 */
export function Auditor() {
  const [period, setPeriod] = useState<Period>(defaultPeriod);
  const query = periodQuery(period);
  return (
    <section aria-labelledby="h-auditor">
      <h1 id="h-auditor">Auditor</h1>
      <p className="hint">
        Your books for a period, tied to the chain: every figure names its block and transaction, and each payment address's
        closing balance is compared with the balance read from the chain. Nothing here changes anything.
      </p>
      <PeriodPicker current={period} onChange={setPeriod} />
      <Downloads base="/api/partner" query={query} label={periodLabel(period)} />
      <ReconciliationTable base="/api/partner" query={query} />
      <LedgerTable base="/api/partner" query={query} />
    </section>
  );
}

export function PeriodPicker({ current, onChange }: { current: Period; onChange: (period: Period) => void }) {
  const [kind, setKind] = useState<Period["kind"]>(current.kind);
  const [from, setFrom] = useState(current.kind === "dates" ? current.from : day(-30));
  const [to, setTo] = useState(current.kind === "dates" ? current.to : day(0));
  const [fromBlock, setFromBlock] = useState("");
  const [toBlock, setToBlock] = useState("");
  return (
    <form
      className="inline"
      aria-label="Period"
      onSubmit={(event) => {
        event.preventDefault();
        onChange(kind === "dates" ? { kind, from, to } : { kind, fromBlock: fromBlock.trim(), toBlock: toBlock.trim() });
      }}
    >
      <Field label="Period by">
        {(id) => (
          <select id={id} value={kind} onChange={(event) => setKind(event.target.value as Period["kind"])}>
            <option value="dates">Dates (UTC)</option>
            <option value="blocks">Block numbers</option>
          </select>
        )}
      </Field>
      {kind === "dates" ? (
        <>
          <Field label="From (first day)" hint="YYYY-MM-DD">
            {(id, describedBy) => <DayInput id={id} describedBy={describedBy} value={from} onChange={setFrom} />}
          </Field>
          <Field label="To (last day)" hint="YYYY-MM-DD">
            {(id, describedBy) => <DayInput id={id} describedBy={describedBy} value={to} onChange={setTo} />}
          </Field>
        </>
      ) : (
        <>
          <Field label="From block">
            {(id) => (
              <input
                id={id}
                inputMode="numeric"
                value={fromBlock}
                required
                onChange={(event) => setFromBlock(event.target.value)}
              />
            )}
          </Field>
          <Field label="To block (inclusive)">
            {(id) => (
              <input id={id} inputMode="numeric" value={toBlock} required onChange={(event) => setToBlock(event.target.value)} />
            )}
          </Field>
        </>
      )}
      <button type="submit" className="primary">
        Show period
      </button>
    </form>
  );
}

/** A CSV export fetched with the session's bearer token (a plain link cannot carry it) and saved as a file. */
export function Downloads({ base, query, label }: { base: BooksBase; query: string; label: string }) {
  const { token } = useSession();
  const download = useMutation({
    mutationFn: async ({ name, path }: { name: string; path: string }) => {
      const text = await api<string>(`${path}?${query}`, { token, accept: "text/csv", raw: true });
      const url = URL.createObjectURL(new Blob([text], { type: "text/csv;charset=utf-8" }));
      const anchor = document.createElement("a");
      anchor.href = url;
      const filename = `${name}-${label}.csv`;
      anchor.download = filename;
      document.body.append(anchor);
      anchor.click();
      anchor.remove();
      window.setTimeout(() => URL.revokeObjectURL(url), 10_000);
      return filename;
    },
  });
  const exports = [
    { name: "ledger", path: `${base}/ledger`, text: "Download ledger (CSV)" },
    { name: "reconciliation", path: `${base}/reports/reconciliation`, text: "Download reconciliation (CSV)" },
    { name: "orders", path: `${base}/orders`, text: "Download orders (CSV)" },
  ];
  return (
    <div className="downloads">
      <h2>Exports for this period</h2>
      <div className="row">
        {exports.map((item) => (
          <button
            key={item.name}
            type="button"
            disabled={download.isPending}
            onClick={() => download.mutate({ name: item.name, path: item.path })}
          >
            {item.text}
          </button>
        ))}
      </div>
      {download.isSuccess && <p role="status">Saved {download.data}. Columns are listed in the accounting guide.</p>}
      <ProblemBox error={download.error} />
    </div>
  );
}

/** "+1.00 USDC" / "−1.00 USDC": chain − books. */
function signed(value: string): string {
  const difference = BigInt(value);
  return `${difference < 0n ? "−" : "+"}${formatUsdc(difference < 0n ? -difference : difference)}`;
}

/** A signed difference written plainly: "+1.00 USDC, more on chain than in the books", or "none". */
function Difference({ value }: { value: string }) {
  const difference = BigInt(value);
  if (difference === 0n) return <span>none</span>;
  return (
    <span title={`${value} base units (chain − books)`}>
      <strong className="difference">{signed(value)}</strong>
      <small className="difference-note">
        {difference > 0n ? "more on chain than in the books" : "less on chain than in the books"}
      </small>
    </span>
  );
}

/** With `partners` (the operator's view across partners), each row also names its partner. */
export function ReconciliationTable({ base, query, partners }: { base: BooksBase; query: string; partners?: PartnerNames }) {
  const { token } = useSession();
  const report = useQuery({
    queryKey: ["books-reconciliation", base, query, token],
    queryFn: () => api<Reconciliation>(`${base}/reports/reconciliation?${query}`, { token }),
  });
  const partnerOf = (row: ReconciliationRow) => partners?.byId.get(row.partnerId) ?? row.partnerId;
  const head = ["Address", "Status", "Difference", "Closing (books)", "On chain", "Opening", "Movements"];
  if (partners) head.splice(1, 0, "Partner");
  // Mismatches first: an unreconciled address is never below the fold.
  const rows = [...(report.data?.data ?? [])].sort((a, b) => Number(a.reconciled) - Number(b.reconciled));
  const unreconciled = rows.filter((row) => !row.reconciled).length;
  return (
    <>
      <h2>Reconciliation</h2>
      <ListState list={report} what="the reconciliation" />
      {report.data && (
        <p className="hint">
          Blocks {report.data.fromBlock} to {report.data.toBlock} (inclusive).{" "}
          {unreconciled > 0 ? (
            <strong role="alert">
              {unreconciled} payment address{unreconciled === 1 ? " does" : "es do"} not reconcile:{" "}
              {rows
                .filter((row) => !row.reconciled)
                .map(
                  (row) =>
                    `${row.paymentAddress.slice(0, 6)}…${row.paymentAddress.slice(-4)}${partners ? ` of ${partnerOf(row)}` : ""} (${signed(row.difference)})`,
                )
                .join(", ")}
              .
            </strong>
          ) : (
            "Every payment address reconciles to the base unit."
          )}
        </p>
      )}
      {!report.error && (
        <Table caption="Per payment address, unreconciled first" head={head}>
          {report.data && rows.length === 0 && <Empty colSpan={head.length}>No payment address in this period.</Empty>}
          {rows.map((row) => (
            <tr key={`${row.chainId}-${row.paymentAddress}`} className={row.reconciled ? undefined : "unreconciled"}>
              <td>
                <Address value={row.paymentAddress} />
              </td>
              {partners && (
                <td>
                  <span title={row.partnerId}>{partnerOf(row)}</span>
                </td>
              )}
              <td>
                <Status value={row.reconciled ? "reconciled" : "unreconciled"} />
              </td>
              <td>
                <Difference value={row.difference} />
              </td>
              <td>
                <Money value={row.closingBalance} />
              </td>
              <td>
                <Money value={row.chainBalance} />
              </td>
              <td>
                <Money value={row.openingBalance} />
              </td>
              <td>
                <ul className="sums">
                  {/* The service answers the sums in its kinds' order (api/accounting/ledger-rules.ts, the one list of kinds). */}
                  {Object.entries(row.sums)
                    .filter(([, sum]) => sum !== "0")
                    .map(([kind, sum]) => (
                      <li key={kind}>
                        {kind.replaceAll("_", " ")}: <Money value={sum} />
                      </li>
                    ))}
                </ul>
              </td>
            </tr>
          ))}
        </Table>
      )}
    </>
  );
}

/** With `partners` (the operator's view across partners), each entry also names its payment address's partner. */
export function LedgerTable({ base, query, partners }: { base: BooksBase; query: string; partners?: PartnerNames }) {
  const list = usePagedList<LedgerEntry>(["books-ledger", base, query], `${base}/ledger?${query}&limit=50`);
  const head = ["Block", "Kind", "Amount", "Transaction", "From", "To"];
  if (partners) head.splice(1, 0, "Partner");
  return (
    <>
      <h2>Ledger</h2>
      <ListState list={list} what="the ledger" />
      {!list.error && (
        <Table caption="Every movement, oldest first" head={head}>
          {!list.isLoading && list.rows.length === 0 && <Empty colSpan={head.length}>No movement in this period.</Empty>}
          {list.rows.map((entry) => (
            <tr key={`${entry.chainId}-${entry.transactionHash}-${entry.logIndex}-${entry.paymentAddress}`}>
              <td>{entry.blockNumber}</td>
              {partners && <td>{partnerCell(partners, entry.paymentAddress)}</td>}
              <td>
                <Status value={entry.kind} />
                {entry.reason && entry.reason !== entry.kind && <small> {entry.reason.replaceAll("_", " ")}</small>}
              </td>
              <td>
                <Money value={entry.value} />
              </td>
              <td>
                <code className="hash" title={entry.transactionHash}>
                  {`${entry.transactionHash.slice(0, 10)}…${entry.transactionHash.slice(-6)}`}
                </code>
                <small> log {entry.logIndex}</small>
              </td>
              <td>
                <Address value={entry.from} />
              </td>
              <td>
                <Address value={entry.to} />
              </td>
            </tr>
          ))}
        </Table>
      )}
      <MoreButton list={list} />
    </>
  );
}

/** The partner owning a payment address, named (its id on hover), across partners. */
function partnerCell(partners: PartnerNames, paymentAddress: string) {
  const owner = partners.byAddress.get(paymentAddress.toLowerCase());
  return owner === undefined ? "unknown" : <span title={owner.id}>{owner.name}</span>;
}

/**
 * A UTC day typed as ISO 8601 (2026-11-27). Not `type="date"`: the browser shows that in its
 * own locale (11/27/2026 or 27/11/2026) beside the console's ISO dates, and the two read apart.
 */
function DayInput({
  id,
  describedBy,
  value,
  onChange,
}: {
  id: string;
  describedBy?: string;
  value: string;
  onChange: (value: string) => void;
}) {
  return (
    <input
      id={id}
      value={value}
      required
      inputMode="numeric"
      pattern="\d{4}-\d{2}-\d{2}"
      placeholder="YYYY-MM-DD"
      maxLength={10}
      size={10}
      spellCheck={false}
      aria-describedby={describedBy}
      onChange={(event) => onChange(event.target.value.trim())}
    />
  );
}
