//! Which outside programs the machine has, for the integration tests that need them
//! (tests/util.rs, `Tool`). A test that needs node, python3, flock or setsid carries
//! `#[cfg_attr(not(taskproof_has_TOOL), ignore = "needs TOOL")]`, so on a machine without
//! the tool `cargo test` counts it as ignored, never as passed; `cargo test --
//! --include-ignored` runs it anyway, and it fails there naming what is missing.
//!
//! Under CI (`CI` set to anything but `false`) or with `TASKPROOF_REQUIRE_TOOLS=1`, every
//! tool counts as present, so no test is ignored and a missing tool fails its tests (.ci/run
//! installs them all). The probe is made when the build script runs: after installing a tool
//! without changing PATH, `touch build.rs` (or set one of those variables) to look again.

use std::process::{Command, Stdio};

/// Each cfg and the programs it stands for, as tests/util.rs's `Tool` lists them.
const TOOLS: &[(&str, &[&str])] = &[
    ("npm", &["node", "npm"]),
    ("python", &["python3"]),
    ("flock", &["flock"]),
    ("setsid", &["setsid"]),
];

fn answers(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    for var in ["PATH", "CI", "TASKPROOF_REQUIRE_TOOLS"] {
        println!("cargo::rerun-if-env-changed={var}");
    }
    let required = std::env::var("CI").is_ok_and(|v| v != "false" && !v.is_empty())
        || std::env::var("TASKPROOF_REQUIRE_TOOLS").is_ok_and(|v| v == "1");
    for (cfg, programs) in TOOLS {
        println!("cargo::rustc-check-cfg=cfg(taskproof_has_{cfg})");
        if required || programs.iter().all(|p| answers(p)) {
            println!("cargo::rustc-cfg=taskproof_has_{cfg}");
        }
    }
}
