//! Recorded profiles: what a real store did, step by step, written by `taskproof record`
//! and checked in under `profiles/` (docs/profiles.md describes the file).
//!
//! A recorded profile is `strict` plus the differences: for every scenario, the steps whose
//! observation ([`super::observe`]) was not what `strict` expects, and every concurrent
//! block with how often it held. A step left out behaved as `strict` expects. A step whose
//! observation differed between runs of the same target is `racy` and never judged.
//!
//! The work is split by job: the file ([`super::format`]: the types, reading and writing),
//! recording ([`super::merge`]: runs merged into records) and holding ([`super::hold`]:
//! which profile a name means, and the verdict on a step). This module names them all.

pub use crate::format::{
    FORMAT, ProfileError, Recorded, ScenarioRecord, Seen, State, StepKey, StepRecord, default_path,
    today,
};
pub use crate::hold::{BUILTIN, Choice, Judged, Mode};
pub use crate::merge::{Observed, Observer, RunRecord, merge_recordings};
