//! taskproof's target registry and the kinds of target without a crate of their own:
//! in-process stores and adapter processes (docs/architecture.md, "Crates").
//!
//! A [`TargetSpec`] names a target (`reference`, `naive`, `mutant:NAME`, `cmd:COMMAND`,
//! `mcp:COMMAND`, `claude-code@VERSION`, `claude-code-controller@VERSION`): a handle on a
//! `taskproof_session::Target`, implemented once per kind in its own module (`builtin`,
//! `cmd`, `controller`) or crate (MCP servers: `taskproof-mcp-target`; the real Claude Code:
//! `taskproof-claude-code`) and
//! found by parsing against the registry, [`KINDS`]. Each `taskproof_session::Session` is one
//! connection to it on a root folder, which for `cmd:` and `claude-code-controller@` targets
//! is one adapter process and for `claude-code@` the real CLI.

mod builtin;
mod cmd;
mod controller;
mod inprocess;
mod process;

pub use inprocess::InProcessSession;
pub use process::ProcessSession;

use std::fmt;
use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;

use taskproof_core::protocol::Request;
use taskproof_profile::Profile;
use taskproof_session::{Kind, Session, SessionOptions, Target, TargetError};

/// The registry: every kind of target `--target` accepts, in the order errors list them.
/// A new kind is a module here, or a crate of its own over `taskproof-session` (a product's
/// driver), with a [`Kind`] and a [`Target`], and a line here.
pub static KINDS: &[&Kind] = &[
    &builtin::REFERENCE,
    &builtin::NAIVE,
    &builtin::MUTANT,
    &cmd::KIND,
    &taskproof_mcp_target::KIND,
    &taskproof_claude_code::KIND,
    &controller::KIND,
    &taskproof_opencode::KIND,
];

/// The kinds that take `--mapping FILE`.
pub fn mapping_kinds() -> impl Iterator<Item = &'static Kind> {
    KINDS.iter().copied().filter(|k| k.takes_mapping)
}

/// `--target`'s help, from the registry: every kind as `--target` writes it, so that a new
/// kind needs no help text of its own in any command.
pub fn target_help() -> String {
    let kinds: Vec<String> = KINDS
        .iter()
        .map(|k| {
            if k.takes_mapping {
                format!("{} (with --mapping)", k.syntax)
            } else {
                k.syntax.to_string()
            }
        })
        .collect();
    format!("The store under test: {}", kinds.join(", "))
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

    /// The named configuration the target runs in ([`Target::configuration`]), for kinds
    /// that have them (Claude Code: `teams-off` unless another is named).
    pub fn configuration(&self) -> Option<String> {
        self.0.configuration()
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

    /// See [`Target::has_teams`].
    pub fn has_teams(&self) -> bool {
        self.0.has_teams()
    }

    /// See [`Target::open_team`].
    pub fn open_team(
        &self,
        root: &Path,
        options: SessionOptions,
        members: &[String],
    ) -> Result<Vec<Box<dyn Session>>, TargetError> {
        self.0.open_team(root, options, members)
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
            (true, path) => self.0.with_mapping(path).map(TargetSpec),
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

    /// The log of the target's process starts ([`Target::starts`]).
    pub fn starts(&self) -> Option<taskproof_session::starts::StartLog> {
        self.0.starts()
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
        let parsed = KINDS.iter().find_map(|k| (k.parse)(s));
        parsed.map(|p| p.map(TargetSpec)).unwrap_or_else(|| {
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
