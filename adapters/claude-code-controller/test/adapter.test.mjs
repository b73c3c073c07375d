// Tests of the claude-code-controller adapter's own part: request form checks (the types of
// the package's .d.ts, nothing more), the translation of a patch into one update() call, the
// error kinds of the package's exceptions, hello, and the HOME it gives the package. The
// package itself is not loaded here (taskproof's target `claude-code-controller@VERSION`
// runs the adapter against it; tests/controller.rs does that end to end).
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";

import {
  Failure,
  answer,
  failureOf,
  fieldUpdates,
  hello,
  line,
  mergeMetadata,
  packageDir,
  parseRequest,
  prepareHome,
} from "../adapter.mjs";

function kindOf(fn) {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof Failure, `expected a Failure, got ${e}`);
    return e.kind;
  }
  assert.fail("expected a Failure");
}

test("mistyped requests are invalid and name the field", () => {
  assert.equal(kindOf(() => parseRequest([])), "invalid");
  assert.equal(kindOf(() => parseRequest({ op: "frobnicate" })), "invalid");
  assert.equal(kindOf(() => parseRequest({ op: "get", list: "l", id: 1 })), "invalid");
  assert.equal(kindOf(() => parseRequest({ op: "get", list: 7, id: "1" })), "invalid");
  assert.equal(kindOf(() => parseRequest({ op: "get", list: "l" })), "invalid");
  assert.equal(kindOf(() => parseRequest({ op: "create", list: "l", task: { subject: "s", colour: 1 } })), "invalid");
  assert.equal(kindOf(() => parseRequest({ op: "create", list: "l", task: { subject: 5 } })), "invalid");
  assert.equal(kindOf(() => parseRequest({ op: "create", list: "l", task: { subject: "s", blocks: [1] } })), "invalid");
  assert.equal(kindOf(() => parseRequest({ op: "update", list: "l", id: "1", patch: { subject: null } })), "invalid");
  assert.equal(kindOf(() => parseRequest({ op: "update", list: "l", id: "1", patch: { metadata: [1] } })), "invalid");
  // A status outside TaskStatus is kept with the plan, to be judged after the task is found.
  const plan = parseRequest({ op: "update", list: "l", id: "1", patch: { status: "done" } });
  assert.equal(plan.patch.badStatus.kind, "invalid");
  assert.match(plan.patch.badStatus.message, /^patch\.status: /);
});

test("a status outside TaskStatus is invalid for a task that exists and not_found for one that does not", async () => {
  const line = JSON.stringify({ op: "update", list: "l", id: "1", patch: { status: "done" } });
  const store = (exists) => ({
    get: async () => {
      if (!exists) throw new Error("Task #1 not found");
      return { id: "1" };
    },
    update: async () => assert.fail("a bad status reached update()"),
    log: { error() {} },
  });
  assert.equal((await answer(store(false), "0.3.0", line)).error.kind, "not_found");
  const there = await answer(store(true), "0.3.0", line);
  assert.equal(there.error.kind, "invalid");
  assert.match(there.error.message, /^patch\.status: /);
});

test("values the package's types allow are passed on unchecked, for the package to judge", () => {
  // Any string is a team name and an id for the package; an empty subject is a string.
  assert.equal(parseRequest({ op: "get", list: "../escaped", id: "01" }).list, "../escaped");
  assert.equal(parseRequest({ op: "get", list: "l", id: "01" }).id, "01");
  assert.equal(parseRequest({ op: "create", list: "l", task: { subject: "" } }).task.subject, "");
  assert.deepEqual(parseRequest({ op: "create", list: "l", task: { subject: "s", blocks: ["x"] } }).task.blocks, ["x"]);
});

test("a patch becomes one update() call: null removes, metadata is merged", () => {
  assert.equal(fieldUpdates({ addBlocks: ["2"] }, undefined), null);
  assert.deepEqual(fieldUpdates({ status: "completed", owner: "a" }, undefined), { status: "completed", owner: "a" });
  const removed = fieldUpdates({ owner: null, activeForm: null, metadata: null }, undefined);
  assert.deepEqual(Object.keys(removed).sort(), ["activeForm", "metadata", "owner"]);
  assert.ok(Object.values(removed).every((v) => v === undefined));
  assert.deepEqual(fieldUpdates({ metadata: { b: 2, a: null } }, { metadata: { a: 1, c: 3 } }), { metadata: { c: 3, b: 2 } });
  assert.deepEqual(mergeMetadata(undefined, { k: { deep: [1] } }), { k: { deep: [1] } });
  assert.equal(mergeMetadata({ a: 1 }, { a: null }), undefined);
});

test("the package's exceptions map to error kinds", () => {
  assert.equal(failureOf(new Error("Task #3 not found"), "3").kind, "not_found");
  // Its "not found" about the other end of an edge (addBlocks reads both tasks).
  assert.equal(failureOf(new Error("Task #9 not found"), "3").kind, "dangling");
  assert.equal(failureOf(new SyntaxError("Unexpected token"), "3").kind, "corrupt");
  const eisdir = Object.assign(new Error("EISDIR: illegal operation on a directory"), { code: "EISDIR" });
  assert.equal(failureOf(eisdir, "3").kind, "corrupt");
  assert.equal(failureOf(new Error("EACCES"), "3").kind, "io");
  const f = new Failure("unsupported", "x");
  assert.equal(failureOf(f, "3"), f);
});

test("hello declares the claude-code layout and only the parts the package has", () => {
  const h = hello("0.3.0");
  assert.equal(h.protocol, 2);
  assert.equal(h.layout, "claude-code");
  assert.equal(h.version, "0.3.0");
  for (const part of ["claim", "edge_removal", "session_list"]) assert.ok(!h.features.includes(part), part);
  for (const part of ["delete", "edges", "metadata", "owner", "active_form", "lists"]) assert.ok(h.features.includes(part), part);
  assert.equal(h.mapping.read_modify_write, "update with patch.metadata");
});

test("claim and edge removal answer unsupported, and a bad line keeps the adapter answering", async () => {
  const claim = await answer(null, "0.3.0", JSON.stringify({ op: "claim", list: "l", id: "1", owner: "o" }));
  assert.equal(claim.error.kind, "unsupported");
  const store = { update: () => { throw new Error("not reached"); }, log: { error() {} } };
  const bad = await answer(store, "0.3.0", "{not json");
  assert.deepEqual(bad.error.kind, "invalid");
  // The store's update refuses edge removal before it calls the package.
  const plan = parseRequest({ op: "update", list: "l", id: "1", patch: { removeBlocks: ["2"] } });
  assert.deepEqual(plan.patch.removes, ["removeBlocks"]);
});

test("answers are one ASCII line", () => {
  const text = line({ ok: true, task: { subject: "é\u2028🦀\n" } });
  assert.ok(!text.includes("\n"));
  assert.ok(/^[\x00-\x7e]*$/.test(text));
  assert.deepEqual(JSON.parse(text), { ok: true, task: { subject: "é\u2028🦀\n" } });
});

test("the package's HOME is under the root and its tasks folder is the root", () => {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "ccc-adapter-")));
  try {
    const home = prepareHome(root);
    assert.ok(home.startsWith(root + path.sep));
    assert.equal(fs.realpathSync(path.join(home, ".claude", "tasks")), root);
    // A second process on the same root finds the link made.
    assert.equal(prepareHome(root), home);
    assert.equal(packageDir("/a", {}), path.join("/a", "node_modules", "claude-code-controller"));
    assert.equal(packageDir("/a", { TASKPROOF_CONTROLLER_PACKAGE: "/p" }), "/p");
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});
