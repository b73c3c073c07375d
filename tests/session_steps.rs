//! Session steps (`wait`, `clear`, `compact`, `exit`, `kill`, `resume`) end to end through the
//! built binary: load-time errors, what a store target does with each step, and the witness
//! of a task that vanished between requests (docs/scenario-format.md, "Session steps").

use serde_json::Value;

use crate::run::run_in;
use crate::util::{Tool, bin, require, tempdir};

fn scenario(id: &str, steps: &str) -> String {
    format!(
        r#"{{"id": "{id}", "title": "t", "rules": ["S14"], "profiles": ["strict"], "steps": {steps}}}"#
    )
}

#[test]
fn bad_waits_and_resumes_are_errors_naming_the_file_and_step() {
    let dir = tempdir();
    let files = [
        ("too-long.json", scenario("a", r#"[{"wait": 900}]"#)),
        ("negative.json", scenario("b", r#"[{"wait": -1}]"#)),
        ("a-string.json", scenario("c", r#"[{"wait": "10"}]"#)),
        (
            "wait-session.json",
            scenario("d", r#"[{"wait": 1, "session": "a"}]"#),
        ),
        (
            "resume-open.json",
            scenario(
                "e",
                r#"[{"send": {"op": "list", "list": "l"}}, {"resume": "main"}]"#,
            ),
        ),
        (
            "resume-used-again.json",
            scenario(
                "f",
                r#"[{"exit": "main"}, {"send": {"op": "list", "list": "l"}}, {"resume": "main"}]"#,
            ),
        ),
        ("bad-session.json", scenario("g", r#"[{"clear": "a b"}]"#)),
    ];
    for (name, text) in &files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let r = run_in(dir.path(), &["."]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    for want in [
        "too-long.json: steps[0].wait: expected a number of seconds from 0 to 600, got 900",
        "negative.json: steps[0].wait: expected a number of seconds from 0 to 600, got -1",
        "a-string.json: steps[0].wait: expected a number of seconds (0 to 600), got a string",
        "wait-session.json: steps[0].session: `wait` lets time pass for every session at once",
        "resume-open.json: steps[1].resume: session \"main\" is not ended here",
        "resume-used-again.json: steps[2].resume: session \"main\" is not ended here",
        "bad-session.json: steps[0].clear: expected a session name",
    ] {
        assert!(
            r.stderr.contains(want),
            "missing {want:?} in:\n{}",
            r.stderr
        );
    }
    assert!(r.stdout.is_empty(), "nothing runs: {}", r.stdout);
}

#[test]
fn exit_and_resume_end_the_adapter_process_and_start_a_new_one() {
    let dir = tempdir();
    std::fs::write(
        dir.path().join("exit-resume.json"),
        scenario(
            "exit-resume",
            r#"[
              {"send": {"op": "create", "list": "l", "task": {"subject": "kept"}}},
              {"exit": "main"},
              {"resume": "main"},
              {"send": {"op": "get", "list": "l", "id": "1"}, "expect": {"ok": true, "task": {"subject": "kept"}}}
            ]"#,
        ),
    )
    .unwrap();
    let reference = format!("cmd:exec '{}' serve adapter --no-fsync", bin());
    let r = run_in(dir.path(), &[".", "--target", &reference]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    // A store that keeps its tasks in a folder private to each process loses them when the
    // session exits and a new process resumes: so `exit` really ended the process.
    let memory_only = format!(
        "cmd:TMPDIR=\"$TASKPROOF_ROOT\" exec '{}' serve adapter --no-fsync --mutant memory-only",
        bin()
    );
    let r = run_in(dir.path(), &[".", "--target", &memory_only]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("expected a success, got error not_found"),
        "{}",
        r.stdout
    );
}

#[test]
fn clear_and_compact_reach_no_store_and_the_run_says_so() {
    let dir = tempdir();
    for (id, event) in [("clears", "clear"), ("compacts", "compact")] {
        std::fs::write(
            dir.path().join(format!("{id}.json")),
            scenario(
                id,
                &format!(
                    r#"[{{"send": {{"op": "create", "list": "l", "task": {{"subject": "a"}}}}}}, {{"{event}": "main"}}, {{"send": {{"op": "get", "list": "l", "id": "1"}}}}]"#
                ),
            ),
        )
        .unwrap();
    }
    let r = run_in(dir.path(), &[".", "--target", "reference"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    // Said once for the run, with where it was met: it is about the target.
    let want = "NOTE reference's sessions are connections to a task store, not agent conversations; what a user does to an agent's conversation (/clear, /compact) happens in the agent above the store, which sees nothing of it (2 scenarios: clears steps[1] clear, compacts steps[1] compact)\n";
    assert!(r.stdout.contains(want), "missing {want:?}:\n{}", r.stdout);
    assert_eq!(r.stdout.matches("NOTE").count(), 1, "{}", r.stdout);
    assert!(
        r.stdout
            .ends_with("2 passed, 0 failed, 0 errors, 0 skipped\n"),
        "{}",
        r.stdout
    );
}

/// An adapter whose store forgets a list a moment after it starts, between requests: the
/// reference store behind `serve adapter`, and a background job of the adapter's own that removes
/// the list's task files after 1 s (as Claude Code's reset of a finished list does).
fn forgetful_target() -> String {
    format!(
        "cmd:(sleep 1; rm -f \"$TASKPROOF_ROOT\"/l/*.json) & exec '{}' serve adapter --no-fsync",
        bin()
    )
}

#[test]
fn a_task_that_vanishes_during_a_wait_fails_with_a_witness_of_the_files() {
    let dir = tempdir();
    std::fs::write(
        dir.path().join("vanish.json"),
        scenario(
            "vanish",
            r#"[
              {"send": {"op": "create", "list": "l", "task": {"subject": "done"}}},
              {"send": {"op": "update", "list": "l", "id": "1", "patch": {"status": "completed"}}},
              {"wait": 2},
              {"send": {"op": "list", "list": "l"}, "expect": {"ok": true, "tasks": [{"id": "1", "status": "completed"}]}}
            ]"#,
        ),
    )
    .unwrap();
    let report = dir.path().join("report.json");
    let r = run_in(
        dir.path(),
        &[
            ".",
            "--target",
            &forgetful_target(),
            "--report",
            &format!("json:{}", report.display()),
        ],
    );
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    // The printed witness, word for word: the seconds and the binary's path vary.
    let bin_path = regex_lite_escape(bin());
    insta::with_settings!({filters => vec![
        (r"\b\d+\.\d+ s\b", "[seconds] s"),
        (bin_path.as_str(), "[taskproof]"),
    ]}, {
        insta::assert_snapshot!("vanished_task_witness", r.stdout);
    });
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let witness = &json["scenarios"][0]["failures"][0]["witness"];
    assert_eq!(witness["event"], "steps[2] wait 2 s", "{json:#}");
    assert_eq!(witness["gone"], serde_json::json!(["l/1.json"]), "{json:#}");
    // Gone from disk: the finding is a deletion, not a task kept out of sight.
    assert_eq!(witness["finding"]["kind"], "deleted", "{json:#}");
    assert_eq!(
        witness["finding"]["files"],
        serde_json::json!(["l/1.json"]),
        "{json:#}"
    );
    assert!(
        witness["seconds"].as_f64().unwrap() >= 2.0,
        "the wait really lasted: {witness}"
    );
}

/// The session's own list is an agent's: against a store the scenarios on it are not
/// judged, each saying which part it needs, and the run passes.
#[test]
fn the_sessions_own_list_is_not_judged_against_a_store() {
    let r = run_in(
        crate::util::repo(),
        &[
            "--filter",
            "nothing-vanishes-own-list-*",
            "--target",
            "reference",
        ],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    // Said once for the run, not once per scenario: no store has such a list.
    let want = "NOT JUDGED 3 scenarios on what only an agent session has (session_list), which a store does not declare: nothing-vanishes-own-list-after-clear, nothing-vanishes-own-list-after-compact, nothing-vanishes-own-list-after-exit-and-resume\n";
    assert!(r.stdout.contains(want), "missing {want:?}:\n{}", r.stdout);
    assert_eq!(r.stdout.matches("NOT JUDGED").count(), 1, "{}", r.stdout);
    assert!(
        r.stdout
            .ends_with("0 passed, 0 failed, 0 errors, 0 skipped, 3 not judged\n"),
        "{}",
        r.stdout
    );
}

/// Issue 42: `/clear` in the real Claude Code (2.1.112, its terminal UI) on the list the
/// session keeps under its own id. The session gets a new id, so its next `TaskList` shows
/// nothing, while the old list's two task files stay on disk unchanged: the failure says
/// "files kept, the agent no longer sees them", not "files deleted", and the JSON witness
/// has the finding `kept_unseen` with both lists. About 10 s on an idle machine.
#[test]
#[cfg_attr(not(taskproof_has_npm), ignore = "needs node and npm on PATH")]
fn clear_leaves_the_sessions_own_list_on_disk_out_of_the_agents_reach() {
    require(&[Tool::Npm]);
    let dir = tempdir();
    let report = dir.path().join("report.json");
    let r = run_in(
        crate::util::repo(),
        &[
            "--filter",
            "nothing-vanishes-own-list-after-clear",
            "--target",
            "claude-code@2.1.112",
            "--start-timeout",
            "120",
            "--report",
            &format!("json:{}", report.display()),
        ],
    );
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    // A long `why:` is folded onto indented lines; read it whole.
    let stdout = r.stdout.replace("\n              ", " ");
    for want in [
        "FAIL nothing-vanishes-own-list-after-clear",
        "why:      tasks: expected 2 tasks, got 0 (ids []); files kept, the agent no longer sees them: ",
        "still on disk (unchanged), not in the answer; the list it reads is ",
        "s after steps[3] clear (session main)",
        "<- ok: No tasks found",
    ] {
        assert!(stdout.contains(want), "missing {want:?}:\n{}", r.stdout);
    }
    assert!(!r.stdout.contains("files deleted"), "{}", r.stdout);
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let witness = &json["scenarios"][0]["failures"][0]["witness"];
    let finding = &witness["finding"];
    assert_eq!(finding["kind"], "kept_unseen", "{witness:#}");
    let old = finding["list_before"].as_str().unwrap();
    let new = finding["list_now"].as_str().unwrap();
    assert_ne!(old, new, "a new session id: {finding:#}");
    assert_eq!(
        finding["files"],
        serde_json::json!([format!("{old}/1.json"), format!("{old}/2.json")]),
        "{finding:#}"
    );
    assert_eq!(finding["changed"], serde_json::json!([]), "{finding:#}");
    assert_eq!(
        witness["files_before"], witness["files_after"],
        "{witness:#}"
    );
    assert_eq!(witness["gone"], serde_json::json!([]), "{witness:#}");
}

#[test]
fn a_failure_without_a_session_step_before_it_has_no_witness() {
    let dir = tempdir();
    std::fs::write(
        dir.path().join("plain.json"),
        scenario(
            "plain",
            r#"[{"send": {"op": "get", "list": "l", "id": "1"}, "expect": {"ok": true}}]"#,
        ),
    )
    .unwrap();
    let r = run_in(dir.path(), &[".", "--target", "reference"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(!r.stdout.contains("witness:"), "{}", r.stdout);
}

/// `s` as a regular expression that matches it literally.
fn regex_lite_escape(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '/' || c == '_' || c == '-' {
                c.to_string()
            } else {
                format!("\\{c}")
            }
        })
        .collect()
}
