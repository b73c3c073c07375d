//! The kinds of failure a target may answer, and a failed request.

use crate::task::FieldError;

word_enum! {
    /// The kinds of failure a target may answer (SPEC §2).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
    pub enum ErrorKind, unknown: |s| format!("unknown error kind {s:?}"), {
        NotFound => "not_found",
        Invalid => "invalid",
        Cycle => "cycle",
        Dangling => "dangling",
        Blocked => "blocked",
        Transition => "transition",
        Conflict => "conflict",
        Corrupt => "corrupt",
        Unsupported => "unsupported",
        Io => "io",
    }
}

/// A failed request: its kind and a message for people.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind}: {message}")]
pub struct Failure {
    pub kind: ErrorKind,
    pub message: String,
}

impl Failure {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Failure {
        Failure {
            kind,
            message: message.into(),
        }
    }
}

impl From<FieldError> for Failure {
    fn from(e: FieldError) -> Failure {
        Failure::new(ErrorKind::Invalid, e.to_string())
    }
}

/// What one store operation gives: its result, or the failure the protocol answers for it.
pub type OpResult<T> = Result<T, Failure>;
