// A team named "..", as a program given a list name from outside would pass it. Run by
// team_name_leaving_the_root.py.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { controller, done } from "./_pkg.mjs";

const tasks = path.join(os.homedir(), ".claude", "tasks");
fs.mkdirSync(tasks, { recursive: true });
let made, error;
try {
  const c = await controller("..");
  made = await c.createTask({ subject: "escape", description: "" });
} catch (e) {
  error = String(e?.message ?? e);
}
// Where the task went: the folder the team name names is ~/.claude itself.
const outside = fs.readdirSync(path.join(os.homedir(), ".claude")).filter((f) => f.endsWith(".json"));
const observed = error
  ? `createTask in team "..": threw ${JSON.stringify(error)}`
  : `createTask in team "..": answered id ${JSON.stringify(made)}; task files in ~/.claude (outside ~/.claude/tasks): ${JSON.stringify(outside)}`;
console.error(observed);
done(!error && outside.length > 0, observed);
