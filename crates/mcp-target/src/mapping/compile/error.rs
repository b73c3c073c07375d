//! A mapping error, and what every pass of the compiler is given to make one.

/// A mapping error: the file, the key and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {key}: {message}")]
pub struct MappingError {
    pub file: String,
    pub key: String,
    pub message: String,
}

/// What a call's templates may name besides the operation's own parts.
pub(super) struct Scope<'a> {
    pub(super) container: bool,
    pub(super) err: &'a dyn Fn(&str, String) -> MappingError,
}

/// Makes a [`MappingError`] for the file being compiled: the key and what is wrong.
pub(super) type MakeError<'a> = dyn Fn(&str, String) -> MappingError + 'a;
