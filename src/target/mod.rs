//! Targets: the store under test, reached through sessions that speak the adapter protocol.
//!
//! A [`TargetSpec`] names a target (`reference`, `naive`, `mutant:NAME`, `cmd:COMMAND`,
//! `claude-code@VERSION`); each [`Session`] is one connection to it on a root folder, which
//! for `cmd:` targets is one adapter process and for `claude-code@` the real CLI. Sessions exchange raw JSON values, so a scenario can send a malformed
//! request and judge the raw answer; [`Session::request`] adds typed decoding on top.

pub mod claude_code;
pub mod group;
mod inprocess;
pub mod mcp;
mod process;

pub use inprocess::InProcessSession;
pub use process::ProcessSession;

use std::fmt;
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use serde_json::Value;

use crate::profile::Profile;
use crate::protocol::{Hello, Request, Response};
use crate::store::{Mutant, Options, StoreKind};

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

/// Per-session settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
}

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions {
            timeout: DEFAULT_TIMEOUT,
            start_timeout: DEFAULT_START_TIMEOUT,
            durable: true,
            interactive: false,
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

    /// Does a session event the way a user would, for sessions that are agent
    /// conversations; answers `Ok(false)` when the session has no such thing and leaves the
    /// event to the runner, which ends (`exit`, `kill`) and opens (`resume`) connections to
    /// a store itself. After `exit` or `kill` done here the session answers nothing until
    /// `resume`.
    fn event(&mut self, event: SessionEvent) -> Result<bool, TargetError> {
        let _ = event;
        Ok(false)
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

/// Names a target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetSpec {
    /// The strict reference store, in-process.
    Reference,
    /// The Claude Code 2.1.17 model, in-process.
    Naive,
    /// The reference store with one rule broken, in-process.
    Mutant(Mutant),
    /// An adapter command, run through `sh -c` with `TASKPROOF_ROOT` set.
    Cmd(String),
    /// A published version of Claude Code, installed with npm and driven by a scripted model.
    ClaudeCode(claude_code::ClaudeCode),
    /// An MCP task server (`mcp:COMMAND`), one process per session, through a mapping file.
    Mcp(mcp::McpTarget),
}

impl TargetSpec {
    /// The profile a run holds this target to unless told otherwise.
    pub fn default_profile(&self) -> Profile {
        match self {
            TargetSpec::Naive => Profile::Cc2117,
            _ => Profile::Strict,
        }
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
        let kind = match self {
            TargetSpec::Reference => StoreKind::Reference,
            TargetSpec::Naive => StoreKind::Naive,
            TargetSpec::Mutant(m) => StoreKind::Mutant(*m),
            TargetSpec::Cmd(cmd) => {
                return Ok(Box::new(ProcessSession::spawn_with_stderr(
                    cmd, root, options,
                )?));
            }
            TargetSpec::ClaudeCode(cc) => {
                return Ok(Box::new(claude_code::ClaudeCodeSession::open(
                    cc, root, options,
                )?));
            }
            TargetSpec::Mcp(t) => return Ok(Box::new(mcp::McpSession::open(t, root, options)?)),
        };
        let store = kind
            .open(
                root,
                Options {
                    durable: options.durable,
                },
            )
            .map_err(|e| {
                (
                    TargetError::Io(format!("failed to open the store: {e}")),
                    String::new(),
                )
            })?;
        Ok(Box::new(InProcessSession::new(store)))
    }

    /// Whether sessions are separate processes (so kills are real SIGKILLs).
    pub fn is_process(&self) -> bool {
        matches!(
            self,
            TargetSpec::Cmd(_) | TargetSpec::ClaudeCode(_) | TargetSpec::Mcp(_)
        )
    }

    /// Gives an `mcp:` target its mapping file (`--mapping FILE`); other targets take none.
    pub fn with_mapping(self, path: Option<&Path>) -> Result<TargetSpec, String> {
        match (self, path) {
            (TargetSpec::Mcp(t), Some(p)) => t
                .with_mapping(p)
                .map(TargetSpec::Mcp)
                .map_err(|e| e.to_string()),
            (TargetSpec::Mcp(t), None) => Err(format!(
                "{t} needs --mapping FILE (docs/mcp-targets.md; `taskproof mcp-draft` writes a draft)"
            )),
            (t, None) => Ok(t),
            (t, Some(_)) => Err(format!("--mapping is for mcp: targets, not {t}")),
        }
    }

    /// Does the slow one-time work a target needs before sessions open (installing a
    /// Claude Code version with npm), so that it is charged to no session's time limits.
    /// Opening a session does it too when nobody did.
    pub fn prepare(&self) -> Result<(), TargetError> {
        match self {
            TargetSpec::ClaudeCode(cc) => cc.prepare().map(drop).map_err(TargetError::Spawn),
            TargetSpec::Mcp(t) => t.prepare(),
            _ => Ok(()),
        }
    }
}

impl fmt::Display for TargetSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TargetSpec::Reference => f.write_str("reference"),
            TargetSpec::Naive => f.write_str("naive"),
            TargetSpec::Mutant(m) => write!(f, "mutant:{m}"),
            TargetSpec::Cmd(c) => write!(f, "cmd:{c}"),
            TargetSpec::ClaudeCode(cc) => write!(f, "{cc}"),
            TargetSpec::Mcp(t) => write!(f, "{t}"),
        }
    }
}

impl FromStr for TargetSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "reference" => Ok(TargetSpec::Reference),
            "naive" => Ok(TargetSpec::Naive),
            _ => {
                if let Some(cmd) = s.strip_prefix("cmd:") {
                    if cmd.trim().is_empty() {
                        return Err("cmd: needs a command, e.g. cmd:'python3 adapter.py'".into());
                    }
                    Ok(TargetSpec::Cmd(cmd.to_string()))
                } else if let Some(cmd) = s.strip_prefix("mcp:") {
                    Ok(TargetSpec::Mcp(mcp::McpTarget::parse(cmd)?))
                } else if let Some(m) = s.strip_prefix("mutant:") {
                    Ok(TargetSpec::Mutant(m.parse()?))
                } else if let Some(v) = s.strip_prefix("claude-code@") {
                    Ok(TargetSpec::ClaudeCode(claude_code::ClaudeCode::parse(v)?))
                } else if s == "claude-code" {
                    Err(
                        "claude-code needs a version: claude-code@2.1.17 or claude-code@latest"
                            .into(),
                    )
                } else {
                    Err(format!(
                        "unknown target {s:?}; expected reference, naive, mutant:NAME, cmd:COMMAND, mcp:COMMAND or claude-code@VERSION"
                    ))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_specs_parse() {
        assert_eq!("reference".parse(), Ok(TargetSpec::Reference));
        assert_eq!(
            "cmd:python3 a.py".parse(),
            Ok(TargetSpec::Cmd("python3 a.py".into()))
        );
        assert_eq!(
            "mutant:no-mirror".parse(),
            Ok(TargetSpec::Mutant(Mutant::NoMirror))
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
}
