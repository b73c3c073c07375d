//! The scenario loader: reads scenario files strictly, so that a typo never silently disables
//! a check. Every error names the file and the JSON path of the field (`steps[3].expect.s07`),
//! and everything that can be proven before running is: unknown fields, missing fields,
//! malformed expectations, profiles a step's expectation leaves uncovered, and placeholders
//! used before any step binds them (checked per profile, honouring `only`).
//!
//! By job: `read` (files, folders, JSON syntax, the scenario's top level, duplicate ids),
//! `step` (one step and its action), `expect` (expectations, concurrent blocks, values
//! per profile), `variables` (placeholders bound before use). Fields are read with
//! [`taskproof_core::field`], the reader the wire types use too.

mod expect;
mod read;
#[cfg(test)]
use read::tests;
mod step;
mod variables;

pub(crate) use read::finish;
pub use read::{LoadError, load_dir, load_file, load_paths, load_text, parse_scenario};
pub(crate) use step::check_relative;
pub(crate) use variables::templated;

/// A scenario of `steps` under profile strict, for unit tests of what reads scenarios.
#[cfg(test)]
pub(crate) fn test_scenario(steps: serde_json::Value) -> crate::Scenario {
    let v = serde_json::json!({"id": "s", "title": "t", "rules": ["S1"], "profiles": ["strict"], "steps": steps});
    parse_scenario(&v, std::path::Path::new("s.json")).expect("a valid test scenario")
}
