//! What a background-task target is: something that starts work in the background, tracks it
//! through pending → running → completed | failed | killed, notifies once per task, keeps its
//! output, and cleans up its processes (docs/background.md, rules B1…).
//!
//! The interface lives here, below both of its sides: the real Claude Code target
//! (`taskproof_claude_code::background`) implements it, and the harness of
//! `taskproof-background` (reference runner, suite, race) drives it; the background crate
//! names it by this path.

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
/// answered garbage), not findings.
pub trait BgSession: Send {
    /// Starts `work` in the background and returns its id at once.
    fn spawn(&mut self, work: &BgWork) -> anyhow::Result<BgStarted>;
    /// Asks the target to kill task `id`.
    fn kill(&mut self, id: &str) -> anyhow::Result<BgKill>;
    /// Reads task `id`'s output from byte `offset`.
    fn output(&mut self, id: &str, offset: u64) -> anyhow::Result<BgOutput>;
    /// Every notification received so far, in order, waiting up to `within` for more while any
    /// started task has none yet (returns early once each started task has one).
    fn notifications(&mut self, within: Duration) -> anyhow::Result<Vec<BgNotification>>;
    /// Ends the session (`Exit`: as its user would; `Sigkill`: SIGKILL to the session's process).
    fn end(&mut self, how: BgEnd) -> anyhow::Result<()>;
    /// The process ids the target's tasks run as (their process groups), as far as the harness
    /// can see them from the machine, for the orphan checks; empty if it cannot tell.
    fn task_pids(&mut self) -> anyhow::Result<Vec<i32>> {
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
    fn spawn_held(&mut self, work: &BgWork) -> anyhow::Result<Option<BgStarted>> {
        let _ = work;
        Ok(None)
    }

    /// Starts a task [`BgSession::spawn_held`] registered.
    fn start(&mut self, id: &str) -> anyhow::Result<()> {
        anyhow::bail!("this target cannot hold a task in pending, so it has none to start ({id})")
    }

    /// The number of output bytes the target keeps per task before it stops the task (the
    /// seed's cap is 5 GB), if it says; the flood scenario (1 MiB) is skipped for a target
    /// whose cap is another or unknown, since flooding 5 GB is not done on a test machine.
    fn output_cap(&self) -> Option<u64> {
        None
    }
}

/// The target's answer that it knows no task by that id (to an output read or a start),
/// carried inside the `anyhow::Error` (`anyhow::Error::new(BgNoSuchTask(words))`) so that the
/// harness can tell it from a broken target: when the task should still be known it is a
/// finding (rule B5, #43078), not a target error.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BgNoSuchTask(pub String);
