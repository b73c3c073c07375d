//! Naming a background-task target, and opening sessions of it: the one place that turns a
//! target name into a [`BgSession`] (to plug in a new kind of target, add a variant here,
//! its name in [`BgTarget::from_str`] and its session in [`BgTarget::open`]).

use std::fmt;
use std::path::Path;
use std::process::Command;
use std::str::FromStr;
use std::time::Duration;

use crate::mutant::BgMutant;
use crate::protocol::{Limits, ProcessBgSession};
use crate::runner::{Runner, RunnerOptions};
use taskproof_session::background::{BgError, BgSession};

/// A background-task target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BgTarget {
    /// The reference runner, served by this taskproof binary (`taskproof serve-background`)
    /// as a process of its own, so that a SIGKILL of the session is a real one.
    Reference,
    /// The reference with one rule broken, served the same way.
    Mutant(BgMutant),
    /// The reference (or a mutant) in taskproof's own process: no SIGKILL scenarios (a
    /// process cannot SIGKILL itself and go on judging).
    InProcess(Option<BgMutant>),
    /// A runner speaking the background protocol: `sh -c COMMAND` with `TASKPROOF_ROOT`.
    Cmd(String),
    /// A published version of Claude Code, unmodified: its background Bash, output and kill
    /// tools driven by the scripted model (crates/claude-code/src/background.rs).
    ClaudeCode(taskproof_claude_code::ClaudeCode),
}

/// What a session is opened with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BgOpen {
    pub limits: Limits,
    /// The output cap to ask of a runner that takes one (the reference); a target that
    /// keeps its own reports it with [`BgSession::output_cap`].
    pub output_cap: Option<u64>,
    /// Where a target driven by a scripted model (Claude Code) logs every request and
    /// answer; others have no model and ignore it.
    pub model_log: Option<taskproof_model::model_log::LogHandle>,
}

impl Default for BgOpen {
    fn default() -> Self {
        BgOpen {
            limits: Limits {
                timeout: Duration::from_secs(10),
                start_timeout: Duration::from_secs(60),
            },
            output_cap: None,
            model_log: None,
        }
    }
}

impl BgTarget {
    /// Whether its sessions can be SIGKILLed (they are processes).
    pub fn can_sigkill(&self) -> bool {
        !matches!(self, BgTarget::InProcess(_))
    }

    /// Opens a session whose folder is `folder` (which must exist).
    pub fn open(&self, folder: &Path, how: BgOpen) -> Result<Box<dyn BgSession>, BgError> {
        let served = |mutant: Option<BgMutant>| -> Result<Box<dyn BgSession>, BgError> {
            let exe = std::env::current_exe()
                .map_err(BgError::io("failed to find taskproof's own binary"))?;
            let mut c = Command::new(exe);
            c.arg("serve-background");
            if let Some(m) = mutant {
                c.arg("--mutant").arg(m.as_str());
            }
            if let Some(cap) = how.output_cap {
                c.arg("--output-cap").arg(cap.to_string());
            }
            Ok(Box::new(ProcessBgSession::open(c, folder, how.limits)?))
        };
        match self {
            BgTarget::Reference => served(None),
            BgTarget::Mutant(m) => served(Some(*m)),
            BgTarget::InProcess(m) => Ok(Box::new(Runner::new(
                folder,
                RunnerOptions {
                    mutant: *m,
                    output_cap: how.output_cap,
                    guardian_exe: None,
                },
            )?)),
            BgTarget::Cmd(cmd) => {
                let mut c = Command::new("sh");
                c.arg("-c").arg(cmd);
                Ok(Box::new(ProcessBgSession::open(c, folder, how.limits)?))
            }
            BgTarget::ClaudeCode(cc) => taskproof_claude_code::background::open(
                cc,
                folder,
                taskproof_claude_code::background::BgOptions {
                    // A turn of the CLI, not a protocol line: at least its own minimum.
                    timeout: how
                        .limits
                        .timeout
                        .max(taskproof_claude_code::background::BgOptions::default().timeout),
                    start_timeout: how
                        .limits
                        .start_timeout
                        .max(taskproof_claude_code::background::BgOptions::default().start_timeout),
                    model_log: how.model_log,
                },
            ),
        }
    }
}

impl fmt::Display for BgTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BgTarget::Reference => f.write_str("reference"),
            BgTarget::Mutant(m) => write!(f, "mutant:{m}"),
            BgTarget::InProcess(None) => f.write_str("in-process:reference"),
            BgTarget::InProcess(Some(m)) => write!(f, "in-process:mutant:{m}"),
            BgTarget::Cmd(c) => write!(f, "bg-cmd:{c}"),
            BgTarget::ClaudeCode(cc) => write!(f, "{cc}"),
        }
    }
}

impl FromStr for BgTarget {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let inner = |s: &str| -> Result<Option<Option<BgMutant>>, String> {
            Ok(match s {
                "reference" => Some(None),
                _ => match s.strip_prefix("mutant:") {
                    Some(m) => Some(Some(m.parse()?)),
                    None => None,
                },
            })
        };
        if let Some(rest) = s.strip_prefix("in-process:") {
            return match inner(rest)? {
                Some(m) => Ok(BgTarget::InProcess(m)),
                None => Err(format!(
                    "in-process: takes reference or mutant:NAME, got {rest:?}"
                )),
            };
        }
        if let Some(m) = inner(s)? {
            return Ok(m.map_or(BgTarget::Reference, BgTarget::Mutant));
        }
        if let Some(cmd) = s.strip_prefix("bg-cmd:") {
            if cmd.trim().is_empty() {
                return Err(
                    "bg-cmd: needs a command, e.g. bg-cmd:'python3 examples/adapters/background/runner.py'"
                        .into(),
                );
            }
            return Ok(BgTarget::Cmd(cmd.to_string()));
        }
        if let Some(v) = s.strip_prefix("claude-code@") {
            return taskproof_claude_code::ClaudeCode::parse(v).map(BgTarget::ClaudeCode);
        }
        if s.starts_with("cmd:") {
            return Err(format!(
                "{s:?} names a store adapter; a background-task runner is bg-cmd:COMMAND"
            ));
        }
        Err(format!(
            "unknown background target {s:?}; expected reference, mutant:NAME, in-process:reference, in-process:mutant:NAME, bg-cmd:COMMAND or claude-code@VERSION"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back() {
        for name in [
            "reference",
            "mutant:double-notify",
            "in-process:reference",
            "in-process:mutant:counter-ids",
            "bg-cmd:python3 x.py",
        ] {
            assert_eq!(name.parse::<BgTarget>().unwrap().to_string(), name);
        }
        for bad in [
            "mutant:nope",
            "cmd:x",
            "bg-cmd: ",
            "naive",
            "in-process:bg-cmd:x",
        ] {
            assert!(bad.parse::<BgTarget>().is_err(), "{bad}");
        }
    }
}
