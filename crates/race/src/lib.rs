//! taskproof's race harness: concurrent writers, the history checker and its report (docs/architecture.md, "Crates").
//!
//! The race harness (`taskproof race`): many writer sessions on one root, released together,
//! optionally killed at random moments; every request recorded as a [`history`]; the
//! [`check`]er counts lost acknowledged changes, duplicate ids, torn reads, corrupt files,
//! double claims, cycles and half edges, and checks each task's history for
//! linearizability ([`linear`], [`sequential`]); each anomaly comes with a witness in plain
//! words. Anomalies the target's profile promises against fail the run; the rest are
//! reported as observations. The [`report`] is JSON and a terminal summary.
//!
//! The flow: [`workload`] plans the requests -> [`driver`] runs them and lists the end state
//! -> [`check`] judges -> [`report`]. benches/checker.rs measures the checker on synthetic
//! histories.

pub mod check;
pub mod driver;
pub mod files;
pub mod history;
pub mod linear;
pub mod mix;
pub mod model;
pub mod own;
pub mod partition;
mod readers;
pub mod report;
pub mod sequential;
pub mod workload;
mod writer;

pub use check::{AnomalyKind, FinalState, Findings, Witness, check_all, lost_metadata};
pub use driver::{Config, DriverError, Run};
pub use history::History;
pub use mix::Mix;
pub use own::OwnRun;
pub use report::{RaceReport, WorkloadReport};
use taskproof_targets::TargetSpec;
pub use workload::Workload;

/// The default step budget of the linearizability search, per task.
pub const DEFAULT_LIN_BUDGET: u64 = 20_000_000;

/// Judges a finished run.
pub fn judge(run: &Run, lin_budget: u64) -> Findings {
    let fin = FinalState {
        tasks: &run.final_tasks,
        corrupt: &run.corrupt,
        torn: &run.torn,
        end: run.end,
    };
    check_all(&run.history, &fin, lin_budget)
}

/// Whether every target keeps the same, known files: the layout each names in `hello`,
/// read from a session opened on a scratch root and closed again.
pub fn same_files(cfg: &Config, targets: &[TargetSpec]) -> Result<bool, DriverError> {
    let scratch = tempfile::Builder::new()
        .prefix("taskproof-race-hello-")
        .tempdir()
        .map_err(|source| DriverError::Root {
            path: std::env::temp_dir(),
            source,
        })?;
    let options = taskproof_session::SessionOptions {
        timeout: cfg.timeout,
        durable: cfg.fsync,
        drive: cfg.drive,
        ..Default::default()
    };
    let mut layouts = Vec::new();
    for t in targets {
        let (mut session, _) = t
            .open_racing(scratch.path(), options.clone(), true)
            .map_err(DriverError::Open)?;
        layouts.push(session.hello().layout);
        let _ = session.close();
    }
    Ok(layouts
        .iter()
        .all(|&l| l == layouts[0] && l != taskproof_core::protocol::Layout::Opaque))
}

/// Runs `workloads`, each `runs` times with seeds `seed`, `seed + 1`, ..., each on a fresh
/// temporary root, and builds the report. A mixed race puts `cfg.writers` writers of each
/// of `mix.targets` on one list, and the report charges each lost change to a target
/// ([`mix::charge`]); an empty mix is `cfg.target` alone. `progress` is called with (done,
/// planned) while a run is under way; `announce` before each run starts.
pub fn run_all(
    cfg: &Config,
    mix: &Mix,
    workloads: &[Workload],
    runs: usize,
    lin_budget: u64,
    progress: Option<driver::Progress<'_>>,
    announce: &dyn Fn(Workload, usize),
) -> Result<RaceReport, DriverError> {
    let targets = mix.targets_or(&cfg.target);
    let any_process = targets.iter().any(TargetSpec::is_process);
    let all_process = targets.iter().all(TargetSpec::is_process);
    let mut report = RaceReport {
        format_version: report::FORMAT_VERSION,
        target: targets
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(" + "),
        profile: cfg.profile.to_string(),
        seed: cfg.seed,
        writers: cfg.writers,
        ops: cfg.ops,
        kill: cfg.kill,
        kill_mode: if all_process {
            "SIGKILL of the adapter's process group at a random moment, mid-request included"
        } else if any_process {
            "processes: SIGKILL of the process group at a random moment; in-process: the session is dropped after its request ran"
        } else {
            "in-process: the session is dropped after its request ran; the answer is discarded"
        }
        .to_string(),
        fsync: (!all_process).then_some(cfg.fsync),
        readers: cfg.readers,
        runs,
        workloads: Vec::new(),
        repeats: Vec::new(),
        anomalies: Default::default(),
        observations: Default::default(),
        unknown_linearizability: 0,
        errors: 0,
        targets: Vec::new(),
        by_writer: Vec::new(),
        teammates: mix.teammates,
        think_s: (!mix.think.is_zero()).then_some(mix.think.as_secs_f64()),
        own_tasks: false,
        not_atomic: targets
            .iter()
            .filter_map(|t| t.not_atomic().map(|why| format!("{t}: {why}")))
            .collect(),
    };
    // Targets that keep different files (or files the harness cannot name) each keep
    // their own tasks; so do all when asked (`--own-tasks`), and a race with a team's
    // teammates as writers (`--teammates`, whose writers are counted per target there).
    let own =
        mix.teammates > 0 || (targets.len() > 1 && (mix.own_tasks || !same_files(cfg, &targets)?));
    report.own_tasks = own;
    for &w in workloads {
        for i in 0..runs {
            let seed = cfg.seed.wrapping_add(i as u64);
            let cfg = Config {
                seed,
                ..cfg.clone()
            };
            announce(w, i);
            let root = tempfile::Builder::new()
                .prefix("taskproof-race-")
                .tempdir()
                .map_err(|source| DriverError::Root {
                    path: std::env::temp_dir(),
                    source,
                })?;
            let witnesses = if runs > 1 {
                report::MAX_WITNESSES_PER_KIND_REPEATED
            } else {
                report::MAX_WITNESSES_PER_KIND
            };
            // Each target on its own tasks, or every target on the same ones: two drivers,
            // one report of the workload.
            let made = if own {
                own::run_own(&cfg, mix, w, root.path(), progress).map(|run| {
                    let findings: Vec<Findings> =
                        run.parts.iter().map(|p| judge(p, lin_budget)).collect();
                    WorkloadReport::of_own(
                        &run,
                        &findings,
                        i,
                        seed,
                        cfg.writers,
                        cfg.ops,
                        witnesses,
                        cfg.profile,
                    )
                })
            } else {
                driver::run_mixed(&cfg, mix, w, root.path(), progress).map(|run| {
                    let f = judge(&run, lin_budget);
                    WorkloadReport::new(
                        &run,
                        &f,
                        i,
                        seed,
                        cfg.writers,
                        cfg.ops,
                        witnesses,
                        cfg.profile,
                    )
                })
            };
            match made {
                Ok(workload) => report.workloads.push(workload),
                Err(DriverError::Unsupported(why)) => {
                    report.workloads.push(WorkloadReport::skipped(
                        w.name(),
                        i,
                        seed,
                        cfg.writers,
                        cfg.ops,
                        why,
                    ));
                    break;
                }
                Err(e) => return Err(e),
            }
        }
    }
    report.finish();
    Ok(report)
}
