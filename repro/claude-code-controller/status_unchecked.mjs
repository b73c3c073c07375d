// Status changes through tasks.update, the call the package's own waitFor polls the result of.
// Run by status_unchecked.py.
import { controller, done } from "./_pkg.mjs";

const ctrl = await controller("team");
const t = ctrl.tasks;
const blocker = await ctrl.createTask({ subject: "blocker", description: "" });
const task = await ctrl.createTask({ subject: "waits", description: "", blockedBy: [blocker] });
const seen = [];
const status = async (id, s) => {
  try {
    const after = await t.update(id, { status: s });
    seen.push(`task ${id} -> ${s}: ${after.status}`);
    return after.status === s;
  } catch (e) {
    seen.push(`task ${id} -> ${s}: refused (${e.message})`);
    return false;
  }
};
const started = await status(task, "in_progress");
const completed = await status(task, "completed");
const reopened = await status(task, "pending");
seen.push(`blocker ${blocker} is ${(await t.get(blocker)).status}`);
console.error(seen.join("\n"));
done(started && completed && reopened, `task ${task} blocked by pending ${blocker}: ${seen.join("; ")}`);
