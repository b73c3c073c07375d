//! The fuzzers: every cargo-fuzz target replays its checked-in corpus and regression files
//! under plain `cargo test` (so CI needs no nightly and no libFuzzer), and `taskproof fuzz`
//! finds, writes and replays divergences.

use std::path::Path;

use taskproof::fuzz::targets;

use crate::util;

/// The files of one folder, sorted, or none if it does not exist.
fn files(dir: &Path) -> Vec<std::path::PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<_> = rd
        .map(|e| e.expect("a readable folder entry").path())
        .filter(|p| p.is_file())
        .collect();
    out.sort();
    out
}

#[test]
fn every_fuzz_target_replays_its_corpus_and_regressions() {
    let fuzz = util::repo().join("fuzz");
    for target in targets::TARGETS {
        assert!(
            fuzz.join("fuzz_targets")
                .join(format!("{target}.rs"))
                .is_file(),
            "fuzz/fuzz_targets/{target}.rs is missing"
        );
        let corpus = files(&fuzz.join("corpus").join(target));
        assert!(!corpus.is_empty(), "fuzz/corpus/{target} has no seeds");
        let regressions = files(&fuzz.join("regressions").join(target));
        for file in corpus.iter().chain(&regressions) {
            let data = std::fs::read(file).expect("a readable corpus file");
            let r = std::panic::catch_unwind(|| targets::run(target, &data));
            assert!(r.is_ok(), "{target} fails on {}", file.display());
        }
    }
}

#[test]
fn every_fuzz_target_is_registered_in_the_fuzz_crate() {
    let manifest = std::fs::read_to_string(util::repo().join("fuzz/Cargo.toml")).unwrap();
    for target in targets::TARGETS {
        assert!(
            manifest.contains(&format!("name = \"{target}\"")),
            "fuzz/Cargo.toml has no [[bin]] {target}"
        );
    }
}

fn fuzz(args: &[&str]) -> (i32, String) {
    let out = util::taskproof()
        .arg("fuzz")
        .args(args)
        .output()
        .expect("taskproof runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

fn run(args: &[&str]) -> (i32, String) {
    let out = util::taskproof()
        .arg("run")
        .args(args)
        .output()
        .expect("taskproof runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn the_reference_agrees_with_the_strict_model() {
    let dir = util::tempdir();
    let out = dir.path().to_str().unwrap();
    let (code, text) = fuzz(&["--cases", "40", "--seed", "11", "--out", out]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("40 cases agreed with the strict model"),
        "{text}"
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn the_naive_store_agrees_with_the_cc_model() {
    let dir = util::tempdir();
    let out = dir.path().to_str().unwrap();
    let (code, text) = fuzz(&[
        "--target", "naive", "--cases", "30", "--seed", "5", "--out", out,
    ]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("agreed with the cc-2.1.17 model"), "{text}");
}

#[test]
fn a_profile_without_a_model_is_a_usage_error() {
    let (code, text) = fuzz(&["--profile", "s07", "--cases", "1"]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("no model"), "{text}");
}

/// Every mutant a single session can expose is found, and the scenario the fuzzer writes
/// fails against that mutant and passes against the reference. Seeds and case counts are
/// fixed so the test is deterministic and quick; `reports/fuzz-mutants.md` has the full
/// table.
#[test]
fn every_sequential_mutant_is_found_and_its_scenario_replays() {
    let mutants: Vec<_> = taskproof::store::Mutant::ALL
        .into_iter()
        .filter(|m| !m.needs_concurrency())
        .collect();
    // One thread per mutant: the runs are independent and mostly wait on the file system.
    std::thread::scope(|scope| {
        for m in mutants {
            scope.spawn(move || check_mutant(m));
        }
    });
}

fn check_mutant(m: taskproof::store::Mutant) {
    let dir = util::tempdir();
    let out = dir.path().to_str().unwrap();
    let target = format!("mutant:{m}");
    let args = [
        "--target", &target, "--cases", "2000", "--seed", "3", "--out", out,
    ];
    let (code, text) = fuzz(&args);
    assert_eq!(code, 1, "{m} not found: {text}");
    let written: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(written.len(), 1, "{m}: {written:?}");
    let file = written[0].to_str().unwrap();
    let replay = format!("replay: taskproof run {file} --target {target} --profile strict");
    assert!(text.contains(&replay), "{text}");
    assert!(
        text.contains(&format!("rules: {}", m.rule())),
        "{m}: {text}"
    );
    let (code, report) = run(&[file, "--target", &target]);
    assert_eq!(
        code, 1,
        "{m}: the finding passes against the mutant:\n{report}"
    );
    let (code, report) = run(&[file, "--target", "reference"]);
    assert_eq!(
        code, 0,
        "{m}: the finding fails against the reference:\n{report}"
    );
    if m == taskproof::store::Mutant::NoMirror {
        // The same bug found again is recognised, and its file left alone.
        let before = std::fs::read(file).unwrap();
        let (code, text) = fuzz(&args);
        assert_eq!(code, 1);
        assert!(text.contains("known finding"), "{text}");
        assert_eq!(std::fs::read(file).unwrap(), before);
    }
}

#[test]
fn a_cmd_target_is_fuzzed_through_real_processes() {
    let dir = util::tempdir();
    let out = dir.path().to_str().unwrap();
    let target = format!(
        "cmd:exec '{}' serve --no-fsync --mutant no-mirror",
        util::bin()
    );
    let (code, text) = fuzz(&[
        "--target", &target, "--cases", "200", "--seed", "3", "--steps", "12", "--out", out,
    ]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("rules: S8"), "{text}");
}

/// Issue 11 item 7: `self-edge-is-a-cycle` accepted `cycle` or `dangling` under `strict` for
/// a create naming its own future id, while the fuzzer's model demands `dangling`: a store
/// answering `cycle` passed the suite and diverged under `taskproof fuzz`. One rule, one
/// answer: every strict expectation of the scenario is a single outcome, and the fuzz
/// oracle's answer to each request satisfies it.
#[test]
fn the_suite_and_the_fuzz_oracle_give_one_answer_for_a_create_naming_its_own_id() {
    use taskproof::profile::Profile;
    use taskproof::scenario::{Action, Expect};

    let file = util::repo().join("scenarios/self-edge-is-a-cycle.json");
    let scenario = taskproof::scenario::load_file(&file).expect("the scenario loads");
    let mut oracle = taskproof::fuzz::oracle::Oracle::new(Profile::Strict).expect("a model");
    let mut own_id_checked = false;
    for step in scenario.steps_for(Profile::Strict) {
        let Action::Send {
            request, expect, ..
        } = &step.action
        else {
            continue;
        };
        let expect = expect.get(Profile::Strict).expect("a strict expectation");
        assert!(
            !matches!(expect, Expect::Any(_)),
            "steps[{}] accepts more than one answer under strict: {expect:?}",
            step.index
        );
        let answer = oracle.handle_value(request).to_json();
        expect.judge(&answer).unwrap_or_else(|e| {
            panic!(
                "steps[{}]: the fuzz oracle answers {answer}, the scenario: {e}",
                step.index
            )
        });
        if request["op"] == "create" && request["task"]["blockedBy"] == serde_json::json!(["3"]) {
            assert_eq!(
                expect,
                &Expect::Error(taskproof::protocol::ErrorKind::Dangling)
            );
            own_id_checked = true;
        }
    }
    assert!(
        own_id_checked,
        "the scenario no longer has the create naming its own id"
    );
}
