//! taskproof's reporters (docs/architecture.md, "Crates"): the views of the event stream,
//! terminal, JSON, JUnit and Markdown. They sit beside the producers, above the report schema, and import none of them: a
//! producer's report reaches them as a `report::Document`. Kept in a crate of their own so
//! that changing a view rebuilds this crate and the command line, nothing else.

/// The report schema and events of `taskproof-report`, and the views of this crate.
pub mod json;
pub mod junit;
pub mod markdown;
pub mod terminal;
