//! The checker: counts the anomalies of a race run from its history and the final state,
//! and explains each with a minimal witness in plain words.
//!
//! Each check is a function of the history and the final listing, so other parts of the
//! project (the runner's `concurrent` blocks) can call the one they need, e.g.
//! [`lost_metadata`] for "every acknowledged metadata key survives".

mod anomaly;
mod lost;

use std::time::Duration;

pub use anomaly::{AnomalyKind, Findings, LinSummary, TornRead, Witness};
pub use lost::{claims, duplicate_ids, lost_creates, lost_edges, lost_fields, lost_metadata};
use lost::{edge_changes, field_writes, show};

use crate::history::{Completion, History, secs};
use crate::linear::{self, Verdict};
use crate::partition::{final_views, partition, prune_unobserved};
use crate::sequential::SequentialTask;
use taskproof_core::graph::Graph;
use taskproof_core::protocol::Request;
use taskproof_core::task::{Change, Task, TaskId};

/// What the checker is given besides the history.
pub struct FinalState<'a> {
    pub tasks: &'a [Task],
    /// Task files that could not be read at the end: named by the listing's `corrupt`, or
    /// found unparseable by the harness's own scan of the folder, with the reason.
    pub corrupt: &'a [(String, String)],
    pub torn: &'a [TornRead],
    /// When the final listing was taken.
    pub end: Duration,
}

/// Runs every check.
pub fn check_all(history: &History, fin: &FinalState<'_>, lin_budget: u64) -> Findings {
    let mut f = Findings::default();
    for k in AnomalyKind::ALL {
        f.counts.insert(k, 0);
    }
    // The linearizability search runs beside the other checks (it is most of the work, and
    // spreads over the cores itself); the witnesses keep their order.
    let (others, (lin, ws)) = rayon::join(
        || {
            [
                lost_metadata(history, fin.tasks),
                lost_fields(history, fin.tasks),
                lost_creates(history, fin.tasks),
                duplicate_ids(history, fin.tasks),
                claims(history, fin.tasks),
                lost_edges(history, fin.tasks),
                torn_writes(fin.torn),
                corrupt_files(fin.corrupt),
                graph_anomalies(fin.tasks),
            ]
        },
        || linearizability(history, fin.tasks, fin.end, lin_budget),
    );
    for ws in others {
        f.add(ws);
    }
    f.lin = lin;
    f.add(ws);
    f
}

/// One witness per torn state of a file.
pub fn torn_writes(torn: &[TornRead]) -> Vec<Witness> {
    torn.iter()
        .map(|t| {
            let again = match t.reads {
                0 | 1 => String::new(),
                n => format!("; {n} raw reads saw this same state"),
            };
            Witness::new(
                AnomalyKind::TornWrites,
                None,
                format!(
                    "raw reader {} read {} at {}: {} bytes that do not parse ({}){again}",
                    t.reader,
                    t.file,
                    secs(t.at),
                    t.len,
                    t.error
                ),
                Vec::new(),
            )
        })
        .collect()
}

pub fn corrupt_files(corrupt: &[(String, String)]) -> Vec<Witness> {
    corrupt
        .iter()
        .map(|(name, why)| {
            Witness::new(
                AnomalyKind::CorruptFiles,
                None,
                format!("{name} is unreadable at the end: {why}"),
                Vec::new(),
            )
        })
        .collect()
}

/// Cycles and half edges in the final state.
pub fn graph_anomalies(final_tasks: &[Task]) -> Vec<Witness> {
    let g = Graph::new(final_tasks);
    let mut out = Vec::new();
    for c in g.cycles() {
        out.push(Witness::new(
            AnomalyKind::Cycles,
            c.first().copied(),
            format!(
                "in the final state, {}",
                taskproof_core::graph::cycle_words(&c)
            ),
            Vec::new(),
        ));
    }
    for h in g.half_edges() {
        let text = h.words(taskproof_core::graph::task_name);
        out.push(Witness::new(
            AnomalyKind::HalfEdges,
            Some(h.blocked),
            text,
            Vec::new(),
        ));
    }
    out
}

/// Checks each task's history against the sequential model, in parallel over tasks.
pub fn linearizability(
    history: &History,
    final_tasks: &[Task],
    end: Duration,
    budget: u64,
) -> (LinSummary, Vec<Witness>) {
    use rayon::prelude::*;
    let listed = final_views(history, final_tasks);
    let parts: Vec<_> = partition(history, &listed, end).into_iter().collect();
    let verdicts: Vec<(TaskId, Verdict, Option<usize>)> = parts
        .into_par_iter()
        .map(|(id, mut entries)| {
            prune_unobserved(&mut entries);
            let model = SequentialTask::new(id, &history.keys, &entries);
            let v = linear::check(&model, &entries, budget);
            let stuck = match &v {
                Verdict::NotLinearizable { stuck, .. } => entries[*stuck].op.history_index,
                _ => None,
            };
            (id, v, stuck)
        })
        .collect();
    let mut sum = LinSummary {
        tasks: verdicts.len(),
        ..LinSummary::default()
    };
    let mut out = Vec::new();
    for (id, v, stuck) in verdicts {
        match v {
            Verdict::Linearizable { steps } => {
                sum.linearizable += 1;
                sum.steps += steps;
            }
            Verdict::Unknown { steps } => {
                sum.unknown += 1;
                sum.steps += steps;
                sum.unknown_tasks.push(id);
            }
            Verdict::NotLinearizable {
                prefix,
                reason,
                steps,
                ..
            } => {
                sum.nonlinearizable += 1;
                sum.steps += steps;
                let what = match stuck.map(|i| &history.ops[i]) {
                    Some(op) => format!(
                        "{}'s {} (sent at {}, {})",
                        op.who(),
                        describe_request(&op.request),
                        secs(op.invoke),
                        match &op.completion {
                            Completion::Ok { at, .. } => format!("answered ok at {}", secs(*at)),
                            Completion::Fail { at, kind, .. } =>
                                format!("refused with {kind} at {}", secs(*at)),
                            Completion::Info { .. } => "never answered".into(),
                        }
                    ),
                    None => "the final listing".into(),
                };
                out.push(Witness::new(
                    AnomalyKind::Nonlinearizable,
                    Some(id),
                    format!(
                        "no sequential order explains task {id}'s history: after {prefix} operations placed in real-time order, {what} fits nowhere: {reason}"
                    ),
                    stuck.into_iter().collect(),
                ));
            }
        }
    }
    (sum, out)
}

/// A request in a few words.
pub fn describe_request(r: &Request) -> String {
    match r {
        Request::Create { task, .. } => format!("create {:?}", task.subject),
        Request::Get { id, .. } => format!("get of task {id}"),
        Request::Claim { id, owner, .. } => format!("claim of task {id} as {owner:?}"),
        Request::Delete { id, .. } => format!("delete of task {id}"),
        Request::List { .. } => "list".into(),
        Request::Hello => "hello".into(),
        Request::Update { id, patch, .. } => {
            let mut parts = Vec::new();
            if let Change::Set(m) = &patch.metadata {
                let keys: Vec<&str> = m.keys().map(String::as_str).collect();
                parts.push(format!("metadata.{}", keys.join(",")));
            }
            for (f, v) in field_writes(r) {
                parts.push(format!("{f} {}", show(&v)));
            }
            for ((a, b), add) in edge_changes(r) {
                parts.push(format!(
                    "{} edge {a} blocks {b}",
                    if add { "add" } else { "remove" }
                ));
            }
            format!("update of task {id} ({})", parts.join(", "))
        }
    }
}
