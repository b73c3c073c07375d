//! The hook's journal, `check` naming what vanished, and `check --restore` (issue 42), through
//! the built binary: the hook is fed the events Claude Code hands it, and Claude Code's reset
//! of a finished list is played by removing the task files and rewriting `.highwatermark` as
//! its terminal UI does (measured: it leaves `.lock` and `.highwatermark` holding the highest
//! id; 2.1.17 leaves `.lock` only). tests/claude_code_restore.rs does the same in the real CLI.
//! Here the configuration folder and the helpers every part uses; the journal the hook
//! writes (hook.rs), `check` naming what vanished (vanished.rs), `--restore` (restore.rs) and
//! restore beside writers that rewrite files in place (torn.rs).

mod hook;
mod restore;
mod teams;
mod torn;
mod vanished;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::util::{Tool, require, run_with_stdin, taskproof, tempdir, write};

const LIST: &str = "plan";

/// A configuration folder whose `tasks/plan` the hook finds through `CLAUDE_CODE_TASK_LIST_ID`.
struct Config {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    /// The highest task id the last reset removed.
    highest: std::cell::Cell<u64>,
    /// When the test began, in milliseconds since the epoch: no time it reports is earlier.
    start: u64,
}

impl Config {
    fn new() -> Config {
        let tmp = tempdir();
        let dir = tmp.path().to_path_buf();
        std::fs::create_dir_all(dir.join("tasks").join(LIST)).unwrap();
        Config {
            _tmp: tmp,
            dir,
            highest: Default::default(),
            start: now_ms(),
        }
    }

    fn list(&self) -> PathBuf {
        self.dir.join("tasks").join(LIST)
    }

    fn journal(&self) -> PathBuf {
        self.dir
            .join("tasks")
            .join(".taskproof-journal")
            .join(format!("{LIST}.jsonl"))
    }

    /// Runs the hook on `event` (extra arguments after `--stdin`).
    fn hook(&self, event: &Value, args: &[&str]) -> Output {
        let mut cmd = taskproof();
        cmd.args(["check", "--stdin"])
            .args(args)
            .env("CLAUDE_CONFIG_DIR", &self.dir)
            .env("CLAUDE_CODE_TASK_LIST_ID", LIST)
            .env_remove("HOME");
        let out = run_with_stdin(cmd, event.to_string().as_bytes());
        assert!(
            out.status.code() == Some(0) || out.status.code() == Some(2),
            "the hook failed: {out:?}"
        );
        out
    }

    /// Writes task `id` as Claude Code does (two-space JSON, no newline at the end), then
    /// runs the hook's `PostToolUse` for the call that wrote it; returns the bytes.
    fn write_task(&self, id: u64, subject: &str, status: &str) -> Vec<u8> {
        let task = json!({"id": id.to_string(), "subject": subject,
                          "description": format!("{subject}, in detail: \"quoted\" and é"),
                          "activeForm": format!("Doing {subject}"), "status": status,
                          "blocks": [], "blockedBy": []});
        let text = serde_json::to_string_pretty(&task).unwrap();
        write(&self.list(), &format!("{id}.json"), &text);
        let hw = self.list().join(".highwatermark");
        let old: u64 = std::fs::read_to_string(&hw)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
        // Written when a create takes a new id, as Claude Code does; an update leaves it.
        if id > old {
            std::fs::write(&hw, id.to_string()).unwrap();
        }
        self.hook(&post("TaskUpdate", json!({"taskId": id.to_string()})), &[]);
        text.into_bytes()
    }

    /// A hook run that reads task `id` while another process rewrites it in place (truncate,
    /// then write, as Claude Code up to 2.1.112 does): the file holds `bytes` (nothing, or
    /// the start of the write) when the `PostToolUse` run of a call on it reads it.
    fn torn_read(&self, id: u64, bytes: &[u8]) {
        std::fs::write(self.list().join(format!("{id}.json")), bytes).unwrap();
        self.hook(&post("TaskUpdate", json!({"taskId": id.to_string()})), &[]);
    }

    /// The agent deletes task `id`: `PreToolUse` of `TaskUpdate` status `deleted`, the tool
    /// removes the file, then `PostToolUse`.
    fn agent_deletes(&self, id: u64) {
        let input = json!({"taskId": id.to_string(), "status": "deleted"});
        self.hook(&pre("TaskUpdate", input.clone()), &[]);
        std::fs::remove_file(self.list().join(format!("{id}.json"))).unwrap();
        self.hook(&post("TaskUpdate", input), &[]);
    }

    /// Claude Code's reset of a finished list, as 2.1.20 and later do it: every task file
    /// removed, `.highwatermark` written with the highest id, `.lock` left.
    fn reset(&self) {
        self.reset_files();
        let hw = self.list().join(".highwatermark");
        let old: u64 = std::fs::read_to_string(&hw)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
        std::fs::write(hw, old.max(self.highest.get()).to_string()).unwrap();
    }

    /// The reset when `.highwatermark` already holds an id above every task left (the agent
    /// deleted the highest one): 2.1.112 then leaves it as it is (measured in
    /// tests/claude_code_restore.rs).
    fn reset_files(&self) {
        // The reset comes 5 s after the last write; a moment is enough for its
        // `.highwatermark` to be written after the journal's last run on every file-system
        // clock (ext4 stamps files with a clock that may lag the exact one by a tick).
        std::thread::sleep(std::time::Duration::from_millis(50));
        let mut highest = 0;
        for e in std::fs::read_dir(self.list()).unwrap() {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            if let Some(id) = name
                .strip_suffix(".json")
                .and_then(|s| s.parse::<u64>().ok())
            {
                highest = highest.max(id);
                std::fs::remove_file(self.list().join(&name)).unwrap();
            }
        }
        self.highest.set(highest);
        let lock = self.list().join(".lock");
        if !lock.exists() {
            std::fs::write(lock, "").unwrap();
        }
    }
}

fn pre(tool: &str, input: Value) -> Value {
    json!({"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": tool,
           "tool_input": input, "tool_use_id": "toolu_1"})
}

fn post(tool: &str, input: Value) -> Value {
    json!({"session_id": "s", "hook_event_name": "PostToolUse", "tool_name": tool,
           "tool_input": input, "tool_response": {"success": true}, "tool_use_id": "toolu_1"})
}

/// `check PATH --json ARGS`: exit status, the document, stderr.
fn check(path: &Path, args: &[&str]) -> (i32, Value, String) {
    let out = taskproof()
        .arg("check")
        .arg(path)
        .arg("--json")
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    let doc = if out.stdout.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
    };
    (out.status.code().unwrap(), doc, stderr)
}

/// Now, in milliseconds since the epoch.
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// The findings of one kind: file -> message.
fn of_kind(doc: &Value, kind: &str) -> BTreeMap<String, String> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == kind)
        .map(|f| {
            (
                f["file"].as_str().unwrap().to_string(),
                f["message"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Every file of a folder (not its sub-folders), by name, with its bytes.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_file())
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

/// Every entry under a folder, recursively, with file bytes: to show a command changed nothing.
fn tree(dir: &Path) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                out.insert(p.clone(), None);
                stack.push(p);
            } else {
                out.insert(p.clone(), Some(std::fs::read(&p).unwrap()));
            }
        }
    }
    out
}

/// A finished list of two tasks, with a third the agent deleted, then reset.
fn finished_and_reset(c: &Config) -> (Vec<u8>, Vec<u8>) {
    c.write_task(1, "Alpha", "pending");
    c.write_task(2, "Beta", "pending");
    c.write_task(3, "Gamma", "pending");
    c.agent_deletes(3);
    let one = c.write_task(1, "Alpha", "completed");
    let two = c.write_task(2, "Beta", "completed");
    c.reset();
    (one, two)
}
