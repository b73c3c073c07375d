//! taskproof's conformance matrix (docs/architecture.md, "Crates"): the JSON reports of many
//! runs, read back through the report schema, rendered as one table. It needs the schema and
//! race's report types only, so it builds beside the runner's crates.
//!
//! The modules of the crates below are re-exported under their own names, so that
//! `taskproof_report::schema` names what it names in every crate.
//!
//! The conformance matrix (`taskproof matrix`): scenarios grouped by rule as rows, targets
//! as columns, each cell pass / fail / skip / error with the step, the expected and the
//! actual answer behind it; per target the anomaly counts of a short race per workload.
//!
//! The flow: [`input`] reads the JSON reports `taskproof run` and `taskproof race` wrote
//! (or a folder of them per target) into [`input::Column`]s -> [`build()`] lays them out as a
//! [`build::Matrix`] -> [`markdown`] and [`html`] render it. Building and rendering are pure:
//! the same reports give the same pages, so a matrix can be rebuilt from saved reports
//! without running anything. Running the targets is the command's job (src/cli/matrix.rs).

pub mod build;
pub mod html;
pub mod input;
pub mod markdown;

pub use build::{Matrix, State, build};
pub use input::{Column, add_files, load_from, load_target_dir};

/// The matrix's heading.
pub const TITLE: &str = "taskproof conformance matrix";

/// The two pages of a matrix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pages {
    pub markdown: String,
    pub html: String,
}

/// Builds the Markdown and HTML pages from the columns. `note` is a line of plain text
/// under the heading (where the reports came from, say).
pub fn render(columns: &[Column], note: &str) -> Pages {
    let m = build(columns);
    Pages {
        markdown: markdown::render(&m, TITLE, note),
        html: html::render(&m, TITLE, note),
    }
}
