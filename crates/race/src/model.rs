//! Linearizability of a history of requests against the model of a whole store (the
//! profile's oracle), not one task at a time: what the fuzzer's concurrent cases and a
//! scenario's `linearizable` block are judged by.
//!
//! `race` splits its long histories per task ([`crate::partition`]) so that the search
//! stays small, and so it cannot see what involves two tasks at once: an edge between them,
//! a blocker's status and its dependent's, an id handed out twice. A fuzz case or a
//! scenario's block is a few dozen requests, small enough to search against the model of
//! the whole store: the same search ([`crate::linear`]), with the model's state in place
//! of one task's, and an answer judged by SPEC §1's comparison
//! ([`taskproof_profile::compare`]).

use std::fmt;
use std::hash::{BuildHasher, Hash, Hasher};
use std::time::Duration;

use serde_json::Value;

use crate::linear::{self, Entry, Sequential, Verdict};
use taskproof_core::protocol::Response;
use taskproof_profile::compare::{describe, differences};
use taskproof_profile::oracle::Oracle;

/// A model of a whole store: answers a request given as JSON and changes with it.
pub trait Model: Clone + PartialEq + fmt::Debug {
    fn answer(&mut self, request: &Value) -> Response;
}

impl Model for Oracle {
    fn answer(&mut self, request: &Value) -> Response {
        self.handle_value(request)
    }
}

/// One request of a history and the target's answer to it.
#[derive(Debug, Clone)]
pub struct Sent {
    /// Who sent it (a session's name), for witnesses.
    pub who: String,
    pub request: Value,
    pub answer: Response,
    /// Judge the answer by its kind only (success or the error kind, and a task's id): the
    /// target is reached through something that reads its answers apart from the change (an
    /// `mcp:` mapping that gets a task after updating it), so a whole answer may show
    /// another writer's later change, which is not the store's.
    pub loose: bool,
}

/// Whether `actual` is the answer the model gave, as `sent` is judged.
pub fn explained(sent: &Sent, expected: &Response) -> bool {
    if !sent.loose {
        return differences(expected, &sent.answer).is_empty();
    }
    match (expected, &sent.answer) {
        (Response::Error(e), Response::Error(a)) => e.kind == a.kind,
        (Response::Task(e), Response::Task(a)) => e.id == a.id,
        (Response::Tasks { .. }, Response::Tasks { .. }) => {
            differences(expected, &sent.answer).is_empty()
        }
        (Response::Done, Response::Done) | (Response::Hello(_), Response::Hello(_)) => true,
        _ => false,
    }
}

/// A model's state as the search keeps it: hashed once, when it is made.
#[derive(Clone)]
pub struct State<M> {
    pub model: M,
    hash: u64,
}

impl<M: Model> State<M> {
    pub fn new(model: M) -> State<M> {
        // The model's printed form is complete and ordered (its maps are `BTreeMap`s), so
        // equal states print alike.
        let hash = foldhash::quality::FixedState::with_seed(0x6d6f_6465_6c00)
            .hash_one(format!("{model:?}"));
        State { model, hash }
    }
}

impl<M: PartialEq> PartialEq for State<M> {
    fn eq(&self, other: &State<M>) -> bool {
        self.hash == other.hash && self.model == other.model
    }
}

impl<M: PartialEq> Eq for State<M> {}

impl<M> Hash for State<M> {
    fn hash<H: Hasher>(&self, h: &mut H) {
        h.write_u64(self.hash);
    }
}

/// The sequential specification of a whole store: a request is placed where the model,
/// in that state, answers as the target did.
pub struct WholeStore<M> {
    pub initial: M,
}

impl<M: Model> Sequential for WholeStore<M> {
    type State = State<M>;
    type Op = Sent;

    fn init(&self) -> State<M> {
        State::new(self.initial.clone())
    }

    fn step(&self, state: &State<M>, op: &Sent) -> Option<State<M>> {
        let mut model = state.model.clone();
        let expected = model.answer(&op.request);
        explained(op, &expected).then(|| State::new(model))
    }

    fn explain(&self, state: &State<M>, op: &Sent) -> String {
        let expected = state.model.clone().answer(&op.request);
        let d = differences(&expected, &op.answer);
        format!(
            "{} answered {} where the model answers {}{}",
            op.who,
            describe(&op.answer),
            describe(&expected),
            if d.is_empty() {
                String::new()
            } else {
                format!(" ({})", d.join("; "))
            }
        )
    }
}

/// One request with when it was sent and answered, from a common start.
#[derive(Debug, Clone)]
pub struct Timed {
    pub sent: Sent,
    pub invoke: Duration,
    pub complete: Duration,
}

/// What the search says of a history against the model.
#[derive(Debug, Clone)]
pub enum Judged<M> {
    /// An order explains every answer; the model after it.
    Explained { model: M, steps: u64 },
    /// No order does. `stuck` is the request that could not be placed at the deepest point
    /// the search reached, after `placed` requests; `reason` says what the model answers
    /// there.
    Unexplained {
        stuck: usize,
        placed: usize,
        reason: String,
        steps: u64,
    },
    /// The search's budget ran out: neither.
    Unknown { steps: u64 },
}

/// Searches for an order of `history` (real time respected) in which `initial`, given the
/// requests one at a time, answers each as the target did; at most `budget` steps.
pub fn judge<M: Model>(initial: &M, history: &[Timed], budget: u64) -> Judged<M> {
    let entries: Vec<Entry<Sent>> = history
        .iter()
        .map(|t| Entry {
            op: t.sent.clone(),
            invoke: t.invoke,
            complete: Some(t.complete),
            optional: false,
        })
        .collect();
    let spec = WholeStore {
        initial: initial.clone(),
    };
    match linear::check_to(&spec, &entries, budget) {
        (Verdict::Linearizable { steps }, Some(state)) => Judged::Explained {
            model: state.model,
            steps,
        },
        (
            Verdict::NotLinearizable {
                stuck,
                prefix,
                reason,
                steps,
            },
            _,
        ) => Judged::Unexplained {
            stuck,
            placed: prefix,
            reason,
            steps,
        },
        (Verdict::Unknown { steps }, _) | (Verdict::Linearizable { steps }, None) => {
            Judged::Unknown { steps }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use taskproof_core::protocol::ErrorKind;
    use taskproof_core::task::{Task, TaskId};

    fn at(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    fn timed(who: &str, request: Value, answer: Response, from: u64, to: u64) -> Timed {
        Timed {
            sent: Sent {
                who: who.into(),
                request,
                answer,
                loose: false,
            },
            invoke: at(from),
            complete: at(to),
        }
    }

    fn created(id: u64, subject: &str) -> Response {
        Response::Task(Task::new(TaskId(id), subject))
    }

    fn model_with_one_task() -> Oracle {
        let mut o = Oracle::strict();
        o.answer(&json!({"op": "create", "list": "l", "task": {"subject": "a"}}));
        o
    }

    /// Two creates at once may take their ids in either order; the answers decide which.
    #[test]
    fn concurrent_creates_are_explained_in_either_order() {
        let o = Oracle::strict();
        let h = [
            timed(
                "a",
                json!({"op": "create", "list": "l", "task": {"subject": "x"}}),
                created(2, "x"),
                0,
                10,
            ),
            timed(
                "b",
                json!({"op": "create", "list": "l", "task": {"subject": "y"}}),
                created(1, "y"),
                1,
                9,
            ),
        ];
        match judge(&o, &h, 10_000) {
            Judged::Explained { model, .. } => {
                let l = "l".parse().unwrap();
                assert_eq!(model.tasks(&l).len(), 2);
            }
            other => panic!("{other:?}"),
        }
    }

    /// One id handed to two creates (S1, S19) is explained by no order.
    #[test]
    fn two_creates_given_one_id_are_unexplained() {
        let o = Oracle::strict();
        let h = [
            timed(
                "a",
                json!({"op": "create", "list": "l", "task": {"subject": "x"}}),
                created(1, "x"),
                0,
                10,
            ),
            timed(
                "b",
                json!({"op": "create", "list": "l", "task": {"subject": "y"}}),
                created(1, "y"),
                1,
                9,
            ),
        ];
        assert!(matches!(judge(&o, &h, 10_000), Judged::Unexplained { .. }));
    }

    /// A delete and an update of one task at once: either order explains their answers,
    /// but a listing after both that still holds the task is explained by none (the revival
    /// of issue 53: oh-my-opencode PR #6552).
    #[test]
    fn a_deleted_task_that_comes_back_is_unexplained() {
        let o = model_with_one_task();
        let mut updated = Task::new(TaskId(1), "a");
        updated.description = "d".into();
        let race = [
            timed(
                "a",
                json!({"op": "delete", "list": "l", "id": "1"}),
                Response::Done,
                0,
                10,
            ),
            timed(
                "b",
                json!({"op": "update", "list": "l", "id": "1", "patch": {"description": "d"}}),
                Response::Task(updated.clone()),
                1,
                9,
            ),
        ];
        assert!(matches!(judge(&o, &race, 10_000), Judged::Explained { .. }));
        let mut h = race.to_vec();
        h.push(timed(
            "main",
            json!({"op": "list", "list": "l"}),
            Response::Tasks {
                tasks: vec![updated],
                corrupt: vec![],
            },
            20,
            21,
        ));
        match judge(&o, &h, 10_000) {
            Judged::Unexplained { stuck, reason, .. } => {
                assert_eq!(stuck, 2, "{reason}");
                assert!(reason.contains("main answered 1 tasks"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        // The same listing, empty, is explained.
        h[2].sent.answer = Response::Tasks {
            tasks: vec![],
            corrupt: vec![],
        };
        assert!(matches!(judge(&o, &h, 10_000), Judged::Explained { .. }));
    }

    /// Requests apart in time keep their order: an update answered before a delete was sent
    /// cannot be placed after it.
    #[test]
    fn real_time_order_is_kept() {
        let o = model_with_one_task();
        let h = [
            timed(
                "a",
                json!({"op": "delete", "list": "l", "id": "1"}),
                Response::Done,
                0,
                5,
            ),
            timed(
                "b",
                json!({"op": "get", "list": "l", "id": "1"}),
                created(1, "a"),
                6,
                9,
            ),
        ];
        assert!(matches!(judge(&o, &h, 10_000), Judged::Unexplained { .. }));
        let mut overlapping = h.to_vec();
        overlapping[1].invoke = at(1);
        assert!(matches!(
            judge(&o, &overlapping, 10_000),
            Judged::Explained { .. }
        ));
        // An error answer is judged by its kind.
        overlapping[1].sent.answer = Response::error(ErrorKind::NotFound, "gone");
        assert!(matches!(
            judge(&o, &overlapping, 10_000),
            Judged::Explained { .. }
        ));
    }
}
