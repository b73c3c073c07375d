// Two programs with a controller each update task 1 of a team at once (one the subject, one the
// owner, 200 updates each), in rounds, until 1.json no longer parses (at most 10 rounds); the
// task is whatever is in the folder already (Claude Code's, in with_claude_code_task_unreadable.py).
// Prints {"corrupt": bool, "rounds": N, "detail": TEXT}. Nothing but the package.
import { fork } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { controller, tasksDir } from "./_pkg.mjs";

const TEAM = process.argv[3] ?? "team";
if (process.argv[2] === "writer") {
  let ctrl;
  for (let tries = 0; !ctrl && tries < 1000; tries++) {
    try {
      ctrl = await controller(TEAM);
    } catch {
      // init() lists the folder and throws while the other writer's write is half done
    }
  }
  const long = process.argv[4] === "long";
  for (let i = 0; ctrl && i < 200; i++) {
    const change = long ? { subject: `a much longer subject from writer one, update ${i} `.repeat(4) } : { owner: `w${i}` };
    await ctrl.tasks.update("1", change).catch(() => {});
  }
  process.exit(0);
}
const file = path.join(tasksDir(TEAM), "1.json");
const parses = () => {
  try {
    JSON.parse(fs.readFileSync(file, "utf8"));
    return true;
  } catch {
    return false;
  }
};
let rounds = 0;
while (rounds < 10 && parses()) {
  rounds++;
  const writers = ["long", "short"].map((kind) => fork(fileURLToPath(import.meta.url), ["writer", TEAM, kind], { stdio: ["ignore", "ignore", "inherit", "ipc"] }));
  await Promise.all(writers.map((w) => new Promise((r) => w.once("exit", r))));
}
const corrupt = !parses();
console.log(JSON.stringify({ corrupt, rounds, detail: corrupt ? `${fs.statSync(file).size} bytes that do not parse` : "still parses" }));
process.exit(0);
