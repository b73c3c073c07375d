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

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, mpsc};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::check::TornRead;
use super::history::{Completion, History, KeyTable, Operation, SessionId, TaskView};
use super::mix::Mix;
use super::workload::{self, LIST, Workload};
use crate::protocol::{ErrorKind, Layout, Request, Response};
use crate::store::{Options, StrictStore};
use crate::target::{
    InProcessSession, ProcessSession, Session, SessionOptions, TargetError, TargetSpec,
};
use crate::task::{NewTask, Strictness, Task, TaskId};

/// Chance that a writer is killed around any one request, with `--kill`.
const KILL_CHANCE: f64 = 0.01;
/// The longest delay between sending a request and killing its `cmd:` session.
const MAX_KILL_DELAY_US: u64 = 3000;
/// How often a writer repeats a request refused as `corrupt` or `io` (a storage failure
/// of the moment, such as reading a file another writer is rewriting), as an agent would.
/// Every attempt is a request of its own in the history.
const MAX_RETRIES: usize = 10;
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
    pub profile: crate::profile::Profile,
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
}

/// Progress reporting: called with (requests done, requests planned).
pub type Progress<'a> = &'a (dyn Fn(usize, usize) + Sync);

struct Ctx {
    /// The targets, first the one of the setup and final sessions (one for a plain race).
    targets: Vec<TargetSpec>,
    /// Writers per target.
    per_target: usize,
    /// A mixed race: the reference store also takes Claude Code's locks.
    mixed: bool,
    root: PathBuf,
    options: SessionOptions,
    start: Instant,
    next_session: AtomicU32,
    keys: Arc<KeyTable>,
}

/// A session with its number and, for processes, the process group to kill.
struct Open {
    session: Box<dyn Session>,
    id: SessionId,
    pgid: Option<u32>,
}

impl Ctx {
    fn now(&self) -> Duration {
        self.start.elapsed()
    }

    fn open(&self) -> Result<Open, TargetError> {
        self.open_target(0)
    }

    /// The target of writer `w`: writers `0..per_target` run on the first, and so on.
    fn target_of(&self, w: usize) -> usize {
        (w / self.per_target.max(1)).min(self.targets.len() - 1)
    }

    fn open_target(&self, t: usize) -> Result<Open, TargetError> {
        let id = self.next_session.fetch_add(1, Ordering::SeqCst);
        match &self.targets[t] {
            // In a mixed race the reference shares the list with targets that lock the way
            // Claude Code does, as `taskproof mcp` opens it.
            TargetSpec::Reference if self.mixed => {
                let store = StrictStore::open(
                    &self.root,
                    Options {
                        durable: self.options.durable,
                    },
                )
                .map_err(|e| TargetError::Io(format!("failed to open the store: {e}")))?
                .with_claude_code_locks();
                Ok(Open {
                    session: Box::new(InProcessSession::new(Box::new(store))),
                    id,
                    pgid: None,
                })
            }
            TargetSpec::Cmd(cmd) => {
                let s = ProcessSession::spawn(cmd, &self.root, self.options.timeout)?;
                let pgid = Some(s.pid());
                Ok(Open {
                    session: Box::new(s),
                    id,
                    pgid,
                })
            }
            t => Ok(Open {
                session: t.open(&self.root, self.options)?,
                id,
                pgid: None,
            }),
        }
    }

    fn completion(&self, r: Response) -> Completion {
        let at = self.now();
        match r {
            Response::Task(t) => Completion::Ok {
                at,
                task: Some(TaskView::new(&t, &self.keys)),
            },
            Response::Error(f) => Completion::Fail {
                at,
                kind: f.kind,
                message: f.message,
            },
            _ => Completion::Ok { at, task: None },
        }
    }
}

fn list_name() -> crate::task::ListName {
    LIST.parse().expect("a valid list name")
}

/// Creates the workload's seeds through a setup session and returns their ids.
fn setup(
    ctx: &mut Ctx,
    w: Workload,
    writers: usize,
    ops: usize,
    history: &mut Vec<Operation>,
) -> Result<Vec<TaskId>, DriverError> {
    let mut open = ctx.open().map_err(DriverError::Open)?;
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
    ctx.start = Instant::now();
    let mut ids: Vec<TaskId> = Vec::new();
    for seed in workload::seeds(w, writers, ops) {
        let mut new = NewTask::new(seed.subject);
        new.blocked_by = seed.blocked_by.iter().map(|&i| ids[i]).collect();
        let request = Request::Create {
            list: list_name(),
            task: new,
        };
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

struct WriterOut {
    ops: Vec<Operation>,
    kills: usize,
    errors: Vec<String>,
}

#[allow(clippy::too_many_arguments)]
fn writer(
    ctx: &Ctx,
    cfg: &Config,
    think: Duration,
    w: usize,
    plan: Vec<Request>,
    mut open: Open,
    start: &Barrier,
    done: &AtomicUsize,
) -> WriterOut {
    let mut rng = StdRng::seed_from_u64(cfg.seed ^ 0x6b69_6c6c ^ ((w as u64) << 32));
    let mut out = WriterOut {
        ops: Vec::with_capacity(plan.len()),
        kills: 0,
        errors: Vec::new(),
    };
    start.wait();
    let deadline = cfg.duration.map(|d| Instant::now() + d);
    let mut queue = plan.into_iter();
    let mut retry: Option<(Request, usize)> = None;
    loop {
        let (request, attempt) = match retry.take() {
            Some(r) => r,
            None => match queue.next() {
                Some(r) => (r, 0),
                None => break,
            },
        };
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        if !think.is_zero() && !out.ops.is_empty() {
            std::thread::sleep(think);
            if deadline.is_some_and(|d| Instant::now() >= d) {
                break;
            }
        }
        let kill = cfg.kill && rng.random_bool(KILL_CHANCE);
        let delay = Duration::from_micros(rng.random_range(0..MAX_KILL_DELAY_US));
        let invoke = ctx.now();
        let (completion, dead) = if kill {
            out.kills += 1;
            let answer = match open.pgid {
                Some(pgid) => {
                    let (cancel, cancelled) = mpsc::channel::<()>();
                    let killer = std::thread::spawn(move || {
                        if cancelled.recv_timeout(delay) == Err(mpsc::RecvTimeoutError::Timeout) {
                            // The child is not reaped before this thread is joined, so its
                            // process group id still names it.
                            if let Some(pid) = rustix::process::Pid::from_raw(pgid as i32) {
                                let _ = rustix::process::kill_process_group(
                                    pid,
                                    rustix::process::Signal::KILL,
                                );
                            }
                        }
                    });
                    let answer = open.session.request(&request);
                    let _ = cancel.send(());
                    let _ = killer.join();
                    open.session.kill();
                    answer.map_err(|e| format!("SIGKILL {delay:?} after sending: {e}"))
                }
                None => {
                    let _ = open.session.request(&request);
                    open.session.kill();
                    Err("in-process session dropped; its answer was discarded".to_string())
                }
            };
            let c = match answer {
                Ok(r) => ctx.completion(r),
                Err(reason) => Completion::Info {
                    at: ctx.now(),
                    reason,
                },
            };
            (c, true)
        } else {
            match open.session.request(&request) {
                Ok(r) => (ctx.completion(r), false),
                Err(e @ TargetError::BadResponse { .. }) => {
                    out.errors.push(format!("session {}: {e}", open.id));
                    (
                        Completion::Info {
                            at: ctx.now(),
                            reason: e.to_string(),
                        },
                        false,
                    )
                }
                Err(e) => {
                    out.errors.push(format!("session {}: {e}", open.id));
                    (
                        Completion::Info {
                            at: ctx.now(),
                            reason: e.to_string(),
                        },
                        true,
                    )
                }
            }
        };
        let transient = matches!(
            completion,
            Completion::Fail {
                kind: ErrorKind::Corrupt | ErrorKind::Io,
                ..
            }
        );
        out.ops.push(Operation {
            index: 0,
            session: open.id,
            writer: Some(w as u32),
            request: request.clone(),
            invoke,
            completion,
        });
        if transient && attempt < MAX_RETRIES {
            retry = Some((request, attempt + 1));
        } else {
            done.fetch_add(1, Ordering::Relaxed);
        }
        if dead {
            match ctx.open_target(ctx.target_of(w)) {
                Ok(o) => open = o,
                Err(e) => {
                    out.errors.push(format!(
                        "writer {w}: failed to open a replacement session: {e}"
                    ));
                    break;
                }
            }
        }
    }
    let _ = open.session.close();
    out
}

/// What identifies one state of a file: inode, modification time, length and bytes. A
/// writer changes at least one of them with every write, so reads of one state are reads
/// of the same moment of the same write.
fn file_state(meta: &std::fs::Metadata, bytes: &[u8]) -> u64 {
    use std::hash::{Hash, Hasher};
    use std::os::unix::fs::MetadataExt;
    let mut h = std::hash::DefaultHasher::new();
    (meta.ino(), meta.mtime(), meta.mtime_nsec(), meta.size()).hash(&mut h);
    bytes.hash(&mut h);
    h.finish()
}

/// What one raw reader saw: reads, torn reads, and the torn states keyed by file and state.
struct ReaderOut {
    reads: usize,
    torn_reads: usize,
    torn: HashMap<(String, u64), TornRead>,
}

/// Polls the list's task files until `stop`, counting reads and torn reads, and keeping
/// each torn state of a file once with the number of reads that saw it.
fn reader(n: usize, folder: &Path, layout: Layout, stop: &AtomicBool, ctx: &Ctx) -> ReaderOut {
    let mut out = ReaderOut {
        reads: 0,
        torn_reads: 0,
        torn: HashMap::new(),
    };
    while !stop.load(Ordering::Relaxed) {
        read_pass(n, folder, layout, Some(stop), ctx, &mut out);
        std::thread::yield_now();
    }
    out
}

/// Reads every task file of the folder once (stopping early when `stop` is set).
fn read_pass(
    n: usize,
    folder: &Path,
    layout: Layout,
    stop: Option<&AtomicBool>,
    ctx: &Ctx,
    out: &mut ReaderOut,
) {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if layout.task_id_of(name).is_none() {
            continue;
        }
        let Ok(mut file) = std::fs::File::open(entry.path()) else {
            continue;
        };
        let Ok(meta) = file.metadata() else { continue };
        let mut bytes = Vec::new();
        if std::io::Read::read_to_end(&mut file, &mut bytes).is_err() {
            continue;
        }
        out.reads += 1;
        if let Err(error) = parse_task(&bytes) {
            out.torn_reads += 1;
            let file = format!("{LIST}/{name}");
            let state = file_state(&meta, &bytes);
            out.torn
                .entry((file.clone(), state))
                .or_insert_with(|| TornRead {
                    reader: n,
                    at: ctx.now(),
                    file,
                    len: bytes.len(),
                    error,
                    reads: 0,
                })
                .reads += 1;
        }
        if stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
            break;
        }
    }
}

fn parse_task(bytes: &[u8]) -> Result<Task, String> {
    let v: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    Task::from_json(&v, Strictness::Lenient).map_err(|e| e.to_string())
}

/// Task files in the folder that do not parse, with the reason.
fn scan_corrupt(folder: &Path, layout: Layout) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(folder) else {
        return out;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if layout.task_id_of(&name).is_none() {
            continue;
        }
        if let Ok(bytes) = std::fs::read(entry.path())
            && let Err(e) = parse_task(&bytes)
        {
            out.push((format!("{LIST}/{name}"), e));
        }
    }
    out.sort();
    out
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
        per_target: cfg.writers,
        mixed,
        root: root.to_path_buf(),
        options: SessionOptions {
            timeout: cfg.timeout,
            durable: cfg.fsync,
            ..SessionOptions::default()
        },
        start: Instant::now(),
        next_session: AtomicU32::new(0),
        keys: Arc::new(KeyTable::default()),
    };
    let mut setup_ops = Vec::new();
    let ids = setup(&mut ctx, w, writers, cfg.ops, &mut setup_ops)?;
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
    let barrier = Barrier::new(writers + 1);
    let stop = AtomicBool::new(false);
    let done = AtomicUsize::new(0);
    let finished = AtomicUsize::new(0);
    let ctx = &ctx;
    let (outs, reads, elapsed, released) = std::thread::scope(|s| {
        let reader_handles: Vec<_> = (0..readers)
            .map(|n| {
                let (folder, stop) = (&folder, &stop);
                s.spawn(move || reader(n, folder, layout, stop, ctx))
            })
            .collect();
        let writer_handles: Vec<_> = plans
            .into_iter()
            .zip(sessions)
            .enumerate()
            .map(|(i, (plan, open))| {
                let (barrier, done, finished) = (&barrier, &done, &finished);
                s.spawn(move || {
                    let out = writer(ctx, cfg, mix.think, i, plan, open, barrier, done);
                    finished.fetch_add(1, Ordering::SeqCst);
                    out
                })
            })
            .collect();
        barrier.wait();
        let released = Instant::now();
        let released_since_start = ctx.now();
        if let Some(p) = progress {
            while finished.load(Ordering::SeqCst) < writers {
                p(done.load(Ordering::Relaxed), planned);
                std::thread::sleep(Duration::from_millis(100));
            }
            p(done.load(Ordering::Relaxed), planned);
        }
        let outs: Vec<WriterOut> = writer_handles
            .into_iter()
            .map(|h| h.join().expect("writer threads do not panic"))
            .collect();
        let elapsed = released.elapsed();
        stop.store(true, Ordering::SeqCst);
        let reads: Vec<_> = reader_handles
            .into_iter()
            .map(|h| h.join().expect("reader threads do not panic"))
            .collect();
        (outs, reads, elapsed, released_since_start)
    });
    let end = ctx.now();

    let mut ops: Vec<Operation> = setup_ops;
    let (mut kills, mut errors) = (0, Vec::new());
    for o in outs {
        ops.extend(o.ops);
        kills += o.kills;
        errors.extend(o.errors);
    }
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
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_torn_state_read_many_times_is_one_torn_write() {
        let root = tempfile::tempdir().unwrap();
        let folder = root.path().join(LIST);
        std::fs::create_dir_all(&folder).unwrap();
        let ctx = Ctx {
            targets: vec![TargetSpec::Reference],
            per_target: 1,
            mixed: false,
            root: root.path().to_path_buf(),
            options: SessionOptions::default(),
            start: Instant::now(),
            next_session: AtomicU32::new(0),
            keys: Arc::new(KeyTable::default()),
        };
        let mut out = ReaderOut {
            reads: 0,
            torn_reads: 0,
            torn: HashMap::new(),
        };
        let pass = |out: &mut ReaderOut| read_pass(0, &folder, Layout::ClaudeCode, None, &ctx, out);
        // A writer truncated 1.json and has not written it yet; readers see that moment
        // again and again.
        std::fs::write(folder.join("1.json"), "").unwrap();
        for _ in 0..5 {
            pass(&mut out);
        }
        assert_eq!((out.reads, out.torn_reads, out.torn.len()), (5, 5, 1));
        // Half written: another torn state of the file.
        std::fs::write(folder.join("1.json"), "{\"id\": \"1\", \"subj").unwrap();
        pass(&mut out);
        pass(&mut out);
        // Whole: not torn.
        let whole = Task::new(TaskId(1), "a").to_json().to_string();
        std::fs::write(folder.join("1.json"), whole).unwrap();
        pass(&mut out);
        assert_eq!((out.reads, out.torn_reads, out.torn.len()), (8, 7, 2));
        let mut reads: Vec<usize> = out.torn.values().map(|t| t.reads).collect();
        reads.sort();
        assert_eq!(reads, vec![2, 5]);
    }
}
