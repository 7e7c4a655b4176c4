// What the subscribe page and the customer's subscription page share: the client token
// taken from the fragment (`#st=`) and removed from the address bar, the service's calls
// with it in the body, the terms in plain words, the shop's branding, the injected wallet.
window.UsdcSubscription = (() => {
  const NETWORK_LABELS = { base: "Base", "base-sepolia": "Base Sepolia (test network)", local: "Local test chain (Anvil)" };
  const EXPLORERS = { 8453: "https://basescan.org/tx/", 84532: "https://sepolia.basescan.org/tx/" };
  const DAY = 86400;
  // Each refusal the pages can meet, in words for the customer.
  const REFUSALS = {
    invalid_subscription_token:
      "This subscription link is not valid (or was replaced by a newer one). Ask the shop for a new link.",
    subscription_not_awaiting_authorization: "This subscription is no longer waiting for a signature.",
    subscription_bad_signature: "The wallet signed something other than these terms. Nothing was sent; try again.",
    subscription_cancel_bad_signature:
      "The cancel must be signed by the wallet that subscribed. Connect that wallet and try again.",
    subscription_not_cancellable: "This subscription can no longer be cancelled here.",
    subscription_permit_expired: "The allowance signature expired. Sign again.",
    subscriptions_unavailable: "Subscriptions are not available on this network just now.",
  };
  const $ = (id) => document.getElementById(id);

  function takeTokenFromFragment() {
    const token = new URLSearchParams(location.hash.slice(1)).get("st");
    // Out of the address bar, the history entry and any later copy-paste of the URL.
    if (location.hash) history.replaceState(history.state, "", location.pathname + location.search);
    return token && token.length <= 200 ? token : undefined;
  }

  function formatAmount(baseUnits) {
    const value = BigInt(baseUnits);
    const whole = (value / 1000000n).toLocaleString("en-US");
    let fraction = (value % 1000000n).toString().padStart(6, "0").replace(/0+$/, "");
    if (fraction.length < 2) fraction = fraction.padEnd(2, "0");
    return `${whole}.${fraction} USDC`;
  }

  /** The period as the chain runs it: a month is a fixed 30 days, a year 365. */
  function periodWords(seconds) {
    if (seconds === DAY) return "day";
    if (seconds % DAY === 0) return `${seconds / DAY} days`;
    if (seconds % 3600 === 0) return seconds === 3600 ? "hour" : `${seconds / 3600} hours`;
    return `${seconds} seconds`;
  }

  const INTERVAL_NOTES = {
    week: "",
    month: " (a month is a fixed 30 days on the chain, not a calendar month)",
    year: " (a year is a fixed 365 days on the chain)",
  };
  const periodNote = (interval) => INTERVAL_NOTES[interval] || "";

  function formatDate(iso) {
    return `${new Date(iso).toLocaleString("en-GB", { dateStyle: "long", timeStyle: "short", timeZone: "UTC" })} UTC`;
  }

  const networkLabel = (s) => NETWORK_LABELS[s.network] || s.network || `chain ${s.chainId}`;

  function setStatus(message, tone) {
    const status = $("status");
    status.textContent = message;
    status.dataset.tone = tone || "info";
  }

  /**
   * A page's reading of its subscription: `refresh()` renders the service's answer; when the
   * service cannot be reached just now it reads again by itself, and a refusal hides `sections`
   * and says why. `later()` reads again after the page's interval, `stop()` cancels that.
   */
  function reader({ load, render, sections, pollMs }) {
    let timer;
    const stop = () => clearTimeout(timer);
    const later = (ms = pollMs) => {
      stop();
      timer = setTimeout(refresh, ms);
    };
    function fail(error) {
      stop();
      for (const id of sections) $(id).hidden = true;
      setStatus(refusal(error), "error");
    }
    async function refresh() {
      try {
        render(await load());
      } catch (error) {
        const delay = window.UsdcHostedApi.retryDelay(error, pollMs);
        if (delay === undefined) return fail(error);
        setStatus("The service could not be reached just now. This page tries again by itself.", "warn");
        later(delay);
      }
    }
    return { refresh, later, stop };
  }

  function refusal(error) {
    return REFUSALS[error?.code] || (error?.message ? error.message : "Something went wrong.");
  }

  let brandingShown = false;
  function showBranding(subscription, title) {
    if (brandingShown) return;
    brandingShown = true;
    const shop = subscription.shop;
    for (const element of document.querySelectorAll(".shop-name")) element.textContent = shop.displayName;
    $("merchant-name").textContent = shop.displayName;
    if (shop.logoUrl) {
      $("merchant-logo").src = shop.logoUrl;
      $("merchant-logo").hidden = false;
    }
    $("back-shop").textContent = shop.displayName;
    if (subscription.cancelUrl) {
      $("back-link").href = subscription.cancelUrl;
      $("back-link").hidden = false;
    }
    $("merchant").hidden = false;
    document.title = `${title} · ${shop.displayName}`;
    if (shop.supportUrl) {
      $("support-url").href = shop.supportUrl;
      $("support-url").hidden = false;
    }
    if (shop.supportEmail) {
      $("support-email").href = `mailto:${shop.supportEmail}`;
      $("support-email").textContent = shop.supportEmail;
      $("support-email").hidden = false;
    }
    $("support-separator").hidden = !(shop.supportUrl && shop.supportEmail);
    $("support").hidden = !(shop.supportUrl || shop.supportEmail);
  }

  /** A transaction hash as the hosted pages show one: the hash, and the explorer's page when the network has one. */
  function transactionElement(hash, chainId) {
    const wrapper = document.createElement("span");
    const code = document.createElement("code");
    code.className = "address";
    code.textContent = hash;
    wrapper.append(code);
    const explorer = EXPLORERS[chainId];
    if (explorer) {
      const link = document.createElement("a");
      link.href = `${explorer}${hash}`;
      link.target = "_blank";
      link.rel = "noopener noreferrer";
      link.textContent = "View on the block explorer";
      wrapper.append(" ", link);
    }
    return wrapper;
  }

  async function connect(chainId) {
    const provider = window.ethereum;
    const [account] = await provider.request({ method: "eth_requestAccounts" });
    const current = await provider.request({ method: "eth_chainId" });
    if (Number.parseInt(current, 16) !== chainId) {
      await provider.request({ method: "wallet_switchEthereumChain", params: [{ chainId: `0x${chainId.toString(16)}` }] });
    }
    return account;
  }

  /** The service's typed data, signed as it is: its type lists come from the service, never from this page. */
  const signTypedData = (account, typedData) =>
    window.ethereum.request({ method: "eth_signTypedData_v4", params: [account, JSON.stringify(typedData)] });

  return {
    reader,
    $,
    takeTokenFromFragment,
    formatAmount,
    periodWords,
    periodNote,
    formatDate,
    networkLabel,
    setStatus,
    refusal,
    showBranding,
    transactionElement,
    connect,
    signTypedData,
    call: (subscriptionId, suffix, clientToken, body) =>
      window.UsdcHostedApi.call(`/v1/public/subscriptions/${encodeURIComponent(subscriptionId)}/${suffix}`, {
        clientToken,
        ...body,
      }),
  };
})();
