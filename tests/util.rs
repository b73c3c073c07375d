//! Small helpers shared by the integration tests.

use std::process::Command;

/// The path of the built `taskproof` binary.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_taskproof")
}

/// A command running the built binary with `args`.
pub fn taskproof(args: &[&str]) -> Command {
    let mut c = Command::new(bin());
    c.args(args).env_remove("TASKPROOF_ROOT");
    c
}
