// A controller of one team, driven line by line on stdin, for a reproduction that interleaves it
// with the real Claude Code: `init`, `create SUBJECT`, `get ID`, `list`; each answered with one
// JSON line on stdout. Nothing but the package (CCC_PACKAGE) and node's own modules.
import readline from "node:readline";
import { ClaudeCodeController, quiet } from "./_pkg.mjs";

const team = process.argv[2] ?? "team";
let ctrl;
for await (const line of readline.createInterface({ input: process.stdin })) {
  const [cmd, ...rest] = line.split(" ");
  let out;
  try {
    if (cmd === "init") {
      ctrl = new ClaudeCodeController({ teamName: team, logger: quiet });
      await ctrl.init();
      out = { ok: true };
    } else if (cmd === "create") {
      out = { ok: true, id: await ctrl.createTask({ subject: rest.join(" "), description: "" }) };
    } else if (cmd === "get") {
      out = { ok: true, task: await ctrl.tasks.get(rest[0]) };
    } else if (cmd === "list") {
      out = { ok: true, tasks: (await ctrl.tasks.list()).map((t) => [t.id, t.subject]) };
    } else {
      out = { ok: false, error: `unknown command ${cmd}` };
    }
  } catch (e) {
    out = { ok: false, error: `${e.name}: ${e.message}` };
  }
  console.log(JSON.stringify(out));
}
process.exit(0);
