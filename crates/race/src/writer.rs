//! The writers: one thread per session that sends its planned requests, and the context
//! they share (the targets, the root, the run's clock, session numbers). A writer that is to
//! be killed arms a killer thread (see [`super::driver`] for why the kill lands before,
//! during or after the store's work) and opens a replacement session afterwards; a request
//! refused with a storage failure of the moment is sent again, as an agent would.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, mpsc};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use crate::driver::Progress;
use crate::history::{Completion, KeyTable, Operation, SessionId, TaskView};
use crate::readers::{ReaderOut, reader};
use taskproof_core::protocol::{ErrorKind, Layout, Request, Response};
use taskproof_session::{Session, SessionOptions, TargetError};
use taskproof_targets::TargetSpec;

/// Chance that a writer is killed around any one request, with `--kill`.
const KILL_CHANCE: f64 = 0.01;
/// The longest delay between sending a request and killing its `cmd:` session.
const MAX_KILL_DELAY_US: u64 = 3000;
/// How often a writer repeats a request refused as `corrupt` or `io` (a storage failure
/// of the moment, such as reading a file another writer is rewriting), as an agent would.
/// Every attempt is a request of its own in the history.
const MAX_RETRIES: usize = 10;

/// What every writer of a run is told besides its requests.
pub(super) struct Orders {
    pub seed: u64,
    /// Kill writers at random moments (`--kill`).
    pub kill: bool,
    /// Stop sending after this long, planned requests left or not.
    pub duration: Option<Duration>,
    /// The pause between a writer's requests.
    pub think: Duration,
}

pub(super) struct Ctx {
    /// The targets, first the one of the setup and final sessions (one for a plain race).
    pub(super) targets: Vec<TargetSpec>,
    /// Writers of each target, in order (writers `0..counts[0]` run the first target, the
    /// next `counts[1]` the second, and so on).
    pub(super) counts: Vec<usize>,
    /// Per target: its writers are the members of agent teams, a lead and its teammates in
    /// one process (`Mix::teammates`); such a writer is not replaced alone when its
    /// session dies.
    pub(super) teamed: Vec<bool>,
    /// A mixed race: targets of several kinds share the list ([`TargetSpec::open_racing`]).
    pub(super) mixed: bool,
    pub(super) root: PathBuf,
    pub(super) options: SessionOptions,
    pub(super) start: Instant,
    pub(super) next_session: AtomicU32,
    pub(super) keys: Arc<KeyTable>,
}

/// A session with its number and, for processes, the process group to kill.
pub(super) struct Open {
    pub(super) session: Box<dyn Session>,
    pub(super) id: SessionId,
    pub(super) pgid: Option<u32>,
}

impl Ctx {
    pub(super) fn now(&self) -> Duration {
        self.start.elapsed()
    }

    pub(super) fn open(&self) -> Result<Open, TargetError> {
        self.open_target(0)
    }

    /// The target of writer `w` (see [`Ctx::counts`]).
    pub(super) fn target_of(&self, w: usize) -> usize {
        let mut first = 0;
        for (t, &c) in self.counts.iter().enumerate() {
            first += c;
            if w < first {
                return t;
            }
        }
        self.targets.len() - 1
    }

    /// The first writer of target `t`.
    pub(super) fn first_writer(&self, t: usize) -> usize {
        self.counts[..t].iter().sum()
    }

    pub(super) fn open_target(&self, t: usize) -> Result<Open, TargetError> {
        let id = self.next_session.fetch_add(1, Ordering::SeqCst);
        let (session, pgid) =
            self.targets[t].open_racing(&self.root, self.options.clone(), self.mixed)?;
        Ok(Open { session, id, pgid })
    }

    pub(super) fn completion(&self, r: Response) -> Completion {
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

pub(super) struct WriterOut {
    pub(super) ops: Vec<Operation>,
    pub(super) kills: usize,
    pub(super) errors: Vec<String>,
    /// The writer's last session, still open: the settle phase keeps it idle, as an agent
    /// left open, before the driver closes it.
    pub(super) open: Option<Open>,
}

/// One phase of writers: every writer started on its own thread and released at once, and
/// one raw reader per entry of `readers` polling `folder` in the layout it names until the
/// last writer ended, `progress` told of the requests done every 100 ms. Returns the writers'
/// outputs in writer order, each reader's layout and reads, the time from the release to the
/// last writer's end, and the release on the run's clock. A plain race and a race of targets
/// on their own tasks (`crate::own`) run their writers through it alike.
#[allow(clippy::too_many_arguments)]
pub(super) fn release_writers(
    ctx: &Ctx,
    orders: &Orders,
    plans: Vec<Vec<Request>>,
    sessions: Vec<Open>,
    folder: &Path,
    readers: &[Layout],
    progress: Option<Progress<'_>>,
    planned: usize,
) -> (Vec<WriterOut>, Vec<(Layout, ReaderOut)>, Duration, Duration) {
    let writers = plans.len();
    let barrier = Barrier::new(writers + 1);
    let stop = AtomicBool::new(false);
    let done = AtomicUsize::new(0);
    let finished = AtomicUsize::new(0);
    std::thread::scope(|s| {
        let reader_handles: Vec<_> = readers
            .iter()
            .enumerate()
            .map(|(k, &layout)| {
                let stop = &stop;
                s.spawn(move || (layout, reader(k, folder, layout, stop, ctx.start)))
            })
            .collect();
        let writer_handles: Vec<_> = plans
            .into_iter()
            .zip(sessions)
            .enumerate()
            .map(|(i, (plan, open))| {
                let (barrier, done, finished) = (&barrier, &done, &finished);
                s.spawn(move || {
                    let out = writer(ctx, orders, i, plan, open, barrier, done);
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
        let reads = reader_handles
            .into_iter()
            .map(|h| h.join().expect("reader threads do not panic"))
            .collect();
        (outs, reads, elapsed, released_since_start)
    })
}

pub(super) fn writer(
    ctx: &Ctx,
    orders: &Orders,
    w: usize,
    plan: Vec<Request>,
    mut open: Open,
    start: &Barrier,
    done: &AtomicUsize,
) -> WriterOut {
    let mut rng = StdRng::seed_from_u64(orders.seed ^ 0x6b69_6c6c ^ ((w as u64) << 32));
    let mut out = WriterOut {
        ops: Vec::with_capacity(plan.len()),
        kills: 0,
        errors: Vec::new(),
        open: None,
    };
    start.wait();
    let deadline = orders.duration.map(|d| Instant::now() + d);
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
        if !orders.think.is_zero() && !out.ops.is_empty() {
            std::thread::sleep(orders.think);
            if deadline.is_some_and(|d| Instant::now() >= d) {
                break;
            }
        }
        let kill = orders.kill && rng.random_bool(KILL_CHANCE);
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
        if dead && ctx.teamed[ctx.target_of(w)] {
            out.errors.push(format!(
                "writer {w}: its team's CLI ended; a member of an agent team is not replaced alone"
            ));
            break;
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
    out.open = Some(open);
    out
}
