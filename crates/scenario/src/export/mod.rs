//! `taskproof run --export DIR`: each failing scenario written out for the store's maintainer,
//! so that the failure reproduces with the store and a shell alone (docs/reports.md,
//! "Exporting failures").
//!
//! `DIR/ID/` holds `README.md` (what failed, the rules, the versions, the command, expected
//! and got: text to paste into an issue), and for a target reached through processes (`cmd:`
//! adapters, `mcp:` servers) what the scenario's sessions really wrote to them and read back
//! (the targets' wire log, [`taskproof_session::wire`]): `process-N.in.jsonl` (the lines sent
//! to process N, in order, to pipe into it), `process-N.out.jsonl` (what it answered),
//! `wire.jsonl` (everything in the order it passed, with the steps and the processes' starts
//! and ends) and `replay.sh`, a POSIX shell script that starts every process as taskproof
//! did, on a fresh folder, and sends each line once the answer to the one before came.

mod folder;
mod readme;
mod replay;
#[cfg(test)]
mod tests;
mod wire;

pub(crate) use folder::*;
pub(crate) use readme::*;
use replay::*;
use wire::*;
