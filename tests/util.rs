//! Small helpers shared by the integration tests: a temporary folder per test and a
//! `Command` for the built binary.

#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;
use taskproof::protocol::{Request, Response};
use taskproof::target::{ProcessSession, Session};

/// The path of the `taskproof` binary cargo built for these tests.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_taskproof")
}

/// The repository root.
pub fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A fresh temporary folder, removed when dropped.
pub fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("create a temporary folder")
}

/// A command for the built `taskproof` binary, with the environment variables that change
/// its behaviour cleared, so a test sees only what it sets.
pub fn taskproof() -> Command {
    let mut c = Command::new(bin());
    for var in [
        "CLAUDE_CONFIG_DIR",
        "CLAUDE_CODE_TASK_LIST_ID",
        "NO_COLOR",
        "TASKPROOF_ROOT",
        "CI",
    ] {
        c.env_remove(var);
    }
    c
}

/// [`taskproof`], run from `dir`.
pub fn taskproof_in(dir: &Path) -> Command {
    let mut c = taskproof();
    c.current_dir(dir);
    c
}

/// Runs `cmd` with `stdin` as its input and returns its output.
pub fn run_with_stdin(mut cmd: Command, stdin: &[u8]) -> Output {
    use std::io::Write;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start taskproof");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin)
        .expect("write stdin");
    child.wait_with_output().expect("wait for taskproof")
}

/// Writes `contents` to `dir/name`, creating `dir`.
pub fn write(dir: &Path, name: &str, contents: &str) {
    std::fs::create_dir_all(dir).expect("create folder");
    std::fs::write(dir.join(name), contents).expect("write file");
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

/// [`taskproof`] with these arguments.
pub fn taskproof_with(args: &[&str]) -> Command {
    let mut c = taskproof();
    c.args(args);
    c
}
