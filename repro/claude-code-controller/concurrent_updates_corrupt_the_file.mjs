// Two programs updating one task at once through the package, as two agents' controllers of a
// team would (owner and subject, one each, 200 times), and a third reading the file. The package
// writes a task file in place (fs.writeFile: truncate, then write) and reads it back with
// JSON.parse before each update. Run by concurrent_updates_corrupt_the_file.py.
import { fork } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { controller, done, tasksDir } from "./_pkg.mjs";

const TEAM = "team";
const UPDATES = 200;
const ROUNDS = 10;
const role = process.argv[2];
if (role === "writer") {
  // init() lists the folder: it throws while the other writer's write leaves 1.json empty.
  let ctrl;
  for (let tries = 0; !ctrl; tries++) {
    try {
      ctrl = await controller(TEAM);
    } catch (e) {
      if (tries > 1000) throw e;
    }
  }
  const long = process.argv[3] === "long";
  let refused = 0;
  for (let i = 0; i < UPDATES; i++) {
    const change = long ? { subject: `a much longer subject, written by writer one, update ${i} `.repeat(4) } : { owner: `w${i}` };
    try {
      await ctrl.tasks.update("1", change);
    } catch (e) {
      refused++;
    }
  }
  process.send({ refused });
  process.exit(0);
} else {
  const file = path.join(tasksDir(TEAM), "1.json");
  const rounds = [];
  for (let round = 0; round < ROUNDS; round++) {
    fs.rmSync(path.join(tasksDir(TEAM)), { recursive: true, force: true });
    const ctrl = await controller(TEAM);
    await ctrl.createTask({ subject: "shared", description: "" });
    const writers = ["long", "short"].map((kind) => fork(fileURLToPath(import.meta.url), ["writer", kind], { stdio: ["ignore", "ignore", "inherit", "ipc"] }));
    const results = writers.map((w) => new Promise((r) => {
      w.once("message", r);
      w.once("exit", (code) => r({ refused: `all (the writer exited ${code})` }));
    }));
    let reads = 0;
    let torn = 0;
    let finished = false;
    Promise.all(results).then(() => { finished = true; });
    while (!finished) {
      reads++;
      try {
        JSON.parse(fs.readFileSync(file, "utf8"));
      } catch {
        torn++;
      }
      await new Promise((r) => setImmediate(r));
    }
    const refused = (await Promise.all(results)).map((r) => r.refused);
    let final = "parses";
    try {
      JSON.parse(fs.readFileSync(file, "utf8"));
    } catch (e) {
      final = `does not parse (${e.message}; ${fs.statSync(file).size} bytes)`;
    }
    let list = "ok";
    try {
      await ctrl.tasks.list();
    } catch (e) {
      list = `throws ${e.name}`;
    }
    const line = `run ${round + 1}: updates refused ${refused.join(" and ")} of ${UPDATES} each; ${torn} of ${reads} reads of 1.json did not parse; afterwards 1.json ${final}, tasks.list() ${list}`;
    console.error(line);
    rounds.push({ line, corrupt: final !== "parses" });
  }
  const corrupt = rounds.filter((r) => r.corrupt).length;
  done(corrupt > 0, `${corrupt} of ${ROUNDS} runs left 1.json unparsable; ${rounds.map((r) => r.line).join("; ")}`);
}
