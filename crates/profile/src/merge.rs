//! Recording: the observations of each run of a scenario, collected from the runner's
//! threads ([`Observer`]), and merged into one record per scenario. A step whose observation
//! differed between runs becomes racy; a concurrent block is recorded with how often it
//! held.

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde_json::{Value, json};

use crate::format::{Recorded, ScenarioRecord, Seen, State, StepKey, StepRecord};
use crate::observe;
use taskproof_core::rule::Rule;

/// One run of one scenario, observed.
#[derive(Debug, Clone)]
pub struct RunRecord {
    pub id: String,
    pub title: String,
    pub rules: Vec<Rule>,
    pub state: State,
    /// Per step: its rules when they are not the scenario's, what strict expects (as
    /// written), and what was seen (`None`: as strict).
    pub steps: BTreeMap<StepKey, Observed>,
}

/// One step observed: its rules when they are not the scenario's, what strict expects (as
/// written) and what was seen (`None`: as strict).
pub type Observed = (Option<Vec<Rule>>, Value, Option<Value>);

/// Collects the observations of a recording run from the runner's threads.
#[derive(Debug, Default)]
pub struct Observer {
    runs: Mutex<Vec<RunRecord>>,
}

impl Observer {
    pub fn push(&self, r: RunRecord) {
        self.runs.lock().unwrap_or_else(|p| p.into_inner()).push(r);
    }

    pub fn take(&self) -> Vec<RunRecord> {
        std::mem::take(&mut *self.runs.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

impl Recorded {
    /// Builds a profile from the runs of a recording: the runs of each scenario are merged,
    /// a step that differed between runs becoming racy.
    pub fn from_runs(name: &str, recorded: Value, runs: Vec<RunRecord>) -> Recorded {
        let mut by_id: BTreeMap<String, Vec<RunRecord>> = BTreeMap::new();
        for r in runs {
            by_id.entry(r.id.clone()).or_default().push(r);
        }
        let scenarios = by_id
            .into_iter()
            .map(|(id, runs)| (id, merge(runs)))
            .collect();
        Recorded {
            name: name.to_string(),
            recorded,
            scenarios,
            file: format!("profiles/{name}.json"),
        }
    }
}

impl Recorded {
    /// Folds a time probe of a racy step into the profile. `with` is what each probe run
    /// saw at the step after `after` of idle time, `without` what the runs without it saw
    /// (`None`: as strict). The idle time decides the answer when every run with it gave
    /// one answer the recording saw too, and some run without it gave another: then the
    /// step becomes time-dependent and that answer is returned. Otherwise it stays racy and
    /// the error says why.
    pub fn time_dependent(
        &mut self,
        id: &str,
        index: usize,
        after: std::time::Duration,
        with: &[Option<Value>],
        without: &[Option<Value>],
    ) -> Result<Value, String> {
        let rec = self
            .scenarios
            .get_mut(id)
            .and_then(|s| s.steps.get_mut(&StepKey::Step(index)))
            .ok_or_else(|| format!("{id} steps[{index}] is not in the profile"))?;
        let Seen::Racy(answers) = &rec.seen else {
            return Err(format!("{id} steps[{index}] is not racy"));
        };
        let plain = |vs: &[Option<Value>]| -> Vec<Value> {
            vs.iter()
                .map(|v| v.clone().unwrap_or(Value::Null))
                .collect()
        };
        let (with, without) = (plain(with), plain(without));
        let Some(late) = with.first() else {
            return Err("no probe run reached the step".into());
        };
        if let Some(other) = with.iter().find(|v| *v != late) {
            return Err(format!(
                "the runs with the idle time differed ({late} and {other})"
            ));
        }
        if !answers.contains(late) {
            return Err(format!(
                "after the idle time it answered {late}, which the recording never saw"
            ));
        }
        if without.iter().all(|v| v == late) {
            return Err(format!(
                "the runs without the idle time answered {late} too, so time did not decide it"
            ));
        }
        let mut soon: Vec<Value> = Vec::new();
        for v in answers.iter().chain(&without) {
            if v != late && !soon.contains(v) {
                soon.push(v.clone());
            }
        }
        let late = late.clone();
        rec.seen = Seen::Timed {
            soon,
            late: late.clone(),
            after: after.as_secs_f64(),
        };
        Ok(late)
    }
}

/// Merges the runs of one scenario: each run is the record of a one-run recording, and
/// those merge as recordings do.
fn merge(runs: Vec<RunRecord>) -> ScenarioRecord {
    let records: Vec<ScenarioRecord> = runs.iter().map(single).collect();
    merge_records(&records.iter().collect::<Vec<_>>())
}

/// The record of one run: every step that did not do what strict expects, and every
/// concurrent block (held in 1 of 1 runs, or in 0).
fn single(run: &RunRecord) -> ScenarioRecord {
    let steps = run
        .steps
        .iter()
        .filter_map(|(k, (rules, strict, obs))| {
            let obs = obs.as_ref()?;
            let seen = if observe::is_concurrent(obs) {
                let held = obs.get("held") == Some(&Value::Bool(true));
                json!({
                    "verify": obs.get("verify").cloned().unwrap_or(Value::Null),
                    "held": if held { "always" } else { "never" },
                    "held_in": u64::from(held),
                    "runs": 1,
                    "violations": obs.get("violations").cloned().unwrap_or(json!(0)),
                })
            } else {
                obs.clone()
            };
            let rec = StepRecord {
                rules: rules.clone(),
                strict: strict.clone(),
                seen: Seen::Same(seen),
            };
            Some((*k, rec))
        })
        .collect();
    ScenarioRecord {
        title: run.title.clone(),
        rules: run.rules.clone(),
        state: run.state.clone(),
        steps,
    }
}

/// Merges recordings of one target made at different times (another day, another load)
/// into one profile named `name`, as if their runs had been one recording's: a step that
/// one of them saw differently from another becomes racy, with every observation; a
/// concurrent block's runs add up. A scenario only one of them recorded is taken as it is.
/// The result's `recorded` is the first recording's, with the others' `date`, `taskproof`,
/// `repeat` and `runs` listed under `merged`. Recordings of different targets are refused.
pub fn merge_recordings(name: &str, parts: &[Recorded]) -> Result<Recorded, String> {
    let first = parts.first().ok_or("nothing to merge")?;
    let target = |r: &Recorded| r.recorded.get("target").cloned().unwrap_or(Value::Null);
    if let Some(other) = parts.iter().find(|r| target(r) != target(first)) {
        return Err(format!(
            "{} records the target {} and {} the target {}: only recordings of one target merge",
            first.file,
            target(first),
            other.file,
            target(other)
        ));
    }
    let mut ids: Vec<&String> = parts.iter().flat_map(|r| r.scenarios.keys()).collect();
    ids.sort();
    ids.dedup();
    let scenarios = ids
        .into_iter()
        .map(|id| {
            let records: Vec<&ScenarioRecord> =
                parts.iter().filter_map(|r| r.scenarios.get(id)).collect();
            (id.clone(), merge_records(&records))
        })
        .collect();
    let mut recorded = first.recorded.clone();
    if let Value::Object(m) = &mut recorded {
        let merged: Vec<Value> = parts[1..]
            .iter()
            .map(|r| {
                let keep = ["date", "taskproof", "repeat", "runs"];
                Value::Object(
                    keep.iter()
                        .filter_map(|k| r.recorded.get(*k).map(|v| (k.to_string(), v.clone())))
                        .collect(),
                )
            })
            .collect();
        m.insert("merged".into(), Value::Array(merged));
    }
    Ok(Recorded {
        name: name.to_string(),
        recorded,
        scenarios,
        file: format!("profiles/{name}.json"),
    })
}

/// What one record says was seen at a step: every distinct observation (`null`: as strict).
fn observations(rec: Option<&StepRecord>) -> Vec<Value> {
    match rec.map(|r| &r.seen) {
        None => vec![Value::Null],
        Some(seen) => seen.answers(),
    }
}

/// The lowest and highest violation count a concurrent block's record names (`3` or
/// `"0 to 3"`).
fn violation_range(v: &Value) -> (u64, u64) {
    match v.get("violations") {
        Some(Value::Number(n)) => (n.as_u64().unwrap_or(0), n.as_u64().unwrap_or(0)),
        Some(Value::String(s)) => {
            let mut it = s.split(" to ").filter_map(|x| x.parse::<u64>().ok());
            let lo = it.next().unwrap_or(0);
            (lo, it.next().unwrap_or(lo))
        }
        _ => (0, 0),
    }
}

/// Merges the records of one scenario from several recordings.
fn merge_records(records: &[&ScenarioRecord]) -> ScenarioRecord {
    let ran: Vec<&&ScenarioRecord> = records.iter().filter(|r| r.state == State::Ran).collect();
    let Some(base) = ran.first() else {
        return records[0].clone();
    };
    let mut keys: Vec<StepKey> = ran.iter().flat_map(|r| r.steps.keys().copied()).collect();
    keys.sort();
    keys.dedup();
    let mut steps = BTreeMap::new();
    for k in keys {
        let recs: Vec<Option<&StepRecord>> = ran.iter().map(|r| r.steps.get(&k)).collect();
        let some = recs
            .iter()
            .flatten()
            .next()
            .expect("the key came from a record");
        let blocks: Vec<&Value> = recs
            .iter()
            .flatten()
            .filter_map(|r| match &r.seen {
                Seen::Same(v) if observe::is_concurrent(v) => Some(v),
                _ => None,
            })
            .collect();
        let seen = if let Some(first) = blocks.first() {
            let count = |key: &str| -> u64 {
                blocks
                    .iter()
                    .filter_map(|v| v.get(key).and_then(Value::as_u64))
                    .sum()
            };
            let (held_in, runs) = (count("held_in"), count("runs"));
            let ranges: Vec<(u64, u64)> = blocks.iter().map(|v| violation_range(v)).collect();
            let lo = ranges.iter().map(|r| r.0).min().unwrap_or(0);
            let hi = ranges.iter().map(|r| r.1).max().unwrap_or(0);
            let held = match held_in {
                n if n == runs => "always",
                0 => "never",
                _ => "sometimes",
            };
            Some(Seen::Same(json!({
                "verify": first.get("verify").cloned().unwrap_or(Value::Null),
                "held": held,
                "held_in": held_in,
                "runs": runs,
                "violations": if lo == hi { json!(lo) } else { json!(format!("{lo} to {hi}")) },
            })))
        } else {
            let mut distinct: Vec<Value> = Vec::new();
            for v in recs.iter().flat_map(|r| observations(*r)) {
                if !distinct.contains(&v) {
                    distinct.push(v);
                }
            }
            // A time-dependent record stays one while the others saw only its answers.
            let timed = recs.iter().flatten().find_map(|r| match &r.seen {
                t @ Seen::Timed { .. } if distinct.iter().all(|v| t.answers().contains(v)) => {
                    Some(t.clone())
                }
                _ => None,
            });
            match distinct.len() {
                _ if timed.is_some() => timed,
                1 if distinct[0].is_null() => None,
                1 => Some(Seen::Same(distinct.remove(0))),
                _ => Some(Seen::Racy(distinct)),
            }
        };
        if let Some(seen) = seen {
            steps.insert(
                k,
                StepRecord {
                    rules: some.rules.clone(),
                    strict: some.strict.clone(),
                    seen,
                },
            );
        }
    }
    ScenarioRecord {
        title: base.title.clone(),
        rules: base.rules.clone(),
        state: State::Ran,
        steps,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(state: State, step1: Option<Value>) -> RunRecord {
        RunRecord {
            id: "s".into(),
            title: "t".into(),
            rules: vec![Rule::S2],
            state,
            steps: [(StepKey::Step(1), (None, json!({"ok": true}), step1))]
                .into_iter()
                .collect(),
        }
    }

    fn recording(runs: Vec<RunRecord>, date: &str) -> Recorded {
        Recorded::from_runs("p", json!({"target": "t", "date": date}), runs)
    }

    #[test]
    fn a_run_that_ran_decides_over_a_skipped_one() {
        let p = recording(
            vec![
                run(State::Skipped("no".into()), None),
                run(State::Ran, Some(json!({"error": "io"}))),
            ],
            "d",
        );
        let s = &p.scenarios["s"];
        assert_eq!(s.state, State::Ran);
        assert_eq!(
            s.steps[&StepKey::Step(1)].seen,
            Seen::Same(json!({"error": "io"}))
        );
    }

    #[test]
    fn recordings_of_another_day_merge_into_racy_steps() {
        let old = recording(
            vec![run(State::Ran, Some(json!({"error": "not_found"})))],
            "d1",
        );
        let new = recording(vec![run(State::Ran, None), run(State::Ran, None)], "d2");
        assert!(new.scenarios["s"].steps.is_empty());
        let m = merge_recordings("p", &[new.clone(), old.clone()]).unwrap();
        assert_eq!(
            m.scenarios["s"].steps[&StepKey::Step(1)].seen,
            Seen::Racy(vec![Value::Null, json!({"error": "not_found"})])
        );
        assert_eq!(m.recorded["date"], "d2");
        assert_eq!(m.recorded["merged"], json!([{"date": "d1"}]));
        // Agreeing recordings merge to the same records.
        let same = merge_recordings("p", &[old.clone(), old.clone()]).unwrap();
        assert_eq!(same.scenarios, old.scenarios);
        // Another target's recording is refused.
        let mut other = old.clone();
        other.recorded = json!({"target": "u"});
        let e = merge_recordings("p", &[old, other]).unwrap_err();
        assert!(e.contains("only recordings of one target merge"), "{e}");
    }

    #[test]
    fn concurrent_blocks_add_their_runs() {
        let block = |held: &str, held_in: u64, violations: Value| {
            ScenarioRecord {
            title: "t".into(),
            rules: vec![Rule::S18],
            state: State::Ran,
            steps: [(
                StepKey::Step(0),
                StepRecord {
                    rules: None,
                    strict: json!("holds"),
                    seen: Seen::Same(json!({"verify": "unique_ids", "held": held, "held_in": held_in, "runs": 3, "violations": violations})),
                },
            )]
            .into_iter()
            .collect(),
        }
        };
        let (a, b) = (
            block("always", 3, json!(0)),
            block("never", 0, json!("2 to 5")),
        );
        let m = merge_records(&[&a, &b]);
        assert_eq!(
            m.steps[&StepKey::Step(0)].seen,
            Seen::Same(
                json!({"verify": "unique_ids", "held": "sometimes", "held_in": 3, "runs": 6, "violations": "0 to 5"})
            )
        );
    }
}
