//! Mixed races where each target keeps its own tasks (`race --target A --target B` with
//! targets of different layouts, or `--own-tasks`): two products on one list folder, each in
//! its own file names and id scheme.
//!
//! The second product is tests/fixtures/race/other_product.py: `tuuid` keeps
//! `T-{uuid}.json` files and takes the list's `.lock` by creating it exclusively with JSON,
//! deleting one it cannot parse (as issue 48 reads oh-my-opencode); `counting` keeps
//! `{id}.json`, counts its ids itself and takes no lock (as it reads
//! claude-code-controller). The first is the reference store in the claude-code layout,
//! whose setup leaves an empty `.lock` (its flock file), as Claude Code's list folders have.

use std::time::Duration;

use serde_json::Value;
use taskproof_profile::Profile;
use taskproof_race::check::AnomalyKind;
use taskproof_race::files::FileKind;
use taskproof_race::{Config, Mix, RaceReport, Workload, WorkloadReport};
use taskproof_targets::TargetSpec;

use crate::util::{Tool, repo, require, taskproof_with};

fn product(mode: &str) -> String {
    format!(
        "cmd:python3 {} {mode}",
        repo()
            .join("tests/fixtures/race/other_product.py")
            .display()
    )
}

fn config(writers: usize, ops: usize, seed: u64) -> Config {
    Config {
        timeout: Duration::from_secs(30),
        ..crate::race::config(TargetSpec::reference(), writers, ops, seed)
    }
}

fn mix(b: &str, own_tasks: bool) -> Mix {
    Mix {
        targets: vec![TargetSpec::reference(), b.parse().unwrap()],
        think: Duration::from_millis(1),
        own_tasks,
        teammates: 0,
    }
}

fn lost_witnesses(w: &WorkloadReport, target: &str) -> usize {
    w.witnesses
        .iter()
        .filter(|x| x.kind == AnomalyKind::Lost && x.target.as_deref() == Some(target))
        .count()
}

#[test]
#[cfg_attr(not(taskproof_has_python), ignore = "needs python3 on PATH")]
fn two_products_in_their_own_id_schemes_each_keep_their_own_tasks() {
    require(&[Tool::Python]);
    let b = product("tuuid");
    let report: RaceReport = taskproof_race::run_all(
        &config(2, 10, 1),
        &mix(&b, false),
        &[Workload::Metadata, Workload::Create],
        1,
        taskproof_race::DEFAULT_LIN_BUDGET,
        None,
        &|_, _| {},
    )
    .expect("the race runs");
    // Before, a mixed race of layouts claude-code and opaque was refused (skipped).
    assert!(report.own_tasks, "different layouts keep their own tasks");
    for w in &report.workloads {
        assert_eq!(w.skipped, None, "{}", w.workload);
        let [a_part, b_part] = &w.parts[..] else {
            panic!("two parts: {:?}", w.parts)
        };
        assert_eq!(
            (a_part.letter.as_str(), a_part.layout.as_str()),
            ("A", "claude-code")
        );
        assert_eq!(
            (b_part.letter.as_str(), b_part.layout.as_str()),
            ("B", "opaque")
        );
        assert_eq!(a_part.target, "reference");
        assert_eq!(b_part.target, b);
        // Each target changed and listed only its own tasks.
        assert_eq!(w.requests, a_part.requests + b_part.requests);
        let files = w.files.as_ref().expect("the shared folder's report");
        assert!(
            files.shown.is_empty(),
            "no listing shows the other's: {files:?}"
        );
        // Each listing hides every file of the other's: the reference reads only `{id}.json`,
        // the other only `T-*.json`.
        let hidden = |listing: &str, owner: &str| {
            files
                .hidden
                .iter()
                .find(|h| h.listing == listing && h.owner.as_deref() == Some(owner))
                .map_or(0, |h| h.files)
        };
        assert!(b_part.listed > 0 && a_part.listed > 0, "{}", w.workload);
        assert_eq!(hidden("reference", &b), b_part.listed, "{files:?}");
        assert_eq!(hidden(&b, "reference"), a_part.listed, "{files:?}");
        // Nobody replaced or removed the other's task files, so every loss is its own
        // target's, and the per-target counts are the witnesses of its own history.
        assert!(
            !files.effects.iter().any(|e| e.file == "task files"),
            "{:?}",
            files.effects
        );
        for c in &w.charges {
            assert_eq!(c.charged_to, c.acknowledged_by, "{c:?}");
        }
        let [a_loss, b_loss] = &w.targets[..] else {
            panic!("{:?}", w.targets)
        };
        assert_eq!(a_loss.lost, lost_witnesses(w, "reference"));
        assert_eq!(b_loss.lost, lost_witnesses(w, &b));
        assert_eq!((a_loss.lost_of_others, b_loss.lost_of_others), (0, 0));
        // `taskproof check` of the folder reads the reference's tasks, and says nothing of
        // files it does not take for tasks.
        let check = files.check.as_ref().expect("the folder was checked");
        assert_eq!(check.error, None);
        assert_eq!(check.layout.as_deref(), Some("claude-code"));
        assert_eq!(check.tasks, a_part.listed);
        if w.workload == "metadata" {
            // The reference's setup (one seed) left its empty `.lock`; the other's setup,
            // running alone, found it unparseable and deleted it.
            let lock = &files.special[0];
            assert_eq!(lock.file, ".lock");
            let at = |when: &str| lock.states.iter().find(|s| s.when == when).unwrap().kind;
            assert_eq!(at("after A's setup"), FileKind::Empty);
            assert_eq!(at("after B's setup"), FileKind::Missing);
            assert!(
                files
                    .effects
                    .iter()
                    .any(|e| e.by.as_deref() == Some(b.as_str())
                        && e.on == "reference"
                        && e.what == "deleted"
                        && e.file == ".lock"
                        && e.when == "during B's setup, alone"),
                "{:?}",
                files.effects
            );
        }
    }
}

#[test]
#[cfg_attr(not(taskproof_has_python), ignore = "needs python3 on PATH")]
fn a_task_file_another_product_wrote_over_is_that_products_loss() {
    require(&[Tool::Python]);
    let b = product("counting");
    let mix = mix(&b, true);
    let mut charged_to_b = 0;
    for seed in 0..10 {
        let root = tempfile::tempdir().unwrap();
        let run = taskproof_race::own::run_own(
            &config(2, 10, seed),
            &mix,
            Workload::Create,
            root.path(),
            None,
        )
        .expect("the race runs");
        let findings: Vec<_> = run
            .parts
            .iter()
            .map(|p| taskproof_race::judge(p, taskproof_race::DEFAULT_LIN_BUDGET))
            .collect();
        let report = WorkloadReport::of_own(&run, &findings, 0, seed, 2, 10, 20, Profile::Strict);
        let reference = &run.parts[0];
        let mut a_to_b = 0;
        for c in report
            .charges
            .iter()
            .filter(|c| c.acknowledged_by == "reference")
        {
            // Worked out from the disk, apart from the driver: the file of the lost create
            // holds the other product's task (its subjects carry `B: `) exactly when the
            // loss is charged to it.
            let op = &reference.history.ops[c.ops[0]];
            let id = op.task_id().expect("a lost create has its id");
            let text = std::fs::read_to_string(root.path().join(format!("race/{id}.json")))
                .unwrap_or_default();
            let subject = serde_json::from_str::<Value>(&text)
                .ok()
                .and_then(|v| v["subject"].as_str().map(str::to_string))
                .unwrap_or_default();
            if subject.starts_with("B: ") {
                assert_eq!(c.charged_to, b, "{c:?}");
                assert!(c.why.as_deref().unwrap().contains("B replaced"), "{c:?}");
                a_to_b += 1;
            } else {
                assert_eq!(c.charged_to, "reference", "{c:?} ({subject:?})");
            }
        }
        let b_loss = &report.targets[1];
        let b_own = report
            .charges
            .iter()
            .filter(|c| c.acknowledged_by == b && c.charged_to == b)
            .count();
        assert_eq!(b_loss.lost_of_others, a_to_b);
        assert_eq!(b_loss.lost, a_to_b + b_own);
        assert_eq!(b_loss.lost_own, b_own);
        if a_to_b > 0 {
            let files = report.files.as_ref().unwrap();
            assert!(
                files
                    .effects
                    .iter()
                    .any(|e| e.by.as_deref() == Some(b.as_str())
                        && e.on == "reference"
                        && e.what == "replaced"
                        && e.count >= a_to_b),
                "{:?}",
                files.effects
            );
            charged_to_b += a_to_b;
            break;
        }
    }
    assert!(
        charged_to_b > 0,
        "in 10 runs the counting product never wrote over a reference task"
    );
}

#[test]
#[cfg_attr(not(taskproof_has_python), ignore = "needs python3 on PATH")]
fn the_command_says_what_each_did_to_the_others_files() {
    require(&[Tool::Python]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let md = dir.path().join("r.md");
    let b = product("tuuid");
    let out = taskproof_with(&[
        "race",
        "--target",
        "reference",
        "--target",
        &b,
        "--writers",
        "2",
        "--ops",
        "10",
        "--workload",
        "metadata",
        "--no-fsync",
        "--settle",
        "0",
        "--seed",
        "1",
        "--report",
        &format!("json:{}", json.display()),
        "--report",
        &format!("md:{}", md.display()),
    ])
    .output()
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let md = std::fs::read_to_string(&md).unwrap();
    for line in [
        "| `reference` | claude-code | ",
        " | opaque | ",
        "- B deleted A's `.lock` during B's setup, alone:",
        "- A's listing hides B's 1 task file (race/T-",
        "- check of race/ (layout claude-code, 1 tasks): no findings",
    ] {
        assert!(md.contains(line), "{line:?} missing from:\n{md}");
    }
    assert!(md.contains(&format!("```text\n{stdout}```")), "{md}");
    for line in [
        &format!("A = writers 0-1: reference, B = writers 2-3: {b}"),
        "  B deleted A's `.lock` during B's setup, alone: A's setup left .lock empty;",
        "    A's listing hides B's 1 task file (race/T-",
        "    B's listing hides A's 1 task file (race/1.json)",
        "    check of race/ (layout claude-code, 1 tasks): no findings",
        "    .lock: missing before the run, empty after A's setup, missing after B's setup,",
    ] {
        assert!(stdout.contains(line), "{line:?} missing from:\n{stdout}");
    }
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(r["own_tasks"], true);
    let w = &r["workloads"][0];
    assert_eq!(w["parts"][1]["layout"], "opaque");
    assert_eq!(w["files"]["check"]["tasks"], 1);
    assert_eq!(w["files"]["special"][0]["states"][1]["kind"], "empty");
}

#[test]
fn own_tasks_is_for_a_mixed_race() {
    let out = taskproof_with(&["race", "--target", "naive", "--own-tasks", "--ops", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--own-tasks is for a mixed race"), "{err}");
}
