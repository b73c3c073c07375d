//! The process groups a target started, so that none outlives taskproof.
//!
//! Every process a target runs (an adapter's `sh -c`, a Claude Code CLI and whatever they
//! start) is the leader of a process group of its own, started through [`Group::spawn`]. The
//! group is killed with SIGKILL when its [`Group`] is killed or dropped, also when the leader
//! already ended on its own (a background child it left behind is in the same group): the
//! leader is only peeked at, never reaped, until the group was killed, so the group id can
//! name no other process meanwhile.
//!
//! SIGTERM, SIGINT and SIGHUP would end taskproof without running any destructor, and the
//! groups, being groups of their own, do not get a terminal's SIGINT either. So the first
//! [`Group::spawn`] starts a thread that waits for those signals: on one it kills every
//! group still alive, removes the private folders registered with [`TempGuard`], and then
//! ends taskproof as the signal would have (so a shell sees 128+N). A signal that was ignored
//! when taskproof started (`nohup`, a background job's SIGINT) stays ignored.

use std::collections::BTreeSet;
use std::io;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus};
use std::sync::{Mutex, MutexGuard, Once};

use rustix::process::{Pid, Signal, WaitId, WaitIdOptions, kill_process_group, waitid};

/// What is alive: process group ids and private folders.
struct Live {
    groups: BTreeSet<i32>,
    folders: BTreeSet<PathBuf>,
}

static LIVE: Mutex<Live> = Mutex::new(Live {
    groups: BTreeSet::new(),
    folders: BTreeSet::new(),
});
static HANDLERS: Once = Once::new();

fn live() -> MutexGuard<'static, Live> {
    LIVE.lock().unwrap_or_else(|p| p.into_inner())
}

/// A child process leading a process group of its own.
#[derive(Debug)]
pub struct Group {
    child: Child,
    /// Set once the group was killed and the leader reaped.
    reaped: Option<ExitStatus>,
}

impl Group {
    /// Spawns `command` as the leader of a new process group and registers the group, so
    /// that a signal to taskproof kills it. The registry is held across the spawn: a signal
    /// cannot fall between the spawn and the registration.
    pub fn spawn(command: &mut Command) -> io::Result<Group> {
        install_handlers();
        command.process_group(0);
        let mut live = live();
        let child = command.spawn()?;
        live.groups.insert(child.id() as i32);
        Ok(Group {
            child,
            reaped: None,
        })
    }

    /// The leader's process id, which is also the group's id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// The leader, for its pipes.
    pub fn child(&mut self) -> &mut Child {
        &mut self.child
    }

    /// The leader's exit status once it ended, without reaping it (the group may still
    /// have members; [`Group::kill`] ends them).
    pub fn exited(&mut self) -> Option<ExitStatus> {
        if let Some(s) = self.reaped {
            return Some(s);
        }
        let pid = Pid::from_raw(self.child.id() as i32)?;
        let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
        match waitid(WaitId::Pid(pid), options) {
            Ok(Some(status)) => {
                if let Some(code) = status.exit_status() {
                    Some(ExitStatus::from_raw((code & 0xff) << 8))
                } else {
                    status.terminating_signal().map(ExitStatus::from_raw)
                }
            }
            Ok(None) => None,
            // Not a child any more: it was reaped.
            Err(_) => self.kill_and_reap(),
        }
    }

    /// SIGKILL to the whole group (also when the leader already ended), then reaps the
    /// leader and returns its status. Killing twice is harmless.
    pub fn kill(&mut self) -> Option<ExitStatus> {
        self.kill_and_reap()
    }

    fn kill_and_reap(&mut self) -> Option<ExitStatus> {
        if self.reaped.is_none() {
            let id = self.child.id() as i32;
            {
                let mut live = live();
                if let Some(pid) = Pid::from_raw(id) {
                    let _ = kill_process_group(pid, Signal::KILL);
                }
                live.groups.remove(&id);
            }
            // The leader is a zombie or dying: waiting is short.
            self.reaped = self.child.wait().ok();
        }
        self.reaped
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill_and_reap();
    }
}

/// A private folder (a Claude Code session's HOME) to remove if a signal ends taskproof;
/// its owner removes it otherwise. Dropping the guard forgets the folder.
#[derive(Debug)]
pub struct TempGuard(PathBuf);

impl TempGuard {
    /// Creates a private temporary folder whose name starts with `prefix` and registers it
    /// in one step, under the registry's lock: a signal that arrives meanwhile is handled
    /// once the folder is registered, so it is removed too. (Created first and registered
    /// after, a folder made by a session starting just as SIGTERM came was left behind.)
    pub fn tempdir(prefix: &str) -> std::io::Result<(tempfile::TempDir, TempGuard)> {
        install_handlers();
        let mut live = live();
        let dir = tempfile::Builder::new().prefix(prefix).tempdir()?;
        let path = dir.path().to_path_buf();
        live.folders.insert(path.clone());
        Ok((dir, TempGuard(path)))
    }
}

impl Drop for TempGuard {
    fn drop(&mut self) {
        live().folders.remove(&self.0);
    }
}

/// Work to do when a signal ends taskproof, for processes that are in no registered group:
/// the background tasks of Claude Code start sessions of their own, so killing the CLI's
/// group does not reach them (crates/claude-code/src/background.rs kills them by a marker).
type Cleanup = Box<dyn Fn() + Send>;
static CLEANUPS: Mutex<Vec<(u64, Cleanup)>> = Mutex::new(Vec::new());

/// Registers `cleanup` to run when a signal ends taskproof; the returned guard unregisters
/// it when dropped (its owner then cleaned up itself).
pub fn on_signal(cleanup: Cleanup) -> CleanupGuard {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    install_handlers();
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    CLEANUPS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push((id, cleanup));
    CleanupGuard(id)
}

/// Unregisters its cleanup when dropped.
#[derive(Debug)]
pub struct CleanupGuard(u64);

impl Drop for CleanupGuard {
    fn drop(&mut self) {
        CLEANUPS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|(id, _)| *id != self.0);
    }
}

/// Runs every registered cleanup (what a signal does after killing the groups).
fn run_cleanups() {
    for (_, cleanup) in CLEANUPS.lock().unwrap_or_else(|p| p.into_inner()).iter() {
        cleanup();
    }
}

const SIGNALS: [i32; 3] = [
    signal_hook::consts::SIGTERM,
    signal_hook::consts::SIGINT,
    signal_hook::consts::SIGHUP,
];

/// Whether `signal` is ignored now (as `nohup` leaves SIGHUP, or a shell a background
/// job's SIGINT).
fn ignored(signal: i32) -> bool {
    // SAFETY: sigaction with a null new action only reads the current one into `old`.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(signal, std::ptr::null(), &mut old) == 0
            && old.sa_sigaction == libc::SIG_IGN
    }
}

fn install_handlers() {
    HANDLERS.call_once(|| {
        let wanted: Vec<i32> = SIGNALS.into_iter().filter(|&s| !ignored(s)).collect();
        let Ok(mut signals) = signal_hook::iterator::Signals::new(&wanted) else {
            return;
        };
        let _ = std::thread::Builder::new()
            .name("taskproof-signals".into())
            .spawn(move || {
                if let Some(signal) = signals.forever().next() {
                    end_all(signal);
                }
            });
    });
}

/// Kills every live group, removes the private folders, and ends taskproof as `signal`
/// would. The registry stays locked, so no thread starts a new group meanwhile.
fn end_all(signal: i32) -> ! {
    let live = live();
    for &id in &live.groups {
        if let Some(pid) = Pid::from_raw(id) {
            let _ = kill_process_group(pid, Signal::KILL);
        }
    }
    run_cleanups();
    // The killed processes may still be writing for a moment (a loaded machine delivers
    // SIGKILL late): retry for up to two seconds, then leave what cannot be removed.
    for folder in &live.folders {
        for _ in 0..20 {
            match std::fs::remove_dir_all(folder) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    std::thread::sleep(std::time::Duration::from_millis(100));
                }
                _ => break,
            }
        }
    }
    std::mem::forget(live);
    let _ = signal_hook::low_level::emulate_default_handler(signal);
    std::process::exit(128 + signal)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// The leader's exit status, polled (without reaping) for up to ten seconds.
    fn exit_of(group: &mut Group) -> std::process::ExitStatus {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(s) = group.exited() {
                return s;
            }
            assert!(Instant::now() < deadline, "sh did not exit");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn alive(pid: i32) -> bool {
        // A zombie counts as gone: it runs nothing.
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(stat) => !stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
            Err(_) => false,
        }
    }

    #[test]
    fn a_child_left_behind_by_a_leader_that_ended_is_killed() {
        // The leader starts a background sleeper in its group, says its pid and exits 0.
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg("sleep 300 >/dev/null 2>&1 & echo $!")
            .stdout(std::process::Stdio::piped());
        let mut group = Group::spawn(&mut cmd).unwrap();
        // One line: the sleeper does not hold the pipe (it would until it ends).
        let mut out = String::new();
        use std::io::BufRead;
        std::io::BufReader::new(group.child().stdout.take().unwrap())
            .read_line(&mut out)
            .unwrap();
        let sleeper: i32 = out.trim().parse().unwrap();
        let status = exit_of(&mut group);
        assert!(status.success(), "{status:?}");
        assert!(
            alive(sleeper),
            "the sleeper should still run before the kill"
        );
        drop(group);
        let deadline = Instant::now() + Duration::from_secs(10);
        while alive(sleeper) {
            assert!(Instant::now() < deadline, "the sleeper outlived its group");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn registered_cleanups_run_until_their_guard_is_dropped() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicUsize, Ordering};
        let runs = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&runs);
        let guard = on_signal(Box::new(move || {
            counted.fetch_add(1, Ordering::SeqCst);
        }));
        run_cleanups();
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        drop(guard);
        run_cleanups();
        assert_eq!(
            runs.load(Ordering::SeqCst),
            1,
            "an unregistered cleanup does not run"
        );
    }

    #[test]
    fn exit_statuses_are_read_without_reaping() {
        let mut group = Group::spawn(Command::new("sh").arg("-c").arg("exit 3")).unwrap();
        let status = exit_of(&mut group);
        assert_eq!(status.code(), Some(3));
        // Still a zombie: the group id is still ours.
        assert!(std::fs::metadata(format!("/proc/{}", group.id())).is_ok());
        assert_eq!(group.kill().and_then(|s| s.code()), Some(3));
    }
}
