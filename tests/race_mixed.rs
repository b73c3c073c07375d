//! Mixed-writer races (`race --target A --target B`): sessions of several targets write one
//! list at once, and the report charges each lost acknowledged change to one target.
//!
//! The cheap test pairs the reference with the naive store, whose unlocked read-modify-write
//! loses updates; the charges are checked against the history with the writers' targets
//! worked out independently (writers `0..n` run on the first target). The last test pairs the
//! reference with the real Claude Code 2.1.112 (installed with npm into the cache, which CI
//! fills first, as tests/claude_code.rs needs), and asserts the reference lost nothing.

use std::time::Duration;

use serde_json::Value;
use taskproof_claude_code::ClaudeCode;
use taskproof_profile::Profile;
use taskproof_race::check::AnomalyKind;
use taskproof_race::{Config, Mix, Workload};
use taskproof_targets::TargetSpec;

use crate::util::taskproof_with;

const ATTEMPTS: u64 = 20;

/// The race tests' configuration, with room for Claude Code's slower answers.
fn config(target: TargetSpec, writers: usize, ops: usize, seed: u64) -> Config {
    Config {
        timeout: Duration::from_secs(60),
        ..crate::race::config(target, writers, ops, seed)
    }
}

#[test]
fn losses_in_a_mixed_race_are_charged_by_who_held_the_lock() {
    let mix = Mix {
        targets: vec![TargetSpec::reference(), TargetSpec::naive()],
        think: Duration::from_millis(1),
        own_tasks: false,
        teammates: 0,
    };
    let (mut naive_lost, mut dropped_by_naive) = (0, 0);
    for seed in 0..ATTEMPTS {
        let cfg = config(TargetSpec::reference(), 2, 40, seed);
        let root = tempfile::tempdir().unwrap();
        let run =
            taskproof_race::driver::run_mixed(&cfg, &mix, Workload::Metadata, root.path(), None)
                .expect("the run completes");
        assert_eq!(run.targets, ["reference", "naive"]);
        assert_eq!(run.writer_targets, [0, 0, 1, 1]);
        let f = taskproof_race::judge(&run, taskproof_race::DEFAULT_LIN_BUDGET);
        let report =
            taskproof_race::WorkloadReport::new(&run, &f, 0, seed, 2, 40, 20, Profile::Strict);
        let lost: Vec<_> = f
            .witnesses
            .iter()
            .filter(|w| w.kind == AnomalyKind::Lost)
            .collect();
        assert_eq!(report.charges.len(), lost.len());
        // Writers 0 and 1 are the reference's, 2 and 3 the naive store's; the setup session
        // (no writer) is the first target's.
        let target = |op: usize| match run.history.ops[op].writer {
            Some(w) if w >= 2 => "naive",
            _ => "reference",
        };
        for (w, c) in lost.iter().zip(&report.charges) {
            assert_eq!(c.ops, w.ops);
            let acked = target(w.ops[0]);
            let dropped = w.ops.get(1).map(|&i| target(i));
            assert_eq!(c.acknowledged_by, acked);
            assert_eq!(c.dropped_by.as_deref(), dropped);
            // The naive store changes without a lock: its lost change is its own. The
            // reference changes under its lock: its lost change is charged to a writer that
            // ignored the lock, the naive store (whose writes were in flight then), and
            // always when the checker names a naive write as the one that dropped it.
            if acked == "naive" || dropped == Some("naive") {
                assert_eq!(c.charged_to, "naive", "{}", w.text);
            }
            if acked == "reference" && dropped == Some("naive") {
                dropped_by_naive += 1;
                assert_eq!(c.charged_to, "naive");
            }
        }
        let per = &report.targets;
        assert_eq!(
            (per[0].target.as_str(), per[1].target.as_str()),
            ("reference", "naive")
        );
        assert_eq!(per[0].lost, 0, "the reference lost a change:\n{lost:#?}");
        assert_eq!(per[0].lost + per[1].lost, lost.len());
        assert!(per[0].acknowledged > 0 && per[1].acknowledged > 0);
        naive_lost += per[1].lost;
        if naive_lost > 0 && dropped_by_naive > 0 {
            break;
        }
    }
    assert!(
        naive_lost > 0,
        "no run of {ATTEMPTS} charged a loss to the naive store"
    );
}

#[test]
fn the_command_reports_each_targets_losses() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let mut found = false;
    for seed in 0..ATTEMPTS {
        let out = taskproof_with(&[
            "race",
            "--target",
            "reference",
            "--target",
            "naive",
            "--writers",
            "2",
            "--ops",
            "40",
            "--workload",
            "metadata",
            "--no-fsync",
            "--think",
            "0.001",
            "--seed",
            &seed.to_string(),
            "--report",
            &format!("json:{}", json.display()),
        ])
        .output()
        .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.starts_with("race on reference + naive (profile strict): 2 writers of each"),
            "{stdout}"
        );
        let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let targets = r["targets"].as_array().expect("per-target totals");
        assert_eq!(targets[0]["target"], "reference");
        assert_eq!(targets[0]["lost"], 0, "{stdout}");
        let naive = targets[1]["lost"].as_u64().unwrap();
        assert!(
            stdout.contains(&format!("reference: 0 lost; naive: {naive} lost")),
            "{stdout}"
        );
        if naive > 0 {
            assert_eq!(out.status.code(), Some(1), "losses fail the run: {stdout}");
            found = true;
            break;
        }
    }
    assert!(found, "no run of {ATTEMPTS} lost a naive change");
}

#[test]
fn a_target_given_twice_is_a_usage_error() {
    let out = taskproof_with(&[
        "race", "--target", "naive", "--target", "naive", "--ops", "1",
    ])
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--target naive is given twice"), "{err}");
}

/// The real Claude Code 2.1.112 and the reference on one list: every workload, 2 sessions of
/// each. Whatever Claude Code loses, the reference loses nothing.
#[test]
#[cfg_attr(not(taskproof_has_npm), ignore = "needs node and npm on PATH")]
fn a_mixed_race_with_claude_code_loses_nothing_of_the_references() {
    crate::util::require(&[crate::util::Tool::Npm]);
    let version = std::env::var("TASKPROOF_TEST_CLAUDE_CODE").unwrap_or_else(|_| "2.1.112".into());
    let cc = ClaudeCode::parse(&version).expect("a version number");
    cc.prepare().expect("install Claude Code with npm");
    let cfg = config(TargetSpec::reference(), 2, 6, 1);
    let mix = Mix {
        targets: vec![TargetSpec::reference(), TargetSpec::from(cc)],
        think: Duration::from_millis(50),
        own_tasks: false,
        teammates: 0,
    };
    let report = taskproof_race::run_all(
        &cfg,
        &mix,
        &[Workload::Metadata, Workload::Create, Workload::Claim],
        1,
        taskproof_race::DEFAULT_LIN_BUDGET,
        None,
        &|_, _| {},
    )
    .expect("the run completes");
    let text = report.render();
    for w in &report.workloads {
        assert!(w.skipped.is_none(), "{text}");
        assert!(w.errors.is_empty(), "{text}");
        let per = &w.targets;
        assert_eq!(per.len(), 2, "{text}");
        assert!(per[1].target.starts_with("claude-code@"));
        assert!(per[0].acknowledged > 0 && per[1].acknowledged > 0, "{text}");
        assert_eq!(per[0].lost, 0, "the reference lost a change:\n{text}");
    }
    assert_eq!(report.targets[0].lost, 0, "{text}");
}
