//! The oracle of the differential fuzzer: the profile's in-memory [`StoreOracle`] (`profile`'s
//! oracle), plus what the
//! model cannot know because it has no files: task files that another program made
//! unreadable or replaced by a symbolic link (S15, S17), and unknown top-level fields another
//! program added (S16).
//!
//! The fuzzer keeps those foreign writes simple enough to predict exactly. Garbage and links
//! only ever replace the file of a *deleted* task: such an id is never handed out again (S1)
//! and no edge names it (S10), so the model, which answers `not_found` for it, only needs
//! that answer translated: `corrupt` for `get`, `update` and `claim`, success for `delete`
//! (which removes the file), a `corrupt` entry in `list`, and `corrupt` instead of
//! `dangling` when an edge addition names it. Extra fields are added to a live task's file
//! as the model holds it, and must then appear on that task in every answer until it is
//! deleted.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use taskproof_core::protocol::{ErrorKind, Failure, Layout, Request, Response};
use taskproof_core::task::{ListName, Task, TaskId};
use taskproof_profile::Profile;
use taskproof_profile::oracle::Oracle as StoreOracle;

/// How a deleted task's file was made unreadable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Damage {
    Garbage,
    Symlink,
}

/// The model and the foreign files.
#[derive(Debug, Clone)]
pub struct FuzzOracle {
    pub model: StoreOracle,
    pub corrupt: BTreeMap<(ListName, TaskId), Damage>,
    pub extras: BTreeMap<(ListName, TaskId), Map<String, Value>>,
}

impl FuzzOracle {
    /// `None` when the profile has no model.
    pub fn new(profile: Profile) -> Option<FuzzOracle> {
        Some(FuzzOracle {
            model: StoreOracle::new(profile)?,
            corrupt: BTreeMap::new(),
            extras: BTreeMap::new(),
        })
    }

    /// The ids of `list` as the model holds them.
    pub fn live(&self, list: &ListName) -> BTreeSet<TaskId> {
        self.model
            .list_state(list)
            .map(|s| s.tasks.keys().copied().collect())
            .unwrap_or_default()
    }

    /// The task as the target should hold it, extras included.
    pub fn task(&self, list: &ListName, id: TaskId) -> Option<Task> {
        let mut t = self.model.list_state(list)?.tasks.get(&id)?.clone();
        if let Some(x) = self.extras.get(&(list.clone(), id)) {
            t.extra = x.clone();
        }
        Some(t)
    }

    /// The expected answer to a request given as JSON, applied to the model when it succeeds.
    pub fn handle_value(&mut self, v: &Value) -> Response {
        match Request::from_json(v) {
            Ok(r) => self.handle(&r),
            Err(e) => Response::Error(e.into()),
        }
    }

    pub fn handle(&mut self, req: &Request) -> Response {
        let Some(list) = req.list().cloned() else {
            return self.model.handle(req);
        };
        let primary = match req {
            Request::Get { id, .. }
            | Request::Update { id, .. }
            | Request::Delete { id, .. }
            | Request::Claim { id, .. } => Some(*id),
            _ => None,
        };
        let key = |id: TaskId| (list.clone(), id);
        let mut resp = self.model.handle(req);
        if let Some(id) = primary
            && let Some(damage) = self.corrupt.get(&key(id)).copied()
            && resp.error_kind() == Some(ErrorKind::NotFound)
        {
            return if matches!(req, Request::Delete { .. }) {
                self.corrupt.remove(&key(id));
                Response::Done
            } else {
                Response::Error(Failure::new(
                    ErrorKind::Corrupt,
                    format!("task {id} cannot be read ({damage:?})"),
                ))
            };
        }
        if resp.error_kind() == Some(ErrorKind::Dangling) {
            let live = self.live(&list);
            // The ids the request adds edges to, in the order they are checked.
            let (blocked_by, blocks): (&[TaskId], &[TaskId]) = match req {
                Request::Create { task, .. } => (&task.blocked_by, &task.blocks),
                Request::Update { patch, .. } => (&patch.add_blocked_by, &patch.add_blocks),
                _ => (&[], &[]),
            };
            if let Some(&first) = blocked_by.iter().chain(blocks).find(|i| !live.contains(i))
                && self.corrupt.contains_key(&key(first))
            {
                return Response::error(ErrorKind::Corrupt, format!("task {first} cannot be read"));
            }
        }
        if let (Request::Delete { id, .. }, Response::Done) = (req, &resp) {
            self.extras.remove(&key(*id));
        }
        match &mut resp {
            Response::Task(t) => {
                if let Some(x) = self.extras.get(&key(t.id)) {
                    t.extra = x.clone();
                }
            }
            Response::Tasks { tasks, corrupt } => {
                for t in tasks.iter_mut() {
                    if let Some(x) = self.extras.get(&key(t.id)) {
                        t.extra = x.clone();
                    }
                }
                corrupt.extend(
                    self.corrupt
                        .keys()
                        .filter(|(l, _)| *l == list)
                        .filter_map(|(_, id)| Layout::ClaudeCode.file_name(*id)),
                );
            }
            _ => {}
        }
        resp
    }
}

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

    fn send(o: &mut FuzzOracle, v: Value) -> Response {
        o.handle_value(&v)
    }

    #[test]
    fn a_damaged_deleted_task_reads_as_corrupt_and_delete_removes_it() {
        let mut o = FuzzOracle::new(Profile::Strict).unwrap();
        send(
            &mut o,
            json!({"op":"create","list":"l","task":{"subject":"a"}}),
        );
        send(
            &mut o,
            json!({"op":"create","list":"l","task":{"subject":"b"}}),
        );
        send(&mut o, json!({"op":"delete","list":"l","id":"1"}));
        let l: ListName = "l".parse().unwrap();
        o.corrupt.insert((l, TaskId(1)), Damage::Garbage);
        let get = send(&mut o, json!({"op":"get","list":"l","id":"1"}));
        assert_eq!(get.error_kind(), Some(ErrorKind::Corrupt));
        let add = send(
            &mut o,
            json!({"op":"update","list":"l","id":"2","patch":{"addBlockedBy":["1"]}}),
        );
        assert_eq!(add.error_kind(), Some(ErrorKind::Corrupt));
        match send(&mut o, json!({"op":"list","list":"l"})) {
            Response::Tasks { corrupt, .. } => assert_eq!(corrupt, vec!["1.json".to_string()]),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            send(&mut o, json!({"op":"delete","list":"l","id":"1"})),
            Response::Done
        );
        let get = send(&mut o, json!({"op":"get","list":"l","id":"1"}));
        assert_eq!(get.error_kind(), Some(ErrorKind::NotFound));
    }

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
