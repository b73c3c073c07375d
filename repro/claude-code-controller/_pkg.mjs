// Shared by the node scripts of this folder: the package claude-code-controller, imported from
// where npm installed it (CCC_PACKAGE, set by _ccc.py), and the last line every script prints.
// HOME is a fresh temporary folder (set by _ccc.py): the package writes ~/.claude/teams/{team}
// and ~/.claude/tasks/{team}. Nothing here but the package and node's own modules.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";

const pkg = process.env.CCC_PACKAGE;
if (!pkg) throw new Error("CCC_PACKAGE is not set (run the .py script beside this one)");
export const { ClaudeCodeController, TaskManager } = await import(pathToFileURL(path.join(pkg, "dist", "index.js")).href);

/** The package's own logger prints to stdout; these scripts keep stdout for their answer. */
export const quiet = { debug() {}, info() {}, warn: (...a) => console.error(...a), error: (...a) => console.error(...a) };

/** A controller of `team`, initialised (init() is to be called before anything else, says its
 * README). */
export async function controller(team) {
  const c = new ClaudeCodeController({ teamName: team, logger: quiet, cwd: os.homedir() });
  await c.init();
  return c;
}

/** The team's task folder, where the package writes (from HOME). */
export const tasksDir = (team) => path.join(os.homedir(), ".claude", "tasks", team);

export const readTask = (team, id) => JSON.parse(fs.readFileSync(path.join(tasksDir(team), `${id}.json`), "utf8"));

/** The answer line; ends the process (the controllers' inbox pollers would keep it alive). */
export function done(answer, observed) {
  console.log(JSON.stringify({ answer, observed }));
  process.exit(0);
}
