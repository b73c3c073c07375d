//! The hook's journal, `check` naming what vanished, and `check --restore` (issue 42), through
//! the built binary: the hook is fed the events Claude Code hands it, and Claude Code's reset
//! of a finished list is played by removing the task files and rewriting `.highwatermark` as
//! its terminal UI does (measured: it leaves `.lock` and `.highwatermark` holding the highest
//! id; 2.1.17 leaves `.lock` only). tests/claude_code_restore.rs does the same in the real CLI.

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

/// The time a message gives right after `marker` (`2026-11-27T17:41:52.274Z`, UTC), in
/// milliseconds since the epoch.
fn time_after(m: &str, marker: &str) -> u64 {
    let at = m
        .find(marker)
        .unwrap_or_else(|| panic!("no {marker:?} in {m}"))
        + marker.len();
    let t = m
        .get(at..at + 24)
        .unwrap_or_else(|| panic!("no time after {marker:?} in {m}"));
    let b = t.as_bytes();
    let shape = b[4] == b'-' && b[7] == b'-' && b[10] == b'T' && b[13] == b':' && b[16] == b':';
    assert!(
        shape && b[19] == b'.' && b[23] == b'Z',
        "not a time: {t:?} in {m}"
    );
    let n = |r: std::ops::Range<usize>| -> i64 { t[r].parse().unwrap() };
    let (y, mo, d) = (n(0..4), n(5..7), n(8..10));
    // Days since the epoch of a civil date (Howard Hinnant's days_from_civil).
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((mo + 9) % 12) + 2) / 5 + d - 1;
    let days = era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468;
    let secs = days * 86_400 + n(11..13) * 3600 + n(14..16) * 60 + n(17..19);
    (secs * 1000 + n(20..23)) as u64
}

/// `times` never goes back.
fn assert_in_order(times: &[u64], m: &str) {
    assert!(
        times.windows(2).all(|w| w[0] <= w[1]),
        "times out of order {times:?} in {m}"
    );
}

#[test]
fn the_tests_read_the_reports_times() {
    // 2026-11-28T16:40:01.123Z, as crates/check/src/restore.rs pins it.
    assert_eq!(
        time_after("at 2026-11-28T16:40:01.123Z.", "at "),
        1_795_884_001_123
    );
    assert_eq!(time_after("1970-01-01T00:00:00.000Z", ""), 0);
    assert_eq!(time_after("2000-03-01T00:00:00.001Z", ""), 951_868_800_001);
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

#[test]
fn the_hook_journals_each_version_beside_the_list_and_each_delete_asked_for() {
    let c = Config::new();
    c.write_task(1, "Alpha", "pending");
    let done = c.write_task(1, "Alpha", "completed");
    // A run that sees nothing new writes no entry for it, only its `run` line.
    c.hook(
        &pre("TaskUpdate", json!({"taskId": "1", "owner": "me"})),
        &[],
    );
    c.write_task(2, "Beta", "pending");
    c.agent_deletes(2);

    assert!(
        files(&c.list()).keys().all(|n| !n.contains("journal")),
        "nothing of the journal is in the list folder"
    );
    let text = std::fs::read_to_string(c.journal()).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["taskproof_journal"], 1);
    assert_eq!(lines[0]["list"], LIST);
    let ops: Vec<(String, String)> = lines[1..]
        .iter()
        .filter(|l| l["op"] != "run")
        .map(|l| {
            (
                l["op"].as_str().unwrap().to_string(),
                l["file"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let want = [
        ("seen", "1.json"),
        ("seen", "1.json"),
        ("seen", "2.json"),
        ("delete", "2.json"),
    ];
    assert_eq!(
        ops,
        want.map(|(a, b)| (a.to_string(), b.to_string())),
        "{text}"
    );
    // The exact bytes, as written.
    let last_one = lines.iter().rfind(|l| l["file"] == "1.json").unwrap();
    assert_eq!(last_one["text"].as_str().unwrap().as_bytes(), &done[..]);
}

#[test]
fn no_journal_keeps_the_hook_as_it_was() {
    let c = Config::new();
    write(
        &c.list(),
        "1.json",
        r#"{"id":"1","subject":"a","status":"pending"}"#,
    );
    let out = c.hook(
        &post("TaskUpdate", json!({"taskId": "1"})),
        &["--no-journal"],
    );
    assert!(!c.journal().exists());
    let said = String::from_utf8(out.stdout).unwrap();
    assert!(
        said.contains("with --no-journal it keeps no journal"),
        "{said}"
    );
    c.hook(
        &pre("TaskUpdate", json!({"taskId": "1"})),
        &["--no-journal"],
    );
    assert!(!c.journal().exists());
    // With the journal, `PostToolUse` says nothing: it only journals.
    let out = c.hook(&post("TaskUpdate", json!({"taskId": "1"})), &[]);
    assert!(out.stdout.is_empty(), "{out:?}");
    assert!(c.journal().exists());
}

#[test]
fn check_names_the_tasks_a_reset_took_with_the_cause_and_not_the_one_the_agent_deleted() {
    let c = Config::new();
    finished_and_reset(&c);
    let (code, doc, _) = check(&c.list(), &[]);
    assert_eq!(code, 1, "{doc:#}");
    let vanished = of_kind(&doc, "vanished");
    assert_eq!(
        vanished.keys().collect::<Vec<_>>(),
        ["1.json", "2.json"],
        "{doc:#}"
    );
    let one = &vanished["1.json"];
    for want in [
        "task 1 \"Alpha\" (completed) is gone, and no delete was asked for",
        "when .highwatermark was rewritten",
        "known cause: Claude Code's reset of a finished list (anthropics/claude-code#38075): all 2 tasks were completed and went together, and .highwatermark kept the next id (3)",
        "taskproof check --restore",
    ] {
        assert!(one.contains(want), "missing {want:?} in {one}");
    }
    let seen = time_after(one, "the journal last saw it at ");
    let went = time_after(one, "its file went at about ");
    assert_in_order(&[c.start, seen, went, now_ms()], one);
    let f = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["file"] == "1.json")
        .unwrap();
    assert_eq!(f["rule"], "S14");
    // With a journal, the emptied folder is not the unsure warning.
    assert!(of_kind(&doc, "emptied").is_empty(), "{doc:#}");
}

#[test]
fn a_reset_that_leaves_highwatermark_alone_is_dated_by_the_folders_last_change() {
    let c = Config::new();
    c.write_task(1, "Alpha", "pending");
    c.write_task(2, "Beta", "pending");
    c.agent_deletes(2);
    c.write_task(1, "Alpha", "completed");
    c.reset_files();
    let (_, doc, _) = check(&c.list(), &[]);
    let m = &of_kind(&doc, "vanished")["1.json"];
    let seen = time_after(m, "the journal last saw it at ");
    let went = time_after(m, "and its file went by ");
    assert_in_order(&[c.start, seen, went, now_ms()], m);
    assert!(m.contains("(the list folder's last change)"), "{m}");
    assert!(
        m.contains("its 1 task was completed and went, and .highwatermark kept the next id (2)"),
        "{m}"
    );
}

#[test]
fn a_list_the_agent_emptied_itself_is_clean_with_a_journal() {
    let c = Config::new();
    c.write_task(1, "Alpha", "completed");
    c.write_task(2, "Beta", "pending");
    c.agent_deletes(1);
    c.agent_deletes(2);
    let (code, doc, _) = check(&c.list(), &[]);
    assert_eq!(code, 0, "{doc:#}");
}

#[test]
fn tasks_that_go_while_others_stay_are_named_without_a_cause() {
    let c = Config::new();
    c.write_task(1, "Alpha", "completed");
    c.write_task(2, "Beta", "pending");
    std::fs::remove_file(c.list().join("1.json")).unwrap();
    // A later hook run finds it gone.
    c.hook(
        &pre("TaskUpdate", json!({"taskId": "2", "owner": "me"})),
        &[],
    );
    let (_, doc, _) = check(&c.list(), &[]);
    let vanished = of_kind(&doc, "vanished");
    assert_eq!(vanished.keys().collect::<Vec<_>>(), ["1.json"]);
    let m = &vanished["1.json"];
    let seen = time_after(m, "the journal last saw it at ");
    let gone = time_after(m, "a hook run found it gone at ");
    assert_in_order(&[c.start, seen, gone, now_ms()], m);
    assert!(!vanished["1.json"].contains("known cause"), "{vanished:?}");
}

#[test]
fn without_a_journal_an_emptied_list_is_a_warning_that_says_how_sure_it_is() {
    let tmp = tempdir();
    let reset = tmp.path().join("reset");
    write(&reset, ".lock", "");
    write(&reset, ".highwatermark", "3");
    let (code, doc, _) = check(&reset, &[]);
    assert_eq!(code, 1);
    let m = &of_kind(&doc, "emptied")[".highwatermark"];
    assert!(
        m.contains("the list holds no task, and .highwatermark says 3"),
        "{m}"
    );
    assert!(
        m.contains("taskproof cannot tell which without a journal"),
        "{m}"
    );
    assert!(m.contains("PostToolUse"), "{m}");

    let old = tmp.path().join("old");
    write(&old, ".lock", "");
    let (_, doc, _) = check(&old, &[]);
    let m = &of_kind(&doc, "emptied")[".lock"];
    assert!(m.contains("the shape Claude Code 2.1.17 leaves"), "{m}");

    // A folder with a task, or with nothing at all, is not emptied.
    let fresh = tmp.path().join("fresh");
    std::fs::create_dir(&fresh).unwrap();
    let (code, doc, _) = check(&fresh, &[]);
    assert_eq!(code, 0, "{doc:#}");
    let busy = tmp.path().join("busy");
    write(&busy, ".lock", "");
    write(&busy, ".highwatermark", "3");
    write(
        &busy,
        "3.json",
        r#"{"id":"3","subject":"c","description":"","status":"pending","blocks":[],"blockedBy":[]}"#,
    );
    let (code, doc, _) = check(&busy, &[]);
    assert_eq!(code, 0, "{doc:#}");
    assert!(of_kind(&doc, "emptied").is_empty(), "{doc:#}");
}

#[test]
fn restore_writes_every_vanished_task_back_byte_for_byte_into_a_new_list() {
    let c = Config::new();
    let (one, two) = finished_and_reset(&c);
    let before = files(&c.list());
    let (code, doc, stderr) = check(&c.list(), &["--restore"]);
    assert_eq!(code, 0, "{doc:#}\n{stderr}");
    assert_eq!(doc["mode"], "restore");
    let lists: Vec<&str> = doc["lists"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["name"].as_str().unwrap())
        .collect();
    assert_eq!(lists.len(), 2, "{doc:#}");
    let new = lists[1];
    assert!(new.starts_with("plan-restored-"), "{new}");
    let dir = c.dir.join("tasks").join(new);
    let got = files(&dir);
    assert_eq!(got["1.json"], one);
    assert_eq!(got["2.json"], two);
    assert!(
        !got.contains_key("3.json"),
        "the task the agent deleted stays deleted"
    );
    assert_eq!(
        got[".highwatermark"], b"3",
        "the old list's next id is kept"
    );
    assert_eq!(files(&c.list()), before, "the old list is left as it was");
    let changes: Vec<&str> = doc["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["change"].as_str().unwrap())
        .collect();
    assert!(
        changes[0].starts_with("restore 1.json into "),
        "{changes:?}"
    );
    assert!(stderr.contains("written into a new list"), "{stderr}");

    // Restored once: check no longer names them, a second restore has nothing to do, and
    // the new list has a journal of its own.
    let (code, doc, _) = check(&c.list(), &[]);
    assert_eq!(code, 0, "{doc:#}");
    let (code, doc, _) = check(&c.list(), &["--restore"]);
    assert_eq!((code, doc["changes"].as_array().unwrap().len()), (0, 0));
    let text = taskproof()
        .args(["check", "--restore"])
        .arg(c.list())
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&text.stdout).contains("nothing to restore"));
    assert!(
        c.dir
            .join("tasks/.taskproof-journal")
            .join(format!("{new}.jsonl"))
            .exists()
    );
}

#[test]
fn restore_into_the_same_list_never_writes_over_a_newer_file_and_says_the_risk() {
    let c = Config::new();
    let (one, _) = finished_and_reset(&c);
    // The agent's next call: its hook run finds the list reset.
    c.hook(&pre("TaskCreate", json!({"subject": "Delta"})), &[]);
    // A file written at that name since (another writer, or a version that reuses ids).
    let newer = r#"{"id":"2","subject":"newer","status":"pending","blocks":[],"blockedBy":[]}"#;
    write(&c.list(), "2.json", newer);
    let (code, doc, stderr) = check(&c.list(), &["--restore", "--into-same-list"]);
    // Task 2 is still vanished: it was not written back, and a new list can take it.
    assert_eq!(code, 1, "{doc:#}\n{stderr}");
    let left = of_kind(&doc, "vanished");
    assert_eq!(left.keys().collect::<Vec<_>>(), ["2.json"], "{doc:#}");
    assert!(left["2.json"].contains("its name 2.json now holds another task"));
    assert_eq!(std::fs::read(c.list().join("1.json")).unwrap(), one);
    assert_eq!(
        std::fs::read_to_string(c.list().join("2.json")).unwrap(),
        newer
    );
    assert!(!c.list().join("3.json").exists());
    let skipped: Vec<&Value> = doc["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| !c["skipped"].is_null())
        .collect();
    assert_eq!(skipped.len(), 1, "{doc:#}");
    assert!(
        skipped[0]["skipped"]
            .as_str()
            .unwrap()
            .contains("2.json exists in the list"),
        "{doc:#}"
    );
    assert!(
        stderr.contains("about 5 s after the next task in it is completed"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(c.list().join(".highwatermark")).unwrap(),
        "3"
    );
}

#[test]
fn restore_without_a_journal_names_where_it_looked_and_changes_nothing() {
    let tmp = tempdir();
    let list = tmp.path().join("tasks").join("plan");
    write(&list, ".lock", "");
    write(&list, ".highwatermark", "2");
    let before = tree(tmp.path());
    let (code, _, stderr) = check(&list, &["--restore"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("restore plan: there is no journal at /"),
        "{stderr}"
    );
    assert!(
        stderr.contains("/tasks/.taskproof-journal/plan.jsonl"),
        "{stderr}"
    );
    assert!(stderr.contains("nothing was changed"), "{stderr}");
    assert_eq!(tree(tmp.path()), before);
}

#[test]
fn a_torn_or_damaged_journal_line_is_named_and_never_restored() {
    let c = Config::new();
    let pending = c.write_task(1, "Alpha", "pending");
    c.write_task(2, "Beta", "pending");
    c.write_task(1, "Alpha", "completed");
    let two = c.write_task(2, "Beta", "completed");
    c.reset();
    let text = std::fs::read_to_string(c.journal()).unwrap();
    // Damage the last version of task 1: one changed character in its bytes.
    let i = text.rfind("\"subject\\\": \\\"Alpha\\\"").unwrap();
    let mut damaged = text.clone();
    damaged.replace_range(i + 14..i + 15, "a");
    // And a torn entry at the end, as a writer killed mid-append leaves it.
    damaged.push_str(r#"{"at":1,"op":"seen","file":"4.json","hash":"#);
    std::fs::write(c.journal(), &damaged).unwrap();
    let line = damaged[..i].matches('\n').count() + 1;
    let last = damaged.matches('\n').count() + 1;

    let (code, doc, _) = check(&c.list(), &[]);
    assert_eq!(code, 1);
    let journal: Vec<(&str, &str)> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "journal")
        .map(|f| (f["file"].as_str().unwrap(), f["message"].as_str().unwrap()))
        .collect();
    let all = format!("{journal:?}");
    assert_eq!(journal.len(), 2, "{all}");
    assert!(
        all.contains(&format!(
            "line {line}: the bytes of 1.json do not match their hash"
        )),
        "{all}"
    );
    assert!(all.contains(&format!("line {last}: a torn entry")), "{all}");
    assert!(
        journal
            .iter()
            .all(|(f, _)| f.ends_with("/tasks/.taskproof-journal/plan.jsonl")),
        "{all}"
    );
    let vanished = of_kind(&doc, "vanished");
    assert!(
        vanished["1.json"].contains(&format!(
            "its last version in the journal is not whole (line {line}, journaled at "
        )) && vanished["1.json"].contains("is damaged in the journal"),
        "{}",
        vanished["1.json"]
    );
    assert!(
        !vanished.contains_key("4.json"),
        "a torn entry is never a task"
    );

    // The damaged version is never written; the whole one before it is, and the change
    // says which and why.
    let (code, doc, _) = check(&c.list(), &["--restore"]);
    assert_eq!(code, 1, "the damaged line is still named: {doc:#}");
    assert!(of_kind(&doc, "vanished").is_empty(), "{doc:#}");
    let new = doc["lists"][1]["name"].as_str().unwrap().to_string();
    let got = files(&c.dir.join("tasks").join(&new));
    assert_eq!(got["1.json"], pending);
    assert!(!got.contains_key("4.json"));
    assert_eq!(got["2.json"], two);
    let change = doc["changes"][0]["change"].as_str().unwrap();
    assert!(
        change.starts_with("restore 1.json into ")
            && change.contains("its last whole one; the newer ones are not (")
            && change.contains(&format!("line {line}, journaled at "))
            && change.contains("is damaged in the journal"),
        "{change}"
    );
    let change = doc["changes"][1]["change"].as_str().unwrap();
    assert!(
        change.contains(": its last version, journaled at "),
        "{change}"
    );
}

#[test]
fn a_foreign_journal_or_another_lists_is_named_and_left_alone() {
    let c = Config::new();
    finished_and_reset(&c);
    let theirs = std::fs::read(c.journal()).unwrap();
    let renamed = c.dir.join("tasks").join("other");
    std::fs::create_dir(&renamed).unwrap();
    std::fs::write(renamed.join(".highwatermark"), "2").unwrap();

    // Plan's journal named with --journal for another list.
    let (code, _, stderr) = check(
        &renamed,
        &["--restore", "--journal", c.journal().to_str().unwrap()],
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("it is the journal of list \"plan\""),
        "{stderr}"
    );
    assert!(!c.dir.join("tasks").read_dir().unwrap().any(|e| {
        e.unwrap()
            .file_name()
            .to_string_lossy()
            .contains("restored")
    }));

    // The same file copied to the other list's journal place: read as another list's.
    let place = c.dir.join("tasks/.taskproof-journal/other.jsonl");
    std::fs::write(&place, &theirs).unwrap();
    let (code, doc, _) = check(&renamed, &[]);
    assert_eq!(code, 1);
    let m = &of_kind(&doc, "journal")[&place.display().to_string()];
    assert!(m.contains("it is the journal of list \"plan\""), "{m}");
    assert!(
        m.contains("not of \"other\"; the file is left alone"),
        "{m}"
    );
    // Judged without it, by its shape.
    assert!(
        of_kind(&doc, "emptied").contains_key(".highwatermark"),
        "{doc:#}"
    );
    let before = tree(&c.dir);
    let (code, _, stderr) = check(&renamed, &["--restore"]);
    assert_eq!(code, 2);
    assert!(stderr.contains(&place.display().to_string()), "{stderr}");
    assert_eq!(tree(&c.dir), before, "a refused restore changes nothing");

    // Not a journal at all: the hook leaves it alone and says so after the write.
    std::fs::write(c.journal(), "not mine\n").unwrap();
    c.write_task(4, "Delta", "pending");
    let out = c.hook(&post("TaskUpdate", json!({"taskId": "4"})), &[]);
    let said: Value = serde_json::from_slice(&out.stdout).unwrap();
    let said = said["systemMessage"].as_str().unwrap();
    assert!(said.contains("could not keep its journal"), "{said}");
    assert!(
        said.contains("line 1 is not a taskproof journal's first line"),
        "{said}"
    );
    assert!(said.contains(&c.journal().display().to_string()), "{said}");
    assert_eq!(std::fs::read_to_string(c.journal()).unwrap(), "not mine\n");
    let (_, doc, _) = check(&c.list(), &[]);
    assert!(
        of_kind(&doc, "journal")
            .values()
            .any(|m| m.contains("not a taskproof journal"))
    );
}

#[test]
fn journal_names_one_list() {
    let c = Config::new();
    c.write_task(1, "Alpha", "pending");
    std::fs::create_dir(c.dir.join("tasks").join("other")).unwrap();
    let (code, _, stderr) = check(
        &c.dir.join("tasks"),
        &["--journal", c.journal().to_str().unwrap()],
    );
    assert_eq!(code, 2);
    assert!(
        stderr.contains("--journal names the journal of one list"),
        "{stderr}"
    );
}

#[test]
fn a_new_task_the_hook_refused_and_claude_code_took_back_did_not_vanish() {
    let c = Config::new();
    c.write_task(1, "Alpha", "pending");
    // TaskCreated with an empty subject: written, refused, deleted again by Claude Code.
    write(
        &c.list(),
        "2.json",
        r#"{"id":"2","subject":"","status":"pending","blocks":[],"blockedBy":[]}"#,
    );
    let ev = json!({"session_id": "s", "hook_event_name": "TaskCreated", "task_id": "2",
                    "task_subject": "", "task_description": ""});
    assert_eq!(c.hook(&ev, &[]).status.code(), Some(2));
    std::fs::remove_file(c.list().join("2.json")).unwrap();
    c.hook(
        &pre("TaskUpdate", json!({"taskId": "1", "owner": "me"})),
        &[],
    );
    let (code, doc, _) = check(&c.list(), &[]);
    assert_eq!(code, 0, "{doc:#}");
}

#[test]
fn a_reset_that_kept_no_highwatermark_and_an_id_used_again_still_names_the_old_task() {
    // 2.1.17: the reset leaves `.lock` only and the next create takes id 1 again.
    let c = Config::new();
    let old = c.write_task(1, "Alpha", "completed");
    std::fs::remove_file(c.list().join("1.json")).unwrap();
    std::fs::remove_file(c.list().join(".highwatermark")).unwrap();
    write(&c.list(), ".lock", "");
    let (_, doc, _) = check(&c.list(), &[]);
    let m = &of_kind(&doc, "vanished")["1.json"];
    assert!(m.contains("as 2.1.17 does it"), "{m}");
    // The agent's next create runs the hook first (which finds 1.json gone), then writes 1.json.
    c.hook(&pre("TaskCreate", json!({"subject": "Zeta"})), &[]);
    c.write_task(1, "Zeta", "pending");
    let (_, doc, _) = check(&c.list(), &[]);
    let m = &of_kind(&doc, "vanished")["1.json"];
    assert!(m.contains("task 1 \"Alpha\" (completed) is gone"), "{m}");
    assert!(m.contains("its name 1.json now holds another task"), "{m}");
    // Restored into a new list, the old task 1 comes back as it was.
    let (_, doc, _) = check(&c.list(), &["--restore"]);
    let new = doc["lists"][1]["name"].as_str().unwrap().to_string();
    assert_eq!(
        std::fs::read(c.dir.join("tasks").join(new).join("1.json")).unwrap(),
        old
    );
}

#[test]
fn into_names_the_new_list_and_refuses_one_that_exists() {
    let c = Config::new();
    finished_and_reset(&c);
    std::fs::create_dir(c.dir.join("tasks").join("taken")).unwrap();
    let (code, _, stderr) = check(&c.list(), &["--restore", "--into", "taken"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("it exists already"), "{stderr}");
    let (code, _, stderr) = check(&c.list(), &["--restore", "--into", "a.b"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("a list name is letters, digits"),
        "{stderr}"
    );
    let (code, doc, _) = check(&c.list(), &["--restore", "--into", "kept"]);
    assert_eq!(code, 0, "{doc:#}");
    assert!(c.dir.join("tasks/kept/1.json").exists());
}

#[test]
fn a_post_tool_use_of_task_create_journals_the_new_task_its_answer_names() {
    let c = Config::new();
    let task = json!({"id": "1", "subject": "Alpha", "description": "d", "status": "pending",
                      "blocks": [], "blockedBy": []});
    let text = serde_json::to_string_pretty(&task).unwrap();
    write(&c.list(), "1.json", &text);
    // Another file the call did not write: a PostToolUse run reads only what its call wrote.
    write(
        &c.list(),
        "2.json",
        r#"{"id":"2","subject":"b","status":"pending"}"#,
    );
    let ev = json!({"session_id": "s", "hook_event_name": "PostToolUse", "tool_name": "TaskCreate",
                    "tool_input": {"subject": "Alpha", "description": "d"},
                    "tool_response": {"task": {"id": "1", "subject": "Alpha"}},
                    "tool_use_id": "toolu_1"});
    let out = c.hook(&ev, &[]);
    assert!(out.stdout.is_empty(), "{out:?}");
    let lines: Vec<Value> = std::fs::read_to_string(c.journal())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[1]["op"], "seen");
    assert_eq!(lines[1]["file"], "1.json");
    assert_eq!(lines[1]["text"].as_str().unwrap(), text);
}

/// The lines of the journal whose `op` is `op`, as (op, file).
fn ops(c: &Config, op: &str) -> Vec<String> {
    std::fs::read_to_string(c.journal())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["op"] == op)
        .map(|l| l["file"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_delete_the_hook_refuses_is_not_journaled_as_a_delete() {
    let c = Config::new();
    c.write_task(1, "Alpha", "completed");
    // The call also empties the subject: the hook refuses it, so the tool never deletes.
    let refused = c.hook(
        &pre(
            "TaskUpdate",
            json!({"taskId": "1", "status": "deleted", "subject": ""}),
        ),
        &[],
    );
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    assert!(ops(&c, "delete").is_empty(), "{:?}", ops(&c, "delete"));
    // So when a reset takes the task, it is named as vanished, not taken for the agent's.
    c.reset();
    let (code, doc, _) = check(&c.list(), &[]);
    assert_eq!(code, 1, "{doc:#}");
    assert!(of_kind(&doc, "vanished").contains_key("1.json"), "{doc:#}");
    // A delete the hook lets through is journaled.
    c.write_task(2, "Beta", "pending");
    c.agent_deletes(2);
    assert_eq!(ops(&c, "delete"), ["2.json"]);
}

#[test]
fn into_names_one_new_list_and_is_refused_over_a_folder_of_several() {
    let c = Config::new();
    finished_and_reset(&c);
    let other = c.dir.join("tasks").join("other");
    write(&other, ".highwatermark", "1");
    let before = tree(&c.dir);
    let (code, _, stderr) = check(&c.dir.join("tasks"), &["--restore", "--into", "back"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--into"), "{stderr}");
    assert!(stderr.contains("2 lists"), "{stderr}");
    assert_eq!(tree(&c.dir), before, "nothing was changed");
    // A folder that holds one list is fine.
    std::fs::remove_dir_all(&other).unwrap();
    let (code, doc, stderr) = check(&c.dir.join("tasks"), &["--restore", "--into", "back"]);
    assert_eq!(code, 0, "{doc:#}\n{stderr}");
    assert!(c.dir.join("tasks/back/1.json").exists());
}

#[test]
fn a_restore_whose_journal_cannot_record_it_says_what_it_wrote_and_why() {
    let c = Config::new();
    let (one, two) = finished_and_reset(&c);
    // The new list's journal cannot be written: its place holds a folder.
    let blocked = c.dir.join("tasks/.taskproof-journal/back.jsonl");
    std::fs::create_dir(&blocked).unwrap();
    let (code, doc, stderr) = check(&c.list(), &["--restore", "--into", "back"]);
    assert_eq!(code, 1, "{doc:#}\n{stderr}");
    let got = files(&c.dir.join("tasks/back"));
    assert_eq!((&got["1.json"], &got["2.json"]), (&one, &two));
    let changes = doc["changes"].as_array().unwrap();
    let done: Vec<&str> = changes
        .iter()
        .filter(|c| c["done"] == true)
        .map(|c| c["change"].as_str().unwrap())
        .collect();
    assert_eq!(done.len(), 3, "the two tasks and .highwatermark: {doc:#}");
    let failed: Vec<&Value> = changes.iter().filter(|c| c["done"] == false).collect();
    assert_eq!(failed.len(), 1, "{doc:#}");
    let change = failed[0]["change"].as_str().unwrap();
    assert!(change.contains("journal"), "{change}");
    assert!(change.contains(&blocked.display().to_string()), "{change}");
    let why = failed[0]["skipped"].as_str().unwrap();
    assert!(!why.contains("nothing was changed"), "{why}");
    assert!(stderr.contains("written into a new list"), "{stderr}");
    // The old list's journal did record it: the tasks are not named as vanished again.
    assert!(of_kind(&doc, "vanished").is_empty(), "{doc:#}");
}

/// Waits until a process is blocked on the `flock` of the file with inode `ino` (Linux:
/// `/proc/locks` lists each waiter with `->`); elsewhere, waits a moment.
fn wait_for_a_waiter(ino: u64) {
    let needle = format!(":{ino} ");
    let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::time::Instant::now() < until {
        let Ok(locks) = std::fs::read_to_string("/proc/locks") else {
            std::thread::sleep(std::time::Duration::from_millis(500));
            return;
        };
        if locks
            .lines()
            .any(|l| l.contains("->") && l.contains(&needle))
        {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    panic!("no process waited for the journal's lock");
}

#[test]
fn a_hook_reads_the_list_only_once_it_holds_the_journal() {
    use std::io::Write;
    use std::os::unix::fs::MetadataExt;
    let c = Config::new();
    c.write_task(1, "Alpha", "pending");
    // Another hook run holds the journal's lock.
    let held = std::fs::OpenOptions::new()
        .read(true)
        .append(true)
        .open(c.journal())
        .unwrap();
    rustix::fs::flock(&held, rustix::fs::FlockOperation::LockExclusive).unwrap();
    let mut cmd = taskproof();
    cmd.args(["check", "--stdin"])
        .env("CLAUDE_CONFIG_DIR", &c.dir)
        .env("CLAUDE_CODE_TASK_LIST_ID", LIST)
        .env_remove("HOME")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let event = pre("TaskUpdate", json!({"taskId": "1", "owner": "me"}));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(event.to_string().as_bytes())
        .unwrap();
    wait_for_a_waiter(std::fs::metadata(c.journal()).unwrap().ino());
    // Meanwhile the other run's call writes a new version and journals it.
    let newer = r#"{"id":"1","subject":"Alpha","description":"","status":"in_progress","blocks":[],"blockedBy":[]}"#;
    write(&c.list(), "1.json", newer);
    let hash = taskproof_check::journal::hash("1.json", newer.as_bytes());
    let line = json!({"at": now_ms(), "op": "seen", "file": "1.json",
                      "hash": format!("{hash:016x}"), "text": newer});
    (&held).write_all(format!("{line}\n").as_bytes()).unwrap();
    drop(held);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    // The waiting run journals the list as it found it once it held the lock: the newer
    // version stays the journal's last.
    let j = taskproof_check::journal::read(&c.journal(), LIST)
        .unwrap()
        .unwrap();
    assert_eq!(
        j.current("1.json").unwrap().bytes.as_deref(),
        Some(newer.as_bytes()),
        "{}",
        std::fs::read_to_string(c.journal()).unwrap()
    );
}

/// The journal's line numbers (1-based) of the `seen` entries of `file`, with their `torn`
/// mark.
fn seen_lines(c: &Config, file: &str) -> Vec<(usize, Option<String>)> {
    std::fs::read_to_string(c.journal())
        .unwrap()
        .lines()
        .enumerate()
        .filter_map(|(i, l)| {
            let v: Value = serde_json::from_str(l).ok()?;
            (v["op"] == "seen" && v["file"] == file)
                .then(|| (i + 1, v["torn"].as_str().map(str::to_string)))
        })
        .collect()
}

#[test]
fn restore_passes_over_a_version_read_while_the_file_was_being_rewritten() {
    let c = Config::new();
    c.write_task(1, "Alpha", "pending");
    let one = c.write_task(1, "Alpha", "completed");
    let two = c.write_task(2, "Beta", "completed");
    // The last runs read both files mid-rewrite: 1.json truncated, 2.json half written.
    c.torn_read(1, b"");
    c.torn_read(2, &two[..two.len() / 2]);
    let ones = seen_lines(&c, "1.json");
    let twos = seen_lines(&c, "2.json");
    let (torn_one, whole_one) = (ones[ones.len() - 1].0, ones[ones.len() - 2].0);
    let (torn_two, whole_two) = (twos[twos.len() - 1].0, twos[twos.len() - 2].0);
    c.reset();

    // A journal an earlier build wrote has no marks: restore judges the bytes themselves.
    let legacy = c.dir.join("legacy.jsonl");
    let text = std::fs::read_to_string(c.journal()).unwrap();
    let unmarked = text
        .replace(r#""torn":"empty","#, "")
        .replace(r#""torn":"malformed","#, "");
    assert!(!unmarked.contains("\"torn\""), "{unmarked}");
    std::fs::write(&legacy, unmarked).unwrap();
    let journal = legacy.to_str().unwrap();
    let (code, doc, stderr) = check(
        &c.list(),
        &["--restore", "--journal", journal, "--into", "old"],
    );
    let got = files(&c.dir.join("tasks/old"));
    assert_eq!((&got["1.json"], &got["2.json"]), (&one, &two));
    // The new list is judged by its own journal, not the one --journal named.
    assert_eq!(code, 0, "{doc:#}\n{stderr}");

    // The journal marked both reads.
    assert_eq!(ones.last().unwrap().1.as_deref(), Some("empty"), "{ones:?}");
    assert_eq!(
        twos.last().unwrap().1.as_deref(),
        Some("malformed"),
        "{twos:?}"
    );
    assert!(ones[..ones.len() - 1].iter().all(|(_, t)| t.is_none()));

    let (code, doc, _) = check(&c.list(), &[]);
    assert_eq!(code, 1);
    let vanished = of_kind(&doc, "vanished");
    let m = &vanished["1.json"];
    assert!(
        m.contains(&format!(
            "its last version in the journal is not whole (line {torn_one}, journaled at "
        )) && m.contains("is empty: ")
            && m.contains(&format!("(line {whole_one}): restore it with")),
        "{m}"
    );
    // The cause is judged from the whole versions: both were completed.
    assert!(m.contains("known cause: Claude Code's reset"), "{m}");

    let (code, doc, stderr) = check(&c.list(), &["--restore", "--into-same-list"]);
    assert_eq!(code, 0, "{doc:#}\n{stderr}");
    let got = files(&c.list());
    assert_eq!((&got["1.json"], &got["2.json"]), (&one, &two));
    let changes: Vec<&str> = doc["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["change"].as_str().unwrap())
        .collect();
    let said = |file: &str, whole: usize, torn: usize, why: &str| {
        changes.iter().any(|c| {
            c.starts_with(&format!("restore {file} into "))
                && c.contains(&format!(
                    "(line {whole}), its last whole one; the newer ones are not (line {torn}, journaled at "
                ))
                && c.contains(why)
        })
    };
    assert!(
        said("1.json", whole_one, torn_one, "is empty: "),
        "{changes:?}"
    );
    assert!(
        said("2.json", whole_two, torn_two, "is not a task: "),
        "{changes:?}"
    );
    let text = taskproof()
        .args(["check", "--restore"])
        .arg(c.list())
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&text.stdout).contains("nothing to restore"));
}

#[test]
fn a_task_the_journal_holds_no_whole_version_of_is_named_and_not_written() {
    let c = Config::new();
    let one = c.write_task(1, "Alpha", "completed");
    // Task 2 was only ever read mid-write.
    c.torn_read(2, b"");
    c.torn_read(2, br#"{"id": "2", "subj"#);
    let twos = seen_lines(&c, "2.json");
    assert_eq!(twos.len(), 2, "{twos:?}");
    c.reset();

    let (code, doc, _) = check(&c.list(), &[]);
    assert_eq!(code, 1);
    let m = &of_kind(&doc, "vanished")["2.json"];
    assert!(
        m.contains(&format!(
            "the journal holds no whole version of it (line {}, journaled at ",
            twos[1].0
        )) && m.contains(&format!("line {}, journaled at ", twos[0].0))
            && m.ends_with("so it cannot be restored"),
        "{m}"
    );

    let (code, doc, stderr) = check(&c.list(), &["--restore", "--into", "back"]);
    assert_eq!(code, 1, "task 2 is still vanished: {doc:#}\n{stderr}");
    let got = files(&c.dir.join("tasks/back"));
    assert_eq!(got["1.json"], one, "the other tasks are restored");
    assert!(!got.contains_key("2.json"), "nothing is written for task 2");
    let skipped: Vec<(&str, &str)> = doc["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["done"] == false)
        .map(|c| {
            (
                c["change"].as_str().unwrap(),
                c["skipped"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(skipped.len(), 1, "{doc:#}");
    let (change, why) = skipped[0];
    assert!(change.starts_with("restore 2.json into "), "{change}");
    assert!(
        why.contains("holds no whole version of it (")
            && why.contains("is not a task: ")
            && why.contains("is empty: ")
            && why.ends_with("nothing was written for it"),
        "{why}"
    );
}

/// Writer processes of the stress test: stopped, killed if they outlive it, and reaped however
/// the test ends.
struct Writers(Vec<std::process::Child>);

impl Writers {
    /// Waits for every writer (they stop on their own once the stop file exists; one that has
    /// not within 30 s is killed and fails the test) and returns how many rewrites each made.
    fn finish(&mut self) -> Vec<u64> {
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut made = Vec::new();
        for mut child in std::mem::take(&mut self.0) {
            while child.try_wait().unwrap().is_none() {
                if Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!("a writer did not stop within 30 s of the stop file");
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let out = child.wait_with_output().unwrap();
            let said = String::from_utf8_lossy(&out.stdout);
            assert!(out.status.success(), "a writer failed: {out:?}");
            made.push(said.trim().parse().unwrap_or(0));
        }
        made
    }
}

impl Drop for Writers {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// One hook run of the stress test, as Claude Code starts it for the list `plan` of the
/// configuration folder `dir`.
fn stress_hook(dir: &Path, event: &Value) -> Output {
    let mut cmd = taskproof();
    cmd.args(["check", "--stdin"])
        .env("CLAUDE_CONFIG_DIR", dir)
        .env("CLAUDE_CODE_TASK_LIST_ID", LIST)
        .env_remove("HOME");
    run_with_stdin(cmd, event.to_string().as_bytes())
}

/// A version of a task file as the journal holds it: its bytes, and its `torn` mark.
type Version = (Vec<u8>, Option<String>);

/// Whether `bytes` are a whole task of the file `name` (claude-code layout): a JSON object
/// with the id its name says, a subject and a status.
fn is_task(name: &str, bytes: &[u8]) -> bool {
    let Ok(v) = serde_json::from_slice::<Value>(bytes) else {
        return false;
    };
    v["id"].as_str().map(|i| format!("{i}.json")).as_deref() == Some(name)
        && v["subject"].is_string()
        && v["status"].is_string()
}

#[test]
#[cfg_attr(not(taskproof_has_python), ignore = "needs python3 on PATH")]
fn restore_after_writers_rewrote_tasks_in_place_under_concurrent_hooks_writes_only_whole_tasks() {
    // The stress of issue 49, made short: 200 tasks, 4 processes rewriting them in place, 6
    // threads running the hook on the list as Claude Code would, then a last hook run, a
    // reset, and a restore into the same list.
    require(&[Tool::Python]);
    const TASKS: u64 = 200;
    const WRITERS: u64 = 4;
    const HOOKS: u64 = 6;
    let c = Config::new();
    let list = c.list();
    for i in 1..=TASKS {
        let task = json!({"id": i.to_string(), "subject": format!("Task {i}"),
                          "description": "as created", "activeForm": format!("Doing task {i}"),
                          "status": "pending", "blocks": [], "blockedBy": []});
        write(
            &list,
            &format!("{i}.json"),
            &serde_json::to_string_pretty(&task).unwrap(),
        );
    }
    write(&list, ".highwatermark", &TASKS.to_string());
    write(&list, ".lock", "");
    // The hook has journaled every task whole before the writers start.
    let owner = |id: u64, who: &str| {
        pre(
            "TaskUpdate",
            json!({"taskId": id.to_string(), "owner": who}),
        )
    };
    c.hook(&owner(1, "first"), &[]);

    let stop = c.dir.join("stop");
    let script = crate::util::repo().join("tests/fixtures/check/rewrite_in_place.py");
    let mut writers = Writers(Vec::new());
    for w in 0..WRITERS {
        let child = std::process::Command::new("python3")
            .arg(&script)
            .arg(&list)
            .args([w, WRITERS, TASKS].map(|n| n.to_string()))
            .arg(&stop)
            .arg("60")
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        writers.0.push(child);
    }
    let until = Instant::now() + Duration::from_secs(3);
    let dir = c.dir.as_path();
    let runs: Vec<(u64, Vec<String>)> = std::thread::scope(|s| {
        let hooks: Vec<_> = (0..HOOKS)
            .map(|h| {
                s.spawn(move || {
                    let (mut n, mut bad) = (0u64, Vec::new());
                    let mut x = h * 7919 + 1;
                    while Instant::now() < until {
                        x = x
                            .wrapping_mul(6_364_136_223_846_793_005)
                            .wrapping_add(1_442_695_040_888_963_407);
                        let id = (x >> 33) % TASKS + 1;
                        // A call's PreToolUse reads the whole list; its PostToolUse reads the
                        // file the call wrote.
                        let event = if n % 2 == 0 {
                            owner(id, &format!("hook {h}"))
                        } else {
                            post("TaskUpdate", json!({"taskId": id.to_string()}))
                        };
                        let out = stress_hook(dir, &event);
                        n += 1;
                        let said = String::from_utf8_lossy(&out.stdout);
                        if out.status.code() != Some(0)
                            || said.contains("could not keep its journal")
                        {
                            bad.push(format!("{out:?}"));
                        }
                    }
                    (n, bad)
                })
            })
            .collect();
        hooks.into_iter().map(|h| h.join().unwrap()).collect()
    });
    std::fs::write(&stop, "").unwrap();
    let made = writers.finish();
    let bad: Vec<&String> = runs.iter().flat_map(|(_, b)| b).collect();
    assert!(bad.is_empty(), "hook runs that failed: {bad:#?}");
    // The last hook run, then Claude Code's reset of the list.
    c.hook(&owner(1, "last"), &[]);

    // What the journal saw: every version of each task file, in order, and its mark.
    let text = std::fs::read_to_string(c.journal()).unwrap();
    let mut versions: BTreeMap<String, Vec<Version>> = BTreeMap::new();
    for line in text.lines().skip(1) {
        let v: Value = serde_json::from_str(line).unwrap();
        assert_ne!(v["op"], "gone", "no file went during the stress: {line}");
        if v["op"] == "seen" {
            let bytes = v["text"].as_str().unwrap().as_bytes().to_vec();
            let file = v["file"].as_str().unwrap().to_string();
            versions
                .entry(file)
                .or_default()
                .push((bytes, v["torn"].as_str().map(str::to_string)));
        }
    }
    assert_eq!(versions.len(), TASKS as usize);
    let marked: Vec<&str> = versions
        .values()
        .flatten()
        .filter_map(|(_, t)| t.as_deref())
        .collect();
    // Every version the hook did not mark is a whole task: a torn read is never unmarked.
    for (file, vs) in &versions {
        for (bytes, torn) in vs {
            assert!(
                torn.is_some() || is_task(file, bytes),
                "{file}: an unmarked version that is not a task: {:?}",
                String::from_utf8_lossy(bytes)
            );
        }
    }
    // Each writer stopped in the middle of a rewrite: the last run read its file torn.
    let stopped: Vec<String> = (0..WRITERS)
        .map(|w| format!("{}.json", if w == 0 { WRITERS } else { w }))
        .collect();
    for file in &stopped {
        let last = versions[file].last().unwrap();
        assert!(
            last.1.is_some(),
            "{file}: {:?}",
            String::from_utf8_lossy(&last.0)
        );
    }
    let latest_whole: BTreeMap<&String, &Vec<u8>> = versions
        .iter()
        .map(|(f, vs)| {
            let whole = vs.iter().rev().find(|(b, t)| t.is_none() && is_task(f, b));
            (
                f,
                &whole
                    .expect("every task was journaled whole before the writers")
                    .0,
            )
        })
        .collect();
    eprintln!(
        "{} hook runs, {made:?} rewrites by the writers, {} journaled versions, {} of them marked torn ({} empty, {} changing, {} malformed)",
        runs.iter().map(|r| r.0).sum::<u64>(),
        versions.values().map(Vec::len).sum::<usize>(),
        marked.len(),
        marked.iter().filter(|t| **t == "empty").count(),
        marked.iter().filter(|t| **t == "changing").count(),
        marked.iter().filter(|t| **t == "malformed").count(),
    );

    c.reset_files();
    let (code, doc, stderr) = check(&list, &["--restore", "--into-same-list"]);
    let back: BTreeMap<String, Vec<u8>> = files(&list)
        .into_iter()
        .filter(|(n, _)| n.ends_with(".json"))
        .collect();
    assert_eq!(back.len(), TASKS as usize, "{doc:#}\n{stderr}");
    for (file, bytes) in &back {
        assert!(
            is_task(file, bytes),
            "{file} restored is not a task: {:?}",
            String::from_utf8_lossy(bytes)
        );
        assert!(
            bytes == latest_whole[file],
            "{file} restored is not the latest whole version the journal saw"
        );
    }
    assert_eq!(code, 0, "{doc:#}\n{stderr}");
    let changes: Vec<&str> = doc["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["change"].as_str().unwrap())
        .collect();
    for file in &stopped {
        let said = changes
            .iter()
            .find(|c| c.starts_with(&format!("restore {file} into ")))
            .unwrap();
        assert!(
            said.contains("its last whole one; the newer ones are not ("),
            "{said}"
        );
    }
}
