// One task file that does not parse (as a write cut short leaves it) in a team's task folder.
// Run by one_bad_file_breaks_the_team.py.
import fs from "node:fs";
import path from "node:path";
import { ClaudeCodeController, done, quiet, tasksDir } from "./_pkg.mjs";

const TEAM = "team";
fs.mkdirSync(tasksDir(TEAM), { recursive: true });
const task = { id: "1", subject: "fine", description: "", status: "pending", blocks: [], blockedBy: [] };
fs.writeFileSync(path.join(tasksDir(TEAM), "1.json"), JSON.stringify(task, null, 4));
fs.writeFileSync(path.join(tasksDir(TEAM), "2.json"), '{\n    "id": "2",\n    "subj');
const ctrl = new ClaudeCodeController({ teamName: TEAM, logger: quiet });
let init = "ok";
try {
  await ctrl.init();
} catch (e) {
  init = `${e.name}: ${e.message}`;
}
let list = "ok";
try {
  await ctrl.tasks.list();
} catch (e) {
  list = `${e.name}: ${e.message}`;
}
let get1 = "";
try {
  get1 = (await ctrl.tasks.get("1")).subject;
} catch (e) {
  get1 = `${e.name}: ${e.message}`;
}
console.error(`init: ${init}; list: ${list}; get 1: ${get1}`);
done(init !== "ok" && list !== "ok", `with 1.json whole and 2.json cut short: init() -> ${init}; tasks.list() -> ${list}; tasks.get("1") -> ${get1}`);
