//! The adapter protocol (SPEC §2): requests, responses and error kinds, one JSON object per
//! line. Both sides live here: the reference store decodes requests and encodes responses;
//! the harness encodes requests and decodes (and judges) what a target answers.

mod failure;
mod hello;
mod request;
mod response;
#[cfg(test)]
mod tests;

pub use crate::layout::Layout;
pub use failure::*;
pub use hello::*;
pub use request::*;
pub use response::*;

/// The protocol version this crate speaks. Version 2 added the optional parts of the
/// contract a target declares in `hello`'s `features` ([`Feature`]); a version 1 `hello`
/// is still read, as declaring every part version 2 added ([`Feature::ADDED_IN_2`]), which
/// is what version 1 assumed of every target.
pub const PROTOCOL_VERSION: u64 = 2;

/// The oldest protocol version a target may answer `hello` with.
pub const OLDEST_PROTOCOL_VERSION: u64 = 1;
