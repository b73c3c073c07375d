//! Small helpers shared by the integration tests: a temporary folder per test and a
//! `Command` for the built binary.

#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;
use taskproof_core::protocol::{Request, Response};
use taskproof_session::Session;
use taskproof_targets::ProcessSession;

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

/// A `taskproof serve adapter` process on `root` with extra arguments (e.g. `--no-fsync`).
pub fn serve(root: &Path, args: &str) -> ProcessSession {
    let cmd = format!("exec '{}' serve adapter {args}", bin());
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

/// A program from outside Rust that some tests run: the real products and the example
/// adapters are not Rust.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    /// node and npm: the real Claude Code (installed from npm) and Task Master.
    Npm,
    /// python3: the example adapters and background runner, and test fixtures in Python.
    Python,
    /// util-linux's flock(1): a writer's lock held by a process of its own.
    Flock,
    /// util-linux's setsid(1): a child that leaves its parent's process group, as the
    /// reproductions start the products they drive.
    Setsid,
}

impl Tool {
    /// The programs it is, each checked with `--version`.
    fn programs(self) -> &'static [&'static str] {
        match self {
            Tool::Npm => &["node", "npm"],
            Tool::Python => &["python3"],
            Tool::Flock => &["flock"],
            Tool::Setsid => &["setsid"],
        }
    }
}

/// Fails the calling test, naming what is missing, unless every tool it needs answers
/// `--version`. A test that calls this carries
/// `#[cfg_attr(not(taskproof_has_TOOL), ignore = "needs TOOL on PATH")]`, and build.rs sets
/// `taskproof_has_TOOL` when the machine has the tool (or under CI or
/// `TASKPROOF_REQUIRE_TOOLS=1`), so without the tool `cargo test` counts the test as ignored
/// and it gets here only when asked to run anyway (`--include-ignored`, CI): then a missing
/// tool is a failure, never a pass.
pub fn require(tools: &[Tool]) {
    let missing: Vec<&str> = tools
        .iter()
        .flat_map(|t| t.programs())
        .copied()
        .filter(|p| {
            !Command::new(p)
                .arg("--version")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })
        .collect();
    let test = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    assert!(
        missing.is_empty(),
        "{test}: {} not on PATH; install it (`apt-get install -y nodejs npm python3 \
         util-linux`, as .ci/run does), or run without --include-ignored to count this test \
         as ignored",
        missing.join(", ")
    );
}
