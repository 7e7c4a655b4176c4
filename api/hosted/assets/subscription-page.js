// The customer's subscription page (`/subscription/<id>#st=<token>`). The token is read
// from the fragment and removed from the address bar; with it the page reads the
// subscription (its state, terms, next charge and past charges with their transactions)
// and, while it can be cancelled, offers Cancel: the subscriber's wallet signs the
// service's `Cancel` typed data (no fee) and the service sends it. The page says
// "cancelled" only when the service saw the cancel on the chain.
(() => {
  const POLL_MS = 3000;
  const S = window.UsdcSubscription;
  const { $ } = S;
  const root = $("subscription");
  const subscriptionId = root.dataset.subscriptionId;
  const clientToken = S.takeTokenFromFragment();
  const CHARGE_WORDS = {
    due: "Due",
    pending: "Being confirmed",
    paid: "Paid",
    failed: "Failed",
  };
  const FAILURES = {
    insufficient_balance: "not enough USDC in the wallet",
    insufficient_allowance: "the allowance ran out",
    cancelled_on_chain: "cancelled on the chain",
    reverted: "the transaction failed",
  };
  let subscription;
  let cancelSent = false;

  const call = (suffix, body) => S.call(subscriptionId, suffix, clientToken, body);

  function statusLine() {
    const shop = subscription.shop.displayName;
    switch (subscription.status) {
      case "awaiting_authorization":
        return ["Not started: this subscription still waits for your signature on the subscribe page.", "warn"];
      case "active":
        return subscription.cancelAtPeriodEnd
          ? [`Active until the end of the period paid for: ${shop} cancelled it then.`, "warn"]
          : ["Active.", "ok"];
      case "past_due":
        return ["Past due: the last charge failed. Add USDC to your wallet; it is tried again by itself.", "warn"];
      case "cancelled":
        return [
          subscription.cancelledBy === "customer"
            ? "Cancelled by you. No later charge is made."
            : subscription.cancelledBy === "partner"
              ? `Cancelled by ${shop}. No later charge is made.`
              : "Cancelled after the charges failed several times. No later charge is made.",
          "info",
        ];
      case "ended":
        return ["Ended: its last period is over.", "info"];
      case "expired":
        return ["Expired before it was signed.", "info"];
      default:
        return [`State: ${subscription.status}.`, "info"];
    }
  }

  function chargeItem(charge) {
    const item = document.createElement("li");
    item.className = "charge";
    const head = document.createElement("p");
    const when = charge.paidAt ? S.formatDate(charge.paidAt) : `period ${charge.periodIndex + 1}`;
    head.textContent = `${when}: ${S.formatAmount(charge.amount)} · ${CHARGE_WORDS[charge.status] || charge.status}`;
    if (charge.status === "failed" && charge.failureReason) {
      head.textContent += ` (${FAILURES[charge.failureReason] || charge.failureReason})`;
    }
    item.append(head);
    if (charge.transactionHash) {
      const line = document.createElement("p");
      line.append("Transaction: ", S.transactionElement(charge.transactionHash, subscription.chainId));
      item.append(line);
    }
    return item;
  }

  function render(next) {
    subscription = next;
    root.dataset.state = subscription.status;
    S.showBranding(subscription, "Your subscription");
    const amount = S.formatAmount(subscription.amount);
    const period = S.periodWords(subscription.periodSeconds);
    $("summary").textContent = `${subscription.productName} from ${subscription.shop.displayName}: ${amount} every ${period}.`;
    $("summary").hidden = false;
    const [line, tone] = statusLine();
    S.setStatus(
      cancelSent && subscription.status !== "cancelled" ? "Cancel sent: waiting for the network to confirm it." : line,
      cancelSent && subscription.status !== "cancelled" ? "info" : tone,
    );
    $("detail-amount").textContent = amount;
    $("detail-period").textContent = period + S.periodNote(subscription.interval);
    $("detail-next").textContent = subscription.nextChargeAt ? S.formatDate(subscription.nextChargeAt) : "None";
    $("detail-network").textContent = S.networkLabel(subscription);
    $("detail-wallet").textContent = subscription.subscriber || "";
    $("detail-wallet-row").hidden = !subscription.subscriber;
    $("detail-payee").textContent = subscription.payee;
    $("details-step").hidden = false;
    const charges = [...subscription.charges].sort((a, b) => b.periodIndex - a.periodIndex);
    $("charges-list").replaceChildren(...charges.map(chargeItem));
    $("no-charges").hidden = charges.length > 0;
    $("charges-step").hidden = subscription.status === "awaiting_authorization";
    $("cancel-step").hidden = subscription.cancel === null || cancelSent;
    stop();
    const moving =
      (cancelSent && subscription.status !== "cancelled") ||
      subscription.charges.some((charge) => charge.status === "pending" || charge.status === "due");
    if (moving) later();
  }

  const { refresh, later, stop } = S.reader({
    load: () => call("validate", {}),
    render,
    sections: ["summary", "details-step", "charges-step", "cancel-step"],
    pollMs: POLL_MS,
  });

  function showError(message) {
    $("cancel-error").textContent = message;
    $("cancel-error").hidden = false;
  }

  $("cancel").addEventListener("click", async () => {
    $("cancel-error").hidden = true;
    if (window.ethereum === undefined) {
      return showError(
        "Cancelling here needs the wallet that subscribed, in this browser. You can also call cancel on the contract from any wallet tool.",
      );
    }
    $("cancel").disabled = true;
    try {
      const account = await S.connect(subscription.chainId);
      if (subscription.subscriber && account.toLowerCase() !== subscription.subscriber.toLowerCase()) {
        throw new Error(`Connect the wallet that subscribed (${subscription.subscriber}); this one is ${account}.`);
      }
      $("cancel-sent").textContent = "Confirm the cancel in your wallet (no fee).";
      $("cancel-sent").hidden = false;
      const signature = await S.signTypedData(account, subscription.cancel.typedData);
      const sent = await call("cancel", { signature });
      cancelSent = true;
      $("cancel-sent").replaceChildren(
        "Cancel sent. Transaction: ",
        S.transactionElement(sent.transactionHash, subscription.chainId),
      );
      await refresh();
      $("cancel-step").hidden = false;
      $("cancel").hidden = true;
    } catch (error) {
      $("cancel-sent").hidden = true;
      showError(S.refusal(error));
    } finally {
      $("cancel").disabled = false;
    }
  });

  if (clientToken === undefined) {
    S.setStatus("This page needs the subscription link the shop sent you (it ends with #st=…). Open that link again.", "error");
  } else {
    refresh();
  }
})();
