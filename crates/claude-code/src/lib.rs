//! taskproof's Claude Code driver: the real Claude Code as a target (`claude-code@VERSION`),
//! a published version installed with npm, run unmodified, driven by the scripted model of
//! `taskproof-model` (docs/claude-code.md; docs/architecture.md, "Crates").
//!
//! Installing a version ([`Installation`]); one running CLI (`process::ClaudeProcess`); a
//! task session on it ([`ClaudeCodeSession`]); what Claude Code's requests to the model look
//! like ([`recognizer`]); tool calls to and from the protocol (`mapping`); what a version
//! can do and the registry's entry for it ([`ClaudeCode`], [`KIND`]); background-task
//! sessions ([`background`]). It implements `taskproof_session::Target`, and
//! `taskproof-targets` lists [`KIND`] in its registry.

pub mod background;
mod config;
mod install;
mod mapping;
mod process;
pub mod recognizer;
mod session;
mod version;

pub use config::{Config, TEAMS_ENV, TEAMS_FLAG};
pub use install::{CACHE_ENV, Executable, Installation, PACKAGE, cache_dir};
pub use session::lanes::{TeamLane, open_team};
pub use session::{ClaudeCodeSession, Extra, RESTART_EVERY};
pub use version::{ClaudeCode, DRIVE_ENV, KIND, Release, drive, features};
