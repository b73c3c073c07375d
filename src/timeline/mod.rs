//! `taskproof versions timeline`: for a set of behaviours (rows), the version ranges over which each
//! answer held across a target's published versions, found by bisecting each change rather
//! than running every version ([`build`]), seeded with the versions already measured
//! ([`seeds`]), cached in a JSON file, and shown as Markdown and HTML ([`page`]).

pub mod build;
pub mod page;
pub mod rows;
pub mod seeds;

pub use build::{Cache, Point, RowTimeline, Timeline, Vouch, build_row, sample_indices};
pub use rows::{Row, RowProbe};
