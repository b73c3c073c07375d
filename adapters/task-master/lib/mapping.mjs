// The pure half of the Task Master adapter: request form checks, the translation between
// taskproof's task (docs/spec.md §1) and Task Master's, and the reading of Task Master's
// tool answers. Nothing here starts a process or touches a file, so `node --test` covers it
// without Task Master running.

export const LIST_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const WIRE_ID = /^(?:0|[1-9][0-9]*)$/;
const MAX_ID = 2n ** 64n - 1n;

// Task Master's manual create (MCP add_task and CLI add-task alike) refuses a task whose
// description is empty, and its reader (get_tasks, get_task) refuses a whole list holding a
// task whose description is only white space. A task created without a description is
// therefore stored with this one, and this exact description reads back as "" (an adapter
// artefact, stated in the README).
export const NO_DESCRIPTION = "(no description)";

/** A request that fails with one of the error kinds of docs/spec.md §2. */
export class Failure extends Error {
  constructor(kind, message) {
    super(message);
    this.kind = kind;
  }
}

const invalid = (field, message) => new Failure("invalid", `${field}: ${message}`);

export function typeName(v) {
  if (v === null || v === undefined) return "null";
  if (Array.isArray(v)) return "an array";
  switch (typeof v) {
    case "boolean":
      return "a boolean";
    case "number":
      return "a number";
    case "string":
      return "a string";
    default:
      return "an object";
  }
}

const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

/** A wire id (decimal digits, no leading zero, at most 2^64-1), kept as its text. */
export function wireId(v, field) {
  if (typeof v !== "string") throw invalid(field, `expected an id string, got ${typeName(v)}`);
  if (!WIRE_ID.test(v) || BigInt(v) > MAX_ID) {
    throw invalid(field, `expected an id of decimal digits without a leading zero, got ${JSON.stringify(v)}`);
  }
  return v;
}

export function wireIds(v, field) {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw invalid(field, `expected an array of id strings, got ${typeName(v)}`);
  const out = [];
  v.forEach((item, i) => {
    const id = wireId(item, `${field}[${i}]`);
    if (!out.includes(id)) out.push(id);
  });
  return out;
}

function listName(req) {
  if (!("list" in req)) throw invalid("list", "missing");
  const v = req.list;
  if (typeof v !== "string" || !LIST_NAME.test(v)) {
    throw invalid("list", `expected 1 to 64 characters of [A-Za-z0-9_-], got ${JSON.stringify(v)}`);
  }
  return v;
}

function requiredId(req) {
  if (!("id" in req)) throw invalid("id", "missing");
  return wireId(req.id, "id");
}

function stringField(obj, key, field, nullable) {
  const v = obj[key];
  if (v === undefined || v === null) {
    if (key in obj && !nullable) throw invalid(field, "cannot be null");
    return undefined;
  }
  if (typeof v !== "string") throw invalid(field, `expected a string, got ${typeName(v)}`);
  return v;
}

function denyUnknown(obj, known, prefix) {
  for (const k of Object.keys(obj)) {
    if (!known.includes(k)) throw invalid(`${prefix}.${k}`, `unknown field; expected one of ${known.join(", ")}`);
  }
}

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

function metadataField(obj, field) {
  const v = obj.metadata;
  if (v === undefined) return undefined;
  if (v !== null && !isObject(v)) throw invalid(field, `expected an object or null, got ${typeName(v)}`);
  return v;
}

/**
 * Checks one decoded request's form and returns it as a plan: `{op, list, id, …}` with the
 * parts the adapter will hand to Task Master. Throws Failure("invalid") for a malformed
 * request and Failure("unsupported") for a field Task Master has no non-AI way to set.
 * `unsupportedAfterLookup` lists fields refused only once the task is known to exist.
 */
export function parseRequest(req) {
  if (!isObject(req)) throw invalid("request", `expected an object, got ${typeName(req)}`);
  const op = req.op;
  if (!("op" in req)) throw invalid("op", "missing");
  if (typeof op !== "string" || !(op in FIELDS)) {
    throw invalid("op", `expected one of ${Object.keys(FIELDS).join(", ")}, got ${JSON.stringify(op)}`);
  }
  for (const k of Object.keys(req)) {
    if (!FIELDS[op].includes(k)) throw invalid(k, `unknown field for ${op}; expected ${FIELDS[op].join(", ")}`);
  }
  if (op === "hello") return { op };
  const list = listName(req);
  if (op === "list") return { op, list };
  if (op === "create") return { op, list, ...parseNew(req) };
  const id = requiredId(req);
  if (op === "get" || op === "delete") return { op, list, id };
  if (op === "claim") {
    if (typeof req.owner !== "string" || req.owner === "") throw invalid("owner", "expected a non-empty string");
    return { op, list, id };
  }
  return { op, list, id, ...parsePatch(req) };
}

function parseNew(req) {
  if (!("task" in req)) throw invalid("task", "missing");
  const t = req.task;
  if (!isObject(t)) throw invalid("task", `expected an object, got ${typeName(t)}`);
  denyUnknown(t, NEW_FIELDS, "task");
  if (!("subject" in t)) throw invalid("task.subject", "missing");
  if (typeof t.subject !== "string") throw invalid("task.subject", `expected a string, got ${typeName(t.subject)}`);
  const description = stringField(t, "description", "task.description", true) ?? "";
  const blockedBy = wireIds(t.blockedBy, "task.blockedBy");
  const blocks = wireIds(t.blocks, "task.blocks");
  const metadata = metadataField(t, "task.metadata");
  for (const key of ["owner", "activeForm"]) {
    if (stringField(t, key, `task.${key}`, true)) {
      throw new Failure("unsupported", `task.${key}: Task Master's tasks have no ${key}`);
    }
  }
  return {
    subject: t.subject,
    description,
    blockedBy,
    blocks,
    metadata: metadata && Object.keys(metadata).length > 0 ? metadata : undefined,
  };
}

function parsePatch(req) {
  if (!("patch" in req)) throw invalid("patch", "missing");
  const p = req.patch;
  if (!isObject(p)) throw invalid("patch", `expected an object, got ${typeName(p)}`);
  denyUnknown(p, PATCH_FIELDS, "patch");
  const unsupported = [];
  for (const key of ["subject", "description"]) {
    if (stringField(p, key, `patch.${key}`, false) !== undefined) {
      unsupported.push(`patch.${key}: Task Master changes a task's ${key === "subject" ? "title" : key} only through its AI (update_task with a prompt)`);
    }
  }
  for (const key of ["owner", "activeForm"]) {
    if (stringField(p, key, `patch.${key}`, true)) unsupported.push(`patch.${key}: Task Master's tasks have no ${key}`);
  }
  const status = stringField(p, "status", "patch.status", false);
  const metadata = metadataField(p, "patch.metadata");
  const plan = {
    status,
    metadata: metadata && Object.keys(metadata).length > 0 ? metadata : undefined,
    // `metadata: null` or `{}` asks for no metadata at all; Task Master only merges.
    clearMetadata: metadata === null || (isObject(metadata) && Object.keys(metadata).length === 0),
    removeBlockedBy: wireIds(p.removeBlockedBy, "patch.removeBlockedBy"),
    removeBlocks: wireIds(p.removeBlocks, "patch.removeBlocks"),
    addBlockedBy: wireIds(p.addBlockedBy, "patch.addBlockedBy"),
    addBlocks: wireIds(p.addBlocks, "patch.addBlocks"),
    unsupportedAfterLookup: unsupported,
  };
  return plan;
}

// Task Master's statuses: pending, in-progress, done, review, deferred, cancelled, blocked.
const TO_TM = { pending: "pending", in_progress: "in-progress", completed: "done" };
const FROM_TM = { pending: "pending", "in-progress": "in_progress", done: "completed" };

/** The status sent to set_task_status: the three wire statuses translated, any other
 * string passed on as given so that Task Master itself accepts or refuses it. */
export const statusToTaskMaster = (s) => (Object.hasOwn(TO_TM, s) ? TO_TM[s] : s);

/** The wire status of a Task Master status; its four others are shown as Task Master
 * names them, since the wire has no word for them. */
export const statusFromTaskMaster = (s) => (Object.hasOwn(FROM_TM, s) ? FROM_TM[s] : s);

const byNumericId = (a, b) => {
  const x = BigInt(a);
  const y = BigInt(b);
  return x < y ? -1 : x > y ? 1 : 0;
};
const idText = (v) => String(v);
const numericIds = (ids) => [...new Set(ids.map(idText))].filter((s) => WIRE_ID.test(s)).sort(byNumericId);

/**
 * One Task Master task as the wire's task. `all` is every task of the list (get_tasks),
 * from which `blocks` is derived: Task Master stores one side of an edge only (a task's
 * `dependencies`), so "A blocks B" is exactly "B depends on A".
 */
export function toWire(task, all) {
  const id = idText(task.id);
  const out = {};
  out.id = id;
  out.subject = task.title;
  out.description = task.description === NO_DESCRIPTION ? "" : (task.description ?? "");
  out.status = statusFromTaskMaster(task.status);
  out.blockedBy = [...new Set((task.dependencies ?? []).map(idText))].sort(compareLoose);
  out.blocks = numericIds(
    all.filter((t) => (t.dependencies ?? []).some((d) => idText(d) === id)).map((t) => t.id),
  );
  for (const [k, v] of Object.entries(task)) {
    if (!["id", "title", "description", "status", "dependencies"].includes(k)) out[k] = v;
  }
  return out;
}

// Dependencies may hold subtask ids ("3.1") as well as task ids; numbers sort first.
function compareLoose(a, b) {
  const na = WIRE_ID.test(a);
  const nb = WIRE_ID.test(b);
  if (na && nb) return byNumericId(a, b);
  if (na !== nb) return na ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Every task of a get_tasks answer, in ascending id order. */
export function sortTasks(tasks) {
  return [...tasks].sort((a, b) => compareLoose(idText(a.id), idText(b.id)));
}

/**
 * A tool's answer: `{data}` on success, or throws Failure with the kind its error text
 * means. Task Master answers in text: JSON `{data, version, tag}` on success, and
 * `Error: …` lines with `isError` on failure.
 */
export function readToolResult(tool, result) {
  const text = (result?.content ?? [])
    .filter((c) => c.type === "text")
    .map((c) => c.text)
    .join("\n");
  if (result?.isError) throw errorFromText(tool, text);
  let parsed;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Failure("io", `${tool}: Task Master answered text that is not JSON: ${text.slice(0, 200)}`);
  }
  if (!isObject(parsed) || !("data" in parsed)) {
    throw new Failure("io", `${tool}: Task Master's answer has no data: ${text.slice(0, 200)}`);
  }
  return parsed.data;
}

/** The error kind of one of Task Master's error texts. */
export function errorFromText(tool, text) {
  const first = String(text).split("\n")[0].replace(/^Error:\s*/, "");
  const message = `${tool}: ${first}`;
  if (/No tasks found for ID|were not found in tag|Task \S+ not found|not found\.?$/i.test(first)) {
    return new Failure("not_found", message);
  }
  if (/does not exist in tasks\.json/i.test(first)) return new Failure("dangling", message);
  if (/cannot depend on itself|circular dependency/i.test(first)) return new Failure("cycle", message);
  if (/parameter validation failed|are required|Invalid status/i.test(first)) {
    return new Failure("invalid", message);
  }
  return new Failure("io", message);
}

/**
 * The refusal reason of a CLI `add-dependency` run, from its output: the first `[ERROR]`
 * line (Task Master prints its reason there and exits 1).
 */
export function cliRefusal(output) {
  const plain = String(output).replace(/\x1b\[[0-9;]*m/g, "");
  const line = plain.split("\n").find((l) => l.includes("[ERROR]"));
  return line ? line.slice(line.indexOf("[ERROR]") + "[ERROR]".length).trim() : null;
}
