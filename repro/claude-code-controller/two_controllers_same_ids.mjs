// Two programs with a controller each on one team: each counts its next id once, in init(), from
// the task files there, and keeps it in memory. Run by two_controllers_same_ids.py.
import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { controller, done, readTask } from "./_pkg.mjs";

const TEAM = "shared";
if (process.argv[2] === "child") {
  // A second program: init() when told, then one create when told.
  let ctrl;
  process.on("message", async (m) => {
    if (m === "init") ctrl = await controller(TEAM);
    else ctrl && process.send({ id: await ctrl.createTask({ subject: "from B", description: "" }) });
    if (m === "init") process.send({ ready: true });
    if (m === "create") process.exit(0);
  });
} else {
  const b = fork(fileURLToPath(import.meta.url), ["child"], { stdio: ["ignore", "ignore", "inherit", "ipc"] });
  const ask = (m) => new Promise((r) => { b.once("message", r); b.send(m); });
  const a = await controller(TEAM);
  await ask("init");
  const idA = await a.createTask({ subject: "from A", description: "" });
  const { id: idB } = await ask("create");
  const onDisk = readTask(TEAM, idA).subject;
  console.error(`A was given ${idA}, B was given ${idB}; ${idA}.json says ${onDisk}`);
  done(idA === idB && onDisk === "from B", `program A's createTask gave id ${idA}, then program B's gave ${idB}; ${idA}.json now holds ${JSON.stringify(onDisk)}`);
}
