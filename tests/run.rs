//! `taskproof run` end to end: the built binary against the fixture scenarios in
//! `tests/fixtures/scenarios`, in-process and through `cmd:` adapters (the built
//! `taskproof serve`, and shell scripts that hang or print garbage).

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;
use taskproof_core::protocol::Feature;
use taskproof_report::Event;
use taskproof_report::result::{OutcomeKind, StepVerdict};
use taskproof_scenario::{RunConfig, load_dir, run_suite};
use taskproof_targets::TargetSpec;

use crate::util::{bin, repo, taskproof_in, tempdir};

fn fixtures(sub: &str) -> PathBuf {
    repo().join("tests/fixtures/scenarios").join(sub)
}

/// A `hello` answer for hand-written adapters.
const HELLO: &str = r#"{"ok":true,"protocol":1,"name":"script","version":"0","layout":"opaque","features":["delete","claim","edges"]}"#;

pub(crate) struct Run {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Run {
    fn last_line(&self) -> &str {
        self.stdout.lines().last().unwrap_or("")
    }
}

/// `taskproof run ARGS` from `dir`, with CI unset (tests/session_steps.rs uses it too).
pub(crate) fn run_in(dir: &Path, args: &[&str]) -> Run {
    let Output {
        status,
        stdout,
        stderr,
    } = taskproof_in(dir)
        .arg("run")
        .args(args)
        .env_remove("CI")
        .output()
        .expect("run taskproof");
    Run {
        code: status.code().expect("an exit code"),
        stdout: String::from_utf8(stdout).expect("UTF-8 stdout"),
        stderr: String::from_utf8(stderr).expect("UTF-8 stderr"),
    }
}

fn run(args: &[&str]) -> Run {
    run_in(repo(), args)
}

/// The `cmd:` target for the built binary serving the reference store.
fn serve_target(extra: &str) -> String {
    format!("cmd:exec '{}' serve --no-fsync {extra}", bin())
}

#[test]
fn scenario_file_errors_name_the_file_and_the_field() {
    let dir = tempdir();
    let files = [
        (
            "unknown-field.json",
            r#"{"id": "a", "title": "t", "rules": ["S1"], "steps": [{"sendd": {}}]}"#,
        ),
        (
            "typo-in-step.json",
            r#"{"id": "b", "title": "t", "rules": ["S1"], "steps": [{"send": {}, "expcet": {"ok": true}}]}"#,
        ),
        (
            "missing-id.json",
            r#"{"title": "t", "rules": ["S1"], "steps": []}"#,
        ),
        (
            "bad-expect.json",
            r#"{"id": "c", "title": "t", "rules": ["S1"], "steps": [{"send": {}, "expect": {"error": "cycles"}}]}"#,
        ),
        (
            "uncovered.json",
            r#"{"id": "d", "title": "t", "rules": ["S1"], "steps": [{"send": {}, "expect": {"strict": {"ok": true}, "cc-2.1.17": {"ok": true}}}]}"#,
        ),
        (
            "unbound.json",
            r#"{"id": "e", "title": "t", "rules": ["S1"], "steps": [{"send": {"op": "get", "list": "l", "id": "${a}"}}]}"#,
        ),
        ("not-json.json", "{\"id\": \"f\",\n  oops}"),
    ];
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let r = run_in(dir.path(), &["."]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    for want in [
        "unknown-field.json: steps[0]: a step needs one action key",
        "typo-in-step.json: steps[0].expcet: unknown field",
        "missing-id.json: id: missing",
        "bad-expect.json: steps[0].expect.error: unknown error kind \"cycles\"",
        "uncovered.json: steps[0].expect: no expectation for profile s07",
        "unbound.json: steps[0].send.id: variable `a` is not bound",
        "not-json.json: line 2 column 3: not valid JSON",
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
fn passing_and_failing_scenarios_set_the_exit_status() {
    let pass = fixtures("pass");
    let r = run(&[pass.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(r.last_line(), "2 passed, 0 failed, 0 errors, 0 skipped");

    let fail = fixtures("fail");
    let r = run(&[fail.to_str().unwrap()]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert_eq!(r.last_line(), "0 passed, 1 failed, 0 errors, 0 skipped");
    // Everything a person needs to act: scenario and file, step, request, expected and
    // actual, why, the rules and the note.
    for want in [
        "FAIL fixture-wrong-expectation",
        "fail/wrong-expectation.json",
        "rules:    S2",
        "steps[0]: {\"send\"",
        "request:  {\"op\":\"create\"",
        "expected: {\"ok\":true",
        "actual:   {\"ok\":false,\"error\":{\"kind\":\"invalid\"",
        "why:      expected a success, got error invalid",
        "note:     deliberately wrong",
    ] {
        assert!(
            r.stdout.contains(want),
            "missing {want:?} in:\n{}",
            r.stdout
        );
    }
}

#[test]
fn an_adapter_process_passes_the_same_scenarios() {
    let pass = fixtures("pass");
    let target = serve_target("");
    let r = run(&[pass.to_str().unwrap(), "--target", &target]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(r.last_line(), "2 passed, 0 failed, 0 errors, 0 skipped");
}

#[test]
fn restart_kills_the_adapter_and_starts_a_new_process() {
    let restart = fixtures("restart");
    let r = run(&[restart.to_str().unwrap(), "--target", &serve_target("")]);
    assert_eq!(
        r.code, 0,
        "the reference keeps state: {}{}",
        r.stdout, r.stderr
    );
    // The memory-only mutant keeps its state in a folder private to the process, so only a
    // new process loses it. TMPDIR keeps that folder inside the sandbox.
    let memory_only = format!(
        "cmd:TMPDIR=\"$TASKPROOF_ROOT\" exec '{}' serve --no-fsync --mutant memory-only",
        bin()
    );
    let r = run(&[restart.to_str().unwrap(), "--target", &memory_only]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("FAIL fixture-restart-persisted"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("expected a success, got error not_found"),
        "{}",
        r.stdout
    );
}

#[test]
fn a_hanging_adapter_is_an_error_reported_with_its_stderr() {
    let dir = tempdir();
    let script = dir.path().join("hang.sh");
    std::fs::write(
        &script,
        // Answers hello, exits cleanly at end of input, but hangs on the first request.
        format!(
            "read l\necho '{HELLO}'\nwhile read l; do echo 'adapter is stuck' >&2; sleep 100; done\n"
        ),
    )
    .unwrap();
    let cycle = fixtures("pass/cycle-refused.json");
    let target = format!("cmd:sh '{}'", script.display());
    let r = run(&[
        cycle.to_str().unwrap(),
        "--target",
        &target,
        "--timeout",
        "1",
    ]);
    assert_eq!(r.code, 3, "a broken target: {}{}", r.stdout, r.stderr);
    assert_eq!(r.last_line(), "0 passed, 0 failed, 1 errors, 0 skipped");
    for want in [
        "ERROR fixture-cycle-refused",
        "at:       steps[0]",
        "no answer within 1s; the adapter was killed (the limit is --timeout SECS)",
        "| adapter is stuck",
    ] {
        assert!(
            r.stdout.contains(want),
            "missing {want:?} in:\n{}",
            r.stdout
        );
    }
}

#[test]
fn a_target_that_cannot_start_is_reported_once_and_exits_3() {
    let all = fixtures("");
    let r = run(&[
        all.to_str().unwrap(),
        "--target",
        "cmd:echo starting >&2; exec sleep 100",
        "--start-timeout",
        "1",
    ]);
    assert_eq!(r.code, 3, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains(
            "no hello within 1s of starting; the adapter was killed (the limit is --start-timeout SECS)"
        ),
        "{}",
        r.stdout
    );
    // One block for the five scenarios, not five.
    assert_eq!(r.stdout.matches("ERROR").count(), 1, "{}", r.stdout);
    assert_eq!(r.stdout.matches("| starting").count(), 1, "{}", r.stdout);
    assert!(!r.stdout.contains("ERROR fixture-"), "{}", r.stdout);
    assert_eq!(r.last_line(), "0 passed, 0 failed, 5 errors, 0 skipped");
}

#[test]
fn start_up_has_its_own_limit_apart_from_the_request_timeout() {
    // Start-up (2 s) takes longer than a request may (1 s): the suite still passes, its
    // requests still held to --timeout.
    let pass = fixtures("pass");
    let target = format!("cmd:sleep 2; exec '{}' serve --no-fsync", bin());
    let r = run(&[
        pass.to_str().unwrap(),
        "--target",
        &target,
        "--timeout",
        "1",
    ]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(r.last_line(), "2 passed, 0 failed, 0 errors, 0 skipped");
    // `--start-timeout <SECS>` in `run --help`: the help's snapshot (tests/words.rs).
}

#[test]
fn an_adapter_that_exits_early_is_an_error() {
    let cycle = fixtures("pass/cycle-refused.json");
    // Says hello and exits cleanly at end of input, but dies on the first request.
    let target =
        format!("cmd:read l; echo '{HELLO}'; while read l; do echo dying >&2; exit 3; done");
    let r = run(&[cycle.to_str().unwrap(), "--target", &target]);
    assert_eq!(r.code, 3, "{}{}", r.stdout, r.stderr);
    for want in [
        "ERROR fixture-cycle-refused",
        "the adapter exited (exit status: 3) before answering",
        "| dying",
    ] {
        assert!(
            r.stdout.contains(want),
            "missing {want:?} in:\n{}",
            r.stdout
        );
    }
}

#[test]
fn a_garbage_printing_adapter_is_an_error() {
    let cycle = fixtures("pass/cycle-refused.json");
    let target = format!("cmd:read l; echo '{HELLO}'; while read l; do echo 'OK then'; done");
    let r = run(&[cycle.to_str().unwrap(), "--target", &target]);
    assert_eq!(r.code, 3, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("ERROR fixture-cycle-refused"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("not a JSON object") && r.stdout.contains("\"OK then\""),
        "{}",
        r.stdout
    );
}

#[test]
fn writing_outside_the_root_fails_the_sandbox_check() {
    let escape = fixtures("escape");
    let r = run(&[escape.to_str().unwrap()]);
    assert_eq!(
        r.code, 0,
        "the reference refuses `../x`: {}{}",
        r.stdout, r.stderr
    );
    let r = run(&[escape.to_str().unwrap(), "--target", "mutant:escapes-root"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    for want in [
        "FAIL fixture-dotdot-list",
        "after the last step",
        "the sandbox outside the root changed: appeared: x/",
        "rules:    S13",
    ] {
        assert!(
            r.stdout.contains(want),
            "missing {want:?} in:\n{}",
            r.stdout
        );
    }
}

#[test]
fn skip_files_turn_expected_failures_into_skips_and_catch_unexpected_passes() {
    let dir = tempdir();
    let skip = dir.path().join("skip.txt");
    std::fs::write(
        &skip,
        "# known failures\nfixture-wrong-expectation  empty subjects are refused on purpose\n",
    )
    .unwrap();
    let fail = fixtures("fail");
    let r = run(&[
        fail.to_str().unwrap(),
        "--skip-file",
        skip.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains(
            "SKIP fixture-wrong-expectation: expected failure: empty subjects are refused on purpose"
        ),
        "{}",
        r.stdout
    );
    assert_eq!(r.last_line(), "0 passed, 0 failed, 0 errors, 1 skipped");

    std::fs::write(&skip, "fixture-cycle-refused  thought to be broken\n").unwrap();
    let pass = fixtures("pass");
    let r = run(&[
        pass.to_str().unwrap(),
        "--skip-file",
        skip.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("unexpected pass"), "{}", r.stdout);
    assert_eq!(r.last_line(), "1 passed, 1 failed, 0 errors, 0 skipped");

    std::fs::write(&skip, "\nno-such-scenario  gone\n").unwrap();
    let r = run(&[
        pass.to_str().unwrap(),
        "--skip-file",
        skip.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr
            .contains("skip.txt:2: no-such-scenario matches no scenario"),
        "{}",
        r.stderr
    );
}

#[test]
fn filter_and_partition_select_scenarios() {
    let all = fixtures("");
    let r = run(&[all.to_str().unwrap(), "--filter", "fixture-c*"]);
    assert_eq!(
        r.last_line(),
        "1 passed, 0 failed, 0 errors, 0 skipped",
        "{}",
        r.stdout
    );
    let r = run(&[all.to_str().unwrap(), "--filter", "nothing-*"]);
    assert_eq!(r.code, 2);
    // Round-robin over the five fixtures sorted by id: shard 1 of 2 gets three.
    let one = run(&[all.to_str().unwrap(), "--partition", "1/2"]);
    let two = run(&[all.to_str().unwrap(), "--partition", "2/2"]);
    assert!(one.stdout.contains("running 3 scenarios"), "{}", one.stdout);
    assert!(two.stdout.contains("running 2 scenarios"), "{}", two.stdout);
    assert!(
        one.stdout.contains("FAIL fixture-wrong-expectation")
            != two.stdout.contains("FAIL fixture-wrong-expectation")
    );
}

#[test]
fn json_junit_and_markdown_reports_describe_the_same_run() {
    let dir = tempdir();
    let json_path = dir.path().join("out/report.json");
    let junit_path = dir.path().join("out/junit.xml");
    let md_path = dir.path().join("summary.md");
    let all = fixtures("");
    let r = run(&[
        all.to_str().unwrap(),
        "--report",
        &format!("json:{}", json_path.display()),
        "--report",
        &format!("junit:{}", junit_path.display()),
        "--report",
        &format!("md:{}", md_path.display()),
    ]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert_eq!(r.last_line(), "4 passed, 1 failed, 0 errors, 0 skipped");

    // JSON: the shape docs/reports.md documents, key for key.
    let v: Value = serde_json::from_slice(&std::fs::read(&json_path).unwrap()).unwrap();
    let keys = |v: &Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
    assert_eq!(
        keys(&v),
        [
            "format_version",
            "target",
            "profile",
            "summary",
            "by_class",
            "scenarios"
        ]
    );
    assert_eq!(v["format_version"], taskproof_report::schema::RUN_FORMAT);
    assert_eq!(v["target"]["spec"], "reference");
    assert_eq!(v["target"]["name"], "taskproof-reference");
    assert_eq!(v["target"]["layout"], "claude-code");
    assert_eq!(v["profile"], "strict");
    assert_eq!(
        v["summary"],
        serde_json::json!({"passed": 4, "failed": 1, "skipped": 0, "errors": 0, "not_judged": 0, "partial": 0})
    );
    let scenarios = v["scenarios"].as_array().unwrap();
    assert_eq!(scenarios.len(), 5);
    for s in scenarios {
        // A failed scenario's consequence class follows its outcome; the others have none.
        let class: &[&str] = if s["outcome"] == "fail" {
            &["class"]
        } else {
            &[]
        };
        let mut expected: Vec<&str> = vec!["id", "title", "file", "source", "rules", "outcome"];
        expected.extend(class);
        expected.extend([
            "reason",
            "failures",
            "error",
            "stderr",
            "notes",
            "time_dependent_steps",
            "skipped_steps",
            "duration_ms",
        ]);
        assert_eq!(keys(s), expected);
    }
    let failed = scenarios
        .iter()
        .find(|s| s["outcome"] == "fail")
        .expect("one failure");
    assert_eq!(failed["id"], "fixture-wrong-expectation");
    assert_eq!(failed["rules"], serde_json::json!(["S2"]));
    let f = &failed["failures"][0];
    assert_eq!(
        keys(f),
        [
            "step", "session", "request", "expected", "actual", "reason", "rules", "class", "note",
            "witness"
        ]
    );
    assert_eq!(failed["class"], "input");
    assert_eq!(f["class"], "input");
    assert_eq!(f["step"], 0);
    assert_eq!(f["witness"], Value::Null, "no session step came before it");
    assert_eq!(f["request"]["op"], "create");
    assert_eq!(f["expected"]["ok"], true);
    assert_eq!(f["actual"]["error"]["kind"], "invalid");

    // JUnit: well-formed XML, one testcase per scenario.
    let xml = std::fs::read_to_string(&junit_path).unwrap();
    let report = quick_junit::Report::deserialize_from_str(&xml).expect("well-formed JUnit");
    assert_eq!(report.test_suites.len(), 1);
    let suite = &report.test_suites[0];
    assert_eq!(suite.test_cases.len(), 5);
    assert_eq!(suite.failures, 1);
    let names: Vec<&str> = suite.test_cases.iter().map(|t| t.name.as_str()).collect();
    assert!(names.contains(&"fixture-wrong-expectation"), "{names:?}");

    let md = std::fs::read_to_string(&md_path).unwrap();
    assert!(
        md.contains("**4 passed, 1 failed, 0 errors, 0 skipped**"),
        "{md}"
    );
    assert!(
        md.contains("| `fixture-wrong-expectation` | fail | input | S2 |"),
        "{md}"
    );
}

#[test]
fn the_library_api_reports_outcomes_and_failed_rules() {
    // What the mutant self-test needs: load a folder, run it against a mutant, and see which
    // rules the failures cite.
    let scenarios = load_dir(&fixtures("restart")).expect("fixtures load");
    let mut config = RunConfig::new(TargetSpec::mutant("memory-only".parse().unwrap()));
    config.jobs = 1;
    let mut events = 0;
    let suite = run_suite(&scenarios, &config, &mut |e| {
        if !matches!(e, Event::StepFinished { .. }) {
            events += 1;
        }
    });
    assert_eq!(
        events,
        1 + scenarios.len() + 1,
        "started, one per scenario, finished"
    );
    let r = &suite.scenarios[0];
    assert_eq!(r.kind(), OutcomeKind::Fail);
    assert!(
        r.failed_rules().contains(&taskproof_core::rule::Rule::S14),
        "{:?}",
        r.failed_rules()
    );
    assert!(suite.target.hello.as_ref().unwrap().has(Feature::Delete));
}

#[test]
fn every_judged_request_is_a_step_event_before_its_scenario_ends() {
    // What recorded profiles and the matrix consume: per `send` step, the index, request,
    // answer, expectation and verdict, delivered before the scenario's own event.
    let mut scenarios = load_dir(&fixtures("fail")).expect("fixtures load");
    scenarios.extend(load_dir(&fixtures("pass")).expect("fixtures load"));
    let mut config = RunConfig::new(TargetSpec::reference());
    config.jobs = 2;
    let mut seen: Vec<String> = Vec::new();
    let mut steps = Vec::new();
    run_suite(&scenarios, &config, &mut |e| match e {
        Event::StepFinished { scenario, step } => {
            assert!(
                !seen.iter().any(|s| s == scenario),
                "{scenario} already ended"
            );
            steps.push((scenario.to_string(), (*step).clone()));
        }
        Event::ScenarioFinished { result, .. } => {
            let mine: Vec<usize> = steps
                .iter()
                .filter(|(s, _)| *s == result.id)
                .map(|(_, r)| r.step)
                .collect();
            assert_eq!(
                mine,
                result.steps.iter().map(|r| r.step).collect::<Vec<_>>()
            );
            seen.push(result.id.clone());
        }
        _ => {}
    });
    let (_, wrong) = steps
        .iter()
        .find(|(s, _)| s == "fixture-wrong-expectation")
        .expect("the failing scenario's step");
    assert_eq!(wrong.step, 0);
    assert_eq!(wrong.request["op"], "create");
    assert_eq!(wrong.answer.json["ok"], false, "{:?}", wrong.answer);
    assert!(
        matches!(&wrong.answer.response, Some(r) if !r.is_ok()),
        "{:?}",
        wrong.answer
    );
    assert_eq!(wrong.expected["ok"], true, "{:?}", wrong.expected);
    assert!(
        matches!(&wrong.verdict, StepVerdict::Fail(why) if !why.is_empty()),
        "{:?}",
        wrong.verdict
    );
    let passed = steps
        .iter()
        .filter(|(s, _)| s != "fixture-wrong-expectation")
        .collect::<Vec<_>>();
    assert!(!passed.is_empty());
    assert!(passed.iter().all(|(_, r)| r.verdict == StepVerdict::Pass));
    // In order within a scenario.
    for id in &seen {
        let idx: Vec<usize> = steps
            .iter()
            .filter(|(s, _)| s == id)
            .map(|(_, r)| r.step)
            .collect();
        assert!(idx.windows(2).all(|w| w[0] < w[1]), "{id}: {idx:?}");
    }
}

/// A store whose processes each keep their own id counter, read from the disk at their first
/// create and counted in memory after that, with the layout given as its first argument.
/// Files are `LIST/ID.json`; it writes no `.highwatermark`. Only hello, create, get and list.
const OWN_COUNTER_ADAPTER: &str = r#"
import json, os, sys
root = os.environ["TASKPROOF_ROOT"]
layout = sys.argv[1]
counters = {}

def ids(d):
    if not os.path.isdir(d):
        return []
    return sorted(int(f[:-5]) for f in os.listdir(d) if f.endswith(".json") and f[:-5].isdigit())

def read(d, i):
    with open(os.path.join(d, "%d.json" % i)) as f:
        return json.load(f)

for line in sys.stdin:
    r = json.loads(line)
    op = r.get("op")
    if op == "hello":
        out = {"ok": True, "protocol": 1, "name": "own-counter", "version": "0",
               "layout": layout, "features": []}
    elif op == "create":
        d = os.path.join(root, r["list"])
        os.makedirs(d, exist_ok=True)
        if r["list"] not in counters:
            counters[r["list"]] = max(ids(d), default=0)
        counters[r["list"]] += 1
        t = {"id": str(counters[r["list"]]), "subject": r["task"]["subject"], "status": "pending",
             "blocks": [], "blockedBy": []}
        with open(os.path.join(d, t["id"] + ".json"), "w") as f:
            json.dump(t, f)
        out = {"ok": True, "task": t}
    elif op == "get":
        d = os.path.join(root, r["list"])
        i = int(r["id"])
        out = {"ok": True, "task": read(d, i)} if i in ids(d) else \
            {"ok": False, "error": {"kind": "not_found", "message": r["id"]}}
    elif op == "list":
        d = os.path.join(root, r["list"])
        out = {"ok": True, "tasks": [read(d, i) for i in ids(d)]}
    else:
        out = {"ok": False, "error": {"kind": "unsupported", "message": str(op)}}
    print(json.dumps(out), flush=True)
"#;

/// The `cmd:` target for [`OWN_COUNTER_ADAPTER`] written into `dir`.
fn own_counter_target(dir: &Path, layout: &str) -> String {
    let script = dir.join("own_counter.py");
    std::fs::write(&script, OWN_COUNTER_ADAPTER).unwrap();
    format!("cmd:exec python3 '{}' {layout}", script.display())
}

#[test]
#[cfg_attr(not(taskproof_has_python), ignore = "needs python3 on PATH")]
fn processes_that_each_count_ids_on_their_own_are_caught() {
    crate::util::require(&[crate::util::Tool::Python]);
    let dir = tempdir();
    let target = own_counter_target(dir.path(), "opaque");
    let r = run(&[
        "--filter",
        "two-processes-creating-get-different-ids",
        "--target",
        &target,
    ]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    for want in [
        "FAIL two-processes-creating-get-different-ids",
        "a process that counts ids on its own hands out b's id 2 again here",
        "rules:    S1, S19",
    ] {
        assert!(
            r.stdout.contains(want),
            "missing {want:?} in:\n{}",
            r.stdout
        );
    }
}

#[test]
#[cfg_attr(not(taskproof_has_python), ignore = "needs python3 on PATH")]
fn a_store_without_the_files_a_setup_step_assumes_is_skipped_not_failed() {
    crate::util::require(&[crate::util::Tool::Python]);
    // The store writes no .highwatermark, so removing it fails: the scenario does not apply.
    let dir = tempdir();
    let target = own_counter_target(dir.path(), "claude-code");
    let r = run(&[
        "--filter",
        "symlinked-highwatermark-is-never-written-through",
        "--target",
        &target,
    ]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains(
            "SKIP symlinked-highwatermark-is-never-written-through: the target does not meet the precondition at steps[2] (the store keeps its next id in l/.highwatermark, as Claude Code does): could not remove the file: the root has no such file or folder"
        ),
        "{}",
        r.stdout
    );
    assert_eq!(r.last_line(), "0 passed, 0 failed, 0 errors, 1 skipped");
    // Without the key, the same failure is a failure.
    let text = r#"{"id": "x", "title": "t", "rules": ["S17"], "profiles": ["strict"], "steps": [
        {"send": {"op": "create", "list": "l", "task": {"subject": "a"}}},
        {"remove_file": "l/.nothing-here"}]}"#;
    std::fs::write(dir.path().join("x.json"), text).unwrap();
    let r = run_in(dir.path(), &["x.json"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("FAIL x"), "{}", r.stdout);
}

#[test]
fn keep_going_reports_every_failing_step() {
    let dir = tempdir();
    let text = r#"{"id": "two-wrong", "title": "t", "rules": ["S2"], "profiles": ["strict"], "steps": [
        {"send": {"op": "create", "list": "l", "task": {"subject": ""}}, "expect": {"ok": true}},
        {"send": {"op": "create", "list": "l", "task": {"subject": "a"}}, "expect": {"ok": true, "task": {"id": "1"}}},
        {"send": {"op": "get", "list": "l", "id": "7"}, "expect": {"ok": true}}]}"#;
    std::fs::write(dir.path().join("two-wrong.json"), text).unwrap();
    let first = run_in(dir.path(), &["two-wrong.json"]);
    assert_eq!(first.code, 1, "{}{}", first.stdout, first.stderr);
    assert_eq!(first.stdout.matches("why:").count(), 1, "{}", first.stdout);
    let all = run_in(dir.path(), &["two-wrong.json", "--keep-going"]);
    assert_eq!(all.code, 1, "{}{}", all.stdout, all.stderr);
    assert_eq!(all.stdout.matches("why:").count(), 2, "{}", all.stdout);
    assert!(all.stdout.contains("steps[0]:") && all.stdout.contains("steps[2]:"));
    assert_eq!(all.last_line(), "0 passed, 1 failed, 0 errors, 0 skipped");
}

/// A proxy in front of `taskproof serve` that says its layout is opaque: the reference
/// store's behaviour, with its files out of the scenarios' reach.
const OPAQUE_PROXY: &str = r#"
import json, subprocess, sys
serve = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
for line in sys.stdin:
    serve.stdin.write(line)
    serve.stdin.flush()
    answer = json.loads(serve.stdout.readline())
    if "protocol" in answer:
        answer["layout"] = "opaque"
    print(json.dumps(answer), flush=True)
serve.stdin.close()
sys.exit(serve.wait())
"#;

#[test]
#[cfg_attr(not(taskproof_has_python), ignore = "needs python3 on PATH")]
fn against_an_opaque_store_only_the_file_steps_and_what_depends_on_them_are_skipped() {
    crate::util::require(&[crate::util::Tool::Python]);
    let dir = tempdir();
    let proxy = dir.path().join("opaque.py");
    std::fs::write(&proxy, OPAQUE_PROXY).unwrap();
    let target = format!(
        "cmd:exec python3 '{}' '{}' serve --no-fsync",
        proxy.display(),
        bin()
    );
    let json_path = dir.path().join("r.json");
    let r = run(&[
        "--target",
        &target,
        "--report",
        &format!("json:{}", json_path.display()),
    ]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let v: Value = serde_json::from_slice(&std::fs::read(&json_path).unwrap()).unwrap();
    let by_id = |id: &str| {
        v["scenarios"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == id)
            .cloned()
            .unwrap()
    };
    // rt07 deletes and then looks for the file: only that look is skipped.
    let rt07 = by_id("rt07-deletion");
    assert_eq!(rt07["outcome"], "pass", "{rt07}");
    let skipped = rt07["skipped_steps"].as_array().unwrap();
    assert_eq!(skipped.len(), 1, "{rt07}");
    assert_eq!(
        skipped[0]["reason"],
        "touches files, but the target's layout is opaque"
    );
    assert!(
        r.stdout.contains(&format!(
            "SKIP rt07-deletion steps[{}]: touches files",
            skipped[0]["step"]
        )),
        "{}",
        r.stdout
    );
    // Files written behind the store's back: the listings of that list depend on them and
    // are skipped too; the creates before them still ran.
    let corrupt = by_id("unreadable-task-files-are-named-corrupt");
    assert_eq!(corrupt["outcome"], "pass", "{corrupt}");
    let skipped = corrupt["skipped_steps"].as_array().unwrap();
    assert_eq!(skipped[0]["step"], 2, "{corrupt}");
    assert!(
        skipped.iter().any(|k| k["reason"]
            == "uses list l, which steps[2] changed through its files (the target's layout is opaque)"),
        "{corrupt}"
    );
    assert!(
        skipped.iter().all(|k| k["step"].as_u64() >= Some(2)),
        "{corrupt}"
    );
}

#[test]
fn the_built_in_suite_runs_outside_the_repository_and_can_be_exported() {
    let dir = tempdir();
    let json_path = dir.path().join("r.json");
    let r = run_in(dir.path(), &["--report", "json:r.json"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    // The three scenarios on the session's own list and the team's need an agent session
    // (session_list, team).
    assert!(
        r.last_line()
            .ends_with(" passed, 0 failed, 0 errors, 0 skipped, 4 not judged"),
        "{}",
        r.stdout
    );
    let v: Value = serde_json::from_slice(&std::fs::read(&json_path).unwrap()).unwrap();
    let rt01 = v["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "rt01-basic-creation")
        .cloned()
        .unwrap();
    assert_eq!(rt01["file"], "scenarios/rt01-basic-creation.json");

    let list = taskproof_in(dir.path())
        .args(["scenarios", "list"])
        .output()
        .unwrap();
    assert!(list.status.success());
    let list = String::from_utf8(list.stdout).unwrap();
    assert!(
        list.lines()
            .any(|l| l.starts_with("scenarios/rt07-deletion.json\t")),
        "{list}"
    );
    let export = taskproof_in(dir.path())
        .args(["scenarios", "export", "mine"])
        .output()
        .unwrap();
    assert!(export.status.success(), "{export:?}");
    let r = run_in(
        dir.path(),
        &[
            "mine",
            "--target",
            "naive",
            "--skip-file",
            "mine/expected/naive-strict.skip",
            "--profile",
            "strict",
        ],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
}

#[test]
fn a_reader_that_goes_away_ends_the_output_quietly() {
    use std::io::{BufRead, BufReader};
    // Start-up takes a second, so the first line (after the hello) is printed well before
    // any scenario is done, and every later line meets a closed pipe.
    let fail = fixtures("fail");
    let target = format!("cmd:sleep 1; exec '{}' serve --no-fsync", bin());
    let mut child = taskproof_in(repo())
        .args(["run", fail.to_str().unwrap(), "--target", &target])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.starts_with("running 1 scenario"), "{first}");
    // The reader is dropped here: the pipe is closed.
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("Broken pipe"), "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");
    assert_eq!(
        out.status.code(),
        Some(1),
        "the verdict stands: one failure"
    );
}

#[test]
fn run_help_shows_an_adapter_that_exists() {
    let help = taskproof_in(repo())
        .args(["run", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    let path = "examples/adapters/python/s07_adapter.py";
    assert!(help.contains(&format!("cmd:python3 {path}")), "{help}");
    assert!(repo().join(path).is_file());
    for line in help.lines().filter(|l| l.contains("cmd:python3")) {
        let script = line
            .split("cmd:python3 ")
            .nth(1)
            .and_then(|rest| rest.split(['\'', ' ']).next())
            .unwrap();
        assert!(repo().join(script).is_file(), "{script} in {line}");
    }
}
