//! The background suite (docs/background.md): the reference runner passes it, each mutant
//! fails the rule it breaks, a SIGKILLed runner leaves no task process alive, and a runner
//! that answers garbage, hangs or never notifies ends as a target error or a finding within
//! its limits. Everything runs the built binary and real processes.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use taskproof_background::BgMutant;
use taskproof_background::procs::survivors_after;

use crate::util::{repo, taskproof_in, tempdir};

/// `taskproof run --suite background ARGS --report json:…`: the exit code and the report.
fn run_bg(args: &[&str]) -> (i32, Value, String) {
    let dir = tempdir();
    let report = dir.path().join("r.json");
    let out = taskproof_in(repo())
        .args(["run", "--suite", "background", "--color", "never"])
        .args(args)
        .arg("--report")
        .arg(format!("json:{}", report.display()))
        .output()
        .expect("run taskproof");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let json = std::fs::read_to_string(&report)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), json, text)
}

/// The rules the failures of the report's scenario `id` cite.
fn failed_rules(report: &Value, id: &str) -> BTreeSet<String> {
    let s = report["scenarios"]
        .as_array()
        .expect("scenarios")
        .iter()
        .find(|s| s["id"] == id)
        .unwrap_or_else(|| panic!("no scenario {id} in {report}"));
    s["failures"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|f| f["rules"].as_array().cloned().unwrap_or_default())
        .filter_map(|r| r.as_str().map(str::to_string))
        .collect()
}

#[test]
fn the_reference_passes_the_background_suite() {
    let (code, report, text) = run_bg(&["--target", "reference"]);
    assert_eq!(code, 0, "{text}");
    let scenarios = report["scenarios"].as_array().expect("scenarios");
    assert_eq!(scenarios.len(), 14, "{text}");
    assert!(
        scenarios.iter().all(|s| s["outcome"] == "pass"),
        "{report:#}"
    );
}

#[test]
fn each_mutant_fails_its_rules_scenario_with_a_witness() {
    let catches = [
        (BgMutant::DoubleNotify, "kill-while-running"),
        (BgMutant::DropConcurrent, "many-finish-together"),
        (BgMutant::KillNoCleanup, "kill-while-running"),
        (BgMutant::NoDeathCleanup, "session-sigkill-kills-tasks"),
        (BgMutant::StatusNotFinal, "kill-while-running"),
        (BgMutant::FailureNotifiedAsSuccess, "failure"),
        (BgMutant::OffsetIgnored, "output-before-during-after"),
        (BgMutant::EvictEarly, "kill-after-completion"),
        (BgMutant::CounterIds, "ids"),
        (BgMutant::NoOutputCap, "output-flood"),
    ];
    assert_eq!(catches.len(), BgMutant::ALL.len(), "every mutant is tried");
    for (m, id) in catches {
        let target = format!("mutant:{m}");
        let (code, report, text) = run_bg(&["--target", &target, "--filter", id]);
        assert_eq!(code, 1, "{m} on {id}: {text}");
        let rules = failed_rules(&report, id);
        assert!(
            rules.contains(m.rule().as_str()),
            "{m} must fail {} in {id}; failed {rules:?}\n{text}",
            m.rule()
        );
        // The scenario cites the rule the mutant breaks.
        let scenario = report["scenarios"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == id)
            .unwrap();
        assert!(
            scenario["rules"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r == m.rule().as_str()),
            "{id} cites {}",
            m.rule()
        );
    }
}

#[test]
#[cfg_attr(not(taskproof_has_python), ignore = "needs python3 on PATH")]
fn the_python_example_runner_passes_the_background_suite() {
    crate::util::require(&[crate::util::Tool::Python]);
    let (code, report, text) = run_bg(&[
        "--target",
        "bg-cmd:python3 examples/adapters/background/runner.py --output-cap 1048576",
    ]);
    assert_eq!(code, 0, "{text}");
    assert_eq!(report["scenarios"].as_array().map(Vec::len), Some(14));
}

/// A served runner with one task (a shell and two children); returns the runner, its stdin
/// and stdout, and the task's process group.
fn served_runner_with_a_task(
    root: &std::path::Path,
    args: &[&str],
) -> (
    std::process::Child,
    std::process::ChildStdin,
    BufReader<std::process::ChildStdout>,
    i32,
) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_taskproof"))
        .arg("serve-background")
        .args(args)
        .env("TASKPROOF_ROOT", root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start serve-background");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut ask = |line: &str| -> Value {
        writeln!(stdin, "{line}").unwrap();
        let mut answer = String::new();
        stdout.read_line(&mut answer).unwrap();
        serde_json::from_str(&answer).unwrap()
    };
    let spawned = ask(r#"{"op":"spawn","command":"sleep 300 & sleep 300"}"#);
    assert_eq!(spawned["ok"], true, "{spawned}");
    let pids = ask(r#"{"op":"task_pids"}"#);
    let pgid = pids["pids"][0].as_i64().expect("a group id") as i32;
    (child, stdin, stdout, pgid)
}

#[test]
fn a_sigkilled_runner_leaves_no_task_process_alive() {
    let dir = tempdir();
    let (mut child, _stdin, _stdout, pgid) = served_runner_with_a_task(dir.path(), &[]);
    // The shell and its two sleeps.
    let deadline = Instant::now() + Duration::from_secs(5);
    while taskproof_background::procs::group_members(pgid).len() < 3 {
        assert!(Instant::now() < deadline, "the task's processes started");
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().expect("SIGKILL the runner");
    child.wait().unwrap();
    let left = survivors_after(&[pgid], Duration::from_secs(5));
    assert!(left.is_empty(), "alive after the SIGKILL: {left:?}");
}

#[test]
fn without_its_guardian_a_sigkilled_runner_leaves_its_tasks_behind() {
    // The same as above against the mutant no-death-cleanup: the check can fail.
    let dir = tempdir();
    let (mut child, _stdin, _stdout, pgid) =
        served_runner_with_a_task(dir.path(), &["--mutant", "no-death-cleanup"]);
    std::thread::sleep(Duration::from_millis(200));
    child.kill().unwrap();
    child.wait().unwrap();
    let left = survivors_after(&[pgid], Duration::from_secs(1));
    assert!(!left.is_empty(), "the mutant's tasks outlive it");
    let _ = rustix::process::kill_process_group(
        rustix::process::Pid::from_raw(pgid).unwrap(),
        rustix::process::Signal::KILL,
    );
    assert!(survivors_after(&[pgid], Duration::from_secs(5)).is_empty());
}

/// A fake runner (a Python script) with a good hello, then `behaviour` for the rest.
fn fake_runner(dir: &std::path::Path, behaviour: &str) -> String {
    let script = format!(
        r#"import json, sys
for line in sys.stdin:
    req = json.loads(line)
    op = req["op"]
    if op == "hello":
        out = {{"ok": True, "protocol": 1, "kind": "background", "name": "fake", "version": "0", "output_cap": None}}
    elif op == "spawn":
        out = {{"ok": True, "id": "b0a1b2c3d", "output_file": None}}
    else:
{behaviour}
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
"#
    );
    let path = dir.join("fake.py");
    std::fs::write(&path, script).unwrap();
    format!("bg-cmd:python3 {}", path.display())
}

#[test]
#[cfg_attr(not(taskproof_has_python), ignore = "needs python3 on PATH")]
fn a_runner_answering_garbage_is_a_target_error() {
    crate::util::require(&[crate::util::Tool::Python]);
    let dir = tempdir();
    let target = fake_runner(
        dir.path(),
        "        sys.stdout.write('not json\\n'); sys.stdout.flush(); continue",
    );
    let start = Instant::now();
    let (code, report, text) = run_bg(&["--target", &target, "--filter", "completion"]);
    assert_eq!(code, 3, "{text}");
    assert_eq!(report["scenarios"][0]["outcome"], "error", "{report:#}");
    assert!(text.contains("not a JSON object"), "{text}");
    assert!(start.elapsed() < Duration::from_secs(60));
}

#[test]
#[cfg_attr(not(taskproof_has_python), ignore = "needs python3 on PATH")]
fn a_runner_that_hangs_is_a_target_error_within_the_timeout() {
    crate::util::require(&[crate::util::Tool::Python]);
    let dir = tempdir();
    let target = fake_runner(dir.path(), "        import time; time.sleep(3600)");
    let (code, _report, text) = run_bg(&[
        "--target",
        &target,
        "--filter",
        "completion",
        "--timeout",
        "1",
    ]);
    assert_eq!(code, 3, "{text}");
    assert!(text.contains("no answer"), "{text}");
}

#[test]
#[cfg_attr(not(taskproof_has_python), ignore = "needs python3 on PATH")]
fn a_runner_that_never_notifies_fails_the_one_notification_rule() {
    crate::util::require(&[crate::util::Tool::Python]);
    let dir = tempdir();
    let target = fake_runner(
        dir.path(),
        r#"        if op == "notifications":
            out = {"ok": True, "notifications": []}
        elif op == "output":
            out = {"ok": True, "text": "", "next_offset": req["offset"], "status": "running"}
        elif op == "task_pids":
            out = {"ok": True, "pids": []}
        else:
            out = {"ok": True}"#,
    );
    let (code, report, text) = run_bg(&["--target", &target, "--filter", "failure"]);
    assert_eq!(code, 1, "{text}");
    assert!(
        failed_rules(&report, "failure").contains("B2"),
        "{report:#}"
    );
}

#[test]
fn a_malformed_background_scenario_names_its_file_and_field() {
    let dir = tempdir();
    let file = dir.path().join("bad.json");
    std::fs::write(
        &file,
        r#"{"id":"bad","title":"t","rules":["B2"],"source":"s","steps":[{"spawn":{"as":"t","sleeep":1}}]}"#,
    )
    .unwrap();
    let (code, _report, text) = run_bg(&[file.to_str().unwrap()]);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("bad.json") && text.contains("sleeep"),
        "{text}"
    );
}

#[test]
fn the_race_accounts_for_every_task_id() {
    let dir = tempdir();
    let json = dir.path().join("race.json");
    let run = |target: &str| {
        taskproof_in(repo())
            .args([
                "race-background",
                "--tasks",
                "20",
                "--sleep",
                "1",
                "--step",
                "0.004",
            ])
            .args(["--target", target])
            .arg("--report")
            .arg(format!("json:{}", json.display()))
            .output()
            .expect("run taskproof")
    };
    let out = run("reference");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(r["once"], 20, "{r:#}");
    assert_eq!(r["accounts"].as_array().map(Vec::len), Some(20));
    let out = run("mutant:double-notify");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(r["twice_or_more"].as_u64().unwrap() > 0, "{r:#}");
    assert_eq!(r["twice_or_more"], r["killed"], "{r:#}");
}

#[test]
#[cfg_attr(not(taskproof_has_python), ignore = "needs python3 on PATH")]
fn a_malformed_notification_is_a_target_error_naming_the_field() {
    crate::util::require(&[crate::util::Tool::Python]);
    let dir = tempdir();
    let target = fake_runner(
        dir.path(),
        r#"        if op == "notifications":
            out = {"ok": True, "notifications": [{"id": "b0a1b2c3d", "status": "done"}]}
        else:
            out = {"ok": True, "text": "", "next_offset": 0, "status": "running", "pids": []}"#,
    );
    let (code, report, text) = run_bg(&["--target", &target, "--filter", "failure"]);
    assert_eq!(code, 3, "{text}");
    let message = report["scenarios"][0]["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(message.contains("notifications"), "{report:#}");
}

/// `--partition K/N` shards the background suite as it shards the store suite: round-robin
/// over the selected scenarios sorted by id, every one in exactly one shard.
#[test]
fn partitions_of_the_background_suite_are_round_robin_and_cover_it_once() {
    let filters = [
        "--filter",
        "completion",
        "--filter",
        "failure",
        "--filter",
        "ids",
        "--filter",
        "many-finish-together",
        "--filter",
        "end-during-the-spawning-turn",
    ];
    let ids = |k: &str| -> Vec<String> {
        let mut args = vec!["--target", "reference", "--partition", k];
        args.extend(filters);
        let (code, report, text) = run_bg(&args);
        assert_eq!(code, 0, "{text}");
        report["scenarios"]
            .as_array()
            .expect("scenarios")
            .iter()
            .map(|s| s["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        ids("1/2"),
        ["completion", "failure", "many-finish-together"]
    );
    assert_eq!(ids("2/2"), ["end-during-the-spawning-turn", "ids"]);
}

/// Issue 40: `--keep-going` was accepted by the background suite and ignored (its scenarios
/// always run every step); it is a usage error now, saying why, and nothing runs.
#[test]
fn keep_going_is_refused_by_the_background_suite() {
    let (code, report, text) = run_bg(&["--keep-going", "--filter", "completion"]);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains(
            "--keep-going is for the store suite: a background scenario always runs every step"
        ),
        "{text}"
    );
    assert_eq!(report, Value::Null, "nothing ran, so no report: {report}");
}
