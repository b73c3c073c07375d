//! What a background-task target is: something that starts work in the background, tracks it
//! through pending → running → completed | failed | killed, notifies once per task, keeps its
//! output, and cleans up its processes (docs/background.md, rules B1…).
//!
//! The interface lives here, below both of its sides: the real Claude Code target
//! (`taskproof_claude_code::background`) implements it, and the harness of
//! `taskproof-background` (reference runner, suite, race) drives it; the background crate
//! names it by this path.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// One of the five statuses of the seed (markdown.engineering lesson 14, "The Task System").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BgStatus {
    Pending,
    Running,
    Completed,
    Failed,
    Killed,
}

impl BgStatus {
    /// The seed's word for the status, as serialised (`pending`, `running`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            BgStatus::Pending => "pending",
            BgStatus::Running => "running",
            BgStatus::Completed => "completed",
            BgStatus::Failed => "failed",
            BgStatus::Killed => "killed",
        }
    }

    pub fn is_final(self) -> bool {
        matches!(
            self,
            BgStatus::Completed | BgStatus::Failed | BgStatus::Killed
        )
    }
}

/// The work to start: a shell command run with `sh -c` in the session's folder.
/// Scenarios build scripted work (a duration, an exit code, output) as a command.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BgWork {
    pub command: String,
}

/// What the target said when it started the work.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BgStarted {
    /// The target's id for the task (the seed: a type letter and eight of [0-9a-z]).
    pub id: String,
    /// Where the target keeps the task's output on disk, if it says.
    pub output_file: Option<PathBuf>,
}

/// One notification, as the model (or the runner's client) received it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BgNotification {
    pub id: String,
    pub status: BgStatus,
    pub exit_code: Option<i32>,
    pub output_file: Option<PathBuf>,
    /// The notification as received (for witnesses), e.g. the whole `<task-notification>` text.
    pub raw: String,
}

/// An answer to a read of a task's output from an offset.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BgOutput {
    /// The bytes from the offset asked (lossy UTF-8 where the target gives text).
    pub text: String,
    /// The offset after them, as the target reports it (None if it reports none).
    pub next_offset: Option<u64>,
    /// The status the target reported with the output, if it did.
    pub status: Option<BgStatus>,
}

/// What a kill answered.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum BgKill {
    /// The target says it killed the task.
    Killed,
    /// The target says the task had already ended with this status.
    AlreadyFinal(BgStatus),
    /// The target says there is no such task (its words).
    NotFound(String),
}

/// How a session ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BgEnd {
    Exit,
    Sigkill,
}

/// One session of a background-task target. Errors are the target's errors (it hung, crashed,
/// answered garbage), not findings, except [`BgError::NoSuchTask`], which the harness judges.
pub trait BgSession: Send {
    /// Starts `work` in the background and returns its id at once.
    fn spawn(&mut self, work: &BgWork) -> Result<BgStarted, BgError>;
    /// Asks the target to kill task `id`.
    fn kill(&mut self, id: &str) -> Result<BgKill, BgError>;
    /// Reads task `id`'s output from byte `offset`.
    fn output(&mut self, id: &str, offset: u64) -> Result<BgOutput, BgError>;
    /// Every notification received so far, in order, waiting up to `within` for more while any
    /// started task has none yet (returns early once each started task has one).
    fn notifications(&mut self, within: Duration) -> Result<Vec<BgNotification>, BgError>;
    /// Ends the session (`Exit`: as its user would; `Sigkill`: SIGKILL to the session's process).
    fn end(&mut self, how: BgEnd) -> Result<(), BgError>;
    /// The process ids the target's tasks run as (their process groups), as far as the harness
    /// can see them from the machine, for the orphan checks; empty if it cannot tell.
    fn task_pids(&mut self) -> Result<Vec<i32>, BgError> {
        Ok(Vec::new())
    }

    /// The notifications the target has already delivered on its own, without being asked
    /// (an agent's model sees each as a turn of its conversation, possibly in the same turn
    /// as the answer that says the task is gone). Empty for a target that delivers only when
    /// asked through [`BgSession::notifications`].
    fn delivered(&mut self) -> Vec<BgNotification> {
        Vec::new()
    }

    /// What the target's driver mapped instead of passing on as the target's answer (an
    /// adapter's reading of the product's format, such as Claude Code's exit line at the end
    /// of an output file), for the scenario's notes: kept apart from the target's behaviour.
    fn remarks(&self) -> Vec<String> {
        Vec::new()
    }

    /// How many leading bytes of task `id`'s output file (whose content is `file`) are the
    /// command's output: all of them, unless the target writes lines of its own into the
    /// file (Claude Code's exit line); the driver names what it left out in
    /// [`BgSession::remarks`].
    fn command_output(&mut self, id: &str, file: &[u8]) -> usize {
        let _ = id;
        file.len()
    }

    /// The folder the target keeps its tasks' output files in, when it is not the session's
    /// folder (Claude Code keeps them under its own temporary folder); B6 holds each output
    /// file to be the task's own file inside it.
    fn output_root(&self) -> Option<PathBuf> {
        None
    }

    // Added by issue-25 after the shared start (defaults keep every other target working).

    /// Registers `work` as a task held in `pending`, started only by [`BgSession::start`]
    /// (the kill-before-start scenarios); `None` when the target cannot hold a task (then
    /// those scenarios are skipped for it).
    fn spawn_held(&mut self, work: &BgWork) -> Result<Option<BgStarted>, BgError> {
        let _ = work;
        Ok(None)
    }

    /// Starts a task [`BgSession::spawn_held`] registered.
    fn start(&mut self, id: &str) -> Result<(), BgError> {
        Err(BgError::Unsupported(format!(
            "this target cannot hold a task in pending, so it has none to start ({id})"
        )))
    }

    /// The number of output bytes the target keeps per task before it stops the task (the
    /// seed's cap is 5 GB), if it says; the flood scenario (1 MiB) is skipped for a target
    /// whose cap is another or unknown, since flooding 5 GB is not done on a test machine.
    fn output_cap(&self) -> Option<u64> {
        None
    }
}

/// Why a background session could not do what it was asked. Every variant but
/// [`BgError::NoSuchTask`] is an error of the target or of the harness around it (it failed
/// to start, hung, exited, answered garbage, refused, or a file could not be read), never a
/// finding; the variant says which, so that a caller can branch on it.
///
/// Each message is whole: it carries the context it was raised in, and no variant has a
/// `#[source]`, so `{e}` and `{e:#}` read the same and a chain printer does not repeat it.
#[derive(Debug, thiserror::Error)]
pub enum BgError {
    /// The target's answer that it knows no task by that id (to an output read or a start),
    /// in its words: when the task should still be known it is a finding (rule B5, #43078),
    /// not a broken target.
    #[error("{0}")]
    NoSuchTask(String),
    /// The target, or something it needs (its installation, its configuration folder, the
    /// scripted model, its first exchange), could not be started.
    #[error("{0}")]
    Start(String),
    /// The target did not answer (or finish a turn, or die) within its limit.
    #[error("{0}")]
    Timeout(String),
    /// The target's process exited, or its input closed, before it answered.
    #[error("{0}")]
    Exited(String),
    /// The target answered with something that is not a well-formed answer to the request.
    #[error("{0}")]
    Garbage(String),
    /// The target answered the request with an error of its own.
    #[error("{0}")]
    Refused(String),
    /// The target cannot do what was asked (hold a task in pending, be SIGKILLed in
    /// process, start a task it does not hold).
    #[error("{0}")]
    Unsupported(String),
    /// The session has already ended (or died of an earlier error, which the message names).
    #[error("{0}")]
    Ended(String),
    /// The harness failed to read, write, create or start something (`what` says what).
    #[error("{what}: {error}")]
    Io {
        what: String,
        // Not named `source`: thiserror would make it the cause and print it a second time.
        error: std::io::Error,
    },
}

impl BgError {
    /// A constructor of [`BgError::Io`] for `map_err`: `.map_err(BgError::io("read X"))`.
    pub fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> BgError {
        let what = what.into();
        move |error| BgError::Io { what, error }
    }

    /// The same error, its message prefixed with `what` (where it was raised, as in "the
    /// first turn: …"); the variant is kept.
    pub fn context(self, what: impl fmt::Display) -> BgError {
        let with = |m: String| format!("{what}: {m}");
        match self {
            BgError::NoSuchTask(m) => BgError::NoSuchTask(with(m)),
            BgError::Start(m) => BgError::Start(with(m)),
            BgError::Timeout(m) => BgError::Timeout(with(m)),
            BgError::Exited(m) => BgError::Exited(with(m)),
            BgError::Garbage(m) => BgError::Garbage(with(m)),
            BgError::Refused(m) => BgError::Refused(with(m)),
            BgError::Unsupported(m) => BgError::Unsupported(with(m)),
            BgError::Ended(m) => BgError::Ended(with(m)),
            BgError::Io { what: w, error } => BgError::Io {
                what: with(w),
                error,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_prefixes_the_message_and_keeps_the_variant() {
        let e = BgError::Timeout("no answer".into()).context("the first turn");
        assert!(matches!(&e, BgError::Timeout(m) if m == "the first turn: no answer"));
        assert_eq!(format!("{e:#}"), "the first turn: no answer");
        let io = BgError::io("read f")(std::io::Error::other("gone")).context("open");
        assert!(matches!(&io, BgError::Io { what, .. } if what == "open: read f"));
        assert_eq!(io.to_string(), "open: read f: gone");
        assert!(
            std::error::Error::source(&io).is_none(),
            "the message is whole"
        );
    }
}
