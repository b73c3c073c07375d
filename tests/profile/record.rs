//! `taskproof record`: a recording of the reference equivalent to strict, a mutant's differing
//! in the rule it breaks, and a step that differs between runs recorded as racy (repeated
//! runs) or as time-dependent (probed with idle time).

use super::*;

#[test]
fn recording_the_reference_gives_a_strict_equivalent_profile() {
    let scenarios = sequential();
    assert!(scenarios.len() >= 30, "the suite shrank");
    let p = record(TargetSpec::reference(), "reference", &scenarios);
    assert_eq!(p.scenarios.len(), scenarios.len());
    assert_eq!(p.differences_from_strict(), Vec::<String>::new());
}

#[test]
fn a_mutants_recording_differs_from_the_references_in_the_rule_it_breaks() {
    let scenarios = sequential();
    let reference = record(TargetSpec::reference(), "reference", &scenarios);
    for (mutant, rule, scenario) in [
        (
            Mutant::ReusedIds,
            "S1",
            "ids-never-reused-after-delete-and-restart",
        ),
        (Mutant::NoCycleCheck, "S7", "rt04-circular-dependency"),
        (
            Mutant::OrphansOnDelete,
            "S10",
            "delete-removes-the-id-from-both-sides",
        ),
    ] {
        let m = record(
            TargetSpec::mutant(mutant),
            &format!("{mutant:?}"),
            &scenarios,
        );
        let changes = diff::diff(&reference, &m);
        assert!(
            changes
                .iter()
                .any(|c| c.id == scenario && c.rules.contains(&rule.parse().unwrap())),
            "{mutant:?}: {changes:#?}"
        );
        let text = diff::render(&reference, &m, &changes);
        assert!(text.contains(&format!("  {rule}: ")), "{text}");
        // And every change is one the mutation explains: it is attributed to a rule the
        // mutated scenarios check, never to the whole suite.
        assert!(changes.len() < scenarios.len() / 2, "{text}");
    }
}

#[test]
fn a_step_that_differs_between_runs_is_recorded_as_racy_not_flipping() {
    use taskproof_profile::recorded::{RunRecord, Seen, State, StepKey};
    let run = |seen: Option<serde_json::Value>, held: bool| {
        RunRecord {
        id: "s".into(),
        title: "t".into(),
        rules: vec![taskproof_core::rule::Rule::S2],
        state: State::Ran,
        steps: [
            (StepKey::Step(1), (None, json!({"ok": true}), seen)),
            (
                StepKey::Step(0),
                (
                    None,
                    json!("holds"),
                    Some(json!({"verify": "unique_ids", "held": held, "acknowledged": 10, "sent": 10, "violations": if held { 0 } else { 3 }})),
                ),
            ),
        ]
        .into_iter()
        .collect(),
    }
    };
    let p = Recorded::from_runs(
        "p",
        json!({}),
        vec![
            run(None, true),
            run(Some(json!({"error": "conflict"})), false),
            run(None, true),
        ],
    );
    let s = &p.scenarios["s"];
    assert_eq!(
        s.steps[&StepKey::Step(1)].seen,
        Seen::Racy(vec![serde_json::Value::Null, json!({"error": "conflict"})])
    );
    assert_eq!(
        s.steps[&StepKey::Step(0)].seen,
        Seen::Same(
            json!({"verify": "unique_ids", "held": "sometimes", "held_in": 2, "runs": 3, "violations": "0 to 3"})
        )
    );
    // The file reads back as written.
    let back = Recorded::parse_text(&p.to_text(), "p.json").unwrap();
    assert_eq!(back.scenarios, p.scenarios);
}

/// A proxy in front of `taskproof serve` whose every second session (counting the sessions
/// that send more than `hello`, in the file named by its first argument) answers `get` with
/// `io`: a store that answers one step differently from one run of a scenario to the next,
/// with no clock involved.
const FLAKY_PROXY: &str = r#"
import json, subprocess, sys
counter, command = sys.argv[1], sys.argv[2:]
serve = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
flaky = None
for line in sys.stdin:
    request = json.loads(line)
    serve.stdin.write(line)
    serve.stdin.flush()
    answer = serve.stdout.readline()
    if request.get("op") != "hello" and flaky is None:
        try:
            with open(counter) as f:
                n = int(f.read())
        except FileNotFoundError:
            n = 0
        with open(counter, "w") as f:
            f.write(str(n + 1))
        flaky = n % 2 == 1
    if flaky and request.get("op") == "get":
        answer = json.dumps({"ok": False, "error": {"kind": "io", "message": "flaky"}}) + "\n"
    sys.stdout.write(answer)
    sys.stdout.flush()
serve.stdin.close()
sys.exit(serve.wait())
"#;

#[test]
#[cfg_attr(not(taskproof_has_python), ignore = "needs python3 on PATH")]
fn record_repeats_every_scenario_and_marks_a_step_that_differs_as_racy() {
    require(&[crate::util::Tool::Python]);
    let dir = tempdir();
    std::fs::write(dir.path().join("flaky.py"), FLAKY_PROXY).unwrap();
    std::fs::write(
        dir.path().join("get.json"),
        r#"{"id": "get-after-create", "title": "t", "rules": ["S2"], "steps": [
        {"send": {"op": "create", "list": "l", "task": {"subject": "a"}}, "expect": {"ok": true, "task": {"id": "1"}}},
        {"send": {"op": "get", "list": "l", "id": "1"}, "expect": {"ok": true, "task": {"subject": "a"}}}]}"#,
    )
    .unwrap();
    let target = |counter: &str| {
        format!(
            "cmd:exec python3 flaky.py {counter} '{}' serve --no-fsync",
            crate::util::bin()
        )
    };
    let record = |counter: &str, out: &str, repeat: &str| {
        let (code, stdout, err) = tp(
            dir.path(),
            &[
                "record",
                "get.json",
                "--jobs",
                "1",
                "--target",
                &target(counter),
                "--out",
                out,
                "--repeat",
                repeat,
                // The counter counts sessions: no time probe's runs in it.
                "--time-probe",
                "0",
            ],
        );
        assert_eq!(code, 0, "{stdout}{err}");
        let text = std::fs::read_to_string(dir.path().join(out)).unwrap();
        (
            stdout,
            serde_json::from_str::<serde_json::Value>(&text).unwrap(),
        )
    };

    // Once: whatever the one run saw (the first session answers as the store does).
    let (_, once) = record("once.n", "once.json", "1");
    assert_eq!(once["recorded"]["repeat"], 1);
    assert_eq!(once["scenarios"]["get-after-create"].get("steps"), None);

    // By default twice: the second run's `get` fails, so the step is racy, with both answers.
    let (out, twice) = record("twice.n", "twice.json", "2");
    assert!(
        out.contains("1 differ, 0 skipped, 0 errors; 1 racy steps"),
        "{out}"
    );
    assert_eq!(twice["recorded"]["repeat"], 2);
    assert_eq!(
        twice["scenarios"]["get-after-create"]["steps"]["1"]["racy"],
        json!([null, {"error": "io"}])
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("twice.n")).unwrap(),
        "2",
        "the scenario ran twice"
    );
    let (_, default) = {
        let (code, stdout, err) = tp(
            dir.path(),
            &[
                "record",
                "get.json",
                "--target",
                &target("default.n"),
                "--out",
                "default.json",
            ],
        );
        assert_eq!(code, 0, "{stdout}{err}");
        // The time probe runs the scenario again with and without idle time before the
        // racy step, in the order with, without, without, with; this proxy fails every
        // second session whatever the time, so the runs with idle time differ and the step
        // stays racy.
        assert!(
            err.contains("time probe of get-after-create steps[1]: left racy: the runs with the idle time differed"),
            "{err}"
        );
        let text = std::fs::read_to_string(dir.path().join("default.json")).unwrap();
        (
            stdout,
            serde_json::from_str::<serde_json::Value>(&text).unwrap(),
        )
    };
    assert_eq!(default["scenarios"], twice["scenarios"]);

    // Held to the racy recording, the store passes whichever way the step goes; held to the
    // single recording, its failing run is a difference at that step.
    for counter in ["hold.n", "hold.n"] {
        let (code, out, err) = tp(
            dir.path(),
            &[
                "run",
                "get.json",
                "--target",
                &target(counter),
                "--profile",
                "twice.json",
            ],
        );
        assert_eq!(code, 0, "{out}{err}");
        assert!(
            out.contains("steps[1] is racy in the profile twice"),
            "{out}"
        );
    }
    let mut codes = Vec::new();
    for _ in 0..2 {
        let (code, out, _) = tp(
            dir.path(),
            &[
                "run",
                "get.json",
                "--target",
                &target("once-hold.n"),
                "--profile",
                "once.json",
            ],
        );
        if code == 1 {
            assert!(
                out.contains("the profile once recorded that steps[1] behaves as strict expects"),
                "{out}"
            );
        }
        codes.push(code);
    }
    assert_eq!(codes, [0, 1]);
}

/// An adapter for the reference store whose store removes a task file once it sees it
/// completed: after 1.5 s in the first, third, … session that sees one, after 0.05 s in
/// the second, fourth, … (a counter file beside the scenario counts them). A `get` half a
/// second after the completion finds the task or not by turns; after 2 s more it never does.
fn alternating_remover(dir: &Path) -> String {
    let count = dir.join("count");
    format!(
        "cmd:(while sleep 0.05; do f=$(grep -l '\"completed\"' \"$TASKPROOF_ROOT\"/*/*.json 2>/dev/null); \
         if [ -n \"$f\" ]; then n=$(cat '{c}' 2>/dev/null || echo 0); echo $((n+1)) > '{c}'; \
         if [ $((n % 2)) = 0 ]; then sleep 1.5; else sleep 0.05; fi; rm -f $f; break; fi; done) & \
         exec '{}' serve --no-fsync",
        crate::util::bin(),
        c = count.display()
    )
}

/// Issue 24 item 5: a step that answers differently between runs because of time is probed
/// with idle time before it and recorded as time-dependent, with both answers and the
/// delay; a run held to the profile accepts either answer and says why, and one that gives
/// a third answer fails.
#[test]
fn record_probes_a_racy_step_with_idle_time_and_records_it_as_time_dependent() {
    let dir = tempdir();
    std::fs::write(
        dir.path().join("timed.json"),
        r#"{"id": "timed-get", "title": "A completed task read back half a second later", "rules": ["S14"], "steps": [
        {"send": {"op": "create", "list": "l", "task": {"subject": "a"}}, "expect": {"ok": true}},
        {"send": {"op": "update", "list": "l", "id": "1", "patch": {"status": "completed"}}, "expect": {"ok": true}},
        {"wait": 0.5},
        {"send": {"op": "get", "list": "l", "id": "1"}, "expect": {"ok": true, "task": {"id": "1"}}}]}"#,
    )
    .unwrap();
    let target = alternating_remover(dir.path());
    let (code, out, err) = tp(
        dir.path(),
        &[
            "record",
            "timed.json",
            "--target",
            &target,
            "--jobs",
            "1",
            "--time-probe",
            "2",
            "--out",
            "p.json",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("0 racy steps, 1 time-dependent"), "{out}");
    assert!(
        err.contains("time probe of timed-get steps[3]: time-dependent: every run answered {\"error\":\"not_found\"} after the idle time"),
        "{err}"
    );
    let profile: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("p.json")).unwrap()).unwrap();
    assert_eq!(
        profile["scenarios"]["timed-get"]["steps"]["3"]["timed"],
        json!({"soon": [null], "late": {"error": "not_found"}, "after_seconds": 2.0})
    );
    assert_eq!(profile["recorded"]["time_probe_seconds"], 2.0);

    // The reference keeps the task: the profile's "sooner" answer, accepted with a note,
    // and the run report names the step, which the matrix shows as its own state.
    let (code, out, err) = tp(
        dir.path(),
        &[
            "run",
            "timed.json",
            "--target",
            "reference",
            "--profile",
            "p.json",
            "--report",
            "json:r.json",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    let report = taskproof_matrix::input::read_run(&dir.path().join("r.json")).unwrap();
    assert_eq!(report.scenarios[0].time_dependent_steps, [3]);
    let columns = [taskproof_matrix::Column {
        run: Some(report),
        ..Default::default()
    }];
    let m = taskproof_matrix::build(&columns);
    assert_eq!(
        m.rows().next().unwrap().cells[0].state,
        taskproof_matrix::State::Timed
    );
    assert!(
        out.contains("steps[3] is time-dependent in the profile p (it answers {\"error\":\"not_found\"} after 2 s idle, what strict expects sooner); this run saw what strict expects"),
        "{out}"
    );
    // Held to a record whose answers are both errors, the reference's answer is neither.
    let mut other = profile.clone();
    other["profile"] = json!("q");
    other["scenarios"]["timed-get"]["steps"]["3"]["timed"]["soon"] = json!([{"error": "io"}]);
    std::fs::write(dir.path().join("q.json"), other.to_string()).unwrap();
    let (code, out, err) = tp(
        dir.path(),
        &[
            "run",
            "timed.json",
            "--target",
            "reference",
            "--profile",
            "q.json",
        ],
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("this run saw what strict expects, neither"),
        "{out}"
    );
}
