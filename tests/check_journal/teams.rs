//! Lists under agent teams (issue 54): a list folder renamed away is named `moved`, one
//! removed with its tasks is `vanished` and restored from its journal, and a session's own
//! list left out of reach of the running session that made it is `stranded` and put where
//! that session reads. tests/claude_code_teams.rs does the last in the real Claude Code;
//! here the CLI's files are written as measured there (2.1.276: `sessions/<pid>.json` of the
//! running CLI, a team record under a fresh id, made 94 ms before the process record).

use super::*;

/// A folder rename, as Claude Code's `rename(tasks/<session id>, tasks/session-<8 hex>)`.
#[test]
fn a_list_folder_renamed_is_moved_and_one_removed_is_vanished_and_restored() {
    let c = Config::new();
    let one = c.write_task(1, "Alpha", "pending");
    let two = c.write_task(2, "Beta", "in_progress");
    let tasks = c.dir.join("tasks");
    std::fs::rename(c.list(), tasks.join("session-0675e12e")).unwrap();
    let (code, doc, stderr) = check(&tasks, &[]);
    assert_eq!(code, 1, "{doc:#}\n{stderr}");
    let moved = of_kind(&doc, "moved");
    assert_eq!(moved.len(), 1, "{doc:#}");
    let m = &moved["."];
    assert!(
        m.contains("all 2 tasks its journal had live are in the list session-0675e12e"),
        "{m}"
    );
    assert!(
        of_kind(&doc, "vanished").is_empty(),
        "nothing vanished: {doc:#}"
    );
    let f = doc["findings"].as_array().unwrap();
    assert_eq!(f[0]["list"], LIST);
    // Not a rule of the store: named as taskproof's own findings are.
    assert_eq!(f[0]["rule"], "audit", "{f:?}");

    // Gone with its tasks: each one vanished, and --restore writes them into a new list.
    std::fs::remove_dir_all(tasks.join("session-0675e12e")).unwrap();
    let (code, doc, stderr) = check(&tasks, &[]);
    assert_eq!(code, 1, "{doc:#}\n{stderr}");
    let gone = of_kind(&doc, "vanished");
    assert_eq!(
        gone.keys().collect::<Vec<_>>(),
        [".", "1.json", "2.json"],
        "{doc:#}"
    );
    assert!(
        gone["."].contains("is gone with the 2 tasks"),
        "{}",
        gone["."]
    );
    assert!(
        gone["1.json"].contains(&format!(
            "restore it with `taskproof check --restore {}`",
            tasks.display()
        )),
        "{}",
        gone["1.json"]
    );
    let (code, doc, stderr) = check(&tasks, &["--restore"]);
    assert_eq!(code, 0, "{doc:#}\n{stderr}");
    let new: Vec<&str> = doc["lists"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["name"].as_str().unwrap())
        .collect();
    assert_eq!(new.len(), 1, "{doc:#}");
    assert!(new[0].starts_with("plan-restored-"), "{new:?}");
    let got = files(&tasks.join(new[0]));
    assert_eq!((&got["1.json"], &got["2.json"]), (&one, &two));
    assert_eq!(got[".highwatermark"], b"2");
    let (code, doc, _) = check(&tasks, &[]);
    assert_eq!(code, 0, "restored once, named no more: {doc:#}");
}

/// A child process that stands for a running CLI, ended when dropped.
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

const SESSION: &str = "a6a188cb-d0a1-488e-a0b2-37177ed07b39";

/// The files a 2.1.276 CLI resumed with teams on leaves: its process record, a team under
/// a fresh id in its folder, and the session's list `session-a6a188cb` from before.
fn resumed_with_teams(c: &Config) -> (Running, Vec<u8>, Vec<u8>) {
    let cli = Running(
        std::process::Command::new("sleep")
            .arg("120")
            .spawn()
            .unwrap(),
    );
    let pid = cli.0.id();
    let started = now_ms();
    let cwd = c.dir.join("work");
    write(
        &c.dir.join("sessions"),
        &format!("{pid}.json"),
        &json!({"pid": pid, "sessionId": SESSION, "cwd": cwd, "startedAt": started,
                "version": "2.1.276", "kind": "interactive"})
        .to_string(),
    );
    write(
        &c.dir.join("teams").join("session-3f6f443e"),
        "config.json",
        &json!({"name": "session-3f6f443e", "createdAt": started - 94,
                "leadAgentId": "team-lead@session-3f6f443e",
                "leadSessionId": "3f6f443e-d8b2-425a-97df-c15fee0d3195",
                "members": [{"agentId": "team-lead@session-3f6f443e", "name": "team-lead",
                             "agentType": "team-lead", "cwd": cwd, "backendType": "in-process"}]})
        .to_string(),
    );
    let tasks = c.dir.join("tasks");
    std::fs::create_dir_all(tasks.join("session-3f6f443e")).unwrap();
    let task = |id: u64, subject: &str, blocks: &[&str], blocked_by: &[&str]| {
        serde_json::to_string_pretty(&json!({"id": id.to_string(), "subject": subject,
            "description": subject, "activeForm": subject, "status": "pending",
            "blocks": blocks, "blockedBy": blocked_by}))
        .unwrap()
    };
    let old = tasks.join("session-a6a188cb");
    write(&old, "1.json", &task(1, "a", &["2"], &[]));
    write(&old, "2.json", &task(2, "b", &[], &["1"]));
    let one = std::fs::read(old.join("1.json")).unwrap();
    let two = std::fs::read(old.join("2.json")).unwrap();
    (cli, one, two)
}

#[test]
fn a_sessions_list_out_of_reach_is_stranded_and_put_where_the_session_reads() {
    let c = Config::new();
    let (cli, one, two) = resumed_with_teams(&c);
    let tasks = c.dir.join("tasks");
    let old = tasks.join("session-a6a188cb");
    let new = tasks.join("session-3f6f443e");
    let (code, doc, stderr) = check(&tasks, &[]);
    assert_eq!(code, 1, "{doc:#}\n{stderr}");
    let stranded = of_kind(&doc, "stranded");
    assert_eq!(
        stranded.keys().collect::<Vec<_>>(),
        ["1.json", "2.json"],
        "{doc:#}"
    );
    let m = &stranded["1.json"];
    for want in [
        format!("task 1 \"a\" (pending) is out of reach of session {SESSION} (process {}", cli.0.id()),
        "this list is that session's (its name)".into(),
        "but it reads the list session-3f6f443e now (the team session-3f6f443e made 94 ms from the start".into(),
    ] {
        assert!(m.contains(&want), "missing {want:?} in {m}");
    }
    let rule = doc["findings"].as_array().unwrap()[0]["rule"].clone();
    assert_eq!(rule, "S14");
    // The same list named alone is judged the same way.
    let (code, alone, _) = check(&old, &[]);
    assert_eq!(
        (code, of_kind(&alone, "stranded").len()),
        (1, 2),
        "{alone:#}"
    );

    let (code, doc, stderr) = check(&tasks, &["--restore"]);
    assert_eq!(code, 0, "{doc:#}\n{stderr}");
    let got = files(&new);
    assert_eq!(
        (&got["1.json"], &got["2.json"]),
        (&one, &two),
        "ids free: byte for byte"
    );
    assert_eq!(files(&old)["1.json"], one, "the old list is left as it was");
    assert!(
        stderr.contains("written into the list their session reads now"),
        "{stderr}"
    );
    let changes: Vec<&str> = doc["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["change"].as_str().unwrap())
        .collect();
    assert!(
        changes[0].starts_with(&format!("put 1.json into {}", new.display())),
        "{changes:?}"
    );
    let (code, doc, _) = check(&tasks, &[]);
    assert_eq!(code, 0, "put once, named no more: {doc:#}");
    // A restore whose record in the journal was lost is not made twice: the list the
    // session reads holds the same bytes under the same names.
    std::fs::remove_file(tasks.join(".taskproof-journal/session-a6a188cb.jsonl")).unwrap();
    let (code, doc, _) = check(&tasks, &[]);
    assert_eq!(code, 0, "{doc:#}");

    // Once the CLI ended, nothing says where a session would read: nothing is stranded.
    drop(cli);
    std::fs::remove_dir_all(&new).unwrap();
    std::fs::remove_dir_all(tasks.join(".taskproof-journal")).unwrap();
    let (code, doc, _) = check(&tasks, &[]);
    assert!(of_kind(&doc, "stranded").is_empty(), "{doc:#}");
    assert_eq!(code, 0, "{doc:#}");
}

/// The hook of a resumed lead whose team is keyed to a fresh id journals the team's list,
/// found by its process (before, it fell back to a `<session id>` folder that does not exist).
#[test]
fn the_hook_of_a_resumed_lead_finds_its_team_by_its_process() {
    let c = Config::new();
    let (cli, _, _) = resumed_with_teams(&c);
    let new = c.dir.join("tasks").join("session-3f6f443e");
    write(
        &new,
        "1.json",
        &serde_json::to_string_pretty(&json!({"id": "1", "subject": "c",
        "description": "", "activeForm": "", "status": "pending", "blocks": [], "blockedBy": []}))
        .unwrap(),
    );
    let event = json!({"session_id": SESSION, "hook_event_name": "PreToolUse",
        "tool_name": "TaskUpdate", "tool_input": {"taskId": "1", "owner": "w1"},
        "tool_use_id": "toolu_1"});
    // The hook as a lead's CLI runs it: no list id in its environment.
    let hook = || {
        let mut cmd = taskproof();
        cmd.args(["check", "--stdin"])
            .env("CLAUDE_CONFIG_DIR", &c.dir)
            .env_remove("CLAUDE_CODE_TASK_LIST_ID")
            .env_remove("HOME");
        run_with_stdin(cmd, event.to_string().as_bytes())
    };
    let out = hook();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(
        out.stdout.is_empty(),
        "no message: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let journal = c
        .dir
        .join("tasks/.taskproof-journal/session-3f6f443e.jsonl");
    let text = std::fs::read_to_string(&journal)
        .unwrap_or_else(|e| panic!("no journal of the team's list {}: {e}", journal.display()));
    assert!(text.contains(r#""op":"seen","file":"1.json""#), "{text}");
    assert!(
        text.contains(&format!(r#""op":"run","session":"{SESSION}""#)),
        "{text}"
    );
    // Without the team, the same event finds no list and says so.
    std::fs::remove_dir_all(c.dir.join("teams")).unwrap();
    let out = hook();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(&format!(
            "there is no task list folder {}",
            c.dir.join("tasks").join(SESSION).display()
        )),
        "{said}"
    );
    drop(cli);
}
