// Tests of the Task Master adapter's mapping (lib/mapping.mjs): request form checks, what
// is refused as unsupported, the status and task translation, and the reading of Task
// Master's answers. Task Master itself is not started here.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  Failure,
  NO_DESCRIPTION,
  cliRefusal,
  errorFromText,
  parseRequest,
  readToolResult,
  sortTasks,
  statusFromTaskMaster,
  statusToTaskMaster,
  toWire,
} from "../lib/mapping.mjs";

function kindOf(fn) {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof Failure, `expected a Failure, got ${e}`);
    return e.kind;
  }
  assert.fail("expected a Failure");
}

test("malformed requests are invalid and name the field", () => {
  assert.equal(kindOf(() => parseRequest([])), "invalid");
  assert.equal(kindOf(() => parseRequest({ op: "frobnicate" })), "invalid");
  assert.equal(kindOf(() => parseRequest({ op: "get", list: "../x", id: "1" })), "invalid");
  assert.equal(kindOf(() => parseRequest({ op: "get", list: "l", id: "01" })), "invalid");
  assert.equal(kindOf(() => parseRequest({ op: "get", list: "l", id: 1 })), "invalid");
  assert.equal(kindOf(() => parseRequest({ op: "get", list: "l", id: "18446744073709551616" })), "invalid");
  assert.equal(kindOf(() => parseRequest({ op: "create", list: "l", task: { subject: "s", colour: 1 } })), "invalid");
  assert.equal(kindOf(() => parseRequest({ op: "update", list: "l", id: "1", patch: { subject: null } })), "invalid");
  assert.equal(kindOf(() => parseRequest({ op: "update", list: "l", id: "1", patch: { metadata: [1] } })), "invalid");
  try {
    parseRequest({ op: "update", list: "l", id: "1", patch: { addBlocks: ["1", "x"] } });
  } catch (e) {
    assert.match(e.message, /^patch\.addBlocks\[1\]:/);
  }
});

test("fields Task Master cannot set without its AI are unsupported", () => {
  assert.equal(kindOf(() => parseRequest({ op: "create", list: "l", task: { subject: "s", owner: "a" } })), "unsupported");
  const plan = parseRequest({ op: "update", list: "l", id: "1", patch: { subject: "new", status: "completed" } });
  // Refused only after the task was looked up, so a missing task stays not_found.
  assert.equal(plan.unsupportedAfterLookup.length, 1);
  assert.match(plan.unsupportedAfterLookup[0], /^patch\.subject:/);
  // Asking to leave the owner unset is not asking for anything Task Master lacks.
  const empty = parseRequest({ op: "update", list: "l", id: "1", patch: { owner: "", activeForm: null } });
  assert.deepEqual(empty.unsupportedAfterLookup, []);
});

test("a create keeps its parts for the calls that make it", () => {
  const plan = parseRequest({
    op: "create",
    list: "l",
    task: { subject: "s", blockedBy: ["2", "2", "1"], blocks: ["3"], metadata: { a: 1 } },
  });
  assert.deepEqual(plan, {
    op: "create",
    list: "l",
    subject: "s",
    description: "",
    blockedBy: ["2", "1"],
    blocks: ["3"],
    metadata: { a: 1 },
  });
  const patch = parseRequest({ op: "update", list: "l", id: "4", patch: { metadata: null } });
  assert.equal(patch.clearMetadata, true);
  assert.equal(patch.metadata, undefined);
});

test("statuses translate both ways, and Task Master's others pass unchanged", () => {
  assert.equal(statusToTaskMaster("in_progress"), "in-progress");
  assert.equal(statusToTaskMaster("completed"), "done");
  assert.equal(statusToTaskMaster("review"), "review");
  assert.equal(statusFromTaskMaster("done"), "completed");
  assert.equal(statusFromTaskMaster("in-progress"), "in_progress");
  assert.equal(statusFromTaskMaster("deferred"), "deferred");
});

test("a task translates to the wire with blocks derived from the others' dependencies", () => {
  const all = [
    { id: 1, title: "a", description: NO_DESCRIPTION, status: "done", dependencies: [], priority: "medium" },
    { id: 2, title: "b", description: "d", status: "pending", dependencies: ["1", 10], metadata: { k: null } },
    { id: 10, title: "c", description: "e", status: "in-progress", dependencies: [1] },
  ];
  assert.deepEqual(toWire(all[0], all), {
    id: "1",
    subject: "a",
    description: "",
    status: "completed",
    blockedBy: [],
    blocks: ["2", "10"],
    priority: "medium",
  });
  const b = toWire(all[1], all);
  assert.deepEqual(b.blockedBy, ["1", "10"]);
  assert.deepEqual(b.blocks, []);
  assert.deepEqual(b.metadata, { k: null });
  assert.equal(toWire(all[2], all).status, "in_progress");
  assert.deepEqual(
    sortTasks([{ id: "10" }, { id: 2 }, { id: "1" }]).map((t) => String(t.id)),
    ["1", "2", "10"],
  );
});

test("Task Master's answers are read, and its error texts get their kinds", () => {
  const ok = { content: [{ type: "text", text: JSON.stringify({ data: { taskId: 3 }, version: {} }) }] };
  assert.deepEqual(readToolResult("add_task", ok), { taskId: 3 });
  const missing = { isError: true, content: [{ type: "text", text: "Error: No tasks found for ID(s): 9\nVersion: 0.43.1" }] };
  assert.equal(kindOf(() => readToolResult("get_task", missing)), "not_found");
  assert.equal(kindOf(() => readToolResult("get_task", { content: [{ type: "text", text: "hello" }] })), "io");
  assert.equal(errorFromText("remove_task", "Error: The following tasks were not found in tag 'master': 1").kind, "not_found");
  assert.equal(errorFromText("add_dependency", "Dependency target 9 does not exist in tasks.json").kind, "dangling");
  assert.equal(errorFromText("add_dependency", "Task 3 cannot depend on itself.").kind, "cycle");
  assert.equal(
    errorFromText("add_dependency", "Cannot add dependency 2 to task 1 as it would create a circular dependency.").kind,
    "cycle",
  );
  assert.equal(errorFromText("add_task", "Error: Either the prompt parameter or both title and description parameters are required").kind, "invalid");
  assert.equal(errorFromText("set_task_status", "Something else broke").kind, "io");
});

test("the CLI's refusal reason is its [ERROR] line", () => {
  const out = "\u001b[34m[INFO]\u001b[0m Adding dependency 9 to task 2...\n\u001b[31m[ERROR]\u001b[0m Dependency target 9 does not exist in tasks.json\n";
  assert.equal(cliRefusal(out), "Dependency target 9 does not exist in tasks.json");
  assert.equal(cliRefusal("[SUCCESS] Added dependency"), null);
});
