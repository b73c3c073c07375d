//! `cmd:COMMAND`: an adapter command speaking the protocol on stdio, one process per session
//! ([`ProcessSession`]).

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use crate::{ProcessSession, TargetSpec};
use taskproof_session::{Kind, Session, SessionOptions, Target, TargetError};

pub static KIND: Kind = Kind {
    prefix: "cmd:",
    syntax: "cmd:COMMAND",
    example: "cmd:python3 adapter.py",
    parse: |s| s.strip_prefix("cmd:").map(Cmd::parse),
    takes_mapping: false,
};

/// An adapter command, run through `sh -c` with `TASKPROOF_ROOT` set.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Cmd(String);

impl Cmd {
    fn parse(command: &str) -> Result<Arc<dyn Target>, String> {
        if command.trim().is_empty() {
            return Err("cmd: needs a command, e.g. cmd:'python3 adapter.py'".into());
        }
        Ok(Arc::new(Cmd(command.to_string())))
    }
}

impl TargetSpec {
    /// An adapter command, run through `sh -c` with `TASKPROOF_ROOT` set (not checked: an
    /// empty command is a target that fails to start).
    pub fn cmd(command: impl Into<String>) -> TargetSpec {
        Cmd(command.into()).into()
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
        Ok(Box::new(ProcessSession::spawn_with_stderr(
            &self.0, root, options,
        )?))
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
}
