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
use taskproof_scenario::load_builtin;
use taskproof_targets::TargetSpec;

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
            p.judge(&if patch(v) >= change {
                TargetSpec::reference()
            } else {
                TargetSpec::naive()
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
                        TargetSpec::reference()
                    } else {
                        TargetSpec::naive()
                    }
                }
                i if i >= 6 => TargetSpec::reference(),
                _ => TargetSpec::naive(),
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
        p.judge(&if patch(v) >= 2 {
            TargetSpec::reference()
        } else {
            TargetSpec::naive()
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
            p.judge(&TargetSpec::naive())
        }
    };
    let b = bisect::bisect(&versions(5), &mut judge, &mut |_| {});
    assert!(matches!(b.found, Found::Inconclusive(_)), "{:?}", b.found);
    assert_eq!(b.runs(), 1, "nothing else is run without the new behaviour");
}

mod timeline {
    use super::*;
    use taskproof::timeline::{Cache, Row, RowProbe, Timeline, build_row, page};

    fn row() -> Row {
        Row {
            id: "cycles",
            title: "cycles refused",
            probe: RowProbe::Scenario(SCENARIO.into()),
            reading: "fail: a cycle is accepted; pass: refused",
            config: taskproof_claude_code::Config::TeamsOff,
        }
    }

    /// Reference (refuses the cycle) from 2.0.8 to 2.0.20, naive elsewhere: two changes.
    fn judge_at(p: &ScenarioProbe, v: &str) -> Judged {
        let i = patch(v);
        p.judge(&if (8..=20).contains(&i) {
            TargetSpec::reference()
        } else {
            TargetSpec::naive()
        })
    }

    #[test]
    fn every_change_between_samples_is_bisected_and_cached() {
        let p = probe(SCENARIO, None, Change::Verdict);
        let dir = tempdir();
        let file = dir.path().join("timeline.json");
        let vs = versions(30);
        let mut cache = Cache::load(&file).unwrap();
        let mut ran = Vec::new();
        let built = build_row(
            &row(),
            &vs,
            3,
            &mut cache,
            &mut |v| {
                ran.push(v.to_string());
                Some(judge_at(&p, v))
            },
            &mut |_| {},
        );
        let changes: Vec<(usize, usize)> =
            built.changes.iter().map(|c| (c.before, c.after)).collect();
        assert_eq!(changes, [(7, 8), (20, 21)]);
        assert_eq!(built.runs, ran.len());
        assert!(ran.len() < 15, "bisecting, not running all 30: {ran:?}");
        assert_eq!(built.spans.len(), 3);
        // A rerun from the saved cache runs nothing and finds the same.
        let mut again = Cache::load(&file).unwrap();
        let rebuilt = build_row(&row(), &vs, 3, &mut again, &mut |_| None, &mut |_| {});
        assert_eq!(rebuilt.runs, 0);
        assert_eq!(rebuilt.changes, built.changes);
        let t = Timeline {
            range: "x@2.0.0..2.0.29".into(),
            versions: vs.clone(),
            rows: vec![rebuilt],
            samples: 3,
            vouches: vec![
                taskproof::timeline::Vouch {
                    anchor: "cycles-2-0-21".into(),
                    claim: "c-cycles".into(),
                    status: taskproof::claims::Status::Unconfirmed,
                    why: Some("its reproduction saw cycles on 2.0.21".into()),
                },
                taskproof::timeline::Vouch {
                    anchor: "cycles".into(),
                    claim: "c-row".into(),
                    status: taskproof::claims::Status::Withdrawn,
                    why: Some("the row was measured on the wrong list".into()),
                },
            ],
        };
        let html = page::html(&t);
        assert!(html.contains("href=\"#cycles-2-0-8\""), "{html}");
        assert!(html.contains("id=\"cycles-2-0-21\""), "{html}");
        let md = page::markdown(&t);
        assert!(md.contains("[2.0.7 → 2.0.8](#cycles-2-0-8)"), "{md}");
        assert!(md.contains("expected: {\"error\":\"cycle\"}"), "{md}");
        // The register's claim on the second change point: marked where the change is
        // listed and said in its section, in both pages; the first has none.
        assert!(md.contains("(#cycles-2-0-21) (unconfirmed)"), "{md}");
        assert!(!md.contains("(#cycles-2-0-8) (unconfirmed)"), "{md}");
        assert!(
            md.contains("The register: **unconfirmed** by its reproduction (repro/claims.toml, `c-cycles`): its reproduction saw cycles on 2.0.21."),
            "{md}"
        );
        assert!(
            html.contains("The register: <strong>unconfirmed</strong> by its reproduction (repro/claims.toml, <code>c-cycles</code>)"),
            "{html}"
        );
        // In the HTML's change list and on the bar too, for that change point only.
        assert!(
            html.contains("<a href=\"#cycles-2-0-21\">2.0.20 → 2.0.21</a> <span class=\"doubted\">(unconfirmed)</span>"),
            "{html}"
        );
        assert!(
            html.contains("<a href=\"#cycles-2-0-8\">2.0.7 → 2.0.8</a>, "),
            "{html}"
        );
        let mark = |a: &str| {
            html.split("<a class=\"mark")
                .skip(1)
                .map(|m| &m[..m.find("</a>").unwrap()])
                .find(|m| m.contains(&format!("href=\"#{a}\"")))
                .unwrap_or_else(|| panic!("no mark for {a}: {html}"))
                .to_string()
        };
        assert!(mark("cycles-2-0-21").contains("doubted"), "{html}");
        assert!(!mark("cycles-2-0-8").contains("doubted"), "{html}");
        // A claim on the whole row: in its section of the Markdown and in its label in the
        // HTML.
        assert!(
            md.contains("\nThe register: **withdrawn** by its reproduction (repro/claims.toml, `c-row`): the row was measured on the wrong list.\n"),
            "{md}"
        );
        assert!(
            html.contains("<small class=\"register doubted\">The register: <strong>withdrawn</strong> by its reproduction (repro/claims.toml, <code>c-row</code>): the row was measured on the wrong list.</small>"),
            "{html}"
        );
    }

    /// A claim of the register whose `timeline` anchor names no row and no change point of
    /// the timeline is said nowhere on its pages: `taskproof timeline` warns, naming the
    /// claim and the anchor. A change point of a row left out by `--row` is not warned of.
    #[test]
    fn a_register_claim_anchored_to_nothing_of_the_timeline_is_warned_of() {
        let dir = tempdir();
        let repo = dir.path();
        write(repo, "versions.json", r#"["2.1.17", "2.1.18", "2.1.19"]"#);
        write(&repo.join("repro"), "x.py", "");
        let claim = |id: &str, anchor: &str| {
            format!(
                "[[claim]]\nid = \"{id}\"\nproduct = \"claude-code\"\nconfiguration = \"teams-off\"\nsays = \"s\"\n\
                 asks = \"a\"\nrepro = \"repro/x.py\"\nstatus = \"confirmed\"\n\
                 timeline = [\"{anchor}\"]\n\n[claim.expect]\n\"2.1.17\" = true\n\n"
            )
        };
        let register = [
            claim("on-the-row", "delete"),
            claim("on-another-row", "torn-writes"),
            claim("no-such-change", "delete-2-1-18"),
            claim("no-such-row", "deleted-2-1-18"),
            claim("row-not-built", "torn-writes-2-1-113"),
        ]
        .concat();
        write(&repo.join("repro"), "claims.toml", &register);
        let out = taskproof()
            .args(["timeline", "--no-run", "--row", "delete"])
            .args(["--target", "claude-code@2.1.17..2.1.19", "--versions"])
            .arg(repo.join("versions.json"))
            .arg("--repo")
            .arg(repo)
            .arg("--cache")
            .arg(repo.join("timeline.json"))
            .arg("--out")
            .arg(repo.join("out"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}{err}",
            String::from_utf8_lossy(&out.stdout)
        );
        for (claim, anchor) in [
            ("no-such-change", "delete-2-1-18"),
            ("no-such-row", "deleted-2-1-18"),
        ] {
            assert!(
                err.contains(&format!(
                    "claim {claim}: its timeline anchor {anchor} matches no row and no change point"
                )),
                "{err}"
            );
        }
        for quiet in ["on-the-row", "on-another-row", "row-not-built"] {
            assert!(!err.contains(&format!("claim {quiet}:")), "{err}");
        }
    }

    /// A background-task report of a version is a point of a background row, judged by the
    /// row's rule alone (a failure of another rule in the same scenario is not a fail), with
    /// the rule's failures as the witness; a store report with a scenario of the same id is
    /// not a point of it.
    #[test]
    fn background_suite_reports_are_points_of_background_rows_only() {
        let dir = tempdir();
        let id_form = serde_json::json!({
            "rules": ["B6"],
            "reason": "the id \"b344534\" is not a type letter and eight of [0-9a-z]",
        });
        let never = serde_json::json!({
            "rules": ["B2"],
            "reason": "task t was notified 0 time(s), not once",
        });
        let at = |v: &str, file: &str, name: &str, failures: Vec<&serde_json::Value>| {
            let d = dir.path().join("reports/claude-code").join(v);
            std::fs::create_dir_all(&d).unwrap();
            let outcome = if failures.is_empty() { "pass" } else { "fail" };
            let report = serde_json::json!({
                "format_version": 1,
                "profile": "strict",
                "target": {"spec": format!("claude-code@{v}"), "name": name},
                "scenarios": [{"id": "completion", "outcome": outcome, "failures": failures}],
            });
            std::fs::write(d.join(file), report.to_string()).unwrap();
        };
        let bg = "background-task target";
        at(
            "2.1.40",
            "background-suite.json",
            bg,
            vec![&id_form, &never],
        );
        // Fails too, but only the id form: B2 held.
        at("2.1.41", "background-suite.json", bg, vec![&id_form]);
        at("2.1.112", "background-suite.json", bg, vec![]);
        // A store run whose scenario happens to share the id.
        at("2.1.42", "run.json", "claude-code", vec![&never]);
        let rows = vec![
            Row {
                id: "bg",
                title: "notified",
                probe: RowProbe::Background("completion".into(), "B2"),
                reading: "",
                config: taskproof_claude_code::Config::TeamsOff,
            },
            Row {
                id: "store",
                title: "store",
                probe: RowProbe::Scenario("completion".into()),
                reading: "",
                config: taskproof_claude_code::Config::TeamsOff,
            },
        ];
        let mut cache = Cache::default();
        taskproof::timeline::seeds::add_known(dir.path(), &rows, &mut cache);
        let points = &cache.points["background:completion:B2"];
        assert_eq!(
            points.keys().collect::<Vec<_>>(),
            ["2.1.112", "2.1.40", "2.1.41"]
        );
        let fail = points["2.1.40"].judged.seen().unwrap();
        assert_eq!(fail.key, "fail");
        assert!(fail.witness.contains("notified 0 time(s)"), "{fail:?}");
        assert!(!fail.witness.contains("type letter"), "only B2's: {fail:?}");
        assert_eq!(
            points["2.1.40"].source,
            "reports/claude-code/2.1.40/background-suite.json"
        );
        assert_eq!(points["2.1.41"].judged.seen().unwrap().key, "pass");
        assert_eq!(points["2.1.112"].judged.seen().unwrap().key, "pass");
        let store = &cache.points["scenario:completion"];
        assert_eq!(store.keys().collect::<Vec<_>>(), ["2.1.42"]);
    }

    #[test]
    fn a_flip_flop_between_two_agreeing_samples_is_missed_as_documented() {
        // Reference only at 2.0.9-2.0.11; with no samples the ends (both naive) agree.
        let p = probe(SCENARIO, None, Change::Verdict);
        let mut cache = Cache::default();
        let judge = |v: &str| {
            Some(p.judge(&if (9..=11).contains(&patch(v)) {
                TargetSpec::reference()
            } else {
                TargetSpec::naive()
            }))
        };
        let vs = versions(30);
        let mut j = judge;
        let missed = build_row(&row(), &vs, 0, &mut cache, &mut j, &mut |_| {});
        assert!(missed.changes.is_empty());
        assert_eq!(missed.runs, 2);
        // A sample inside the window (2 samples: 2.0.9 and 2.0.19) catches it, and both of
        // its changes are named.
        let mut cache = Cache::default();
        let caught = build_row(&row(), &vs, 2, &mut cache, &mut j, &mut |_| {});
        let changes: Vec<(usize, usize)> =
            caught.changes.iter().map(|c| (c.before, c.after)).collect();
        assert_eq!(changes, [(8, 9), (11, 12)]);
    }
}

/// Workflow files: YAML parsed by saphyr (YAML 1.2: `on` is a key, not a boolean), turned
/// into JSON for the checks.
mod workflows {
    use saphyr::{LoadableYamlNode, Scalar, Yaml};
    use serde_json::{Value, json};

    use crate::util::{repo, taskproof, tempdir};

    fn to_json(y: &Yaml) -> Value {
        match y {
            Yaml::Value(Scalar::Null) => Value::Null,
            Yaml::Value(Scalar::Boolean(b)) => json!(b),
            Yaml::Value(Scalar::Integer(i)) => json!(i),
            Yaml::Value(Scalar::FloatingPoint(f)) => json!(f.into_inner()),
            Yaml::Value(Scalar::String(s)) => json!(s),
            Yaml::Representation(s, ..) => json!(s),
            Yaml::Sequence(v) => Value::Array(v.iter().map(to_json).collect()),
            Yaml::Mapping(m) => Value::Object(
                m.iter()
                    .map(|(k, v)| {
                        let key = match to_json(k) {
                            Value::String(s) => s,
                            other => other.to_string(),
                        };
                        (key, to_json(v))
                    })
                    .collect(),
            ),
            Yaml::Tagged(_, inner) => to_json(inner),
            Yaml::Alias(_) | Yaml::BadValue => panic!("unexpected YAML node {y:?}"),
        }
    }

    pub fn load(name: &str) -> Value {
        let path = repo().join(".github/workflows").join(name);
        let text = std::fs::read_to_string(&path).expect("the workflow file exists");
        let docs = Yaml::load_from_str(&text)
            .unwrap_or_else(|e| panic!("{}: not YAML: {e}", path.display()));
        assert_eq!(docs.len(), 1, "one document");
        to_json(&docs[0])
    }

    /// Every `run:` script of a job, joined.
    pub fn scripts(job: &Value) -> String {
        job["steps"]
            .as_array()
            .expect("steps")
            .iter()
            .filter_map(|s| s["run"].as_str())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The steps of a job that use `action` (`actions/upload-artifact`).
    pub fn uses<'a>(job: &'a Value, action: &str) -> Vec<&'a Value> {
        job["steps"]
            .as_array()
            .expect("steps")
            .iter()
            .filter(|s| s["uses"].as_str().is_some_and(|u| u.starts_with(action)))
            .collect()
    }

    #[test]
    fn the_conformance_workflow_shards_the_suite_and_merges_the_shards() {
        let w = load("conformance-matrix.yml");
        assert!(w["on"].get("workflow_dispatch").is_some(), "{}", w["on"]);
        let jobs = &w["jobs"];
        let shard = &jobs["shard"];
        let shards: Vec<i64> = shard["strategy"]["matrix"]["shard"]
            .as_array()
            .expect("a shard list")
            .iter()
            .map(|v| v.as_i64().expect("shard numbers"))
            .collect();
        let n = shards.len() as i64;
        assert!(n >= 2);
        assert_eq!(
            shards,
            (1..=n).collect::<Vec<_>>(),
            "shards 1..N, each once"
        );
        assert!(
            shard["strategy"]["matrix"]["version"]
                .as_str()
                .is_some_and(|v| v.contains("fromJSON(needs.plan.outputs.versions)")),
            "versions come from the plan job"
        );
        let run = scripts(shard);
        assert!(
            run.contains(&format!("--partition ${{{{ matrix.shard }}}}/{n}")),
            "every shard runs its part of N: {run}"
        );
        assert!(run.contains("--report \"json:shard/run.json\""), "{run}");
        let upload = uses(shard, "actions/upload-artifact");
        assert_eq!(upload.len(), 1);
        let name = upload[0]["with"]["name"].as_str().unwrap();
        assert!(name.contains("${{ matrix.version }}") && name.contains("${{ matrix.shard }}"));
        assert_eq!(upload[0]["with"]["path"], "shard/run.json");
        assert_eq!(
            upload[0]["if"], "always()",
            "a shard that failed still uploads"
        );

        let merge = &jobs["merge"];
        assert!(merge["needs"].as_array().unwrap().contains(&json!("shard")));
        assert_eq!(merge["if"], "always()");
        let downloads = uses(merge, "actions/download-artifact");
        assert!(
            downloads
                .iter()
                .any(|d| d["with"]["pattern"] == "run-*" && name.starts_with("run-")),
            "the merge downloads every shard's artefact"
        );
        let script = scripts(merge);
        assert!(script.contains("taskproof maint matrix $runs"), "{script}");
        assert!(
            script.contains("timeline --no-run --reports shards"),
            "{script}"
        );
        assert!(!uses(merge, "actions/upload-artifact").is_empty());
    }

    /// Shards of the reference and naive runs (`--partition 1/3..3/3`), merged by `matrix`,
    /// give the matrix of the unsharded runs.
    #[test]
    fn merged_shards_give_the_matrix_of_one_unsharded_run() {
        let dir = tempdir();
        let d = dir.path();
        let run = |target: &str, partition: Option<&str>, file: &str| {
            let mut c = taskproof();
            // A dozen scenarios, concurrent ones among them, keep it quick.
            c.args(["run", "--target", target, "--report"])
                .arg(format!("json:{}", d.join(file).display()))
                .args([
                    "--filter", "rt0*", "--filter", "*-ids*", "--filter", "edges-*",
                ]);
            if let Some(p) = partition {
                c.args(["--partition", p]);
            }
            let out = c.output().expect("run taskproof run");
            assert!(
                matches!(out.status.code(), Some(0 | 1)),
                "{target} {partition:?}"
            );
        };
        let mut sharded: Vec<String> = Vec::new();
        for t in ["reference", "naive"] {
            run(t, None, &format!("{t}.json"));
            for k in 1..=3 {
                let f = format!("{t}-{k}.json");
                run(t, Some(&format!("{k}/3")), &f);
                sharded.push(f);
            }
        }
        // Shards in any order: naive's first shard before the reference's last.
        sharded.swap(2, 3);
        let matrix = |files: &[String], out: &str| -> String {
            let mut c = taskproof();
            c.current_dir(d).arg("matrix");
            for f in files {
                c.args(["--run", f]);
            }
            let o = c
                .args(["--out", out])
                .output()
                .expect("run taskproof matrix");
            assert_eq!(
                o.status.code(),
                Some(0),
                "{}",
                String::from_utf8_lossy(&o.stderr)
            );
            let md = std::fs::read_to_string(d.join(out).join("matrix.md")).unwrap();
            // The note names the files the page was built from; the rest is the matrix.
            md.lines()
                .map(|l| l.split(" Built by taskproof").next().unwrap_or(l))
                .collect::<Vec<_>>()
                .join("\n")
        };
        let whole = matrix(&["reference.json".into(), "naive.json".into()], "whole");
        let merged = matrix(&sharded, "merged");
        assert!(whole.contains("against 2 targets"), "{whole}");
        assert_eq!(merged, whole);
    }
}

mod hold {
    use crate::util::{repo, taskproof, tempdir};

    fn hold(target: &str, profile: &str, out: &std::path::Path) -> std::process::Output {
        let s = repo().join("scenarios");
        taskproof()
            .args(["hold", "--target", target, "--profile", profile, "--out"])
            .arg(out)
            .arg(s.join("rt04-circular-dependency.json"))
            .arg(s.join("rt01-basic-creation.json"))
            .output()
            .expect("run taskproof hold")
    }

    #[test]
    fn a_target_that_behaves_as_recorded_holds() {
        let dir = tempdir();
        let out = dir.path().join("seen.json");
        let o = hold("naive", "hand-written-files", &out);
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(0), "{stdout}");
        assert!(stdout.contains("no change"), "{stdout}");
        // What it saw is written as a profile of its own.
        let seen = std::fs::read_to_string(&out).unwrap();
        assert!(
            seen.contains("\"held_to\": \"hand-written-files\""),
            "{seen}"
        );
    }

    #[test]
    fn a_changed_behaviour_fails_with_the_diff_per_rule() {
        let dir = tempdir();
        let o = hold(
            "reference",
            "hand-written-files",
            &dir.path().join("seen.json"),
        );
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(1), "{stdout}");
        assert!(stdout.contains("S7: rt04-circular-dependency"), "{stdout}");
        assert!(
            stdout.contains("steps[3]: hand-written-files answers {\"ok\":true} where strict expects {\"error\":\"cycle\"}"),
            "{stdout}"
        );
    }

    #[test]
    fn an_unknown_profile_is_a_usage_error_before_anything_runs() {
        let dir = tempdir();
        let out = dir.path().join("seen.json");
        let o = hold("naive", "no-such-profile", &out);
        assert_eq!(o.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&o.stderr).contains("--profile no-such-profile"));
        assert!(!out.exists());
    }

    #[test]
    fn the_release_watch_workflow_holds_latest_on_a_schedule() {
        let w = super::workflows::load("release-watch.yml");
        assert!(w["on"]["schedule"][0]["cron"].is_string(), "{}", w["on"]);
        let job = &w["jobs"]["hold"];
        let script = super::workflows::scripts(job);
        assert!(
            script.contains("hold --target claude-code@latest")
                && script.contains("--profile claude-code-2.1.330"),
            "{script}"
        );
        // The profile it names is one taskproof has built in.
        let profiles = taskproof().args(["profile", "list"]).output().unwrap();
        assert!(String::from_utf8_lossy(&profiles.stdout).contains("claude-code-2.1.330"));
        let upload = super::workflows::uses(job, "actions/upload-artifact");
        assert_eq!(upload.len(), 1);
        assert_eq!(
            upload[0]["if"], "always()",
            "the new recording is kept when it fails"
        );
    }
}

/// A race's anomaly as the change: the mutant that never mirrors an edge leaves half edges
/// in every `edges` race; the reference never does.
#[test]
fn a_race_anomaly_ending_is_found() {
    use taskproof::bisect::RaceProbe;
    use taskproof_race::{AnomalyKind, Workload};
    use taskproof_store::Mutant;
    let probe = RaceProbe {
        workload: Workload::Edges,
        anomaly: AnomalyKind::HalfEdges,
        writers: 2,
        ops: 5,
        seed: 1,
        limits: Limits::default(),
    };
    let mut judge = |v: &str| {
        probe.judge(&if patch(v) >= 3 {
            TargetSpec::reference()
        } else {
            TargetSpec::mutant(Mutant::NoMirror)
        })
    };
    let b = bisect::bisect(&versions(6), &mut judge, &mut |_| {});
    assert_eq!(
        b.found,
        Found::Change {
            before: 2,
            after: 3
        }
    );
    let old = b.trial(2).and_then(|t| t.judged.seen()).unwrap();
    assert_eq!(old.key, "half_edges: seen");
    assert!(!old.witness.is_empty() && !old.witness.starts_with("no half_edges"));
    let new = b.trial(3).and_then(|t| t.judged.seen()).unwrap();
    assert_eq!(new.key, "half_edges: none");
}

/// The `claude-code` family asks npm once and reuses the answer from the cache folder. npm
/// is replaced by a script on PATH that logs each call and prints a fixed answer (the test
/// must not depend on the registry); the answer is the shape `npm view PKG time versions
/// dist-tags --json` prints, with one version unpublished.
#[test]
fn npm_is_asked_once_and_its_answer_cached() {
    let dir = tempdir();
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = dir.path().join("npm.log");
    let answer = r#"{"time": {"2.1.17": "2026-01-01T00:00:00Z", "2.1.18": "2026-01-02T00:00:00Z", "2.1.19": "2026-01-03T00:00:00Z", "2.1.20": "2026-01-04T00:00:00Z"}, "versions": ["2.1.17", "2.1.19", "2.1.20"], "dist-tags": {"latest": "2.1.20"}}"#;
    write(
        &bin,
        "npm",
        &format!(
            "#!/bin/sh\necho \"$*\" >> '{}'\ncat <<'J'\n{answer}\nJ\n",
            log.display()
        ),
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(bin.join("npm"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let cache = dir.path().join("cache");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = |range: &str| {
        taskproof()
            .env("PATH", &path)
            .env("TASKPROOF_CLAUDE_CODE_CACHE", &cache)
            .args(["bisect", "--target", range, "--scenario", SCENARIO])
            .output()
            .expect("run taskproof bisect")
    };
    // Both refused after the versions are known, before anything is installed.
    let o = run("claude-code@2.1.18..latest");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "2.1.18 is not a published version (it was published and has been unpublished)"
        ),
        "{stderr}"
    );
    let o = run("claude-code@2.1.20..2.1.17");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("the range is reversed"), "{stderr}");
    let calls = std::fs::read_to_string(&log).unwrap();
    assert_eq!(calls.lines().count(), 1, "npm asked once: {calls}");
    assert!(calls.contains("view @anthropic-ai/claude-code time versions dist-tags --json"));
    assert!(cache.join("npm-view.json").is_file());
    // Nothing was installed.
    let installed: Vec<_> = std::fs::read_dir(&cache)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "npm-view.json")
        .collect();
    assert!(installed.is_empty(), "{installed:?}");
}
