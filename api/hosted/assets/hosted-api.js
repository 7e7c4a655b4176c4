// The hosted pages' one way to call the service: same origin, a POST whose JSON body
// carries the page's token (the session's client token, or a refund token; never a
// URL), no cookies, no cache. A refusal becomes an Error with the problem's status,
// code and reason; a network failure stays the browser's TypeError (no status).
window.UsdcHostedApi = {
  /** POSTs `body` as it is (it carries the page's token). */
  async call(path, body) {
    const response = await fetch(path, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
      credentials: "omit",
      cache: "no-store",
    });
    const answer = await response.json().catch(() => ({}));
    if (!response.ok) {
      const error = new Error(answer.detail || `The service answered ${response.status}.`);
      error.status = response.status;
      error.code = answer.code;
      error.reason = answer.reason;
      error.problem = answer;
      const retryAfter = Number(response.headers.get("Retry-After"));
      if (Number.isFinite(retryAfter) && retryAfter > 0) error.retryAfterMs = Math.min(retryAfter, 60) * 1000;
      throw error;
    }
    return answer;
  },

  /** A checkout session's call: the client token rides in the body. */
  post(path, clientToken, body) {
    return this.call(path, { clientToken, ...body });
  },

  /**
   * How long a polling page waits before asking again after `error`, or undefined when
   * asking again cannot help (a refusal such as an invalid token). A network failure,
   * 408, 429 and 5xx pass (a restart, a busy service); Retry-After is honoured.
   */
  retryDelay(error, pollMs) {
    const status = error?.status;
    const transient = status === undefined || status === 408 || status === 429 || status >= 500;
    if (!transient) return undefined;
    return Math.max(pollMs, error.retryAfterMs || 0);
  },
};
