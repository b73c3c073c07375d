//! taskproof's reporters (docs/architecture.md, "Crates"): the views of the event stream,
//! terminal, JSON, JUnit and Markdown. They sit above every producer and import none: a
//! producer's report reaches them as a `report::Document`. Kept in a crate of their own so
//! that changing a view rebuilds this crate and the command line, not the harness.

pub use taskproof_harness::{
    background, check, field, fuzz, graph, layout, model, profile, protocol, race, rule, scenario,
    store, target, task,
};

/// The report schema and events of `taskproof-harness`, and the views of this crate.
pub mod report {
    pub use taskproof_harness::report::*;

    pub mod json;
    pub mod junit;
    pub mod markdown;
    pub mod terminal;
}
