//! Mixed-writer races: several targets writing one list at once (`race --target A --target B`),
//! and whose loss each lost acknowledged change is.
//!
//! Every target runs `--writers` sessions on the same root and list; the first target also
//! runs the setup and the final listing. All must keep the same files (layout); the reference
//! store then also takes Claude Code's lock directories, as `taskproof mcp` opens it.
//!
//! Whose loss. A lost change was acknowledged by one session; the checker names, when it can,
//! the first request answered without it. A change a target makes without any lock (Claude
//! Code's TaskUpdate is a plain read-modify-write; every change of the naive store) is lost by
//! its own writer: it is charged to the target that acknowledged it, whoever wrote last. A
//! change made under the list's lock can only be dropped by a writer that ignores that lock
//! and read the task before the change and wrote it after: it is charged to the target of such
//! a write, a write of the same task by a target that writes it without the lock, in flight
//! while the change was made (sent before the change was acknowledged, answered after it was
//! sent, or never); the checker's named request when it is one of them, else the first. With
//! none in flight, the loss cannot be put on a writer that ignored the lock: it is charged to
//! the named request's target (a later reader may have been that writer), else to the target
//! that acknowledged it. The named request is not always the writer that dropped the change: a
//! slow target such as Claude Code answers a turn well after its tool wrote the file, so a
//! fast writer that read the already-dropped state may answer first.
//!
//! Which writes hold the lock ([`under_lock`]): every write of the reference store (its own
//! lock for the whole change, and Claude Code's lock directories as it writes,
//! `crates/store/src/cclock.rs`); Claude Code's create (`.lock.lock`, read from 2.1.112's `cli.js`;
//! the claude-code target claims through TaskUpdate, which takes no lock); nothing of any
//! other target. Only lost changes are charged; the other anomalies' witnesses name sessions
//! by writer number, and writers `0..--writers` run the first target, the next the second, and
//! so on (the terminal summary's first line says which). Every loss is in the JSON
//! report with who acknowledged it, the named request's target and who is charged.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::check::{AnomalyKind, Findings};
use crate::driver::Run;
use crate::history::Completion;
use taskproof_core::protocol::Request;
use taskproof_targets::TargetSpec;

/// What a mixed race adds to [`super::Config`]: the targets, and a pause between requests.
#[derive(Debug, Clone, Default)]
pub struct Mix {
    /// Every target, first the one of the setup and final sessions; empty (or one) for a
    /// plain race on `Config::target`.
    pub targets: Vec<TargetSpec>,
    /// How long each writer waits between its requests (an agent thinking between tool
    /// calls), so that fast and slow targets overlap; zero: no wait.
    pub think: Duration,
    /// Each target creates, changes and lists only its own tasks ([`crate::own`]), even
    /// when all keep the same files; targets of different layouts always do.
    pub own_tasks: bool,
    /// Teammates of each writer of a target with agent teams ([`TargetSpec::has_teams`]):
    /// each of its `--writers` is the lead of one process, with this many in-process
    /// teammates as writers of their own beside it (`w1`, `w2`, ...). Only where each target
    /// keeps its own tasks; zero: none.
    pub teammates: usize,
}

/// The names of a team's teammates: `w1`, `w2`, ....
pub fn teammate_names(n: usize) -> Vec<String> {
    (1..=n).map(|k| format!("w{k}")).collect()
}

impl Mix {
    /// The targets to run: the mix's, or `target` alone.
    pub fn targets_or(&self, target: &TargetSpec) -> Vec<TargetSpec> {
        if self.targets.is_empty() {
            vec![target.clone()]
        } else {
            self.targets.clone()
        }
    }
}

/// Whether the target named `target` makes the change `request` asks for under the list's
/// lock, as Claude Code's lock protocol and the reference's own lock define it (see the
/// module's text): each kind says so ([`TargetSpec::writes_under_lock`]).
pub fn under_lock(target: &str, request: &Request) -> bool {
    target
        .parse::<TargetSpec>()
        .is_ok_and(|t| t.writes_under_lock(request))
}

/// One lost change: who acknowledged it, who dropped it, who is charged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Charge {
    /// History indices of the witness's operations: the acknowledged change, then the
    /// request that dropped it (when named).
    pub ops: Vec<usize>,
    pub acknowledged_by: String,
    /// Whether the acknowledging target writes this change under the list's lock.
    pub under_lock: bool,
    /// The target of the first request the checker found answered without the change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dropped_by: Option<String>,
    pub charged_to: String,
    /// The writer whose change it was, in a race whose writers are named one by one (a team's
    /// members: `A lead`, `A w1`; others `B writer 2`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acknowledged_by_writer: Option<String>,
    /// The writer whose write dropped it, in such a race ([`crate::own::charge`]); `None` when
    /// the charged target has several writers and the evidence names none of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub charged_to_writer: Option<String>,
    /// Why, when the charge rests on what the driver saw of the files (a race where each
    /// target keeps its own tasks, [`crate::own::charge`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// One target's share of a mixed run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetLosses {
    pub target: String,
    pub writers: usize,
    pub requests: usize,
    pub acknowledged: usize,
    /// Lost changes charged to this target.
    pub lost: usize,
    /// Of them: its own acknowledged changes (made without the lock, or dropped by its own
    /// sessions).
    pub lost_own: usize,
    /// Of them: other targets' changes, made under the lock, that its writes dropped.
    pub lost_of_others: usize,
    /// Of them: changes whose task file it removed on its own in the settle phase, with no
    /// request in flight (counted apart from the two above).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub lost_between_requests: usize,
}

/// One writer's share of a race whose writers are named one by one: a race where a target's
/// writers are the members of agent teams (`--teammates`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriterLosses {
    /// `A lead`, `A w1`, `B writer 2`: its target's letter and its member, or its number.
    pub writer: String,
    pub target: String,
    /// `lead` or a teammate's name, for a member of an agent team.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub member: Option<String>,
    pub requests: usize,
    pub acknowledged: usize,
    /// Lost changes charged to this writer: its write dropped them.
    pub lost: usize,
    /// Of its own acknowledged changes, how many were lost (by whomever's write).
    pub lost_of_its_own: usize,
    /// Of its requests, how many were in flight at some moment while a request of another
    /// writer of its target was: how much its writes overlapped its teammates'.
    #[serde(default)]
    pub overlapping: usize,
}

/// Whether `o` is a write of `task` by another session than `change`'s, in flight while
/// `change` was made: sent before it was acknowledged, and answered after it was sent or
/// never. What may have dropped a lost change, in a mixed race and per writer.
pub(crate) fn wrote_during(
    o: &crate::history::Operation,
    change: &crate::history::Operation,
    task: Option<taskproof_core::task::TaskId>,
) -> bool {
    o.writer.is_some()
        && o.session != change.session
        && task.is_some()
        && o.task_id() == task
        && !matches!(o.request, Request::Get { .. } | Request::List { .. })
        && o.invoke < change.completion.at()
        && (o.is_info() || o.completion.at() > change.invoke)
}

pub(crate) fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Charges each lost change of a mixed run to a target; `None` for a plain run.
pub fn charge(run: &Run, f: &Findings) -> Option<(Vec<TargetLosses>, Vec<Charge>)> {
    if run.targets.is_empty() {
        return None;
    }
    let target_of_op = |i: usize| -> usize {
        run.history.ops[i]
            .writer
            .and_then(|w| run.writer_targets.get(w as usize).copied())
            .unwrap_or(0)
    };
    let mut per: Vec<TargetLosses> = run
        .targets
        .iter()
        .enumerate()
        .map(|(t, name)| TargetLosses {
            target: name.clone(),
            writers: run.writer_targets.iter().filter(|&&x| x == t).count(),
            ..TargetLosses::default()
        })
        .collect();
    for op in run.history.ops.iter().filter(|o| o.writer.is_some()) {
        let t = target_of_op(op.index);
        per[t].requests += 1;
        if matches!(op.completion, Completion::Ok { .. }) {
            per[t].acknowledged += 1;
        }
    }
    let mut charges = Vec::new();
    for w in &f.witnesses {
        if w.kind != AnomalyKind::Lost {
            continue;
        }
        let Some(&acked) = w.ops.first() else {
            continue;
        };
        let by = target_of_op(acked);
        let change = &run.history.ops[acked];
        let locked = under_lock(&run.targets[by], &change.request);
        let named = w.ops.get(1).copied();
        let dropped = named.map(target_of_op);
        // A task whose file vanished in the settle phase, with no request in flight, was
        // removed by the one target that acts between requests (see `driver::settle_phase`).
        let vanished_by = w.task.and_then(|id| {
            let file = format!("{}/{}", super::workload::LIST, run.layout.file_name(id)?);
            let v = run
                .settle
                .as_ref()?
                .vanished
                .iter()
                .find(|v| v.file == file)?;
            run.targets.iter().position(|t| *t == v.charged_to)
        });
        let charged = if let Some(t) = vanished_by {
            t
        } else if !locked {
            by
        } else {
            // Writes of the task, by targets that write it without the lock, in flight while
            // the change was made.
            let ack = change.completion.at();
            let unlocked_in_flight = |o: &&super::history::Operation| {
                wrote_during(o, change, w.task)
                    && !under_lock(&run.targets[target_of_op(o.index)], &o.request)
            };
            let suspects: Vec<usize> = run
                .history
                .ops
                .iter()
                .filter(unlocked_in_flight)
                .map(|o| o.index)
                .collect();
            // With nobody named and nothing in flight: the last write of the task, after the
            // change, by another target that ignores the lock. A change made under the lock
            // is written whole, so a task that later reads back torn or not at all (as the
            // final listing can show) was last written by a writer that truncates in place.
            let later_unlocked = || {
                run.history
                    .ops
                    .iter()
                    .rev()
                    .filter(|o| {
                        o.writer.is_some()
                            && w.task.is_some()
                            && o.task_id() == w.task
                            && !matches!(o.request, Request::Get { .. } | Request::List { .. })
                            && target_of_op(o.index) != by
                            && (o.is_info() || o.completion.at() > ack)
                            && !under_lock(&run.targets[target_of_op(o.index)], &o.request)
                    })
                    .map(|o| target_of_op(o.index))
                    .next()
            };
            match (named, suspects.first()) {
                (Some(n), _) if suspects.contains(&n) => target_of_op(n),
                (_, Some(&first)) => target_of_op(first),
                (Some(n), None) => target_of_op(n),
                (None, None) => later_unlocked().unwrap_or(by),
            }
        };
        if vanished_by.is_some() {
            per[charged].lost_between_requests += 1;
        } else if charged == by {
            per[charged].lost_own += 1;
        } else {
            per[charged].lost_of_others += 1;
        }
        per[charged].lost += 1;
        charges.push(Charge {
            ops: w.ops.clone(),
            acknowledged_by: run.targets[by].clone(),
            under_lock: locked,
            dropped_by: dropped.map(|d| run.targets[d].clone()),
            charged_to: run.targets[charged].clone(),
            acknowledged_by_writer: None,
            charged_to_writer: None,
            why: None,
        });
    }
    Some((per, charges))
}

/// Each writer's share summed over runs, by its label, in the order first seen.
pub fn total_writers(runs: &[&[WriterLosses]]) -> Vec<WriterLosses> {
    let mut out: Vec<WriterLosses> = Vec::new();
    for w in runs.iter().flat_map(|r| r.iter()) {
        match out
            .iter_mut()
            .find(|o| o.writer == w.writer && o.target == w.target)
        {
            Some(o) => {
                o.requests += w.requests;
                o.acknowledged += w.acknowledged;
                o.lost += w.lost;
                o.lost_of_its_own += w.lost_of_its_own;
                o.overlapping += w.overlapping;
            }
            None => out.push(w.clone()),
        }
    }
    out
}

/// "A lead: 2 lost (1 of its own changes lost); A w1: 0 lost; B writer 2: 1 lost": the lost
/// changes charged to each writer (its write dropped them), and how many of its own
/// acknowledged changes were lost.
pub fn writers_summary(per: &[WriterLosses]) -> String {
    let parts: Vec<String> = per
        .iter()
        .map(|w| {
            format!(
                "{}: {} lost ({} of its own changes lost; {} of its {} requests overlapped another writer's of its target)",
                w.writer, w.lost, w.lost_of_its_own, w.overlapping, w.requests
            )
        })
        .collect();
    parts.join("; ")
}

/// "reference: 0 lost; claude-code@2.1.112: 3 lost (2 of its own, 1 of others' changes)".
pub fn summary(per: &[TargetLosses]) -> String {
    let parts: Vec<String> = per
        .iter()
        .map(|t| {
            let detail = if t.lost == 0 {
                String::new()
            } else {
                let between = if t.lost_between_requests > 0 {
                    format!(
                        ", {} whose task files it removed between requests",
                        t.lost_between_requests
                    )
                } else {
                    String::new()
                };
                format!(
                    " ({} of its own changes, {} of others' that its writes dropped{between})",
                    t.lost_own, t.lost_of_others
                )
            };
            format!("{}: {} lost{detail}", t.target, t.lost)
        })
        .collect();
    parts.join("; ")
}

/// Sums per-target losses over runs, by target name.
pub fn total(runs: &[&[TargetLosses]]) -> Vec<TargetLosses> {
    let mut by: BTreeMap<usize, TargetLosses> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    for per in runs {
        for t in *per {
            let i = match order.iter().position(|n| *n == t.target) {
                Some(i) => i,
                None => {
                    order.push(t.target.clone());
                    order.len() - 1
                }
            };
            let e = by.entry(i).or_insert_with(|| TargetLosses {
                target: t.target.clone(),
                writers: t.writers,
                ..TargetLosses::default()
            });
            e.requests += t.requests;
            e.acknowledged += t.acknowledged;
            e.lost += t.lost;
            e.lost_own += t.lost_own;
            e.lost_of_others += t.lost_of_others;
            e.lost_between_requests += t.lost_between_requests;
        }
    }
    by.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use taskproof_core::task::{ListName, NewTask, Patch, TaskId};

    #[test]
    fn which_writes_hold_the_lock() {
        let list: ListName = "l".parse().unwrap();
        let create = Request::Create {
            list: list.clone(),
            task: NewTask::new("a"),
        };
        let update = Request::Update {
            list,
            id: TaskId(1),
            patch: Patch::default(),
        };
        assert!(under_lock("reference", &update));
        assert!(under_lock("claude-code@2.1.112", &create));
        assert!(!under_lock("claude-code@2.1.112", &update));
        let claim = Request::Claim {
            list: "l".parse().unwrap(),
            id: TaskId(1),
            owner: "a".into(),
        };
        assert!(!under_lock("claude-code@2.1.112", &claim));
        assert!(under_lock("reference", &claim));
        assert!(!under_lock("naive", &create));
    }

    #[test]
    fn totals_add_up_by_target() {
        let a = vec![
            TargetLosses {
                target: "reference".into(),
                lost: 0,
                acknowledged: 5,
                ..Default::default()
            },
            TargetLosses {
                target: "naive".into(),
                lost: 2,
                lost_own: 1,
                lost_of_others: 1,
                ..Default::default()
            },
        ];
        let t = total(&[&a, &a]);
        assert_eq!(t.len(), 2);
        assert_eq!((t[0].target.as_str(), t[0].acknowledged), ("reference", 10));
        assert_eq!((t[1].lost, t[1].lost_own, t[1].lost_of_others), (4, 2, 2));
        assert_eq!(
            summary(&t),
            "reference: 0 lost; naive: 4 lost (2 of its own changes, 2 of others' that its writes dropped)"
        );
    }
}
