// "Claim your reward" on the hosted confirmation and claim pages (docs/rewards.md).
// The page hands over its session (which lists the order's rewards) and the client
// token it already holds; each reward is shown with its state in plain words, and a
// claimable one offers two ways: the connected wallet sends the claim (it pays a
// small network fee), or the service's relayer sends it for a wallet without ETH.
window.UsdcRewards = (() => {
  const POLL_MS = 2000;
  const $ = (id) => document.getElementById(id);
  let session;
  let clientToken;
  let account;
  let pollTimer;
  /** Claims this page sent, by reward id: the hash until the service sees the claim. */
  const sent = {};

  const api = (path, body) => window.UsdcHostedApi.post(path, clientToken, body);
  const hexChainId = (chainId) => `0x${chainId.toString(16)}`;

  function usdc(baseUnits) {
    const digits = String(baseUnits).padStart(7, "0");
    const whole = digits.slice(0, -6).replace(/^0+(?=\d)/, "");
    const fraction = digits.slice(-6).replace(/0+$/, "");
    return `${fraction ? `${whole}.${fraction}` : whole} USDC`;
  }

  const time = (iso) => new Date(iso).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });

  /** What the customer is told for each state, and whether the buttons show. */
  function describe(reward) {
    if (sent[reward.id] && (reward.status === "voucher_issued" || reward.status === "granted")) {
      return { text: "Claim sent. Waiting for the network to include it…", tone: "warn", claimable: false };
    }
    switch (reward.status) {
      case "granted":
        return { text: `Ready to claim until ${time(reward.expiresAt)}.`, tone: "info", claimable: true };
      case "voucher_issued":
        return {
          text: `A claim was prepared for ${reward.recipient}. If it was not sent, you can claim again after ${time(reward.voucherDeadline)}.`,
          tone: "warn",
          claimable: false,
        };
      case "pending":
        return { text: "Claimed. The network is confirming it…", tone: "warn", claimable: false };
      case "claimed":
        return { text: `Paid to ${reward.recipient}.`, tone: "ok", claimable: false };
      case "revoked":
        return { text: "The shop withdrew this reward.", tone: "error", claimable: false };
      case "expired":
        return { text: "The time to claim this reward has ended.", tone: "error", claimable: false };
      default:
        return { text: reward.status, tone: "info", claimable: false };
    }
  }

  function showError(message) {
    $("reward-error").textContent = message || "";
    $("reward-error").hidden = !message;
  }

  function walletMessage(failure) {
    if (failure && failure.code === 4001) return "You declined the request in your wallet.";
    return failure?.message || "The wallet reported an error.";
  }

  async function connect() {
    const ethereum = window.ethereum;
    if (!ethereum) throw new Error("No wallet found in this browser.");
    const accounts = await ethereum.request({ method: "eth_requestAccounts" });
    if (!Array.isArray(accounts) || accounts.length === 0) throw new Error("The wallet shared no account.");
    account = accounts[0];
    $("reward-account").textContent = account;
    $("reward-wallet-line").hidden = false;
    return account;
  }

  async function ensureChain() {
    const wanted = hexChainId(session.chainId);
    const current = await window.ethereum.request({ method: "eth_chainId" });
    if (typeof current === "string" && current.toLowerCase() === wanted) return;
    await window.ethereum.request({ method: "wallet_switchEthereumChain", params: [{ chainId: wanted }] }).catch(() => {
      throw new Error(`Switch your wallet to ${session.network} (chain id ${session.chainId}) and try again.`);
    });
  }

  /** The typed address (no wallet in this browser), checked for shape; the service checks it again. */
  function typedAddress() {
    const value = $("reward-address").value.trim();
    if (!/^0x[0-9a-fA-F]{40}$/.test(value)) {
      $("reward-address").setAttribute("aria-invalid", "true");
      throw new Error("Enter the address of your wallet: 0x followed by 40 hexadecimal characters.");
    }
    $("reward-address").removeAttribute("aria-invalid");
    return value;
  }

  async function claim(reward, gasless, button) {
    showError("");
    button.disabled = true;
    try {
      const wallet = window.ethereum ? account || (await connect()) : typedAddress();
      const path = `/v1/public/rewards/${encodeURIComponent(reward.id)}/claim`;
      if (gasless) {
        const answer = await api(path, { walletAddress: wallet, gasless: true });
        sent[reward.id] = answer.transactionHash;
      } else {
        await ensureChain();
        const answer = await api(path, { walletAddress: wallet });
        sent[reward.id] = await window.ethereum.request({
          method: "eth_sendTransaction",
          params: [
            {
              from: wallet,
              to: answer.transaction.to,
              data: answer.transaction.data,
              chainId: hexChainId(answer.transaction.chainId),
            },
          ],
        });
      }
      await refresh();
    } catch (failure) {
      showError(failure.code ? failure.message : walletMessage(failure));
    } finally {
      button.disabled = false;
    }
  }

  function item(reward) {
    const { text, tone, claimable } = describe(reward);
    const li = document.createElement("li");
    li.className = "reward";
    li.dataset.status = reward.status;
    const amount = document.createElement("p");
    amount.className = "reward-amount";
    amount.textContent = `${usdc(reward.amount)} cashback`;
    const state = document.createElement("p");
    state.className = "status";
    state.dataset.tone = tone;
    state.textContent = text;
    li.append(amount, state);
    const hash = reward.transactionHash || sent[reward.id];
    if (hash) {
      const line = document.createElement("p");
      line.append("Transaction: ");
      const code = document.createElement("code");
      code.className = "address";
      code.textContent = hash;
      line.append(code);
      li.append(line);
    }
    if (claimable) {
      const actions = document.createElement("div");
      actions.className = "actions";
      if (window.ethereum) {
        const direct = document.createElement("button");
        direct.type = "button";
        direct.className = "primary";
        direct.textContent = "Claim with my wallet";
        direct.addEventListener("click", () => claim(reward, false, direct));
        actions.append(direct);
      }
      const gasless = document.createElement("button");
      gasless.type = "button";
      gasless.className = window.ethereum ? "" : "primary";
      gasless.textContent = "Claim without ETH";
      gasless.addEventListener("click", () => claim(reward, true, gasless));
      actions.append(gasless);
      li.append(actions);
    }
    return li;
  }

  function draw() {
    const rewards = session.rewards || [];
    $("rewards-step").hidden = rewards.length === 0;
    $("reward-address-field").hidden = Boolean(window.ethereum) || !rewards.some((reward) => describe(reward).claimable);
    $("rewards-list").replaceChildren(...rewards.map(item));
    clearTimeout(pollTimer);
    if (rewards.some((reward) => reward.status === "pending" || sent[reward.id])) pollTimer = setTimeout(refresh, POLL_MS);
  }

  async function refresh() {
    const rewards = await Promise.all(
      (session.rewards || []).map((reward) => api(`/v1/public/rewards/${encodeURIComponent(reward.id)}`, {}).catch(() => reward)),
    );
    for (const reward of rewards) if (reward.status === "pending" || reward.status === "claimed") delete sent[reward.id];
    session = { ...session, rewards };
    draw();
  }

  return {
    /** Shows the session's rewards; answers whether one of them can be claimed now. */
    render(next, token) {
      session = next;
      clientToken = token;
      draw();
      return (session.rewards || []).some((reward) => describe(reward).claimable);
    },
  };
})();
