//! How an answer differs from the answer a model gave, by SPEC §1's rules: what the
//! differential fuzzer and the linearizability check of a whole list
//! (`taskproof_race::model`) both compare with.

use std::collections::BTreeSet;

use serde_json::Value;

use taskproof_core::protocol::Response;
use taskproof_core::task::Task;

/// How an answer differs from the expected one, if it does. Answers compare by SPEC §1's
/// rules: success or error kind (messages are free text), tasks field by field with unset
/// optional fields equal and edges as sets (the decoded [`Task`] already normalizes both),
/// metadata exactly with key order aside, `corrupt` as a set.
pub fn differences(expected: &Response, actual: &Response) -> Vec<String> {
    match (expected, actual) {
        (Response::Error(e), Response::Error(a)) => {
            if e.kind == a.kind {
                vec![]
            } else {
                vec![format!("error kind {} instead of {}", a.kind, e.kind)]
            }
        }
        (Response::Hello(_), Response::Hello(_)) | (Response::Done, Response::Done) => vec![],
        (Response::Task(e), Response::Task(a)) => task_differences(e, a),
        (
            Response::Tasks {
                tasks: et,
                corrupt: ec,
            },
            Response::Tasks {
                tasks: at,
                corrupt: ac,
            },
        ) => {
            let mut out = Vec::new();
            let eids: Vec<String> = et.iter().map(|t| t.id.to_string()).collect();
            let aids: Vec<String> = at.iter().map(|t| t.id.to_string()).collect();
            if eids != aids {
                out.push(format!(
                    "listed ids [{}] instead of [{}]",
                    aids.join(", "),
                    eids.join(", ")
                ));
            } else {
                for (e, a) in et.iter().zip(at) {
                    out.extend(task_differences(e, a));
                }
            }
            let ec: BTreeSet<&String> = ec.iter().collect();
            let ac: BTreeSet<&String> = ac.iter().collect();
            if ec != ac {
                out.push(format!("corrupt {ac:?} instead of {ec:?}"));
            }
            out
        }
        (e, a) => vec![format!("{} instead of {}", describe(a), describe(e))],
    }
}

/// A short description of an answer's kind.
pub fn describe(r: &Response) -> String {
    match r {
        Response::Error(f) => format!("error {}", f.kind),
        Response::Hello(_) => "hello".into(),
        Response::Task(t) => format!("task {}", t.id),
        Response::Tasks { tasks, .. } => format!("{} tasks", tasks.len()),
        Response::Done => "ok".into(),
    }
}

/// The names of the fields in which two tasks differ, each with both values.
///
/// The fields of SPEC §1 are judged whatever side has them. A field outside SPEC §1 is
/// judged only when the expected task has it (one another program wrote, S16, which must
/// come back): a store's own extra fields in an answer (Task Master's `tm_priority`) are no
/// divergence, as a scenario's partial task match (`scenario::expect::match_task`) ignores
/// every field its expectation does not name.
fn task_differences(e: &Task, a: &Task) -> Vec<String> {
    let (ej, aj) = (e.to_json(), a.to_json());
    let (eo, ao) = (
        ej.as_object().expect("object"),
        aj.as_object().expect("object"),
    );
    let judged = |k: &&String| {
        taskproof_core::task::TASK_FIELDS.contains(&k.as_str()) || eo.contains_key(*k)
    };
    let keys: BTreeSet<&String> = eo.keys().chain(ao.keys().filter(judged)).collect();
    let mut out = Vec::new();
    for k in keys {
        let (ev, av) = (eo.get(k), ao.get(k));
        let same = match k.as_str() {
            "blocks" => e.blocks == a.blocks,
            "blockedBy" => e.blocked_by == a.blocked_by,
            _ => ev == av,
        };
        if !same {
            let show = |v: Option<&Value>| v.map_or("unset".to_string(), Value::to_string);
            out.push(format!(
                "task {} field {k}: {} instead of {}",
                e.id,
                show(av),
                show(ev)
            ));
        }
    }
    out
}

/// The names of the fields of the differences (for fingerprints and rules): `blocks`,
/// `status`, `ids`, `corrupt`, `kind`, `answer`.
pub fn difference_fields(diffs: &[String]) -> BTreeSet<String> {
    diffs
        .iter()
        .map(|d| {
            if let Some(rest) = d.split(" field ").nth(1) {
                rest.split(':').next().unwrap_or("").to_string()
            } else if d.starts_with("listed ids") {
                "ids".into()
            } else if d.starts_with("corrupt") {
                "corrupt".into()
            } else if d.starts_with("error kind") {
                "kind".into()
            } else {
                "answer".into()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use taskproof_core::protocol::ErrorKind;
    use taskproof_core::task::TaskId;

    /// Issue 11 item 11: Task Master answers with fields of its own (`tm_priority`), which
    /// the fuzzer reported as an S2 divergence. A field SPEC §1 does not define is judged
    /// only when the oracle expects it (a foreign writer's field, S16).
    #[test]
    fn a_stores_own_extra_fields_are_not_a_divergence_but_expected_ones_are_judged() {
        let e = Task::new(TaskId(1), "a");
        let mut a = e.clone();
        a.extra.insert("tm_priority".into(), json!("medium"));
        assert_eq!(
            differences(&Response::Task(e.clone()), &Response::Task(a.clone())),
            Vec::<String>::new()
        );
        let listed = |t: &Task| Response::Tasks {
            tasks: vec![t.clone()],
            corrupt: vec![],
        };
        assert!(differences(&listed(&e), &listed(&a)).is_empty());
        // A field another program wrote must come back, and unchanged.
        let mut foreign = e.clone();
        foreign.extra.insert("x-foreign".into(), json!(1));
        let d = differences(&Response::Task(foreign.clone()), &Response::Task(a.clone()));
        assert_eq!(
            difference_fields(&d),
            BTreeSet::from(["x-foreign".to_string()])
        );
        a.extra.insert("x-foreign".into(), json!(2));
        assert_eq!(
            difference_fields(&differences(&Response::Task(foreign), &Response::Task(a))),
            BTreeSet::from(["x-foreign".to_string()])
        );
    }

    #[test]
    fn differences_follow_the_comparison_rules() {
        let mut a = Task::new(TaskId(1), "a");
        let mut b = a.clone();
        b.blocks.insert(TaskId(2));
        let d = differences(&Response::Task(a.clone()), &Response::Task(b));
        assert_eq!(
            difference_fields(&d),
            BTreeSet::from(["blocks".to_string()])
        );
        a.metadata = Some(serde_json::from_str(r#"{"x":1,"y":2}"#).unwrap());
        let mut c = a.clone();
        c.metadata = Some(serde_json::from_str(r#"{"y":2,"x":1}"#).unwrap());
        assert!(differences(&Response::Task(a), &Response::Task(c)).is_empty());
        let e = differences(
            &Response::error(ErrorKind::Cycle, "x"),
            &Response::error(ErrorKind::Cycle, "y"),
        );
        assert!(e.is_empty());
    }
}
