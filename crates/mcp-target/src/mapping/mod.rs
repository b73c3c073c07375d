//! The mapping file of an `mcp:` target (docs/mcp-targets.md): which tools a protocol request
//! becomes, how their arguments are built from the request, and how the answers are read.
//!
//! A file is read once, strictly: an unknown or ill-typed key, a template naming something the
//! request does not have, a pattern that does not compile, or an operation neither mapped nor
//! declared `unsupported` is an error naming the file and the key, before any server starts.
//! Whether the server has the tools and arguments named is checked against its `tools/list`
//! when a session opens ([`Mapping::check_tools`]), before any request.
//!
//! Here the declarations only: model.rs is the model, the file as checked; raw.rs holds the file as written (serde's TOML shapes), compile/ turns
//! it into the model with the errors, and template.rs the templates: arguments built from a
//! request, answers read back. What a mapping says of itself: atomic.rs (which requests read
//! and write apart), status.rs (status words both ways), stated.rs (what `hello` states).

mod atomic;
mod compile;
mod model;
mod raw;
mod stated;
mod status;
mod template;
#[cfg(test)]
mod tests;

pub use compile::MappingError;
pub use model::*;
pub use template::{Filter, Part, Template, at, is_set, lookup};
