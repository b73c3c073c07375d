//! The journal the hook keeps of each task list, so that `check` can say which tasks vanished
//! and `check --restore` can give them back (docs/check.md, "The journal").
//!
//! **Where.** Beside the list folder, never in it: `{folder of lists}/.taskproof-journal/
//! {list}.jsonl`, so `~/.claude/tasks/.taskproof-journal/my-project.jsonl` for the list
//! `~/.claude/tasks/my-project`. Claude Code's reset of a finished list deletes task files
//! inside the list folder only, and `check` skips hidden folders when it looks for lists.
//!
//! **What.** JSON Lines. The first line names the format and the list; every other line is one
//! entry with its time (`at`, milliseconds since the epoch) and the task file it is about:
//! `seen` (the file's exact bytes, as `text` or, when not UTF-8, `hex`, with an FNV-1a hash of
//! the name and the bytes, and a `torn` mark when they were not a whole task: see [`Torn`]),
//! `delete` (the agent asked for the delete, or the hook refused a new
//! task and Claude Code took it back), `gone` (a hook run found the file missing with no delete
//! asked for), `restored` (`check --restore` wrote that version back, `into` naming where), and
//! `run` (a hook run saw every live file as journaled). The hook writes an entry only when a
//! file's bytes differ from the version the journal last saw, plus one `run` line.
//!
//! **Crash-safe.** Entries are appended under an flock on the journal file, at the end of its
//! last complete line, so a line a killed writer left half-written is cut by the next append;
//! a reader skips any line that is not a whole entry, and a `seen` entry whose bytes do not
//! match its hash is never taken for a task. Appends are not fsynced: what the journal guards
//! against is another process deleting task files, which the page cache survives, and an fsync
//! per tool call would cost more than the hook's whole budget; a power cut can lose the last
//! entries, never turn a torn one into a task. A hook run takes the flock ([`lock()`]) before it
//! reads the list, so runs on one list journal it in the order they read it. A compaction
//! writes a new file whole (fsynced) through one temporary name per journal and renames it
//! over the old.
//!
//! **Versions that are not whole.** A writer that rewrites a task file in place (Claude Code
//! up to 2.1.112 truncates it, then writes) can be caught half-way by a hook run, which then
//! reads it empty or in part. The run marks such a version `torn` ([`Torn`]: its size changed
//! during the read, it is empty, or it does not decode as a task); a version without the mark
//! is whole, and an entry written before the mark existed is judged by its bytes when `check`
//! reads them. Each [`Life`] keeps, beside a last version that is not whole, the latest whole
//! one before it ([`Life::restorable`]): `check --restore` writes that one back, never a torn
//! one.
//!
//! **Bounded.** Once the file is over [`COMPACT_FROM`] and more than half of it is history
//! (versions of a task later superseded, tasks deleted or restored, older `run` lines), the next
//! append compacts it to what `check` and `--restore` need: the last version of each live task
//! (and the last whole one before it, when that one is not whole), each vanished task with its
//! `gone` line, and the last `run` line. So the file stays under
//! twice what it must hold, and never over [`MAX_BYTES`]: past that, the oldest vanished tasks
//! are dropped first, and a list whose live tasks alone exceed it is not journaled (said).
//!
//! A file at the journal's place that is not a taskproof journal, is a link, is from a newer
//! taskproof, or is another list's journal, is never written to.

mod error;
mod line;
mod lock;
mod place;
mod read;
#[cfg(test)]
mod tests;
mod write;

pub use error::*;
pub use line::*;
pub use lock::*;
pub use place::*;
pub use read::*;
pub use write::*;
