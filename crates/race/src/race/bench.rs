//! The checker's speed on synthetic histories (`taskproof race --bench-checker`).
//!
//! A simulated linearizable store serves `sessions` concurrent sessions: each request is
//! invoked, takes effect atomically at a random later moment, and is answered later still,
//! so intervals overlap the way a real run's do. Requests set one of 128 metadata keys to a
//! value of their own, or the owner, of one of `tasks` tasks; a share of them is left unanswered, as killed requests are. The history is then
//! judged by the full checker, and timed.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde_json::{Map, json};

use super::check::{FinalState, Findings, check_all};
use super::history::{Completion, History, Operation, TaskView};
use crate::protocol::Request;
use crate::task::{Change, Patch, Task, TaskId};

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
    let list: crate::task::ListName = super::workload::LIST.parse().expect("valid list");
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
                task: crate::task::NewTask::new(t.subject.clone()),
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

/// The processor time this process's threads have used so far, from
/// `/proc/self/task/*/schedstat` (Linux; `None` elsewhere). On a machine shared with other
/// jobs the wall-clock time of a check depends on how much of a core it got; the
/// processor time does not.
fn cpu_time() -> Option<Duration> {
    let mut total = 0u64;
    for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let text = std::fs::read_to_string(task.path().join("schedstat")).ok()?;
        total += text.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(Duration::from_nanos(total))
}

/// One shape measured.
pub struct Measured {
    /// Building the history: not the checker's time.
    pub generated: Duration,
    /// The checker, wall clock.
    pub checked: Duration,
    /// The checker, processor time of all threads (when the system tells).
    pub cpu: Option<Duration>,
    pub findings: Findings,
}

/// Times the full checker on one shape. The history is built before the clocks start.
pub fn measure(shape: Shape, budget: u64) -> Measured {
    let start = Instant::now();
    let (history, tasks, end) = synthesize(shape, 1);
    let generated = start.elapsed();
    let cpu_start = cpu_time();
    let start = Instant::now();
    let f = check_all(
        &history,
        &FinalState {
            tasks: &tasks,
            corrupt: &[],
            torn: &[],
            end,
        },
        budget,
    );
    let checked = start.elapsed();
    let cpu = cpu_start.zip(cpu_time()).map(|(a, b)| b.saturating_sub(a));
    // Freeing a million operations is not the checker's work either.
    drop(history);
    Measured {
        generated,
        checked,
        cpu,
        findings: f,
    }
}

const fn shape(ops: usize, tasks: usize, unanswered: f64, lose_one: bool) -> Shape {
    Shape {
        ops,
        tasks,
        sessions: 16,
        unanswered,
        lose_one,
    }
}

/// The shapes the checked-in measurement uses, in order. A shape that differs from an
/// earlier one only in its number of operations is compared with it in the table.
pub const SHAPES: [Shape; 11] = [
    shape(10_000, 1, 0.0, false),
    shape(10_000, 1, 0.01, false),
    shape(100_000, 1, 0.01, false),
    shape(10_000, 16, 0.01, false),
    shape(100_000, 16, 0.01, false),
    shape(1_000_000, 16, 0.01, false),
    shape(10_000, 100, 0.01, false),
    shape(100_000, 100, 0.01, false),
    shape(10_000, 1, 0.01, true),
    shape(10_000, 16, 0.01, true),
    shape(100_000, 16, 0.01, true),
];

/// Runs every shape and renders a Markdown table: the check time, operations checked per
/// second, and for a shape measured before at a smaller size, how much longer it took for
/// how many times the operations (same run, so the ratio is what counts).
pub fn run(budget: u64) -> String {
    let mut s = String::from(
        "| operations | tasks | sessions | unanswered | one update lost | generation (not counted) | check time | check processor time | operations per processor second | vs the smaller size | linearizable | not | unknown | lost | search steps |\n|---:|---:|---:|---:|:-:|---:|---:|---:|---:|:--|---:|---:|---:|---:|---:|\n",
    );
    // Sizes are compared by processor time when the system tells it: the wall clock of a
    // shared machine measures the load as much as the checker.
    let mut done: Vec<(Shape, Duration)> = Vec::new();
    for shape in SHAPES {
        let m = measure(shape, budget);
        let (g, t, f) = (m.generated, m.checked, &m.findings);
        let cpu = m
            .cpu
            .map(|c| format!("{:.3} s", c.as_secs_f64()))
            .unwrap_or_else(|| "n/a".into());
        let smaller = done
            .iter()
            .rev()
            .find(|(d, _)| {
                d.ops < shape.ops
                    && d.tasks == shape.tasks
                    && d.sessions == shape.sessions
                    && d.unanswered == shape.unanswered
                    && d.lose_one == shape.lose_one
            })
            .map(|(d, dt)| {
                format!(
                    "{:.1}x the {} for {}x the operations",
                    m.cpu.unwrap_or(t).as_secs_f64() / dt.as_secs_f64().max(1e-9),
                    if m.cpu.is_some() {
                        "processor time"
                    } else {
                        "time"
                    },
                    shape.ops / d.ops
                )
            })
            .unwrap_or_default();
        s += &format!(
            "| {} | {} | {} | {:.0}% | {} | {:.2} s | {:.3} s | {cpu} | {:.0} | {smaller} | {} | {} | {} | {} | {} |\n",
            shape.ops,
            shape.tasks,
            shape.sessions,
            shape.unanswered * 100.0,
            if shape.lose_one { "yes" } else { "no" },
            g.as_secs_f64(),
            t.as_secs_f64(),
            shape.ops as f64 / m.cpu.unwrap_or(t).as_secs_f64().max(1e-9),
            f.lin.linearizable,
            f.lin.nonlinearizable,
            f.lin.unknown,
            f.count(super::check::AnomalyKind::Lost),
            f.lin.steps
        );
        done.push((shape, m.cpu.unwrap_or(t)));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_histories_are_judged_clean() {
        let shape = Shape {
            ops: 2_000,
            tasks: 4,
            sessions: 8,
            unanswered: 0.02,
            lose_one: false,
        };
        let f = measure(shape, 10_000_000).findings;
        assert_eq!(f.total(), 0, "{:?}", f.witnesses.first());
        assert_eq!(f.lin.unknown, 0);
        assert_eq!(f.lin.linearizable, 4);
    }
}

/// The checker's full findings (counts, linearizability summary, every witness with its
/// text, operations and time) on generated histories of the given sizes, every shape with
/// 1, 4 and 16 tasks, 0, 3 and 15% unanswered, with and without a lost update, seeds 1 to
/// 3, with unanswered requests bounded by their kill or not, and the final state perturbed
/// (values dropped, owners changed) so that lost values, culprits and non-linearizable
/// tasks appear. Used to check one version of the checker against another.
#[cfg(test)]
pub(crate) mod golden {
    use super::*;
    use rand::seq::IndexedRandom;
    use std::fmt::Write as _;

    pub fn text(sizes: &[usize]) -> String {
        let mut out = String::new();
        for &ops in sizes {
            for tasks in [1, 4, 16] {
                for unanswered in [0.0, 0.03, 0.15] {
                    for lose_one in [false, true] {
                        for seed in 1..=3u64 {
                            for bounded in [true, false] {
                                if !bounded && ops > 300 {
                                    continue;
                                }
                                let shape = Shape {
                                    ops,
                                    tasks,
                                    sessions: 8,
                                    unanswered,
                                    lose_one,
                                };
                                let (mut h, mut fin, end) = synthesize(shape, seed);
                                h.info_bounded = bounded;
                                let mut rng = StdRng::seed_from_u64(seed ^ 77);
                                for _ in 0..(seed as usize) {
                                    let t = rng.random_range(0..fin.len());
                                    if let Some(m) = fin[t].metadata.as_mut() {
                                        let keys: Vec<String> = m.keys().cloned().collect();
                                        if let Some(k) = keys.choose(&mut rng) {
                                            m.remove(k);
                                        }
                                    }
                                    if seed == 3 {
                                        fin[t].owner = Some("intruder".into());
                                    }
                                }
                                let f = check_all(
                                    &h,
                                    &FinalState {
                                        tasks: &fin,
                                        corrupt: &[],
                                        torn: &[],
                                        end,
                                    },
                                    200_000,
                                );
                                let counts: Vec<String> =
                                    f.counts.values().map(|n| n.to_string()).collect();
                                let _ = writeln!(
                                    out,
                                    "## {shape:?} seed {seed} bounded {bounded}\n{}\n{:?}",
                                    counts.join(" "),
                                    f.lin
                                );
                                for w in &f.witnesses {
                                    let _ = writeln!(
                                        out,
                                        "{:?} {:?} {:?} {:?} {}",
                                        w.kind, w.task, w.ops, w.at, w.text
                                    );
                                }
                            }
                        }
                    }
                }
            }
        }
        out
    }

    /// FNV-1a, 64 bits: a digest of the findings that does not depend on Rust's hasher.
    fn fnv(text: &str) -> u64 {
        text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        })
    }

    /// The findings on 108 histories of 300 operations, byte for byte as the checker before
    /// the linear rewrite gave them (its output digested; 202,038 bytes, 496 lost values,
    /// 306 non-linearizable tasks over both sizes of the full comparison). A change in any
    /// verdict, witness text, operation list or time changes the digest; the failure
    /// message names a file holding the new text, to compare with
    /// `TASKPROOF_GOLDEN=... cargo test --lib race::bench::golden -- --ignored` run on the
    /// old version.
    #[test]
    fn verdicts_and_witnesses_are_those_of_the_checker_before_the_rewrite() {
        let text = text(&[300]);
        let digest = fnv(&text);
        if digest != 0x93ba_52fb_0635_13cd {
            let path = std::env::temp_dir().join("taskproof-race-golden-300.txt");
            std::fs::write(&path, &text).expect("the findings are written for comparison");
            panic!(
                "the findings changed (digest {digest:#x}); they are in {}",
                path.display()
            );
        }
    }

    /// A lost update on one task, pinned word for word.
    #[test]
    fn a_lost_update_in_a_generated_history_keeps_its_witnesses() {
        let text = text(&[300]);
        let section = text
            .split("## ")
            .find(|s| {
                s.starts_with(
                    "Shape { ops: 300, tasks: 1, sessions: 8, unanswered: 0.03, lose_one: true } seed 1 bounded true",
                )
            })
            .expect("the shape is generated");
        assert!(section.contains("\n2 0 0 0 0 0 0 1\n"), "{section}");
        assert!(section.contains(
            "session 1 (writer 1) set metadata k84=212 on task 1 (acknowledged at 0.001 s), the last write of that key; the final task lacks k84; session 4 (writer 4) wrote task 1 without k84=212 (answered at 0.001 s); it was sent at 0.001 s, before the change was acknowledged, so it worked from a copy read before the change"
        ), "{section}");
        assert!(section.contains(
            "no sequential order explains task 1's history: after 301 operations placed in real-time order, the final listing fits nowhere: after the operations that must precede it the task was status pending, owner \"o294\", subject \"task 1\", 128 metadata keys; the answer showed metadata without k84=212, k43=299"
        ), "{section}");
    }

    /// Writes the findings for 300 and 2,000 operations to the file `TASKPROOF_GOLDEN`
    /// names, to compare two versions of the checker byte for byte.
    #[test]
    #[ignore = "writes a comparison file; run by hand"]
    fn golden() {
        let Some(path) = std::env::var_os("TASKPROOF_GOLDEN") else {
            return;
        };
        std::fs::write(path, text(&[300, 2_000])).expect("golden file written");
    }
}
