// Edges given to createTask, and a delete of a blocker. Run by edges_one_sided.py.
import { controller, done } from "./_pkg.mjs";

const ctrl = await controller("team");
const t = ctrl.tasks;
const blocker = await ctrl.createTask({ subject: "blocker", description: "" });
const waits = await ctrl.createTask({ subject: "waits", description: "", blockedBy: [blocker] });
const blocksAfterCreate = (await t.get(blocker)).blocks;
const other = await ctrl.createTask({ subject: "other", description: "" });
await t.addBlocks(other, [waits]);
await t.delete(other);
const left = (await t.get(waits)).blockedBy;
let missing = "ok";
try {
  await t.delete("42");
} catch (e) {
  missing = `throws ${e.message}`;
}
const observed = `createTask(blockedBy [${blocker}]) -> task ${blocker}'s blocks ${JSON.stringify(blocksAfterCreate)}; `
  + `after addBlocks(${other}, [${waits}]) and delete(${other}): task ${waits}'s blockedBy ${JSON.stringify(left)}; delete("42") of no task: ${missing}`;
console.error(observed);
done(blocksAfterCreate.length === 0 && left.includes(other) && missing === "ok", observed);
