//! The race report: one record per workload run, built from the run and the checker's
//! findings, written as JSON (format version [`FORMAT_VERSION`]) and summarized on the
//! terminal. Each finding is an anomaly when the profile the run is judged by promises
//! against it, else an observation (reported, never failed). The Markdown and terminal
//! views of it are render.rs's.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::check::{AnomalyKind, Findings, LinSummary, Witness};
use crate::driver::Run;
use crate::files::FilesReport;
use crate::history::Completion;
use crate::mix::{self, Charge, TargetLosses, WriterLosses};
use crate::own::OwnRun;
use taskproof_profile::Profile;
use taskproof_report::Document;

mod render;

/// The JSON report's format version. 2: `profile`, `observations` (per run and in all),
/// `torn_writes` counting torn file states with the raw `torn_reads` beside, `released_s`,
/// witnesses marked `observation`, `runs_with_observations`; times from the first request.
pub const FORMAT_VERSION: u32 = 2;
/// Witnesses kept per kind and run in the JSON report (all are counted).
pub const MAX_WITNESSES_PER_KIND: usize = 20;
/// The same when a workload is repeated (`--runs`), so a report of many runs stays small.
pub const MAX_WITNESSES_PER_KIND_REPEATED: usize = 1;

/// One workload run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkloadReport {
    pub workload: String,
    /// Which repetition (from 0) when the run was repeated.
    pub run: usize,
    pub seed: u64,
    /// Why the workload did not run (a feature the target lacks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    pub writers: usize,
    /// Requests per writer, as asked.
    pub ops: usize,
    /// Writer requests sent (fewer than planned when `--duration` ran out); the setup
    /// session's requests are not counted.
    pub requests: usize,
    pub planned: usize,
    pub acknowledged: usize,
    pub refused: usize,
    /// Refusals by error kind, with the first message of each.
    pub refusals: BTreeMap<String, Refusals>,
    /// Requests without an answer (killed or timed out): may or may not have happened.
    pub unknown: usize,
    pub kills: usize,
    pub sessions: u32,
    pub seconds: f64,
    /// When the writers were released, on the run's clock (which starts at the first
    /// request, the setup session's, and leaves out session start-up): every time in a
    /// witness is on that clock.
    #[serde(default)]
    pub released_s: f64,
    pub raw_reads: usize,
    /// Raw reads that found a task file torn; `torn_writes` counts the torn states.
    pub torn_reads: usize,
    /// What the profile promises against and the run found: these fail the run.
    pub anomalies: BTreeMap<String, usize>,
    /// What the run found that the profile does not promise: reported, never failed.
    #[serde(default)]
    pub observations: BTreeMap<String, usize>,
    pub linearizability: LinSummary,
    /// When the first lost change was lost, in seconds since the writers were released.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_loss_s: Option<f64>,
    pub witnesses: Vec<Witness>,
    pub witnesses_omitted: usize,
    /// Protocol errors and sessions that could not be opened.
    pub errors: Vec<String>,
    /// A mixed race: each target's requests and the lost changes charged to it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<TargetLosses>,
    /// A mixed race: every lost change with who acknowledged it, who dropped it and who is
    /// charged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub charges: Vec<Charge>,
    /// A race whose writers are named one by one (a target's writers are the members of
    /// agent teams, `--teammates`): each writer's requests and the lost changes charged to
    /// it ([`crate::own::charge_writers`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_writer: Vec<WriterLosses>,
    /// Whether the profile promises linearizability (S19): an unknown verdict then keeps
    /// the run from passing.
    #[serde(skip)]
    pub lin_promised: bool,
    /// The settle phase: how long the idle sessions stayed open after the last
    /// acknowledgement before the list was read back, and the task files that vanished
    /// meanwhile (their tasks are counted in `lost`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settle: Option<SettleReport>,
    /// A race where each target kept its own tasks: each target's own verdict.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<PartReport>,
    /// A race where each target kept its own tasks: what each did to the other's files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<FilesReport>,
}

/// One target's own share of a race where each target kept its own tasks, judged alone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartReport {
    pub target: String,
    /// Its letter, the tag of its subjects.
    pub letter: String,
    pub layout: String,
    pub requests: usize,
    pub acknowledged: usize,
    /// Tasks its final listing showed.
    pub listed: usize,
    pub anomalies: BTreeMap<String, usize>,
    pub observations: BTreeMap<String, usize>,
    pub linearizability: LinSummary,
}

/// What the settle phase saw.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SettleReport {
    pub seconds: f64,
    pub vanished: Vec<VanishedFile>,
}

/// A task file that vanished in the settle phase, and who is charged with it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VanishedFile {
    pub file: String,
    /// Seconds into the settle phase.
    pub after_s: f64,
    pub charged_to: String,
    pub evidence: String,
}

fn zero_counts() -> BTreeMap<String, usize> {
    AnomalyKind::ALL
        .iter()
        .map(|k| (k.name().to_string(), 0))
        .collect()
}

impl WorkloadReport {
    pub fn skipped(
        workload: &str,
        run: usize,
        seed: u64,
        writers: usize,
        ops: usize,
        why: String,
    ) -> WorkloadReport {
        WorkloadReport {
            workload: workload.into(),
            run,
            seed,
            skipped: Some(why),
            writers,
            ops,
            requests: 0,
            planned: 0,
            acknowledged: 0,
            refused: 0,
            refusals: BTreeMap::new(),
            unknown: 0,
            kills: 0,
            sessions: 0,
            seconds: 0.0,
            released_s: 0.0,
            raw_reads: 0,
            torn_reads: 0,
            anomalies: zero_counts(),
            observations: zero_counts(),
            linearizability: LinSummary::default(),
            first_loss_s: None,
            witnesses: Vec::new(),
            witnesses_omitted: 0,
            errors: Vec::new(),
            targets: Vec::new(),
            charges: Vec::new(),
            by_writer: Vec::new(),
            lin_promised: true,
            settle: None,
            parts: Vec::new(),
            files: None,
        }
    }

    /// The record of a race where each target kept its own tasks: each target's history
    /// judged on its own (`findings[t]`), summed, every witness naming its target, the
    /// lost changes charged ([`crate::own::charge`]) and the files' report.
    #[allow(clippy::too_many_arguments)]
    pub fn of_own(
        run: &OwnRun,
        findings: &[Findings],
        index: usize,
        seed: u64,
        writers: usize,
        ops: usize,
        keep: usize,
        profile: Profile,
    ) -> WorkloadReport {
        let mut parts: Vec<WorkloadReport> = run
            .parts
            .iter()
            .zip(findings)
            .map(|(p, f)| WorkloadReport::new(p, f, index, seed, writers, ops, keep, profile))
            .collect();
        let mut out = WorkloadReport::skipped(
            run.workload.name(),
            index,
            seed,
            writers,
            ops,
            String::new(),
        );
        out.skipped = None;
        out.lin_promised = AnomalyKind::Nonlinearizable.promised_by(profile);
        for (t, r) in parts.iter_mut().enumerate() {
            let name = &run.targets[t];
            out.requests += r.requests;
            out.planned += r.planned;
            out.acknowledged += r.acknowledged;
            out.refused += r.refused;
            for (k, v) in std::mem::take(&mut r.refusals) {
                let e = out.refusals.entry(k).or_insert(Refusals {
                    count: 0,
                    example: v.example.clone(),
                });
                e.count += v.count;
            }
            out.unknown += r.unknown;
            out.kills += r.kills;
            out.sessions += r.sessions;
            out.seconds = out.seconds.max(r.seconds);
            out.released_s = r.released_s;
            out.raw_reads += r.raw_reads;
            out.torn_reads += r.torn_reads;
            for (k, v) in &r.anomalies {
                *out.anomalies.entry(k.clone()).or_default() += v;
            }
            for (k, v) in &r.observations {
                *out.observations.entry(k.clone()).or_default() += v;
            }
            let l = &r.linearizability;
            out.linearizability.tasks += l.tasks;
            out.linearizability.linearizable += l.linearizable;
            out.linearizability.nonlinearizable += l.nonlinearizable;
            out.linearizability.unknown += l.unknown;
            out.linearizability.steps += l.steps;
            out.linearizability
                .unknown_tasks
                .extend(l.unknown_tasks.iter().copied());
            out.first_loss_s = match (out.first_loss_s, r.first_loss_s) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            for mut w in std::mem::take(&mut r.witnesses) {
                w.target = Some(name.clone());
                out.witnesses.push(w);
            }
            out.witnesses_omitted += r.witnesses_omitted;
            out.errors
                .extend(r.errors.iter().map(|e| format!("{name}: {e}")));
            out.parts.push(PartReport {
                target: name.clone(),
                letter: crate::files::letter(t).to_string(),
                layout: run.layouts[t].as_str().to_string(),
                requests: r.requests,
                acknowledged: r.acknowledged,
                listed: run.parts[t].final_tasks.len(),
                anomalies: r.anomalies.clone(),
                observations: r.observations.clone(),
                linearizability: r.linearizability.clone(),
            });
        }
        let (targets, mut charges) = crate::own::charge(run, findings);
        out.by_writer = crate::own::charge_writers(run, findings, &mut charges);
        out.targets = targets;
        out.charges = charges;
        out.settle = run.settle.clone();
        out.files = Some(run.files.clone());
        out
    }

    /// A run's record, judged by `profile`, keeping at most `keep` witnesses of each kind.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        run: &Run,
        f: &Findings,
        index: usize,
        seed: u64,
        writers: usize,
        ops: usize,
        keep: usize,
        profile: Profile,
    ) -> WorkloadReport {
        let writer_ops = run.history.ops.iter().filter(|o| o.writer.is_some());
        let (mut acknowledged, mut refused, mut unknown, mut requests) = (0, 0, 0, 0);
        let mut refusals: BTreeMap<String, Refusals> = BTreeMap::new();
        for op in writer_ops {
            requests += 1;
            match &op.completion {
                Completion::Ok { .. } => acknowledged += 1,
                Completion::Info { .. } => unknown += 1,
                Completion::Fail { kind, message, .. } => {
                    refused += 1;
                    refusals
                        .entry(kind.to_string())
                        .or_insert_with(|| Refusals {
                            count: 0,
                            example: message.clone(),
                        })
                        .count += 1;
                }
            }
        }
        let mut per_kind: BTreeMap<AnomalyKind, usize> = BTreeMap::new();
        let mut witnesses = Vec::new();
        let mut omitted = 0;
        for w in &f.witnesses {
            let n = per_kind.entry(w.kind).or_default();
            *n += 1;
            if *n <= keep {
                let mut w = w.clone();
                w.observation = !w.kind.promised_by(profile);
                witnesses.push(w);
            } else {
                omitted += 1;
            }
        }
        let (mut anomalies, mut observations) = (zero_counts(), zero_counts());
        for k in AnomalyKind::ALL {
            let side = if k.promised_by(profile) {
                &mut anomalies
            } else {
                &mut observations
            };
            side.insert(k.name().to_string(), f.count(k));
        }
        // The first loss the history shows happening: the earliest answer of a request that
        // dropped an acknowledged change of a writer (the witness names it as culprit). When
        // no witness has a culprit (say, the file was left unreadable), the earliest
        // acknowledgement of a change that was lost. A seed task the setup session created
        // can be lost too, but not at a time the history shows, so it does not count.
        let by_writer = |w: &&Witness| {
            w.kind == AnomalyKind::Lost
                && w.ops
                    .first()
                    .is_some_and(|&i| run.history.ops[i].writer.is_some())
        };
        let earliest = |with_culprit: bool| {
            f.witnesses
                .iter()
                .filter(by_writer)
                .filter(|w| !with_culprit || w.ops.len() > 1)
                .filter_map(|w| w.at)
                .min()
        };
        let first_loss_s = earliest(true)
            .or_else(|| earliest(false))
            .map(|d| d.saturating_sub(run.released).as_secs_f64());
        let (targets, charges) = mix::charge(run, f).unwrap_or_default();
        WorkloadReport {
            workload: run.workload.name().into(),
            run: index,
            seed,
            skipped: None,
            writers,
            ops,
            requests,
            planned: run.planned,
            acknowledged,
            refused,
            refusals,
            unknown,
            kills: run.kills,
            sessions: run.sessions,
            seconds: run.elapsed.as_secs_f64(),
            released_s: run.released.as_secs_f64(),
            raw_reads: run.raw_reads,
            torn_reads: run.torn_reads,
            anomalies,
            observations,
            linearizability: f.lin.clone(),
            first_loss_s,
            witnesses,
            witnesses_omitted: omitted,
            errors: run.errors.clone(),
            targets,
            charges,
            by_writer: Vec::new(),
            lin_promised: AnomalyKind::Nonlinearizable.promised_by(profile),
            parts: Vec::new(),
            files: None,
            settle: run.settle.as_ref().map(|st| SettleReport {
                seconds: st.seconds,
                vanished: st
                    .vanished
                    .iter()
                    .map(|v| VanishedFile {
                        file: v.file.clone(),
                        after_s: (v.after * 1000.0).round() / 1000.0,
                        charged_to: v.charged_to.clone(),
                        evidence: v.evidence.clone(),
                    })
                    .collect(),
            }),
        }
    }

    /// Anomalies the profile promised against.
    pub fn total(&self) -> usize {
        self.anomalies.values().sum()
    }

    /// Findings the profile does not promise against.
    pub fn observed(&self) -> usize {
        self.observations.values().sum()
    }

    /// Whether the run found no anomaly the profile promises against, and no promised
    /// linearizability check was left unknown.
    pub fn found_nothing(&self) -> bool {
        self.total() == 0 && (!self.lin_promised || self.linearizability.unknown == 0)
    }

    /// Whether the run passes: nothing found, and no target error.
    pub fn clean(&self) -> bool {
        self.found_nothing() && self.errors.is_empty()
    }
}

/// The refusals of one error kind.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Refusals {
    pub count: usize,
    pub example: String,
}

/// Repetitions of one workload (`--runs N`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RepeatSummary {
    pub workload: String,
    pub runs: usize,
    pub runs_with_anomalies: usize,
    #[serde(default)]
    pub runs_with_observations: usize,
    /// Runs that lost an acknowledged change, promised or not.
    pub runs_with_loss: usize,
    /// The median, over runs that lost something, of the time to the first loss.
    pub median_first_loss_s: Option<f64>,
    pub min_first_loss_s: Option<f64>,
    pub max_first_loss_s: Option<f64>,
}

/// A whole `taskproof race` invocation.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RaceReport {
    pub format_version: u32,
    pub target: String,
    /// The profile the anomalies are judged by (SPEC §3–§5).
    #[serde(default)]
    pub profile: String,
    pub seed: u64,
    pub writers: usize,
    pub ops: usize,
    pub kill: bool,
    /// How kills are done for this target.
    pub kill_mode: String,
    /// Whether in-process stores fsync; `null` for `cmd:` targets, whose command decides.
    pub fsync: Option<bool>,
    pub readers: usize,
    pub runs: usize,
    pub workloads: Vec<WorkloadReport>,
    pub repeats: Vec<RepeatSummary>,
    /// Totals over every run.
    pub anomalies: BTreeMap<String, usize>,
    #[serde(default)]
    pub observations: BTreeMap<String, usize>,
    pub unknown_linearizability: usize,
    pub errors: usize,
    /// A mixed race: the lost changes charged to each target, over every run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<TargetLosses>,
    /// A race whose writers are named one by one (`--teammates`): the lost changes charged
    /// to each writer, over every run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_writer: Vec<WriterLosses>,
    /// Teammates of each lead of a target with agent teams (`--teammates`), when set.
    #[serde(default, skip_serializing_if = "crate::mix::is_zero")]
    pub teammates: usize,
    /// A mixed race's pause between a writer's requests (`--think`), when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub think_s: Option<f64>,
    /// Targets reached in a way that is itself not atomic (an `mcp:` mapping that reads a task
    /// before it writes it), each with why: a lost change is then not the store's alone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_atomic: Vec<String>,
    /// A mixed race where each target kept its own tasks (targets of different layouts, or
    /// `--own-tasks`): each workload run has `parts` and `files`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub own_tasks: bool,
}

/// The race report as the reporters take it: the terminal summary and the JSON report.
impl Document for RaceReport {
    fn terminal(&self, _color: bool) -> String {
        self.render()
    }

    fn json(&self) -> Option<serde_json::Value> {
        Some(self.to_json())
    }

    fn markdown(&self) -> Option<String> {
        Some(self.to_markdown())
    }
}

impl RaceReport {
    pub fn finish(&mut self) {
        self.anomalies = zero_counts();
        self.observations = zero_counts();
        self.unknown_linearizability = 0;
        self.errors = 0;
        for w in &self.workloads {
            for (k, n) in &w.anomalies {
                *self.anomalies.entry(k.clone()).or_default() += n;
            }
            for (k, n) in &w.observations {
                *self.observations.entry(k.clone()).or_default() += n;
            }
            self.unknown_linearizability += w.linearizability.unknown;
            self.errors += w.errors.len();
        }
        let per: Vec<&[TargetLosses]> = self.workloads.iter().map(|w| &w.targets[..]).collect();
        self.targets = mix::total(&per);
        let per: Vec<&[WriterLosses]> = self.workloads.iter().map(|w| &w.by_writer[..]).collect();
        self.by_writer = mix::total_writers(&per);
        let mut names: Vec<&str> = self.workloads.iter().map(|w| w.workload.as_str()).collect();
        names.dedup();
        self.repeats.clear();
        if self.runs > 1 {
            for name in names {
                let runs: Vec<&WorkloadReport> = self
                    .workloads
                    .iter()
                    .filter(|w| w.workload == name && w.skipped.is_none())
                    .collect();
                let mut firsts: Vec<f64> = runs.iter().filter_map(|w| w.first_loss_s).collect();
                firsts.sort_by(f64::total_cmp);
                self.repeats.push(RepeatSummary {
                    workload: name.into(),
                    runs: runs.len(),
                    runs_with_anomalies: runs.iter().filter(|w| w.total() > 0).count(),
                    runs_with_observations: runs.iter().filter(|w| w.observed() > 0).count(),
                    runs_with_loss: runs
                        .iter()
                        .filter(|w| w.anomalies["lost"] + w.observations["lost"] > 0)
                        .count(),
                    median_first_loss_s: median(&firsts),
                    min_first_loss_s: firsts.first().copied(),
                    max_first_loss_s: firsts.last().copied(),
                });
            }
        }
    }

    pub fn clean(&self) -> bool {
        self.workloads.iter().all(WorkloadReport::clean)
    }

    /// Whether every run found nothing the profile promises against (target errors aside).
    pub fn found_nothing(&self) -> bool {
        self.workloads.iter().all(WorkloadReport::found_nothing)
    }

    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("reports serialize")
    }
}

fn median(sorted: &[f64]) -> Option<f64> {
    match sorted.len() {
        0 => None,
        n if n % 2 == 1 => Some(sorted[n / 2]),
        n => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[1.0, 2.0, 9.0]), Some(2.0));
        assert_eq!(median(&[1.0, 2.0, 3.0, 9.0]), Some(2.5));
    }
}
