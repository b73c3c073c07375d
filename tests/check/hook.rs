//! `taskproof check --stdin`, hook mode: driven through the built binary with the inputs
//! Claude Code hands a hook (its journal is tests/check_journal.rs).

use std::path::Path;

use serde_json::{Value, json};

use super::{BOTH, Layout, file, put, snapshot, task};
use crate::util::{run_with_stdin, taskproof, tempdir, write};

/// What the hook answered: exit status, the `systemMessage` of its JSON answer on stdout
/// (`None` when stdout is empty), and stderr.
#[derive(Debug)]
struct Answer {
    code: i32,
    message: Option<String>,
    stderr: String,
}

fn hook(input: &Value, setup: impl FnOnce(&mut std::process::Command)) -> Answer {
    let mut cmd = taskproof();
    cmd.args(["check", "--stdin"]).env_remove("HOME");
    setup(&mut cmd);
    let out = run_with_stdin(cmd, input.to_string().as_bytes());
    let message = (!out.stdout.is_empty()).then(|| {
        let doc: Value = serde_json::from_slice(&out.stdout).expect("stdout is one JSON object");
        doc["systemMessage"]
            .as_str()
            .expect("a systemMessage")
            .to_string()
    });
    Answer {
        code: out.status.code().unwrap(),
        message,
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

fn wire_task(n: u64, status: &str, blocks: &[u64], blocked_by: &[u64]) -> Value {
    serde_json::from_str(&task(Layout::Cc, n, status, blocks, blocked_by)).unwrap()
}

/// `CLAUDE_CONFIG_DIR` set to `dir`.
fn config(dir: &Path) -> impl Fn(&mut std::process::Command) + '_ {
    move |c| {
        c.env("CLAUDE_CONFIG_DIR", dir);
    }
}

/// A `PreToolUse` event of `TaskUpdate` from session `session`.
fn update(session: &str, input: Value) -> Value {
    json!({"session_id": session, "transcript_path": "/t.jsonl", "cwd": "/w",
           "permission_mode": "default", "hook_event_name": "PreToolUse",
           "tool_name": "TaskUpdate", "tool_input": input, "tool_use_id": "toolu_1"})
}

/// A `TaskCompleted` or `TaskCreated` event, as Claude Code 2.1.84 sends it.
fn task_event(name: &str, session: &str, id: &str, subject: &str) -> Value {
    json!({"session_id": session, "transcript_path": "/t.jsonl", "cwd": "/w",
           "hook_event_name": name, "task_id": id, "task_subject": subject,
           "task_description": ""})
}

fn snapshot_of(dir: &Path) -> Vec<(String, Vec<u8>)> {
    snapshot(dir)
}

#[test]
fn hook_passes_a_clean_array_and_blocks_a_cycle_with_the_findings_on_stderr() {
    let clean = json!([
        wire_task(1, "completed", &[2], &[]),
        wire_task(2, "pending", &[], &[1])
    ]);
    let a = hook(&clean, |_| {});
    assert_eq!((a.code, a.message, a.stderr), (0, None, String::new()));
    let cyclic = json!({"tasks": [
        wire_task(1, "pending", &[2], &[2]),
        wire_task(2, "pending", &[1], &[1])
    ]});
    let a = hook(&cyclic, |_| {});
    assert_eq!(a.code, 2);
    assert!(a.stderr.contains("[S7 cycle] 1.json"), "{a:?}");
    assert!(a.stderr.contains("1 -> 2 -> 1"), "{a:?}");
}

#[test]
fn hook_lets_harmless_updates_through_on_a_list_that_already_holds_a_cycle() {
    let tmp = tempdir();
    let list = tmp.path().join("tasks/s1");
    put(&list, Layout::Cc, 1, "pending", &[2], &[2]);
    put(&list, Layout::Cc, 2, "pending", &[1], &[1]);
    let before = snapshot_of(&list);
    for input in [
        json!({"taskId": "1", "owner": "me"}),
        json!({"taskId": "1", "description": "clarified"}),
        json!({"taskId": "2", "subject": "renamed", "activeForm": "Renaming"}),
    ] {
        let a = hook(&update("s1", input.clone()), config(tmp.path()));
        assert_eq!((a.code, a.stderr.as_str()), (0, ""), "{input}: {a:?}");
        // Not silent: the user learns the cycle is there, and how to see it.
        let m = a.message.expect("a note about the old cycle");
        assert!(m.contains("already has 1 problem"), "{m}");
        assert!(m.contains("1 -> 2 -> 1"), "{m}");
        assert!(
            m.contains(&format!("taskproof check {}", list.display())),
            "{m}"
        );
    }
    // The hook only reads.
    assert_eq!(snapshot_of(&list), before);
}

#[test]
fn hook_lets_a_task_completed_earlier_with_an_open_blocker_be_edited() {
    let tmp = tempdir();
    let list = tmp.path().join("tasks/s1");
    put(&list, Layout::Cc, 1, "pending", &[2], &[]);
    put(&list, Layout::Cc, 2, "completed", &[], &[1]);
    let a = hook(
        &update("s1", json!({"taskId": "2", "description": "clarified"})),
        config(tmp.path()),
    );
    assert_eq!(a.code, 0, "{a:?}");
    assert!(a.message.unwrap().contains("S5 completed-blocked 2.json"));
    // Setting it to completed again is no change of status either.
    let a = hook(
        &update("s1", json!({"taskId": "2", "status": "completed"})),
        config(tmp.path()),
    );
    assert_eq!(a.code, 0, "{a:?}");
}

#[test]
fn hook_refuses_a_task_update_that_closes_a_new_cycle() {
    let tmp = tempdir();
    let list = tmp.path().join("tasks/team");
    put(&list, Layout::Cc, 1, "pending", &[2], &[]);
    put(&list, Layout::Cc, 2, "pending", &[3], &[1]);
    put(&list, Layout::Cc, 3, "pending", &[], &[2]);
    let env = |c: &mut std::process::Command| {
        c.env("CLAUDE_CONFIG_DIR", tmp.path())
            .env("CLAUDE_CODE_TASK_LIST_ID", "team");
    };
    let a = hook(
        &update("other", json!({"taskId": "1", "addBlockedBy": ["3"]})),
        env,
    );
    assert_eq!(a.code, 2, "{a:?}");
    assert!(a.stderr.contains("[S7 cycle] 3.json"), "{a:?}");
    assert!(a.stderr.contains("3 -> 1 -> 2 -> 3"), "{a:?}");
    assert!(
        !a.stderr.contains("already has"),
        "the list was clean: {a:?}"
    );
    // The same edge from the other side, mirrored by the tool, is the same cycle.
    let a = hook(
        &update("other", json!({"taskId": "3", "addBlocks": ["1"]})),
        env,
    );
    assert_eq!(a.code, 2, "{a:?}");
    // A task made to block itself.
    let a = hook(
        &update("other", json!({"taskId": "2", "addBlocks": ["2"]})),
        env,
    );
    assert_eq!(a.code, 2, "{a:?}");
    assert!(a.stderr.contains("task 2 block itself"), "{a:?}");
    // An edge the list already has (on one side) adds nothing new.
    let a = hook(
        &update("other", json!({"taskId": "3", "addBlockedBy": ["2"]})),
        env,
    );
    assert_eq!((a.code, a.message), (0, None), "{}", a.stderr);
    // The list folder can also be named on the command line.
    let a = hook(
        &update("other", json!({"taskId": "1", "addBlockedBy": ["3"]})),
        |c| {
            c.arg(&list);
        },
    );
    assert_eq!(a.code, 2, "{a:?}");
}

#[test]
fn hook_reads_either_layout_and_counts_unreadable_files_as_old_problems() {
    for l in BOTH {
        let tmp = tempdir();
        let list = tmp.path().join("tasks/s1");
        put(&list, l, 1, "pending", &[2], &[]);
        put(&list, l, 2, "pending", &[], &[1]);
        write(&list, &file(l, 3), "{");
        let a = hook(
            &update("s1", json!({"taskId": "2", "addBlocks": ["1"]})),
            config(tmp.path()),
        );
        assert_eq!(a.code, 2, "{l:?}: {a:?}");
        assert!(a.stderr.contains("2 -> 1 -> 2"), "{l:?}: {a:?}");
        let m = a.stderr.lines().last().unwrap();
        assert!(m.contains("S15 malformed-json"), "{l:?}: {m}");
        // An edge to the unreadable task is one Claude Code would drop.
        let a = hook(
            &update("s1", json!({"taskId": "2", "addBlocks": ["3"]})),
            config(tmp.path()),
        );
        assert_eq!(a.code, 2, "{l:?}: {a:?}");
        assert!(
            a.stderr.contains("the file of task 3 cannot be read"),
            "{l:?}: {a:?}"
        );
    }
}

#[test]
fn hook_refuses_a_new_cycle_on_a_list_that_already_holds_another() {
    let tmp = tempdir();
    let list = tmp.path().join("tasks/s1");
    put(&list, Layout::Cc, 1, "pending", &[2], &[2]);
    put(&list, Layout::Cc, 2, "pending", &[1], &[1]);
    put(&list, Layout::Cc, 3, "pending", &[], &[]);
    put(&list, Layout::Cc, 4, "pending", &[3], &[]);
    put(&list, Layout::Cc, 3, "pending", &[], &[4]);
    let a = hook(
        &update("s1", json!({"taskId": "4", "addBlockedBy": ["3"]})),
        config(tmp.path()),
    );
    assert_eq!(a.code, 2, "{a:?}");
    assert!(a.stderr.contains("3 -> 4 -> 3"), "{a:?}");
    assert!(!a.stderr.contains("1 -> 2 -> 1\n- "), "{a:?}");
    // The old cycle is named once, as a note, not as a reason.
    assert!(a.stderr.contains("already has 1 problem"), "{a:?}");
    assert_eq!(a.stderr.matches("[S7 cycle]").count(), 1, "{a:?}");
}

#[test]
fn hook_refuses_what_the_change_sets_and_nothing_it_leaves_alone() {
    let tmp = tempdir();
    let list = tmp.path().join("tasks/s1");
    put(&list, Layout::Cc, 1, "in_progress", &[2], &[]);
    put(&list, Layout::Cc, 2, "pending", &[3], &[1]);
    put(&list, Layout::Cc, 3, "done", &[], &[2]);
    let run = |input: Value| hook(&update("s1", input), config(tmp.path()));
    let refused = |input: Value, tag: &str| {
        let a = run(input.clone());
        assert_eq!(a.code, 2, "{input}: {a:?}");
        assert!(a.stderr.contains(tag), "{input}: {a:?}");
    };
    refused(
        json!({"taskId": "1", "addBlocks": ["9"]}),
        "[S6 dangling] 1.json: this change adds \"9\" to addBlocks of task 1, but list s1 has no task \"9\"",
    );
    refused(
        json!({"taskId": "1", "status": "done"}),
        "[S15 unknown-status] 1.json",
    );
    refused(
        json!({"taskId": "2", "status": "in_progress"}),
        "[S5 started-blocked] 2.json: this change makes task 2 in_progress while its blocker 1 (in_progress) is not completed",
    );
    refused(
        json!({"taskId": "2", "status": "completed"}),
        "[S5 completed-blocked] 2.json",
    );
    refused(
        json!({"taskId": "2", "subject": "x".repeat(201)}),
        "[S15 schema] 2.json: subject: this change makes it 201 characters long",
    );
    refused(json!({"taskId": "2", "subject": ""}), "[S15 schema] 2.json");
    // Task 3's status "done" was there before: other edits of it pass, with a note.
    let a = run(json!({"taskId": "3", "owner": "me"}));
    assert_eq!(a.code, 0, "{a:?}");
    assert!(a.message.unwrap().contains("unknown-status"));
    // Starting a task whose blockers are done, deleting one, and updating a task that does
    // not exist (the tool refuses that itself) pass.
    assert_eq!(run(json!({"taskId": "1", "status": "completed"})).code, 0);
    assert_eq!(run(json!({"taskId": "2", "status": "deleted"})).code, 0);
    let a = run(json!({"taskId": "7", "addBlocks": ["9"]}));
    assert_eq!(a.code, 0, "{a:?}");
    assert!(a.message.unwrap().contains("has no readable task \"7\""));
    assert_eq!(run(json!({"taskId": "1", "addBlocks": ["2"]})).code, 0);
}

#[test]
fn hook_refuses_making_a_completed_task_wait_on_an_unfinished_one() {
    let tmp = tempdir();
    let list = tmp.path().join("tasks/s1");
    put(&list, Layout::Cc, 1, "pending", &[], &[]);
    put(&list, Layout::Cc, 2, "completed", &[], &[]);
    let a = hook(
        &update("s1", json!({"taskId": "1", "addBlocks": ["2"]})),
        config(tmp.path()),
    );
    assert_eq!(a.code, 2, "{a:?}");
    assert!(
        a.stderr
            .contains("[S5 completed-blocked] 2.json: this change makes completed task 2 wait on task 1 (pending)"),
        "{a:?}"
    );
}

#[test]
fn hook_refuses_completing_a_task_with_an_unfinished_blocker_on_the_list_it_finds() {
    let tmp = tempdir();
    let list = tmp.path().join("tasks/session-1");
    put(&list, Layout::Cc, 1, "in_progress", &[2], &[]);
    put(&list, Layout::Cc, 2, "in_progress", &[], &[1]);
    let a = hook(
        &task_event("TaskCompleted", "session-1", "2", "task 2"),
        config(tmp.path()),
    );
    assert_eq!(a.code, 2, "{a:?}");
    assert!(a.stderr.contains("[S5 completed-blocked] 2.json"), "{a:?}");
    assert!(a.stderr.contains("session-1"), "{a:?}");
    // Task 1 has no blocker: completing it is fine, in silence.
    let a = hook(
        &task_event("TaskCompleted", "session-1", "1", "task 1"),
        config(tmp.path()),
    );
    assert_eq!((a.code, a.message, a.stderr), (0, None, String::new()));
}

#[test]
fn hook_warns_and_lets_through_when_it_cannot_find_the_list() {
    let tmp = tempdir();
    // The session's own list is elsewhere: this session id names no folder.
    put(
        &tmp.path().join("tasks/elsewhere"),
        Layout::Cc,
        1,
        "pending",
        &[],
        &[],
    );
    let missing = tmp.path().join("tasks/no-such-session");
    let a = hook(
        &update(
            "no-such-session",
            json!({"taskId": "1", "addBlocks": ["2"]}),
        ),
        config(tmp.path()),
    );
    assert_eq!((a.code, a.stderr.as_str()), (0, ""), "{a:?}");
    let m = a.message.expect("a warning the user sees");
    assert!(m.contains(&missing.display().to_string()), "{m}");
    assert!(m.contains("session_id \"no-such-session\""), "{m}");
    // A TaskCompleted it cannot check is not passed in silence either.
    let a = hook(
        &task_event("TaskCompleted", "no-such-session", "2", "t"),
        config(tmp.path()),
    );
    assert_eq!(a.code, 0, "{a:?}");
    assert!(a.message.unwrap().contains(&missing.display().to_string()));
    // Nor one whose list folder cannot be read.
    write(&tmp.path().join("tasks"), "a-file", "");
    let a = hook(
        &task_event("TaskCompleted", "a-file", "2", "t"),
        config(tmp.path()),
    );
    assert_eq!(a.code, 0, "{a:?}");
    assert!(a.message.unwrap().contains("a-file"));
}

#[test]
fn hook_finds_a_task_list_id_by_claude_codes_sanitised_name() {
    let tmp = tempdir();
    let env = |c: &mut std::process::Command| {
        c.env("CLAUDE_CONFIG_DIR", tmp.path())
            .env("CLAUDE_CODE_TASK_LIST_ID", "my.project");
    };
    let harmless = update("s", json!({"taskId": "1", "addBlocks": ["2"]}));
    // No list yet: let through, with a warning naming the folder Claude Code would use.
    let a = hook(&harmless, env);
    assert_eq!((a.code, a.stderr.as_str()), (0, ""), "{a:?}");
    let m = a.message.unwrap();
    assert!(
        m.contains(&tmp.path().join("tasks/my-project").display().to_string()),
        "{m}"
    );
    assert!(m.contains("CLAUDE_CODE_TASK_LIST_ID=\"my.project\""), "{m}");
    // Claude Code 2.1.17 writes "my.project" to tasks/my-project: found, judged, passed.
    let list = tmp.path().join("tasks/my-project");
    put(&list, Layout::Cc, 1, "pending", &[], &[]);
    put(&list, Layout::Cc, 2, "pending", &[], &[]);
    let a = hook(&harmless, env);
    assert_eq!((a.code, a.message, a.stderr), (0, None, String::new()));
    // And `../x` is `---x`, never a way out of the folder of lists.
    let a = hook(&harmless, |c| {
        c.env("CLAUDE_CONFIG_DIR", tmp.path())
            .env("CLAUDE_CODE_TASK_LIST_ID", "../x");
    });
    assert!(a.message.unwrap().contains("tasks/---x"));
}

#[test]
fn hook_finds_a_teams_list_for_its_teammates_and_its_lead() {
    let tmp = tempdir();
    let list = tmp.path().join("tasks/my-team");
    put(&list, Layout::Cc, 1, "pending", &[2], &[]);
    put(&list, Layout::Cc, 2, "pending", &[], &[1]);
    // A teammate's TaskCompleted carries the team's name.
    let mut ev = task_event("TaskCompleted", "teammate-session", "2", "task 2");
    ev["team_name"] = json!("my-team");
    ev["teammate_name"] = json!("researcher");
    let a = hook(&ev, config(tmp.path()));
    assert_eq!(a.code, 2, "{a:?}");
    assert!(a.stderr.contains("list my-team"), "{a:?}");
    // A teammate's tool call carries its agent id, name@team.
    let mut ev = update(
        "teammate-session",
        json!({"taskId": "2", "addBlocks": ["1"]}),
    );
    ev["agent_id"] = json!("researcher@my-team");
    let a = hook(&ev, config(tmp.path()));
    assert_eq!(a.code, 2, "{a:?}");
    assert!(a.stderr.contains("2 -> 1 -> 2"), "{a:?}");
    // The lead's session is named in the team's configuration; its list is the team's.
    write(
        &tmp.path().join("teams/my-team"),
        "config.json",
        r#"{"name": "My Team", "leadSessionId": "lead-session", "members": []}"#,
    );
    let a = hook(
        &update("lead-session", json!({"taskId": "2", "addBlocks": ["1"]})),
        config(tmp.path()),
    );
    assert_eq!(a.code, 2, "{a:?}");
}

#[test]
fn hook_refuses_creating_a_task_with_a_bad_subject() {
    let tmp = tempdir();
    let list = tmp.path().join("tasks/s1");
    put(&list, Layout::Cc, 1, "pending", &[], &[]);
    // TaskCreated comes after the write: the task is on disk, and its own problem is not an
    // old one.
    write(
        &list,
        "2.json",
        r#"{"id":"2","subject":"","description":"","status":"pending","blocks":[],"blockedBy":[]}"#,
    );
    let a = hook(
        &task_event("TaskCreated", "s1", "2", ""),
        config(tmp.path()),
    );
    assert_eq!(a.code, 2, "{a:?}");
    assert!(a.stderr.contains("[S15 schema] 2.json: subject"), "{a:?}");
    assert!(!a.stderr.contains("already has"), "{a:?}");
    let a = hook(
        &task_event("TaskCreated", "s1", "1", "task 1"),
        config(tmp.path()),
    );
    assert_eq!(a.code, 0, "{a:?}");
    // Before the write, as a PreToolUse hook of TaskCreate.
    let create = |subject: &str| {
        json!({"session_id": "s1", "hook_event_name": "PreToolUse", "tool_name": "TaskCreate",
               "tool_input": {"subject": subject, "description": "d"}})
    };
    let a = hook(&create(&"é".repeat(201)), config(tmp.path()));
    assert_eq!(a.code, 2, "{a:?}");
    assert!(a.stderr.contains("[S15 schema] 3.json"), "{a:?}");
    let a = hook(&create(&"é".repeat(200)), config(tmp.path()));
    assert_eq!(a.code, 0, "{a:?}");
}

#[test]
fn hook_as_a_post_tool_use_hook_judges_nothing() {
    let ev = json!({"session_id": "s", "hook_event_name": "PostToolUse", "tool_name": "TaskUpdate",
                    "tool_input": {"taskId": "1", "addBlockedBy": ["1"]},
                    "tool_response": {"success": true}});
    // It keeps the journal (tests/check_journal.rs), and without a list there is none to keep:
    // the change is written already, so nothing is refused and nothing said.
    let a = hook(&ev, |_| {});
    assert_eq!((a.code, a.message, a.stderr), (0, None, String::new()));
    // With --no-journal it does nothing at all, and says so.
    let a = hook(&ev, |c| {
        c.arg("--no-journal");
    });
    assert_eq!(a.code, 0);
    assert!(a.message.unwrap().contains("install it on PreToolUse"));
}

#[test]
fn hook_input_it_cannot_read_is_a_non_blocking_error() {
    let mut cmd = taskproof();
    cmd.args(["check", "--stdin"]);
    let out = run_with_stdin(cmd, b"not json");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("not valid JSON"), "{stderr}");
}
