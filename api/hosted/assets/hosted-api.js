// The hosted pages' one way to call the service: same origin, a POST whose JSON body
// carries the session's client token (never a URL), no cookies, no cache. A refusal
// becomes an Error with the problem's status, code and reason.
window.UsdcHostedApi = {
  async post(path, clientToken, body) {
    const response = await fetch(path, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ clientToken, ...body }),
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
      throw error;
    }
    return answer;
  },
};
