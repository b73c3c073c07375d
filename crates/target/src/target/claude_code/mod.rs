//! The real Claude Code as a target (`claude-code@VERSION`): a published version installed
//! with npm, run unmodified, driven by a scripted model. See docs/claude-code.md.

pub mod background;
mod cli;
mod install;
mod mapping;
mod model;
pub mod model_log;
mod session;
mod spec;

pub use cli::Drive;
pub use install::{CACHE_ENV, Executable, Installation, PACKAGE, cache_dir, is_version};
/// The scripted model, for tests that script their own tool calls (tests/claude_code_mcp.rs).
pub use model::{Exchange, ModelServer, Reply, ToolResult, Turn, prompt_marker};
pub use session::{ClaudeCodeSession, Extra, RESTART_EVERY};
pub use spec::{ClaudeCode, DRIVE_ENV, KIND, drive, features, force_drive};
