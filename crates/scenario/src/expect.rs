//! Expectations and matching: what a step demands of an answer, and the partial task match
//! of SPEC §1 (sets for edges, absent = `null` = empty for optional fields).
//!
//! Judging returns a reason a person can act on (`task.blockedBy: expected ["1"], got []`),
//! never a bare "mismatch".

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use crate::vars::{self, VarError, Vars};
use taskproof_core::protocol::ErrorKind;
use taskproof_profile::observe::{self, Looked};

/// What a `send` step expects of the answer under one profile.
#[derive(Debug, Clone, PartialEq)]
pub enum Expect {
    /// A success; the given parts must match.
    Ok {
        task: Option<Value>,
        tasks: Option<Vec<Value>>,
        corrupt: Option<Vec<Value>>,
    },
    /// A failure of this kind.
    Error(ErrorKind),
    /// Any one of these.
    Any(Vec<Expect>),
    /// Not judged.
    Anything,
}

/// Task fields that are optional: absent, `null`, `""` and `{}` all mean unset (SPEC §1).
const OPTIONAL: [&str; 4] = ["description", "activeForm", "owner", "metadata"];
/// Task fields that are sets of ids.
const EDGES: [&str; 2] = ["blocks", "blockedBy"];

impl Expect {
    /// Whether a success it expects names a task's edges (`blocks`, `blockedBy`).
    pub fn names_edges(&self) -> bool {
        let names = |t: &Value| EDGES.iter().any(|k| t.get(*k).is_some());
        match self {
            Expect::Ok { task, tasks, .. } => {
                task.as_ref().is_some_and(names) || tasks.iter().flatten().any(names)
            }
            Expect::Any(alts) => alts.iter().any(Expect::names_edges),
            Expect::Error(_) | Expect::Anything => false,
        }
    }

    /// The same expectation without any task's edges (`blocks`, `blockedBy`): acceptance or
    /// refusal and every other field are still expected.
    pub fn without_edges(&self) -> Expect {
        let strip = |t: &Value| {
            let mut t = t.clone();
            if let Some(o) = t.as_object_mut() {
                for k in EDGES {
                    o.remove(k);
                }
            }
            t
        };
        match self {
            Expect::Ok {
                task,
                tasks,
                corrupt,
            } => Expect::Ok {
                task: task.as_ref().map(strip),
                tasks: tasks.as_ref().map(|ts| ts.iter().map(strip).collect()),
                corrupt: corrupt.clone(),
            },
            Expect::Any(alts) => Expect::Any(alts.iter().map(Expect::without_edges).collect()),
            other => other.clone(),
        }
    }

    /// Fills the placeholders of every task expectation.
    pub fn substitute(&self, vars: &Vars) -> Result<Expect, VarError> {
        Ok(match self {
            Expect::Ok {
                task,
                tasks,
                corrupt,
            } => Expect::Ok {
                task: task
                    .as_ref()
                    .map(|t| vars::substitute(t, vars))
                    .transpose()?,
                tasks: tasks
                    .as_ref()
                    .map(|ts| ts.iter().map(|t| vars::substitute(t, vars)).collect())
                    .transpose()?,
                corrupt: corrupt
                    .as_ref()
                    .map(|cs| cs.iter().map(|c| vars::substitute(c, vars)).collect())
                    .transpose()?,
            },
            Expect::Any(alts) => Expect::Any(
                alts.iter()
                    .map(|a| a.substitute(vars))
                    .collect::<Result<_, _>>()?,
            ),
            other => other.clone(),
        })
    }

    /// The expectation as JSON, as a scenario file would write it.
    pub fn to_json(&self) -> Value {
        match self {
            Expect::Ok {
                task,
                tasks,
                corrupt,
            } => {
                let mut m = Map::new();
                m.insert("ok".into(), Value::Bool(true));
                if let Some(t) = task {
                    m.insert("task".into(), t.clone());
                }
                if let Some(ts) = tasks {
                    m.insert("tasks".into(), Value::Array(ts.clone()));
                }
                if let Some(cs) = corrupt {
                    m.insert("corrupt".into(), Value::Array(cs.clone()));
                }
                Value::Object(m)
            }
            Expect::Error(k) => json!({"error": k.as_str()}),
            Expect::Any(alts) => {
                json!({"any": alts.iter().map(Expect::to_json).collect::<Vec<_>>()})
            }
            Expect::Anything => json!("anything"),
        }
    }

    /// Judges a raw answer (already known to be protocol-valid).
    pub fn judge(&self, answer: &Value) -> Result<(), String> {
        let ok = answer.get("ok") == Some(&Value::Bool(true));
        match self {
            Expect::Anything => Ok(()),
            Expect::Error(kind) => {
                if ok {
                    return Err(format!("expected error {kind}, got a success"));
                }
                let got = answer
                    .pointer("/error/kind")
                    .and_then(Value::as_str)
                    .unwrap_or("?");
                if got == kind.as_str() {
                    Ok(())
                } else {
                    Err(format!("expected error {kind}, got error {got}"))
                }
            }
            Expect::Ok {
                task,
                tasks,
                corrupt,
            } => {
                if !ok {
                    let got = answer
                        .pointer("/error/kind")
                        .and_then(Value::as_str)
                        .unwrap_or("?");
                    return Err(format!("expected a success, got error {got}"));
                }
                if let Some(t) = task {
                    let actual = answer.get("task").unwrap_or(&Value::Null);
                    match_task(t, actual).map_err(|e| format!("task.{e}"))?;
                }
                if let Some(ts) = tasks {
                    let actual = match answer.get("tasks") {
                        Some(Value::Array(a)) => a.as_slice(),
                        _ => &[],
                    };
                    if actual.len() != ts.len() {
                        return Err(format!(
                            "tasks: expected {} tasks, got {} (ids {})",
                            ts.len(),
                            actual.len(),
                            ids_of(actual)
                        ));
                    }
                    for (i, (e, a)) in ts.iter().zip(actual).enumerate() {
                        match_task(e, a).map_err(|m| format!("tasks[{i}].{m}"))?;
                    }
                }
                if let Some(cs) = corrupt {
                    let want: BTreeSet<String> = cs.iter().map(text_of).collect();
                    let got: BTreeSet<String> = match answer.get("corrupt") {
                        Some(Value::Array(a)) => a.iter().map(text_of).collect(),
                        _ => BTreeSet::new(),
                    };
                    if want != got {
                        return Err(format!(
                            "corrupt: expected {}, got {}",
                            set_text(&want),
                            set_text(&got)
                        ));
                    }
                }
                Ok(())
            }
            Expect::Any(alts) => {
                let mut reasons = Vec::new();
                for a in alts {
                    match a.judge(answer) {
                        Ok(()) => return Ok(()),
                        Err(r) => reasons.push(r),
                    }
                }
                Err(format!(
                    "none of the allowed outcomes: {}",
                    reasons.join("; ")
                ))
            }
        }
    }
}

fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn set_text(s: &BTreeSet<String>) -> String {
    let items: Vec<String> = s.iter().map(|x| format!("{x:?}")).collect();
    format!("[{}]", items.join(", "))
}

fn ids_of(tasks: &[Value]) -> String {
    let ids: Vec<String> = tasks
        .iter()
        .map(|t| t.get("id").map(text_of).unwrap_or_else(|| "?".into()))
        .collect();
    format!("[{}]", ids.join(", "))
}

/// Normalizes an optional field: absent, `null`, `""` and `{}` become `null`.
fn unset_to_null(v: Option<&Value>) -> Value {
    match v {
        None | Some(Value::Null) => Value::Null,
        Some(Value::String(s)) if s.is_empty() => Value::Null,
        Some(Value::Object(m)) if m.is_empty() => Value::Null,
        Some(other) => other.clone(),
    }
}

/// An edge field as a set of id texts; absent or `null` is empty.
fn edge_set(v: Option<&Value>) -> Option<BTreeSet<String>> {
    match v {
        None | Some(Value::Null) => Some(BTreeSet::new()),
        Some(Value::Array(items)) => Some(items.iter().map(text_of).collect()),
        Some(_) => None,
    }
}

/// Matches one task partially: every field `expected` names must agree with `actual`.
/// Fields outside SPEC §1 (a store's own, kept under S16) compare exactly, `null` meaning
/// absent. The error starts with the field name.
pub fn match_task(expected: &Value, actual: &Value) -> Result<(), String> {
    let Some(exp) = expected.as_object() else {
        return Err(format!(": expected {expected} is not an object"));
    };
    let Some(act) = actual.as_object() else {
        return Err(format!(": expected a task object, got {actual}"));
    };
    for (k, e) in exp {
        let a = act.get(k.as_str());
        let same = if EDGES.contains(&k.as_str()) {
            match (edge_set(Some(e)), edge_set(a)) {
                (Some(x), Some(y)) => x == y,
                _ => false,
            }
        } else if OPTIONAL.contains(&k.as_str()) {
            unset_to_null(Some(e)) == unset_to_null(a)
        } else {
            e == a.unwrap_or(&Value::Null)
        };
        if !same {
            let shown = a.map_or("nothing".to_string(), Value::to_string);
            return Err(format!("{k}: expected {e}, got {shown}"));
        }
    }
    Ok(())
}

impl Expect {
    /// The observation of a request step (for `record` and recorded profiles): `None` when
    /// the answer meets this `strict` expectation (placeholders filled) or when it judges
    /// nothing; otherwise what the answer showed of the fields it looks at
    /// ([`taskproof_profile::observe::unmet`]).
    pub fn observe(&self, answer: &Value) -> Option<Value> {
        if matches!(self, Expect::Anything) || self.judge(answer).is_ok() {
            return None;
        }
        Some(observe::unmet(&self.looked(), answer))
    }

    /// The fields this expectation looks at in a success.
    fn looked(&self) -> Looked {
        let mut out = Looked::default();
        self.look(&mut out);
        out
    }

    fn look(&self, out: &mut Looked) {
        match self {
            Expect::Ok {
                task,
                tasks,
                corrupt,
            } => {
                if let Some(Value::Object(m)) = task {
                    out.task.extend(m.keys().cloned());
                }
                if let Some(ts) = tasks {
                    let fields = out.tasks.get_or_insert_with(BTreeSet::new);
                    for t in ts {
                        if let Value::Object(m) = t {
                            fields.extend(m.keys().cloned());
                        }
                    }
                }
                out.corrupt |= corrupt.is_some();
            }
            Expect::Any(alts) => alts.iter().for_each(|a| a.look(out)),
            Expect::Error(_) | Expect::Anything => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task() -> Value {
        json!({"id": "2", "subject": "s", "description": "", "status": "pending",
               "blocks": ["3", "10"], "blockedBy": [], "metadata": {"a": 1, "b": [true]}})
    }

    #[test]
    fn edges_compare_as_sets_and_unset_fields_agree() {
        let e = json!({"blocks": ["10", "3"], "blockedBy": null, "owner": null,
                       "activeForm": "", "description": null, "metadata": {"b": [true], "a": 1}});
        assert_eq!(match_task(&e, &task()), Ok(()));
    }

    #[test]
    fn a_mismatch_names_the_field() {
        let e = json!({"blocks": ["3"]});
        let err = match_task(&e, &task()).unwrap_err();
        assert!(err.starts_with("blocks: expected"), "{err}");
        let err = match_task(&json!({"owner": "w"}), &task()).unwrap_err();
        assert!(err.starts_with("owner:"), "{err}");
        // A field the store does not know must be there, exactly.
        let err = match_task(&json!({"x-color": "red"}), &task()).unwrap_err();
        assert!(err.contains("got nothing"), "{err}");
    }

    #[test]
    fn outcomes_are_judged() {
        let ok = json!({"ok": true, "task": task()});
        let err = json!({"ok": false, "error": {"kind": "cycle", "message": "m"}});
        assert!(Expect::Error(ErrorKind::Cycle).judge(&err).is_ok());
        assert!(Expect::Error(ErrorKind::Cycle).judge(&ok).is_err());
        let want_ok = Expect::Ok {
            task: Some(json!({"id": "2"})),
            tasks: None,
            corrupt: None,
        };
        assert!(want_ok.judge(&ok).is_ok());
        assert_eq!(
            want_ok.judge(&err).unwrap_err(),
            "expected a success, got error cycle"
        );
        let any = Expect::Any(vec![Expect::Error(ErrorKind::Dangling), want_ok]);
        assert!(any.judge(&ok).is_ok());
        assert!(any.judge(&err).is_err());
    }

    #[test]
    fn listings_match_in_order_and_corrupt_as_a_set() {
        let answer = json!({"ok": true, "tasks": [{"id": "1"}, {"id": "2"}],
                            "corrupt": ["b.json", "a.json"]});
        let good = Expect::Ok {
            task: None,
            tasks: Some(vec![json!({"id": "1"}), json!({"id": "2"})]),
            corrupt: Some(vec![json!("a.json"), json!("b.json")]),
        };
        assert!(good.judge(&answer).is_ok());
        let reordered = Expect::Ok {
            task: None,
            tasks: Some(vec![json!({"id": "2"}), json!({"id": "1"})]),
            corrupt: None,
        };
        assert!(reordered.judge(&answer).is_err());
        let short = Expect::Ok {
            task: None,
            tasks: Some(vec![json!({"id": "1"})]),
            corrupt: None,
        };
        assert!(
            short
                .judge(&answer)
                .unwrap_err()
                .contains("expected 1 tasks, got 2")
        );
    }

    #[test]
    fn a_request_that_meets_strict_has_no_observation() {
        let e = Expect::Error(ErrorKind::Cycle);
        let err = json!({"ok": false, "error": {"kind": "cycle", "message": "m"}});
        assert_eq!(e.observe(&err), None);
        let ok = json!({"ok": true, "task": {"id": "2", "blockedBy": ["1"]}});
        assert_eq!(e.observe(&ok), Some(json!({"ok": true})));
    }

    #[test]
    fn a_success_shows_only_the_fields_looked_at_normalized() {
        let e = Expect::Ok {
            task: Some(json!({"blockedBy": [], "owner": null})),
            tasks: None,
            corrupt: None,
        };
        let ans = json!({"ok": true, "task": {"id": "2", "subject": "x", "blockedBy": ["10", "9"], "owner": ""}});
        assert_eq!(
            e.observe(&ans),
            Some(json!({"ok": true, "task": {"blockedBy": ["9", "10"], "owner": null}}))
        );
        let err = json!({"ok": false, "error": {"kind": "not_found", "message": "m"}});
        assert_eq!(e.observe(&err), Some(json!({"error": "not_found"})));
    }
}
