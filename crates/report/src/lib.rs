//! taskproof's report schema, the event stream and the Document trait producers render through (docs/architecture.md, "Crates").
//!
//! The report schema and the event stream: outcomes and the summary line ([`result`]), the
//! events every command emits and the [`Document`] trait producers render themselves
//! through ([`events`]), and where output goes and how it looks ([`output`]). The views of
//! the events (terminal, JSON, JUnit, Markdown) are the crate `taskproof-reporters`, above
//! every producer, so a new format touches one file there and nothing here.

pub mod events;
pub mod output;
pub mod result;
pub mod schema;

pub use events::{Document, Event, ReportError, Reporter};
