#!/usr/bin/env node
// A taskproof adapter for claude-code-controller (npm), over the package's public API only:
// `new ClaudeCodeController({ teamName })`, `init()`, `createTask()`, and its task manager
// (`ctrl.tasks`: get, update, addBlocks, list, delete), as its README and its .d.ts show them.
// No agent is ever spawned: tasks only. The package is not copied or changed; it is imported
// from where npm installed it (see `packageDir` below).
//
//   taskproof run --target claude-code-controller@0.3.0     (installs it and runs this file)
//
// Where things live. The package writes `~/.claude/tasks/{team}/{id}.json` and
// `~/.claude/teams/{team}/` (config.json, inboxes), with `~` from os.homedir(), read once when
// the module loads: it has no option for the folder. So this adapter sets HOME, before it
// imports the package, to TASKPROOF_ROOT/.claude-code-controller/home (a name no list can have),
// whose `.claude/tasks` is a symbolic link to TASKPROOF_ROOT. A list L is the team L, its tasks
// are TASKPROOF_ROOT/L/{id}.json: taskproof's claude-code layout. Everything stays under the
// root. NOTES.md beside this file states the whole mapping and what was measured.
//
// One controller per list and process, made and `init()`ed on the first request that names
// the list, as a program using the package makes one for its team and initialises it once.
// The controller's own log goes to stderr (the package logs through console.info, which is
// stdout, by default).

import fs from "node:fs";
import path from "node:path";
import readline from "node:readline";
import { pathToFileURL } from "node:url";

/** A request that fails with one of the error kinds of SPEC §2. */
export class Failure extends Error {
  constructor(kind, message) {
    super(message);
    this.kind = kind;
  }
}

const invalid = (field, message) => new Failure("invalid", `${field}: ${message}`);

export const PRIVATE_DIR = ".claude-code-controller";

// The package's TaskStatus (its .d.ts): the only values a TypeScript caller can pass.
export const STATUSES = ["pending", "in_progress", "completed"];

const FIELDS = {
  hello: ["op"],
  create: ["op", "list", "task"],
  get: ["op", "list", "id"],
  update: ["op", "list", "id", "patch"],
  delete: ["op", "list", "id"],
  list: ["op", "list"],
  claim: ["op", "list", "id", "owner"],
};
const NEW_FIELDS = ["subject", "description", "activeForm", "owner", "metadata", "blockedBy", "blocks"];
const PATCH_FIELDS = [
  "subject",
  "description",
  "activeForm",
  "status",
  "owner",
  "metadata",
  "addBlockedBy",
  "addBlocks",
  "removeBlockedBy",
  "removeBlocks",
];

export function typeName(v) {
  if (v === null || v === undefined) return "null";
  if (Array.isArray(v)) return "an array";
  return typeof v === "object" ? "an object" : `a ${typeof v}`;
}

const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

function denyUnknown(obj, known, prefix) {
  for (const k of Object.keys(obj)) {
    if (!known.includes(k)) throw invalid(prefix ? `${prefix}.${k}` : k, `unknown field; expected one of ${known.join(", ")}`);
  }
}

// What the adapter checks is what the package's TypeScript signatures check for a TypeScript
// caller: the types. Values are the package's to judge: a list name is any string (its team
// name), an id any string (the package joins both into paths as given), a subject any string.
function str(obj, key, field, { nullable = false, required = false } = {}) {
  const v = obj[key];
  if (v === undefined || v === null) {
    if (v === null && !nullable) throw invalid(field, "cannot be null");
    if (required) throw invalid(field, "missing");
    return v === null ? null : undefined;
  }
  if (typeof v !== "string") throw invalid(field, `expected a string, got ${typeName(v)}`);
  return v;
}

function ids(obj, key, field) {
  const v = obj[key];
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v)) throw invalid(field, `expected an array of id strings, got ${typeName(v)}`);
  v.forEach((item, i) => {
    if (typeof item !== "string") throw invalid(`${field}[${i}]`, `expected an id string, got ${typeName(item)}`);
  });
  return [...v];
}

function metadata(obj, field) {
  const v = obj.metadata;
  if (v === undefined) return undefined;
  if (v !== null && !isObject(v)) throw invalid(field, `expected an object or null, got ${typeName(v)}`);
  return v;
}

/** Checks a request's form and returns what to do: `{op, list, id, task, patch}`. */
export function parseRequest(req) {
  if (!isObject(req)) throw invalid("request", `expected a JSON object, got ${typeName(req)}`);
  const op = req.op;
  if (typeof op !== "string" || !(op in FIELDS)) {
    throw invalid("op", `expected one of ${Object.keys(FIELDS).join(", ")}, got ${JSON.stringify(op)}`);
  }
  denyUnknown(req, FIELDS[op]);
  if (op === "hello") return { op };
  const plan = { op, list: str(req, "list", "list", { required: true }) };
  if (op === "get" || op === "update" || op === "delete" || op === "claim") {
    plan.id = str(req, "id", "id", { required: true });
  }
  if (op === "create") {
    if (!isObject(req.task)) throw invalid("task", `expected an object, got ${typeName(req.task)}`);
    const t = req.task;
    denyUnknown(t, NEW_FIELDS, "task");
    plan.task = {
      subject: str(t, "subject", "task.subject", { required: true }),
      description: str(t, "description", "task.description", { nullable: true }) ?? undefined,
      activeForm: str(t, "activeForm", "task.activeForm", { nullable: true }) ?? undefined,
      owner: str(t, "owner", "task.owner", { nullable: true }) ?? undefined,
      metadata: metadata(t, "task.metadata") ?? undefined,
      blocks: ids(t, "blocks", "task.blocks"),
      blockedBy: ids(t, "blockedBy", "task.blockedBy"),
    };
  }
  if (op === "update") {
    if (!isObject(req.patch)) throw invalid("patch", `expected an object, got ${typeName(req.patch)}`);
    const p = req.patch;
    denyUnknown(p, PATCH_FIELDS, "patch");
    const status = str(p, "status", "patch.status");
    // A status word outside the three is judged after the task is found (the contract's
    // order of checks: a missing task is not_found whatever its patch says), so it is kept
    // with the plan and raised by handle() once the task is read.
    const badStatus =
      status !== undefined && !STATUSES.includes(status)
        ? invalid("patch.status", `expected one of ${STATUSES.join(", ")} (the package's TaskStatus), got ${JSON.stringify(status)}`)
        : undefined;
    plan.patch = {
      badStatus,
      subject: str(p, "subject", "patch.subject"),
      description: str(p, "description", "patch.description"),
      activeForm: str(p, "activeForm", "patch.activeForm", { nullable: true }),
      status,
      owner: str(p, "owner", "patch.owner", { nullable: true }),
      metadata: metadata(p, "patch.metadata"),
      addBlockedBy: ids(p, "addBlockedBy", "patch.addBlockedBy"),
      addBlocks: ids(p, "addBlocks", "patch.addBlocks"),
      removes: ["removeBlockedBy", "removeBlocks"].filter((k) => p[k] !== undefined && p[k] !== null),
    };
    for (const k of ["removeBlockedBy", "removeBlocks"]) ids(p, k, `patch.${k}`);
  }
  if (op === "claim") str(req, "owner", "owner", { required: true });
  return plan;
}

/** The fields of one `tasks.update(id, updates)` call for a patch, or null when the patch
 * changes no field (only edges, or nothing). `null` on the wire removes activeForm, owner
 * or metadata: the package's update is Object.assign, so `undefined` drops the field when
 * the task is written. `metadata` is merged key by key into `current` (the task as read just
 * before), since the package's update replaces the whole object. */
export function fieldUpdates(patch, current) {
  const updates = {};
  for (const k of ["subject", "description", "activeForm", "status", "owner"]) {
    if (patch[k] === null) updates[k] = undefined;
    else if (patch[k] !== undefined) updates[k] = patch[k];
  }
  if (patch.metadata === null) updates.metadata = undefined;
  else if (patch.metadata !== undefined) updates.metadata = mergeMetadata(current?.metadata, patch.metadata);
  return Object.keys(updates).length > 0 ? updates : null;
}

/** SPEC §2's metadata patch: keys merged into the stored object, a key set to null removed. */
export function mergeMetadata(stored, patch) {
  const out = isObject(stored) ? { ...stored } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = v;
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/** The error kind of an exception the package threw. `id` is the task the request names:
 * the package's "Task #N not found" about another task (an edge's other end) is `dangling`. */
export function failureOf(e, id) {
  if (e instanceof Failure) return e;
  const message = String(e?.message ?? e);
  const notFound = /^Task #(.*) not found$/s.exec(message);
  if (notFound) {
    return notFound[1] === id || id === undefined
      ? new Failure("not_found", message)
      : new Failure("dangling", message);
  }
  if (e instanceof SyntaxError) return new Failure("corrupt", `a task file does not parse: ${message}`);
  if (e?.code === "EISDIR" || e?.code === "ELOOP") return new Failure("corrupt", message);
  return new Failure("io", message);
}

/** The package folder: TASKPROOF_CONTROLLER_PACKAGE, else node_modules/claude-code-controller
 * beside this file (where taskproof's target claude-code-controller@VERSION installs it and
 * writes this file). */
export function packageDir(here, env = process.env) {
  return env.TASKPROOF_CONTROLLER_PACKAGE || path.join(here, "node_modules", "claude-code-controller");
}

/** Makes HOME for the package: ROOT/.claude-code-controller/home, whose .claude/tasks links
 * to ROOT. Other adapter processes on the same root may be doing the same at once. */
export function prepareHome(root) {
  const home = path.join(root, PRIVATE_DIR, "home");
  const claude = path.join(home, ".claude");
  fs.mkdirSync(claude, { recursive: true });
  const link = path.join(claude, "tasks");
  try {
    fs.symlinkSync(root, link);
  } catch (e) {
    if (e.code !== "EEXIST") throw e;
    if (fs.realpathSync(link) !== fs.realpathSync(root)) {
      throw new Error(`${link} exists and is not a link to ${root}`);
    }
  }
  return home;
}

class Store {
  constructor(mod, root, log) {
    this.mod = mod;
    this.root = root;
    this.log = log;
    this.controllers = new Map();
  }

  /** The list's controller, initialised on first use. A failed init() (it reads every task
   * file of the list) is the request's failure, and the next request tries again. */
  async controller(list) {
    let ctrl = this.controllers.get(list);
    if (ctrl) return ctrl;
    ctrl = new this.mod.ClaudeCodeController({ teamName: list, cwd: this.root, logger: this.log });
    await ctrl.init();
    this.controllers.set(list, ctrl);
    return ctrl;
  }

  async create({ list, task }) {
    const ctrl = await this.controller(list);
    const id = await ctrl.createTask({ ...task, description: task.description ?? "" });
    return ctrl.tasks.get(id);
  }

  async get({ list, id }) {
    return (await this.controller(list)).tasks.get(id);
  }

  async update({ list, id, patch }) {
    if (patch.removes.length > 0) {
      throw new Failure(
        "unsupported",
        `${patch.removes.join(", ")}: the package has no call that removes a dependency (its update replaces a task's blocks or blockedBy arrays, on that task only)`,
      );
    }
    const ctrl = await this.controller(list);
    const tasks = ctrl.tasks;
    // metadata is merged by the adapter, from the task as read here (the package's update
    // replaces the whole object); every other field is handed to update() as given.
    const current = patch.metadata ? await tasks.get(id) : undefined;
    const updates = fieldUpdates(patch, current);
    let task = updates ? await tasks.update(id, updates) : await tasks.get(id);
    let edges = false;
    for (const blocker of patch.addBlockedBy ?? []) {
      await tasks.addBlocks(blocker, [id]);
      edges = true;
    }
    if (patch.addBlocks?.length) {
      await tasks.addBlocks(id, patch.addBlocks);
      edges = true;
    }
    if (edges) task = await tasks.get(id);
    return task;
  }

  async remove({ list, id }) {
    await (await this.controller(list)).tasks.delete(id);
  }

  async list({ list }) {
    return (await this.controller(list)).tasks.list();
  }
}

export function hello(version) {
  return {
    protocol: 2,
    name: "claude-code-controller",
    version,
    layout: "claude-code",
    // The optional parts the package has (SPEC §2, "Optional parts"): delete, dependencies
    // (added mirrored by addBlocks, given at creation), metadata, owner, activeForm, one team
    // per list. No claim (assignTask sets an owner whatever the task's state) and no call
    // that removes a dependency.
    features: ["delete", "edges", "edges_at_create", "metadata", "owner", "active_form", "lists"],
    mapping: {
      read_modify_write: "update with patch.metadata",
      calls_apart: "update with patch.addBlockedBy; update with patch.addBlocks",
    },
  };
}

async function handle(store, version, plan) {
  switch (plan.op) {
    case "hello":
      return hello(version);
    case "create":
      return { task: await store.create(plan) };
    case "get":
      return { task: await store.get(plan) };
    case "update":
      if (plan.patch.badStatus) {
        await store.get(plan);
        throw plan.patch.badStatus;
      }
      return { task: await store.update(plan) };
    case "delete":
      await store.remove(plan);
      return {};
    case "list":
      return { tasks: await store.list(plan), corrupt: [] };
    default:
      throw new Failure("unsupported", "the package has no claim (assignTask sets an owner whatever the task's owner or status)");
  }
}

export async function answer(store, version, line) {
  let plan;
  try {
    let req;
    try {
      req = JSON.parse(line);
    } catch (e) {
      throw new Failure("invalid", `request: not valid JSON: ${e.message}`);
    }
    plan = parseRequest(req);
    return { ok: true, ...(await handle(store, version, plan)) };
  } catch (e) {
    const f = failureOf(e, plan?.id);
    if (f.kind === "io" && !(e instanceof Failure)) store?.log.error(e?.stack ?? String(e));
    return { ok: false, error: { kind: f.kind, message: f.message } };
  }
}

/** JSON on one line, everything outside ASCII escaped (a lone surrogate cannot be UTF-8). */
export function line(value) {
  return JSON.stringify(value).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

async function main() {
  const here = path.dirname(new URL(import.meta.url).pathname);
  const say = (...parts) => process.stderr.write(`claude-code-controller adapter: ${parts.join(" ")}\n`);
  const root = process.env.TASKPROOF_ROOT;
  if (!root) {
    say("TASKPROOF_ROOT is not set");
    process.exit(2);
  }
  const pkg = packageDir(here);
  if (!fs.existsSync(path.join(pkg, "package.json"))) {
    say(`failed to find the package at ${pkg}: set TASKPROOF_CONTROLLER_PACKAGE to the installed package's folder (taskproof run --target claude-code-controller@VERSION installs it and runs this adapter beside it)`);
    process.exit(2);
  }
  fs.mkdirSync(root, { recursive: true });
  const absRoot = fs.realpathSync(root);
  // Before the import: the package reads os.homedir() when its module loads.
  process.env.HOME = prepareHome(absRoot);
  // Nothing but protocol lines on stdout.
  console.log = console.info = console.debug = (...a) => say(a.join(" "));
  const version = JSON.parse(fs.readFileSync(path.join(pkg, "package.json"), "utf8")).version;
  const mod = await import(pathToFileURL(path.join(pkg, "dist", "index.js")).href);
  const log = {
    debug: () => {},
    info: () => {},
    warn: (...a) => say("[warn]", ...a),
    error: (...a) => say("[error]", ...a),
  };
  const store = new Store(mod, absRoot, log);
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const l of lines) {
    const response = await answer(store, version, l);
    await new Promise((resolve) => process.stdout.write(`${line(response)}\n`, resolve));
  }
  // No shutdown(): it deletes the team's task folder. The controllers' inbox pollers keep
  // the event loop alive, so the process ends here.
  process.exit(0);
}

if (process.argv[1] && import.meta.url === pathToFileURL(fs.realpathSync(process.argv[1])).href) {
  main().catch((e) => {
    process.stderr.write(`claude-code-controller adapter: ${e?.stack ?? e}\n`);
    process.exit(1);
  });
}
