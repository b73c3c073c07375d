//! The mapping's compiler: the file as written (raw.rs) turned into the model, strictly,
//! every error a [`MappingError`] naming the file and the key; and the model checked against
//! the tools a server lists ([`crate::Mapping::check_tools`]).
//!
//! The entry (file.rs) reads the TOML and hands each part to its own pass: the server's
//! launch and declarations (server.rs), status words (status.rs), the task's shape
//! (task.rs), error rules (errors.rs), the operations and their calls (ops.rs, call.rs),
//! then what the parts say of each other (cross.rs); tools.rs checks the model against a
//! server's tools, values.rs holds the small conversions they share.

mod call;
mod cross;
mod error;
mod errors;
mod file;
mod ops;
mod server;
mod status;
mod task;
#[cfg(test)]
mod tests;
mod tools;
mod values;

pub use error::MappingError;
