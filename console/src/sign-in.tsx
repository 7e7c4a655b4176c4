import { useState } from "react";
import { useChainId, useConnect, useConnection, useConnectors, useSignMessage } from "wagmi";
import { api, type Role } from "./api";
import { type Session, useSession } from "./session";
import { ProblemBox } from "./ui";

const PORTALS: { role: Role; name: string; who: string }[] = [
  { role: "investor", name: "Investor", who: "Any wallet: browse offerings, buy, claim certificates." },
  { role: "partner", name: "Partner", who: "Member wallets of a partner: orders, payments, events, webhooks, keys." },
  { role: "issuer", name: "Issuer", who: "Wallets an administrator registered as issuers: offerings and holders." },
  { role: "admin", name: "Administrator", who: "The configured compliance wallets: reviews, eligibility, partners." },
];

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
      const challenge = await api<{ message: string }>(`/api/${role}/auth/challenge`, {
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
      <ProblemBox error={error} />
    </main>
  );
}
