import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useCallback, useEffect, useRef, useState } from "react";
import { erc20Abi, type Hex } from "viem";
import { useSendTransaction, useWriteContract } from "wagmi";
import { api } from "../api";
import type { Answer, RowOf } from "../api-types";
import { formatUsdc } from "../money";
import type { NavItem } from "../router";
import { Link, navigate } from "../router";
import { useSession } from "../session";
import { Address, Empty, Field, ListState, Money, MoreButton, ProblemBox, Status, Table, usePagedList, When } from "../ui";
import { GaslessPay, PaidBySignature, WalletCheck } from "./gasless-pay";

export const investorNav: NavItem[] = [
  { path: "offerings", label: "Offerings" },
  { path: "purchases", label: "My purchases" },
  { path: "certificates", label: "Certificates" },
  { path: "profile", label: "Profile" },
];

export function InvestorScreens({ sub }: { sub: string[] }) {
  switch (sub[0]) {
    case "purchases":
      return sub[1] ? <Purchase id={sub[1]} /> : <Purchases />;
    case "certificates":
      return <Certificates />;
    case "profile":
      return <Profile />;
    default:
      return sub[1] ? <Offering id={sub[1]} /> : <Offerings />;
  }
}

export type OfferingRow = RowOf<"/api/rwa/offerings">;

function Offerings() {
  const list = usePagedList<OfferingRow>(["rwa-offerings"], "/api/rwa/offerings");
  return (
    <section aria-labelledby="h-offerings">
      <h1 id="h-offerings">Open offerings</h1>
      <ListState list={list} what="offerings" />
      {list.rows.length === 0 && !list.isLoading && <p>No offering is open right now.</p>}
      <ul className="cards">
        {list.rows.map((offering) => (
          <li key={offering.id} className="card">
            <h2>
              <Link to={`/investor/offerings/${offering.id}`}>{offering.name}</Link>
            </h2>
            <p>{offering.issuer.name}</p>
            <p>
              <Money value={offering.unitPriceUsdc} /> per unit · {offering.unitsAvailable} of {offering.totalUnits} units
              available
            </p>
            <Eligibility offeringId={offering.id} />
          </li>
        ))}
      </ul>
      <MoreButton list={list} />
    </section>
  );
}

const REASON_TEXT: Record<string, string> = {
  kyc_required: "Your identity check (KYC) is not approved yet.",
  jurisdiction_unknown: "No jurisdiction is on record for your wallet.",
  jurisdiction_not_allowed: "Your jurisdiction is not among those this offering accepts.",
  jurisdiction_blocked: "This offering excludes your jurisdiction.",
  accreditation_required: "This offering is for accredited investors only.",
  accreditation_expired: "Your accreditation has expired.",
};

function Eligibility({ offeringId }: { offeringId: string }) {
  const { token } = useSession();
  const verdict = useQuery({
    queryKey: ["eligibility", offeringId],
    queryFn: () => api<Answer<"/api/rwa/offerings/{id}/eligibility">>(`/api/rwa/offerings/${offeringId}/eligibility`, { token }),
  });
  if (verdict.error) return <ProblemBox error={verdict.error} />;
  if (!verdict.data) return null;
  if (verdict.data.eligible) return <p className="ok">You are eligible.</p>;
  return (
    <div className="warn">
      <p>You cannot buy this offering yet:</p>
      <ul>
        {verdict.data.reasons.map((reason) => (
          <li key={reason}>{REASON_TEXT[reason] ?? reason.replaceAll("_", " ")}</li>
        ))}
      </ul>
    </div>
  );
}

function Offering({ id }: { id: string }) {
  const { token } = useSession();
  const offering = useQuery({
    queryKey: ["rwa-offering", id],
    queryFn: () => api<OfferingRow>(`/api/rwa/offerings/${id}`, { token }),
  });
  const [units, setUnits] = useState("1");
  const buy = useMutation({
    mutationFn: () =>
      api<Answer<"/api/rwa/checkout", "post">>("/api/rwa/checkout", { token, json: { offeringId: id, units: Number(units) } }),
    onSuccess: (purchase) => navigate(`/investor/purchases/${purchase.id}`),
  });
  const data = offering.data;
  const total = data && /^\d+$/.test(units) ? BigInt(data.unitPriceUsdc) * BigInt(units) : null;
  return (
    <section aria-labelledby="h-offering">
      <p>
        <Link to="/investor/offerings">← All offerings</Link>
      </p>
      <ProblemBox error={offering.error} />
      {data && (
        <>
          <h1 id="h-offering">{data.name}</h1>
          <p>{data.description}</p>
          <dl className="facts">
            <dt>Issuer</dt>
            <dd>{data.issuer.name}</dd>
            <dt>Unit price</dt>
            <dd>
              <Money value={data.unitPriceUsdc} />
            </dd>
            <dt>Units available</dt>
            <dd>
              {data.unitsAvailable} of {data.totalUnits}
            </dd>
            <dt>Per investor</dt>
            <dd>
              {data.minUnits} to {data.maxUnitsPerInvestor} units
            </dd>
            <dt>Closes</dt>
            <dd>
              <When value={data.closesAt} />
            </dd>
            <dt>Certificate</dt>
            <dd>{data.certificate.enabled ? "A non-transferable certificate NFT after payment" : "None"}</dd>
          </dl>
          <Eligibility offeringId={id} />
          <form
            onSubmit={(event) => {
              event.preventDefault();
              buy.mutate();
            }}
          >
            <Field
              label="Units"
              hint={total !== null ? `Total ${formatUsdc(total)} (plus a sub-cent payment reference)` : undefined}
            >
              {(inputId, describedBy) => (
                <input
                  id={inputId}
                  type="number"
                  inputMode="numeric"
                  min={data.minUnits}
                  max={data.maxUnitsPerInvestor}
                  required
                  value={units}
                  aria-describedby={describedBy}
                  onChange={(event) => setUnits(event.target.value)}
                />
              )}
            </Field>
            <button type="submit" className="primary" disabled={buy.isPending}>
              Reserve and continue to payment
            </button>
            <ProblemBox error={buy.error} />
          </form>
        </>
      )}
    </section>
  );
}

export type PurchaseRow = RowOf<"/api/rwa/checkout">;

function Purchases() {
  const list = usePagedList<PurchaseRow>(["rwa-purchases"], "/api/rwa/checkout");
  return (
    <section aria-labelledby="h-purchases">
      <h1 id="h-purchases">My purchases</h1>
      <ListState list={list} what="purchases" />
      <Table caption="Your purchases, newest first" head={["Offering", "Units", "Total", "Status", "Certificate", "Created"]}>
        {list.rows.length === 0 && !list.isLoading ? <Empty colSpan={6}>No purchases yet.</Empty> : null}
        {list.rows.map((row) => (
          <tr key={row.id}>
            <td>
              <Link to={`/investor/purchases/${row.id}`}>{row.offering.name}</Link>
            </td>
            <td>{row.units}</td>
            <td>
              <Money value={row.totalPriceUsdc} />
            </td>
            <td>
              <Status value={row.status} />
            </td>
            <td>
              <Status value={row.certificate?.status ?? "none"} />
            </td>
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

/**
 * One purchase from intent to certificate: pay the displayed amount from the
 * connected wallet (a plain USDC transfer, the default; or a signed EIP-3009
 * authorization that the service relays, no ETH needed), follow the purchase to
 * settled, then claim the voucher and send the mint from the wallet.
 */
function Purchase({ id }: { id: string }) {
  const { token, session } = useSession();
  const queryClient = useQueryClient();
  // Set once the wallet has sent the payment or the mint: the screen then follows the
  // service's answer until the index shows the outcome.
  const [sentHash, setSentHash] = useState<string | null>(null);
  const [mintSent, setMintSent] = useState(false);
  const purchase = useQuery({
    queryKey: ["rwa-purchase", id],
    queryFn: () => api<PurchaseRow>(`/api/rwa/checkout/${id}`, { token }),
    refetchInterval: (query) => {
      const data = query.state.data;
      if (!data) return false;
      const waiting =
        data.status === "payment_pending" ||
        (data.status === "awaiting_payment" && (data.settlement !== null || sentHash !== null));
      const minting =
        data.certificate?.status === "pending" || (mintSent && data.certificate !== null && data.certificate.status !== "minted");
      return waiting || minting ? 1000 : false;
    },
  });
  const { writeContractAsync } = useWriteContract();
  const { sendTransactionAsync } = useSendTransaction();
  const pay = useMutation({
    mutationFn: async () => {
      const payment = purchase.data?.payment;
      if (!payment) throw new Error("This purchase has no payment instructions.");
      const hash = await writeContractAsync({
        address: payment.tokenAddress as Hex,
        abi: erc20Abi,
        functionName: "transfer",
        args: [payment.recipient as Hex, BigInt(payment.amount)],
        chainId: payment.chainId,
        account: session?.address as Hex,
      });
      setSentHash(hash);
      return api("/api/rwa/settlements/wallet", { token, json: { purchaseId: id, transactionHash: hash } });
    },
    onSettled: () => queryClient.invalidateQueries({ queryKey: ["rwa-purchase", id] }),
  });
  const mint = useMutation({
    mutationFn: async () => {
      const claim = await api<{ transaction: { to: Hex; data: Hex; chainId: number } }>(`/api/rwa/certificates/${id}/claim`, {
        token,
        method: "POST",
      });
      const hash = await sendTransactionAsync({
        to: claim.transaction.to,
        data: claim.transaction.data,
        chainId: claim.transaction.chainId,
        account: session?.address as Hex,
      });
      setMintSent(true);
      return hash;
    },
    onSettled: () => queryClient.invalidateQueries({ queryKey: ["rwa-purchase", id] }),
  });
  const data = purchase.data;
  const payHeading = useRef<HTMLHeadingElement>(null);
  const settledNote = useRef<HTMLParagraphElement>(null);
  const stopFollowing = useCallback(() => setSentHash(null), []);
  // The pay buttons vanish once the purchase settles: the focus moves to the outcome instead of being lost.
  const settledAfterPaying = data?.status === "settled" && sentHash !== null;
  useEffect(() => {
    if (settledAfterPaying) settledNote.current?.focus();
  }, [settledAfterPaying]);
  return (
    <section aria-labelledby="h-purchase">
      <p>
        <Link to="/investor/purchases">← My purchases</Link>
      </p>
      <h1 id="h-purchase">Purchase {data?.offering.name ?? id}</h1>
      <ProblemBox error={purchase.error} />
      {data && (
        <>
          <ol className="steps" aria-label="Progress">
            <li aria-current={data.status === "awaiting_payment" ? "step" : undefined}>Reserved</li>
            <li aria-current={data.status === "payment_pending" ? "step" : undefined}>Payment seen</li>
            <li aria-current={data.status === "settled" && data.certificate?.status !== "minted" ? "step" : undefined}>
              Settled
            </li>
            {data.certificate && (
              <li aria-current={data.certificate.status === "minted" ? "step" : undefined}>Certificate minted</li>
            )}
          </ol>
          <dl className="facts">
            <dt>Status</dt>
            <dd data-testid="purchase-status">
              <Status value={data.status} />
            </dd>
            <dt>Units</dt>
            <dd>{data.units}</dd>
            <dt>Total</dt>
            <dd>
              <Money value={data.totalPriceUsdc} />
            </dd>
            {data.status === "awaiting_payment" && (
              <>
                <dt>Reserved until</dt>
                <dd>
                  <When value={data.expiresAt} />
                </dd>
              </>
            )}
            {data.settlement && (
              <>
                <dt>Payment</dt>
                <dd>
                  <Address value={data.settlement.transactionHash} />
                </dd>
              </>
            )}
            {data.certificate && (
              <>
                <dt>Certificate</dt>
                <dd data-testid="certificate-status">
                  <Status value={data.certificate.status} />
                  {data.certificate.status === "minted" && data.certificate.tokenId && (
                    <small> token {data.certificate.tokenId.slice(0, 12)}…</small>
                  )}
                </dd>
              </>
            )}
          </dl>
          {data.status === "awaiting_payment" && data.payment && (
            <WalletCheck payment={data.payment} onSwitched={() => payHeading.current?.focus()} />
          )}
          {data.status === "awaiting_payment" && data.payment && (
            <div className="pay">
              <h2 ref={payHeading} tabIndex={-1}>
                Send the transfer yourself
              </h2>
              <p>
                Send exactly <Money value={data.payment.amount} /> to <Address value={data.payment.recipient} /> from the wallet
                you signed in with. The last digits are this purchase's payment reference; a different amount is not matched. Your
                wallet pays the network fee in ETH.
              </p>
              <button
                type="button"
                className="primary"
                disabled={pay.isPending || sentHash !== null}
                onClick={() => pay.mutate()}
              >
                {pay.isPending ? "Confirm in your wallet…" : `Pay ${formatUsdc(data.payment.amount)}`}
              </button>
              <ProblemBox error={pay.error} />
            </div>
          )}
          {data.status === "awaiting_payment" && data.payment && (
            <GaslessPay
              purchaseId={id}
              payment={data.payment}
              expiresAt={data.expiresAt}
              onSent={setSentHash}
              onFailed={stopFollowing}
            />
          )}
          {data.status === "payment_pending" && <p role="status">Payment seen on chain; waiting for confirmations…</p>}
          {data.status === "settled" && (
            <p className="ok" role="status" ref={settledNote} tabIndex={-1}>
              Settled: the payment is final.
            </p>
          )}
          {data.status === "settled" && data.settlement && (
            <PaidBySignature purchaseId={id} transactionHash={data.settlement.transactionHash} />
          )}
          {data.status === "settled" &&
            data.certificate &&
            data.certificate.status !== "minted" &&
            data.certificate.status !== "pending" && (
              <div className="pay">
                <h2>Your certificate</h2>
                <p>Claim a signed voucher and mint the non-transferable certificate from your wallet (the mint costs gas).</p>
                <button
                  type="button"
                  className="primary"
                  disabled={mint.isPending || mint.isSuccess}
                  onClick={() => mint.mutate()}
                >
                  {mint.isPending ? "Confirm in your wallet…" : "Mint certificate"}
                </button>
                <ProblemBox error={mint.error} />
              </div>
            )}
          {data.certificate?.status === "pending" && <p role="status">Mint seen; waiting for confirmations…</p>}
          {data.certificate?.status === "minted" && (
            <p className="ok" role="status">
              Certificate minted.
            </p>
          )}
        </>
      )}
    </section>
  );
}

function Certificates() {
  const { token } = useSession();
  const certificates = useQuery({
    queryKey: ["rwa-certificates"],
    queryFn: () => api<Answer<"/api/rwa/certificates">>("/api/rwa/certificates", { token }),
  });
  return (
    <section aria-labelledby="h-certificates">
      <h1 id="h-certificates">Certificates</h1>
      <ListState list={certificates} what="certificates" />
      <Table caption="Certificates of your settled purchases" head={["Offering", "Units", "Status", "Token", "Mint"]}>
        {certificates.data?.data.length === 0 ? <Empty colSpan={5}>No certificates yet.</Empty> : null}
        {certificates.data?.data.map((row) => (
          <tr key={row.purchaseId}>
            <td>
              <Link to={`/investor/purchases/${row.purchaseId}`}>{row.offering.name}</Link>
            </td>
            <td>{row.units}</td>
            <td>
              <Status value={row.certificate?.status} />
              {row.certificate?.frozen ? " (frozen)" : ""}
            </td>
            <td>
              <Address value={row.certificate?.tokenId} />
            </td>
            <td>
              <Address value={row.certificate?.mintTransactionHash} />
            </td>
          </tr>
        ))}
      </Table>
    </section>
  );
}

type ProfileRow = Answer<"/api/investor/profile">;

function Profile() {
  const { token } = useSession();
  const profile = useQuery({
    queryKey: ["investor-profile"],
    queryFn: () => api<ProfileRow>("/api/investor/profile", { token }),
  });
  const data = profile.data;
  return (
    <section aria-labelledby="h-profile">
      <h1 id="h-profile">Profile</h1>
      <ProblemBox error={profile.error} />
      {data && (
        <dl className="facts">
          <dt>Wallet</dt>
          <dd>
            <code>{data.address}</code>
          </dd>
          <dt>Identity check (KYC)</dt>
          <dd>
            <Status value={data.kycStatus} />
          </dd>
          <dt>Jurisdiction</dt>
          <dd>{data.jurisdiction ?? "not on record"}</dd>
          <dt>Accredited</dt>
          <dd>{data.accredited ? "yes" : "no"}</dd>
          <dt>Frozen</dt>
          <dd>{data.frozen ? `yes: ${data.frozenReason ?? ""}` : "no"}</dd>
        </dl>
      )}
      <p className="hint">An administrator keeps this record; ask them to update it.</p>
    </section>
  );
}
