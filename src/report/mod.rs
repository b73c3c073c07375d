//! Reporters: views of one run. The runner emits [`events::Event`]s; the terminal, JSON,
//! JUnit and Markdown reporters each turn the same events into their format, so a new
//! format touches one file.

pub mod events;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod output;
pub mod result;
pub mod terminal;

pub use events::{Document, Event, ReportError, Reporter};
