//! `cmd:COMMAND`: an adapter command speaking the protocol on stdio, one process per session
//! ([`ProcessSession`]).

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use crate::{ProcessSession, TargetSpec};
use taskproof_session::starts::StartLog;
use taskproof_session::{Kind, Session, SessionOptions, Target, TargetError};

pub static KIND: Kind = Kind {
    prefix: "cmd:",
    syntax: "cmd:COMMAND",
    example: "cmd:python3 adapter.py",
    parse: |s| s.strip_prefix("cmd:").map(Cmd::parse),
    takes_mapping: false,
};

/// An adapter command, run through `sh -c` with `TASKPROOF_ROOT` set, and how long its
/// sessions' processes took to answer `hello`.
#[derive(Debug, Clone)]
struct Cmd(String, StartLog);

impl Cmd {
    fn new(command: String) -> Cmd {
        Cmd(command, StartLog::new("hello"))
    }

    fn parse(command: &str) -> Result<Arc<dyn Target>, String> {
        if command.trim().is_empty() {
            return Err("cmd: needs a command, e.g. cmd:'python3 adapter.py'".into());
        }
        Ok(Arc::new(Cmd::new(command.to_string())))
    }
}

impl TargetSpec {
    /// An adapter command, run through `sh -c` with `TASKPROOF_ROOT` set (not checked: an
    /// empty command is a target that fails to start).
    pub fn cmd(command: impl Into<String>) -> TargetSpec {
        Cmd::new(command.into()).into()
    }
}

impl fmt::Display for Cmd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cmd:{}", self.0)
    }
}

impl Target for Cmd {
    fn kind(&self) -> &'static Kind {
        &KIND
    }

    fn open(
        &self,
        root: &Path,
        options: SessionOptions,
    ) -> Result<Box<dyn Session>, (TargetError, String)> {
        let limit = options.start_timeout;
        let started = std::time::Instant::now();
        match ProcessSession::spawn_with_stderr(&self.0, root, options) {
            Ok(s) => {
                self.1.answered(started.elapsed());
                Ok(Box::new(s))
            }
            Err(e) => {
                if matches!(e.0, TargetError::StartTimeout(_)) {
                    self.1.timed_out(limit);
                }
                Err(e)
            }
        }
    }

    /// A race starts the adapter with the request limit for start-up too, and kills its
    /// process group in the middle of a request.
    fn open_racing(
        &self,
        root: &Path,
        options: SessionOptions,
        _shared: bool,
    ) -> Result<(Box<dyn Session>, Option<u32>), TargetError> {
        let s = ProcessSession::spawn(&self.0, root, options.timeout)?;
        let pgid = Some(s.pid());
        Ok((Box::new(s), pgid))
    }

    fn is_process(&self) -> bool {
        true
    }

    fn starts(&self) -> Option<StartLog> {
        Some(self.1.clone())
    }
}
