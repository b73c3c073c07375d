//! The real Claude Code as a target (`claude-code@VERSION`): a published version installed
//! with npm, run unmodified, driven by a scripted model. See docs/claude-code.md.

pub mod background;
mod install;
mod mapping;
mod process;
pub mod recognizer;
mod session;
mod version;

pub use install::{CACHE_ENV, Executable, Installation, PACKAGE, cache_dir, is_version};
pub use session::{ClaudeCodeSession, Extra, RESTART_EVERY};
pub use version::{ClaudeCode, DRIVE_ENV, KIND, drive, features};
