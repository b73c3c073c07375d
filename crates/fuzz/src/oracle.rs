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
#[derive(Debug, Clone, PartialEq)]
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

impl taskproof_race::model::Model for FuzzOracle {
    fn answer(&mut self, request: &Value) -> Response {
        self.handle_value(request)
    }
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
}
