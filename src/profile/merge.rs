//! Recording: the observations of each run of a scenario, collected from the runner's
//! threads ([`Observer`]), and merged into one record per scenario. A step whose observation
//! differed between runs becomes racy; a concurrent block is recorded with how often it
//! held.

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde_json::{Value, json};

use super::format::{Recorded, ScenarioRecord, Seen, State, StepKey, StepRecord};
use super::observe;
use crate::rule::Rule;

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

/// Merges the runs of one scenario.
fn merge(runs: Vec<RunRecord>) -> ScenarioRecord {
    let first = &runs[0];
    let title = first.title.clone();
    let rules = first.rules.clone();
    // A run that ran decides; only when none did, the first run's skip or error does.
    let ran: Vec<&RunRecord> = runs.iter().filter(|r| r.state == State::Ran).collect();
    if ran.is_empty() {
        return ScenarioRecord {
            title,
            rules,
            state: first.state.clone(),
            steps: BTreeMap::new(),
        };
    }
    let mut keys: Vec<StepKey> = ran.iter().flat_map(|r| r.steps.keys().copied()).collect();
    keys.sort();
    keys.dedup();
    let mut steps = BTreeMap::new();
    for k in keys {
        let (step_rules, strict) = ran
            .iter()
            .find_map(|r| r.steps.get(&k).map(|(ru, st, _)| (ru.clone(), st.clone())))
            .expect("the key came from a run");
        let seen: Vec<Option<&Value>> = ran
            .iter()
            .map(|r| r.steps.get(&k).and_then(|(_, _, o)| o.as_ref()))
            .collect();
        let rec = if let Some(c) = seen.iter().flatten().find(|v| observe::is_concurrent(v)) {
            let held_in = seen
                .iter()
                .filter(|o| observe::as_strict(o.as_deref()))
                .count();
            let runs = seen.len();
            let violations: Vec<u64> = seen
                .iter()
                .flatten()
                .filter_map(|v| v.get("violations").and_then(Value::as_u64))
                .collect();
            let (lo, hi) = (
                violations.iter().min().copied().unwrap_or(0),
                violations.iter().max().copied().unwrap_or(0),
            );
            let held = match held_in {
                n if n == runs => "always",
                0 => "never",
                _ => "sometimes",
            };
            Some(Seen::Same(json!({
                "verify": c.get("verify").cloned().unwrap_or(Value::Null),
                "held": held,
                "held_in": held_in,
                "runs": runs,
                "violations": if lo == hi { json!(lo) } else { json!(format!("{lo} to {hi}")) },
            })))
        } else {
            let mut distinct: Vec<Value> = Vec::new();
            for o in &seen {
                let v = o.cloned().unwrap_or(Value::Null);
                if !distinct.contains(&v) {
                    distinct.push(v);
                }
            }
            match distinct.len() {
                1 if distinct[0].is_null() => None,
                1 => Some(Seen::Same(distinct.remove(0))),
                _ => Some(Seen::Racy(distinct)),
            }
        };
        if let Some(seen) = rec {
            steps.insert(
                k,
                StepRecord {
                    rules: step_rules,
                    strict,
                    seen,
                },
            );
        }
    }
    ScenarioRecord {
        title,
        rules,
        state: State::Ran,
        steps,
    }
}
