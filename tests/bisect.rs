//! `taskproof bisect` without Claude Code: targets whose behaviour changes at a known
//! version. Through the binary, a `cmd:` template whose script serves the strict store
//! (`taskproof serve`) from one version on and the naive one before, with a fake list of
//! published versions; through the library, the search over in-process targets (reference
//! or naive per version) judged by the same scenario runs `bisect` makes.

use std::cell::Cell;
use std::path::Path;

use taskproof::bisect::{
    self, Change, Found, Judged, Limits, ScenarioProbe, max_runs, render, repeated,
};
use taskproof::scenario::load_builtin;
use taskproof::target::TargetSpec;

use crate::util::{taskproof, tempdir, write};

/// `rt04-circular-dependency`: the strict store refuses the cycle, the naive one takes it.
const SCENARIO: &str = "rt04-circular-dependency";

/// A folder with `versions.json` (1.0.0 to 1.0.{n-1}) and `adapter.sh VERSION`, which serves
/// the strict store from 1.0.{change} on and the naive store before; a version in `broken`
/// exits at once (cannot be started). Every start is logged in `started`.
fn versioned(dir: &Path, n: usize, change: usize, broken: &[usize]) {
    let versions: Vec<String> = (0..n).map(|i| format!("\"1.0.{i}\"")).collect();
    write(dir, "versions.json", &format!("[{}]", versions.join(", ")));
    let broken: Vec<String> = broken.iter().map(|b| format!("1.0.{b}")).collect();
    let broken_case = if broken.is_empty() {
        String::new()
    } else {
        format!("  {}) echo broken >&2; exit 1 ;;\n", broken.join("|"))
    };
    let script = format!(
        "#!/bin/sh\necho \"$1\" >> '{log}'\npatch=${{1##*.}}\ncase \"$1\" in\n{broken_case}esac\n\
         if [ \"$patch\" -ge {change} ]; then exec '{bin}' serve --no-fsync; else exec '{bin}' serve --no-fsync --profile cc-2.1.17; fi\n",
        log = dir.join("started").display(),
        bin = crate::util::bin(),
    );
    write(dir, "adapter.sh", &script);
}

fn bisect_cmd(dir: &Path, range: &str, extra: &[&str]) -> std::process::Output {
    let target = format!(
        "cmd:sh {} {{version}}@{range}",
        dir.join("adapter.sh").display()
    );
    taskproof()
        .args(["bisect", "--target", &target, "--versions"])
        .arg(dir.join("versions.json"))
        .args(extra)
        .output()
        .expect("run taskproof bisect")
}

/// The version lines `[k] VERSION ...` of the output.
fn runs(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter(|l| l.trim_start().starts_with('['))
        .map(|l| l.split_whitespace().nth(1).unwrap_or("").to_string())
        .collect()
}

#[test]
fn names_the_versions_around_the_change_with_both_witnesses() {
    let dir = tempdir();
    versioned(dir.path(), 13, 9, &[]);
    let out = bisect_cmd(dir.path(), "1.0.0..1.0.12", &["--scenario", SCENARIO]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("The change: 1.0.8 -> 1.0.9"), "{stdout}");
    assert!(stdout.contains("last before: 1.0.8: fail"), "{stdout}");
    assert!(stdout.contains("first after: 1.0.9: pass"), "{stdout}");
    // The failing side's witness (expected and actual answer) and the passing side's answer
    // at the same step.
    assert!(
        stdout.contains("expected: {\"error\":\"cycle\"}"),
        "{stdout}"
    );
    assert!(
        stdout.contains("steps[3] answered {\"ok\":false,\"error\":{\"kind\":\"cycle\""),
        "{stdout}"
    );
    let run = runs(&stdout);
    assert!(run.len() <= max_runs(13), "{run:?}");
    assert_eq!(
        run[0], "1.0.12",
        "the last version decides the new behaviour first"
    );
    assert!(
        !run.contains(&"1.0.0".to_string()),
        "the first version is not needed: {run:?}"
    );
}

#[test]
fn a_version_that_cannot_start_is_skipped_and_named_not_guessed() {
    let dir = tempdir();
    // 1.0.6 is the first version tried after the last one; it cannot start.
    versioned(dir.path(), 13, 7, &[6]);
    let out = bisect_cmd(dir.path(), "1.0.0..1.0.12", &["--scenario", SCENARIO]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("1.0.6      skipped: cannot be started"),
        "{stdout}"
    );
    // The change is after 1.0.5 and at or before 1.0.7; 1.0.6 is named between them.
    assert!(stdout.contains("The change: 1.0.5 -> 1.0.7"), "{stdout}");
    assert!(
        stdout.contains("between them, 1 version(s) could not be judged"),
        "{stdout}"
    );
}

#[test]
fn ends_that_behave_alike_are_no_change() {
    let dir = tempdir();
    versioned(dir.path(), 6, 0, &[]);
    let out = bisect_cmd(dir.path(), "1.0.0..1.0.5", &["--scenario", SCENARIO]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("No change: 1.0.0 behaves as 1.0.5"),
        "{stdout}"
    );
}

#[test]
fn bad_input_is_refused_before_anything_starts() {
    let dir = tempdir();
    versioned(dir.path(), 6, 3, &[]);
    for (range, extra, says) in [
        (
            "1.0.3..1.0.1",
            vec!["--scenario", SCENARIO],
            "the range is reversed",
        ),
        (
            "1.0.0..1.0.9",
            vec!["--scenario", SCENARIO],
            "1.0.9 is not a published version; the newest published version is 1.0.5",
        ),
        (
            "1.0.0..1.0.5",
            vec!["--scenario", "no-such-scenario"],
            "--scenario no-such-scenario: no such scenario",
        ),
        (
            "1.0.0..1.0.5",
            vec!["--scenario", SCENARIO, "--step", "99"],
            "has no request at steps[99]",
        ),
        (
            "1.0.0..1.0.5",
            vec![],
            "give --scenario ID, or --workload W --anomaly KIND",
        ),
    ] {
        let out = bisect_cmd(dir.path(), range, &extra);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{range} {extra:?}: {stderr}");
        assert!(stderr.contains(says), "{range} {extra:?}: {stderr}");
    }
    // An empty range is refused as the argument is parsed.
    let out = bisect_cmd(dir.path(), "1.0.2..1.0.2", &["--scenario", SCENARIO]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("the range is empty"));
    assert!(
        !dir.path().join("started").exists(),
        "no version may start on bad input"
    );
}

fn probe(id: &str, step: Option<usize>, change: Change) -> ScenarioProbe {
    let s = load_builtin()
        .expect("the built-in suite loads")
        .into_iter()
        .find(|s| s.id == id)
        .expect("the scenario exists");
    ScenarioProbe::new(s, step, change, Limits::default()).expect("a valid probe")
}

fn versions(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("2.0.{i}")).collect()
}

fn patch(v: &str) -> usize {
    v.rsplit('.').next().unwrap().parse().unwrap()
}

#[test]
fn in_process_targets_find_every_change_point_within_the_bound() {
    let p = probe(SCENARIO, None, Change::Verdict);
    let n = 12;
    for change in 1..n {
        let mut judge = |v: &str| {
            p.judge(if patch(v) >= change {
                &TargetSpec::Reference
            } else {
                &TargetSpec::Naive
            })
        };
        let b = bisect::bisect(&versions(n), &mut judge, &mut |_| {});
        assert_eq!(
            b.found,
            Found::Change {
                before: change - 1,
                after: change
            },
            "change at {change}"
        );
        assert!(
            b.runs() <= max_runs(n),
            "change at {change}: {} runs",
            b.runs()
        );
    }
}

#[test]
fn a_version_whose_repeats_disagree_is_flaky_with_both_answers() {
    let p = probe(SCENARIO, None, Change::Verdict);
    let flips = Cell::new(0usize);
    // 2.0.0-2.0.4 naive, 2.0.6-2.0.8 reference; 2.0.5 answers as each in turn.
    let mut judge = |v: &str| {
        repeated(2, || {
            let t = match patch(v) {
                5 => {
                    flips.set(flips.get() + 1);
                    if flips.get().is_multiple_of(2) {
                        TargetSpec::Reference
                    } else {
                        TargetSpec::Naive
                    }
                }
                i if i >= 6 => TargetSpec::Reference,
                _ => TargetSpec::Naive,
            };
            p.judge(&t)
        })
    };
    let b = bisect::bisect(&versions(9), &mut judge, &mut |_| {});
    let flaky = b.trials.iter().find(|t| t.version == "2.0.5");
    match flaky.map(|t| &t.judged) {
        Some(Judged::Flaky(answers)) => {
            let keys: Vec<&str> = answers.iter().map(|s| s.key.as_str()).collect();
            assert_eq!(keys, ["fail", "pass"]);
        }
        other => panic!("2.0.5 should be flaky, was {other:?}"),
    }
    // The flaky version is on neither side: the change is between 2.0.4 and 2.0.6.
    assert_eq!(
        b.found,
        Found::Change {
            before: 4,
            after: 6
        }
    );
    let text = render(&b);
    assert!(text.contains("2.0.5: flaky: fail"), "{text}");
    assert!(text.contains("| pass"), "{text}");
}

#[test]
fn a_steps_answer_can_be_the_change() {
    // Step 3 of rt04 adds the edge that closes the cycle: the naive store acknowledges it,
    // the strict one answers `cycle`.
    let p = probe(SCENARIO, Some(3), Change::Answer);
    let mut judge = |v: &str| {
        p.judge(if patch(v) >= 2 {
            &TargetSpec::Reference
        } else {
            &TargetSpec::Naive
        })
    };
    let b = bisect::bisect(&versions(5), &mut judge, &mut |_| {});
    assert_eq!(
        b.found,
        Found::Change {
            before: 1,
            after: 2
        }
    );
    let new = b.trial(2).and_then(|t| t.judged.seen()).unwrap();
    assert!(new.key.contains("cycle"), "{}", new.key);
}

#[test]
fn an_end_that_cannot_be_run_gives_no_answer() {
    let p = probe(SCENARIO, None, Change::Verdict);
    let mut judge = |v: &str| {
        if patch(v) == 4 {
            Judged::Unusable("cannot be installed: no such tarball".into())
        } else {
            p.judge(&TargetSpec::Naive)
        }
    };
    let b = bisect::bisect(&versions(5), &mut judge, &mut |_| {});
    assert!(matches!(b.found, Found::Inconclusive(_)), "{:?}", b.found);
    assert_eq!(b.runs(), 1, "nothing else is run without the new behaviour");
}
