// Dependencies through the package's own calls: createTask's blockedBy and tasks.addBlocks
// (which writes both sides). Run by unchecked_graph.py.
import { controller, done } from "./_pkg.mjs";

const ctrl = await controller("team");
const t = ctrl.tasks;
const a = await ctrl.createTask({ subject: "a", description: "" });
const b = await ctrl.createTask({ subject: "b", description: "" });
const seen = [];
const attempt = async (what, fn) => {
  try {
    await fn();
    seen.push(`${what}: accepted`);
    return true;
  } catch (e) {
    seen.push(`${what}: refused (${e.message})`);
    return false;
  }
};
const cycle = (await attempt(`addBlocks(${a}, [${b}])`, () => t.addBlocks(a, [b])))
  && (await attempt(`addBlocks(${b}, [${a}])`, () => t.addBlocks(b, [a])));
const self = await attempt(`addBlocks(${a}, [${a}])`, () => t.addBlocks(a, [a]));
let dangling = false;
await attempt("createTask with blockedBy [99]", async () => {
  const c = await ctrl.createTask({ subject: "c", description: "", blockedBy: ["99"] });
  dangling = (await t.get(c)).blockedBy.includes("99");
});
const A = await t.get(a);
seen.push(`task ${a}: blocks ${JSON.stringify(A.blocks)}, blockedBy ${JSON.stringify(A.blockedBy)}`);
console.error(seen.join("\n"));
done(cycle && self && dangling, seen.join("; "));
