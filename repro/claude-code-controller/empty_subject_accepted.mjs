// A task with an empty subject. Run by empty_subject_accepted.py.
import { controller, done, readTask } from "./_pkg.mjs";

const c = await controller("team");
let id, error;
try {
  id = await c.createTask({ subject: "", description: "" });
} catch (e) {
  error = String(e?.message ?? e);
}
const observed = error
  ? `createTask with subject "": threw ${JSON.stringify(error)}`
  : `createTask with subject "": answered id ${JSON.stringify(id)}; its file's subject is ${JSON.stringify(readTask("team", id).subject)}`;
console.error(observed);
done(!error, observed);
