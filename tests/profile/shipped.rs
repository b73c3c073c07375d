//! The profiles shipped in profiles/: each reads and names only the suite's scenarios, the
//! stores they were recorded from pass them, and they differ where the products did.

use super::*;

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
