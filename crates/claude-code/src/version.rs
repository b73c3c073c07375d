//! `claude-code@VERSION` and `claude-code@latest`: which published version, and what its
//! tools can do and how it must be driven (measured per version; see docs/claude-code.md).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

use std::path::Path;

use crate::config::Config;
use crate::install::{self, InstallError, Installation};
use crate::mapping::Features;
use crate::session::ClaudeCodeSession;
use taskproof_core::protocol::Request;
use taskproof_session::{Drive, Kind, Session, SessionOptions, Target, TargetError};

/// `claude-code@VERSION` in the registry of target kinds.
pub static KIND: Kind = Kind {
    prefix: "claude-code@",
    syntax: "claude-code@VERSION[:CONFIG]",
    example: "claude-code@2.1.17",
    parse: |s| {
        if let Some(v) = s.strip_prefix("claude-code@") {
            Some(ClaudeCode::parse_target(v).map(|cc| Arc::new(cc) as Arc<dyn Target>))
        } else if s == "claude-code" {
            Some(Err(
                "claude-code needs a version: claude-code@2.1.17 or claude-code@latest".into(),
            ))
        } else {
            None
        }
    },
    takes_mapping: false,
};

/// A published version, or a dist-tag npm resolves (`latest`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Release {
    Version(String),
    Latest,
}

/// A Claude Code target: a release run in a configuration ([`Config`], agent teams off
/// unless named).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClaudeCode {
    pub release: Release,
    pub config: Config,
}

impl ClaudeCode {
    /// Parses a release (what follows `claude-code@` when no configuration may be named),
    /// in the default configuration.
    pub fn parse(s: &str) -> Result<ClaudeCode, String> {
        let release = if s == "latest" {
            Release::Latest
        } else if taskproof_session::npm::is_version(s) {
            Release::Version(s.to_string())
        } else {
            return Err(format!(
                "claude-code@{s}: expected a published version such as 2.1.17, or latest"
            ));
        };
        Ok(ClaudeCode {
            release,
            config: Config::default(),
        })
    }

    /// Parses what follows `claude-code@` in `--target`: a release, then optionally
    /// `:CONFIG` ([`Config`]'s names: `claude-code@2.1.332:teams-env`).
    pub fn parse_target(s: &str) -> Result<ClaudeCode, String> {
        match s.split_once(':') {
            None => ClaudeCode::parse(s),
            Some((release, config)) => {
                let config = Config::parse(config).map_err(|e| format!("claude-code@{s}: {e}"))?;
                Ok(ClaudeCode::parse(release)?.with_config(config))
            }
        }
    }

    /// The same release in `config`.
    pub fn with_config(self, config: Config) -> ClaudeCode {
        ClaudeCode { config, ..self }
    }

    /// Installs this version unless the cache has it, once per process, and says how to
    /// start it. Callers should do this before opening sessions, so that the download is
    /// never charged to a session's start-up.
    pub fn prepare(&self) -> Result<Installation, String> {
        static DONE: OnceLock<Mutex<HashMap<Release, Installation>>> = OnceLock::new();
        let done = DONE.get_or_init(Default::default);
        // Held across the install: sessions opened at once wait for one install.
        let mut done = done.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(found) = done.get(&self.release) {
            return Ok(found.clone());
        }
        let version = match &self.release {
            Release::Version(v) => v.clone(),
            Release::Latest => install::resolve_tag("latest").map_err(|e| failed(&e))?,
        };
        let found = install::ensure(&version).map_err(|e| failed(&e))?;
        done.insert(self.release.clone(), found.clone());
        Ok(found)
    }
}

impl Target for ClaudeCode {
    fn kind(&self) -> &'static Kind {
        &KIND
    }

    fn open(
        &self,
        root: &Path,
        options: SessionOptions,
    ) -> Result<Box<dyn Session>, (TargetError, String)> {
        Ok(Box::new(ClaudeCodeSession::open(self, root, options)?))
    }

    fn is_process(&self) -> bool {
        true
    }

    /// With agent teams on: the lead and its in-process teammates, as race writers of one
    /// CLI (`session::lanes`).
    fn has_teams(&self) -> bool {
        self.config.teams()
    }

    fn open_team(
        &self,
        root: &Path,
        options: SessionOptions,
        members: &[String],
    ) -> Result<Vec<Box<dyn Session>>, TargetError> {
        Ok(
            crate::session::lanes::open_team(self, root, options, members)?
                .into_iter()
                .map(|l| Box::new(l) as Box<dyn Session>)
                .collect(),
        )
    }

    /// A finished list is reset 5 s after its last task is completed.
    fn acts_after_answering(&self) -> bool {
        true
    }

    /// Only TaskCreate takes the list's lock (`.lock.lock`, read from 2.1.112's `cli.js`);
    /// the target claims with TaskUpdate (owner and status), which locks nothing.
    fn writes_under_lock(&self, request: &Request) -> bool {
        matches!(request, Request::Create { .. })
    }

    fn configuration(&self) -> Option<String> {
        Some(self.config.name().to_string())
    }

    fn prepare(&self) -> Result<(), TargetError> {
        // The install ([`ClaudeCode::prepare`], the inherent method).
        ClaudeCode::prepare(self)
            .map(drop)
            .map_err(TargetError::Spawn)
    }
}

fn failed(e: &InstallError) -> String {
    format!("failed to {e}")
}

impl fmt::Display for ClaudeCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.release {
            Release::Version(v) => write!(f, "claude-code@{v}")?,
            Release::Latest => f.write_str("claude-code@latest")?,
        }
        // The default is written as it always was, so that a spec, a report's target and a
        // matrix column of teams off read as before; the configuration is named beside it.
        match self.config {
            Config::TeamsOff => Ok(()),
            c => write!(f, ":{c}"),
        }
    }
}

/// `major.minor.patch` as numbers, for comparing versions (a pre-release tail is ignored).
pub fn numbers(version: &str) -> (u64, u64, u64) {
    let mut parts = version
        .split(['-', '+'])
        .next()
        .unwrap_or("")
        .split('.')
        .map(|p| p.parse::<u64>().unwrap_or(0));
    (
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
    )
}

/// What the tools of `version` can do.
pub fn features(version: &str) -> Features {
    Features {
        // Claude Code's changelog: TaskUpdate deletes (status "deleted") from 2.1.20 on.
        delete: numbers(version) >= (2, 1, 20),
    }
}

/// The environment variable that forces a way of driving (`print` or `terminal`).
pub const DRIVE_ENV: &str = "TASKPROOF_CLAUDE_CODE_DRIVE";

/// How `version` must be driven: as `forced` says when the caller says (a session's
/// [`SessionOptions::drive`](taskproof_session::SessionOptions::drive), from `race --drive`), else
/// as [`DRIVE_ENV`] says (`print` or `terminal`), else by `choose_drive`; `interactive`
/// sessions (a scenario that plays a user) use the terminal UI.
pub fn drive(version: &str, interactive: bool, forced: Option<Drive>) -> Drive {
    let forced = match forced {
        Some(Drive::Print) => Some("print".to_string()),
        Some(Drive::Terminal) => Some("terminal".to_string()),
        None => std::env::var(DRIVE_ENV).ok(),
    };
    choose_drive(version, forced.as_deref(), interactive)
}

/// The choice behind [`drive`]: an override of `print` or `terminal` wins; otherwise the
/// terminal UI for a session that plays a user (what happens between requests, such as
/// the reset of a finished list, happens only there) and for versions before
/// [`PRINT_MODE_FROM`], print mode for the rest.
pub fn choose_drive(version: &str, forced: Option<&str>, interactive: bool) -> Drive {
    match forced {
        Some("print") => Drive::Print,
        Some("terminal") => Drive::Terminal,
        _ if interactive => Drive::Terminal,
        _ if numbers(version) >= PRINT_MODE_FROM => Drive::Print,
        _ => Drive::Terminal,
    }
}

/// The first version whose task tools exist in `-p` mode, measured by forcing print mode on
/// each published version: 2.1.19 ran `rt01` and `rt03` there; 2.1.17 and 2.1.18 never offer
/// `TaskCreate` to the model in `-p` mode (their task tools exist only in interactive
/// sessions). See docs/claude-code.md.
pub const PRINT_MODE_FROM: (u64, u64, u64) = (2, 1, 19);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_and_compare() {
        assert_eq!(
            ClaudeCode::parse("latest").map(|c| c.release),
            Ok(Release::Latest)
        );
        assert_eq!(
            ClaudeCode::parse("2.1.17"),
            Ok(ClaudeCode {
                release: Release::Version("2.1.17".into()),
                config: Config::TeamsOff
            })
        );
        assert!(ClaudeCode::parse("../x").is_err());
        assert!(numbers("2.1.112") > numbers("2.1.20"));
        assert!(!features("2.1.17").delete);
        assert!(features("2.1.20").delete);
    }

    #[test]
    fn a_target_names_its_configuration_after_a_colon_and_the_default_is_teams_off() {
        let on = ClaudeCode::parse_target("2.1.276:teams-env").unwrap();
        assert_eq!(on.config, Config::TeamsEnv);
        assert_eq!(on.to_string(), "claude-code@2.1.276:teams-env");
        assert_eq!(on.configuration().as_deref(), Some("teams-env"));
        let off = ClaudeCode::parse_target("2.1.276").unwrap();
        assert_eq!(off.to_string(), "claude-code@2.1.276");
        assert_eq!(off.configuration().as_deref(), Some("teams-off"));
        // Named explicitly, the default is the same target.
        assert_eq!(ClaudeCode::parse_target("2.1.276:teams-off"), Ok(off));
        assert_eq!(
            ClaudeCode::parse_target("latest:teams-flag")
                .unwrap()
                .to_string(),
            "claude-code@latest:teams-flag"
        );
        let e = ClaudeCode::parse_target("2.1.276:teams").unwrap_err();
        assert!(
            e.starts_with("claude-code@2.1.276:teams: unknown Claude Code configuration"),
            "{e}"
        );
        assert!(ClaudeCode::parse_target("2.1.276:").is_err());
        assert!(ClaudeCode::parse_target("x:teams-env").is_err());
        // A release alone, where no configuration may be named (background targets).
        assert!(ClaudeCode::parse("2.1.276:teams-env").is_err());
    }

    #[test]
    fn the_drive_follows_the_measured_versions_unless_forced() {
        for v in ["2.0.76", "2.1.17", "2.1.18"] {
            assert_eq!(choose_drive(v, None, false), Drive::Terminal, "{v}");
        }
        for v in ["2.1.19", "2.1.20", "2.1.21", "2.1.112", "2.1.330", "3.0.0"] {
            assert_eq!(choose_drive(v, None, false), Drive::Print, "{v}");
            // A session that plays a user gets the terminal UI in every version.
            assert_eq!(choose_drive(v, None, true), Drive::Terminal, "{v}");
        }
        assert_eq!(choose_drive("2.1.17", Some("print"), false), Drive::Print);
        assert_eq!(choose_drive("2.1.332", Some("print"), true), Drive::Print);
        assert_eq!(
            choose_drive("2.1.112", Some("terminal"), false),
            Drive::Terminal
        );
        // Anything else is no override.
        assert_eq!(choose_drive("2.1.17", Some("tui"), false), Drive::Terminal);
        assert_eq!(choose_drive("2.1.21", Some(""), false), Drive::Print);
    }
}
