//! `taskproof mcp-draft COMMAND`: a first mapping for an MCP server, from its tool list and
//! one probe call of each tool it chooses.
//!
//! The server is started as a session would start it (with `HOME` and the working folder in a
//! scratch folder too, so that a server that keeps its data there keeps the probe's task
//! there), with no operation mapped; its tools and input schemas become comments, and for each
//! operation the tool whose name names a task and fits best is mapped (also a tool that takes
//! the operation as an argument's enum value, `manage {operation: create}`), with its
//! arguments matched to the request by name. Then, unless told not to, each chosen tool is
//! called once on a probe task (create, get, list, update, delete in that order): its answer
//! says whether the server answers JSON or text, where the task, its id and the list are (for
//! text: the id from its label or header line, never from a file path, and patterns that
//! keep each field's label), whether the server reads its status words without case, and
//! where it keeps its data; the schema's status `enum` gives every status word and each
//! argument's type its template's filter. Every guess is marked `# CHECK:` for a person; the
//! draft is read back through the mapping checker (and against the tools) before it is
//! returned, so it parses.
//!
//! Off the runtime path: only the binary (`taskproof mcp-draft`) and its tests use this crate.
//! Split by concern: the entry (draft.rs), which tool maps each operation (choose.rs), the
//! probe calls and what their answers show (probe.rs), patterns for text answers
//! (patterns.rs), and the draft's TOML (render.rs).

mod choose;
mod draft;
mod patterns;
mod probe;
mod render;
#[cfg(test)]
mod tests;

pub use choose::{Choice, choose};
pub use draft::draft;
pub use probe::{Learned, data_folder, probe_tools};
pub use render::{render, render_with};
