import { describe, expect, it } from "vitest";
import { headAndLag } from "../../api/routes/health-checks.js";
import { anvilLastLines } from "../../local/anvil.js";
import { chainExitMessage, redactRpcUrl, redactUrlsIn } from "../../local/fork.js";

/** Pure rules of the developer's loop: fork URL redaction, Anvil's last words, health's lag. */

describe("redactRpcUrl", () => {
  it("keeps the host and harmless path words, drops userinfo, query and key-like segments", () => {
    expect(redactRpcUrl("https://base-mainnet.g.example.com/v2/AbC123xyz456DEF")).toBe("https://base-mainnet.g.example.com/v2/…");
    expect(redactRpcUrl("https://user:pa55@rpc.example.com/rpc?key=s3cret")).toBe("https://rpc.example.com/rpc");
    expect(redactRpcUrl("https://sepolia.base.org")).toBe("https://sepolia.base.org");
    expect(redactRpcUrl("http://127.0.0.1:8545/v2/secret-api-key")).toBe("http://127.0.0.1:8545/v2/…");
    expect(redactRpcUrl("https://node.example.com/base-sepolia/0123456789abcdef0123456789abcdef")).toBe(
      "https://node.example.com/base-sepolia/…",
    );
    expect(redactRpcUrl("not a url")).toBe("(not a URL)");
  });

  it("redacts every URL inside a line of text", () => {
    expect(redactUrlsIn("error sending request for url (http://h.example/v3/k3yK3yK3y?x=1)")).toBe(
      "error sending request for url (http://h.example/v3/…)",
    );
  });
});

describe("Anvil's last lines", () => {
  const panic = [
    "\u001b[31mThe application panicked (crashed).\u001b[0m",
    "Message:  pre-execution changes failed: error sending request for url (http://127.0.0.1:9/?apikey=Secret1)",
    "",
    "Context:",
    "- Error #2: Connection refused (os error 111)",
    "Location: crates/anvil/src/eth/backend/mem/mod.rs:1324",
    "",
    "This is a bug. Consider reporting it at https://github.com/foundry-rs/foundry",
    "",
    "  ━━━━━━━━━━━━━━━━ BACKTRACE ━━━━━━━━━━━━━━━━",
    "   3: std::panicking::panic_with_hook<unknown>",
  ].join("\n");

  it("are the panic's message and context, without colours, the bug-report line or the backtrace", () => {
    const lines = anvilLastLines(panic);
    expect(lines[0]).toBe("The application panicked (crashed).");
    expect(lines.join("\n")).toContain("Connection refused");
    expect(lines.join("\n")).not.toMatch(/BACKTRACE|panic_with_hook|This is a bug/);
    expect(anvilLastLines(panic, 2)).toEqual([
      "- Error #2: Connection refused (os error 111)",
      "Location: crates/anvil/src/eth/backend/mem/mod.rs:1324",
    ]);
  });

  it("make the exit message name the fork's upstream, redacted, with Anvil's words", () => {
    const message = chainExitMessage({
      code: null,
      signal: "SIGABRT",
      forkUrl: "http://127.0.0.1:9/?apikey=Secret1",
      anvilLines: anvilLastLines(panic),
    });
    expect(message).toContain("the chain (an Anvil fork of http://127.0.0.1:9) exited (signal SIGABRT)");
    expect(message).toContain("Anvil's last lines:");
    expect(message).toContain("error sending request for url (http://127.0.0.1:9)");
    expect(message).not.toContain("Secret1");
    expect(chainExitMessage({ code: 1, signal: null, anvilLines: [] })).toBe(
      "the chain (Anvil) exited (code 1); stopping the service. Anvil printed nothing.",
    );
  });
});

describe("health's head and lag", () => {
  it("never reports a negative lag: a sampled head below the index is stale", () => {
    expect(headAndLag(105n, 100n)).toEqual({ chainHead: 105n, lagBlocks: 0 });
    expect(headAndLag(100n, 103n)).toEqual({ chainHead: 103n, lagBlocks: 3 });
    expect(headAndLag(undefined, 103n)).toEqual({ chainHead: 103n, lagBlocks: null });
    expect(headAndLag(100n, undefined)).toEqual({ chainHead: undefined, lagBlocks: null });
  });
});
