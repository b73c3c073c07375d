//! The reference background-task runner, in-process: each task a real `sh -c` child leading
//! a process group of its own, its stdout and stderr going to `FOLDER/tasks/ID.output`, the
//! five statuses, the `notified` latch (an `AtomicBool` set by compare-and-set, so that the
//! result handler and a kill racing to finish a task send exactly one notification), eviction
//! only once final and notified, the seed's ids, an output cap, and cleanup: a kill or the
//! session's end kills the task's whole process group, and with a [`Guardian`] (the served
//! runner) a SIGKILL of the runner's process too. docs/background.md states the rules
//! (B1…B8) this implements; [`BgMutant`] breaks one each.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, WaitId, WaitIdOptions, kill_process, kill_process_group};

use crate::guardian::{Guardian, register_self};
use crate::mutant::BgMutant;
use taskproof_session::background::{
    BgEnd, BgError, BgKill, BgNotification, BgOutput, BgSession, BgStarted, BgStatus, BgWork,
};

/// The seed's output cap: 5 GB per task (markdown.engineering lesson 14, "Output
/// Management").
pub const SEED_OUTPUT_CAP: u64 = 5 * 1024 * 1024 * 1024;

/// The most bytes one output read returns; a reader continues from `next_offset`.
pub const MAX_READ: usize = 4 * 1024 * 1024;

/// How often the cap watchdog looks at the running tasks' output files.
const CAP_POLL: Duration = Duration::from_millis(20);

/// The type letter of a shell task (the seed: `b` = bash).
pub const BASH_PREFIX: char = 'b';

/// What a runner is told when it starts.
#[derive(Debug, Clone, Default)]
pub struct RunnerOptions {
    /// The rule to break, if any.
    pub mutant: Option<BgMutant>,
    /// Output bytes kept per task before the task is stopped [default: the seed's 5 GB].
    pub output_cap: Option<u64>,
    /// A taskproof binary to start the guardian with (`serve-background --guardian`), so
    /// that a SIGKILL of this process kills the tasks too; `None` in-process.
    pub guardian_exe: Option<PathBuf>,
}

/// Whether `id` has the seed's form: a type letter and eight of `[0-9a-z]`.
pub fn is_seed_id(id: &str) -> bool {
    let b = id.as_bytes();
    b.len() == 9
        && b[0].is_ascii_lowercase()
        && b[1..]
            .iter()
            .all(|c| c.is_ascii_digit() || c.is_ascii_lowercase())
}

/// A fresh id: the type letter and eight characters of `[0-9a-z]` from the thread's
/// cryptographically secure generator (36^8 ≈ 2.8 × 10^12 values).
pub fn random_id(prefix: char) -> String {
    use rand::RngExt;
    const ALPHABET: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut rng = rand::rng();
    let mut id = String::with_capacity(9);
    id.push(prefix);
    for _ in 0..8 {
        id.push(ALPHABET[rng.random_range(0..ALPHABET.len())] as char);
    }
    id
}

#[derive(Debug)]
struct TaskState {
    status: BgStatus,
    exit_code: Option<i32>,
    /// Why the task ended, in words, for the notification's summary.
    summary: String,
    /// The group leader's pid (= the group id) once started.
    pgid: Option<i32>,
    /// Set once the leader was reaped: the group id may name another process from then on,
    /// so nothing is signalled by it any more.
    reaped: bool,
    /// The command of a task held in `pending`.
    held: Option<String>,
    /// Stopped by the output cap: its file is cut to the cap once its processes are gone,
    /// and only then is it notified.
    capped: bool,
}

#[derive(Debug)]
struct Task {
    id: String,
    output_file: PathBuf,
    /// The seed's one-way latch: set by compare-and-set by whichever path notifies first.
    notified: AtomicBool,
    state: Mutex<TaskState>,
}

impl Task {
    fn state(&self) -> MutexGuard<'_, TaskState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A task that was evicted: what is still answered about it.
#[derive(Debug, Clone)]
struct Tomb {
    status: BgStatus,
    output_file: PathBuf,
}

#[derive(Debug, Default)]
struct Shared {
    tasks: BTreeMap<String, Arc<Task>>,
    evicted: BTreeMap<String, Tomb>,
    /// Every id started, in order.
    order: Vec<String>,
    /// Every notification sent, in order; `delivered` of them were handed out.
    notes: Vec<BgNotification>,
    delivered: usize,
    /// Every group id ever started (for the orphan checks).
    pgids: Vec<i32>,
    ended: bool,
}

#[derive(Debug)]
struct Inner {
    folder: PathBuf,
    tasks_dir: PathBuf,
    mutant: Option<BgMutant>,
    cap: u64,
    shared: Mutex<Shared>,
    changed: Condvar,
    guardian: Mutex<Option<Guardian>>,
    counter: AtomicU64,
    /// Threads (one per started task, and the cap watchdog) still running.
    threads: Mutex<Vec<std::thread::JoinHandle<()>>>,
}

/// The reference runner: one session, its folder, its tasks.
#[derive(Debug)]
pub struct Runner {
    inner: Arc<Inner>,
}

impl Runner {
    /// Starts a session in `folder` (created if missing); task outputs go to
    /// `folder/tasks/`.
    pub fn new(folder: &Path, options: RunnerOptions) -> Result<Runner, BgError> {
        let tasks_dir = folder.join("tasks");
        std::fs::create_dir_all(&tasks_dir).map_err(BgError::io(format!(
            "failed to create {}",
            tasks_dir.display()
        )))?;
        let guardian = match (&options.guardian_exe, options.mutant) {
            (_, Some(BgMutant::NoDeathCleanup)) | (None, _) => None,
            (Some(exe), _) => Some(Guardian::start(exe, &["serve-background"]).map_err(
                BgError::io(format!("failed to start the guardian {}", exe.display())),
            )?),
        };
        let inner = Arc::new(Inner {
            folder: folder.to_path_buf(),
            tasks_dir,
            mutant: options.mutant,
            cap: options.output_cap.unwrap_or(SEED_OUTPUT_CAP),
            shared: Mutex::new(Shared::default()),
            changed: Condvar::new(),
            guardian: Mutex::new(guardian),
            counter: AtomicU64::new(0),
            threads: Mutex::new(Vec::new()),
        });
        if inner.mutant != Some(BgMutant::NoOutputCap) {
            let weak = Arc::downgrade(&inner);
            let watchdog = std::thread::Builder::new()
                .name("bg-cap".into())
                .spawn(move || cap_watchdog(weak))
                .map_err(BgError::io("failed to start the cap watchdog"))?;
            inner.threads().push(watchdog);
        }
        Ok(Runner { inner })
    }

    /// The session's folder.
    pub fn folder(&self) -> &Path {
        &self.inner.folder
    }

    /// The cap in force.
    pub fn cap(&self) -> u64 {
        self.inner.cap
    }

    fn spawn_task(&mut self, work: &BgWork, held: bool) -> Result<BgStarted, BgError> {
        let inner = &self.inner;
        if inner.shared().ended {
            return Err(BgError::Ended("the session has ended".into()));
        }
        let (id, file) = inner.create_output()?;
        let output_file = inner.tasks_dir.join(format!("{id}.output"));
        let task = Arc::new(Task {
            id: id.clone(),
            output_file: output_file.clone(),
            notified: AtomicBool::new(false),
            state: Mutex::new(TaskState {
                status: BgStatus::Pending,
                exit_code: None,
                summary: String::new(),
                pgid: None,
                reaped: false,
                held: held.then(|| work.command.clone()),
                capped: false,
            }),
        });
        {
            let mut s = inner.shared();
            s.tasks.insert(id.clone(), task.clone());
            s.order.push(id.clone());
        }
        if !held {
            let mut st = task.state();
            if let Err(e) = inner.start(&task, &mut st, &work.command, file) {
                drop(st);
                inner.settle(
                    &task,
                    BgStatus::Failed,
                    None,
                    format!("failed to start: {e}"),
                );
                inner.finish(&task);
            }
        }
        Ok(BgStarted {
            id,
            output_file: Some(output_file),
        })
    }
}

impl Inner {
    fn shared(&self) -> MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn threads(&self) -> MutexGuard<'_, Vec<std::thread::JoinHandle<()>>> {
        self.threads.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A fresh id and its output file, created with O_EXCL and O_NOFOLLOW (the seed: no
    /// symbolic link in the tasks folder can redirect a task's output).
    fn create_output(&self) -> Result<(String, File), BgError> {
        for _ in 0..16 {
            let id = if self.mutant == Some(BgMutant::CounterIds) {
                let n = self.counter.fetch_add(1, Ordering::Relaxed) + 1;
                format!("{BASH_PREFIX}{n:08}")
            } else {
                random_id(BASH_PREFIX)
            };
            let path = self.tasks_dir.join(format!("{id}.output"));
            match OpenOptions::new()
                .append(true)
                .create_new(true)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&path)
            {
                Ok(f) => return Ok((id, f)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(BgError::Io {
                        what: format!("failed to create {}", path.display()),
                        error: e,
                    });
                }
            }
        }
        Err(BgError::Refused("no free task id after 16 tries".into()))
    }

    /// Starts the task's process (`st` is its locked state, `pending`) and the thread that
    /// waits for it.
    fn start(
        self: &Arc<Self>,
        task: &Arc<Task>,
        st: &mut TaskState,
        command: &str,
        file: File,
    ) -> Result<(), BgError> {
        let err = file
            .try_clone()
            .map_err(BgError::io("failed to share the output file with stderr"))?;
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(command)
            .current_dir(&self.folder)
            .stdin(Stdio::null())
            .stdout(Stdio::from(file))
            .stderr(Stdio::from(err))
            .process_group(0);
        let guardian = self
            .guardian
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .and_then(|g| g.fd());
        if let Some(fd) = guardian {
            // SAFETY: the closure only calls write(2), which is async-signal-safe, on a
            // stack buffer.
            unsafe {
                cmd.pre_exec(move || {
                    if register_self(fd) {
                        Ok(())
                    } else {
                        Err(std::io::Error::other(
                            "failed to register with the guardian",
                        ))
                    }
                });
            }
        }
        let child = cmd.spawn().map_err(BgError::io("failed to start sh"))?;
        let pgid = child.id() as i32;
        st.pgid = Some(pgid);
        st.status = BgStatus::Running;
        self.shared().pgids.push(pgid);
        let me = self.clone();
        let t = task.clone();
        let handle = std::thread::Builder::new()
            .name(format!("bg-{}", task.id))
            .spawn(move || me.wait_for(&t, child))
            .map_err(BgError::io("failed to start the task's thread"))?;
        self.threads().push(handle);
        Ok(())
    }

    /// The result handler: waits for the leader to exit (without reaping it, so that its
    /// group id stays reserved), kills what is left of its group, reaps it, and finishes
    /// the task with the status its exit says, unless a kill finished it first.
    fn wait_for(&self, task: &Arc<Task>, mut child: Child) {
        let pid = Pid::from_raw(child.id() as i32).expect("a child's pid is positive");
        while let Err(rustix::io::Errno::INTR) = rustix::process::waitid(
            WaitId::Pid(pid),
            WaitIdOptions::EXITED | WaitIdOptions::NOWAIT,
        ) {}
        let status = {
            let mut st = task.state();
            if self.mutant != Some(BgMutant::KillNoCleanup) {
                // Whatever the task left behind in its group ends with it.
                let _ = kill_process_group(pid, Signal::KILL);
            }
            let status = child.wait().ok();
            st.reaped = true;
            if st.capped {
                self.cut(task, pid.as_raw_nonzero().get());
            }
            if let Some(g) = self
                .guardian
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .as_mut()
            {
                g.forget(pid.as_raw_nonzero().get());
            }
            status
        };
        let (new, code, summary) = match status.and_then(|s| s.code()) {
            Some(0) => (BgStatus::Completed, Some(0), "exit code 0".to_string()),
            Some(c) => (BgStatus::Failed, Some(c), format!("exit code {c}")),
            None => (
                BgStatus::Failed,
                None,
                match status.and_then(|s| s.signal()) {
                    Some(sig) => format!("ended by signal {sig}"),
                    None => "ended without a status".to_string(),
                },
            ),
        };
        self.settle(task, new, code, summary);
        self.finish(task);
    }

    /// Moves the task to the final `status`, unless it is final already (B1). The mutant
    /// status-not-final writes over a final status.
    fn settle(&self, task: &Arc<Task>, status: BgStatus, code: Option<i32>, summary: String) {
        {
            let mut st = task.state();
            if st.status.is_final() && self.mutant != Some(BgMutant::StatusNotFinal) {
                return;
            }
            st.status = status;
            st.exit_code = code;
            st.summary = summary;
        }
        if self.mutant == Some(BgMutant::EvictEarly) {
            self.shared().tasks.remove(&task.id);
        }
    }

    /// Sends the task's one notification: whichever path sets the latch first sends it
    /// (B2). The mutant double-notify has no latch.
    fn finish(&self, task: &Arc<Task>) {
        if self.mutant == Some(BgMutant::DoubleNotify) {
            task.notified.store(true, Ordering::SeqCst);
        } else if task
            .notified
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return;
        }
        let (mut status, mut code, summary) = {
            let st = task.state();
            (st.status, st.exit_code, st.summary.clone())
        };
        if self.mutant == Some(BgMutant::FailureNotifiedAsSuccess) && status == BgStatus::Failed {
            status = BgStatus::Completed;
            code = None;
        }
        let raw = format!(
            "<task-notification>\n<task-id>{}</task-id>\n<output-file>{}</output-file>\n<status>{}</status>\n<summary>Background command {}: {}</summary>\n</task-notification>",
            task.id,
            task.output_file.display(),
            status.as_str(),
            status.as_str(),
            summary
        );
        let note = BgNotification {
            id: task.id.clone(),
            status,
            exit_code: code,
            output_file: Some(task.output_file.clone()),
            raw,
        };
        let mut s = self.shared();
        if self.mutant == Some(BgMutant::DropConcurrent) && s.notes.len() > s.delivered {
            // An earlier notification is still waiting to be delivered: this one is lost.
            return;
        }
        s.notes.push(note);
        drop(s);
        self.changed.notify_all();
    }

    /// Kills the task's processes: the whole group while its leader is unreaped (the mutant
    /// kill-no-cleanup: the leader alone).
    fn signal(&self, st: &TaskState) {
        if st.reaped {
            return;
        }
        if let Some(pid) = st.pgid.and_then(Pid::from_raw) {
            if self.mutant == Some(BgMutant::KillNoCleanup) {
                let _ = kill_process(pid, Signal::KILL);
            } else {
                let _ = kill_process_group(pid, Signal::KILL);
            }
        }
    }

    /// Stops a task that is not final yet with `status` (a kill: `killed`) and notifies.
    /// Answers the status it already had when it was final.
    fn stop(&self, task: &Arc<Task>, status: BgStatus, summary: &str) -> Option<BgStatus> {
        {
            let mut st = task.state();
            if st.status.is_final() {
                return Some(st.status);
            }
            self.signal(&st);
            st.status = status;
            st.exit_code = None;
            st.summary = summary.to_string();
            st.held = None;
        }
        if self.mutant == Some(BgMutant::EvictEarly) {
            self.shared().tasks.remove(&task.id);
        }
        self.finish(task);
        None
    }

    /// Stops a running task that wrote past the cap: `failed`, its group killed; its result
    /// handler cuts the file and notifies once the processes are gone (a dying writer on the
    /// other CPU can still finish a write after the SIGKILL was sent).
    fn cap(&self, task: &Arc<Task>) {
        let mut st = task.state();
        if st.status != BgStatus::Running {
            return;
        }
        self.signal(&st);
        st.status = BgStatus::Failed;
        st.exit_code = None;
        st.summary = format!("output exceeded the cap of {} bytes", self.cap);
        st.capped = true;
    }

    /// Cuts a capped task's output file to the cap and appends the truncation notice, once
    /// no process of its group is alive (at most a second).
    fn cut(&self, task: &Task, pgid: i32) {
        let deadline = Instant::now() + Duration::from_secs(1);
        while !super::procs::group_members(pgid).is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
        if let Ok(f) = OpenOptions::new()
            .append(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&task.output_file)
        {
            let _ = f.set_len(self.cap);
            let _ = (&f).write_all(
                format!("\n[output truncated: over the cap of {} bytes]\n", self.cap).as_bytes(),
            );
        }
    }

    fn find(&self, id: &str) -> Result<Arc<Task>, Option<Tomb>> {
        let s = self.shared();
        match s.tasks.get(id) {
            Some(t) => Ok(t.clone()),
            None => Err(s.evicted.get(id).cloned()),
        }
    }

    /// Ends the session as its user would: every task that is not final is killed
    /// (notified `killed`), every group killed, the task threads joined (at most `grace`),
    /// the guardian told to finish.
    fn end(&self, grace: Duration) {
        let tasks: Vec<Arc<Task>> = {
            let mut s = self.shared();
            s.ended = true;
            s.tasks.values().cloned().collect()
        };
        for t in &tasks {
            self.stop(t, BgStatus::Killed, "killed when the session ended");
        }
        self.changed.notify_all();
        let deadline = Instant::now() + grace;
        loop {
            let handles: Vec<_> = {
                let mut th = self.threads();
                let (done, running): (Vec<_>, Vec<_>) = th.drain(..).partition(|h| h.is_finished());
                *th = running;
                done
            };
            for h in handles {
                let _ = h.join();
            }
            let left = self
                .threads()
                .iter()
                .filter(|h| h.thread().name() != Some("bg-cap"))
                .count();
            if left == 0 || Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        if let Some(g) = self
            .guardian
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            g.finish();
        }
    }
}

/// Every `CAP_POLL`, stops each running task whose output file grew past the cap (B8): its
/// group killed, the file cut to the cap and a truncation notice appended, the task
/// `failed`.
fn cap_watchdog(inner: std::sync::Weak<Inner>) {
    loop {
        std::thread::sleep(CAP_POLL);
        let Some(inner) = inner.upgrade() else { return };
        let tasks: Vec<Arc<Task>> = {
            let s = inner.shared();
            if s.ended {
                return;
            }
            s.tasks.values().cloned().collect()
        };
        for t in tasks {
            if t.state().status != BgStatus::Running {
                continue;
            }
            let size = std::fs::metadata(&t.output_file)
                .map(|m| m.len())
                .unwrap_or(0);
            if size > inner.cap {
                inner.cap(&t);
            }
        }
    }
}

impl BgSession for Runner {
    fn spawn(&mut self, work: &BgWork) -> Result<BgStarted, BgError> {
        self.spawn_task(work, false)
    }

    fn spawn_held(&mut self, work: &BgWork) -> Result<Option<BgStarted>, BgError> {
        self.spawn_task(work, true).map(Some)
    }

    fn start(&mut self, id: &str) -> Result<(), BgError> {
        let task = self
            .inner
            .find(id)
            .map_err(|_| BgError::NoSuchTask(format!("No task found with ID: {id}")))?;
        let mut st = task.state();
        let Some(command) = st.held.take() else {
            return Err(BgError::Refused(format!(
                "task {id} is not held in pending (it is {})",
                st.status.as_str()
            )));
        };
        let file = OpenOptions::new()
            .append(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&task.output_file)
            .map_err(BgError::io(format!(
                "failed to open {}",
                task.output_file.display()
            )))?;
        let started = self.inner.start(&task, &mut st, &command, file);
        drop(st);
        if let Err(e) = started {
            self.inner.settle(
                &task,
                BgStatus::Failed,
                None,
                format!("failed to start: {e}"),
            );
            self.inner.finish(&task);
        }
        Ok(())
    }

    fn kill(&mut self, id: &str) -> Result<BgKill, BgError> {
        match self.inner.find(id) {
            Ok(task) => Ok(
                match self
                    .inner
                    .stop(&task, BgStatus::Killed, "killed on request")
                {
                    None => BgKill::Killed,
                    Some(s) => BgKill::AlreadyFinal(s),
                },
            ),
            Err(Some(tomb)) => Ok(BgKill::AlreadyFinal(tomb.status)),
            Err(None) => Ok(BgKill::NotFound(format!("No task found with ID: {id}"))),
        }
    }

    fn output(&mut self, id: &str, offset: u64) -> Result<BgOutput, BgError> {
        let (path, status) = match self.inner.find(id) {
            Ok(t) => (t.output_file.clone(), t.state().status),
            Err(Some(tomb)) => (tomb.output_file, tomb.status),
            Err(None) => {
                return Err(BgError::NoSuchTask(format!("No task found with ID: {id}")));
            }
        };
        let from = if self.inner.mutant == Some(BgMutant::OffsetIgnored) {
            0
        } else {
            offset
        };
        let mut f = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .map_err(BgError::io(format!("failed to open {}", path.display())))?;
        let mut buf = Vec::new();
        f.seek(SeekFrom::Start(from))
            .and_then(|_| f.take(MAX_READ as u64).read_to_end(&mut buf))
            .map_err(BgError::io(format!("failed to read {}", path.display())))?;
        Ok(BgOutput {
            text: String::from_utf8_lossy(&buf).into_owned(),
            next_offset: Some(from + buf.len() as u64),
            status: Some(status),
        })
    }

    fn notifications(&mut self, within: Duration) -> Result<Vec<BgNotification>, BgError> {
        let deadline = Instant::now() + within;
        let mut s = self.inner.shared();
        loop {
            let have: BTreeSet<&str> = s.notes.iter().map(|n| n.id.as_str()).collect();
            if s.ended || s.order.iter().all(|id| have.contains(id.as_str())) {
                break;
            }
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            s = self
                .inner
                .changed
                .wait_timeout(s, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        let out = s.notes.clone();
        s.delivered = s.notes.len();
        // Eviction: only tasks final and notified, whose notification was delivered and whose
        // process was reaped (B5).
        let delivered: BTreeSet<String> = out.iter().map(|n| n.id.clone()).collect();
        let evict: Vec<String> = s
            .tasks
            .iter()
            .filter(|(id, t)| {
                let st = t.state();
                // Its processes must be gone too: evicting a task whose process still runs
                // is how "No task found" answers a stop of a live process (#43078).
                delivered.contains(*id)
                    && t.notified.load(Ordering::Acquire)
                    && st.status.is_final()
                    && (st.reaped || st.pgid.is_none())
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in evict {
            if let Some(t) = s.tasks.remove(&id) {
                let status = t.state().status;
                s.evicted.insert(
                    id,
                    Tomb {
                        status,
                        output_file: t.output_file.clone(),
                    },
                );
            }
        }
        Ok(out)
    }

    fn end(&mut self, how: BgEnd) -> Result<(), BgError> {
        match how {
            BgEnd::Exit => {
                self.inner.end(Duration::from_secs(5));
                Ok(())
            }
            BgEnd::Sigkill => Err(BgError::Unsupported(
                "an in-process runner cannot be SIGKILLed; serve it (taskproof serve-background) to test that"
                    .into(),
            )),
        }
    }

    fn task_pids(&mut self) -> Result<Vec<i32>, BgError> {
        Ok(self.inner.shared().pgids.clone())
    }

    fn output_cap(&self) -> Option<u64> {
        Some(self.inner.cap)
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        let ended = self.inner.shared().ended;
        if !ended {
            self.inner.end(Duration::from_secs(5));
        }
        // The watchdog holds only a weak reference and returns once the session ended.
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn work(c: &str) -> BgWork {
        BgWork {
            command: c.to_string(),
        }
    }

    fn runner(m: Option<BgMutant>) -> (tempfile::TempDir, Runner) {
        let dir = tempfile::tempdir().unwrap();
        let r = Runner::new(
            dir.path(),
            RunnerOptions {
                mutant: m,
                output_cap: Some(1 << 20),
                guardian_exe: None,
            },
        )
        .unwrap();
        (dir, r)
    }

    #[test]
    fn ids_have_the_seeds_form() {
        for _ in 0..100 {
            assert!(is_seed_id(&random_id('b')));
        }
        for bad in [
            "b1234567",
            "B12345678",
            "b1234567Z",
            "../etc/xx",
            "b12345678x",
        ] {
            assert!(!is_seed_id(bad), "{bad}");
        }
    }

    #[test]
    fn a_completed_task_notifies_once_with_its_exit_code_and_output() {
        let (_d, mut r) = runner(None);
        let a = r.spawn(&work("printf hello; exit 0")).unwrap();
        let b = r.spawn(&work("printf oops >&2; exit 3")).unwrap();
        let notes = r.notifications(Duration::from_secs(10)).unwrap();
        assert_eq!(notes.len(), 2, "{notes:?}");
        let na = notes.iter().find(|n| n.id == a.id).unwrap();
        assert_eq!((na.status, na.exit_code), (BgStatus::Completed, Some(0)));
        let nb = notes.iter().find(|n| n.id == b.id).unwrap();
        assert_eq!((nb.status, nb.exit_code), (BgStatus::Failed, Some(3)));
        let out = r.output(&a.id, 0).unwrap();
        assert_eq!(out.text, "hello");
        assert_eq!(out.next_offset, Some(5));
        assert_eq!(r.output(&a.id, 2).unwrap().text, "llo");
        assert_eq!(r.output(&b.id, 0).unwrap().text, "oops");
        // Evicted but still answered.
        assert_eq!(
            r.kill(&a.id).unwrap(),
            BgKill::AlreadyFinal(BgStatus::Completed)
        );
    }

    #[test]
    fn a_kill_ends_the_whole_group_and_notifies_killed_once() {
        let (_d, mut r) = runner(None);
        let t = r.spawn(&work("sleep 30 & sleep 30; wait")).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let pgid = r.task_pids().unwrap()[0];
        assert_eq!(r.kill(&t.id).unwrap(), BgKill::Killed);
        let notes = r.notifications(Duration::from_secs(10)).unwrap();
        // Let the result handler run too: it must not notify again.
        std::thread::sleep(Duration::from_millis(200));
        let notes2 = r.notifications(Duration::from_millis(10)).unwrap();
        assert_eq!(notes, notes2);
        assert_eq!(notes.len(), 1);
        assert_eq!(notes[0].status, BgStatus::Killed);
        assert_eq!(r.output(&t.id, 0).unwrap().status, Some(BgStatus::Killed));
        assert!(
            super::super::procs::group_members(pgid).is_empty(),
            "the task's group is gone"
        );
    }

    #[test]
    fn without_the_latch_a_kill_notifies_twice() {
        let (_d, mut r) = runner(Some(BgMutant::DoubleNotify));
        let t = r.spawn(&work("sleep 30")).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        r.kill(&t.id).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while r.notifications(Duration::from_millis(50)).unwrap().len() < 2 {
            assert!(Instant::now() < deadline, "the second notification came");
        }
    }

    #[test]
    fn a_held_task_killed_before_start_never_runs() {
        let (d, mut r) = runner(None);
        let t = r.spawn_held(&work("touch ran")).unwrap().unwrap();
        assert_eq!(r.output(&t.id, 0).unwrap().status, Some(BgStatus::Pending));
        assert_eq!(r.kill(&t.id).unwrap(), BgKill::Killed);
        assert!(r.start(&t.id).is_err());
        let notes = r.notifications(Duration::from_secs(5)).unwrap();
        assert_eq!(notes.len(), 1);
        assert_eq!(notes[0].status, BgStatus::Killed);
        assert!(!d.path().join("ran").exists());
        assert!(r.task_pids().unwrap().is_empty());
    }

    #[test]
    fn the_end_kills_running_tasks_and_the_cap_stops_a_flood() {
        let (_d, mut r) = runner(None);
        let flood = r.spawn(&work("yes")).unwrap();
        let long = r.spawn(&work("sleep 30")).unwrap();
        let notes = {
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                let n = r.notifications(Duration::from_millis(100)).unwrap();
                if n.iter().any(|n| n.id == flood.id) || Instant::now() > deadline {
                    break n;
                }
            }
        };
        let f = notes.iter().find(|n| n.id == flood.id).unwrap();
        assert_eq!(f.status, BgStatus::Failed);
        let size = std::fs::metadata(flood.output_file.unwrap()).unwrap().len();
        assert!(size <= (1 << 20) + 100, "{size}");
        let pgids = r.task_pids().unwrap();
        r.end(BgEnd::Exit).unwrap();
        let notes = r.notifications(Duration::from_millis(10)).unwrap();
        let l = notes.iter().find(|n| n.id == long.id).unwrap();
        assert_eq!(l.status, BgStatus::Killed);
        for g in pgids {
            assert!(super::super::procs::group_members(g).is_empty());
        }
    }
}
