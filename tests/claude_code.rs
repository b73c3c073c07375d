//! The real Claude Code as a target: one published version, installed with npm into the
//! cache (`.ci/run` fills it first), driven end to end through its own task tools.
//!
//! These tests need node and npm; without them they are skipped, each naming what is
//! missing (under CI, which installs them, they fail instead: tests/util.rs `require`). The version is
//! `TASKPROOF_TEST_CLAUDE_CODE` (default 2.1.112, the fastest to drive: print mode). The
//! tests fail if the CLI's tools did not really run: every `tool_use` of the scripted model
//! must come back as a `tool_result`, and the tasks must be on disk in the root, written by
//! the CLI (with the edge mirrored into the blocker, which only the real `TaskUpdate` does).

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use taskproof_claude_code::{ClaudeCode, ClaudeCodeSession};
use taskproof_race::{Config, Workload};
use taskproof_session::{Session, SessionOptions};
use taskproof_targets::TargetSpec;

fn version() -> String {
    std::env::var("TASKPROOF_TEST_CLAUDE_CODE").unwrap_or_else(|_| "2.1.112".into())
}

/// Installs the version (a no-op when the cache has it); `None` (the test is skipped, or
/// fails under CI) without node and npm.
fn prepared() -> Option<ClaudeCode> {
    crate::util::require(&[crate::util::Tool::Npm]);
    let cc = ClaudeCode::parse(&version()).expect("a version number");
    cc.prepare().expect("install Claude Code with npm");
    Some(cc)
}

fn options() -> SessionOptions {
    SessionOptions {
        timeout: Duration::from_secs(60),
        start_timeout: Duration::from_secs(120),
        ..SessionOptions::default()
    }
}

fn call(s: &mut ClaudeCodeSession, request: Value) -> Value {
    let answer = s
        .call(&request)
        .unwrap_or_else(|e| panic!("{request}: {e}\n{}", s.stderr()));
    assert_eq!(answer["ok"], true, "{request} -> {answer}\n{}", s.stderr());
    answer
}

fn on_disk(root: &Path, list: &str, id: &str) -> Value {
    let path = root.join(list).join(format!("{id}.json"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("the CLI wrote no {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

#[test]
#[cfg_attr(not(taskproof_has_npm), ignore = "needs node and npm on PATH")]
fn the_cli_runs_its_real_tools_for_every_request() {
    let Some(cc) = prepared() else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let mut s = ClaudeCodeSession::open(&cc, root.path(), options())
        .unwrap_or_else(|(e, err)| panic!("open: {e}\n{err}"));
    assert_eq!(s.hello().layout.as_str(), "claude-code");

    let a = call(
        &mut s,
        json!({"op": "create", "list": "l", "task": {"subject": "a"}}),
    );
    assert_eq!(a["task"]["id"], "1");
    let b = call(
        &mut s,
        json!({"op": "create", "list": "l", "task": {"subject": "b", "blockedBy": ["1"]}}),
    );
    assert_eq!(b["task"]["blockedBy"], json!(["1"]));
    let got = call(&mut s, json!({"op": "get", "list": "l", "id": "2"}));
    assert_eq!(got["task"]["subject"], "b");
    let up = call(
        &mut s,
        json!({"op": "update", "list": "l", "id": "1",
               "patch": {"status": "in_progress", "metadata": {"k": 1}}}),
    );
    assert_eq!(up["task"]["status"], "in_progress");
    let list = call(&mut s, json!({"op": "list", "list": "l"}));
    let ids: Vec<&str> = list["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["1", "2"]);
    let missing = s
        .call(&json!({"op": "get", "list": "l", "id": "9"}))
        .unwrap();
    assert_eq!(missing["error"]["kind"], "not_found", "{missing}");

    // Only the real tool accepts an edge to a task that does not exist and drops it without
    // a word (a store written from the spec refuses it as dangling).
    let dangling = call(
        &mut s,
        json!({"op": "update", "list": "l", "id": "2", "patch": {"addBlockedBy": ["999"]}}),
    );
    assert_eq!(dangling["task"]["blockedBy"], json!(["1"]), "{dangling}");

    // create a, create b (TaskCreate + TaskUpdate), get, update, list, get, update.
    let (uses, results) = s.tool_calls();
    assert_eq!((uses, results), (8, 8), "{}", s.transcript());
    // Each answer came from a tool result in the CLI's own words.
    for words in [
        "Task #1 created successfully",
        "Task #2 created successfully",
        "Updated task #2",
        "Updated task #1",
        "Task #2: b",
    ] {
        assert!(
            s.transcript().contains(words),
            "{words}: {}",
            s.transcript()
        );
    }
    // Claude Code's tools take a lock file beside the tasks; nothing in taskproof writes it.
    assert!(
        root.path().join("l").join(".lock").exists(),
        "no l/.lock: the CLI's tools did not write this list"
    );
    assert!(s.transcript().contains("TaskCreate"), "{}", s.transcript());
    // The real TaskUpdate mirrors the edge into the blocker and merges metadata.
    let one = on_disk(root.path(), "l", "1");
    assert_eq!(one["blocks"], json!(["2"]), "{one}");
    assert_eq!(one["metadata"], json!({"k": 1}), "{one}");
    assert_eq!(one["status"], "in_progress");
    assert_eq!(on_disk(root.path(), "l", "2")["blockedBy"], json!(["1"]));
    s.close().unwrap();
}

#[test]
#[cfg_attr(not(taskproof_has_npm), ignore = "needs node and npm on PATH")]
fn a_small_race_runs_against_the_real_cli() {
    let Some(cc) = prepared() else {
        return;
    };
    let cfg = Config {
        target: TargetSpec::from(cc),
        writers: 2,
        ops: 3,
        kill: false,
        seed: 1,
        duration: None,
        fsync: false,
        readers: 1,
        timeout: Duration::from_secs(60),
        profile: taskproof_profile::Profile::Strict,
        settle: Duration::ZERO,
        drive: None,
    };
    let report = taskproof_race::run_all(
        &cfg,
        &taskproof_race::Mix::default(),
        &[Workload::Create],
        1,
        taskproof_race::DEFAULT_LIN_BUDGET,
        None,
        &|_, _| {},
    )
    .expect("the race completes");
    let w = &report.workloads[0];
    assert!(w.errors.is_empty(), "target errors: {:?}", w.errors);
    assert_eq!(w.requests, 6, "{w:?}");
    assert_eq!(w.acknowledged + w.refused + w.unknown, w.requests);
    assert!(w.acknowledged > 0, "{w:?}");
}

/// The reset of a finished list (anthropics/claude-code#38075): the real CLI, in its
/// terminal UI (a scenario that waits plays a user), deletes both task files while the
/// session sits idle, and the failure's witness shows them gone. The shipped scenario waits
/// 7 s; this one 15 s, so that a test machine busy with other tests still sees the 5 s
/// timer fire within the wait.
#[test]
#[cfg_attr(not(taskproof_has_npm), ignore = "needs node and npm on PATH")]
fn a_finished_list_left_idle_is_deleted_and_the_witness_shows_the_files_go() {
    if prepared().is_none() {
        return;
    }
    let dir = crate::util::tempdir();
    let shipped = std::fs::read_to_string(
        crate::util::repo().join("scenarios/nothing-vanishes-finished-list-left-idle.json"),
    )
    .unwrap();
    let mut scenario: Value = serde_json::from_str(&shipped).unwrap();
    scenario["steps"][6]["wait"] = json!(15);
    std::fs::write(
        dir.path().join("idle.json"),
        serde_json::to_string_pretty(&scenario).unwrap(),
    )
    .unwrap();
    let out = crate::util::taskproof_with(&[
        "run",
        dir.path().join("idle.json").to_str().unwrap(),
        "--target",
        &format!("claude-code@{}", version()),
        "--timeout",
        "60",
        "--start-timeout",
        "120",
    ])
    .output()
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    for want in [
        "FAIL nothing-vanishes-finished-list-left-idle",
        "why:      tasks: expected 2 tasks, got 0",
        "s after steps[6] wait 15 s",
        "gone since it:   shared-plan/1.json, shared-plan/2.json",
        "vanished:        shared-plan/1.json: last seen after steps[5]",
    ] {
        assert!(stdout.contains(want), "missing {want:?}:\n{stdout}");
    }
}

/// Issue 23 item 5: Claude Code names a list's folder by turning every UTF-16 unit outside
/// `[A-Za-z0-9_-]` into `-`: a character outside the Basic Multilingual Plane (two units)
/// becomes `--`, and `../x` stays inside the root as `---x`. taskproof's one sanitiser
/// (`layout::claude_code_name`, used by the target and by `check`) is pinned here against
/// the folders the real tool makes.
#[test]
#[cfg_attr(not(taskproof_has_npm), ignore = "needs node and npm on PATH")]
fn the_list_folder_names_are_the_real_tools_and_taskproofs_sanitiser_agrees() {
    let Some(cc) = prepared() else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let mut s = ClaudeCodeSession::open(&cc, root.path(), options())
        .unwrap_or_else(|(e, err)| panic!("open: {e}\n{err}"));
    for (list, folder) in [("plan\u{1F600}", "plan--"), ("../x", "---x")] {
        let a = call(
            &mut s,
            json!({"op": "create", "list": list, "task": {"subject": "a"}}),
        );
        assert_eq!(a["task"]["id"], "1", "{list}");
        assert_eq!(taskproof_core::layout::claude_code_name(list), folder);
        assert_eq!(on_disk(root.path(), folder, "1")["subject"], "a", "{list}");
        // The target finds the folder again through the same function.
        let listed = call(&mut s, json!({"op": "list", "list": list}));
        assert_eq!(listed["tasks"].as_array().unwrap().len(), 1, "{listed}");
    }
    let mut folders: Vec<String> = std::fs::read_dir(root.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    folders.sort();
    assert_eq!(folders, ["---x", "plan--"]);
    assert!(
        !root.path().parent().unwrap().join("x").exists(),
        "../x escaped the root"
    );
    s.close().unwrap();
}
