import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium, type Frame, type Page } from "playwright-core";

// What every page test shares: Debian's Chromium with the flags of this closed
// network, a folder of artefacts (screenshots, axe-core reports; not committed), and
// axe-core run inside the page from the installed package.

const CHROMIUM = "/usr/bin/chromium";

/** No update checks, sync, QUIC or first-run fetches: the browser talks to the service under test only. */
const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** Fails early, with the fix, when the browser is not installed (before a test starts a chain). */
export function requireChromium(): void {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `${CHROMIUM} is missing: install Debian's package (apt-get update && apt-get install -y chromium); .ci/run does.`,
    );
  }
}

/** `test-artifacts/<name>`, emptied: what a run leaves behind is this run's only. */
export function freshArtifacts(name: string): string {
  const folder = join(process.cwd(), "test-artifacts", name);
  rmSync(folder, { recursive: true, force: true });
  mkdirSync(folder, { recursive: true });
  return folder;
}

export type Chromium = { context: BrowserContext; close: () => Promise<void> };

/** A headless Chromium with its own profile folder, removed again by `close`. */
export async function launchChromium(
  name: string,
  viewport?: { width: number; height: number },
  extraArgs: string[] = [],
): Promise<Chromium> {
  requireChromium();
  const userDataDir = mkdtempSync(join(tmpdir(), `chromium-${name}-`));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: [...CHROMIUM_ARGS, ...extraArgs],
    ...(viewport === undefined ? {} : { viewport }),
  });
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}

type AxeViolation = { id: string; impact: string | null; help: string; nodes: { target: unknown }[] };

let axeSource: string | undefined;

/**
 * Runs axe-core in the page or frame, writes its violations to `reportPath` (JSON)
 * and answers them as readable lines: all of them, or with `blockingOnly` the
 * serious and critical ones. The caller asserts, so a failure names its screen.
 */
export async function axeFindings(
  target: Page | Frame,
  reportPath: string,
  options: { blockingOnly: boolean },
): Promise<string[]> {
  axeSource ??= readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
  await target.evaluate(axeSource);
  const result = (await target.evaluate(() =>
    (window as unknown as { axe: { run: (context: Document, options: unknown) => Promise<unknown> } }).axe.run(document, {
      resultTypes: ["violations"],
    }),
  )) as { violations: AxeViolation[] };
  writeFileSync(reportPath, JSON.stringify(result.violations, null, 2));
  return result.violations
    .filter((violation) => !options.blockingOnly || violation.impact === "serious" || violation.impact === "critical")
    .map(
      (violation) =>
        `${violation.id} (${violation.impact}): ${violation.help} at ${JSON.stringify(violation.nodes.map((node) => node.target))}`,
    );
}
