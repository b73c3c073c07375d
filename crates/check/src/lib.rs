//! taskproof's audit of task folders on disk, repairs, and the Claude Code hook (docs/architecture.md, "Crates").
//!
//! `taskproof check`: the audit of task folders on disk that Claude Code or other agents
//! wrote, the safe repairs of `--fix`, and the hook mode that guards a live session.
//!
//! [`discover`] finds the list folders, [`audit`] reads one and [`judge`] judges its tasks, [`fix`] repairs it
//! under the store's lock, [`hook`] judges one change handed over by a Claude Code hook (on the list [`locate`]
//! finds and reads) and keeps the list's [`journal`], [`vanish`] says from the journal (or the
//! folder's shape) what vanished and [`restore`] writes it back,
//! [`run`] ties a run together and [`render`] shows it. What is wrong is a [`Finding`];
//! only a folder that cannot be read at all, or a restore that cannot be made, is a [`CheckError`].

pub mod audit;
pub mod discover;
mod error;
pub mod finding;
pub mod fix;
pub mod gone;
pub mod hook;
pub mod journal;
pub mod judge;
pub mod locate;
pub mod render;
pub mod restore;
pub mod run;
pub mod strand;
pub mod teams;
pub mod vanish;

pub use error::CheckError;
pub use finding::{EdgeField, Finding, FindingKind, Repair};
pub use run::{Mode, Report};
