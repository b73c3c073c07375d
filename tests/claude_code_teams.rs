//! Claude Code with agent teams on (issue 54): the configurations of a `claude-code@` target
//! run the real CLI, unmodified, with teams switched on the three ways a user would do it
//! (the flag is refused by the CLI), and the session finds the session's own list where the
//! CLI keeps it.
//!
//! They need node and npm and the versions in the cache (`.ci/run` fills it); without node
//! they are ignored, and under CI a missing tool fails them (tests/util.rs `require`). The versions are
//! `TASKPROOF_TEST_CLAUDE_CODE_NEWEST` (default 2.1.332, which keeps the list on resume
//! with teams on) and `TASKPROOF_TEST_CLAUDE_CODE_TEAMS_LOST` (default 2.1.276, which loses
//! it: docs/claude-code.md, "Agent teams").

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use taskproof_claude_code::{ClaudeCode, ClaudeCodeSession, Config};
use taskproof_session::{Drive, Session, SessionEvent, SessionOptions};

fn prepared(env: &str, default: &str, config: Config) -> Option<ClaudeCode> {
    crate::util::require(&[crate::util::Tool::Npm]);
    let version = std::env::var(env).unwrap_or_else(|_| default.into());
    let cc = ClaudeCode::parse(&version)
        .expect("a version number")
        .with_config(config);
    cc.prepare().expect("install Claude Code with npm");
    Some(cc)
}

/// A session that plays a user: the terminal UI, where teams rename the own list.
fn options() -> SessionOptions {
    SessionOptions {
        timeout: Duration::from_secs(60),
        start_timeout: Duration::from_secs(120),
        interactive: true,
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

/// The folders of the root holding a task file `1.json`.
fn lists_with_tasks(root: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(root)
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("1.json").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    out.sort();
    out
}

fn is_session_folder(name: &str) -> bool {
    name.strip_prefix("session-")
        .is_some_and(|hex| hex.len() == 8 && hex.chars().all(|c| c.is_ascii_hexdigit()))
}

#[test]
#[cfg_attr(not(taskproof_has_npm), ignore = "needs node and npm on PATH")]
fn each_way_of_switching_teams_on_makes_the_own_list_a_session_folder() {
    for config in Config::ALL {
        let Some(cc) = prepared("TASKPROOF_TEST_CLAUDE_CODE_NEWEST", "2.1.332", config) else {
            return;
        };
        let root = tempfile::tempdir().unwrap();
        let mut s = ClaudeCodeSession::open(&cc, root.path(), options())
            .unwrap_or_else(|(e, err)| panic!("{config}: open: {e}\n{err}"));
        assert_eq!(s.drive(), Drive::Terminal);
        if config == Config::TeamsFlag {
            // The teams gate reads `--agent-teams` from the process's arguments, but the
            // command-line parser refuses it: the CLI does not start (measured on 2.1.177,
            // 2.1.257, 2.1.276, 2.1.311 and 2.1.332).
            let e = s
                .call(&json!({"op": "create", "list": "@session", "task": {"subject": "a"}}))
                .expect_err("the CLI refuses --agent-teams");
            assert!(
                e.to_string().contains("unknown option '--agent-teams'"),
                "{e}\n{}",
                s.stderr()
            );
            assert!(lists_with_tasks(root.path()).is_empty());
            continue;
        }
        let a = call(
            &mut s,
            json!({"op": "create", "list": "@session", "task": {"subject": "a"}}),
        );
        assert_eq!(a["task"]["subject"], "a", "{config}: read from its file");
        let lists = lists_with_tasks(root.path());
        let own = s
            .own_list()
            .expect("the own list is known once its CLI ran");
        assert_eq!(
            lists,
            std::slice::from_ref(&own),
            "{config}\n{}",
            s.stderr()
        );
        if config.teams() {
            assert!(is_session_folder(&own), "{config}: {own}\n{}", s.stderr());
            assert!(
                s.stderr().contains(&format!("made team {own}")),
                "{config}: the CLI's team record names the folder\n{}",
                s.stderr()
            );
        } else {
            // The session id itself: a UUID.
            assert_eq!(own.len(), 36, "{config}: {own}");
            assert!(!s.stderr().contains("agent teams"), "{}", s.stderr());
        }
        s.close().unwrap();
    }
}

/// A terminal session of `cc` on `root` (with `extra`) whose own list has tasks `a` and `b`.
fn with_two_tasks(
    cc: &ClaudeCode,
    root: &Path,
    extra: &taskproof_claude_code::Extra,
) -> ClaudeCodeSession {
    let mut s = ClaudeCodeSession::open_with(cc, root, options(), extra)
        .unwrap_or_else(|(e, err)| panic!("open: {e}\n{err}"));
    for subject in ["a", "b"] {
        call(
            &mut s,
            json!({"op": "create", "list": "@session", "task": {"subject": subject}}),
        );
    }
    s
}

/// Creates two tasks on the own list, `/exit`s and resumes by session id, then lists.
fn resume_and_list(cc: &ClaudeCode) -> (Value, Vec<String>, String, String, String) {
    let root = tempfile::tempdir().unwrap();
    let mut s = with_two_tasks(cc, root.path(), &Default::default());
    let before = s.own_list().unwrap();
    s.event(SessionEvent::Exit).unwrap();
    s.event(SessionEvent::Resume).unwrap();
    let listed = call(&mut s, json!({"op": "list", "list": "@session"}));
    let after = s.own_list().unwrap();
    let lists = lists_with_tasks(root.path());
    let stderr = s.stderr();
    s.close().unwrap();
    (listed, lists, before, after, stderr)
}

#[test]
#[cfg_attr(not(taskproof_has_npm), ignore = "needs node and npm on PATH")]
fn with_teams_on_the_newest_version_keeps_the_own_list_on_resume() {
    let Some(cc) = prepared(
        "TASKPROOF_TEST_CLAUDE_CODE_NEWEST",
        "2.1.332",
        Config::TeamsEnv,
    ) else {
        return;
    };
    let (listed, lists, before, after, stderr) = resume_and_list(&cc);
    assert_eq!(listed["tasks"].as_array().unwrap().len(), 2, "{stderr}");
    assert!(is_session_folder(&before), "{before}");
    assert_eq!(
        before, after,
        "the team is keyed to the resumed id\n{stderr}"
    );
    assert_eq!(lists, [before]);
}

#[test]
#[cfg_attr(not(taskproof_has_npm), ignore = "needs node and npm on PATH")]
fn with_teams_on_2_1_276_loses_the_own_list_on_resume_and_leaves_its_files() {
    let Some(cc) = prepared(
        "TASKPROOF_TEST_CLAUDE_CODE_TEAMS_LOST",
        "2.1.276",
        Config::TeamsEnv,
    ) else {
        return;
    };
    let (listed, lists, before, after, stderr) = resume_and_list(&cc);
    assert_eq!(listed["tasks"], json!([]), "No tasks found\n{stderr}");
    assert!(is_session_folder(&before) && is_session_folder(&after));
    assert_ne!(before, after, "a new team under a fresh id\n{stderr}");
    // The two task files lie untouched in the old folder; the new one holds none.
    assert_eq!(lists, std::slice::from_ref(&before));
    // With teams off the same version keeps it.
    let off = cc.with_config(Config::TeamsOff);
    let (listed, _, before, after, stderr) = resume_and_list(&off);
    assert_eq!(listed["tasks"].as_array().unwrap().len(), 2, "{stderr}");
    assert_eq!(before, after);
}

/// `taskproof run --target claude-code@VERSION:teams-env --filter
/// team-lead-and-two-teammates-share-the-list`, with the model's log: the lead and two
/// in-process teammates on the team's list, each member's `TaskList` judged, then `/exit`.
/// Returns the scenario's stderr (the session's transcript) and the log's requests.
fn run_team_scenario(target: &str) -> (String, Vec<Value>) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("model-log");
    let out = crate::util::taskproof_in(dir.path())
        .args(["run", "--target", target])
        .args(["--filter", "team-lead-and-two-teammates-share-the-list"])
        .args(["--report", "json:r.json"])
        .arg("--model-log")
        .arg(&log)
        .output()
        .expect("run taskproof");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{target}: {stdout}{stderr}");
    assert!(
        stdout.ends_with("1 passed, 0 failed, 0 errors, 0 skipped\n"),
        "{stdout}{stderr}"
    );
    let text =
        std::fs::read_to_string(log.join("team-lead-and-two-teammates-share-the-list.jsonl"))
            .expect("the model's log");
    let lines = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let report: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("r.json")).unwrap()).unwrap();
    let transcript = report["scenarios"][0]["stderr"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    (transcript, lines)
}

/// The turns the model's log names, as (member or "lead", request number, what the model
/// answered: the tool it called).
fn turns(log: &[Value]) -> Vec<(String, u64, String)> {
    log.iter()
        .filter(|l| l["note"]["turn"] == "prompt")
        .map(|l| {
            (
                l["note"]["member"].as_str().unwrap_or("lead").to_string(),
                l["note"]["request"].as_u64().unwrap(),
                l["answer"][0]["name"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn team_scenario_runs_with_each_member_answered_in_its_own_conversation(cc: &ClaudeCode) {
    let version = cc.to_string();
    let (transcript, log) = run_team_scenario(&version);
    // `/exit` ended the lead with its teammates and deleted the team; the list stays.
    assert!(
        transcript
            .contains("(members team-lead, w1, w2) was deleted at /exit; its list folder is kept"),
        "{version}: {transcript}"
    );
    let turns = turns(&log);
    let t = |who: &str, n: u64, tool: &str| (who.to_string(), n, tool.to_string());
    // The lead takes every prompt; for a member's request it spawns the teammate (Agent)
    // or sends it the prompt (SendMessage), and the tool call that does the request comes
    // in that teammate's own conversation.
    assert_eq!(
        turns,
        [
            t("lead", 1, "TaskCreate"),
            t("lead", 2, "TaskCreate"),
            t("lead", 3, "Agent"),
            t("w1", 3, "TaskList"),
            t("lead", 4, "SendMessage"),
            t("w1", 4, "TaskUpdate"),
            t("lead", 5, "Agent"),
            t("w2", 5, "TaskUpdate"),
            t("lead", 6, "SendMessage"),
            t("w2", 6, "TaskCreate"),
            t("lead", 7, "SendMessage"),
            t("w1", 7, "TaskUpdate"),
            t("lead", 8, "SendMessage"),
            t("w2", 8, "TaskList"),
            t("lead", 9, "SendMessage"),
            t("w1", 9, "TaskUpdate"),
            t("lead", 10, "TaskList"),
            t("lead", 11, "SendMessage"),
            t("w2", 11, "TaskGet"),
        ],
        "{version}"
    );
    // Every tool result of a member's call came back in that member's conversation.
    for l in log.iter().filter(|l| l["note"]["turn"] == "result") {
        let id = l["note"]["tool_use_id"].as_str().unwrap();
        let call = log
            .iter()
            .find(|c| c["answer"][0]["id"] == id)
            .unwrap_or_else(|| panic!("{version}: no call {id}"));
        assert_eq!(
            l["note"]["member"], call["note"]["member"],
            "{version}: {id}"
        );
    }
}

#[test]
#[cfg_attr(not(taskproof_has_npm), ignore = "needs node and npm on PATH")]
fn a_lead_and_two_teammates_share_the_team_list_on_the_newest_version() {
    let Some(cc) = prepared(
        "TASKPROOF_TEST_CLAUDE_CODE_NEWEST",
        "2.1.332",
        Config::TeamsEnv,
    ) else {
        return;
    };
    team_scenario_runs_with_each_member_answered_in_its_own_conversation(&cc);
}

#[test]
#[cfg_attr(not(taskproof_has_npm), ignore = "needs node and npm on PATH")]
fn a_lead_and_two_teammates_share_the_team_list_before_2_1_300() {
    let Some(cc) = prepared(
        "TASKPROOF_TEST_CLAUDE_CODE_TEAMS_LOST",
        "2.1.276",
        Config::TeamsEnv,
    ) else {
        return;
    };
    team_scenario_runs_with_each_member_answered_in_its_own_conversation(&cc);
}

/// `taskproof check ARGS` with the session's configuration folder as `CLAUDE_CONFIG_DIR`,
/// as a user runs it beside their CLI: exit status and stdout, stderr.
fn check_config(config: &Path, args: &[&str]) -> (i32, String) {
    let out = crate::util::taskproof()
        .arg("check")
        .args(args)
        .env("CLAUDE_CONFIG_DIR", config)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    eprintln!("$ taskproof check {}\n{text}", args.join(" "));
    (out.status.code().unwrap(), text)
}

fn subjects(listed: &Value) -> Vec<String> {
    let mut out: Vec<String> = listed["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["subject"].as_str().unwrap().to_string())
        .collect();
    out.sort();
    out
}

/// Issue 54, `check` under teams: the hook installed as docs/hooks/settings.json says, two
/// tasks made, `/exit`, `--resume <id>`. On a version that strands the list (2.1.276) the
/// resumed CLI answers "No tasks found"; then a task is made in the new list, `check` names
/// both old tasks `stranded` with the list the session reads, `--restore` writes them there
/// (renumbered after the new task's id), the same running CLI lists all three, its next task
/// takes the next id, and `check` is clean. On a version that keeps the list, `check` is
/// clean after the resume.
fn stranded_by_resume_named_and_restored(cc: &ClaudeCode, version: &str, strands: bool) {
    let root = tempfile::tempdir().unwrap();
    let extra = taskproof_claude_code::Extra {
        settings: Some(crate::claude_code_hook::snippet_for(version)),
        path: vec![crate::claude_code_hook::bin_dir()],
    };
    let mut s = with_two_tasks(cc, root.path(), &extra);
    let before = s.own_list().unwrap();
    let files = |list: &str| -> Vec<(String, Vec<u8>)> {
        ["1.json", "2.json"]
            .iter()
            .filter_map(|f| {
                Some((
                    f.to_string(),
                    std::fs::read(root.path().join(list).join(f)).ok()?,
                ))
            })
            .collect()
    };
    let made = files(&before);
    assert_eq!(made.len(), 2, "{}", s.stderr());
    s.event(SessionEvent::Exit).unwrap();
    s.event(SessionEvent::Resume).unwrap();
    let config = s.config_dir().to_path_buf();
    let listed = call(&mut s, json!({"op": "list", "list": "@session"}));
    let after = s.own_list().unwrap();
    if !strands {
        assert_eq!(subjects(&listed), ["a", "b"], "{}", s.stderr());
        let (code, out) = check_config(&config, &[]);
        assert_eq!(code, 0, "nothing is out of reach: {out}");
        assert!(!out.contains("stranded"), "{out}");
        s.close().unwrap();
        return;
    }
    assert_eq!(listed["tasks"], json!([]), "No tasks found\n{}", s.stderr());
    assert_ne!(before, after, "{}", s.stderr());
    call(
        &mut s,
        json!({"op": "create", "list": "@session", "task": {"subject": "c"}}),
    );

    let (code, out) = check_config(&config, &[]);
    assert_eq!(code, 1, "{out}");
    for (file, subject) in [("1.json", "a"), ("2.json", "b")] {
        let line = out
            .lines()
            .find(|l| l.contains(&format!("S14 stranded {file}:")))
            .unwrap_or_else(|| panic!("no stranded finding for {file} of {before}:\n{out}"));
        for want in [
            format!(
                "task {} \"{subject}\" (pending) is out of reach of session",
                &file[..1]
            ),
            format!("but it reads the list {after} now"),
            "nothing was deleted".to_string(),
            "anthropics/claude-code#76844".to_string(),
        ] {
            assert!(line.contains(&want), "missing {want:?} in {line}");
        }
    }
    assert_eq!(
        out.matches("stranded").count(),
        2,
        "only the old list's two: {out}"
    );

    let (code, out) = check_config(&config, &["--restore"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(&format!("restored {before}: 1.json into ")),
        "{out}"
    );
    assert!(
        out.contains(&format!("as 2.json: {after} has given ids up to 1 already")),
        "{out}"
    );
    assert!(out.contains("as 3.json"), "{out}");
    // The old list is left as it was.
    assert_eq!(files(&before), made, "the old files are untouched");

    let listed = call(&mut s, json!({"op": "list", "list": "@session"}));
    assert_eq!(
        subjects(&listed),
        ["a", "b", "c"],
        "the running CLI reads them where they were put\n{}",
        s.stderr()
    );
    let d = call(
        &mut s,
        json!({"op": "create", "list": "@session", "task": {"subject": "d"}}),
    );
    assert_eq!(
        d["task"]["id"], "4",
        "the next id is above the restored ones: {d}"
    );
    let (code, out) = check_config(&config, &[]);
    assert_eq!(code, 0, "restored once, named no more: {out}");
    s.close().unwrap();
}

/// [`stranded_by_resume_named_and_restored`] on the version `env` names (else `default`).
fn stranded_on(env: &str, default: &str, strands: bool) {
    let Some(cc) = prepared(env, default, Config::TeamsEnv) else {
        return;
    };
    let taskproof_claude_code::Release::Version(version) = cc.release.clone() else {
        panic!("a version number");
    };
    stranded_by_resume_named_and_restored(&cc, &version, strands);
}

#[test]
#[cfg_attr(not(taskproof_has_npm), ignore = "needs node and npm on PATH")]
fn with_teams_on_2_1_276_check_names_the_stranded_list_and_restore_puts_it_where_the_session_reads()
{
    stranded_on("TASKPROOF_TEST_CLAUDE_CODE_TEAMS_LOST", "2.1.276", true);
}

#[test]
#[cfg_attr(not(taskproof_has_npm), ignore = "needs node and npm on PATH")]
fn with_teams_on_the_newest_version_check_finds_nothing_out_of_reach_after_resume() {
    stranded_on("TASKPROOF_TEST_CLAUDE_CODE_NEWEST", "2.1.332", false);
}
