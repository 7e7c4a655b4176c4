import { useMemo, useState } from "react";
import type { RowOf } from "../api-types";
import { Field, MoreButton, usePagedList } from "../ui";
import {
  Downloads,
  defaultPeriod,
  LedgerTable,
  type PartnerNames,
  type Period,
  PeriodPicker,
  periodLabel,
  periodQuery,
  ReconciliationTable,
} from "./partner-auditor";

type PartnerRow = RowOf<"/api/admin/partners">;

/**
 * The operator's Auditor view (docs/console.md): the partner members' Auditor view
 * across every partner, read through the admin session at `/api/admin/ledger`,
 * `/api/admin/reports/reconciliation` and `/api/admin/orders` (the same handlers as
 * `/v1`, docs/accounting.md). "All partners" reads every partner's books; choosing one
 * adds `partnerId=` to every read and download, as a platform auditor key does.
 */
export function AdminAuditor() {
  const [period, setPeriod] = useState<Period>(defaultPeriod);
  const [partnerId, setPartnerId] = useState("");
  const partnerList = usePagedList<PartnerRow>(["admin-books-partners"], "/api/admin/partners?limit=200");
  const partners = useMemo<PartnerNames>(
    () => ({
      byId: new Map(partnerList.rows.map((partner) => [partner.id, partner.name])),
      byAddress: new Map(
        partnerList.rows.flatMap((partner) =>
          partner.paymentAddresses.map((address) => [address.address.toLowerCase(), { id: partner.id, name: partner.name }]),
        ),
      ),
    }),
    [partnerList.rows],
  );
  const query = `${periodQuery(period)}${partnerId ? `&${new URLSearchParams({ partnerId })}` : ""}`;
  const label = `${partnerId ? `${partnerId.replace(/[^\w.-]/g, "")}-` : "all-partners-"}${periodLabel(period)}`;
  return (
    <section aria-labelledby="h-admin-auditor">
      <h1 id="h-admin-auditor">Auditor</h1>
      <p className="hint">
        Every partner's books for a period, tied to the chain: each payment address's closing balance from the index is compared
        with the balance read from the chain, unreconciled addresses first. Nothing here changes anything.
      </p>
      <div className="partner-filter">
        <Field label="Partner">
          {(id) => (
            <select id={id} value={partnerId} onChange={(event) => setPartnerId(event.target.value)}>
              <option value="">All partners</option>
              {partnerList.rows.map((partner) => (
                <option key={partner.id} value={partner.id}>
                  {partner.name} ({partner.id})
                </option>
              ))}
            </select>
          )}
        </Field>
        <MoreButton list={partnerList} />
      </div>
      <PeriodPicker current={period} onChange={setPeriod} />
      <Downloads base="/api/admin" query={query} label={label} />
      <ReconciliationTable base="/api/admin" query={query} partners={partners} />
      <LedgerTable base="/api/admin" query={query} partners={partners} />
    </section>
  );
}
