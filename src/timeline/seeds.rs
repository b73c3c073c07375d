//! Already-known points: the checked-in run reports, race reports and recorded profiles of
//! Claude Code versions, read as the judgements a timeline run would make, so that the
//! versions measured by hand are never run again.
//!
//! - `reports/claude-code/VERSION/*.json` run reports (`run.json`, `between-requests.json`):
//!   each scenario's outcome under strict is its verdict, the first failure its witness.
//! - `reports/claude-code/VERSION/race-WORKLOAD.json`: races of 4 writers x 5 ops, seed 1,
//!   as the timeline's race rows run them; an anomaly count above zero is `seen`.
//! - `profiles/claude-code-VERSION.json`: a scenario without steps behaved as strict
//!   expects (pass), one with steps did not (fail), `skipped` is skip; used only where no
//!   run report of that version has the scenario (a profile's verdict can differ from a
//!   run's where a step is racy).

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::build::{Cache, Point};
use super::rows::{Row, RowProbe};
use crate::bisect::{Judged, Seen};
use taskproof_claude_code::Config;
use taskproof_race::report::RaceReport;
use taskproof_report::schema::{OutcomeKind, RunReport, ScenarioReport, StepFailure};

fn seen(key: &str, summary: String, witness: String) -> Judged {
    Judged::Seen(Seen {
        key: key.to_string(),
        summary,
        witness,
        failed_steps: Vec::new(),
        answers: BTreeMap::new(),
    })
}

/// A run report, through the reader the matrix uses; `None` when the file is not one.
fn read_run(path: &Path) -> Option<RunReport> {
    taskproof_matrix::input::read_run(path).ok()
}

/// A recorded profile's JSON (not a report: profile files have their own format).
fn read_profile(path: &Path) -> Option<Value> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// A race report, the same way.
fn read_race(path: &Path) -> Option<RaceReport> {
    taskproof_matrix::input::read_race(path).ok()
}

/// The witness of a run report's scenario: its first failure, in the terminal's words.
fn failure_witness(s: &ScenarioReport) -> String {
    let Some(f) = s.failures.first() else {
        return s.reason.clone().unwrap_or_default();
    };
    let mut out = String::new();
    if let Some(step) = f.step {
        out.push_str(&format!("steps[{step}]\n"));
    }
    let request = f.request.as_ref().unwrap_or(&Value::Null);
    for (k, v) in [
        ("request", request),
        ("expected", &f.expected),
        ("actual", &f.actual),
    ] {
        if !v.is_null() {
            out.push_str(&format!("  {k}: {v}\n"));
        }
    }
    out.push_str(&format!("  why: {}\n", f.reason));
    if let Some(w) = &f.witness {
        out.push_str(&format!("  after: {}\n", w.event));
        for x in &w.vanished {
            out.push_str(&format!("  vanished: {x}\n"));
        }
    }
    out.trim_end().to_string()
}

/// Adds every known point for `rows` found under `repo` (reports/claude-code and
/// profiles) to `cache`; a point already in the cache is kept.
pub fn add_known(repo: &Path, rows: &[Row], cache: &mut Cache) {
    let reports = repo.join("reports").join("claude-code");
    let Ok(dirs) = std::fs::read_dir(&reports) else {
        return;
    };
    let mut versions: Vec<String> = dirs
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|v| taskproof_session::npm::is_version(v))
        .collect();
    versions.sort();
    for v in &versions {
        let dir = reports.join(v);
        // The checked-in reports of reports/claude-code/V ran in the default configuration
        // unless a run report names another (add_run_report checks it).
        for row in rows {
            if row.config != Config::TeamsOff
                && !matches!(row.probe, RowProbe::Scenario(_) | RowProbe::Step(..))
            {
                continue;
            }
            match &row.probe {
                RowProbe::Scenario(_) | RowProbe::Step(..) => {
                    for file in ["run.json", "between-requests.json"] {
                        let rel = format!("reports/claude-code/{v}/{file}");
                        if let Some(r) = read_run(&dir.join(file)) {
                            add_run_report(&r, v, &rel, std::slice::from_ref(row), cache);
                        }
                    }
                }
                RowProbe::Race(w, a) => {
                    let rel = format!("reports/claude-code/{v}/race-{w}.json");
                    let Some(r) = read_race(&dir.join(format!("race-{w}.json"))) else {
                        continue;
                    };
                    if r.writers != 4 || r.ops != 5 || r.seed != 1 {
                        continue;
                    }
                    let Some(wr) = r.workloads.first() else {
                        continue;
                    };
                    if wr.skipped.is_some() {
                        continue;
                    }
                    let name = a.name();
                    let count = wr.anomalies.get(name).copied().unwrap_or(0)
                        + wr.observations.get(name).copied().unwrap_or(0);
                    let requests = wr.requests;
                    let witness = wr
                        .witnesses
                        .iter()
                        .find(|x| x.kind.name() == name)
                        .map(|x| x.text.clone())
                        .unwrap_or_else(|| format!("no {name} in {requests} requests"));
                    let key = if count > 0 { "seen" } else { "none" };
                    cache.add(
                        &row.key(),
                        v,
                        Point {
                            judged: seen(
                                &format!("{name}: {key}"),
                                format!("{name}: {count} in {requests} requests"),
                                witness,
                            ),
                            source: rel,
                        },
                    );
                }
                RowProbe::Background(..) => {
                    let file = "background-suite.json";
                    let rel = format!("reports/claude-code/{v}/{file}");
                    if let Some(r) = read_run(&dir.join(file)) {
                        add_run_report(&r, v, &rel, std::slice::from_ref(row), cache);
                    }
                }
            }
        }
    }
    add_profiles(repo, rows, cache);
}

/// Adds the scenario points of one run report (`taskproof run --report json:FILE`) of
/// `version` for `rows`; `source` names it.
fn add_run_report(r: &RunReport, version: &str, source: &str, rows: &[Row], cache: &mut Cache) {
    let scenario = |id: &str| r.scenarios.iter().find(|s| s.id == id);
    // A report from before configurations were named ran in the default (taskproof never
    // switched agent teams on then).
    let config = match r.target.configuration.as_deref() {
        None => Some(Config::TeamsOff),
        Some(name) => Config::parse(name).ok(),
    };
    for row in rows.iter().filter(|row| Some(row.config) == config) {
        // A background-task report (`run --suite background`) names its target so; its
        // scenarios are judged only for background rows, and a store report's only for the
        // others.
        let background = r.target.name.as_deref() == Some("background-task target");
        let (id, step) = match &row.probe {
            RowProbe::Scenario(id) if !background => (id, None),
            RowProbe::Step(id, n) if !background => (id, Some(*n)),
            RowProbe::Background(id, rule) if background => {
                if let Some(s) = scenario(id) {
                    add_rule_point(s, r, rule, version, source, &row.key(), cache);
                }
                continue;
            }
            _ => continue,
        };
        let Some(s) = scenario(id) else {
            continue;
        };
        let outcome = s.outcome.as_str();
        // An error judged nothing; it is not a point.
        if s.outcome == OutcomeKind::Error || r.profile != "strict" {
            continue;
        }
        let reason = s.reason.as_deref();
        let (key, summary, witness) = match step {
            None => (
                outcome.to_string(),
                match reason {
                    Some(why) => format!("{outcome} ({why})"),
                    None => outcome.to_string(),
                },
                if outcome == "pass" {
                    String::new()
                } else {
                    failure_witness(s)
                },
            ),
            Some(n) => {
                // The report's run stopped at its first failure: a step before it passed,
                // the failing step failed, a step after it is unknown.
                let first = s.failures.iter().filter_map(|x| x.step).min();
                let n64 = n;
                match (outcome, first) {
                    ("skip", _) => ("skip".into(), format!("steps[{n}] skip"), String::new()),
                    ("pass", _) => ("pass".into(), format!("steps[{n}] pass"), String::new()),
                    (_, Some(f)) if f > n64 => (
                        "pass".into(),
                        format!("steps[{n}] pass (the run failed later, at steps[{f}])"),
                        String::new(),
                    ),
                    (_, Some(f)) if f == n64 => (
                        "fail".into(),
                        format!("steps[{n}] fail"),
                        failure_witness(s),
                    ),
                    _ => continue,
                }
            }
        };
        cache.add(
            &row.key(),
            version,
            Point {
                judged: seen(&key, summary, witness),
                source: source.to_string(),
            },
        );
    }
}

/// The point of one rule of a background report's scenario: `fail` when a failure cites
/// it, with those failures as the witness; else the scenario's `pass` or `skip` (a pass of
/// the rule inside a failing scenario is `pass`).
fn add_rule_point(
    s: &ScenarioReport,
    r: &RunReport,
    rule: &str,
    version: &str,
    source: &str,
    key: &str,
    cache: &mut Cache,
) {
    if s.outcome == OutcomeKind::Error || r.profile != "strict" {
        return;
    }
    let broke: Vec<&StepFailure> = s
        .failures
        .iter()
        .filter(|f| f.rules.iter().any(|x| x == rule))
        .collect();
    let judged = if let Some(first) = broke.first() {
        let reason = |f: &StepFailure| f.reason.clone();
        seen(
            "fail",
            format!("fail ({rule}: {})", reason(first)),
            broke
                .iter()
                .map(|f| reason(f))
                .collect::<Vec<_>>()
                .join("\n"),
        )
    } else if s.outcome == OutcomeKind::Skip {
        seen(
            "skip",
            format!("skip ({})", s.reason.as_deref().unwrap_or("")),
            String::new(),
        )
    } else {
        seen("pass", format!("pass ({rule} held)"), String::new())
    };
    cache.add(
        key,
        version,
        Point {
            judged,
            source: source.to_string(),
        },
    );
}

/// Adds the scenario points of every run report under `dir` (searched recursively for
/// `*.json`) whose target is a Claude Code version: the shards a sharded run's machines
/// uploaded (`run --partition K/N --report json:FILE`), for instance. Files that are not
/// run reports are passed over; the count of reports read is returned.
pub fn add_reports_dir(dir: &Path, rows: &[Row], cache: &mut Cache) -> usize {
    let mut read_count = 0;
    let mut stack = vec![dir.to_path_buf()];
    let mut files = Vec::new();
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.filter_map(Result::ok) {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "json") {
                files.push(p);
            }
        }
    }
    files.sort();
    for f in files {
        let Some(r) = read_run(&f) else { continue };
        let Some(version) = r.target.spec.strip_prefix("claude-code@") else {
            continue;
        };
        // `claude-code@V:CONFIG`: the configuration is the report's `configuration`.
        let version = version.split(':').next().unwrap_or(version);
        // `latest` names the version its hello gave (a background report: `claude-code@V`).
        let version = r
            .target
            .version
            .as_deref()
            .map(|v| v.strip_prefix("claude-code@").unwrap_or(v))
            .unwrap_or(version);
        if !taskproof_session::npm::is_version(version) {
            continue;
        }
        add_run_report(&r, version, &f.display().to_string(), rows, cache);
        read_count += 1;
    }
    read_count
}

fn add_profiles(repo: &Path, rows: &[Row], cache: &mut Cache) {
    let Ok(files) = std::fs::read_dir(repo.join("profiles")) else {
        return;
    };
    for f in files.filter_map(Result::ok) {
        let name = f.file_name().to_string_lossy().to_string();
        let Some(v) = name
            .strip_prefix("claude-code-")
            .and_then(|n| n.strip_suffix(".json"))
        else {
            continue;
        };
        let Some(p) = read_profile(&f.path()) else {
            continue;
        };
        // The recorded profiles ran in the default configuration.
        for row in rows.iter().filter(|r| r.config == Config::TeamsOff) {
            let (id, step) = match &row.probe {
                RowProbe::Scenario(id) => (id, None),
                RowProbe::Step(id, n) => (id, Some(n.to_string())),
                _ => continue,
            };
            let Some(s) = p["scenarios"].get(id.as_str()) else {
                continue;
            };
            let steps = s.get("steps").and_then(Value::as_object);
            let (key, summary) = if let Some(why) = s.get("skipped").and_then(Value::as_str) {
                ("skip", format!("skip ({why})"))
            } else if s.get("error").is_some() {
                continue;
            } else if let Some(n) = &step {
                // One step: left out of the profile means as strict expects.
                match steps.and_then(|m| m.get(n)) {
                    Some(st) if st.get("racy").is_some() => continue,
                    Some(_) => ("fail", format!("steps[{n}] fail (differs from strict)")),
                    None => ("pass", format!("steps[{n}] pass")),
                }
            } else if let Some(steps) = steps {
                if steps.values().any(|st| st.get("racy").is_some()) {
                    // A racy step has no single verdict.
                    continue;
                }
                let first = steps.keys().next().cloned().unwrap_or_default();
                ("fail", format!("fail (steps[{first}] differs from strict)"))
            } else {
                ("pass", "pass".to_string())
            };
            let witness = match s.get("steps").and_then(Value::as_object) {
                Some(steps) => steps
                    .iter()
                    .map(|(k, st)| {
                        format!("steps[{k}]: strict {} / seen {}", st["strict"], st["seen"])
                    })
                    .collect::<Vec<_>>()
                    .join("\n"),
                None => String::new(),
            };
            cache.add(
                &row.key(),
                v,
                Point {
                    judged: seen(key, summary, witness),
                    source: format!("profiles/{name}"),
                },
            );
        }
    }
}
