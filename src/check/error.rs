//! The one error of a check: a folder that cannot be audited as asked. Everything wrong
//! *inside* a folder is a finding, not an error.

use std::path::PathBuf;

/// Why a check could not run as asked.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    #[error("audit {0}: no such folder")]
    NoSuchFolder(PathBuf),
    #[error("audit {0}: not a folder; name a list folder or a folder of lists")]
    NotAFolder(PathBuf),
    #[error("read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}
