//! What a scenario's sessions really wrote to their processes and read back, line by line,
//! for `taskproof run --export` (docs/reports.md, "Exporting failures"): each process a
//! session started (an adapter of a `cmd:` target, an MCP server of an `mcp:` target, one per
//! list with `server.per_list`), how it was started, every line sent and got in the order
//! they passed, how it ended, and the runner's marks of which step was running. Targets that
//! are not processes write nothing.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// One process as a session started it: what a shell needs to start it again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// The script given to `sh -c`.
    pub script: String,
    /// The words after it (`"$@"` inside the script; `$0` is `sh`).
    pub args: Vec<String>,
    /// The variables set beyond the caller's environment, `TASKPROOF_ROOT` first.
    pub env: Vec<(String, String)>,
    /// Its working folder; `None`: the caller's.
    pub cwd: Option<PathBuf>,
    /// The scenario's root, which the script of a replay replaces with a fresh folder.
    pub root: PathBuf,
    /// The list whose server it is (`server.per_list`).
    pub list: Option<String>,
}

/// What happened, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The runner began step `index` of the scenario (`what`: its action, in words).
    Step { index: usize, what: String },
    /// Process `process` (numbered from 1 in the order they started) started.
    Start { process: usize, launch: Launch },
    /// A line written to its stdin.
    Sent { process: usize, line: String },
    /// A line read from its stdout.
    Got { process: usize, line: String },
    /// Its stdin was closed (end of input), the normal end.
    Closed { process: usize },
    /// It was killed (its whole process group).
    Killed { process: usize },
}

/// A scenario's wire log, shared by its sessions (a handle: clones write to one log).
#[derive(Clone, Default)]
pub struct WireLog(Arc<Mutex<Vec<Event>>>);

impl WireLog {
    pub fn new() -> WireLog {
        WireLog::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Event>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Notes a process started; its number for the lines that follow.
    pub fn start(&self, launch: Launch) -> usize {
        let mut log = self.lock();
        let process = 1 + log
            .iter()
            .filter(|e| matches!(e, Event::Start { .. }))
            .count();
        log.push(Event::Start { process, launch });
        process
    }

    pub fn sent(&self, process: usize, line: &str) {
        self.lock().push(Event::Sent {
            process,
            line: line.to_string(),
        });
    }

    pub fn got(&self, process: usize, line: &str) {
        self.lock().push(Event::Got {
            process,
            line: line.to_string(),
        });
    }

    /// Notes the process ended: killed, or its input closed. Only the first end counts.
    pub fn ended(&self, process: usize, killed: bool) {
        let mut log = self.lock();
        let already = log.iter().any(|e| {
            matches!(e, Event::Closed { process: p } | Event::Killed { process: p } if *p == process)
        });
        if !already {
            log.push(if killed {
                Event::Killed { process }
            } else {
                Event::Closed { process }
            });
        }
    }

    pub fn step(&self, index: usize, what: impl Into<String>) {
        self.lock().push(Event::Step {
            index,
            what: what.into(),
        });
    }

    /// Everything so far, in order.
    pub fn events(&self) -> Vec<Event> {
        self.lock().clone()
    }
}

impl PartialEq for WireLog {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for WireLog {}

impl std::fmt::Debug for WireLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("WireLog").field(&self.lock().len()).finish()
    }
}
