import { type InfiniteData, useInfiniteQuery } from "@tanstack/react-query";
import { type ReactNode, useId, useLayoutEffect, useRef, useState } from "react";
import { ApiProblem, api, type Page } from "./api";
import { formatUsdc } from "./money";
import { useSession } from "./session";

/** An amount as a person writes it; the exact base units on hover and on copy. */
export function Money({ value }: { value: string | bigint | null | undefined }) {
  if (value === null || value === undefined) return <span>—</span>;
  const exact = BigInt(value).toString();
  return (
    <span
      className="money"
      title={`${exact} base units (6 decimals)`}
      data-base-units={exact}
      onCopy={(event) => {
        event.clipboardData.setData("text/plain", exact);
        event.preventDefault();
      }}
    >
      {formatUsdc(value)}
    </span>
  );
}

export function Address({ value }: { value: string | null | undefined }) {
  if (!value) return <span>—</span>;
  return (
    <code className="address" title={value}>
      {value.length > 14 ? `${value.slice(0, 6)}…${value.slice(-4)}` : value}
    </code>
  );
}

export function When({ value }: { value: string | null | undefined }) {
  if (!value) return <span>—</span>;
  // ISO 8601, never a locale's order: 27/11 and 11/27 read differently to different people.
  return <time dateTime={value}>{new Date(value).toISOString().slice(0, 19).replace("T", " ")} UTC</time>;
}

export function Status({ value }: { value: string | null | undefined }) {
  return <span className={`status status-${value ?? "none"}`}>{(value ?? "—").replaceAll("_", " ")}</span>;
}

/** Every error shows the problem's title and detail. */
export function ProblemBox({ error }: { error: unknown }) {
  if (!error) return null;
  const problem =
    error instanceof ApiProblem
      ? error
      : new ApiProblem(0, "Something went wrong", error instanceof Error ? error.message : String(error), "client_error");
  const reasons = Array.isArray(problem.body.reasons) ? (problem.body.reasons as string[]) : [];
  return (
    <div className="problem" role="alert">
      <strong>{problem.title}</strong>
      {problem.detail && <p>{problem.detail}</p>}
      {reasons.length > 0 && <p>Reasons: {reasons.join(", ").replaceAll("_", " ")}</p>}
      {problem.code !== "unknown" && <p className="code">code: {problem.code}</p>}
    </div>
  );
}

/** One-time secrets (API keys, webhook secrets): shown once, with a copy button. */
export function SecretOnce({ label, value, onDone }: { label: string; value: string; onDone: () => void }) {
  const [copied, setCopied] = useState(false);
  return (
    <div className="secret" role="status">
      <p>
        <strong>{label}</strong> — shown only now; store it safely.
      </p>
      <code data-testid="secret-value">{value}</code>
      <div className="row">
        <button
          type="button"
          onClick={async () => {
            await navigator.clipboard?.writeText(value).catch(() => undefined);
            setCopied(true);
          }}
        >
          {copied ? "Copied" : "Copy"}
        </button>
        <button type="button" onClick={onDone}>
          I have stored it
        </button>
      </div>
    </div>
  );
}

export function Field({
  label,
  children,
  hint,
}: {
  label: string;
  hint?: string;
  children: (id: string, describedBy?: string) => ReactNode;
}) {
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {children(id, hint ? `${id}-hint` : undefined)}
      {hint && (
        <small id={`${id}-hint`} className="hint">
          {hint}
        </small>
      )}
    </div>
  );
}

/** A list read page by page with the API's own cursors (`nextCursor` → `?cursor=`). */
export function usePagedList<T>(key: unknown[], path: string) {
  const { token } = useSession();
  const query = useInfiniteQuery<Page<T>, unknown, InfiniteData<Page<T>>, unknown[], string | null>({
    queryKey: [...key, token],
    initialPageParam: null,
    queryFn: ({ pageParam }) => {
      const separator = path.includes("?") ? "&" : "?";
      return api<Page<T>>(pageParam ? `${path}${separator}cursor=${encodeURIComponent(pageParam)}` : path, { token });
    },
    getNextPageParam: (last) => last.nextCursor ?? undefined,
  });
  const rows = query.data?.pages.flatMap((page) => page.data) ?? [];
  return { ...query, rows };
}

export function MoreButton({
  list,
}: {
  list: { hasNextPage: boolean; isFetchingNextPage: boolean; fetchNextPage: () => unknown };
}) {
  if (!list.hasNextPage) return null;
  return (
    <button type="button" className="more" disabled={list.isFetchingNextPage} onClick={() => list.fetchNextPage()}>
      {list.isFetchingNextPage ? "Loading…" : "Load more"}
    </button>
  );
}

/**
 * A table; on a narrow screen (console.css, up to 720 px) each row becomes a block of
 * "column: value" lines, so every cell and its action is on screen without scrolling
 * sideways. The column names are copied onto each body cell (`data-label`) after every
 * render, for the stylesheet to show. Focusable so the keyboard can scroll it where a
 * wide row still overflows.
 */
export function Table({ caption, head, children }: { caption: string; head: string[]; children: ReactNode }) {
  const body = useRef<HTMLTableSectionElement>(null);
  useLayoutEffect(() => {
    for (const row of Array.from(body.current?.rows ?? [])) {
      Array.from(row.cells).forEach((cell, index) => {
        const label = cell.colSpan > 1 ? "" : (head[index] ?? "");
        if (cell.dataset.label !== label) cell.dataset.label = label;
      });
    }
  });
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must be reachable by keyboard
    <section className="table-wrap" tabIndex={0} aria-label={caption}>
      <table>
        <caption>{caption}</caption>
        <thead>
          <tr>
            {head.map((cell) => (
              <th key={cell} scope="col">
                {cell}
              </th>
            ))}
          </tr>
        </thead>
        <tbody ref={body}>{children}</tbody>
      </table>
    </section>
  );
}

export function Empty({ colSpan, children }: { colSpan: number; children: ReactNode }) {
  return (
    <tr>
      <td colSpan={colSpan} className="empty">
        {children}
      </td>
    </tr>
  );
}

export function ListState({ list, what }: { list: { isLoading: boolean; error: unknown }; what: string }) {
  if (list.isLoading) return <p aria-live="polite">Loading {what}…</p>;
  return <ProblemBox error={list.error} />;
}
