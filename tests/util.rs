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

/// The variable that makes a missing tool fail the test instead of skipping it (CI sets `CI`,
/// which does the same).
pub const REQUIRE_TOOLS: &str = "TASKPROOF_REQUIRE_TOOLS";

/// Whether the calling test can run: every tool it needs answers `--version`. When one does
/// not, the test is skipped: one line on the terminal names the test and what is missing, and
/// the caller returns. Under CI (`CI` set to anything but `false`) or with
/// [`REQUIRE_TOOLS`]`=1`, a missing tool fails the test instead, so that CI, which installs
/// every tool, never passes a test it did not run.
pub fn can_run(tools: &[Tool]) -> bool {
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
    if missing.is_empty() {
        return true;
    }
    let test = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    let why = format!("{} not on PATH", missing.join(", "));
    let required = std::env::var("CI").is_ok_and(|v| v != "false" && !v.is_empty())
        || std::env::var(REQUIRE_TOOLS).is_ok_and(|v| v == "1");
    assert!(
        !required,
        "{test}: {why}, and CI or {REQUIRE_TOOLS}=1 asks for every test to run (install it: \
         `apt-get install -y nodejs npm python3 util-linux`; .ci/run does)"
    );
    // Straight to the process's stderr: the test harness captures `eprintln!` of a passing
    // test, and a skip must be seen.
    use std::io::Write as _;
    let _ = writeln!(
        std::io::stderr().lock(),
        "skipped {test}: {why} (set {REQUIRE_TOOLS}=1 to fail instead)"
    );
    false
}
