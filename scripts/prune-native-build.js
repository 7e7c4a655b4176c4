// npm's `postinstall` for this project. better-sqlite3 is compiled from source on install (no
// prebuilt binary can be downloaded here), and node-gyp leaves its intermediate objects beside the
// addon: about 17 MiB of `obj/`, `obj.target/`, a static `sqlite3.a` and a test extension, none of
// which is loaded at run time. This removes them and keeps `better_sqlite3.node`; a later
// `npm rebuild better-sqlite3` builds everything again. Nothing else is touched, and a missing
// directory (a prebuilt addon, or a production install without the package) is not an error.
import { rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const release = join(dirname(fileURLToPath(import.meta.url)), "..", "node_modules", "better-sqlite3", "build", "Release");
for (const leftover of ["obj", "obj.target", ".deps", "sqlite3.a", "test_extension.node"]) {
  rmSync(join(release, leftover), { recursive: true, force: true });
}
