//! Observations: what one step of a scenario showed about a target, in the terms of the
//! step's `strict` expectation. A step that behaved as `strict` expects has no observation
//! (`None`); otherwise the observation says what the expectation looks at:
//!
//! - a request: `{"error": KIND}`, or `{"ok": true, ...}` with the fields the expectation
//!   checks, as the target answered them (edges as sorted sets, unset optional fields as
//!   `null`), in the scenario format's expectation syntax;
//! - an invariant check: `{"broken": {"mirrored": 2, ...}, "ready": [...]}`, the number of
//!   violations per invariant and the ready set seen when it was not the expected one;
//! - a concurrent block: `{"verify": V, "held": true|false, "acknowledged": N, "sent": N,
//!   "violations": N}` (always recorded, held or not, for its counts);
//! - any other step that failed: `{"held": false, "seen": REASON}`.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

/// Optional task fields: absent, `null`, `""` and `{}` all mean unset (SPEC §1).
const OPTIONAL: [&str; 4] = ["description", "activeForm", "owner", "metadata"];
const EDGES: [&str; 2] = ["blocks", "blockedBy"];

/// The observation of a request step whose answer did not meet its `strict` expectation
/// (`scenario::Expect::observe` decides that, and which fields the expectation `looked` at).
pub fn unmet(looked: &Looked, answer: &Value) -> Value {
    if answer.get("ok") != Some(&Value::Bool(true)) {
        let kind = answer
            .pointer("/error/kind")
            .and_then(Value::as_str)
            .unwrap_or("?");
        return json!({"error": kind});
    }
    let mut out = Map::new();
    out.insert("ok".into(), Value::Bool(true));
    if !looked.task.is_empty() {
        let t = answer.get("task").unwrap_or(&Value::Null);
        out.insert("task".into(), project(t, &looked.task));
    }
    if let Some(fields) = &looked.tasks {
        let listed = answer
            .get("tasks")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let projected: Vec<Value> = listed.iter().map(|t| project(t, fields)).collect();
        out.insert("tasks".into(), Value::Array(projected));
    }
    if looked.corrupt {
        let mut names: Vec<String> = answer
            .get("corrupt")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(text_of)
            .collect();
        names.sort();
        out.insert(
            "corrupt".into(),
            Value::Array(names.into_iter().map(Value::String).collect()),
        );
    }
    Value::Object(out)
}

/// The fields an expectation looks at in a success.
#[derive(Debug, Default)]
pub struct Looked {
    pub task: BTreeSet<String>,
    /// `Some` when it looks at the listing; the fields of its tasks.
    pub tasks: Option<BTreeSet<String>>,
    pub corrupt: bool,
}

/// The fields of a task, normalized so that equal behaviour gives equal JSON.
fn project(task: &Value, fields: &BTreeSet<String>) -> Value {
    let mut out = Map::new();
    for f in fields {
        let v = task.get(f.as_str());
        let shown = if EDGES.contains(&f.as_str()) {
            let mut ids: Vec<String> = v
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(text_of)
                .collect();
            ids.sort_by(|a, b| (a.len(), a).cmp(&(b.len(), b)));
            Value::Array(ids.into_iter().map(Value::String).collect())
        } else if OPTIONAL.contains(&f.as_str()) {
            match v {
                None | Some(Value::Null) => Value::Null,
                Some(Value::String(s)) if s.is_empty() => Value::Null,
                Some(Value::Object(m)) if m.is_empty() => Value::Null,
                Some(other) => sorted(other),
            }
        } else {
            v.map_or(Value::Null, sorted)
        };
        out.insert(f.clone(), shown);
    }
    Value::Object(out)
}

/// A value with its object keys sorted, so that a store's key order never shows.
pub fn sorted(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted(&m[k])))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The observation of an invariant check that found something: violations per invariant
/// and, when the expected ready set was not met, the ready set seen.
pub fn check(broken: &[(String, usize)], ready: Option<Vec<String>>) -> Value {
    let mut counts = Map::new();
    let mut broken: Vec<&(String, usize)> = broken.iter().filter(|(_, n)| *n > 0).collect();
    broken.sort();
    for (name, n) in broken {
        counts.insert(name.clone(), json!(n));
    }
    let mut out = Map::new();
    out.insert("broken".into(), Value::Object(counts));
    if let Some(mut r) = ready {
        r.sort_by(|a, b| (a.len(), a).cmp(&(b.len(), b)));
        out.insert("ready".into(), json!(r));
    }
    Value::Object(out)
}

/// The observation of one run of a concurrent block.
pub fn concurrent(verify: &str, acknowledged: usize, sent: usize, violations: usize) -> Value {
    json!({
        "verify": verify,
        "held": violations == 0,
        "acknowledged": acknowledged,
        "sent": sent,
        "violations": violations,
    })
}

/// The observation of any other step that did not do what the scenario expects.
pub fn failed(reason: &str) -> Value {
    json!({"held": false, "seen": reason})
}

/// Whether an observation is of a concurrent block.
pub fn is_concurrent(obs: &Value) -> bool {
    obs.get("verify").is_some()
}

/// Whether a single observation is what `strict` expects (a concurrent block that held).
pub fn as_strict(obs: Option<&Value>) -> bool {
    match obs {
        None => true,
        Some(o) => is_concurrent(o) && o.get("held") == Some(&Value::Bool(true)),
    }
}
