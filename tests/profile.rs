//! Recorded profiles (docs/profiles.md): `taskproof record`, `run --profile` with a recorded
//! profile, and `taskproof profile diff`, through the library and the built binary.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;
use taskproof_core::protocol::Feature;
use taskproof_profile::recorded::Recorded;
use taskproof_profile::{Mode, Observer, Profile, diff};
use taskproof_scenario::{Action, RunConfig, Scenario};
use taskproof_store::Mutant;
use taskproof_targets::TargetSpec;

use crate::util::{Tool, repo, require, taskproof_in, tempdir};

/// The shipped scenarios without concurrent blocks (those are recorded the same way, only
/// slower; the racy marking has its own test below).
fn sequential() -> Vec<Scenario> {
    taskproof_scenario::load_dir(&repo().join("scenarios"))
        .expect("the shipped scenarios load")
        .into_iter()
        .filter(|s| {
            !s.steps_for(Profile::Strict)
                .any(|st| matches!(st.action, Action::Concurrent(_)))
        })
        // The scenarios on an agent session's own list are not judged against a store, so
        // the stores these tests record have nothing to say about them.
        .filter(|s| {
            !s.needs_for(Profile::Strict)
                .contains_key(&Feature::SessionList)
        })
        .collect()
}

/// Records `scenarios` against `target` once, through the library.
fn record(target: TargetSpec, name: &str, scenarios: &[Scenario]) -> Recorded {
    let observer = Arc::new(Observer::default());
    let config = RunConfig {
        mode: Mode::Record(observer.clone()),
        profile: Profile::Strict,
        ..RunConfig::new(target.clone())
    };
    let suite = taskproof_scenario::run_suite(scenarios, &config, &mut |_| {});
    assert!(suite.target.hello.is_ok(), "{:?}", suite.target.hello);
    Recorded::from_runs(name, json!({"target": target.to_string()}), observer.take())
}

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

fn scenario_file(id: &str) -> PathBuf {
    repo().join("scenarios").join(format!("{id}.json"))
}

/// Runs the binary in `dir`; (exit code, stdout, stderr).
fn tp(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = taskproof_in(dir)
        .args(args)
        .output()
        .expect("run taskproof");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_target_passes_its_own_recording_and_fails_another_naming_the_step() {
    let dir = tempdir();
    let ids = scenario_file("ids-never-reused-after-delete-and-restart");
    let cycle = scenario_file("rt04-circular-dependency");
    let (ids, cycle) = (ids.to_str().unwrap(), cycle.to_str().unwrap());
    let (code, out, err) = tp(
        dir.path(),
        &[
            "record",
            ids,
            cycle,
            "--target",
            "mutant:reused-ids",
            "--out",
            "p/reused.json",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("1 as strict expects, 1 differ"), "{out}");
    let text = std::fs::read_to_string(dir.path().join("p/reused.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["profile"], "reused");
    assert_eq!(
        v["recorded"]["hello"]["name"],
        "taskproof-mutant-reused-ids"
    );
    assert!(v["recorded"]["date"].as_str().unwrap().starts_with("20"));
    // Stable: recording again writes the same scenarios.
    let (code, ..) = tp(
        dir.path(),
        &[
            "record",
            ids,
            cycle,
            "--target",
            "mutant:reused-ids",
            "--out",
            "p/again.json",
        ],
    );
    assert_eq!(code, 0);
    let again: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("p/again.json")).unwrap())
            .unwrap();
    assert_eq!(again["scenarios"], v["scenarios"]);

    let (code, out, err) = tp(
        dir.path(),
        &[
            "run",
            ids,
            cycle,
            "--target",
            "mutant:reused-ids",
            "--profile",
            "p/reused.json",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.ends_with("2 passed, 0 failed, 0 errors, 0 skipped\n"),
        "{out}"
    );

    let (code, out, err) = tp(
        dir.path(),
        &[
            "run",
            ids,
            cycle,
            "--target",
            "reference",
            "--profile",
            "p/reused.json",
        ],
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("FAIL ids-never-reused-after-delete-and-restart"),
        "{out}"
    );
    assert!(out.contains("the profile reused recorded"), "{out}");
    assert!(out.contains(" at steps["), "{out}");
    assert!(
        out.ends_with("1 passed, 1 failed, 0 errors, 0 skipped\n"),
        "{out}"
    );
}

const HEAD: &str = r#""format": 1, "recorded": {"target": "t", "date": "2026-01-01"}"#;

fn write(dir: &Path, name: &str, scenarios: &str) -> String {
    let path = dir.join(name);
    let text = format!(
        r#"{{"profile": "{}", {HEAD}, "scenarios": {scenarios}}}"#,
        name.trim_end_matches(".json")
    );
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn diff_says_what_changed_per_rule_and_scenario() {
    let dir = tempdir();
    let before = write(
        dir.path(),
        "old.json",
        r#"{
        "ids": {"title": "Ids are never reused after delete and restart", "rules": ["S1"],
                "steps": {"4": {"strict": {"ok": true, "task": {"id": "3"}}, "seen": {"ok": true, "task": {"id": "2"}}}}},
        "race": {"title": "Concurrent creates get unique ids", "rules": ["S2"],
                 "steps": {"0": {"strict": "holds", "seen": {"verify": "unique_ids", "held": "never", "held_in": 0, "runs": 3, "violations": "2 to 9"}}}},
        "same": {"title": "Unchanged", "rules": ["S3"]}
    }"#,
    );
    let after = write(
        dir.path(),
        "new.json",
        r#"{
        "ids": {"title": "Ids are never reused after delete and restart", "rules": ["S1"]},
        "race": {"title": "Concurrent creates get unique ids", "rules": ["S2"],
                 "steps": {"0": {"strict": "holds", "seen": {"verify": "unique_ids", "held": "never", "held_in": 0, "runs": 3, "violations": 40}}}},
        "same": {"title": "Unchanged", "rules": ["S3"]}
    }"#,
    );
    let (code, out, err) = tp(dir.path(), &["profile", "diff", &before, &after]);
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(
        out,
        "old (t, recorded 2026-01-01) -> new (t, recorded 2026-01-01)\n\
         1 scenario(s) changed, under 1 rule(s):\n  S1: ids\n\n\
         ids: Ids are never reused after delete and restart: now as strict expects in new (was not in old) [S1]\n  \
         steps[4]: old answers {\"ok\":true,\"task\":{\"id\":\"2\"}} where strict expects {\"ok\":true,\"task\":{\"id\":\"3\"}}; new behaves as strict expects\n"
    );
    // The other way round, and a profile against itself.
    let (code, out, _) = tp(dir.path(), &["profile", "diff", &after, &before]);
    assert_eq!(code, 1);
    assert!(out.contains("ids: Ids are never reused after delete and restart: no longer as strict expects in old [S1]"), "{out}");
    let (code, out, _) = tp(dir.path(), &["profile", "diff", &after, &after]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.ends_with("no change: every scenario is recorded the same\n"),
        "{out}"
    );
}

#[test]
fn merge_joins_two_days_recordings_and_the_diff_then_counts_the_flap_as_no_change() {
    let dir = tempdir();
    let gone = r#"{"s": {"title": "t", "rules": ["S16"],
        "steps": {"6": {"strict": {"ok": true}, "seen": {"error": "not_found"}}}}}"#;
    let busy = write(dir.path(), "busy.json", gone);
    let quiet = write(
        dir.path(),
        "quiet.json",
        r#"{"s": {"title": "t", "rules": ["S16"]}}"#,
    );
    let (code, out, err) = tp(
        dir.path(),
        &[
            "profile",
            "merge",
            &quiet,
            &busy,
            "--out",
            "both.json",
            "--name",
            "both",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("2 recordings into both.json (profile both): 1 scenarios, 1 racy steps"),
        "{out}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("both.json")).unwrap())
            .unwrap();
    assert_eq!(v["profile"], "both");
    assert_eq!(
        v["scenarios"]["s"]["steps"]["6"]["racy"],
        json!([null, {"error": "not_found"}])
    );
    assert_eq!(v["recorded"]["merged"], json!([{"date": "2026-01-01"}]));
    // Either day's recording records one of the answers the merged one allows.
    for one in [&busy, &quiet] {
        let (code, out, _) = tp(dir.path(), &["profile", "diff", one, "both.json"]);
        assert_eq!(code, 0, "{out}");
    }
    // Recordings of two targets do not merge.
    let other = dir.path().join("other.json");
    std::fs::write(
        &other,
        r#"{"profile": "other", "format": 1, "recorded": {"target": "u"}, "scenarios": {}}"#,
    )
    .unwrap();
    let (code, _, err) = tp(
        dir.path(),
        &[
            "profile",
            "merge",
            &busy,
            other.to_str().unwrap(),
            "--out",
            "x.json",
        ],
    );
    assert_eq!(code, 2);
    assert!(err.contains("only recordings of one target merge"), "{err}");
}

#[test]
fn a_malformed_profile_names_the_file_and_the_field() {
    let dir = tempdir();
    let bad = write(
        dir.path(),
        "bad.json",
        r#"{"x": {"title": "t", "rules": ["S1"], "steps": {"2": {"strict": {"ok": true}, "seen": {"held": "yes"}}}}}"#,
    );
    let (code, out, err) = tp(dir.path(), &["run", "--profile", &bad]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains(&format!("{bad}: scenarios.x.steps.2.seen: expected")),
        "{err}"
    );
    let typo = write(
        dir.path(),
        "typo.json",
        r#"{"x": {"title": "t", "rules": ["S1"], "stpes": {}}}"#,
    );
    let (code, _, err) = tp(dir.path(), &["profile", "diff", &typo, "strict"]);
    assert_eq!(code, 2);
    assert!(
        err.contains(&format!("{typo}: scenarios.x.stpes: unknown field")),
        "{err}"
    );
    let (code, _, err) = tp(dir.path(), &["run", "--profile", "no-such-profile"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown profile \"no-such-profile\""), "{err}");
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

#[test]
fn every_shipped_profile_reads_and_names_only_scenarios_of_the_suite() {
    let ids: Vec<String> = taskproof_scenario::load_builtin()
        .expect("the suite loads")
        .into_iter()
        .map(|s| s.id)
        .collect();
    for (name, _, text) in taskproof_profile::recorded::BUILTIN {
        let p = Recorded::parse_text(text, name).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(&p.name, name);
        // A profile may leave scenarios out (a run skips them, saying so), but every one it
        // records is in the suite, so no record is stale.
        assert!(!p.scenarios.is_empty(), "{name}");
        for id in p.scenarios.keys() {
            assert!(
                ids.contains(id),
                "{name} records {id}, which the suite lacks"
            );
        }
    }
}

#[test]
fn the_naive_store_passes_its_shipped_recording_and_the_reference_does_not() {
    use taskproof_profile::Choice;
    let Choice::Recorded(p) = Choice::resolve("hand-written-files").expect("built in") else {
        panic!("hand-written-files is a recorded profile");
    };
    let scenarios = sequential();
    let hold = |target: TargetSpec| {
        let config = RunConfig {
            mode: Mode::Hold(p.clone()),
            profile: Profile::Strict,
            ..RunConfig::new(target)
        };
        taskproof_scenario::run_suite(&scenarios, &config, &mut |_| {}).summary()
    };
    let naive = hold(TargetSpec::naive());
    assert_eq!(
        (naive.passed, naive.failed, naive.errors),
        (scenarios.len(), 0, 0)
    );
    let reference = hold(TargetSpec::reference());
    assert!(reference.failed >= 10, "{reference:?}");
}

#[test]
fn the_shipped_claude_code_recordings_differ_only_in_id_reuse() {
    let dir = tempdir();
    let (code, out, err) = tp(
        dir.path(),
        &[
            "profile",
            "diff",
            "claude-code-2.1.20",
            "claude-code-2.1.21",
        ],
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("2 scenario(s) changed, under 2 rule(s):\n  S1: ids-never-reused-after-delete-and-restart, two-processes-creating-get-different-ids\n"),
        "{out}"
    );
    assert!(out.contains("ids-never-reused-after-delete-and-restart: A deleted task's id is never handed out again, also after every task was deleted and the process restarted: now as strict expects in claude-code-2.1.21 (was not in claude-code-2.1.20) [S1]"), "{out}");
}

/// Every report of a run names the profile the run held the target to: a recorded profile by
/// its name, marked `(recorded)`, never as `strict`, whose steps it replays.
#[test]
fn every_report_names_the_recorded_profile_the_run_used() {
    let dir = tempdir();
    let rt01 = scenario_file("rt01-basic-creation");
    let rt01 = rt01.to_str().unwrap();
    let reports = |tag: &str| -> Vec<String> {
        [
            format!("json:{tag}.json"),
            format!("junit:{tag}.xml"),
            format!("md:{tag}.md"),
        ]
        .to_vec()
    };
    let read = |name: &str| std::fs::read_to_string(dir.path().join(name)).unwrap();

    // `naive` is held to its recording without --profile.
    let mut args = vec!["run", rt01, "--target", "naive"];
    let held = reports("held");
    for r in &held {
        args.extend(["--report", r.as_str()]);
    }
    let (code, out, err) = tp(dir.path(), &args);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("under profile hand-written-files (recorded)\n"),
        "{out}"
    );
    let json: serde_json::Value = serde_json::from_str(&read("held.json")).unwrap();
    assert_eq!(json["profile"], "hand-written-files (recorded)");
    assert_eq!(
        json["format_version"],
        taskproof_report::schema::RUN_FORMAT,
        "the JSON report keeps its shape"
    );
    assert!(
        read("held.xml").contains("name=\"naive (hand-written-files (recorded))\""),
        "{}",
        read("held.xml")
    );
    assert!(
        read("held.md").contains("profile `hand-written-files (recorded)`"),
        "{}",
        read("held.md")
    );

    // A profile file is named by the name inside it; `strict` stays `strict`.
    let (code, out, err) = tp(
        dir.path(),
        &[
            "record",
            rt01,
            "--target",
            "reference",
            "--out",
            "p/mine.json",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = tp(
        dir.path(),
        &[
            "run",
            rt01,
            "--profile",
            "p/mine.json",
            "--report",
            "json:file.json",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("under profile mine (recorded)\n"), "{out}");
    let json: serde_json::Value = serde_json::from_str(&read("file.json")).unwrap();
    assert_eq!(json["profile"], "mine (recorded)");
    let mut args = vec!["run", rt01, "--profile", "strict"];
    let strict = reports("strict");
    for r in &strict {
        args.extend(["--report", r.as_str()]);
    }
    let (code, out, err) = tp(dir.path(), &args);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("under profile strict\n"), "{out}");
    let json: serde_json::Value = serde_json::from_str(&read("strict.json")).unwrap();
    assert_eq!(json["profile"], "strict");
    assert!(read("strict.xml").contains("name=\"reference (strict)\""));
    assert!(read("strict.md").contains("profile `strict`"));
}

/// The per-profile expectations written into the scenario files under `cc-2.1.17` are the
/// hand-written-files store's (the naive model of agents writing Claude Code's files), and
/// they say what its recording says: a step the recording lists as not doing what strict
/// expects has a `cc-2.1.17` expectation other than strict's, and a step whose written
/// `cc-2.1.17` expectation is a definite other answer is in the recording.
#[test]
fn the_written_cc_2_1_17_expectations_agree_with_the_recorded_naive_store() {
    use taskproof_profile::Choice;
    use taskproof_profile::recorded::StepKey;
    let Choice::Recorded(naive) = Choice::resolve("hand-written-files").expect("built in") else {
        panic!("hand-written-files is a recorded profile");
    };
    let mut checked = 0;
    let mut disagree = Vec::new();
    for s in sequential() {
        let Some(rec) = naive.scenarios.get(&s.id) else {
            continue;
        };
        if !s.profiles.contains(&Profile::Cc2117) {
            continue;
        }
        for step in s.steps_for(Profile::Cc2117) {
            let Action::Send { expect, .. } = &step.action else {
                continue;
            };
            if !step.runs_under(Profile::Strict) {
                continue;
            }
            let (Some(strict), Some(written)) =
                (expect.get(Profile::Strict), expect.get(Profile::Cc2117))
            else {
                continue;
            };
            let recorded = rec.steps.contains_key(&StepKey::Step(step.index));
            if recorded && written == strict {
                disagree.push(format!(
                    "{} steps[{}]: recorded as differing, written as strict",
                    s.id, step.index
                ));
            }
            if !recorded && contradicts(written, strict) {
                disagree.push(format!(
                    "{} steps[{}]: written as {written:?}, recorded as strict",
                    s.id, step.index
                ));
            }
            checked += 1;
        }
    }
    assert!(checked > 100, "only {checked} steps compared");
    assert!(disagree.is_empty(), "{disagree:#?}");
}

/// Whether an answer that meets `written` can never meet `strict`: another error kind, an
/// error against a success, or a task field both check with different values. (A written
/// expectation that checks fewer fields, or accepts several answers, does not contradict.)
fn contradicts(written: &taskproof_scenario::Expect, strict: &taskproof_scenario::Expect) -> bool {
    use taskproof_scenario::Expect;
    match (written, strict) {
        (Expect::Error(a), Expect::Error(b)) => a != b,
        (Expect::Error(_), Expect::Ok { .. }) | (Expect::Ok { .. }, Expect::Error(_)) => true,
        (
            Expect::Ok {
                task: w,
                tasks: wl,
                corrupt: wc,
            },
            Expect::Ok {
                task: s,
                tasks: sl,
                corrupt: sc,
            },
        ) => {
            let fields = match (w, s) {
                (Some(serde_json::Value::Object(w)), Some(serde_json::Value::Object(s))) => {
                    w.iter().any(|(k, v)| s.get(k).is_some_and(|sv| sv != v))
                }
                _ => false,
            };
            let lists = matches!((wl, sl), (Some(a), Some(b)) if a != b)
                || matches!((wc, sc), (Some(a), Some(b)) if a != b);
            fields || lists
        }
        _ => false,
    }
}

/// Holding the real Claude Code to recordings, cheaply (CI has 2.1.112 in its cache): 2.1.112
/// never reuses a deleted id, as its own recording and 2.1.21's say, so it passes them on that
/// scenario and fails 2.1.20's, which recorded the reuse, naming the step.
#[test]
#[cfg_attr(not(taskproof_has_npm), ignore = "needs node and npm on PATH")]
fn the_real_claude_code_2_1_112_passes_its_recording_and_fails_2_1_20s_on_id_reuse() {
    require(&[crate::util::Tool::Npm]);
    let dir = tempdir();
    let ids = scenario_file("ids-never-reused-after-delete-and-restart");
    let ids = ids.to_str().unwrap();
    let hold = |profile: &str| {
        tp(
            dir.path(),
            &[
                "run",
                ids,
                "--target",
                "claude-code@2.1.112",
                "--profile",
                profile,
                "--timeout",
                "120",
                "--start-timeout",
                "180",
            ],
        )
    };
    let (code, out, err) = hold("claude-code-2.1.112");
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("under profile claude-code-2.1.112 (recorded)\n"),
        "{out}"
    );
    assert!(
        out.ends_with("1 passed, 0 failed, 0 errors, 0 skipped\n"),
        "{out}"
    );
    let (code, out, err) = hold("claude-code-2.1.20");
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("the profile claude-code-2.1.20 recorded"),
        "{out}"
    );
    assert!(out.contains("at steps[10]"), "{out}");
}

/// Runs `scripts/hold-profiles.sh ARGS` with this build's binary, its reports into `out`.
fn hold_script(out: &Path, target: Option<&str>, args: &[&str]) -> std::process::Output {
    let mut cmd = std::process::Command::new("bash");
    cmd.arg(repo().join("scripts/hold-profiles.sh"))
        .args(args)
        .env("TASKPROOF", crate::util::bin())
        .env("HOLDS_DIR", out)
        .env_remove("TARGET");
    if let Some(t) = target {
        cmd.env("TARGET", t);
    }
    cmd.output().expect("run the hold script")
}

/// The one file in `dir` whose name ends with `suffix`, read.
fn only_file_ending(dir: &Path, suffix: &str) -> (String, String) {
    let names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(suffix))
        .collect();
    assert_eq!(names.len(), 1, "{suffix} in {names:?}");
    let text = std::fs::read_to_string(dir.join(&names[0])).unwrap();
    (names[0].clone(), text)
}

#[test]
#[cfg_attr(not(taskproof_has_python), ignore = "needs python3 on PATH")]
fn the_hold_script_passes_a_store_held_to_its_own_recording_and_keeps_the_reports() {
    require(&[Tool::Python]);
    let out = tempdir();
    let o = hold_script(out.path(), None, &["hand-written-files"]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let (name, status) = only_file_ending(out.path(), "-hand-written-files.status");
    assert!(
        status.contains("target naive profile hand-written-files exit 0"),
        "{status}"
    );
    let base = name.trim_end_matches(".status");
    for ext in ["txt", "json", "md", "stderr"] {
        assert!(
            out.path().join(format!("{base}.{ext}")).is_file(),
            "{base}.{ext}"
        );
    }
    let (_, txt) = only_file_ending(out.path(), "-hand-written-files.txt");
    assert!(
        txt.trim_end()
            .ends_with("49 passed, 0 failed, 0 errors, 0 skipped"),
        "{txt}"
    );
    assert!(
        stdout.contains("hand-written-files: exit 0, 49 passed"),
        "{stdout}"
    );
}

#[test]
#[cfg_attr(not(taskproof_has_python), ignore = "needs python3 on PATH")]
fn the_hold_script_fails_a_store_that_differs_and_refuses_an_unknown_profile() {
    require(&[Tool::Python]);
    let out = tempdir();
    // The reference store does what strict expects, where the naive one's recording saw
    // lost updates and duplicate ids: held to that recording it fails.
    let o = hold_script(out.path(), Some("reference"), &["hand-written-files"]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let (_, status) = only_file_ending(out.path(), "reference-held-to-hand-written-files.status");
    assert!(
        status.contains("target reference profile hand-written-files exit 1"),
        "{status}"
    );
    let o = hold_script(out.path(), None, &["no-such-profile"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("profiles/no-such-profile.json"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
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
