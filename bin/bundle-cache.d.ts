export function loadBundle(options: {
  /** The project's root: the entry and the watched files are relative to it. */
  root: string;
  /** The folder under node_modules/.cache/. */
  name: string;
  entry: string;
  /** Packages left to Node's loader (all of them with `packagesExternal`). */
  external?: string[];
  packagesExternal?: boolean;
  /** Files besides the bundle's inputs whose change makes it stale. */
  alsoWatched?: string[];
}): Promise<Record<string, unknown> | undefined>;
