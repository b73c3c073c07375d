//! What every target driver needs and the registry does not (docs/architecture.md,
//! "Crates"): the [`Target`] trait a kind of target implements and its [`Kind`] entry, the
//! [`Session`] it opens and its [`SessionOptions`], the [`TargetError`]s it may end with, the
//! user's [`SessionEvent`]s, how an agent product is [`Drive`]n, and the pieces its process
//! sessions share: process groups and signals ([`group`]), pipes read against a deadline
//! ([`pipes`]), the wire log ([`wire`]), what a background-task session is ([`background`]),
//! the id book of drivers whose product names tasks otherwise than the wire ([`ids`]), and
//! installing a product from npm into taskproof's cache ([`npm`]).
//!
//! The registry of kinds, `TargetSpec` and the kinds without a crate of their own are in
//! `taskproof-targets`; a product's driver (`taskproof-claude-code`) is a crate over this
//! one, so it can be written, built and tested without the registry or the other drivers.
//! Sessions exchange raw JSON values, so a scenario can send a malformed request and judge
//! the raw answer; [`Session::request`] adds typed decoding on top.

pub mod background;
pub mod group;
pub mod ids;
pub mod npm;
pub mod pipes;
pub mod starts;
pub mod wire;

use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use taskproof_core::protocol::{Hello, Request, Response};
use taskproof_profile::Profile;

/// How long a request may go unanswered before the target is judged hung (SPEC §2).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a session may take to start and answer `hello`. Start-up is not a request: a
/// node adapter takes seconds to start on a loaded machine, and a real product (Claude Code
/// fetched from npm) longer, so it has its own, longer limit.
pub const DEFAULT_START_TIMEOUT: Duration = Duration::from_secs(60);

/// A target that broke the protocol: an error of the target, never of the harness.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    #[error("failed to start the adapter: {0}")]
    Spawn(String),
    #[error("no answer within {0:?}; the adapter was killed (the limit is --timeout SECS)")]
    Timeout(Duration),
    #[error(
        "no hello within {0:?} of starting; the adapter was killed (the limit is --start-timeout SECS)"
    )]
    StartTimeout(Duration),
    #[error("the adapter exited ({status}) before answering")]
    Exited { status: String },
    #[error("the adapter answered with something that is not a JSON object: {reason}: {line:?}")]
    Garbage { line: String, reason: String },
    #[error("bad hello: {0}")]
    BadHello(String),
    #[error("the adapter answered a {op} request with a malformed response: {reason}")]
    BadResponse { op: String, reason: String },
    #[error("the session was killed")]
    Killed,
    #[error("{0}")]
    Io(String),
}

impl TargetError {
    /// What `close` answers for a process session that has already ended (`dead`): `Ok`
    /// after a [`Session::kill`], which was asked for, the error that ended it otherwise;
    /// `None` while it is alive.
    pub fn closed_already(dead: &Option<TargetError>) -> Option<Result<(), TargetError>> {
        dead.as_ref().map(|e| match e {
            TargetError::Killed => Ok(()),
            e => Err(e.clone()),
        })
    }
}

/// Per-session settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionOptions {
    /// How long one request may go unanswered.
    pub timeout: Duration,
    /// How long starting the session and its `hello` may take (see [`DEFAULT_START_TIMEOUT`]).
    pub start_timeout: Duration,
    /// For in-process stores: fsync or not.
    pub durable: bool,
    /// The session plays a user at a terminal (the scenario waits or has session events):
    /// an agent target runs the way a person uses it (Claude Code: its terminal UI, in every
    /// version), others are unaffected.
    pub interactive: bool,
    /// Where a target driven by a scripted model (Claude Code) keeps the model's own log of
    /// this session: every request and answer (`taskproof_model::model_log`); others have no
    /// model and ignore it.
    pub model_log: Option<taskproof_model::model_log::LogHandle>,
    /// How an agent target (Claude Code) is driven, when the caller says (`race --drive`);
    /// `None` lets the target choose. A plain value, never process-wide state.
    pub drive: Option<Drive>,
    /// Where a process target (`cmd:`, `mcp:`) notes every line it writes to its processes
    /// and reads back, and how it started and ended them (`taskproof run --export`); others
    /// note nothing.
    pub wire: Option<wire::WireLog>,
}

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions {
            timeout: DEFAULT_TIMEOUT,
            start_timeout: DEFAULT_START_TIMEOUT,
            durable: true,
            interactive: false,
            model_log: None,
            drive: None,
            wire: None,
        }
    }
}

/// How an agent product's CLI is driven.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drive {
    /// Its non-interactive mode (Claude Code: `-p --input-format stream-json
    /// --output-format stream-json`).
    Print,
    /// The interactive terminal UI in a pseudo-terminal.
    Terminal,
}

/// What a user does to an agent session between requests (docs/scenario-format.md,
/// "Session events").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SessionEvent {
    /// The user's `/clear`: the conversation starts over.
    Clear,
    /// The user's `/compact`: the conversation is summarised.
    Compact,
    /// The session ends normally (the user's `/exit`).
    Exit,
    /// SIGKILL of the session.
    Kill,
    /// The same conversation started again (`--resume`).
    Resume,
}

impl SessionEvent {
    pub const ALL: [SessionEvent; 5] = [
        SessionEvent::Clear,
        SessionEvent::Compact,
        SessionEvent::Exit,
        SessionEvent::Kill,
        SessionEvent::Resume,
    ];

    /// The step's key in a scenario file.
    pub fn as_str(self) -> &'static str {
        match self {
            SessionEvent::Clear => "clear",
            SessionEvent::Compact => "compact",
            SessionEvent::Exit => "exit",
            SessionEvent::Kill => "kill",
            SessionEvent::Resume => "resume",
        }
    }
}

impl fmt::Display for SessionEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One connection to a target on one root.
pub trait Session: Send {
    /// The target's answer to `hello`, asked when the session opened.
    fn hello(&self) -> &Hello;

    /// Sends one request and returns the raw answer, which is a JSON object but otherwise
    /// unchecked. After an error the session is dead: every later call fails too.
    fn call(&mut self, request: &Value) -> Result<Value, TargetError>;

    /// Ends the session abruptly, as SIGKILL would (for a process, it is SIGKILL).
    fn kill(&mut self);

    /// Ends the session normally (end of input) and waits for it.
    fn close(&mut self) -> Result<(), TargetError>;

    /// What the target wrote to stderr so far (empty for in-process targets).
    fn stderr(&self) -> String;

    /// Starts ahead what the session would start on its first request naming each of
    /// `lists` (an `mcp:` target with one server per list: that list's server), so a caller
    /// with time to spare (the fuzzer, making the next case while one runs) takes the wait
    /// off the requests. Nothing for a target that starts nothing per list; a start that
    /// fails is left for the request to meet, as it would have been.
    fn start_ahead(&mut self, lists: &[&str]) {
        let _ = lists;
    }

    /// Says that the caller will never name `lists` again (the fuzzer, when a case that used
    /// them ends and the next case gets lists of its own on the same session). A session may
    /// then reuse what it started for them for lists named later — an `mcp:` target with one
    /// server per list empties such a server through the server's own tools, checks that it
    /// lists nothing, and hands it to the next list instead of starting another — and must
    /// otherwise stop it. Nothing of a released list may reach a list named later: a session
    /// that cannot empty a list through the target's own tools leaves it alone, which is
    /// the default.
    fn release_lists(&mut self, lists: &[&str]) {
        let _ = lists;
    }

    /// Does a session event the way a user would, for sessions that are agent
    /// conversations; answers `Ok(false)` when the session has no such thing and leaves the
    /// event to the runner, which ends (`exit`, `kill`) and opens (`resume`) connections to
    /// a store itself. After `exit` or `kill` done here the session answers nothing until
    /// `resume`.
    fn event(&mut self, event: SessionEvent) -> Result<bool, TargetError> {
        let _ = event;
        Ok(false)
    }

    /// The folder under the root of the session's own list (`"list": "@session"`,
    /// `Feature::SessionList`) as the session knows it now: for Claude Code the session id
    /// the CLI last named in a request to the model, which `/clear` replaces. `None` for a
    /// session without one (a store's connection) or that has not used it yet. The runner
    /// reads it just before each session step and at a failure after one, to tell the
    /// session's tasks deleted from kept where the session no longer looks.
    fn own_list(&self) -> Option<String> {
        None
    }

    /// Sends a typed request and decodes the answer.
    fn request(&mut self, request: &Request) -> Result<Response, TargetError> {
        let answer = self.call(&request.to_json())?;
        Response::from_json(&answer, request.op()).map_err(|reason| TargetError::BadResponse {
            op: request.op().to_string(),
            reason,
        })
    }
}

/// A target made from what `--target` (or `--mapping`) says, or why it cannot be made;
/// `taskproof_targets::TargetSpec` is the handle callers hold on it.
pub type Parsed = Result<Arc<dyn Target>, String>;

/// One kind of target as `--target` writes it: an entry of the registry
/// (`taskproof_targets::KINDS`).
pub struct Kind {
    /// What every spec of this kind starts with: `reference`, `mutant:`.
    pub prefix: &'static str,
    /// How `--target` writes the kind, for help and errors: `mutant:NAME`.
    pub syntax: &'static str,
    /// A spec of this kind that parses and prints back the same (tests, docs).
    pub example: &'static str,
    /// Parses a spec if it is of this kind: `None` when it is another kind's.
    pub parse: fn(&str) -> Option<Parsed>,
    /// The kind is spoken to through a mapping file (`--mapping FILE`).
    pub takes_mapping: bool,
}

impl fmt::Debug for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.syntax)
    }
}

/// One target: what a parsed `--target` names. Each kind implements it in its own module
/// or crate; callers reach it through `taskproof_targets::TargetSpec` and never ask which
/// kind it is.
pub trait Target: fmt::Debug + fmt::Display + Send + Sync {
    /// The registry entry this target was parsed by.
    fn kind(&self) -> &'static Kind;

    /// Opens a session on `root`, which must exist, and asks `hello`. A failure comes with
    /// what the target wrote to stderr before it failed (empty for in-process targets).
    fn open(
        &self,
        root: &Path,
        options: SessionOptions,
    ) -> Result<Box<dyn Session>, (TargetError, String)>;

    /// Opens a race writer's session. `shared`: the list is shared with targets of other
    /// kinds (a mixed race). The answer carries the process group a kill signals in the
    /// middle of a request, for targets whose race sessions have one.
    fn open_racing(
        &self,
        root: &Path,
        options: SessionOptions,
        shared: bool,
    ) -> Result<(Box<dyn Session>, Option<u32>), TargetError> {
        let _ = shared;
        let session = self.open(root, options).map_err(|(e, _)| e)?;
        Ok((session, None))
    }

    /// Whether sessions are separate processes (so kills are real SIGKILLs).
    fn is_process(&self) -> bool {
        false
    }

    /// Whether the target can present several race writers backed by one process, as the
    /// members of one agent team ([`Target::open_team`]).
    fn has_teams(&self) -> bool {
        false
    }

    /// Opens race writers that are the members of one agent team in one process: the lead's
    /// session first, then one per name in `members` (its teammates). Kinds without teams
    /// refuse.
    fn open_team(
        &self,
        root: &Path,
        options: SessionOptions,
        members: &[String],
    ) -> Result<Vec<Box<dyn Session>>, TargetError> {
        let _ = (root, options, members);
        Err(TargetError::Spawn(format!("{self} has no agent teams")))
    }

    /// Whether the target changes its store on its own after its last answer (Claude Code
    /// resets a finished list 5 s after its last task is completed), so that a fuzz case
    /// leaves it alone for a while before its final listings unless told otherwise.
    fn acts_after_answering(&self) -> bool {
        false
    }

    /// Whether anything can happen in the target between requests: a process may (a timer,
    /// a thread, another process of its own), an in-process store cannot. A scenario's
    /// `wait` against a target that cannot act costs no time, and a race gives it no settle
    /// phase: the outcome would be the same, only later.
    fn acts_between_requests(&self) -> bool {
        self.is_process() || self.acts_after_answering()
    }

    /// In a race on a list shared with targets of other kinds, whether the target makes the
    /// change `request` asks for under the list's lock (`race::mix` charges lost changes by
    /// it).
    fn writes_under_lock(&self, request: &Request) -> bool {
        let _ = request;
        false
    }

    /// The profile a race or a fuzz run holds this target to unless told otherwise.
    fn default_profile(&self) -> Profile {
        Profile::Strict
    }

    /// The profile `run` holds this target to without `--profile`, as `--profile` writes
    /// it (a written profile or a recording's name).
    fn run_profile(&self) -> &'static str {
        "strict"
    }

    /// Gives the target its mapping file (`--mapping FILE`); only kinds with
    /// [`Kind::takes_mapping`] are asked, and `None` is for when none was given.
    fn with_mapping(&self, path: Option<&Path>) -> Parsed {
        let _ = path;
        Err(format!("{self} takes no mapping file"))
    }

    /// The named configuration the target runs in, for targets that have more than one
    /// (Claude Code: `teams-off`, the default, or agent teams on): every report names it,
    /// since a verdict holds for that configuration only. `None` for kinds without any.
    fn configuration(&self) -> Option<String> {
        None
    }

    /// Does the slow one-time work a target needs before sessions open (installing a
    /// Claude Code version with npm), so that it is charged to no session's time limits.
    /// Opening a session does it too when nobody did.
    fn prepare(&self) -> Result<(), TargetError> {
        Ok(())
    }

    /// Why a change lost under concurrency may be the way the target is reached rather than
    /// the store (an `mcp:` mapping that reads a task and then writes it in separate tool
    /// calls): a race report says so beside its anomalies.
    fn not_atomic(&self) -> Option<String> {
        None
    }

    /// The log of this target's process starts ([`starts`]), for kinds whose sessions start
    /// processes that greet; `None` for the others.
    fn starts(&self) -> Option<starts::StartLog> {
        None
    }
}
