//! Small helpers shared by the integration tests: a temporary folder and a `Command` for the
//! built `taskproof` binary.

#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

/// The path of the `taskproof` binary cargo built for these tests.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_taskproof")
}

/// A `taskproof` command, run from `dir`.
pub fn taskproof(dir: &Path) -> Command {
    let mut c = Command::new(bin());
    c.current_dir(dir).env_remove("TASKPROOF_ROOT");
    c
}

/// A fresh temporary folder, removed when dropped.
pub fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temporary folder")
}

/// The repository root.
pub fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}
