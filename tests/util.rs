//! Small helpers shared by the integration tests: a temporary folder, the built binary, and
//! sessions of `taskproof serve` on a root.

#![allow(dead_code)]

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use taskproof::protocol::{Request, Response};
use taskproof::target::{ProcessSession, Session};

/// A fresh temporary folder, removed when dropped.
pub fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("create a temporary folder")
}

/// The path of the `taskproof` binary cargo built for these tests.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_taskproof")
}

/// A `taskproof serve` process on `root` with extra arguments (e.g. `--no-fsync`).
pub fn serve(root: &Path, args: &str) -> ProcessSession {
    let cmd = format!("exec '{}' serve {args}", bin());
    ProcessSession::spawn(&cmd, root, Duration::from_secs(20)).expect("start taskproof serve")
}

/// Sends a JSON request and decodes the answer, panicking on a protocol error.
pub fn call(s: &mut dyn Session, request: Value) -> Response {
    let req = Request::from_json(&request).expect("a well-formed request");
    s.request(&req).expect("an answer")
}
