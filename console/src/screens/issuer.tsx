import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api } from "../api";
import type { Answer } from "../api-types";
import { parseUsdc } from "../money";
import type { NavItem } from "../router";
import { Link, navigate } from "../router";
import { useSession } from "../session";
import { Address, Empty, Field, ListState, Money, MoreButton, ProblemBox, Status, Table, usePagedList, When } from "../ui";
import type { OfferingRow, PurchaseRow } from "./investor";
import { PurchaseRefunds, type RefundablePurchase } from "./issuer-refunds";

export const issuerNav: NavItem[] = [
  { path: "offerings", label: "Offerings" },
  { path: "new", label: "New draft" },
];

export function IssuerScreens({ sub }: { sub: string[] }) {
  if (sub[0] === "new") return <Draft />;
  if (sub[0] === "offerings" && sub[1]) return <OfferingDetail id={sub[1]} />;
  return <Offerings />;
}

function Offerings() {
  const list = usePagedList<OfferingRow>(["issuer-offerings"], "/api/issuer/offerings");
  return (
    <section aria-labelledby="h-issuer-offerings">
      <h1 id="h-issuer-offerings">Your offerings</h1>
      <p>
        <Link to="/issuer/new">Draft a new offering</Link>
      </p>
      <ListState list={list} what="offerings" />
      <Table caption="Your offerings in every state" head={["Offering", "Status", "Unit price", "Units left", "Closes"]}>
        {list.rows.length === 0 && !list.isLoading ? <Empty colSpan={5}>No offerings yet.</Empty> : null}
        {list.rows.map((row) => (
          <tr key={row.id}>
            <td>
              <Link to={`/issuer/offerings/${row.id}`}>{row.name}</Link>
            </td>
            <td>
              <Status value={row.status} />
            </td>
            <td>
              <Money value={row.unitPriceUsdc} />
            </td>
            <td>
              {row.unitsAvailable} / {row.totalUnits}
            </td>
            <td>
              <When value={row.closesAt} />
            </td>
          </tr>
        ))}
      </Table>
      <MoreButton list={list} />
    </section>
  );
}

const isoIn = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString().slice(0, 16);

function Draft() {
  const { token } = useSession();
  const networks = useQuery({
    queryKey: ["issuer-networks"],
    queryFn: () => api<Answer<"/api/issuer/networks">>("/api/issuer/networks", { token }),
  });
  const [form, setForm] = useState({
    name: "",
    description: "",
    network: "",
    unitPrice: "",
    minUnits: "1",
    maxUnitsPerInvestor: "100",
    totalUnits: "1000",
    opensAt: isoIn(0),
    closesAt: isoIn(30),
    settlementAddress: "",
    certificate: true,
    requireKyc: true,
    jurisdictions: "",
  });
  const set = (key: keyof typeof form) => (event: { target: { value: string } }) =>
    setForm({ ...form, [key]: event.target.value });
  const network = networks.data?.data.find((n) => n.network === form.network) ?? networks.data?.data[0];
  const create = useMutation({
    mutationFn: () => {
      const price = parseUsdc(form.unitPrice);
      if (price === undefined || price === 0n) throw new Error("Write the unit price as an amount of USDC, e.g. 25 or 25.50.");
      const jurisdictions = form.jurisdictions
        .split(",")
        .map((code) => code.trim().toUpperCase())
        .filter(Boolean);
      return api<Answer<"/api/issuer/offerings", "post">>("/api/issuer/offerings", {
        token,
        json: {
          name: form.name,
          description: form.description,
          network: network?.network ?? form.network,
          unitPriceUsdc: price.toString(),
          minUnits: Number(form.minUnits),
          maxUnitsPerInvestor: Number(form.maxUnitsPerInvestor),
          totalUnits: Number(form.totalUnits),
          opensAt: new Date(`${form.opensAt}Z`).toISOString(),
          closesAt: new Date(`${form.closesAt}Z`).toISOString(),
          settlementAddress: form.settlementAddress || network?.availableAddresses[0],
          certificate: { enabled: form.certificate },
          eligibility: { requireKyc: form.requireKyc, ...(jurisdictions.length > 0 ? { jurisdictions } : {}) },
        },
      });
    },
    onSuccess: (offering) => navigate(`/issuer/offerings/${offering.id}`),
  });
  return (
    <section aria-labelledby="h-draft">
      <h1 id="h-draft">Draft an offering</h1>
      <ProblemBox error={networks.error} />
      <form
        className="grid"
        onSubmit={(event) => {
          event.preventDefault();
          create.mutate();
        }}
      >
        <Field label="Name">{(id) => <input id={id} required maxLength={200} value={form.name} onChange={set("name")} />}</Field>
        <Field label="Description">
          {(id) => <textarea id={id} rows={3} maxLength={10000} value={form.description} onChange={set("description")} />}
        </Field>
        <Field label="Network">
          {(id) => (
            <select id={id} value={network?.network ?? ""} onChange={set("network")}>
              {networks.data?.data.map((n) => (
                <option key={n.network} value={n.network}>
                  {n.network} (chain {n.chainId})
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Settlement address" hint="Payment addresses the indexer watches that no other partner holds.">
          {(id, describedBy) => (
            <select id={id} value={form.settlementAddress} aria-describedby={describedBy} onChange={set("settlementAddress")}>
              {network?.availableAddresses.map((address) => (
                <option key={address} value={address}>
                  {address}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Unit price (USDC)" hint="For example 25 or 25.50">
          {(id, describedBy) => (
            <input
              id={id}
              required
              inputMode="decimal"
              value={form.unitPrice}
              aria-describedby={describedBy}
              onChange={set("unitPrice")}
            />
          )}
        </Field>
        <Field label="Total units">
          {(id) => <input id={id} type="number" min={1} required value={form.totalUnits} onChange={set("totalUnits")} />}
        </Field>
        <Field label="Minimum units per purchase">
          {(id) => <input id={id} type="number" min={1} required value={form.minUnits} onChange={set("minUnits")} />}
        </Field>
        <Field label="Maximum units per investor">
          {(id) => (
            <input
              id={id}
              type="number"
              min={1}
              required
              value={form.maxUnitsPerInvestor}
              onChange={set("maxUnitsPerInvestor")}
            />
          )}
        </Field>
        <Field label="Opens (UTC)">
          {(id) => <input id={id} type="datetime-local" required value={form.opensAt} onChange={set("opensAt")} />}
        </Field>
        <Field label="Closes (UTC)">
          {(id) => <input id={id} type="datetime-local" required value={form.closesAt} onChange={set("closesAt")} />}
        </Field>
        <Field label="Allowed jurisdictions" hint="ISO country codes separated by commas; empty: any">
          {(id, describedBy) => (
            <input id={id} value={form.jurisdictions} aria-describedby={describedBy} onChange={set("jurisdictions")} />
          )}
        </Field>
        <label className="check">
          <input type="checkbox" checked={form.requireKyc} onChange={(e) => setForm({ ...form, requireKyc: e.target.checked })} />{" "}
          Require an approved identity check (KYC)
        </label>
        <label className="check">
          <input
            type="checkbox"
            checked={form.certificate}
            onChange={(e) => setForm({ ...form, certificate: e.target.checked })}
          />{" "}
          Issue a certificate NFT to each buyer
        </label>
        <button type="submit" className="primary" disabled={create.isPending}>
          Save draft
        </button>
        <ProblemBox error={create.error} />
      </form>
    </section>
  );
}

function OfferingDetail({ id }: { id: string }) {
  const { token } = useSession();
  const queryClient = useQueryClient();
  const offering = useQuery({
    queryKey: ["issuer-offering", id],
    queryFn: () => api<OfferingRow>(`/api/issuer/offerings/${id}`, { token }),
  });
  const purchases = usePagedList<PurchaseRow & RefundablePurchase & { refundStatus: string }>(
    ["issuer-purchases", id],
    `/api/issuer/offerings/${id}/purchases`,
  );
  const [refunding, setRefunding] = useState<string | null>(null);
  const refundingRow = purchases.rows.find((row) => row.id === refunding);
  /** A refund changes the purchase's refund totals, and a full one the offering's units and holders. */
  const refundChanged = () => {
    for (const key of [
      ["issuer-purchases", id],
      ["issuer-offering", id],
      ["issuer-holders", id],
    ]) {
      void queryClient.invalidateQueries({ queryKey: key });
    }
  };
  const holders = useQuery({
    queryKey: ["issuer-holders", id],
    queryFn: () => api<Answer<"/api/issuer/offerings/{id}/holders">>(`/api/issuer/offerings/${id}/holders`, { token }),
  });
  const action = useMutation({
    mutationFn: (name: string) => api(`/api/issuer/offerings/${id}/${name}`, { token, json: {} }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ["issuer-offering", id] }),
  });
  const [csvError, setCsvError] = useState<unknown>(null);
  async function download(kind: "purchases" | "holders") {
    setCsvError(null);
    try {
      const text = await api<string>(`/api/issuer/offerings/${id}/${kind}.csv`, { token, raw: true });
      const url = URL.createObjectURL(new Blob([text], { type: "text/csv" }));
      const anchor = document.createElement("a");
      anchor.href = url;
      anchor.download = `${id}-${kind}.csv`;
      anchor.click();
      URL.revokeObjectURL(url);
    } catch (error) {
      setCsvError(error);
    }
  }
  const data = offering.data;
  return (
    <section aria-labelledby="h-issuer-offering">
      <p>
        <Link to="/issuer/offerings">← Your offerings</Link>
      </p>
      <ProblemBox error={offering.error} />
      {data && (
        <>
          <h1 id="h-issuer-offering">{data.name}</h1>
          <p data-testid="offering-status">
            Status: <Status value={data.status} />
          </p>
          {data.reviewReason && <p className="warn">Review: {data.reviewReason}</p>}
          <div className="row">
            {(data.status === "draft" || data.status === "rejected") && (
              <button type="button" className="primary" onClick={() => action.mutate("submit")}>
                Submit for review
              </button>
            )}
            {data.status === "open" && (
              <button type="button" onClick={() => action.mutate("pause")}>
                Pause
              </button>
            )}
            {data.status === "paused" && (
              <button type="button" onClick={() => action.mutate("resume")}>
                Resume
              </button>
            )}
            {(data.status === "open" || data.status === "paused") && (
              <button
                type="button"
                className="danger"
                onClick={() => window.confirm("Close this offering for good?") && action.mutate("close")}
              >
                Close
              </button>
            )}
          </div>
          <ProblemBox error={action.error} />
          <dl className="facts">
            <dt>Unit price</dt>
            <dd>
              <Money value={data.unitPriceUsdc} />
            </dd>
            <dt>Units</dt>
            <dd>
              {data.unitsAvailable} of {data.totalUnits} available
            </dd>
            <dt>Settlement address</dt>
            <dd>
              <code>{data.settlementAddress}</code>
            </dd>
            <dt>Window</dt>
            <dd>
              <When value={data.opensAt} /> to <When value={data.closesAt} />
            </dd>
          </dl>
          <h2>Purchases</h2>
          <button type="button" onClick={() => void download("purchases")}>
            Download purchases (CSV)
          </button>
          <ListState list={purchases} what="purchases" />
          <Table
            caption="Purchases of this offering"
            head={["Investor", "Units", "Total", "Status", "Refunded", "Created", "Actions"]}
          >
            {purchases.rows.length === 0 && !purchases.isLoading ? <Empty colSpan={7}>No purchases yet.</Empty> : null}
            {purchases.rows.map((row) => (
              <tr key={row.id}>
                <td>
                  <Address value={row.investor} />
                </td>
                <td>{row.units}</td>
                <td>
                  <Money value={row.totalPriceUsdc} />
                </td>
                <td>
                  <Status value={row.status} />
                </td>
                <td>
                  {row.refundStatus === "none" ? (
                    "—"
                  ) : (
                    <>
                      <Status value={row.refundStatus} /> <Money value={row.amountRefunded} />
                    </>
                  )}
                </td>
                <td>
                  <When value={row.createdAt} />
                </td>
                <td>
                  {row.status === "settled" && row.refundStatus !== "full" && (
                    <button type="button" aria-label={`Refund purchase ${row.id}`} onClick={() => setRefunding(row.id)}>
                      Refund…
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </Table>
          <MoreButton list={purchases} />
          {refundingRow && (
            <PurchaseRefunds purchase={refundingRow} onChanged={refundChanged} onClose={() => setRefunding(null)} />
          )}
          <h2>Holders</h2>
          <button type="button" onClick={() => void download("holders")}>
            Download holders (CSV)
          </button>
          <ProblemBox error={holders.error ?? csvError} />
          <Table caption="Holders: settled units per investor" head={["Investor", "Units", "KYC", "Jurisdiction"]}>
            {holders.data?.data.length === 0 ? <Empty colSpan={4}>No holders yet.</Empty> : null}
            {holders.data?.data.map((row) => (
              <tr key={row.investor}>
                <td>
                  <Address value={row.investor} />
                </td>
                <td>{row.units}</td>
                <td>{row.kycStatus ?? "—"}</td>
                <td>{row.jurisdiction ?? "—"}</td>
              </tr>
            ))}
          </Table>
        </>
      )}
    </section>
  );
}
