//! The oracle: a plain in-memory model of a task store that the file-backed stores are
//! checked against (model-based tests, the differential fuzzer).
//!
//! The model answers the same decoded [`Request`]s as a [`taskproof_store::TaskStore`] with the
//! same [`Response`]s: the same error kinds, found in the same order of checks (SPEC §3);
//! only the messages differ. It is written to be obviously correct rather than fast: every
//! request works on a copy of one list's state and the copy replaces the original only when
//! the request succeeds, which is what "a failed request changes nothing" means. It shares
//! nothing with the stores beyond the wire types and the metadata limits, so a bug in the
//! store's edge, status or merge logic shows up as a difference.
//!
//! Two profiles are modelled: `strict` (SPEC §3, what [`taskproof_store::StrictStore`] does) and
//! `cc-2.1.17` (SPEC §4, what [`taskproof_store::NaiveStore`] does when it runs alone). The model
//! knows no files, so it has nothing to say about corrupt files, symbolic links, crashes or
//! concurrency; those are tested against the stores directly.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use crate::Profile;
use taskproof_core::protocol::{
    ErrorKind, Failure, Feature, Hello, Layout, OpResult, PROTOCOL_VERSION, Request, Response,
};
use taskproof_core::task::{Change, ListName, NewTask, Patch, Status, Task, TaskId, json_depth};
use taskproof_store::{MAX_METADATA_BYTES, MAX_METADATA_DEPTH};

/// The state of one list: its tasks by id, and the highest id ever assigned in it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListState {
    pub tasks: BTreeMap<TaskId, Task>,
    /// The highest id ever assigned, deleted tasks included (S1); 0 before the first create.
    pub highwatermark: u64,
}

/// The model: every list that was ever written, by name.
#[derive(Debug, Clone, PartialEq)]
pub struct Oracle {
    profile: Profile,
    lists: BTreeMap<ListName, ListState>,
}

fn fail<T>(kind: ErrorKind, message: impl Into<String>) -> OpResult<T> {
    Err(Failure::new(kind, message))
}

impl Oracle {
    /// An empty model of the `strict` profile.
    pub fn strict() -> Oracle {
        Oracle {
            profile: Profile::Strict,
            lists: BTreeMap::new(),
        }
    }

    /// An empty model of the `cc-2.1.17` profile, as one process sees it (no races).
    pub fn cc_2_1_17() -> Oracle {
        Oracle {
            profile: Profile::Cc2117,
            lists: BTreeMap::new(),
        }
    }

    /// An empty model of `profile`; `None` for a profile that is not modelled (`s07`).
    pub fn new(profile: Profile) -> Option<Oracle> {
        match profile {
            Profile::Strict => Some(Oracle::strict()),
            Profile::Cc2117 => Some(Oracle::cc_2_1_17()),
            Profile::S07 => None,
        }
    }

    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// The state of `list`; `None` when it was never written.
    pub fn list_state(&self, list: &ListName) -> Option<&ListState> {
        self.lists.get(list)
    }

    /// Every list ever written.
    pub fn lists(&self) -> impl Iterator<Item = (&ListName, &ListState)> {
        self.lists.iter()
    }

    /// The tasks of `list` in ascending id order, as `list` returns them.
    pub fn tasks(&self, list: &ListName) -> Vec<Task> {
        self.lists
            .get(list)
            .map(|s| s.tasks.values().cloned().collect())
            .unwrap_or_default()
    }

    /// Answers a request given as JSON: a malformed one is `invalid`, as for a store.
    pub fn handle_value(&mut self, request: &Value) -> Response {
        match Request::from_json(request) {
            Ok(r) => self.handle(&r),
            Err(e) => Response::Error(e.into()),
        }
    }

    /// Answers one decoded request and applies it when it succeeds.
    pub fn handle(&mut self, request: &Request) -> Response {
        let list = match request.list() {
            Some(l) => l.clone(),
            None => {
                return Response::Hello(Hello {
                    protocol: PROTOCOL_VERSION,
                    name: "taskproof-model".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                    layout: Layout::Opaque,
                    features: Feature::OF_A_STORE.into_iter().collect(),
                    mapping: Default::default(),
                });
            }
        };
        // Work on a copy; it replaces the list only if the request succeeds.
        let mut state = self.lists.get(&list).cloned().unwrap_or_default();
        let existed = self.lists.contains_key(&list);
        let strict = self.profile == Profile::Strict;
        let answer = match request {
            Request::Hello => unreachable!("hello has no list"),
            Request::Create { task, .. } if strict => strict_create(&mut state, task),
            Request::Create { task, .. } => naive_create(&mut state, task),
            Request::Get { id, .. } => get(&state, *id).map(Response::Task),
            Request::Update { id, patch, .. } if strict => {
                strict_update(&mut state, *id, patch).map(Response::Task)
            }
            Request::Update { id, patch, .. } => {
                naive_update(&mut state, *id, patch).map(Response::Task)
            }
            Request::Delete { id, .. } => delete(&mut state, *id, strict).map(|()| Response::Done),
            Request::List { .. } => Ok(Response::Tasks {
                tasks: state.tasks.values().cloned().collect(),
                corrupt: Vec::new(),
            }),
            Request::Claim { id, owner, .. } => {
                claim(&mut state, *id, owner, strict).map(Response::Task)
            }
        };
        match answer {
            Ok(response) => {
                // Reads of a list that was never written create nothing.
                if existed || matches!(request, Request::Create { .. }) {
                    self.lists.insert(list, state);
                }
                response
            }
            Err(f) => Response::Error(f),
        }
    }
}

// ---- checks shared by the profiles ----

fn not_found(id: TaskId) -> Failure {
    Failure::new(ErrorKind::NotFound, format!("no task {id}"))
}

fn get(state: &ListState, id: TaskId) -> OpResult<Task> {
    state.tasks.get(&id).cloned().ok_or_else(|| not_found(id))
}

/// S12: the strict store's limits on metadata, checked as part of the request's form.
fn check_metadata(md: &Map<String, Value>) -> OpResult<()> {
    let v = Value::Object(md.clone());
    if json_depth(&v) > MAX_METADATA_DEPTH {
        return fail(ErrorKind::Invalid, "metadata nested too deep");
    }
    if serde_json::to_vec(&v).map_or(usize::MAX, |b| b.len()) > MAX_METADATA_BYTES {
        return fail(ErrorKind::Invalid, "metadata too large");
    }
    Ok(())
}

/// Merges `patch` into `stored` key by key; `null` removes a key; an empty result is unset.
fn merge(
    stored: Option<Map<String, Value>>,
    patch: &Map<String, Value>,
) -> Option<Map<String, Value>> {
    let mut out = stored.unwrap_or_default();
    for (k, v) in patch {
        if v.is_null() {
            out.remove(k);
        } else {
            out.insert(k.clone(), v.clone());
        }
    }
    (!out.is_empty()).then_some(out)
}

/// Applies the plain fields and metadata of a patch (the first part of SPEC §3's order).
fn apply_fields(task: &mut Task, patch: &Patch) {
    if let Some(s) = &patch.subject {
        task.subject = s.clone();
    }
    if let Some(d) = &patch.description {
        task.description = d.clone();
    }
    for (slot, change) in [
        (&mut task.active_form, &patch.active_form),
        (&mut task.owner, &patch.owner),
    ] {
        match change {
            Change::Keep => {}
            Change::Set(v) => *slot = Some(v.clone()),
            Change::Remove => *slot = None,
        }
    }
    match &patch.metadata {
        Change::Keep => {}
        Change::Set(m) => task.metadata = merge(task.metadata.take(), m),
        Change::Remove => task.metadata = None,
    }
}

fn new_task(id: TaskId, new: &NewTask) -> Task {
    let mut t = Task::new(id, new.subject.clone());
    t.description = new.description.clone();
    t.active_form = new.active_form.clone();
    t.owner = new.owner.clone();
    t.metadata = new.metadata.clone();
    t
}

/// The next id: one past the watermark, and past any task that exists (S1).
fn next_id(state: &ListState) -> TaskId {
    let mut next = state.highwatermark + 1;
    while state.tasks.contains_key(&TaskId(next)) {
        next += 1;
    }
    TaskId(next)
}

fn delete(state: &mut ListState, id: TaskId, strict: bool) -> OpResult<()> {
    let task = state.tasks.remove(&id).ok_or_else(|| not_found(id))?;
    if strict {
        // S10: the id leaves every neighbour's edges.
        for n in task.blocks.union(&task.blocked_by) {
            if let Some(other) = state.tasks.get_mut(n) {
                other.blocks.remove(&id);
                other.blocked_by.remove(&id);
            }
        }
    }
    Ok(())
}

fn claim(state: &mut ListState, id: TaskId, owner: &str, strict: bool) -> OpResult<Task> {
    let task = get(state, id)?;
    if task.owner.is_some() || task.status != Status::Pending {
        return fail(
            ErrorKind::Conflict,
            format!("task {id} is owned or not pending"),
        );
    }
    if strict && !unfinished_blockers(state, &task).is_empty() {
        return fail(
            ErrorKind::Blocked,
            format!("task {id} has unfinished blockers"),
        );
    }
    let t = state.tasks.get_mut(&id).expect("checked above");
    t.status = Status::InProgress;
    t.owner = Some(owner.to_string());
    Ok(t.clone())
}

// ---- strict (SPEC §3) ----

/// Blockers of `task` that exist and are not completed (a missing blocker does not block).
fn unfinished_blockers(state: &ListState, task: &Task) -> Vec<TaskId> {
    task.blocked_by
        .iter()
        .filter(|b| {
            state
                .tasks
                .get(b)
                .is_some_and(|t| t.status != Status::Completed)
        })
        .copied()
        .collect()
}

/// Whether `goal` can be reached from `start` along "blocks" edges, read from both sides.
fn reaches(state: &ListState, start: TaskId, goal: TaskId) -> bool {
    let mut seen = BTreeSet::from([start]);
    let mut todo = vec![start];
    while let Some(x) = todo.pop() {
        if x == goal {
            return true;
        }
        let mut next: Vec<TaskId> = Vec::new();
        if let Some(t) = state.tasks.get(&x) {
            next.extend(&t.blocks);
        }
        next.extend(
            state
                .tasks
                .values()
                .filter(|t| t.blocked_by.contains(&x))
                .map(|t| t.id),
        );
        for y in next {
            if seen.insert(y) {
                todo.push(y);
            }
        }
    }
    false
}

/// Adds "`from` blocks `to`" for a request about `me`: S6, then S5, then S7, then S8.
fn add_edge(state: &mut ListState, from: TaskId, to: TaskId, me: TaskId) -> OpResult<()> {
    let other = if from == me { to } else { from };
    if !state.tasks.contains_key(&other) {
        return fail(ErrorKind::Dangling, format!("task {other} does not exist"));
    }
    let (f, t) = (&state.tasks[&from], &state.tasks[&to]);
    if f.blocks.contains(&to) && t.blocked_by.contains(&from) {
        return Ok(());
    }
    if t.status == Status::Completed && f.status != Status::Completed {
        return fail(
            ErrorKind::Blocked,
            format!("completed task {to} cannot gain unfinished blocker {from}"),
        );
    }
    if from == to || reaches(state, to, from) {
        return fail(
            ErrorKind::Cycle,
            format!("{from} blocks {to} closes a cycle"),
        );
    }
    state
        .tasks
        .get_mut(&from)
        .expect("exists")
        .blocks
        .insert(to);
    state
        .tasks
        .get_mut(&to)
        .expect("exists")
        .blocked_by
        .insert(from);
    Ok(())
}

/// Removes "`from` blocks `to`" from whichever sides exist.
fn remove_edge(state: &mut ListState, from: TaskId, to: TaskId) {
    if let Some(f) = state.tasks.get_mut(&from) {
        f.blocks.remove(&to);
    }
    if let Some(t) = state.tasks.get_mut(&to) {
        t.blocked_by.remove(&from);
    }
}

/// S3, S4, S5.
fn change_status(state: &mut ListState, id: TaskId, status: &Status) -> OpResult<()> {
    if !status.is_known() {
        return fail(ErrorKind::Invalid, format!("unknown status {status}"));
    }
    let task = get(state, id)?;
    if &task.status == status {
        return Ok(());
    }
    if task.status == Status::Completed {
        return fail(ErrorKind::Transition, "completed is final");
    }
    if *status != Status::Pending && !unfinished_blockers(state, &task).is_empty() {
        return fail(
            ErrorKind::Blocked,
            format!("task {id} has unfinished blockers"),
        );
    }
    state.tasks.get_mut(&id).expect("exists").status = status.clone();
    Ok(())
}

fn strict_create(state: &mut ListState, new: &NewTask) -> OpResult<Response> {
    if let Some(md) = &new.metadata {
        check_metadata(md)?;
    }
    let id = next_id(state);
    state.tasks.insert(id, new_task(id, new));
    // Edges are checked id by id, blockedBy first. The id being assigned names no task that
    // existed when the request was made, so naming it is `dangling`, not a self-cycle.
    for (&x, forward) in new
        .blocked_by
        .iter()
        .map(|x| (x, false))
        .chain(new.blocks.iter().map(|x| (x, true)))
    {
        if x == id {
            return fail(ErrorKind::Dangling, format!("task {x} does not exist"));
        }
        if forward {
            add_edge(state, id, x, id)?;
        } else {
            add_edge(state, x, id, id)?;
        }
    }
    state.highwatermark = id.get();
    Ok(Response::Task(state.tasks[&id].clone()))
}

fn strict_update(state: &mut ListState, id: TaskId, patch: &Patch) -> OpResult<Task> {
    if let Change::Set(md) = &patch.metadata {
        check_metadata(md)?;
    }
    let mut task = get(state, id)?;
    apply_fields(&mut task, patch);
    if let Some(md) = &task.metadata {
        check_metadata(md)?;
    }
    state.tasks.insert(id, task);
    for &x in &patch.remove_blocked_by {
        remove_edge(state, x, id);
    }
    for &x in &patch.remove_blocks {
        remove_edge(state, id, x);
    }
    if let Some(s) = &patch.status {
        change_status(state, id, s)?;
    }
    for &x in &patch.add_blocked_by {
        add_edge(state, x, id, id)?;
    }
    for &x in &patch.add_blocks {
        add_edge(state, id, x, id)?;
    }
    get(state, id)
}

// ---- cc-2.1.17 (SPEC §4) as one process sees it ----

fn naive_create(state: &mut ListState, new: &NewTask) -> OpResult<Response> {
    let highest = state.tasks.keys().next_back().map_or(0, |i| i.get());
    let id = TaskId(state.highwatermark.max(highest) + 1);
    let mut task = new_task(id, new);
    // Edges are kept as given, on this side only, unchecked.
    task.blocked_by = new.blocked_by.iter().copied().collect();
    task.blocks = new.blocks.iter().copied().collect();
    state.tasks.insert(id, task.clone());
    state.highwatermark = id.get();
    Ok(Response::Task(task))
}

fn naive_update(state: &mut ListState, id: TaskId, patch: &Patch) -> OpResult<Task> {
    let mut task = get(state, id)?;
    apply_fields(&mut task, patch);
    if let Some(s) = &patch.status {
        task.status = s.clone();
    }
    for x in &patch.remove_blocked_by {
        task.blocked_by.remove(x);
    }
    for x in &patch.remove_blocks {
        task.blocks.remove(x);
    }
    task.blocked_by.extend(patch.add_blocked_by.iter().copied());
    task.blocks.extend(patch.add_blocks.iter().copied());
    state.tasks.insert(id, task.clone());
    Ok(task)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn req(v: Value) -> Request {
        Request::from_json(&v).unwrap()
    }

    fn kind(r: &Response) -> Option<ErrorKind> {
        r.error_kind()
    }

    /// Tasks 1 ("a") and 2 ("b", blocked by 1) in list `l`.
    fn blocked_pair(m: &mut Oracle) {
        m.handle(&req(
            json!({"op":"create","list":"l","task":{"subject":"a"}}),
        ));
        m.handle(&req(
            json!({"op":"create","list":"l","task":{"subject":"b","blockedBy":["1"]}}),
        ));
    }

    #[test]
    fn ids_are_never_reused_after_a_delete() {
        let mut m = Oracle::strict();
        for _ in 0..2 {
            m.handle(&req(
                json!({"op":"create","list":"l","task":{"subject":"a"}}),
            ));
        }
        m.handle(&req(json!({"op":"delete","list":"l","id":"2"})));
        let r = m.handle(&req(
            json!({"op":"create","list":"l","task":{"subject":"b"}}),
        ));
        let Response::Task(t) = r else {
            panic!("{r:?}")
        };
        assert_eq!(t.id, TaskId(3));
    }

    #[test]
    fn a_failed_request_changes_nothing() {
        let mut m = Oracle::strict();
        m.handle(&req(
            json!({"op":"create","list":"l","task":{"subject":"a"}}),
        ));
        let before = m.clone();
        // The field change is undone when the cycle check fails later in the same patch.
        let r = m.handle(&req(json!({"op":"update","list":"l","id":"1",
            "patch":{"subject":"changed","addBlocks":["1"]}})));
        assert_eq!(kind(&r), Some(ErrorKind::Cycle));
        assert_eq!(m, before);
        // A failed create does not use up an id.
        let r = m.handle(&req(
            json!({"op":"create","list":"l","task":{"subject":"b","blocks":["9"]}}),
        ));
        assert_eq!(kind(&r), Some(ErrorKind::Dangling));
        assert_eq!(m, before);
    }

    #[test]
    fn strict_checks_come_in_spec_order() {
        let mut m = Oracle::strict();
        blocked_pair(&mut m);
        // Status before edge additions: blocked, although the edge would dangle.
        let r = m.handle(&req(json!({"op":"update","list":"l","id":"2",
            "patch":{"status":"completed","addBlocks":["9"]}})));
        assert_eq!(kind(&r), Some(ErrorKind::Blocked));
        // Edge removals before status: removing the blocker unblocks.
        let r = m.handle(&req(json!({"op":"update","list":"l","id":"2",
            "patch":{"status":"completed","removeBlockedBy":["1"]}})));
        assert!(r.is_ok(), "{r:?}");
        // A completed task never gains an unfinished blocker.
        let r = m.handle(&req(json!({"op":"update","list":"l","id":"2",
            "patch":{"addBlockedBy":["1"]}})));
        assert_eq!(kind(&r), Some(ErrorKind::Blocked));
        let r = m.handle(&req(
            json!({"op":"update","list":"l","id":"2","patch":{"status":"pending"}}),
        ));
        assert_eq!(kind(&r), Some(ErrorKind::Transition));
        let r = m.handle(&req(json!({"op":"get","list":"other","id":"1"})));
        assert_eq!(kind(&r), Some(ErrorKind::NotFound));
        assert!(m.list_state(&"other".parse().unwrap()).is_none());
    }

    #[test]
    fn a_create_checks_its_edges_in_request_order() {
        // Issue 11.4: "3" comes before "1" in `blocks`, so the answer is `dangling`, not the
        // cycle that "1" would close.
        let mut m = Oracle::strict();
        m.handle(&req(
            json!({"op":"create","list":"l","task":{"subject":"a"}}),
        ));
        let r = m.handle(&req(json!({"op":"create","list":"l",
            "task":{"subject":"b","blockedBy":["1"],"blocks":["3","1"]}})));
        assert_eq!(kind(&r), Some(ErrorKind::Dangling));
        let r = m.handle(&req(json!({"op":"create","list":"l",
            "task":{"subject":"b","blockedBy":["1"],"blocks":["1","3"]}})));
        assert_eq!(kind(&r), Some(ErrorKind::Cycle));
        let r = m.handle(&req(json!({"op":"create","list":"l",
            "task":{"subject":"b","blockedBy":["1","9"],"blocks":["1"]}})));
        assert_eq!(kind(&r), Some(ErrorKind::Dangling));
    }

    #[test]
    fn delete_cleans_neighbours_in_strict_only() {
        for (mut m, orphan_kept) in [(Oracle::strict(), false), (Oracle::cc_2_1_17(), true)] {
            blocked_pair(&mut m);
            m.handle(&req(json!({"op":"delete","list":"l","id":"1"})));
            let t = &m.tasks(&"l".parse().unwrap())[0];
            assert_eq!(t.blocked_by.contains(&TaskId(1)), orphan_kept);
        }
    }

    #[test]
    fn claims_are_exclusive_and_respect_blockers() {
        let mut m = Oracle::strict();
        blocked_pair(&mut m);
        let r = m.handle(&req(json!({"op":"claim","list":"l","id":"2","owner":"w"})));
        assert_eq!(kind(&r), Some(ErrorKind::Blocked));
        assert!(
            m.handle(&req(json!({"op":"claim","list":"l","id":"1","owner":"w"})))
                .is_ok()
        );
        let r = m.handle(&req(json!({"op":"claim","list":"l","id":"1","owner":"v"})));
        assert_eq!(kind(&r), Some(ErrorKind::Conflict));
    }
}
