//! `taskproof run` end to end: the built binary against the fixture scenarios in
//! `tests/fixtures/scenarios`, in-process and through `cmd:` adapters (the built
//! `taskproof serve`, and shell scripts that hang or print garbage).

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;
use taskproof::protocol::Feature;
use taskproof::scenario::{OutcomeKind, RunConfig, load_dir, run_suite};
use taskproof::target::TargetSpec;

use crate::util::{bin, repo, taskproof_in, tempdir};

fn fixtures(sub: &str) -> PathBuf {
    repo().join("tests/fixtures/scenarios").join(sub)
}

/// A `hello` answer for hand-written adapters.
const HELLO: &str = r#"{"ok":true,"protocol":1,"name":"script","version":"0","layout":"opaque","features":["delete","claim","edges"]}"#;

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    fn last_line(&self) -> &str {
        self.stdout.lines().last().unwrap_or("")
    }
}

fn run_in(dir: &Path, args: &[&str]) -> Run {
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
    assert_eq!(r.last_line(), "2 passed, 0 failed, 0 skipped");

    let fail = fixtures("fail");
    let r = run(&[fail.to_str().unwrap()]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert_eq!(r.last_line(), "0 passed, 1 failed, 0 skipped");
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
    assert_eq!(r.last_line(), "2 passed, 0 failed, 0 skipped");
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
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert_eq!(r.last_line(), "0 passed, 1 failed, 0 skipped");
    for want in [
        "ERROR fixture-cycle-refused",
        "at:       steps[0]",
        "no answer within 1s; the adapter was killed",
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
fn an_adapter_that_never_says_hello_is_an_error() {
    let cycle = fixtures("pass/cycle-refused.json");
    let r = run(&[
        cycle.to_str().unwrap(),
        "--target",
        "cmd:echo starting >&2; exec sleep 100",
        "--timeout",
        "1",
    ]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("hello failed: no answer within 1s"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("ERROR fixture-cycle-refused"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("| starting"), "{}", r.stdout);
}

#[test]
fn an_adapter_that_exits_early_is_an_error() {
    let cycle = fixtures("pass/cycle-refused.json");
    // Says hello and exits cleanly at end of input, but dies on the first request.
    let target =
        format!("cmd:read l; echo '{HELLO}'; while read l; do echo dying >&2; exit 3; done");
    let r = run(&[cycle.to_str().unwrap(), "--target", &target]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
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
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
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
    assert_eq!(r.last_line(), "0 passed, 0 failed, 1 skipped");

    std::fs::write(&skip, "fixture-cycle-refused  thought to be broken\n").unwrap();
    let pass = fixtures("pass");
    let r = run(&[
        pass.to_str().unwrap(),
        "--skip-file",
        skip.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("unexpected pass"), "{}", r.stdout);
    assert_eq!(r.last_line(), "1 passed, 1 failed, 0 skipped");

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
        "1 passed, 0 failed, 0 skipped",
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
    assert_eq!(r.last_line(), "4 passed, 1 failed, 0 skipped");

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
            "scenarios"
        ]
    );
    assert_eq!(v["format_version"], 1);
    assert_eq!(v["target"]["spec"], "reference");
    assert_eq!(v["target"]["name"], "taskproof-reference");
    assert_eq!(v["target"]["layout"], "claude-code");
    assert_eq!(v["profile"], "strict");
    assert_eq!(
        v["summary"],
        serde_json::json!({"passed": 4, "failed": 1, "skipped": 0, "errors": 0})
    );
    let scenarios = v["scenarios"].as_array().unwrap();
    assert_eq!(scenarios.len(), 5);
    for s in scenarios {
        assert_eq!(
            keys(s),
            [
                "id",
                "title",
                "file",
                "source",
                "rules",
                "outcome",
                "reason",
                "failures",
                "error",
                "stderr",
                "notes",
                "duration_ms"
            ]
        );
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
            "step", "session", "request", "expected", "actual", "reason", "rules", "note"
        ]
    );
    assert_eq!(f["step"], 0);
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
    assert!(md.contains("**4 passed, 1 failed, 0 skipped**"), "{md}");
    assert!(
        md.contains("| `fixture-wrong-expectation` | fail | S2 |"),
        "{md}"
    );
}

#[test]
fn the_library_api_reports_outcomes_and_failed_rules() {
    // What the mutant self-test needs: load a folder, run it against a mutant, and see which
    // rules the failures cite.
    let scenarios = load_dir(&fixtures("restart")).expect("fixtures load");
    let mut config = RunConfig::new(TargetSpec::Mutant("memory-only".parse().unwrap()));
    config.jobs = 1;
    let mut events = 0;
    let suite = run_suite(&scenarios, &config, &mut |_| events += 1);
    assert_eq!(
        events,
        1 + scenarios.len() + 1,
        "started, one per scenario, finished"
    );
    let r = &suite.scenarios[0];
    assert_eq!(r.kind(), OutcomeKind::Fail);
    assert!(r.failed_rules().contains("S14"), "{:?}", r.failed_rules());
    assert!(suite.target.hello.as_ref().unwrap().has(Feature::Delete));
}
