import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useRef, useState } from "react";
import { type Address as EvmAddress, isAddressEqual } from "viem";
import { useChains, useConnect, useConnection, useConnectors, useSignTypedData, useSwitchChain } from "wagmi";
import { ApiProblem, api } from "../api";
import type { Answer } from "../api-types";
import { formatUsdc } from "../money";
import { useSession } from "../session";
import { Address, ProblemBox, When } from "../ui";

/**
 * "Pay from a connected wallet, no ETH needed" (EIP-3009, docs/gasless.md): the
 * investor's wallet signs a `TransferWithAuthorization` of exactly the purchase's
 * amount to its payment address, valid until the reservation ends, with a fresh
 * random nonce, against the token's own EIP-712 domain: the typed data as the service
 * serves it (`typedData` of the purchase's gasless read; the service reads the domain
 * from the token: the console never reads the chain). The service checks it and its
 * relayer sends it and pays the gas; the purchase then settles from the index like
 * any transfer, which the purchase screen follows.
 */

export type PurchasePayment = { tokenAddress: string; recipient: string; amount: string; chainId: number };

type GaslessRead = Answer<"/api/rwa/settlements/authorization/{purchaseId}">;

/** What each refusal (problem code) or relay failure means for the investor, in words. */
const REFUSAL_TEXT: Record<string, string> = {
  authorization_insufficient_balance:
    "Your wallet holds less USDC than this purchase's amount. Add USDC to the wallet, then sign again.",
  authorization_wrong_payer: "Only the wallet you signed in with can pay this purchase. Select that account in your wallet.",
  authorization_wrong_network: "Your wallet signed for another network than this purchase's. Switch networks and sign again.",
  authorization_wrong_token: "Your wallet signed for another token than this purchase's USDC. Sign again.",
  authorization_wrong_recipient: "The signed payment does not go to this purchase's payment address. Sign again.",
  authorization_wrong_amount: "The signed amount is not this purchase's exact amount. Sign again.",
  authorization_outlives_session: "The signed payment stays valid after the reservation ends. Sign again.",
  authorization_expired: "The reservation ends too soon for the payment to reach the network. Start a new purchase.",
  authorization_not_yet_valid: "The signed payment is not valid yet. Sign again.",
  authorization_bad_signature: "The service could not verify the signature as your wallet's. Sign again.",
  authorization_used: "The token has already used or cancelled this signed payment. Sign a new one.",
  authorization_already_submitted: "This signed payment was already sent. Wait for it to settle.",
  authorization_in_progress: "Another signed payment of this purchase is already on its way. Wait for it to settle.",
  authorization_rejected_on_chain: "The token refused the signed payment when it was tried. Nothing was sent; sign again.",
  session_not_open: "This purchase no longer awaits payment: it was paid, or its reservation ended.",
  gasless_unavailable: "Paying without ETH is not offered on this network right now. Send the transfer yourself.",
  relayer_out_of_funds: "The service cannot pay network fees right now. Try again later, or send the transfer yourself.",
  relay_failed: "The service could not send your payment to the network. Sign again, or send the transfer yourself.",
  reverted_on_chain: "The network refused the payment; no USDC left your wallet. Sign again, or send the transfer yourself.",
  dropped: "The network dropped the payment; no USDC left your wallet. Sign again, or send the transfer yourself.",
  not_found: "This purchase was not found for your wallet.",
};

/** A refusal from the service (or a failed relay), with its code, told in words. */
function inWords(code: string, detail: string | null | undefined, body: Record<string, unknown> = {}): ApiProblem {
  return new ApiProblem(0, REFUSAL_TEXT[code] ?? "The service refused this payment.", detail ?? "", code, body);
}

/** The wallet said no (EIP-1193 code 4001), anywhere in viem's error chain. */
function isRejectedInWallet(error: unknown): boolean {
  for (let current = error as { code?: unknown; name?: unknown; cause?: unknown } | undefined; current; ) {
    if (current.code === 4001 || current.name === "UserRejectedRequestError") return true;
    current = current.cause as typeof current;
  }
  return false;
}

/** Something the console found wrong before asking the wallet (network, account). */
class WalletStateError extends Error {}

function describeFailure(error: unknown): ApiProblem {
  if (error instanceof ApiProblem) return inWords(error.code, error.detail, error.body);
  if (isRejectedInWallet(error)) {
    return new ApiProblem(
      0,
      "You declined the signature in your wallet. Nothing was sent and nothing was paid.",
      "Press the button again to sign, or send the transfer yourself.",
      "signature_rejected",
    );
  }
  if (error instanceof WalletStateError) return new ApiProblem(0, error.message, "", "wallet_not_ready");
  const message = (error as { shortMessage?: string; message?: string })?.shortMessage ?? String(error);
  return new ApiProblem(0, "The wallet could not sign the payment.", message, "wallet_error");
}

function chainLabel(chains: readonly { id: number; name: string }[], chainId: number | undefined): string {
  if (chainId === undefined) return "an unknown network";
  const chain = chains.find((candidate) => candidate.id === chainId);
  return chain ? `${chain.name} (chain ${chainId})` : `chain ${chainId}`;
}

/**
 * The wallet's network and account as the purchase needs them, shown above both ways
 * to pay: a wallet on another network cannot pay either way, and only the signed-in
 * investor's wallet settles a purchase.
 */
export function WalletCheck({ payment, onSwitched }: { payment: PurchasePayment; onSwitched?: () => void }) {
  const { session } = useSession();
  const connection = useConnection();
  const chains = useChains();
  const switchChain = useSwitchChain();
  if (connection.status !== "connected") return null;
  const wrongChain = connection.chainId !== payment.chainId;
  const wrongAccount =
    session !== null && connection.address !== undefined && !isAddressEqual(connection.address, session.address as EvmAddress);
  if (!wrongChain && !wrongAccount) return null;
  return (
    <div className="notice wallet-check" role="status">
      {wrongChain && (
        <>
          <p>
            <strong>Wrong network:</strong> your wallet is on {chainLabel(chains, connection.chainId)}; this purchase is paid on{" "}
            {chainLabel(chains, payment.chainId)}.
          </p>
          <button
            type="button"
            disabled={switchChain.isPending}
            onClick={() =>
              switchChain.mutate(
                { chainId: payment.chainId as never },
                {
                  onSuccess: () => onSwitched?.(),
                },
              )
            }
          >
            {switchChain.isPending ? "Confirm in your wallet…" : `Switch wallet to ${chainLabel(chains, payment.chainId)}`}
          </button>
          {switchChain.error && (
            <ProblemBox
              error={
                isRejectedInWallet(switchChain.error)
                  ? new ApiProblem(0, "You declined the network switch in your wallet.", "", "switch_rejected")
                  : describeFailure(switchChain.error)
              }
            />
          )}
        </>
      )}
      {wrongAccount && (
        <p>
          <strong>Other account:</strong> your wallet's account <Address value={connection.address} /> is not the one you signed
          in with (<Address value={session?.address} />
          ). Select that account in your wallet to pay.
        </p>
      )}
    </div>
  );
}

/** The second way to pay, beside the plain transfer (which stays first and the default). */
export function GaslessPay({
  purchaseId,
  payment,
  expiresAt,
  onSent,
  onFailed,
}: {
  purchaseId: string;
  payment: PurchasePayment;
  expiresAt: string;
  onSent: (transactionHash: string) => void;
  onFailed: () => void;
}) {
  const { token, session } = useSession();
  const queryClient = useQueryClient();
  const connection = useConnection();
  const connectors = useConnectors();
  const { connectAsync } = useConnect();
  const signTypedData = useSignTypedData();
  const [phase, setPhase] = useState<"idle" | "connecting" | "signing" | "sending">("idle");
  // The relay this screen sent and now follows (by id: a stuck transaction may be replaced under a new hash).
  const [sent, setSent] = useState<{ authorizationId: string; transactionHash: string } | null>(null);
  const alertRef = useRef<HTMLDivElement>(null);

  const gasless = useGaslessRead(purchaseId, sent !== null);
  const relay = gasless.data?.authorization ?? null;
  const followed = sent !== null && relay?.id === sent.authorizationId ? relay : null;
  const relayFailed = followed?.status === "failed";
  // A relay that failed while this screen followed it: its failure takes the focus once.
  const [lostRelay, setLostRelay] = useState<string | null>(null);

  useEffect(() => {
    if (!relayFailed || sent === null) return;
    setLostRelay(sent.authorizationId);
    setSent(null);
    onFailed();
  }, [relayFailed, sent, onFailed]);

  // Back on the screen while a relay is on its way (a reload, another tab): follow it rather than offer to pay again.
  useEffect(() => {
    if (sent !== null || relay === null || relay.status === "failed" || relay.transactionHash === null) return;
    setSent({ authorizationId: relay.id, transactionHash: relay.transactionHash });
    onSent(relay.transactionHash);
  }, [sent, relay, onSent]);

  const pay = useMutation({
    mutationFn: async () => {
      if (!gasless.data?.available || !session) {
        throw new WalletStateError("Paying without ETH is not offered for this purchase right now.");
      }
      setPhase("connecting");
      let from = connection.address;
      let connector = connection.connector;
      if (connection.status !== "connected" || !from || !connector) {
        const first = connectors[0];
        if (!first) throw new WalletStateError("No browser wallet was found.");
        const result = await connectAsync({ connector: first });
        from = result.accounts[0];
        connector = first;
      }
      if (!from || !isAddressEqual(from, session.address as EvmAddress)) {
        throw new WalletStateError("Select the account you signed in with in your wallet, then try again.");
      }
      // The wallet's own answer, not a cached one: a wallet signs typed data for any
      // chain, and a signature for another chain would only be refused afterwards.
      if ((await connector.getChainId()) !== payment.chainId) {
        throw new WalletStateError("Switch your wallet to this purchase's network first (see above).");
      }
      // What the wallet signs is the service's, read now (a fresh nonce): the console adds nothing and changes nothing.
      const typedData = (await readGasless(purchaseId, token)).typedData;
      if (!typedData) throw new WalletStateError("Paying without ETH is not offered for this purchase right now.");
      setPhase("signing");
      const signature = await signTypedData.mutateAsync({
        account: from,
        // The document types addresses and amounts as strings; the wallet takes the JSON as served.
        ...(typedData as unknown as Parameters<typeof signTypedData.mutateAsync>[0]),
      });
      setPhase("sending");
      return api<Answer<"/api/rwa/settlements/authorization", "post">>("/api/rwa/settlements/authorization", {
        token,
        json: {
          purchaseId,
          authorization: typedData.message,
          signature,
          domain: { chainId: typedData.domain.chainId, verifyingContract: typedData.domain.verifyingContract },
        },
      });
    },
    onSuccess: (answer) => {
      setSent({ authorizationId: answer.authorizationId, transactionHash: answer.transactionHash });
      onSent(answer.transactionHash);
    },
    onSettled: () => {
      setPhase("idle");
      void queryClient.invalidateQueries({ queryKey: ["rwa-gasless", purchaseId] });
    },
  });

  // A refusal of the last attempt, else a relay that failed after it was sent (shown on return too).
  const failedRelay = sent === null && !pay.isPending && relay?.status === "failed" ? relay.failure : null;
  let failure: ApiProblem | null = null;
  if (pay.error) failure = describeFailure(pay.error);
  else if (failedRelay) failure = inWords(failedRelay.code, failedRelay.detail);

  // A refusal takes the focus, so that keyboard and screen-reader users meet it at once.
  const failureEvent = pay.error ?? (failedRelay ? lostRelay : null);
  useEffect(() => {
    if (failureEvent) alertRef.current?.focus();
  }, [failureEvent]);

  if (!gasless.data?.available && sent === null) return null;
  const busy = phase !== "idle" || pay.isPending;
  const inFlight = sent !== null && !relayFailed;
  const shownHash = followed?.transactionHash ?? sent?.transactionHash;
  const statusText = busy
    ? {
        idle: "",
        connecting: "Connecting your wallet…",
        signing: "Confirm the signature in your wallet. Signing costs nothing.",
        sending: "Sending your signed payment to the service…",
      }[phase]
    : inFlight
      ? followed?.status === "mined"
        ? "Your payment is on chain; waiting for the service to confirm it…"
        : "The service sent your payment to the network and pays the fee; waiting for it to be mined…"
      : "";

  return (
    <section className="gasless" aria-labelledby="h-gasless">
      <h2 id="h-gasless">Or pay from a connected wallet, no ETH needed</h2>
      <p>
        Your wallet signs a USDC transfer of exactly <strong>{formatUsdc(payment.amount)}</strong> to{" "}
        <Address value={payment.recipient} />, valid until the reservation ends (<When value={expiresAt} />
        ). The service sends it to the network and pays the fee; you need no ETH.
      </p>
      <button
        id="gasless-pay"
        type="button"
        className="secondary"
        disabled={busy || inFlight}
        aria-describedby="gasless-progress"
        onClick={() => pay.mutate()}
      >
        Pay from a connected wallet, no ETH needed
      </button>
      <p id="gasless-progress" role="status" aria-live="polite" data-testid="gasless-progress">
        {statusText}
        {inFlight && shownHash && (
          <>
            {" "}
            Transaction <Address value={shownHash} />.
          </>
        )}
      </p>
      {failure && (
        <div ref={alertRef} tabIndex={-1} className="gasless-failure">
          <ProblemBox error={failure} />
        </div>
      )}
    </section>
  );
}

function readGasless(purchaseId: string, token: string | null) {
  return api<GaslessRead>(`/api/rwa/settlements/authorization/${encodeURIComponent(purchaseId)}`, { token });
}

/**
 * The purchase's gasless read (the typed data to sign, relay progress). `following`: polled
 * while a relay is in flight; `"until-mined"`: polled while the relay is queued or submitted.
 */
export function useGaslessRead(purchaseId: string, following: boolean | "until-mined") {
  const { token } = useSession();
  return useQuery({
    queryKey: ["rwa-gasless", purchaseId],
    queryFn: () => readGasless(purchaseId, token),
    // While a relay is followed: until it fails (the screen then stops following) or the purchase settles (this unmounts).
    refetchInterval: (query) => {
      if (following === "until-mined") {
        const status = query.state.data?.authorization?.status;
        return status === "queued" || status === "submitted" ? 1000 : false;
      }
      return following ? 1000 : false;
    },
  });
}

/** On a settled purchase: says when the service paid the network fee (a relayed, signed payment). */
export function PaidBySignature({ purchaseId, transactionHash }: { purchaseId: string; transactionHash: string }) {
  // The index can show the payment before the relay worker has marked its transaction mined:
  // the read is polled until it has (it was read once, and the note never came, in a loaded run).
  const gasless = useGaslessRead(purchaseId, "until-mined");
  const relay = gasless.data?.authorization;
  if (relay?.status !== "mined" || relay.transactionHash?.toLowerCase() !== transactionHash.toLowerCase()) return null;
  return <p className="hint">Paid by signature from your wallet; the service sent the transaction and paid its network fee.</p>;
}
