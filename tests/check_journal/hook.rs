//! The hook's journal: each version of a task written beside the list before the hook lets a
//! change through, each delete asked for, nothing when the journal is off, and the list read
//! only once the hook holds the journal.

use super::*;

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
