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
//! they fail and say so.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use taskproof::target::claude_code::{ClaudeCode, ClaudeCodeSession, Extra};
use taskproof::target::{Session, SessionOptions};

/// The settings the README and docs/check.md show: the one source of truth.
const SNIPPET: &str = include_str!("../docs/hooks/settings.json");

fn version() -> String {
    std::env::var("TASKPROOF_TEST_CLAUDE_CODE_HOOKS").unwrap_or_else(|_| "2.1.112".into())
}

/// Installs the version (a no-op when the cache has it), failing clearly without npm.
fn prepared() -> ClaudeCode {
    let npm = std::process::Command::new("npm").arg("--version").output();
    assert!(
        npm.is_ok_and(|o| o.status.success()),
        "these tests run the real Claude Code, installed with npm: install node and npm \
         (e.g. `apt-get install -y nodejs npm`; .ci/run does)"
    );
    let cc = ClaudeCode::parse(&version()).expect("a version number");
    cc.prepare().expect("install Claude Code with npm");
    cc
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
    let entry = snippet()["hooks"][event].clone();
    assert!(
        entry.is_array(),
        "docs/hooks/settings.json has no {event} entry"
    );
    json!({"hooks": {event: entry}})
}

/// The folder of the `taskproof` binary this build made.
fn bin_dir() -> PathBuf {
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
fn claude_code_refuses_a_task_update_that_would_close_a_cycle() {
    let cc = prepared();
    let root = tempfile::tempdir().unwrap();
    let mut s = open(&cc, root.path(), Some(snippet()));
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
    assert!(message.contains("cycle"), "{message}");
    assert_eq!(files(&dir), before, "a refused TaskUpdate changed a file");
    eprintln!("{message}\n{}", s.transcript());
    s.close().unwrap();
}
