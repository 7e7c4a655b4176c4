import { useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { useChainId, useConnect, useConnection, useConnectors, useSignMessage } from "wagmi";
import { api, type Role } from "./api";
import type { Answer, RowOf } from "./api-types";
import { type Session, useSession } from "./session";
import { ProblemBox } from "./ui";

const PORTALS: { role: Role; name: string; who: string }[] = [
  { role: "investor", name: "Investor", who: "Any wallet: browse offerings, buy, claim certificates." },
  { role: "partner", name: "Partner", who: "Member wallets of a partner: orders, payments, events, webhooks, keys." },
  { role: "issuer", name: "Issuer", who: "Wallets an administrator registered as issuers: offerings and holders." },
  { role: "admin", name: "Administrator", who: "The configured compliance wallets: reviews, eligibility, partners." },
];

type TestAccount = RowOf<"/api/local/test-accounts">;

/**
 * Local mode only (`npm start`): the service lists one test account per role and signs
 * it in itself, so the console can be tried without a browser wallet. Elsewhere the
 * list answers 404 and nothing is shown.
 */
function TestAccountSignIn({ onError }: { onError: (error: unknown) => void }) {
  const { setSession } = useSession();
  const [busy, setBusy] = useState<Role | null>(null);
  const accounts = useQuery({
    queryKey: ["local-test-accounts"],
    queryFn: () => api<Answer<"/api/local/test-accounts">>("/api/local/test-accounts"),
    retry: false,
  });
  if (!accounts.data) return null;
  async function signInAs(account: TestAccount) {
    setBusy(account.role);
    onError(null);
    try {
      const session = await api<Session>(`/api/${account.role}/auth/test-account`, { method: "POST" });
      setSession({ ...session, role: account.role });
    } catch (caught) {
      onError(caught);
    } finally {
      setBusy(null);
    }
  }
  return (
    <section className="test-accounts" aria-labelledby="h-test-accounts">
      <h2 id="h-test-accounts">Local mode: sign in with a test account</h2>
      <p className="hint">
        No wallet needed: the service signs in one of Anvil's development accounts for the role. Only a local stack offers this.
      </p>
      <ul>
        {accounts.data.data.map((account) => {
          const name = PORTALS.find((portal) => portal.role === account.role)?.name ?? account.role;
          return (
            <li key={account.role}>
              <button type="button" disabled={busy !== null} onClick={() => signInAs(account)}>
                {busy === account.role ? "Signing in…" : `Sign in with a test account: ${name}`}
              </button>
              <code className="address">{account.address}</code>
            </li>
          );
        })}
      </ul>
    </section>
  );
}

/** Sign-In with Ethereum through the portal's challenge and verify routes, with the browser's injected wallet. */
export function SignIn() {
  const { notice, setSession } = useSession();
  const [role, setRole] = useState<Role>("investor");
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const connectors = useConnectors();
  const { connectAsync } = useConnect();
  const connection = useConnection();
  const chainId = useChainId();
  const { signMessageAsync } = useSignMessage();
  const hasWallet = typeof window !== "undefined" && "ethereum" in window;

  async function signIn() {
    setBusy(true);
    setError(null);
    try {
      let address = connection.address;
      let connectedChain = connection.chainId ?? chainId;
      if (!address) {
        const connector = connectors[0];
        if (!connector) throw new Error("No browser wallet was found.");
        const result = await connectAsync({ connector });
        address = result.accounts[0];
        connectedChain = result.chainId;
      }
      if (!address) throw new Error("The wallet shared no account.");
      const challenge = await api<Answer<"/api/investor/auth/challenge", "post">>(`/api/${role}/auth/challenge`, {
        json: { address, chainId: connectedChain },
      });
      const signature = await signMessageAsync({ message: challenge.message, account: address });
      const session = await api<Session>(`/api/${role}/auth/verify`, { json: { message: challenge.message, signature } });
      setSession({ ...session, role });
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  }

  return (
    <main id="main" className="sign-in">
      <h1>Sign in to the console</h1>
      {notice && (
        <p className="notice" role="status">
          {notice}
        </p>
      )}
      <fieldset>
        <legend>Portal</legend>
        {PORTALS.map((portal) => (
          <label key={portal.role} className="choice">
            <input
              type="radio"
              name="portal"
              value={portal.role}
              checked={role === portal.role}
              onChange={() => setRole(portal.role)}
            />
            <span>
              <strong>{portal.name}</strong>
              <small>{portal.who}</small>
            </span>
          </label>
        ))}
      </fieldset>
      {!hasWallet && <p className="problem">No browser wallet was found. Install or enable an Ethereum wallet extension.</p>}
      <button type="button" className="primary" disabled={busy || !hasWallet} onClick={signIn}>
        {busy ? "Waiting for the wallet…" : "Sign in with wallet"}
      </button>
      <p className="hint">Your wallet signs a one-time message (EIP-4361); nothing is sent on chain and no gas is spent.</p>
      <TestAccountSignIn onError={setError} />
      <ProblemBox error={error} />
    </main>
  );
}
