// Claude Code's list lock and next-id file, as Claude Code leaves them in a team's task folder:
// an empty `.lock`, the directory `.lock.lock` while one of its TaskCreate calls holds the lock
// (proper-lockfile's form), and `.highwatermark` with the highest id it has handed out. Run by
// claude_code_lock_ignored.py.
import fs from "node:fs";
import path from "node:path";
import { controller, done, readTask, tasksDir } from "./_pkg.mjs";

const TEAM = "team";
fs.mkdirSync(tasksDir(TEAM), { recursive: true });
fs.writeFileSync(path.join(tasksDir(TEAM), ".lock"), "");
fs.writeFileSync(path.join(tasksDir(TEAM), ".highwatermark"), "7");
const ctrl = await controller(TEAM);
fs.mkdirSync(path.join(tasksDir(TEAM), ".lock.lock"));
const started = Date.now();
const id = await ctrl.createTask({ subject: "while the lock is held", description: "" });
const ms = Date.now() - started;
const held = fs.existsSync(path.join(tasksDir(TEAM), ".lock.lock"));
const written = readTask(TEAM, id).subject;
const files = fs.readdirSync(tasksDir(TEAM)).sort().join(" ");
console.error(`createTask -> ${id} in ${ms} ms; lock still held: ${held}; folder: ${files}`);
done(id === "1" && held && written === "while the lock is held",
  `with .lock.lock held and .highwatermark 7, createTask wrote task ${id} in ${ms} ms; the lock was still held; the folder holds ${files}`);
