//! taskproof's targets and sessions: in-process stores, adapter processes, the real Claude Code, MCP servers (docs/architecture.md, "Crates").
//!
//! Targets: the store under test, reached through sessions that speak the adapter protocol.
//!
//! A [`TargetSpec`] names a target (`reference`, `naive`, `mutant:NAME`, `cmd:COMMAND`,
//! `mcp:COMMAND`, `claude-code@VERSION`, `claude-code-controller@VERSION`): a handle on a
//! [`Target`], implemented once per kind in its own module and found by parsing against the
//! registry, [`KINDS`]. Each [`Session`] is one connection to it on a root folder, which for
//! `cmd:` and `claude-code-controller@` targets is one adapter process and for `claude-code@`
//! the real CLI. Sessions exchange raw JSON values,
//! so a scenario can send a malformed request and judge the raw answer;
//! [`Session::request`] adds typed decoding on top.

pub mod background;
mod builtin;
pub mod claude_code;
mod cmd;
mod controller;
pub mod group;
mod inprocess;
pub mod mcp;
pub mod pipes;
mod process;
pub mod wire;

pub use inprocess::InProcessSession;
pub use process::ProcessSession;

use std::fmt;
use std::path::Path;
use std::str::FromStr;
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
    pub(crate) fn closed_already(dead: &Option<TargetError>) -> Option<Result<(), TargetError>> {
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
    pub drive: Option<claude_code::Drive>,
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

/// One kind of target as `--target` writes it: an entry of [`KINDS`].
pub struct Kind {
    /// What every spec of this kind starts with: `reference`, `mutant:`.
    pub prefix: &'static str,
    /// How `--target` writes the kind, for help and errors: `mutant:NAME`.
    pub syntax: &'static str,
    /// A spec of this kind that parses and prints back the same (tests, docs).
    pub example: &'static str,
    /// Parses a spec if it is of this kind: `None` when it is another kind's.
    pub parse: fn(&str) -> Option<Result<TargetSpec, String>>,
    /// The kind is spoken to through a mapping file (`--mapping FILE`).
    pub takes_mapping: bool,
}

impl fmt::Debug for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.syntax)
    }
}

/// The registry: every kind of target `--target` accepts, in the order errors list them.
/// A new kind is a module under src/target/ with a [`Kind`] and a [`Target`], and a line
/// here.
pub static KINDS: &[&Kind] = &[
    &builtin::REFERENCE,
    &builtin::NAIVE,
    &builtin::MUTANT,
    &cmd::KIND,
    &mcp::KIND,
    &claude_code::KIND,
    &controller::KIND,
];

/// The kinds that take `--mapping FILE`.
pub fn mapping_kinds() -> impl Iterator<Item = &'static Kind> {
    KINDS.iter().copied().filter(|k| k.takes_mapping)
}

/// Names as a sentence, for messages: `a, b or c`.
pub fn listed(names: impl Iterator<Item = &'static str>) -> String {
    let names: Vec<&str> = names.collect();
    match names.split_last() {
        None => String::new(),
        Some((last, [])) => (*last).to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

/// One target: what a parsed `--target` names. Each kind implements it in its own module;
/// callers reach it through [`TargetSpec`] and never ask which kind it is.
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
    fn with_mapping(&self, path: Option<&Path>) -> Result<TargetSpec, String> {
        let _ = path;
        Err(format!("{self} takes no mapping file"))
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
}

/// Names a target: a handle on a [`Target`] of any kind, made by parsing `--target` against
/// [`KINDS`] or from a kind's own type (`TargetSpec::from`). Two specs are equal when they
/// are written the same.
#[derive(Debug, Clone)]
pub struct TargetSpec(Arc<dyn Target>);

impl<T: Target + 'static> From<T> for TargetSpec {
    fn from(target: T) -> TargetSpec {
        TargetSpec(Arc::new(target))
    }
}

impl PartialEq for TargetSpec {
    fn eq(&self, other: &TargetSpec) -> bool {
        self.to_string() == other.to_string()
    }
}

impl Eq for TargetSpec {}

impl TargetSpec {
    /// The registry entry of the target's kind.
    pub fn kind(&self) -> &'static Kind {
        self.0.kind()
    }

    /// The profile a run holds this target to unless told otherwise.
    pub fn default_profile(&self) -> Profile {
        self.0.default_profile()
    }

    /// The profile `run` holds this target to without `--profile` ([`Target::run_profile`]).
    pub fn run_profile(&self) -> &'static str {
        self.0.run_profile()
    }

    /// Opens a session on `root`, which must exist, and asks `hello`.
    pub fn open(
        &self,
        root: &Path,
        options: SessionOptions,
    ) -> Result<Box<dyn Session>, TargetError> {
        self.open_with_stderr(root, options).map_err(|(e, _)| e)
    }

    /// Like [`TargetSpec::open`], but a failure comes with what the adapter wrote to stderr
    /// before it failed (empty for in-process targets), for the report.
    pub fn open_with_stderr(
        &self,
        root: &Path,
        options: SessionOptions,
    ) -> Result<Box<dyn Session>, (TargetError, String)> {
        self.0.open(root, options)
    }

    /// See [`Target::open_racing`].
    pub fn open_racing(
        &self,
        root: &Path,
        options: SessionOptions,
        shared: bool,
    ) -> Result<(Box<dyn Session>, Option<u32>), TargetError> {
        self.0.open_racing(root, options, shared)
    }

    /// Whether sessions are separate processes (so kills are real SIGKILLs).
    pub fn is_process(&self) -> bool {
        self.0.is_process()
    }

    /// See [`Target::acts_after_answering`].
    pub fn acts_after_answering(&self) -> bool {
        self.0.acts_after_answering()
    }

    /// See [`Target::acts_between_requests`].
    pub fn acts_between_requests(&self) -> bool {
        self.0.acts_between_requests()
    }

    /// See [`Target::writes_under_lock`].
    pub fn writes_under_lock(&self, request: &Request) -> bool {
        self.0.writes_under_lock(request)
    }

    /// Whether the target is spoken to through a mapping file (`--mapping FILE`).
    pub fn takes_mapping(&self) -> bool {
        self.kind().takes_mapping
    }

    /// Gives a target that takes a mapping file its file (`--mapping FILE`); other targets
    /// take none.
    pub fn with_mapping(self, path: Option<&Path>) -> Result<TargetSpec, String> {
        match (self.takes_mapping(), path) {
            (true, path) => self.0.with_mapping(path),
            (false, None) => Ok(self),
            (false, Some(_)) => Err(format!(
                "--mapping is for {} targets, not {self}",
                listed(mapping_kinds().map(|k| k.prefix))
            )),
        }
    }

    /// Does the slow one-time work a target needs before sessions open
    /// ([`Target::prepare`]).
    pub fn prepare(&self) -> Result<(), TargetError> {
        self.0.prepare()
    }

    /// Why the target's lost changes may not be the store's alone ([`Target::not_atomic`]).
    pub fn not_atomic(&self) -> Option<String> {
        self.0.not_atomic()
    }
}

impl fmt::Display for TargetSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl FromStr for TargetSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        KINDS.iter().find_map(|k| (k.parse)(s)).unwrap_or_else(|| {
            Err(format!(
                "unknown target {s:?}; expected {}",
                listed(KINDS.iter().map(|k| k.syntax))
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use taskproof_store::Mutant;

    #[test]
    fn target_specs_parse() {
        assert_eq!("reference".parse(), Ok(TargetSpec::reference()));
        assert_eq!(
            "cmd:python3 a.py".parse(),
            Ok(TargetSpec::cmd("python3 a.py"))
        );
        assert_eq!(
            "mutant:no-mirror".parse(),
            Ok(TargetSpec::mutant(Mutant::NoMirror))
        );
        assert!("cmd:".parse::<TargetSpec>().is_err());
        assert!("mutant:nope".parse::<TargetSpec>().is_err());
        assert!("other".parse::<TargetSpec>().is_err());
        let cc: TargetSpec = "claude-code@2.1.17".parse().unwrap();
        assert_eq!(cc.to_string(), "claude-code@2.1.17");
        assert!(cc.is_process());
        assert_eq!(
            "claude-code@latest"
                .parse::<TargetSpec>()
                .unwrap()
                .to_string(),
            "claude-code@latest"
        );
        assert!("claude-code".parse::<TargetSpec>().is_err());
        assert!("claude-code@../x".parse::<TargetSpec>().is_err());
    }

    /// Every registered kind parses its own example into a target of that kind, which prints
    /// back as written; no other kind claims it; an unknown kind's error names them all.
    #[test]
    fn the_registry_parses_each_kind_and_names_them_all() {
        for kind in KINDS {
            assert!(kind.example.starts_with(kind.prefix), "{kind:?}");
            assert!(kind.syntax.starts_with(kind.prefix), "{kind:?}");
            let spec: TargetSpec = kind.example.parse().unwrap();
            assert_eq!(spec.to_string(), kind.example);
            assert!(std::ptr::eq(spec.kind(), *kind), "{kind:?}");
            assert_eq!(spec.to_string().parse::<TargetSpec>(), Ok(spec.clone()));
            let claimed: Vec<&Kind> = KINDS
                .iter()
                .copied()
                .filter(|k| (k.parse)(kind.example).is_some())
                .collect();
            assert_eq!(claimed.len(), 1, "{kind:?} claimed by {claimed:?}");
        }
        let e = "nope:x".parse::<TargetSpec>().unwrap_err();
        assert!(e.starts_with("unknown target \"nope:x\"; expected "), "{e}");
        for kind in KINDS {
            assert!(e.contains(kind.syntax), "{} not in {e}", kind.syntax);
        }
    }

    /// `--mapping` goes to the kinds that take one and is refused by the others, naming the
    /// kinds that do.
    #[test]
    fn mapping_files_go_to_the_kinds_that_take_them() {
        for kind in KINDS {
            let spec: TargetSpec = kind.example.parse().unwrap();
            assert_eq!(spec.takes_mapping(), kind.takes_mapping);
            let given = spec
                .clone()
                .with_mapping(Some(Path::new("/nonexistent.toml")));
            let none = spec.clone().with_mapping(None);
            if kind.takes_mapping {
                assert!(given.is_err() && none.is_err(), "{kind:?}");
            } else {
                assert_eq!(none, Ok(spec), "{kind:?}");
                let e = given.unwrap_err();
                assert!(
                    e.contains(&listed(mapping_kinds().map(|k| k.prefix))),
                    "{e}"
                );
            }
        }
        assert!(mapping_kinds().next().is_some());
    }
}
