//! The driver: sets up the shared tasks through a setup session, starts one writer thread
//! per session (one adapter process each for `cmd:` targets) and releases them together,
//! kills writers at random moments when asked and starts replacements, lets raw readers
//! poll the task files, and finally lists the end state through a fresh session.
//!
//! Kills. A `cmd:` writer that is to be killed sends its request and arms a killer thread
//! that sends SIGKILL to the adapter's process group after a random delay of up to a few
//! milliseconds, so the kill lands before, during or after the store's work; the request is
//! `ok` if its answer arrived first and `info` (unknown outcome) otherwise. In-process
//! sessions cannot be interrupted mid-request: a killed in-process writer's request runs to
//! the end and its answer is discarded (`info`), then the store instance is dropped.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use crate::check::TornRead;
use crate::history::{Completion, History, KeyTable, Operation};
use crate::mix::Mix;
use crate::readers::scan_corrupt;
use crate::workload::{self, LIST, Workload};
use crate::writer::{Ctx, Orders, release_writers};
use taskproof_core::protocol::{Layout, Request, Response};
use taskproof_core::task::{NewTask, Task, TaskId};
use taskproof_session::{SessionOptions, TargetError};
use taskproof_targets::TargetSpec;

/// Between the setup session's last answer and the first writer request the history's
/// clock skips the writers' start-up; this much is left, so that setup still ends strictly
/// before any writer request begins.
const SETUP_GAP: Duration = Duration::from_micros(1);

/// Errors that stop a run: the target cannot be set up or read back.
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    #[error("failed to open a session on the target: {0}")]
    Open(TargetError),
    /// The workload needs a feature the target does not have: skipped, not failed.
    #[error("{0}")]
    Unsupported(String),
    #[error("failed to set up the workload: {0}")]
    Setup(String),
    #[error("failed to list the final state: {0}")]
    Final(String),
    #[error("failed to prepare the root folder {path}: {source}")]
    Root {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// How to run one workload.
#[derive(Debug, Clone)]
pub struct Config {
    pub target: TargetSpec,
    pub writers: usize,
    /// Requests per writer.
    pub ops: usize,
    pub kill: bool,
    pub seed: u64,
    pub duration: Option<Duration>,
    /// fsync in in-process stores (the default); `cmd:` targets decide by their own flags.
    pub fsync: bool,
    /// Raw readers polling the task files (for targets with a known layout).
    pub readers: usize,
    pub timeout: Duration,
    /// What the target promises: anomalies it does not promise against are observations.
    pub profile: taskproof_profile::Profile,
    /// How long the writers' sessions stay open and idle after the last acknowledgement
    /// before the list is read back (the settle phase): what vanishes then, with no request
    /// in flight, is lost to a target's own doing between requests.
    pub settle: Duration,
    /// How agent targets' sessions are driven, when the caller says (`--drive`).
    pub drive: Option<taskproof_session::Drive>,
}

/// The settle default: longer than every timer measured in a real store (Claude Code
/// resets a finished list 5 s after it sees every task completed, 2.1.20 to 2.1.332), for
/// races with a target whose sessions are processes; in-process stores do nothing between
/// requests, so a race of those alone does not wait unless told to.
pub const DEFAULT_SETTLE: Duration = Duration::from_secs(7);

/// The settle phase of a run: how long it waited and what vanished meanwhile.
#[derive(Debug, Clone, PartialEq)]
pub struct Settle {
    pub seconds: f64,
    /// Task files present when the writers finished and gone during the settle phase, with
    /// no request in flight.
    pub vanished: Vec<Vanished>,
}

/// A task file that vanished during the settle phase.
#[derive(Debug, Clone, PartialEq)]
pub struct Vanished {
    /// `race/1.json`.
    pub file: String,
    /// Seconds after the writers finished when it was first seen gone.
    pub after: f64,
    /// The target it is charged to, and why.
    pub charged_to: String,
    pub evidence: String,
}

/// What a run produced, for the checker and the report.
#[derive(Debug)]
pub struct Run {
    pub workload: Workload,
    pub history: History,
    pub final_tasks: Vec<Task>,
    /// Unreadable task files at the end: (file, why).
    pub corrupt: Vec<(String, String)>,
    /// The torn states of task files the raw readers saw, first seen first.
    pub torn: Vec<TornRead>,
    /// Raw reads that found a task file torn.
    pub torn_reads: usize,
    pub raw_reads: usize,
    pub planned: usize,
    /// From the release of the writers to the last one finishing.
    pub elapsed: Duration,
    /// When the writers were released: the first writer request, on the history's clock.
    /// That clock starts at the setup session's first request and leaves out session
    /// start-up: the setup session's before it, the writers' between the setup's last
    /// answer and the release (nothing is in flight then), the final listing's after
    /// `end`. A replacement session started after a kill is not left out: other writers'
    /// requests run meanwhile.
    pub released: Duration,
    /// When the writers had all finished, on the history's clock: the final listing
    /// reads the state as of then.
    pub end: Duration,
    pub kills: usize,
    pub sessions: u32,
    /// Things the target did wrong besides anomalies: sessions that could not be opened,
    /// answers that broke the protocol.
    pub errors: Vec<String>,
    pub layout: Layout,
    /// The targets of a mixed race, first the one of the setup and final sessions; empty
    /// for a race on one target.
    pub targets: Vec<String>,
    /// Which of `targets` each writer (by number) ran on; empty for one target.
    pub writer_targets: Vec<usize>,
    /// The settle phase, when there was one.
    pub settle: Option<Settle>,
}

/// Progress reporting: called with (requests done, requests planned).
pub type Progress<'a> = &'a (dyn Fn(usize, usize) + Sync);

pub(crate) fn list_name() -> taskproof_core::task::ListName {
    LIST.parse().expect("a valid list name")
}

/// Creates the workload's seeds through a setup session of target `t` and returns their
/// ids. The run's clock starts at the first request of the first setup (`first`); a later
/// target's setup (each target its own tasks, [`crate::own`]) runs on that clock. `tag`
/// is put before every subject ([`crate::own::tag_request`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn setup(
    ctx: &mut Ctx,
    t: usize,
    first: bool,
    tag: Option<&str>,
    w: Workload,
    writers: usize,
    ops: usize,
    history: &mut Vec<Operation>,
) -> Result<Vec<TaskId>, DriverError> {
    let mut open = ctx.open_target(t).map_err(DriverError::Open)?;
    let hello = open.session.hello().clone();
    let missing: Vec<&str> = w
        .needs()
        .iter()
        .filter(|f| !hello.has(**f))
        .map(|f| f.as_str())
        .collect();
    if !missing.is_empty() {
        let _ = open.session.close();
        return Err(DriverError::Unsupported(format!(
            "the target lacks the {} feature",
            missing.join(", ")
        )));
    }
    // The clock starts at the first request, after the session started.
    if first {
        ctx.start = Instant::now();
    }
    let mut ids: Vec<TaskId> = Vec::new();
    for seed in workload::seeds(w, writers, ops) {
        let mut new = NewTask::new(seed.subject);
        new.blocked_by = seed.blocked_by.iter().map(|&i| ids[i]).collect();
        let mut request = Request::Create {
            list: list_name(),
            task: new,
        };
        if let Some(tag) = tag {
            request = crate::own::tag_request(request, tag);
        }
        let invoke = ctx.now();
        let answer = open
            .session
            .request(&request)
            .map_err(|e| DriverError::Setup(format!("create of a seed task: {e}")))?;
        let completion = ctx.completion(answer.clone());
        match answer {
            Response::Task(t) => ids.push(t.id),
            other => {
                return Err(DriverError::Setup(format!(
                    "the target refused to create a seed task: {}",
                    other.to_json()
                )));
            }
        }
        history.push(Operation {
            index: 0,
            session: open.id,
            writer: None,
            request,
            invoke,
            completion,
        });
    }
    let _ = open.session.close();
    Ok(ids)
}

/// Runs one workload on a fresh root.
pub fn run(
    cfg: &Config,
    w: Workload,
    root: &Path,
    progress: Option<Progress<'_>>,
) -> Result<Run, DriverError> {
    run_mixed(cfg, &Mix::default(), w, root, progress)
}

/// Runs one workload on a fresh root with `cfg.writers` writers of each target of `mix`
/// (see [`Mix`]; an empty mix is `cfg.target` alone).
pub fn run_mixed(
    cfg: &Config,
    mix: &Mix,
    w: Workload,
    root: &Path,
    progress: Option<Progress<'_>>,
) -> Result<Run, DriverError> {
    let targets = mix.targets_or(&cfg.target);
    let mixed = targets.len() > 1;
    let writers = cfg.writers * targets.len();
    std::fs::create_dir_all(root).map_err(|source| DriverError::Root {
        path: root.to_path_buf(),
        source,
    })?;
    let mut ctx = Ctx {
        targets: targets.clone(),
        counts: vec![cfg.writers; targets.len()],
        teamed: vec![false; targets.len()],
        mixed,
        root: root.to_path_buf(),
        options: SessionOptions {
            timeout: cfg.timeout,
            durable: cfg.fsync,
            drive: cfg.drive,
            ..SessionOptions::default()
        },
        start: Instant::now(),
        next_session: AtomicU32::new(0),
        keys: Arc::new(KeyTable::default()),
    };
    let mut setup_ops = Vec::new();
    let ids = setup(&mut ctx, 0, true, None, w, writers, cfg.ops, &mut setup_ops)?;
    let setup_end = ctx.now();
    // Plan every request and intern every metadata key before the first answer arrives.
    let plans: Vec<Vec<Request>> = (0..writers)
        .map(|i| workload::plan(w, i, writers, cfg.ops, &ids, cfg.seed))
        .collect();
    // Every `info` below is recorded after its session is dead: a killed or timed-out
    // adapter's process group was sent SIGKILL (ProcessSession kills the group on a
    // timeout), and an in-process request ran to its end.
    let mut history = History {
        info_bounded: true,
        ..History::default()
    };
    for r in plans.iter().flatten() {
        history.intern_request(r);
    }
    ctx.keys = Arc::new(history.keys.clone());
    let planned: usize = plans.iter().map(Vec::len).sum();

    // Writers open their sessions before the release, so process start-up is not raced.
    // One after another, each with one unrecorded `list` of the race's list: a target that
    // starts its worker on a list's first use (claude-code starts one CLI per list) does it
    // here, not all at once after the release.
    let mut sessions = Vec::new();
    for i in 0..writers {
        let mut open = ctx
            .open_target(ctx.target_of(i))
            .map_err(DriverError::Open)?;
        open.session
            .request(&Request::List { list: list_name() })
            .map_err(DriverError::Open)?;
        sessions.push(open);
    }
    let layout = sessions
        .first()
        .map(|o| o.session.hello().layout)
        .unwrap_or(Layout::Opaque);
    if mixed {
        let odd = sessions
            .iter()
            .enumerate()
            .map(|(i, o)| (i, o.session.hello().layout))
            .find(|&(_, l)| l != layout || l == Layout::Opaque);
        if let Some((i, l)) = odd {
            let why = format!(
                "a mixed race needs every target to keep the same files: {} has layout {}, {} has {}",
                ctx.targets[0],
                layout.as_str(),
                ctx.targets[ctx.target_of(i)],
                l.as_str()
            );
            for mut o in sessions {
                o.session.kill();
            }
            return Err(DriverError::Unsupported(why));
        }
    }
    let folder = root.join(LIST);
    let readers = if layout == Layout::Opaque {
        0
    } else {
        cfg.readers
    };
    let orders = &Orders {
        seed: cfg.seed,
        kill: cfg.kill,
        duration: cfg.duration,
        think: mix.think,
    };
    let ctx = &ctx;
    let (outs, reads, elapsed, released) = release_writers(
        ctx,
        orders,
        plans,
        sessions,
        &folder,
        &vec![layout; readers],
        progress,
        planned,
    );
    let reads: Vec<_> = reads.into_iter().map(|(_, r)| r).collect();
    let end = ctx.now();

    let mut ops: Vec<Operation> = setup_ops;
    let (mut kills, mut errors) = (0, Vec::new());
    let mut idle = Vec::new();
    for o in outs {
        ops.extend(o.ops);
        kills += o.kills;
        errors.extend(o.errors);
        idle.extend(o.open);
    }
    let settle = (!cfg.settle.is_zero()).then(|| settle_phase(cfg.settle, &folder, layout, ctx));
    ops.sort_by_key(|o| (o.invoke, o.session));
    // The main thread may be scheduled late after the barrier; the first writer request
    // marks the release better.
    let released = ops
        .iter()
        .filter(|o| o.writer.is_some())
        .map(|o| o.invoke)
        .min()
        .unwrap_or(released);
    // One clock: cut the writers' start-up out of every time after the release.
    let gap = released.saturating_sub(setup_end).saturating_sub(SETUP_GAP);
    let shift = |t: Duration| {
        if t >= released {
            t - gap
        } else {
            t.min(setup_end)
        }
    };
    for mut op in ops {
        op.invoke = shift(op.invoke);
        match &mut op.completion {
            Completion::Ok { at, .. }
            | Completion::Fail { at, .. }
            | Completion::Info { at, .. } => *at = shift(*at),
        }
        history.push(op);
    }
    let (released, end) = (shift(released), shift(end.max(released)));
    let (mut raw_reads, mut torn_reads) = (0, 0);
    let mut states: HashMap<(String, u64), TornRead> = HashMap::new();
    for r in reads {
        raw_reads += r.reads;
        torn_reads += r.torn_reads;
        for (key, mut t) in r.torn {
            t.at = shift(t.at);
            match states.entry(key) {
                std::collections::hash_map::Entry::Vacant(v) => {
                    v.insert(t);
                }
                std::collections::hash_map::Entry::Occupied(mut o) => {
                    let seen = o.get_mut();
                    seen.reads += t.reads;
                    if (t.at, t.reader) < (seen.at, seen.reader) {
                        (seen.at, seen.reader) = (t.at, t.reader);
                    }
                }
            }
        }
    }
    let mut torn: Vec<TornRead> = states.into_values().collect();
    torn.sort_by(|a, b| (a.at, &a.file, a.reader).cmp(&(b.at, &b.file, b.reader)));

    let mut last = ctx.open().map_err(DriverError::Open)?;
    let (final_tasks, listed_corrupt) =
        match last.session.request(&Request::List { list: list_name() }) {
            Ok(Response::Tasks { tasks, corrupt }) => (tasks, corrupt),
            Ok(other) => return Err(DriverError::Final(other.to_json().to_string())),
            Err(e) => return Err(DriverError::Final(e.to_string())),
        };
    let _ = last.session.close();
    for mut o in idle {
        let _ = o.session.close();
    }
    let mut corrupt: Vec<(String, String)> = if layout == Layout::Opaque {
        Vec::new()
    } else {
        scan_corrupt(&folder, layout)
    };
    for name in listed_corrupt {
        let name = format!("{LIST}/{name}");
        if !corrupt.iter().any(|(n, _)| *n == name) {
            corrupt.push((name, "named corrupt by the target's listing".into()));
        }
    }
    Ok(Run {
        workload: w,
        history,
        final_tasks,
        corrupt,
        torn,
        torn_reads,
        raw_reads,
        planned,
        elapsed,
        released,
        end,
        kills,
        sessions: ctx.next_session.load(Ordering::SeqCst),
        errors,
        layout,
        targets: if mixed {
            ctx.targets.iter().map(ToString::to_string).collect()
        } else {
            Vec::new()
        },
        writer_targets: if mixed {
            (0..writers).map(|i| ctx.target_of(i)).collect()
        } else {
            Vec::new()
        },
        settle,
    })
}

/// The task files of the race's list (`race/1.json`), in the layout's naming.
pub(crate) fn task_files(folder: &Path, layout: Layout) -> BTreeSet<String> {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return BTreeSet::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| layout.task_id_of(n).is_some())
        .map(|n| format!("{LIST}/{n}"))
        .collect()
}

/// The settle phase: the writers' sessions stay open and idle for `wait`; the list's task
/// files are watched every 50 ms, and each that vanishes (no request is in flight) is
/// charged to the target that can act between requests: a target whose sessions are
/// processes. An in-process store runs only inside a request, so it cannot be the one.
/// When the store's `.highwatermark` was rewritten at the same moment, the report says so
/// (Claude Code's reset of a finished list writes it as it deletes).
fn settle_phase(wait: Duration, folder: &Path, layout: Layout, ctx: &Ctx) -> Settle {
    let started = Instant::now();
    let mut present = task_files(folder, layout);
    let watermark = folder.join(".highwatermark");
    let stamp = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let mut last_stamp = stamp(&watermark);
    let acting: Vec<String> = ctx
        .targets
        .iter()
        .filter(|t| t.is_process())
        .map(ToString::to_string)
        .collect();
    let charged_to = if acting.is_empty() {
        "unknown: no target's sessions run between requests".to_string()
    } else {
        acting.join(" or ")
    };
    let mut vanished = Vec::new();
    while layout != Layout::Opaque && started.elapsed() < wait {
        std::thread::sleep(Duration::from_millis(50));
        let now = task_files(folder, layout);
        let stamp_now = stamp(&watermark);
        let rewritten = stamp_now != last_stamp;
        last_stamp = stamp_now;
        for file in present.difference(&now) {
            let mut evidence = format!(
                "the file was gone {:.2} s into the settle phase, with no request in flight",
                started.elapsed().as_secs_f64()
            );
            if acting.len() == 1 && ctx.targets.len() > 1 {
                evidence.push_str(&format!(
                    "; {} is the only target of the race whose sessions run between requests (in-process stores act only inside a request)",
                    acting[0]
                ));
            }
            if rewritten {
                evidence.push_str(
                    "; .highwatermark was rewritten at the same moment (Claude Code's reset of a finished list writes it as it deletes the task files)",
                );
            }
            vanished.push(Vanished {
                file: file.clone(),
                after: started.elapsed().as_secs_f64(),
                charged_to: charged_to.clone(),
                evidence,
            });
        }
        present = now;
    }
    if layout == Layout::Opaque {
        std::thread::sleep(wait);
    }
    Settle {
        seconds: wait.as_secs_f64(),
        vanished,
    }
}
