#!/usr/bin/env node
// A taskproof adapter for Task Master (task-master-ai from npm, the version pinned in
// package.json), driven the way a coding agent drives it: through its MCP server over stdio
// (with the @modelcontextprotocol/sdk client), and through its CLI only where the MCP
// server gives no answer. No AI call is ever made and no key is needed: every operation
// used is one of Task Master's manual (non-AI) paths, and anything that has only an AI path
// answers `unsupported`.
//
//   (cd adapters/task-master && npm ci)
//   taskproof run --target 'cmd:node adapters/task-master/adapter.mjs' --profile strict --timeout 120
//
// Lists are Task Master projects: list L is the project whose root is TASKPROOF_ROOT/L, with
// its tasks in L/.taskmaster/tasks/tasks.json under the default tag `master`. Task Master's
// own HOME and TMPDIR (it writes ~/.taskmaster/ and $TMPDIR/taskmaster-update-cache.json)
// are TASKPROOF_ROOT/.task-master-adapter/{home,tmp}: a name no list can have, so all state
// stays under the root. README.md beside this file states the whole mapping.

import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import readline from "node:readline";
import { fileURLToPath, pathToFileURL } from "node:url";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

import {
  Failure,
  NO_DESCRIPTION,
  cliRefusal,
  errorFromText,
  parseRequest,
  readToolResult,
  sortTasks,
  statusToTaskMaster,
  toWire,
} from "./lib/mapping.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const PACKAGE = path.join(HERE, "node_modules", "task-master-ai");
const MCP_SERVER = path.join(PACKAGE, "dist", "mcp-server.js");
const CLI = path.join(PACKAGE, "dist", "task-master.js");
const EXIT_WITH_PARENT = pathToFileURL(path.join(HERE, "lib", "exit-with-parent.mjs")).href;
const PRIVATE_DIR = ".task-master-adapter";
// Generous: the server takes seconds to start, and much longer on a loaded machine.
const TOOL_TIMEOUT_MS = 300_000;

const log = (...parts) => process.stderr.write(`task-master adapter: ${parts.join(" ")}\n`);

/** The environment Task Master runs in: a private HOME and TMPDIR under the root, all
 * tools loaded, metadata updates allowed (Task Master's own switch for them), and no
 * model keys (none are passed on). */
function taskMasterEnv(root) {
  const home = path.join(root, PRIVATE_DIR, "home");
  const tmp = path.join(root, PRIVATE_DIR, "tmp");
  fs.mkdirSync(home, { recursive: true });
  fs.mkdirSync(tmp, { recursive: true });
  return {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: home,
    TMPDIR: tmp,
    TASK_MASTER_TOOLS: "all",
    TASK_MASTER_ALLOW_METADATA_UPDATES: "true",
    NO_COLOR: "1",
  };
}

/** One Task Master MCP server, restarted when it exits (it does after a refused
 * add_dependency). */
class TaskMaster {
  constructor(root) {
    this.root = root;
    this.env = taskMasterEnv(root);
    this.client = null;
    this.starting = null;
    this.stderrTail = "";
  }

  /** Starts the server unless it runs or is starting; resolves when it answers. */
  ensure() {
    if (this.client) return Promise.resolve();
    if (!this.starting) {
      this.starting = this.start().finally(() => {
        this.starting = null;
      });
    }
    return this.starting;
  }

  async start() {
    const started = Date.now();
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: ["--import", EXIT_WITH_PARENT, MCP_SERVER],
      env: this.env,
      cwd: this.root,
      stderr: "pipe",
    });
    transport.stderr?.on("data", (d) => {
      this.stderrTail = (this.stderrTail + d).slice(-4000);
    });
    const client = new Client({ name: "taskproof-task-master-adapter", version: "0.1.0" });
    transport.onclose = () => {
      if (this.client === client) this.client = null;
    };
    await client.connect(transport, { timeout: TOOL_TIMEOUT_MS });
    this.client = client;
    log(`Task Master's MCP server (pid ${transport.pid}) answered after ${Date.now() - started} ms`);
  }

  async close() {
    const c = this.client;
    this.client = null;
    if (c) await c.close().catch(() => {});
  }

  projectRoot(list) {
    return path.join(this.root, list);
  }

  /** Calls one tool in list `list`'s project; returns its data or throws Failure. A server
   * that exits without answering throws ServerGone, and is started again on next use. */
  async call(list, tool, args) {
    await this.ensure();
    let result;
    try {
      result = await this.client.callTool(
        { name: tool, arguments: { projectRoot: this.projectRoot(list), ...args } },
        undefined,
        { timeout: TOOL_TIMEOUT_MS },
      );
    } catch (e) {
      if (!this.client || /Connection closed|Not connected/i.test(String(e.message))) {
        await this.close();
        throw new ServerGone(tool, e.message);
      }
      // The SDK raises JSON-RPC errors, such as a failed parameter check, as exceptions.
      throw errorFromText(tool, String(e.message).replace(/^MCP error -?\d+:\s*/, ""));
    }
    return readToolResult(tool, result);
  }

  /** The CLI's `add-dependency`, used when the MCP server exited instead of answering:
   * the CLI prints the reason of a refusal, which the server never sends. */
  cliAddDependency(list, id, dependsOn) {
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [CLI, "add-dependency", `--id=${id}`, `--depends-on=${dependsOn}`], {
        cwd: this.projectRoot(list),
        env: this.env,
        stdio: ["ignore", "pipe", "pipe"],
      });
      let output = "";
      child.stdout.on("data", (d) => (output += d));
      child.stderr.on("data", (d) => (output += d));
      child.on("error", reject);
      child.on("close", (code) => resolve({ code, output }));
    });
  }
}

class ServerGone extends Error {
  constructor(tool, why) {
    super(`Task Master's MCP server exited during ${tool} without an answer (${why})`);
    this.tool = tool;
  }
}

/** The protocol's operations on Task Master. */
class Store {
  constructor(root) {
    this.root = root;
    this.tm = new TaskMaster(root);
  }

  /** Whether list `list` was ever written: its project folder exists. A read of a list
   * that was not is answered without asking Task Master, which would make files. */
  written(list) {
    return fs.existsSync(path.join(this.root, list, ".taskmaster", "tasks", "tasks.json"));
  }

  async allTasks(list) {
    if (!this.written(list)) return [];
    const data = await this.tm.call(list, "get_tasks", { withSubtasks: true });
    return data.tasks ?? [];
  }

  async getTask(list, id) {
    if (!this.written(list)) throw new Failure("not_found", `get_task: no task ${id} (the list was never written)`);
    const task = await this.tm.call(list, "get_task", { id });
    const all = await this.allTasks(list);
    return toWire(task, all);
  }

  async addDependency(list, id, dependsOn) {
    try {
      await this.tm.call(list, "add_dependency", { id, dependsOn });
    } catch (e) {
      if (!(e instanceof ServerGone)) throw e;
      // Restart the server while the CLI runs: both take seconds.
      this.tm.ensure().catch(() => {});
      const { code, output } = await this.tm.cliAddDependency(list, id, dependsOn);
      if (code === 0) return;
      const reason = cliRefusal(output);
      if (reason === null) throw new Failure("io", `${e.message}; the CLI's add-dependency exited ${code} without a reason`);
      throw errorFromText("add_dependency", reason);
    }
  }

  async create(plan) {
    fs.mkdirSync(path.join(this.root, plan.list), { recursive: true });
    const args = { title: plan.subject, description: plan.description === "" ? NO_DESCRIPTION : plan.description };
    if (plan.blockedBy.length > 0) args.dependencies = plan.blockedBy.join(",");
    const data = await this.tm.call(plan.list, "add_task", args);
    const id = String(data.taskId);
    // add_task has no `blocks` and no metadata: an agent adds them with the next calls.
    for (const other of plan.blocks) await this.addDependency(plan.list, other, id);
    if (plan.metadata) await this.tm.call(plan.list, "update_task", { id, metadata: JSON.stringify(plan.metadata) });
    return this.getTask(plan.list, id);
  }

  async update(plan) {
    const { list, id } = plan;
    const before = await this.getTask(list, id);
    if (plan.unsupportedAfterLookup.length > 0) throw new Failure("unsupported", plan.unsupportedAfterLookup[0]);
    if (plan.clearMetadata && before.metadata && Object.keys(before.metadata).length > 0) {
      throw new Failure("unsupported", "patch.metadata: Task Master merges metadata and has no way to remove it");
    }
    // The parts in docs/spec.md §3's order, one tool call each: Task Master has no call
    // that changes several parts of a task at once.
    if (plan.metadata) await this.tm.call(list, "update_task", { id, metadata: JSON.stringify(plan.metadata) });
    for (const other of plan.removeBlockedBy) await this.tm.call(list, "remove_dependency", { id, dependsOn: other });
    for (const other of plan.removeBlocks) await this.tm.call(list, "remove_dependency", { id: other, dependsOn: id });
    if (plan.status !== undefined) {
      await this.tm.call(list, "set_task_status", { id, status: statusToTaskMaster(plan.status) });
    }
    for (const other of plan.addBlockedBy) await this.addDependency(list, id, other);
    for (const other of plan.addBlocks) await this.addDependency(list, other, id);
    return this.getTask(list, id);
  }

  async remove(list, id) {
    if (!this.written(list)) throw new Failure("not_found", `remove_task: no task ${id} (the list was never written)`);
    await this.tm.call(list, "remove_task", { id, confirm: true });
  }

  async list(list) {
    const all = await this.allTasks(list);
    return sortTasks(all).map((t) => toWire(t, all));
  }
}

function version() {
  const pkg = JSON.parse(fs.readFileSync(path.join(PACKAGE, "package.json"), "utf8"));
  return `task-master-ai ${pkg.version}`;
}

async function handle(store, req) {
  const plan = parseRequest(req);
  switch (plan.op) {
    case "hello":
      // Answered at once: the server was started with the process and may take longer than
      // the harness's start-up limit on a busy machine; the first request waits for it
      // under the request limit (--timeout) instead.
      // The optional parts of the contract Task Master has (docs/spec.md, "Optional parts"):
      // delete, dependencies (given at creation, removed too), metadata (merged), one
      // project per list; no owner, activeForm or claim.
      return {
        protocol: 2, name: "task-master", version: version(), layout: "opaque",
        features: ["delete", "edges", "metadata", "edge_removal", "edges_at_create", "lists"],
      };
    case "create":
      return { task: await store.create(plan) };
    case "get":
      return { task: await store.getTask(plan.list, plan.id) };
    case "update":
      return { task: await store.update(plan) };
    case "delete":
      await store.remove(plan.list, plan.id);
      return {};
    case "list":
      return { tasks: await store.list(plan.list), corrupt: [] };
    default:
      throw new Failure("unsupported", "Task Master has no claim (next_task suggests a task; nothing marks it taken)");
  }
}

async function answer(store, line) {
  try {
    let req;
    try {
      req = JSON.parse(line);
    } catch (e) {
      throw new Failure("invalid", `request: not valid JSON: ${e.message}`);
    }
    return { ok: true, ...(await handle(store, req)) };
  } catch (e) {
    if (e instanceof Failure) return { ok: false, error: { kind: e.kind, message: e.message } };
    if (e instanceof ServerGone) return { ok: false, error: { kind: "io", message: e.message } };
    log(e?.stack ?? String(e));
    return { ok: false, error: { kind: "io", message: String(e?.message ?? e) } };
  }
}

async function main() {
  const root = process.env.TASKPROOF_ROOT;
  if (!root) {
    log("TASKPROOF_ROOT is not set");
    process.exit(2);
  }
  if (!fs.existsSync(MCP_SERVER)) {
    log(`failed to find ${MCP_SERVER}: run npm ci in ${HERE} first`);
    process.exit(2);
  }
  fs.mkdirSync(root, { recursive: true });
  const store = new Store(path.resolve(root));
  // Start the server now; a failure shows at the first request that needs it.
  store.tm.ensure().catch((e) => log(`failed to start Task Master's MCP server: ${e.message}`));
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of lines) {
    const response = await answer(store, line);
    // JSON.stringify leaves non-ASCII as is; the protocol is UTF-8 lines, which is fine,
    // but lone surrogates cannot be UTF-8, so everything outside ASCII is escaped.
    const text = JSON.stringify(response).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
    await new Promise((resolve) => process.stdout.write(`${text}\n`, resolve));
  }
  await store.tm.close();
  process.exit(0);
}

main().catch((e) => {
  log(e?.stack ?? String(e));
  process.exit(1);
});
