//! The shipped scenario suite (`scenarios/`) against every target the project ships: the
//! reference store in-process and as a `taskproof serve` process, the Claude Code 2.1.17
//! model under its own profile and under `strict`, the example Python adapter under `s07`,
//! and every mutant. These are the claims the README makes; if one breaks, so does CI.

use std::path::PathBuf;

use taskproof_core::protocol::Feature;
use taskproof_profile::Profile;
use taskproof_report::result::Outcome;
use taskproof_report::result::{OutcomeKind, SuiteResult};
use taskproof_scenario::{RunConfig, Scenario, SkipList};
use taskproof_store::Mutant;
use taskproof_targets::TargetSpec;

use crate::util::{bin, repo};

fn suite() -> Vec<Scenario> {
    taskproof_scenario::load_dir(&repo().join("scenarios")).expect("the shipped scenarios load")
}

fn run(target: TargetSpec, profile: Profile, skips: Option<PathBuf>) -> SuiteResult {
    let mut config = RunConfig::new(target);
    config.profile = profile;
    if let Some(path) = skips {
        config.skips.add_file(&path).expect("the skip file loads");
    }
    taskproof_scenario::run_suite(&suite(), &config, &mut |_| {})
}

/// Every scenario that did not pass, with why, for a failure message a person can act on.
fn not_passed(suite: &SuiteResult, allowed: &[OutcomeKind]) -> Vec<String> {
    suite
        .scenarios
        .iter()
        .filter(|r| !allowed.contains(&r.kind()))
        .map(|r| {
            format!(
                "{} ({}): {}",
                r.id,
                r.kind().as_str(),
                r.reason().unwrap_or_default()
            )
        })
        .collect()
}

/// The scenarios not judged for a part other than the session's own list and an agent
/// team: a store has every part of a store, and only an agent session has a list of its
/// own (`nothing-vanishes-own-list-*`) or teammates (`team-*`).
fn not_judged_for_a_store_part(suite: &SuiteResult) -> Vec<String> {
    suite
        .scenarios
        .iter()
        .filter_map(|r| match &r.result {
            Ok(Outcome::NotJudged(parts))
                if parts
                    .iter()
                    .any(|(f, _)| !matches!(f, Feature::SessionList | Feature::Team)) =>
            {
                Some(format!("{}: {parts:?}", r.id))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn the_reference_store_passes_every_scenario() {
    let s = run(TargetSpec::reference(), Profile::Strict, None);
    assert!(
        s.scenarios.len() >= 30,
        "the suite shrank to {}",
        s.scenarios.len()
    );
    let bad = not_passed(&s, &[OutcomeKind::Pass, OutcomeKind::NotJudged]);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    let bad = not_judged_for_a_store_part(&s);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn the_reference_store_passes_as_an_adapter_process() {
    // Real processes: restarts are SIGKILLs, concurrent lanes are separate processes.
    let cmd = format!("{} serve --no-fsync", bin());
    let s = run(TargetSpec::cmd(cmd), Profile::Strict, None);
    let bad = not_passed(&s, &[OutcomeKind::Pass, OutcomeKind::NotJudged]);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    let bad = not_judged_for_a_store_part(&s);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn the_naive_store_passes_under_the_cc_2_1_17_profile() {
    let s = run(TargetSpec::naive(), Profile::Cc2117, None);
    let bad = not_passed(
        &s,
        &[OutcomeKind::Pass, OutcomeKind::Skip, OutcomeKind::NotJudged],
    );
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    let bad = not_judged_for_a_store_part(&s);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn the_naive_store_fails_under_strict_exactly_where_the_runtime_test_found_trouble() {
    // The skip file lists each scenario the runtime test's findings predict to fail, with
    // the finding. A listed scenario that passes, or an unlisted one that fails, fails here.
    let skips = repo().join("scenarios/expected/naive-strict.skip");
    let s = run(TargetSpec::naive(), Profile::Strict, Some(skips.clone()));
    let bad = not_passed(
        &s,
        &[OutcomeKind::Pass, OutcomeKind::Skip, OutcomeKind::NotJudged],
    );
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    let bad = not_judged_for_a_store_part(&s);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    let mut listed = SkipList::default();
    listed.add_file(&skips).unwrap();
    for r in &s.scenarios {
        if listed.reason(&r.id).is_some() && !listed.is_racy(&r.id) {
            assert_eq!(
                r.kind(),
                OutcomeKind::Skip,
                "{} was predicted to fail",
                r.id
            );
        }
    }
    let skipped = s
        .scenarios
        .iter()
        .filter(|r| r.kind() == OutcomeKind::Skip)
        .count();
    assert!(skipped <= listed.len(), "only listed scenarios are skipped");
}

#[test]
#[cfg_attr(not(taskproof_has_python), ignore = "needs python3 on PATH")]
fn the_example_python_adapter_passes_under_the_s07_profile() {
    crate::util::require(&[crate::util::Tool::Python]);
    let script = repo().join("examples/adapters/python/s07_adapter.py");
    assert!(script.exists(), "{} is missing", script.display());
    let cmd = format!("python3 {}", script.display());
    let s = run(TargetSpec::cmd(cmd), Profile::S07, None);
    let bad = not_passed(
        &s,
        &[OutcomeKind::Pass, OutcomeKind::Skip, OutcomeKind::NotJudged],
    );
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    // What was not judged needs a part the adapter does not declare, and only that.
    let hello = s.target.hello.as_ref().expect("a hello");
    for r in s
        .scenarios
        .iter()
        .filter(|r| r.kind() == OutcomeKind::NotJudged)
    {
        let Ok(taskproof_report::result::Outcome::NotJudged(parts)) = &r.result else {
            unreachable!()
        };
        assert!(
            parts.iter().all(|(f, _)| !hello.has(*f)),
            "{}: {parts:?}",
            r.id
        );
    }
    let passed = s.summary().passed;
    assert!(
        passed >= 10,
        "only {passed} scenarios ran against the adapter"
    );
}

/// Issue 55, what to build 8: the example adapter in Claude Code's layout
/// (examples/adapters/python/claude_code_store.py) declares every part a store can have and
/// passes the whole strict suite with every step judged, its files looked at by the
/// scenarios that read the layout (stray files, a linked or corrupt `.highwatermark`,
/// another program's task files).
#[test]
#[cfg_attr(not(taskproof_has_python), ignore = "needs python3 on PATH")]
fn the_claude_code_layout_example_adapter_passes_the_whole_suite() {
    crate::util::require(&[crate::util::Tool::Python]);
    let script = repo().join("examples/adapters/python/claude_code_store.py");
    let s = run(
        TargetSpec::cmd(format!("python3 '{}'", script.display())),
        Profile::Strict,
        None,
    );
    let hello = s.target.hello.as_ref().expect("a hello");
    assert_eq!(hello.layout.as_str(), "claude-code");
    for part in [
        Feature::Delete,
        Feature::Claim,
        Feature::Edges,
        Feature::EdgesAtCreate,
        Feature::EdgeRemoval,
        Feature::Metadata,
        Feature::Owner,
        Feature::ActiveForm,
        Feature::Lists,
    ] {
        assert!(hello.has(part), "{part:?} is not declared");
    }
    let bad = not_passed(&s, &[OutcomeKind::Pass, OutcomeKind::NotJudged]);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    let bad = not_judged_for_a_store_part(&s);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    let partial: Vec<&str> = s
        .scenarios
        .iter()
        .filter(|r| r.partial().is_some())
        .map(|r| r.id.as_str())
        .collect();
    assert!(
        partial.is_empty(),
        "passes with steps not judged: {partial:?}"
    );
    assert!(s.summary().passed >= 50, "{:?}", s.summary());
}

#[test]
fn every_mutant_is_caught_by_a_scenario_citing_its_rule() {
    let all = suite();
    let mut missed = Vec::new();
    for m in Mutant::ALL {
        if m == Mutant::TruncateWrite {
            // Every read of the store takes the list's lock, so no request can see a file
            // mid-write; only unlocked raw readers can, and those are the race harness's
            // (`taskproof race`, tests/race.rs).
            continue;
        }
        // Only the scenarios citing the mutant's rule: one of them must catch it.
        let citing: Vec<Scenario> = all
            .iter()
            .filter(|s| s.rules.contains(&m.rule()))
            .cloned()
            .collect();
        let config = RunConfig::new(TargetSpec::mutant(m));
        let s = taskproof_scenario::run_suite(&citing, &config, &mut |_| {});
        let caught = s
            .scenarios
            .iter()
            .any(|r| matches!(r.kind(), OutcomeKind::Fail | OutcomeKind::Error));
        if !caught {
            missed.push(format!("{m} ({}, {} scenarios)", m.rule(), citing.len()));
        }
    }
    assert!(
        missed.is_empty(),
        "no scenario citing its rule caught: {}",
        missed.join(", ")
    );
}

/// Issue 43: the background scenarios cited the seed by one machine's absolute path
/// (`/work/shared/seeds/…`), which nobody else can follow; sources name what anyone can find
/// (a file name, an issue, a report in this repository).
#[test]
fn scenario_sources_name_no_path_of_one_machine() {
    let store = taskproof_scenario::load_builtin()
        .unwrap_or_else(|e| panic!("{e:?}"))
        .into_iter()
        .map(|s| (s.id, s.source.unwrap_or_default()));
    let background = taskproof_background::scenario::load_builtin()
        .unwrap_or_else(|e| panic!("{e:?}"))
        .into_iter()
        .map(|s| (s.id, s.source));
    for (id, source) in store.chain(background) {
        for root in ["/work/", "/home/", "/root/", "/tmp/", "/Users/", "/mnt/"] {
            assert!(
                !source.contains(root),
                "{id}: its source names a path of one machine ({root}…): {source}"
            );
        }
    }
}
