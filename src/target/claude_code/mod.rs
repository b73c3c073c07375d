//! The real Claude Code as a target (`claude-code@VERSION`): a published version installed
//! with npm, run unmodified, driven by a scripted model. See docs/claude-code.md.

mod cli;
mod install;
mod mapping;
mod model;
mod session;
mod spec;

pub use cli::Drive;
pub use install::{CACHE_ENV, Executable, Installation, cache_dir};
pub use session::{ClaudeCodeSession, Extra, RESTART_EVERY};
pub use spec::{ClaudeCode, DRIVE_ENV, drive, features};
