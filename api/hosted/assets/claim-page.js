// Certificate claim page. The client token arrives in the body of the POST that
// opened this page (the shop's "claim" form or UsdcCheckout.openClaim), never in a
// URL; it is taken out of the DOM at once and kept in this closure. The wallet is
// any injected EIP-1193 provider (window.ethereum): it connects, switches to the
// session's chain, and sends the ready-made mint transaction the service returns.
(() => {
  const POLL_MS = 2000;
  const EXPLORERS = { 8453: "https://basescan.org/tx/", 84532: "https://sepolia.basescan.org/tx/" };
  const PUBLIC_CHAINS = {
    8453: { chainName: "Base", rpcUrls: ["https://mainnet.base.org"], blockExplorerUrls: ["https://basescan.org"] },
    84532: {
      chainName: "Base Sepolia",
      rpcUrls: ["https://sepolia.base.org"],
      blockExplorerUrls: ["https://sepolia.basescan.org"],
    },
  };
  const $ = (id) => document.getElementById(id);
  const root = $("claim");
  const sessionId = root.dataset.sessionId;
  const clientToken = root.dataset.clientToken || undefined;
  root.removeAttribute("data-client-token");

  const ethereum = window.ethereum;
  let session;
  let account;
  let pollTimer;
  let busy = false;
  /** The mint transaction this page sent; until the service sees it, keep waiting for it. */
  let sentHash;

  const api = (path, body) => window.UsdcHostedApi.post(path, clientToken, body);

  const sessionPath = `/v1/public/checkout/sessions/${encodeURIComponent(sessionId)}`;

  function status(message, tone) {
    $("status").textContent = message;
    $("status").dataset.tone = tone || "info";
  }

  function showError(message) {
    const error = $("claim-error");
    error.textContent = message;
    error.hidden = !message;
  }

  function showResult(message, hash) {
    $("wallet-step").hidden = true;
    $("result-step").hidden = false;
    $("result-message").textContent = message;
    if (hash) {
      $("mint-line").hidden = false;
      $("mint-hash").textContent = hash;
      const explorer = EXPLORERS[session.chainId];
      if (explorer) {
        $("mint-link").href = `${explorer}${hash}`;
        $("mint-link").hidden = false;
      }
    }
  }

  /** The shop's name and logo, and the way back to it (its success page, else its cart). */
  function showMerchant() {
    const merchant = session.merchant;
    if (!merchant) return;
    $("merchant-name").textContent = merchant.displayName;
    if (merchant.logoUrl) {
      $("merchant-logo").src = merchant.logoUrl;
      $("merchant-logo").hidden = false;
    }
    const back = session.successUrl || session.cancelUrl;
    if (back) {
      $("back-link").href = back;
      $("back-shop").textContent = merchant.displayName;
      $("back-link").hidden = false;
    }
    $("merchant").hidden = false;
  }

  function render(next) {
    session = next;
    $("summary").textContent = `${session.product.quantity} × ${session.product.name} · order ${session.externalOrderId}`;
    $("summary").hidden = false;
    showMerchant();
    const rewardsOffered = window.UsdcRewards.render(session, clientToken) || (session.rewards || []).length > 0;
    const certificate = session.certificate;
    if (!certificate.enabled) {
      if (rewardsOffered) {
        $("claim-title").textContent = "Claim your reward";
        $("rewards-title").textContent = "Cashback for this purchase";
        document.title = "Claim your reward";
        $("result-step").hidden = true;
        return status(`${session.merchant?.displayName || "The shop"} gives you USDC back for this purchase.`, "info");
      }
      status("This purchase does not include a certificate.", "info");
      return showResult("Nothing to claim for this purchase.");
    }
    if (session.status !== "settled") {
      status("The certificate can be claimed once the payment is settled. Try again shortly.", "warn");
      return schedulePoll();
    }
    if (certificate.status === "minted") {
      status("Certificate minted.", "ok");
      return showResult("Your certificate is minted to your wallet.", certificate.mintTransactionHash);
    }
    if (certificate.status === "pending" || sentHash !== undefined) {
      status("Mint transaction sent. Waiting for confirmation…", "warn");
      showResult("Pending: your certificate is being minted.", certificate.mintTransactionHash || sentHash);
      return schedulePoll();
    }
    $("wallet-step").hidden = false;
    if (!ethereum) {
      status("No wallet found.", "error");
      showError("Open this page in a browser with an Ethereum wallet (a browser extension or a wallet app's browser).");
      $("connect").disabled = true;
      return;
    }
    if (!busy)
      status(account ? "Wallet connected. Mint your certificate." : "Connect the wallet that should hold the certificate.");
  }

  function schedulePoll(delay = POLL_MS) {
    clearTimeout(pollTimer);
    pollTimer = setTimeout(refresh, delay);
  }

  async function refresh() {
    try {
      render(await api(`${sessionPath}/validate`, {}));
    } catch (failure) {
      // A restart or a busy moment must not freeze the page: ask again, unless asking cannot help.
      const delay = window.UsdcHostedApi.retryDelay(failure, POLL_MS);
      if (delay === undefined) return status(failure.message, "error");
      status("The service could not be reached just now. This page tries again by itself.", "warn");
      schedulePoll(delay);
    }
  }

  const hexChainId = (chainId) => `0x${chainId.toString(16)}`;

  function walletMessage(failure) {
    if (failure && failure.code === 4001) return "You declined the request in your wallet.";
    return failure?.message || "The wallet reported an error.";
  }

  async function ensureChain() {
    const wanted = hexChainId(session.chainId);
    const current = await ethereum.request({ method: "eth_chainId" });
    if (typeof current === "string" && current.toLowerCase() === wanted) return;
    try {
      await ethereum.request({ method: "wallet_switchEthereumChain", params: [{ chainId: wanted }] });
    } catch (failure) {
      const known = PUBLIC_CHAINS[session.chainId];
      if (failure && failure.code === 4902 && known) {
        await ethereum.request({
          method: "wallet_addEthereumChain",
          params: [{ chainId: wanted, nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 }, ...known }],
        });
        return;
      }
      throw new Error(`Switch your wallet to ${session.network} (chain id ${session.chainId}) and try again.`);
    }
  }

  function setAccount(next) {
    account = next;
    $("account-line").hidden = !account;
    $("account").textContent = account || "";
    $("connect").hidden = Boolean(account);
    $("mint").hidden = !account;
  }

  async function connect() {
    showError("");
    busy = true;
    $("connect").disabled = true;
    try {
      const accounts = await ethereum.request({ method: "eth_requestAccounts" });
      if (!Array.isArray(accounts) || accounts.length === 0) throw new Error("The wallet shared no account.");
      await ensureChain();
      setAccount(accounts[0]);
      status("Wallet connected. Mint your certificate.");
      $("mint").focus();
    } catch (failure) {
      showError(walletMessage(failure));
      status("Not connected.", "error");
    } finally {
      busy = false;
      $("connect").disabled = false;
    }
  }

  async function mint() {
    showError("");
    busy = true;
    $("mint").disabled = true;
    try {
      await ensureChain();
      status("Preparing your certificate…");
      const claim = await api(`${sessionPath}/claim`, { walletAddress: account });
      status("Confirm the transaction in your wallet…");
      const hash = await ethereum.request({
        method: "eth_sendTransaction",
        params: [
          {
            from: account,
            to: claim.transaction.to,
            data: claim.transaction.data,
            chainId: hexChainId(claim.transaction.chainId),
          },
        ],
      });
      sentHash = hash;
      status("Mint transaction sent. Waiting for confirmation…", "warn");
      showResult("Pending: your certificate is being minted.", hash);
      $("result-title").focus();
      schedulePoll();
    } catch (failure) {
      showError(failure.code === "certificate_not_available" ? failure.message : walletMessage(failure));
      status("The certificate was not minted.", "error");
    } finally {
      busy = false;
      $("mint").disabled = false;
    }
  }

  $("connect").addEventListener("click", connect);
  $("mint").addEventListener("click", mint);
  if (ethereum && typeof ethereum.on === "function") {
    ethereum.on("accountsChanged", (accounts) => setAccount(Array.isArray(accounts) ? accounts[0] : undefined));
  }

  if (clientToken === undefined) {
    status("Open this page from your order page in the shop: it needs your checkout to know which certificate to mint.", "error");
  } else {
    refresh();
  }
})();
