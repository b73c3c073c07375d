//! `taskproof check --stdin` as hooks inside the real Claude Code (issue 14, part 3).
//!
//! Each test runs a published Claude Code, unmodified, through the `claude-code@VERSION`
//! target with the settings snippet of docs/hooks/settings.json written as the session's
//! `$CLAUDE_CONFIG_DIR/settings.json` (all of it, or the entry of the one event a test is
//! about), and the `taskproof` binary of this build first on the CLI's `PATH`, so that the
//! snippet's bare `taskproof check --stdin` is this build. What is asserted is what Claude Code
//! itself did: the text of the tool result it sent to the scripted model (which names the
//! hook that refused), and the task files it left on disk.
//!
//! The version is `TASKPROOF_TEST_CLAUDE_CODE_HOOKS` (default 2.1.112, which has all three
//! events: `PreToolUse`, `TaskCompleted` since 2.1.33 and `TaskCreated` since 2.1.84). These
//! tests need node and npm and the version in the cache (.ci/run fills it); without them
//! they are skipped, each naming what is missing (under CI they fail instead).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use taskproof_claude_code::{ClaudeCode, ClaudeCodeSession, Extra};
use taskproof_session::{Session, SessionOptions};

/// The settings the README and docs/check.md show: the one source of truth.
const SNIPPET: &str = include_str!("../docs/hooks/settings.json");

fn version() -> String {
    std::env::var("TASKPROOF_TEST_CLAUDE_CODE_HOOKS").unwrap_or_else(|_| "2.1.112".into())
}

/// The first version with each hook event the snippet names, per Claude Code's changelog.
const SINCE: [(&str, (u64, u64, u64)); 4] = [
    ("PreToolUse", (1, 0, 0)),
    ("PostToolUse", (1, 0, 0)),
    ("TaskCompleted", (2, 1, 33)),
    ("TaskCreated", (2, 1, 84)),
];

fn numbers(version: &str) -> (u64, u64, u64) {
    let mut p = version.split('.').map(|n| n.parse::<u64>().unwrap_or(0));
    let mut next = || p.next().unwrap_or(0);
    (next(), next(), next())
}

fn has_event(version: &str, event: &str) -> bool {
    let since = SINCE
        .iter()
        .find(|(e, _)| *e == event)
        .expect("a known event");
    numbers(version) >= since.1
}

/// Installs the version (a no-op when the cache has it); `None` without node and npm (the
/// test is skipped, or fails under CI: tests/util.rs `require`).
fn prepared() -> Option<ClaudeCode> {
    prepared_version(&version())
}

/// Installs `version` (a no-op when the cache has it); `None` without node and npm, as
/// [`prepared`]. tests/claude_code_restore.rs uses it too.
pub(crate) fn prepared_version(version: &str) -> Option<ClaudeCode> {
    crate::util::require(&[crate::util::Tool::Npm]);
    let cc = ClaudeCode::parse(version).expect("a version number");
    cc.prepare().expect("install Claude Code with npm");
    Some(cc)
}

/// The snippet as docs/check.md tells a user of `version` to install it: without the
/// entries of events the version does not know (a version before 2.1.84 skips the whole
/// settings file for a `TaskCreated` key; 2.1.17 does, measured).
pub(crate) fn snippet_for(version: &str) -> Value {
    let mut v = snippet();
    let hooks = v["hooks"].as_object_mut().expect("hooks");
    hooks.retain(|event, _| has_event(version, event));
    v
}

/// The whole snippet.
fn snippet() -> Value {
    let v: Value = serde_json::from_str(SNIPPET).expect("docs/hooks/settings.json is JSON");
    assert!(v["hooks"].is_object(), "docs/hooks/settings.json has hooks");
    v
}

/// The snippet's entry for one event, alone: what a test of that event installs, so that
/// no other event's hook refuses first.
fn only(event: &str) -> Value {
    assert!(
        has_event(&version(), event),
        "Claude Code {} has no {event} hook event; set TASKPROOF_TEST_CLAUDE_CODE_HOOKS to a \
         version that has it (2.1.112 has all three)",
        version()
    );
    let entry = snippet()["hooks"][event].clone();
    assert!(
        entry.is_array(),
        "docs/hooks/settings.json has no {event} entry"
    );
    json!({"hooks": {event: entry}})
}

/// The folder of the `taskproof` binary this build made.
pub(crate) fn bin_dir() -> PathBuf {
    let exe = Path::new(env!("CARGO_BIN_EXE_taskproof"));
    assert!(exe.is_file(), "{} was not built", exe.display());
    exe.parent().expect("a folder").to_path_buf()
}

fn open(cc: &ClaudeCode, root: &Path, settings: Option<Value>) -> ClaudeCodeSession {
    let options = SessionOptions {
        timeout: Duration::from_secs(60),
        start_timeout: Duration::from_secs(120),
        ..SessionOptions::default()
    };
    let extra = Extra {
        settings,
        path: vec![bin_dir()],
    };
    ClaudeCodeSession::open_with(cc, root, options, &extra)
        .unwrap_or_else(|(e, err)| panic!("open: {e}\n{err}"))
}

fn answer(s: &mut ClaudeCodeSession, request: Value) -> Value {
    s.call(&request)
        .unwrap_or_else(|e| panic!("{request}: {e}\n{}", s.stderr()))
}

fn ok(s: &mut ClaudeCodeSession, request: Value) -> Value {
    let a = answer(s, request.clone());
    assert_eq!(a["ok"], true, "{request} -> {a}\n{}", s.stderr());
    a
}

/// The answer of a request Claude Code refused: an error of `kind`, whose message is the
/// tool result naming `hook` and carrying taskproof's reason.
fn refused(s: &mut ClaudeCodeSession, request: Value, kind: &str, hook: &str) -> String {
    let a = answer(s, request.clone());
    assert_eq!(a["ok"], false, "{request} -> {a}\n{}", s.stderr());
    let message = a["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        message.contains(hook) && message.contains("taskproof: this change would leave"),
        "{request}: the tool result does not say the {hook} hook refused: {a}\n{}",
        s.stderr()
    );
    assert_eq!(a["error"]["kind"], kind, "{request} -> {a}");
    message
}

/// Every file of a list folder, by name, with its bytes.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            out.insert(
                entry.file_name().to_string_lossy().into_owned(),
                std::fs::read(entry.path()).unwrap(),
            );
        }
    }
    out
}

fn task_file(root: &Path, id: &str) -> Value {
    let path = root.join("l").join(format!("{id}.json"));
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

#[test]
fn the_documented_snippet_is_the_file_these_tests_install() {
    let docs = include_str!("../docs/check.md");
    assert!(
        docs.contains(&format!("```json\n{SNIPPET}```")),
        "docs/check.md must show docs/hooks/settings.json verbatim in a json block"
    );
    let hooks = snippet()["hooks"].clone();
    for (event, _) in SINCE {
        assert_eq!(
            hooks[event][0]["hooks"][0]["command"], "taskproof check --stdin",
            "{hooks}"
        );
    }
    assert_eq!(hooks.as_object().map(|h| h.len()), Some(SINCE.len()));
    assert!(
        snippet_for("2.1.17")["hooks"]
            .as_object()
            .is_some_and(|h| h.keys().eq(["PreToolUse", "PostToolUse"])),
    );
}

#[test]
#[cfg_attr(not(taskproof_has_npm), ignore = "needs node and npm on PATH")]
fn claude_code_refuses_a_task_update_that_would_close_a_cycle() {
    let Some(cc) = prepared() else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let mut s = open(&cc, root.path(), Some(snippet_for(&version())));
    // 1 blocks 2, written by the CLI's own tools with the hook allowing each step.
    ok(
        &mut s,
        json!({"op": "create", "list": "l", "task": {"subject": "a"}}),
    );
    ok(
        &mut s,
        json!({"op": "create", "list": "l", "task": {"subject": "b", "blockedBy": ["1"]}}),
    );
    let dir = root.path().join("l");
    let before = files(&dir);
    let message = refused(
        &mut s,
        json!({"op": "update", "list": "l", "id": "1", "patch": {"addBlockedBy": ["2"]}}),
        "cycle",
        "PreToolUse:TaskUpdate hook",
    );
    assert!(message.contains("2 -> 1 -> 2"), "{message}");
    assert_eq!(files(&dir), before, "a refused TaskUpdate changed a file");

    // The same snippet refuses an empty subject before TaskCreate writes anything.
    refused(
        &mut s,
        json!({"op": "create", "list": "l", "task": {"subject": ""}}),
        "invalid",
        "PreToolUse:TaskCreate hook",
    );
    assert_eq!(files(&dir), before, "a refused TaskCreate changed a file");
    s.close().unwrap();
}

/// A task file as Claude Code 2.1.112 writes one.
fn write_task(dir: &Path, id: &str, subject: &str, blocks: &[&str], blocked_by: &[&str]) {
    let task = json!({"id": id, "subject": subject, "description": "", "status": "pending",
                      "blocks": blocks, "blockedBy": blocked_by});
    std::fs::write(dir.join(format!("{id}.json")), format!("{task:#}")).unwrap();
}

#[test]
#[cfg_attr(not(taskproof_has_npm), ignore = "needs node and npm on PATH")]
fn a_harmless_update_on_a_list_that_already_holds_a_cycle_goes_through() {
    let Some(cc) = prepared() else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("l");
    std::fs::create_dir(&dir).unwrap();
    // The cycle 1 <-> 2, on both sides, written before the session.
    write_task(&dir, "1", "a", &["2"], &["2"]);
    write_task(&dir, "2", "b", &["1"], &["1"]);
    std::fs::write(dir.join(".highwatermark"), "2").unwrap();
    let mut s = open(&cc, root.path(), Some(snippet_for(&version())));

    let up = ok(
        &mut s,
        json!({"op": "update", "list": "l", "id": "1", "patch": {"owner": "me"}}),
    );
    assert_eq!(up["task"]["owner"], "me", "{up}");
    let up = ok(
        &mut s,
        json!({"op": "update", "list": "l", "id": "2", "patch": {"description": "clarified"}}),
    );
    assert_eq!(up["task"]["description"], "clarified", "{up}");
    assert_eq!(task_file(root.path(), "1")["owner"], "me");
    assert_eq!(task_file(root.path(), "2")["description"], "clarified");

    // The hook is live in this session: a new cycle (1 -> 3 -> 1) is still refused.
    ok(
        &mut s,
        json!({"op": "create", "list": "l", "task": {"subject": "c", "blocks": ["1"]}}),
    );
    let before = files(&dir);
    refused(
        &mut s,
        json!({"op": "update", "list": "l", "id": "1", "patch": {"addBlocks": ["3"]}}),
        "cycle",
        "PreToolUse:TaskUpdate hook",
    );
    assert_eq!(files(&dir), before, "a refused TaskUpdate changed a file");
    s.close().unwrap();
}

#[test]
#[cfg_attr(not(taskproof_has_npm), ignore = "needs node and npm on PATH")]
fn the_task_completed_hook_leaves_a_task_with_an_open_blocker_not_completed() {
    let Some(cc) = prepared() else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let mut s = open(&cc, root.path(), Some(only("TaskCompleted")));
    ok(
        &mut s,
        json!({"op": "create", "list": "l", "task": {"subject": "a"}}),
    );
    ok(
        &mut s,
        json!({"op": "create", "list": "l", "task": {"subject": "b", "blockedBy": ["1"]}}),
    );
    let dir = root.path().join("l");
    let before = files(&dir);
    refused(
        &mut s,
        json!({"op": "update", "list": "l", "id": "2", "patch": {"status": "completed"}}),
        "blocked",
        "TaskCompleted hook",
    );
    assert_eq!(task_file(root.path(), "2")["status"], "pending");
    assert_eq!(files(&dir), before, "a refused completion changed a file");

    // Once its blocker is completed, the same completion goes through.
    ok(
        &mut s,
        json!({"op": "update", "list": "l", "id": "1", "patch": {"status": "completed"}}),
    );
    let done = ok(
        &mut s,
        json!({"op": "update", "list": "l", "id": "2", "patch": {"status": "completed"}}),
    );
    assert_eq!(done["task"]["status"], "completed", "{done}");
    s.close().unwrap();
}

#[test]
#[cfg_attr(not(taskproof_has_npm), ignore = "needs node and npm on PATH")]
fn the_task_created_hook_rolls_back_a_task_with_an_empty_subject() {
    let Some(cc) = prepared() else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("l");

    // Without the hook, the tool itself takes an empty subject.
    let plain_root = tempfile::tempdir().unwrap();
    let mut plain = open(&cc, plain_root.path(), None);
    let made = ok(
        &mut plain,
        json!({"op": "create", "list": "l", "task": {"subject": ""}}),
    );
    assert_eq!(made["task"]["subject"], "", "{made}");
    plain.close().unwrap();

    let mut s = open(&cc, root.path(), Some(only("TaskCreated")));
    ok(
        &mut s,
        json!({"op": "create", "list": "l", "task": {"subject": "a"}}),
    );
    refused(
        &mut s,
        json!({"op": "create", "list": "l", "task": {"subject": ""}}),
        "invalid",
        "TaskCreated hook",
    );
    let tasks: Vec<String> = files(&dir)
        .into_keys()
        .filter(|n| n.ends_with(".json"))
        .collect();
    assert_eq!(tasks, ["1.json"], "the refused task was not rolled back");
    // The rolled-back id stays used (measured on 2.1.112: the next task is 3).
    let next = ok(
        &mut s,
        json!({"op": "create", "list": "l", "task": {"subject": "c"}}),
    );
    assert_eq!(next["task"]["id"], "3", "{next}");
    s.close().unwrap();
}
