//! Synthetic histories for the race checker: the tests of crates/race/tests/checker.rs judge
//! them, and benches/checker.rs (which includes this file) times the checker on them.
//!
//! A simulated linearizable store serves `sessions` concurrent sessions: each request is
//! invoked, takes effect atomically at a random later moment, and is answered later still,
//! so intervals overlap the way a real run's do. Requests set one of 128 metadata keys to a
//! value of their own, or the owner, of one of `tasks` tasks; a share of them is left unanswered, as killed requests are. The history is then
//! judged by the full checker, and timed.

use std::collections::BTreeMap;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde_json::{Map, json};

use taskproof_core::protocol::Request;
use taskproof_core::task::{Change, Patch, Task, TaskId};
use taskproof_race::history::{Completion, History, Operation, TaskView};

/// One synthetic history's shape.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub ops: usize,
    pub tasks: usize,
    pub sessions: usize,
    /// Share of requests left unanswered.
    pub unanswered: f64,
    /// Drop the last acknowledged metadata value of task 1 from the final state: one lost
    /// update, which the search must prove unexplainable.
    pub lose_one: bool,
}

/// Builds a linearizable history of the given shape and the final tasks.
pub fn synthesize(shape: Shape, seed: u64) -> (History, Vec<Task>, Duration) {
    let mut rng = StdRng::seed_from_u64(seed);
    let list: taskproof_core::task::ListName =
        taskproof_race::workload::LIST.parse().expect("valid list");
    let mut tasks: BTreeMap<TaskId, Task> = (1..=shape.tasks as u64)
        .map(|i| (TaskId(i), Task::new(TaskId(i), format!("task {i}"))))
        .collect();
    // Unanswered requests took effect, if at all, before their recorded completion.
    let mut history = History {
        info_bounded: true,
        ..History::default()
    };
    // Plan requests first so every key is interned before answers are viewed.
    let requests: Vec<Request> = (0..shape.ops)
        .map(|k| {
            let id = TaskId(rng.random_range(1..=shape.tasks as u64));
            let patch = if k % 3 == 0 {
                Patch {
                    owner: Change::Set(format!("o{k}")),
                    ..Patch::default()
                }
            } else {
                let mut m = Map::new();
                m.insert(format!("k{}", k % 128), json!(k));
                Patch {
                    metadata: Change::Set(m),
                    ..Patch::default()
                }
            };
            Request::Update {
                list: list.clone(),
                id,
                patch,
            }
        })
        .collect();
    for r in &requests {
        history.intern_request(r);
    }
    // The setup session created every task before the writers started.
    let mut ops = Vec::with_capacity(shape.ops + shape.tasks);
    for t in tasks.values() {
        ops.push(Operation {
            index: 0,
            session: shape.sessions as u32,
            writer: None,
            request: Request::Create {
                list: list.clone(),
                task: taskproof_core::task::NewTask::new(t.subject.clone()),
            },
            invoke: Duration::ZERO,
            completion: Completion::Ok {
                at: Duration::ZERO,
                task: Some(TaskView::new(t, &history.keys)),
            },
        });
    }
    // Each task's answer as the store would give it, kept up to date request by request:
    // building it from the task each time would cost the task's size per request.
    let mut views: BTreeMap<TaskId, TaskView> = tasks
        .iter()
        .map(|(id, t)| (*id, TaskView::new(t, &history.keys)))
        .collect();
    // Each session: (request index, invoke time, applied answer).
    type Flight = (usize, Duration, Option<Option<TaskView>>);
    let mut flights: Vec<Option<Flight>> = vec![None; shape.sessions];
    let mut next = 0usize;
    let mut clock = 0u64;
    while next < shape.ops || flights.iter().any(Option::is_some) {
        clock += 1;
        let now = Duration::from_micros(clock);
        let s = rng.random_range(0..shape.sessions);
        match flights[s].take() {
            None if next < shape.ops => {
                flights[s] = Some((next, now, None));
                next += 1;
            }
            None => {}
            Some((i, invoke, None)) => {
                let Request::Update { id, patch, .. } = &requests[i] else {
                    unreachable!("updates only")
                };
                let t = tasks.get_mut(id).expect("known task");
                patch.apply_fields(t);
                let view = views.get_mut(id).expect("known task");
                if let Change::Set(o) = &patch.owner {
                    view.owner = Some(o.clone());
                }
                if let Change::Set(m) = &patch.metadata {
                    for (k, v) in m {
                        let p = history.keys.get(k, v).expect("interned before the run");
                        view.metadata.set(&history.keys, p);
                    }
                }
                flights[s] = Some((i, invoke, Some(Some(view.clone()))));
            }
            Some((i, invoke, Some(view))) => {
                let completion = if rng.random_bool(shape.unanswered) {
                    Completion::Info {
                        at: now,
                        reason: "synthetic".into(),
                    }
                } else {
                    Completion::Ok {
                        at: now,
                        task: view,
                    }
                };
                ops.push(Operation {
                    index: 0,
                    session: s as u32,
                    writer: Some(s as u32),
                    request: requests[i].clone(),
                    invoke,
                    completion,
                });
            }
        }
    }
    ops.sort_by_key(|o| o.invoke);
    for op in ops {
        history.push(op);
    }
    let end = Duration::from_micros(clock + 1);
    if shape.lose_one {
        let last = history
            .ops
            .iter()
            .filter(|o| o.is_ok() && o.task_id() == Some(TaskId(1)))
            .filter_map(|o| o.metadata_pairs(&history.keys).next())
            .next_back();
        if let (Some(p), Some(t)) = (last, tasks.get_mut(&TaskId(1))) {
            let key = history.keys.key(p).to_string();
            if let Some(m) = t.metadata.as_mut() {
                m.remove(&key);
            }
        }
    }
    (history, tasks.into_values().collect(), end)
}
