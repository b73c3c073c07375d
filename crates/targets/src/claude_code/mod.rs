//! The real Claude Code as a target (`claude-code@VERSION`): a published version installed
//! with npm, run unmodified, driven by a scripted model. See docs/claude-code.md.

pub mod background;
mod install;
mod mapping;
pub mod model_log;
mod process;
mod scripted;
mod session;
mod version;

pub use install::{CACHE_ENV, Executable, Installation, PACKAGE, cache_dir, is_version};
pub use process::Drive;
/// The scripted model, for tests that script their own tool calls (tests/claude_code_mcp.rs).
pub use scripted::{Exchange, Reply, ScriptedModel, ToolResult, Turn, prompt_marker};
pub use session::{ClaudeCodeSession, Extra, RESTART_EVERY};
pub use version::{ClaudeCode, DRIVE_ENV, KIND, drive, features};
