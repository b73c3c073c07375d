//! The guardian: a small process that outlives a SIGKILL of the runner that started it, and
//! then kills the runner's tasks (rule B7, docs/background.md).
//!
//! A SIGKILL runs no code of the process it kills; what the kernel does is close its file
//! descriptors. So the runner starts `taskproof serve-background --guardian` as a process
//! group of its own, with a pipe to its stdin whose write end only the runner holds. Every
//! task writes `+PGID` into that pipe itself, in the child between fork and exec (so no
//! SIGKILL can fall between a task's start and its registration: until the child's exec
//! closes it, the child holds the write end too); the runner writes `-PGID` once it reaped a
//! task's group leader and killed what was left of its group. When the pipe reaches its end
//! (the runner exited, or was killed) the guardian kills every group still registered and
//! exits.
//!
//! `PR_SET_PDEATHSIG` alone would not do: it is cleared in a task's own children, so the
//! tree below the task's shell would outlive it; and it fires when the spawning *thread*
//! ends, not the process.

use std::collections::BTreeSet;
use std::io::{self, BufRead, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::process::{Child, ChildStdin, Command, Stdio};

use rustix::process::{Pid, Signal, kill_process_group};

/// The runner's end of its guardian.
#[derive(Debug)]
pub struct Guardian {
    child: Child,
    pipe: Option<ChildStdin>,
}

impl Guardian {
    /// Starts the guardian: `exe --guardian` (`exe` is a taskproof binary; its arguments
    /// before `--guardian` come from `args`), in a process group of its own.
    pub fn start(exe: &std::path::Path, args: &[&str]) -> io::Result<Guardian> {
        use std::os::unix::process::CommandExt;
        let mut child = Command::new(exe)
            .args(args)
            .arg("--guardian")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()?;
        let pipe = child.stdin.take();
        Ok(Guardian { child, pipe })
    }

    /// The write end, for tasks to register themselves between fork and exec.
    pub fn fd(&self) -> Option<RawFd> {
        self.pipe.as_ref().map(|p| p.as_raw_fd())
    }

    /// Tells the guardian that group `pgid` is gone (its leader reaped, the rest killed).
    pub fn forget(&mut self, pgid: i32) {
        if let Some(p) = self.pipe.as_mut() {
            // A guardian that died cannot be helped here; the runner's own cleanup remains.
            let _ = p.write_all(format!("-{pgid}\n").as_bytes());
        }
    }

    /// Closes the pipe (the guardian kills what is left and exits) and reaps it.
    pub fn finish(mut self) {
        self.pipe = None;
        let _ = self.child.wait();
    }
}

/// Writes `+PGID\n` for the calling process into `fd`, allocation-free, for a child between
/// fork and exec (only async-signal-safe calls). Returns whether all of it was written.
pub fn register_self(fd: RawFd) -> bool {
    let pid = std::process::id();
    let mut buf = [0u8; 24];
    let mut digits = [0u8; 20];
    let mut n = 0;
    let mut v = pid;
    loop {
        digits[n] = b'0' + (v % 10) as u8;
        n += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    buf[0] = b'+';
    for i in 0..n {
        buf[1 + i] = digits[n - 1 - i];
    }
    buf[1 + n] = b'\n';
    let len = n + 2;
    // SAFETY: `buf` is valid for `len` bytes; write(2) is async-signal-safe.
    let written = unsafe { libc::write(fd, buf.as_ptr().cast(), len) };
    written == len as isize
}

/// The guardian's body (`taskproof serve-background --guardian`): reads `+PGID`/`-PGID`
/// lines until the end of stdin, then SIGKILLs every group still registered. Returns the
/// number of groups it signalled.
pub fn serve(input: impl BufRead) -> usize {
    let mut groups = BTreeSet::new();
    for line in input.lines() {
        let Ok(line) = line else { break };
        let (sign, rest) = line.split_at(line.len().min(1));
        let Ok(pgid) = rest.trim().parse::<i32>() else {
            continue;
        };
        match sign {
            "+" => {
                groups.insert(pgid);
            }
            "-" => {
                groups.remove(&pgid);
            }
            _ => {}
        }
    }
    let mut signalled = 0;
    for g in groups {
        if let Some(pid) = Pid::from_raw(g).filter(|_| g > 1)
            && kill_process_group(pid, Signal::KILL).is_ok()
        {
            signalled += 1;
        }
    }
    signalled
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guardian_kills_registered_groups_at_the_end_of_its_input() {
        use std::os::unix::process::CommandExt;
        let mut a = Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let mut b = Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let text = format!("+{}\n+{}\n-{}\ngarbage\n", a.id(), b.id(), b.id());
        assert_eq!(serve(text.as_bytes()), 1);
        let status = a.wait().unwrap();
        assert!(!status.success(), "the registered group was killed");
        // b was forgotten: still running until we end it.
        assert!(b.try_wait().unwrap().is_none());
        b.kill().unwrap();
        b.wait().unwrap();
    }
}
