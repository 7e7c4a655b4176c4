import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { erc20Abi, type Hex } from "viem";
import { waitForTransactionReceipt } from "viem/actions";
import { useConfig, useConnect, useConnection, useConnectors, useSignMessage, useWriteContract } from "wagmi";
import { getConnectorClient } from "wagmi/actions";
import { api } from "../api";
import type { Answer, RowOf } from "../api-types";
import { parseUsdc } from "../money";
import { useSession } from "../session";
import { Address, Empty, Field, ListState, Money, MoreButton, ProblemBox, Status, Table, usePagedList, When } from "../ui";

type RewardSettings = Answer<"/api/partner/rewards/settings">;

type RewardRow = RowOf<"/api/partner/rewards">;

const WARNINGS: Record<string, string> = {
  allowance_below_outstanding:
    "The distributor's allowance is below your outstanding rewards: customers will see “reward unfunded” until you approve more.",
  balance_below_outstanding: "The funding address holds less USDC than your outstanding rewards.",
};

/** Partner console: reward settings, the distributor's allowance, the rewards list, grant and revoke (docs/rewards.md). */
export function Rewards() {
  const { token } = useSession();
  const queryClient = useQueryClient();
  const settings = useQuery({
    queryKey: ["partner-reward-settings"],
    queryFn: () => api<RewardSettings>("/api/partner/rewards/settings", { token }),
  });
  const list = usePagedList<RewardRow>(["partner-rewards"], "/api/partner/rewards");
  const refresh = () => {
    void queryClient.invalidateQueries({ queryKey: ["partner-reward-settings"] });
    void queryClient.invalidateQueries({ queryKey: ["partner-rewards"] });
  };
  return (
    <section aria-labelledby="h-rewards">
      <h1 id="h-rewards">Rewards</h1>
      <p className="hint">USDC cashback for your customers, paid from your own funding address when they claim it on chain.</p>
      <ListState list={{ isLoading: settings.isLoading, error: settings.error }} what="reward settings" />
      {settings.data && <RewardFunding current={settings.data} token={token} onChanged={refresh} />}
      <GrantForm token={token} onGranted={refresh} />
      <h2>Granted rewards</h2>
      <ListState list={list} what="rewards" />
      <RewardTable rows={list.rows} token={token} onChanged={refresh} />
      <MoreButton list={list} />
    </section>
  );
}

function RewardFunding({ current, token, onChanged }: { current: RewardSettings; token: string | null; onChanged: () => void }) {
  const [fundingAddress, setFundingAddress] = useState(current.fundingAddress ?? "");
  const [cashback, setCashback] = useState(String(current.cashbackBps / 100));
  const [approveAmount, setApproveAmount] = useState("");
  const connection = useConnection();
  const connectors = useConnectors();
  const { connectAsync } = useConnect();
  const { writeContractAsync } = useWriteContract();
  const config = useConfig();
  const { signMessageAsync } = useSignMessage();
  const local = useQuery({
    queryKey: ["local-test-accounts"],
    queryFn: () => api<Answer<"/api/local/test-accounts">>("/api/local/test-accounts"),
    retry: false,
  });
  const noWallet = `No wallet found in this browser.${local.isSuccess ? " In local mode, use “Approve with the test account”." : ""}`;
  const connectedAccount = async () => {
    if (connection.address) return connection.address;
    const connector = connectors[0];
    if (!connector) throw new Error(noWallet);
    // Signed in with a test account there is no injected wallet: wagmi's "Provider not found" says nothing useful.
    const connected = await connectAsync({ connector }).catch(() => {
      throw new Error(noWallet);
    });
    return connected.accounts[0];
  };
  const save = useMutation({
    mutationFn: async () => {
      const percent = Number(cashback);
      if (!Number.isFinite(percent) || percent < 0 || percent > 100) throw new Error("Cashback is a percentage from 0 to 100.");
      const cashbackBps = Math.round(percent * 100);
      const proven = current.fundingProven && current.fundingAddress?.toLowerCase() === fundingAddress.toLowerCase();
      if (!fundingAddress || proven) {
        return api<RewardSettings>("/api/partner/rewards/settings", { token, method: "PUT", json: { cashbackBps } });
      }
      // A new funding address proves it is yours: the connected funding wallet signs the service's challenge.
      const account = await connectedAccount();
      if (account?.toLowerCase() !== fundingAddress.toLowerCase()) {
        throw new Error(`Connect the funding address ${fundingAddress} to prove it is yours.`);
      }
      const challenge = await api<{ message: string }>("/api/partner/rewards/settings/funding-challenge", {
        token,
        method: "POST",
        json: { fundingAddress },
      });
      const signature = await signMessageAsync({ account: account as Hex, message: challenge.message });
      return api<RewardSettings>("/api/partner/rewards/settings", {
        token,
        method: "PUT",
        json: { fundingAddress, fundingProof: { message: challenge.message, signature }, cashbackBps },
      });
    },
    onSuccess: onChanged,
  });
  const approve = useMutation({
    mutationFn: async () => {
      if (!current.distributor || !current.token) throw new Error("Rewards are not offered on this network.");
      const amount = parseUsdc(approveAmount);
      if (amount === undefined) throw new Error("Enter an amount of USDC, for example 500 or 12.5.");
      const account = await connectedAccount();
      if (!current.fundingAddress || account?.toLowerCase() !== current.fundingAddress.toLowerCase()) {
        throw new Error(`Connect the funding address ${current.fundingAddress ?? "(set one first)"} to approve.`);
      }
      const hash = await writeContractAsync({
        address: current.token as Hex,
        abi: erc20Abi,
        functionName: "approve",
        args: [current.distributor.address as Hex, amount],
        chainId: current.distributor.chainId,
        account: account as Hex,
      });
      // The allowance changes when the approval is mined, not when it is sent (a block or two on
      // Base): wait for it through the wallet's own node (the console calls no node itself), so
      // that the service's fresh read below sees the new allowance rather than caching the old.
      const client = await getConnectorClient(config, { chainId: current.distributor.chainId });
      await waitForTransactionReceipt(client, { hash, pollingInterval: 1_000 });
      // The service reads the allowance afresh after a settings write.
      return api<RewardSettings>("/api/partner/rewards/settings", { token, method: "PUT", json: {} });
    },
    onSuccess: onChanged,
  });
  const testFund = useMutation({
    mutationFn: () => {
      const amount = parseUsdc(approveAmount);
      if (amount === undefined || amount <= 0n) throw new Error("Enter an amount of USDC, for example 500 or 12.5.");
      return api<Answer<"/api/partner/rewards/settings/test-fund", "post">>("/api/partner/rewards/settings/test-fund", {
        token,
        json: { allowance: amount.toString() },
      });
    },
    onSuccess: (funded) => {
      // The field shows the address the service just proved, not the one typed before.
      setFundingAddress(funded.settings.fundingAddress ?? "");
      onChanged();
    },
  });
  return (
    <>
      <dl className="facts" aria-label="Reward funding">
        <dt>Distributor</dt>
        <dd>{current.distributor ? <Address value={current.distributor.address} /> : "not offered on this network"}</dd>
        <dt>Allowance</dt>
        <dd data-testid="reward-allowance">
          <Money value={current.allowance} />
        </dd>
        <dt>Balance</dt>
        <dd>
          <Money value={current.balance} />
        </dd>
        <dt>Outstanding rewards</dt>
        <dd data-testid="reward-outstanding">
          <Money value={current.outstanding} />
        </dd>
      </dl>
      {current.warnings.map((warning) => (
        <p key={warning} className="problem" role="alert">
          {WARNINGS[warning] ?? warning}
        </p>
      ))}
      <form
        onSubmit={(event) => {
          event.preventDefault();
          save.mutate();
        }}
      >
        <Field
          label="Funding address"
          hint="Your wallet the rewards are paid from; connect it to save: it signs a message proving it is yours, then approves the distributor."
        >
          {(id, describedBy) => (
            <input
              id={id}
              value={fundingAddress}
              spellCheck={false}
              aria-describedby={describedBy}
              onChange={(event) => setFundingAddress(event.target.value.trim())}
            />
          )}
        </Field>
        <Field label="Automatic cashback (%)" hint="Granted at every settlement, rounded down; 0 turns it off.">
          {(id, describedBy) => (
            <input
              id={id}
              type="number"
              min={0}
              max={100}
              step={0.01}
              value={cashback}
              aria-describedby={describedBy}
              onChange={(event) => setCashback(event.target.value)}
            />
          )}
        </Field>
        <button type="submit" className="primary" disabled={save.isPending}>
          Save reward settings
        </button>
        <ProblemBox error={save.error} />
      </form>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          approve.mutate();
        }}
      >
        <Field
          label="Allowance to approve (USDC)"
          hint="Sent from the connected funding wallet: USDC.approve(distributor, amount)."
        >
          {(id, describedBy) => (
            <input
              id={id}
              inputMode="decimal"
              value={approveAmount}
              aria-describedby={describedBy}
              onChange={(event) => setApproveAmount(event.target.value)}
            />
          )}
        </Field>
        <div className="row">
          <button type="submit" disabled={approve.isPending || !current.distributor}>
            Approve the distributor
          </button>
          {local.isSuccess && (
            <button
              type="button"
              disabled={testFund.isPending || !current.distributor}
              onClick={() => testFund.mutate()}
              aria-describedby="test-fund-hint"
            >
              Approve with the test account
            </button>
          )}
        </div>
        {local.isSuccess && (
          <p id="test-fund-hint" className="hint">
            Local mode: the service makes its test funder (Anvil account 5, which holds test USDC) your funding address, proves it
            with that account's key and approves the distributor from it.
          </p>
        )}
        {(approve.isSuccess || testFund.isSuccess) && (
          <p role="status">
            Approved{testFund.data ? ` from ${testFund.data.settings.fundingAddress}` : ""}. The allowance above is read again.
          </p>
        )}
        <ProblemBox error={approve.error ?? testFund.error} />
      </form>
    </>
  );
}

/** Grant on any order, or with `fixedOrderId` on the order page's own order (no field to fill). */
export function GrantForm({
  token,
  onGranted,
  fixedOrderId,
}: {
  token: string | null;
  onGranted: () => void;
  fixedOrderId?: string;
}) {
  const [typedOrderId, setOrderId] = useState("");
  const orderId = fixedOrderId ?? typedOrderId;
  const [amount, setAmount] = useState("");
  const grant = useMutation({
    mutationFn: () => {
      const baseUnits = parseUsdc(amount);
      if (baseUnits === undefined || baseUnits <= 0n) throw new Error("Enter a positive amount of USDC.");
      return api<RewardRow>(`/api/partner/orders/${encodeURIComponent(orderId)}/rewards`, {
        token,
        json: { amount: baseUnits.toString(), idempotencyKey: `console-${orderId}-${baseUnits}-${Date.now()}` },
      });
    },
    onSuccess: onGranted,
  });
  return (
    <form
      aria-labelledby="h-grant"
      onSubmit={(event) => {
        event.preventDefault();
        grant.mutate();
      }}
    >
      <h2 id="h-grant">Grant a reward</h2>
      {fixedOrderId === undefined && (
        <Field label="Order id" hint="A settled order (ord_…); its rewards together may not exceed what was paid.">
          {(id, describedBy) => (
            <input
              id={id}
              value={orderId}
              aria-describedby={describedBy}
              onChange={(event) => setOrderId(event.target.value.trim())}
            />
          )}
        </Field>
      )}
      {/* Named apart from the refund's amount, which the order page shows on the same screen. */}
      <Field label={fixedOrderId === undefined ? "Amount (USDC)" : "Reward amount (USDC)"}>
        {(id) => <input id={id} inputMode="decimal" value={amount} onChange={(event) => setAmount(event.target.value)} />}
      </Field>
      <button type="submit" className="primary" disabled={grant.isPending || !orderId}>
        Grant reward
      </button>
      {grant.data && (
        <p role="status">
          Granted <Money value={grant.data.amount} /> ({grant.data.id}).
        </p>
      )}
      <ProblemBox error={grant.error} />
    </form>
  );
}

export function RewardTable({ rows, token, onChanged }: { rows: RewardRow[]; token: string | null; onChanged: () => void }) {
  const revoke = useMutation({
    mutationFn: (id: string) =>
      api<RewardRow>(`/api/partner/rewards/${encodeURIComponent(id)}/revoke`, { token, json: { reason: "revoked_in_console" } }),
    onSuccess: onChanged,
  });
  return (
    <>
      <ProblemBox error={revoke.error} />
      <Table caption="Rewards, newest first" head={["Reward", "Order", "Amount", "Status", "Recipient", "Claim by", "Action"]}>
        {rows.length === 0 && <Empty colSpan={7}>No rewards yet.</Empty>}
        {rows.map((row) => (
          <tr key={row.id}>
            <td>
              <code>{row.id}</code> <small>{row.source}</small>
            </td>
            <td>{row.externalOrderId}</td>
            <td>
              <Money value={row.amount} />
            </td>
            <td>
              <Status value={row.status} />
            </td>
            <td>
              <Address value={row.recipient} />
            </td>
            <td>
              <When value={row.expiresAt} />
            </td>
            <td>
              {(row.status === "granted" || row.status === "voucher_issued") && (
                <button
                  type="button"
                  aria-label={`Revoke reward ${row.id}`}
                  disabled={revoke.isPending}
                  onClick={() => revoke.mutate(row.id)}
                >
                  Revoke
                </button>
              )}
            </td>
          </tr>
        ))}
      </Table>
    </>
  );
}
