import { ensureConsoleBuilt } from "../console/build.js";

/** `npm run console:build`: builds the console now (npm start and the tests also do, when its sources changed). */
const started = Date.now();
const { dir, built } = await ensureConsoleBuilt({ log: (line) => console.log(line) });
console.log(built ? `console built in ${Date.now() - started} ms: ${dir}` : `console is up to date: ${dir}`);
