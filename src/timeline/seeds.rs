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

fn seen(key: &str, summary: String, witness: String) -> Judged {
    Judged::Seen(Seen {
        key: key.to_string(),
        summary,
        witness,
        failed_steps: Vec::new(),
        answers: BTreeMap::new(),
    })
}

fn read(path: &Path) -> Option<Value> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// The witness of a run report's scenario: its first failure, in the terminal's words.
fn failure_witness(s: &Value) -> String {
    let Some(f) = s
        .get("failures")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
    else {
        return s
            .get("reason")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
    };
    let mut out = String::new();
    if let Some(step) = f.get("step").and_then(Value::as_u64) {
        out.push_str(&format!("steps[{step}]\n"));
    }
    for k in ["request", "expected", "actual"] {
        if let Some(v) = f.get(k).filter(|v| !v.is_null()) {
            out.push_str(&format!("  {k}: {v}\n"));
        }
    }
    if let Some(r) = f.get("reason").and_then(Value::as_str) {
        out.push_str(&format!("  why: {r}\n"));
    }
    if let Some(w) = f.get("witness").filter(|w| !w.is_null()) {
        if let Some(e) = w.get("event").and_then(Value::as_str) {
            out.push_str(&format!("  after: {e}\n"));
        }
        if let Some(Value::Array(v)) = w.get("vanished") {
            for x in v.iter().filter_map(Value::as_str) {
                out.push_str(&format!("  vanished: {x}\n"));
            }
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
        .filter(|v| crate::target::claude_code::is_version(v))
        .collect();
    versions.sort();
    for v in &versions {
        let dir = reports.join(v);
        for row in rows {
            match &row.probe {
                RowProbe::Scenario(id) => {
                    for file in ["run.json", "between-requests.json"] {
                        let rel = format!("reports/claude-code/{v}/{file}");
                        let Some(r) = read(&dir.join(file)) else {
                            continue;
                        };
                        let Some(s) = r
                            .get("scenarios")
                            .and_then(Value::as_array)
                            .and_then(|a| a.iter().find(|s| s["id"] == id.as_str()))
                        else {
                            continue;
                        };
                        let Some(outcome) = s.get("outcome").and_then(Value::as_str) else {
                            continue;
                        };
                        // An error judged nothing; it is not a point.
                        if outcome == "error" {
                            continue;
                        }
                        let reason = s.get("reason").and_then(Value::as_str);
                        let summary = match reason {
                            Some(r) => format!("{outcome} ({r})"),
                            None => outcome.to_string(),
                        };
                        let witness = if outcome == "pass" {
                            String::new()
                        } else {
                            failure_witness(s)
                        };
                        cache.add(
                            &row.probe.key(),
                            v,
                            Point {
                                judged: seen(outcome, summary, witness),
                                source: rel,
                            },
                        );
                    }
                }
                RowProbe::Race(w, a) => {
                    let rel = format!("reports/claude-code/{v}/race-{w}.json");
                    let Some(r) = read(&dir.join(format!("race-{w}.json"))) else {
                        continue;
                    };
                    if r["writers"] != 4 || r["ops"] != 5 || r["seed"] != 1 {
                        continue;
                    }
                    let Some(wr) = r["workloads"].as_array().and_then(|x| x.first()) else {
                        continue;
                    };
                    if wr.get("skipped").is_some_and(|s| !s.is_null()) {
                        continue;
                    }
                    let name = a.name();
                    let count = wr["anomalies"][name].as_u64().unwrap_or(0)
                        + wr["observations"][name].as_u64().unwrap_or(0);
                    let requests = wr["requests"].as_u64().unwrap_or(0);
                    let witness = wr["witnesses"]
                        .as_array()
                        .and_then(|ws| ws.iter().find(|x| x["kind"] == name))
                        .and_then(|x| x["text"].as_str())
                        .map(str::to_string)
                        .unwrap_or_else(|| format!("no {name} in {requests} requests"));
                    let key = if count > 0 { "seen" } else { "none" };
                    cache.add(
                        &row.probe.key(),
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
                RowProbe::Slot => {}
            }
        }
    }
    add_profiles(repo, rows, cache);
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
        let Some(p) = read(&f.path()) else { continue };
        for row in rows {
            let RowProbe::Scenario(id) = &row.probe else {
                continue;
            };
            let Some(s) = p["scenarios"].get(id.as_str()) else {
                continue;
            };
            let (key, summary) = if let Some(why) = s.get("skipped").and_then(Value::as_str) {
                ("skip", format!("skip ({why})"))
            } else if s.get("error").is_some() {
                continue;
            } else if let Some(steps) = s.get("steps").and_then(Value::as_object) {
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
                &row.probe.key(),
                v,
                Point {
                    judged: seen(key, summary, witness),
                    source: format!("profiles/{name}"),
                },
            );
        }
    }
}
