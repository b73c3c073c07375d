//! The fuzzers: every cargo-fuzz target replays its checked-in corpus and regression files
//! under plain `cargo test` (so CI needs no nightly and no libFuzzer), and `taskproof fuzz`
//! finds, writes and replays divergences.

use std::path::Path;

use taskproof_fuzz::targets;

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

/// `taskproof fuzz ARGS --seed 3 --max-findings 1 --out OUT`: a seeded run that stops at its
/// first finding (a run goes on past it unless told otherwise).
fn first_finding(out: &str, args: &[&str]) -> (i32, String) {
    let mut all = args.to_vec();
    all.extend(["--seed", "3", "--max-findings", "1", "--out", out]);
    fuzz(&all)
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
    let (code, text) = fuzz(&["--profile", "hand-written-s07", "--cases", "1"]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("no model"), "{text}");
}

/// Every mutant a single session can expose is found, and the scenario the fuzzer writes
/// fails against that mutant and passes against the reference. Seeds and case counts are
/// fixed so the test is deterministic, and each run stops at its first finding to stay
/// quick; `reports/fuzz-results.md` has the full table.
#[test]
fn every_sequential_mutant_is_found_and_its_scenario_replays() {
    let mutants: Vec<_> = taskproof_store::Mutant::ALL
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

fn check_mutant(m: taskproof_store::Mutant) {
    let dir = util::tempdir();
    let out = dir.path().to_str().unwrap();
    let target = format!("mutant:{m}");
    // The first finding is enough here. Sequences alone: what is asked is that a sequence
    // finds each mutant that one session can show (a concurrent case's requests may meet the
    // same bug in an order only a race gives; the concurrent tests are below).
    let args = ["--target", &target, "--cases", "2000", "--parallel", "0"];
    let (code, text) = first_finding(out, &args);
    assert_eq!(code, 1, "{m} not found: {text}");
    let written: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(written.len(), 1, "{m}: {written:?}");
    let file = written[0].to_str().unwrap();
    let replay = format!("replay: taskproof run {file} --target {target} --profile strict");
    assert!(text.contains(&replay), "{text}");
    // The first finding cites the rules its diverging step involves. That is the
    // mutant's own rule for most; a few first diverge where their bug meets a neighbouring
    // rule (corrupt-hidden hides a symbolic link too: S17), and shrinking keeps to the
    // bug it found rather than wandering to another, so only "some rule" is asserted here
    // (finding.rs pins the inference itself).
    let rules = text
        .lines()
        .find_map(|l| l.strip_prefix("rules: "))
        .unwrap_or_else(|| panic!("{m}: no rules line: {text}"));
    assert!(rules.starts_with('S'), "{m}: {text}");
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
    if m == taskproof_store::Mutant::NoMirror {
        // The same bug found again is recognised, and its file left alone.
        let before = std::fs::read(file).unwrap();
        let (code, text) = first_finding(out, &args);
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
    let (code, text) = first_finding(
        out,
        &["--target", &target, "--cases", "200", "--steps", "12"],
    );
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
    use taskproof_profile::Profile;
    use taskproof_scenario::{Action, Expect};

    let file = util::repo().join("scenarios/self-edge-is-a-cycle.json");
    let scenario = taskproof_scenario::load_file(&file).expect("the scenario loads");
    let mut oracle = taskproof_fuzz::oracle::FuzzOracle::new(Profile::Strict).expect("a model");
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
                &Expect::Error(taskproof_core::protocol::ErrorKind::Dangling)
            );
            own_id_checked = true;
        }
    }
    assert!(
        own_id_checked,
        "the scenario no longer has the create naming its own id"
    );
}

/// The `.json` files of a folder.
fn written(dir: &Path) -> Vec<std::path::PathBuf> {
    files(dir)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect()
}

/// Issue 11 item 11: `taskproof fuzz` stopped at its first divergence, so `--cases 300`
/// ran 1 to 3 cases against a real store. A run goes on, writes each distinct finding
/// once (deduplicated by fingerprint) and counts the cases that met one again.
#[test]
fn a_run_goes_on_after_a_divergence_and_writes_every_distinct_finding() {
    let dir = util::tempdir();
    let out = dir.path().to_str().unwrap();
    let (code, text) = fuzz(&[
        "--target",
        "mutant:memory-only",
        // Sequences only: every written finding is replayed once below, and a race's
        // scenario need not fail in one replay.
        "--parallel",
        "0",
        "--cases",
        "25",
        "--seed",
        "2",
        "--shrink-runs",
        "10",
        "--out",
        out,
    ]);
    assert_eq!(code, 1, "{text}");
    let files = written(dir.path());
    assert!(files.len() >= 2, "{files:?}\n{text}");
    assert!(
        text.contains(&format!("25 cases: {} distinct findings", files.len())),
        "{text}"
    );
    assert_eq!(text.matches("\nwrote ").count(), files.len(), "{text}");
    // Every written finding fails against the mutant when replayed.
    let (code, report) = run(&[out, "--target", "mutant:memory-only"]);
    assert_eq!(code, 1, "{report}");
    assert!(
        report.contains(&format!("0 passed, {} failed", files.len())),
        "{report}"
    );
}

/// Issue 11 item 11: a file of known findings (as toml-test's skip list) leaves them out;
/// a run that meets only known findings finds nothing.
#[test]
fn known_findings_are_left_out() {
    let first = util::tempdir();
    let args = |out: &str| {
        vec![
            "--target".to_string(),
            "mutant:memory-only".into(),
            // Sequences only: the test is of the known list, and needs the second run to
            // meet the same findings as the first (which of a race's answers a run meets
            // varies from run to run; memory-only's sessions each keep a store of their own).
            "--parallel".into(),
            "0".into(),
            "--cases".into(),
            "25".into(),
            "--seed".into(),
            "2".into(),
            "--shrink-runs".into(),
            "10".into(),
            "--out".into(),
            out.into(),
        ]
    };
    let a = args(first.path().to_str().unwrap());
    let (code, text) = fuzz(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code, 1, "{text}");
    let names: Vec<String> = written(first.path())
        .iter()
        .map(|p| p.file_name().unwrap().to_str().unwrap().to_string())
        .collect();
    let known = first.path().join("known.txt");
    let mut list = String::from("# memory-only keeps nothing across a restart\n\n");
    for (i, n) in names.iter().enumerate() {
        // Both forms: the bare fingerprint and the file name.
        let entry = if i % 2 == 0 {
            n.trim_start_matches("fuzz-").trim_end_matches(".json")
        } else {
            n.as_str()
        };
        list.push_str(&format!("{entry}   known: memory-only mutant\n"));
    }
    std::fs::write(&known, list).unwrap();
    let second = util::tempdir();
    let mut b = args(second.path().to_str().unwrap());
    b.extend(["--known".into(), known.to_str().unwrap().into()]);
    let (code, text) = fuzz(&b.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code, 0, "{text}");
    assert!(written(second.path()).is_empty(), "{text}");
    assert_eq!(
        text.lines()
            .filter(|l| l.starts_with("known finding "))
            .count(),
        names.len(),
        "every known finding is named once: {text}"
    );
    assert!(
        text.contains("known.txt:3: known: memory-only mutant"),
        "{text}"
    );
    assert!(
        text.contains("0 distinct findings (0 new, 0 already written)"),
        "{text}"
    );
}

#[test]
fn a_bad_known_findings_file_is_a_usage_error_naming_file_and_line() {
    let dir = util::tempdir();
    let known = dir.path().join("known.txt");
    std::fs::write(&known, "# fine\nc1cf32df208a  no-mirror\nS8-mirror  why\n").unwrap();
    let (code, text) = fuzz(&["--known", known.to_str().unwrap(), "--cases", "1"]);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains(&format!(
            "{}:3: `S8-mirror` is not a finding's fingerprint",
            known.display()
        )),
        "{text}"
    );
    let missing = dir.path().join("missing.txt");
    let (code, text) = fuzz(&["--known", missing.to_str().unwrap(), "--cases", "1"]);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains(&format!("{}: failed to read", missing.display())),
        "{text}"
    );
}

/// Issue 11 item 11: shrinking is bounded by flags, and the run says in its own words when
/// a bound stopped it, never with proptest's message ("Aborting shrinking after taking too
/// long … PROPTEST_MAX_SHRINK_TIME").
#[test]
fn shrinking_is_bounded_by_flags_and_reported_in_taskproofs_words() {
    for (flag, value, said) in [
        (
            "--shrink-runs",
            "2",
            "stopped at the --shrink-runs limit (2)",
        ),
        (
            "--shrink-time",
            "0",
            "stopped at the --shrink-time limit (0 s)",
        ),
    ] {
        let dir = util::tempdir();
        let out = dir.path().to_str().unwrap();
        let (code, text) = first_finding(
            out,
            &["--target", "mutant:no-mirror", "--cases", "50", flag, value],
        );
        assert_eq!(code, 1, "{text}");
        assert!(text.contains(said), "{flag}: {text}");
        assert!(text.contains("it may not be minimal"), "{text}");
        assert!(
            !text.contains("PROPTEST") && !text.contains("Aborting shrinking"),
            "{text}"
        );
    }
}

/// Issue 11 item 11: a written finding passed when replayed against Task Master. A finding
/// is replayed as a scenario before it is written; one that passes is reported as not
/// confirmed and not written. The target here is the no-mirror mutant inside the fuzzer's
/// own sandboxes and the reference everywhere else, so every fuzz case diverges and every
/// replay passes: a target that does not do the same thing twice.
#[test]
fn a_finding_that_passes_when_replayed_is_not_written() {
    let dir = util::tempdir();
    let out = dir.path().join("out");
    let bin = util::bin();
    let target = format!(
        "cmd:case \"$TASKPROOF_ROOT\" in */case-*/root) exec '{bin}' serve --no-fsync \
         --mutant no-mirror;; *) exec '{bin}' serve --no-fsync;; esac"
    );
    let (code, text) = fuzz(&[
        "--target",
        &target,
        "--cases",
        "12",
        "--seed",
        "3",
        "--steps",
        "12",
        "--shrink-runs",
        "5",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("not confirmed (flaky?)") && text.contains("passed when replayed"),
        "{text}"
    );
    assert!(written(&out).is_empty(), "{text}");
    assert!(text.contains("not confirmed when replayed"), "{text}");
}

/// Issue 11 item 11: Task Master answers with fields of its own (`tm_priority`), which the
/// fuzzer reported as an S2 divergence. A field SPEC §1 does not define is not judged
/// unless the oracle expects it, as a scenario's partial match ignores it.
#[test]
fn a_stores_own_extra_fields_are_no_finding() {
    let dir = util::tempdir();
    let target = format!(
        "cmd:'{}' serve --no-fsync | sed -u 's/\"subject\":/\"tm_priority\":\"medium\",\"subject\":/g'",
        util::bin()
    );
    let (code, text) = fuzz(&[
        "--target",
        &target,
        "--cases",
        "15",
        "--seed",
        "11",
        "--steps",
        "12",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("15 cases agreed with the strict model"),
        "{text}"
    );
}

/// Issue 11 item 13: a target that cannot start is exit 3 (TARGET) for fuzz as for every
/// command; it was 2, the code for bad arguments.
#[test]
fn a_target_that_cannot_start_is_exit_3() {
    let (code, text) = fuzz(&[
        "--target",
        "cmd:exec /nonexistent/taskproof-adapter",
        "--cases",
        "3",
    ]);
    assert_eq!(code, 3, "{text}");
    assert!(text.contains("failed to start the target"), "{text}");
}

/// Issue 11 item 20: the ClusterFuzzLite layout is shipped for the cargo-fuzz targets. Its
/// build was run by hand outside docker (docs/fuzzing.md says how); this pins the parts a
/// fuzzing service reads, so a rename does not silently break them.
#[test]
fn the_clusterfuzzlite_layout_builds_the_cargo_fuzz_targets() {
    use std::os::unix::fs::PermissionsExt;

    let dir = util::repo().join(".clusterfuzzlite");
    let read = |name: &str| {
        std::fs::read_to_string(dir.join(name))
            .unwrap_or_else(|e| panic!(".clusterfuzzlite/{name}: {e}"))
    };
    let project = read("project.yaml");
    assert!(
        project.lines().any(|l| l.trim() == "language: rust"),
        "{project}"
    );
    let docker = read("Dockerfile");
    assert!(
        docker
            .lines()
            .any(|l| l.trim() == "FROM gcr.io/oss-fuzz-base/base-builder-rust"),
        "{docker}"
    );
    assert!(
        docker.contains("COPY .clusterfuzzlite/build.sh $SRC/"),
        "{docker}"
    );
    let build = read("build.sh");
    assert!(build.contains("cargo fuzz build -O"), "{build}");
    assert!(
        build.contains("fuzz_targets/*.rs") && build.contains("\"$OUT/\""),
        "{build}"
    );
    let mode = std::fs::metadata(dir.join("build.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert!(mode & 0o111 != 0, "build.sh is not executable");
}

/// Issue 12: `fuzz` is a producer of the shared event stream, so its terminal lines, its
/// JSON report and its Markdown summary are views of the same run. Each finding the run
/// wrote is in all three, and the summary line is the same in the terminal and the
/// Markdown.
#[test]
fn the_terminal_json_and_markdown_reports_are_views_of_one_fuzz_run() {
    let dir = util::tempdir();
    let out = dir.path().join("found");
    let json_path = dir.path().join("r/fuzz.json");
    let md_path = dir.path().join("r/fuzz.md");
    let (code, text) = fuzz(&[
        "--target",
        "mutant:memory-only",
        "--cases",
        "25",
        "--seed",
        "2",
        "--shrink-runs",
        "10",
        "--color",
        "never",
        "--out",
        out.to_str().unwrap(),
        "--report",
        &format!("json:{}", json_path.display()),
        "--report",
        &format!("md:{}", md_path.display()),
    ]);
    assert_eq!(code, 1, "{text}");
    let files = written(&out);
    assert!(files.len() >= 2, "{files:?}\n{text}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    assert_eq!(report["format_version"], 2, "{report}");
    assert_eq!(report["command"], "fuzz", "{report}");
    assert_eq!(report["seed"], 2, "{report}");
    assert_eq!(report["cases"], 25, "{report}");
    let found = report["found"].as_array().unwrap();
    assert_eq!(found.len(), files.len(), "{report}");
    let md = std::fs::read_to_string(&md_path).unwrap();
    for f in found {
        let fp = f["fingerprint"].as_str().unwrap();
        let file = f["file"].as_str().unwrap();
        assert!(files.iter().any(|p| p.to_str() == Some(file)), "{file}");
        assert!(text.contains(&format!("wrote {file}")), "{text}");
        assert!(text.contains(&format!("fingerprint {fp})")), "{text}");
        assert!(md.contains(&format!("| `{fp}` |")), "{md}");
        assert_eq!(f["new"], true, "{f}");
    }
    let last = text.lines().last().unwrap();
    assert!(last.starts_with("25 cases: "), "{text}");
    assert!(md.contains(&format!("**{last}**")), "{md}\n{text}");
    // What was sent: the same counts in the terminal, the JSON and the Markdown.
    let c = &report["coverage"];
    let ops: u64 = c["ops"]
        .as_object()
        .unwrap()
        .values()
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert_eq!(c["sent"].as_u64(), Some(ops), "{c}");
    let answered: u64 = c["answers"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|k| k.as_object().unwrap().values())
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert_eq!(answered, ops, "{c}");
    let line = format!("sent {ops} requests for {} generated steps", c["generated"]);
    assert!(text.contains(&line), "{text}");
    assert!(md.contains(&line), "{md}");
    // The reference-like mutant offers every part.
    assert!(
        report["offered"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p == "claim"),
        "{report}"
    );
}

/// A JUnit report has nothing to say about a fuzz run: asking for one is a usage error,
/// before anything runs.
#[test]
fn a_junit_report_of_a_fuzz_run_is_a_usage_error() {
    let dir = util::tempdir();
    let junit = dir.path().join("j.xml");
    let (code, text) = fuzz(&[
        "--cases",
        "1",
        "--out",
        dir.path().to_str().unwrap(),
        "--report",
        &format!("junit:{}", junit.display()),
    ]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("json:PATH or md:PATH"), "{text}");
    assert!(!junit.exists());
}

#[test]
fn a_hand_written_files_finding_replays_against_the_written_expectations() {
    // The reference refuses what the naive model allows (a cycle, an edge to a missing
    // task), so fuzzing it against the hand-written set finds a divergence. Its replay must
    // hold the reference to that set's expectations, not to the real 2.1.17's recording
    // (which `--profile cc-2.1.17` means to `run`, and which knows no fuzz scenario).
    let dir = util::tempdir();
    let out = dir.path().to_str().unwrap();
    let (code, text) = first_finding(
        out,
        &[
            "--target",
            "reference",
            "--profile",
            "hand-written-files",
            "--cases",
            "500",
        ],
    );
    assert_eq!(code, 1, "no finding: {text}");
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("replay: taskproof run "))
        .unwrap_or_else(|| panic!("no replay line: {text}"));
    assert!(
        line.ends_with("--target reference --profile written:cc-2.1.17"),
        "{line}"
    );
    let file = line.split(' ').next().unwrap();
    let (code, report) = run(&[
        file,
        "--target",
        "reference",
        "--profile",
        "written:cc-2.1.17",
    ]);
    assert_eq!(code, 1, "the replay did not fail again:\n{report}");
    assert!(report.contains("1 failed"), "{report}");
}

/// An adapter for the reference store behind `serve` whose store, like Claude Code with a
/// finished list, removes a completed task's file about 0.5 s after it sees it: a
/// background job of the adapter's own, in its process group. No request is in flight
/// when it happens, so only time between requests shows it.
fn forgetful_target() -> String {
    format!(
        "cmd:(while sleep 0.1; do f=$(grep -l '\"completed\"' \"$TASKPROOF_ROOT\"/*/*.json 2>/dev/null); \
         if [ -n \"$f\" ]; then sleep 0.5; rm -f $f; fi; done) & exec '{}' serve --no-fsync",
        util::bin()
    )
}

/// The steps of a written finding.
fn finding_steps(dir: &Path) -> Vec<serde_json::Value> {
    let found = written(dir);
    assert_eq!(found.len(), 1, "{found:?}");
    let scenario: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&found[0]).unwrap()).unwrap();
    scenario["steps"].as_array().unwrap().clone()
}

/// With `--wait-max`, sequences carry `wait` steps; against a store that removes completed
/// tasks between requests, the fuzzer finds the loss under S14 and shrinks it, waits
/// included, to the few steps that show it, which replay as a scenario.
#[test]
fn generated_waits_find_a_task_removed_between_requests_and_shrink_with_it() {
    let dir = util::tempdir();
    let out = dir.path().join("found");
    let target = forgetful_target();
    let (code, text) = fuzz(&[
        "--target",
        &target,
        "--settle",
        "0",
        "--parallel",
        "0",
        "--wait-max",
        "1.5",
        "--cases",
        "60",
        "--steps",
        "12",
        "--seed",
        "4",
        "--max-findings",
        "1",
        "--shrink-runs",
        "100",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("between requests: waits of up to 1.5 s"),
        "{text}"
    );
    assert!(text.contains("rules: S14"), "{text}");
    let steps = finding_steps(&out);
    let waits: Vec<f64> = steps.iter().filter_map(|s| s["wait"].as_f64()).collect();
    // The loss needs time: a wait at least as long as the adapter's 0.5 s delay.
    assert_eq!(waits.len(), 1, "{steps:#?}");
    assert!((0.5..=1.5).contains(&waits[0]), "{steps:#?}");
    // Shrunk: fewer steps than the case had, down to a create, a completion, the wait and
    // what reads the task on a quiet machine. Under load a simpler sequence may miss the loss
    // in one of the two runs a waiting sequence needs, and keeps a step or two more.
    let shrunk = text
        .lines()
        .find_map(|l| l.strip_prefix("shrunk from "))
        .and_then(|l| {
            let mut w = l.split_whitespace();
            Some((
                w.next()?.parse::<usize>().ok()?,
                w.nth(1)?.parse::<usize>().ok()?,
            ))
        })
        .unwrap_or_else(|| panic!("no shrink line: {text}"));
    assert!(shrunk.1 < shrunk.0 || shrunk.0 <= 4, "{shrunk:?}\n{text}");
    assert!(steps.len() <= 8, "{steps:#?}");
}

/// The settle phase: each case leaves the store alone before its final listings, and
/// what vanishes meanwhile is a finding whose scenario shows the wait it needs.
#[test]
fn the_settle_phase_finds_what_vanishes_after_the_last_step() {
    let dir = util::tempdir();
    let out = dir.path().join("found");
    let target = forgetful_target();
    let (code, text) = fuzz(&[
        "--target",
        &target,
        "--settle",
        "1",
        "--cases",
        "30",
        "--steps",
        "8",
        "--seed",
        "1",
        "--max-findings",
        "1",
        "--shrink-runs",
        "0",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("each case then leaves the store alone for 1 s before its final listings"),
        "{text}"
    );
    let steps = finding_steps(&out);
    let settle = steps
        .iter()
        .position(|s| s["wait"] == 1.0)
        .unwrap_or_else(|| panic!("no settle wait: {steps:#?}"));
    assert!(
        steps[settle]["note"]
            .as_str()
            .unwrap()
            .starts_with("the settle phase"),
        "{steps:#?}"
    );
    assert!(
        steps[settle + 1..]
            .iter()
            .all(|s| s["send"]["op"] == "list"),
        "{steps:#?}"
    );
}

/// Without waits or a settle phase the same store agrees with the model: the loss is
/// only visible between requests.
#[test]
fn without_time_between_requests_the_forgetful_store_agrees() {
    let dir = util::tempdir();
    let target = forgetful_target();
    let (code, text) = fuzz(&[
        "--target",
        &target,
        "--cases",
        "25",
        "--steps",
        "8",
        "--seed",
        "1",
        "--out",
        dir.path().join("found").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{text}");
}

/// Session events against a store connection: clear and compact leave it alone, exit and
/// resume close it and open another, and the reference agrees with its model throughout.
#[test]
fn session_steps_against_the_reference_agree_with_the_model() {
    let dir = util::tempdir();
    let (code, text) = fuzz(&[
        "--session-steps",
        "--wait-max",
        "0.2",
        "--cases",
        "60",
        "--seed",
        "5",
        "--out",
        dir.path().join("found").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains(
            "between requests: waits of up to 0.2 s; clear, compact, and exit then resume"
        ),
        "{text}"
    );
}

/// Issue 47: a target that lacks parts is fuzzed with what it has, not left with nothing.
/// Behind tests/fixtures/mcp/few-parts.toml the strict reference store (`taskproof mcp`)
/// offers no claim, owner, metadata, activeForm or edges at creation, and its mapping carries
/// an update out in several tool calls. The run sends status changes of every kind, never a
/// part the target lacks, cuts the patches the mapping carries out apart into one request a
/// call, and so agrees with the strict model: without the cut, a refused later call leaves
/// the earlier one done, and the run reported that as the store's (S11) though the store is
/// the reference.
#[test]
fn a_target_that_lacks_parts_is_sent_what_it_has_and_what_its_mapping_does_apart_apart() {
    let dir = util::tempdir();
    let out = dir.path().join("found");
    let json_path = dir.path().join("fuzz.json");
    let target = format!("mcp:{} mcp", util::bin());
    let mapping = util::repo().join("tests/fixtures/mcp/few-parts.toml");
    let (code, text) = fuzz(&[
        "--target",
        &target,
        "--mapping",
        mapping.to_str().unwrap(),
        "--cases",
        "30",
        "--seed",
        "5",
        "--color",
        "never",
        "--out",
        out.to_str().unwrap(),
        "--report",
        &format!("json:{}", json_path.display()),
    ]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains(
            "the target does not declare claim, metadata, owner, active_form, edges_at_create"
        ),
        "{text}"
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    let c = &report["coverage"];
    for status in ["pending", "in_progress", "completed", "other"] {
        assert!(c["statuses"][status].as_u64() > Some(0), "{status}: {c}");
    }
    // Nothing the target lacks was sent, and nothing was generated only to be left out.
    assert!(c["ops"].get("claim").is_none(), "{c}");
    assert_eq!(c["dropped"], serde_json::json!({}), "{c}");
    let parts_left_out: Vec<&String> = c["left_out"]
        .as_object()
        .unwrap()
        .keys()
        .filter(|k| k.starts_with("part "))
        .collect();
    assert!(parts_left_out.is_empty(), "{c}");
    assert!(
        c["other"]["update cut into calls apart"].as_u64() > Some(0),
        "{c}"
    );
    assert!(text.contains("status changes completed"), "{text}");
}

/// Each case's fresh root and first session are made while the case before it runs; a run
/// that stops early (here at its first finding) ends the one made for a case that never ran:
/// every process the target started is gone when `taskproof fuzz` exits.
#[test]
fn a_run_that_stops_early_leaves_no_prestarted_target_behind() {
    let dir = util::tempdir();
    let pids = dir.path().join("pids");
    // Each start leaves a child that outlives its store's stdin (a helper of the target,
    // in its process group): only ending the target's group ends it.
    let target = format!(
        "cmd:sleep 300 & echo $! >> '{}'; exec '{}' serve --no-fsync --mutant no-mirror",
        pids.display(),
        util::bin()
    );
    let out = dir.path().join("found");
    let (code, text) = first_finding(
        out.to_str().unwrap(),
        &["--target", &target, "--cases", "200", "--steps", "12"],
    );
    assert_eq!(code, 1, "{text}");
    let started: Vec<i32> = std::fs::read_to_string(&pids)
        .unwrap()
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    // More starts than cases run: the next one was made ahead.
    assert!(started.len() >= 2, "{started:?}\n{text}");
    for pid in started {
        let alive = std::path::Path::new(&format!("/proc/{pid}")).exists()
            && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .unwrap_or_default()
                .contains(") Z ");
        assert!(
            !alive,
            "process {pid} of the target is still running\n{text}"
        );
    }
}

/// Issue 53: a store correct but for one lock passed `run`, `race` and sequential `fuzz`.
/// Behind `cmd:` (real processes, real locks), the fuzzer's concurrent cases find each of
/// the three with its defaults (the parallel part on), confirm the finding by replaying
/// its scenario, and say in how many replays it failed. A race is a probability: measured
/// here, the first confirmed finding came within 1 to 61 cases for seeds 2 to 4 (a run goes
/// on past a finding its replays do not confirm), and once, with the whole suite running beside
/// it, 200 cases met no delete race at all: 1,200 cases (a run stops at its first confirmed
/// finding) leave a wide margin; the written scenario is a
/// `concurrent` block judged `linearizable`, which fails against the store and passes
/// against the reference.
#[test]
fn a_store_missing_one_lock_is_found_by_concurrent_cases_behind_cmd() {
    let mutants = ["delete-without-lock", "claim-without-lock", "no-lock"];
    std::thread::scope(|scope| {
        for m in mutants {
            scope.spawn(move || {
                let dir = util::tempdir();
                let out = dir.path().join("found");
                let json = dir.path().join("fuzz.json");
                let target = format!("cmd:exec '{}' serve --no-fsync --mutant {m}", util::bin());
                let (code, text) = fuzz(&[
                    "--target",
                    &target,
                    "--seed",
                    "2",
                    "--cases",
                    "1200",
                    "--max-findings",
                    "1",
                    "--replays",
                    "10",
                    "--out",
                    out.to_str().unwrap(),
                    "--report",
                    &format!("json:{}", json.display()),
                ]);
                let report: serde_json::Value =
                    serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
                assert!(report["concurrent_cases"].as_u64().unwrap() > 0);
                // A history no order explains is never met on a store with its locks (the
                // reference agrees below and in `the_reference_agrees_in_concurrent_cases…`).
                // The delete's race is the narrowest: under a loaded machine its replays
                // may all miss it (measured: 3 to 17 of 20 on a quiet one, 0 of 10 once while
                // the whole test suite ran beside it), so for it a divergence met and not
                // confirmed counts as found; the claim's and the write's are confirmed.
                let met_unconfirmed = report["unconfirmed"].as_array().unwrap().iter().any(|u| {
                    u["summary"]
                        .as_str()
                        .unwrap()
                        .starts_with("no order of the")
                });
                if m == "delete-without-lock" && code == 0 && met_unconfirmed {
                    return;
                }
                assert_eq!(code, 1, "{m} not found: {text}");
                let found = &report["found"][0];
                assert!(
                    found["rules"].as_array().unwrap().contains(&"S19".into()),
                    "{m}: {found}"
                );
                assert_eq!(found["replays"], 10, "{m}: {found}");
                let failed = found["failed_replays"].as_u64().unwrap();
                assert!((1..=10).contains(&failed), "{m}: {found}");
                assert!(
                    text.contains(&format!("failed in {failed} of 10 replays")),
                    "{text}"
                );
                let file = found["file"].as_str().unwrap();
                let scenario: serde_json::Value =
                    serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
                let block = scenario["steps"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find_map(|s| s.get("concurrent"))
                    .unwrap_or_else(|| panic!("{m}: no concurrent block: {scenario:#}"));
                assert_eq!(block["verify"], "linearizable");
                assert!(block["lanes"].as_array().unwrap().len() >= 2);
                // The reference explains every answer of the same requests, whatever order
                // they meet in.
                for _ in 0..3 {
                    let (code, report) = run(&[file, "--target", "reference"]);
                    assert_eq!(code, 0, "{m}: fails against the reference:\n{report}");
                }
            });
        }
    });
}

/// The same three stores look like the reference to a run without the parallel part: what
/// finds them is the concurrency, not the sequences.
#[test]
fn without_the_parallel_part_a_missing_lock_looks_like_the_reference() {
    let dir = util::tempdir();
    let out = dir.path().to_str().unwrap();
    for m in ["delete-without-lock", "claim-without-lock"] {
        let target = format!("mutant:{m}");
        let (code, text) = fuzz(&[
            "--target",
            &target,
            "--parallel",
            "0",
            "--cases",
            "150",
            "--seed",
            "2",
            "--out",
            out,
        ]);
        assert_eq!(code, 0, "{m}: {text}");
        assert!(text.contains("150 cases agreed"), "{text}");
        assert!(!text.contains("concurrent:"), "{text}");
    }
}

/// The reference agrees with the strict model in concurrent cases through real processes,
/// and the run says what raced: requests in parallel parts, pairs in flight at once,
/// distinct interleavings.
#[test]
fn the_reference_agrees_in_concurrent_cases_behind_cmd() {
    let dir = util::tempdir();
    let json = dir.path().join("fuzz.json");
    let target = format!("cmd:exec '{}' serve --no-fsync", util::bin());
    let (code, text) = fuzz(&[
        "--target",
        &target,
        "--seed",
        "5",
        "--cases",
        "80",
        "--out",
        dir.path().join("found").to_str().unwrap(),
        "--report",
        &format!("json:{}", json.display()),
    ]);
    assert_eq!(code, 0, "{text}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(report["reused_root"].as_bool().unwrap(), "{report}");
    assert_eq!(report["unknown_cases"], 0);
    assert!(
        report["concurrent_cases"].as_u64().unwrap() > 20,
        "{report}"
    );
    let c = &report["coverage"];
    assert!(c["concurrent"].as_u64().unwrap() > 40, "{c}");
    assert!(c["overlapping"].as_u64().unwrap() > 0, "{c}");
    assert!(c["interleavings"].as_u64().unwrap() > 1, "{c}");
    assert!(text.contains("pairs of them in flight at once"), "{text}");
}
