// Ids after a delete, as a program that starts again finds them. Run by
// ids_reused_after_delete.py.
import { controller, done } from "./_pkg.mjs";

const first = await controller("team");
const ids = [];
for (const s of ["one", "two", "three"]) ids.push(await first.createTask({ subject: s, description: "" }));
await first.tasks.delete(ids[2]);
const again = await controller("team");
const next = await again.createTask({ subject: "four", description: "" });
const observed = `created ${ids.join(", ")}, deleted ${ids[2]}; a controller init()ed afterwards created ${next}`;
console.error(observed);
done(next === ids[2], observed);
