//! A fuzz finding's printed replay line, run as printed, against an `mcp:` target (issue 55).

use std::path::Path;

use serde_json::Value;

use crate::mcp_target_text::text_tasks_server;
use crate::util::{Tool, bin, repo, require, taskproof_in, tempdir};

/// Issue 55, done when: a fuzz finding's replay line, as the terminal prints it and as the
/// JSON report's `replay` field holds it, replays an `mcp:` target: run through a shell
/// from the folder the fuzz ran in (the mapping named as the user named it, relative), it
/// needs no flag it left out (before, it lacked `--mapping` and stopped with "needs
/// --mapping FILE") and fails the way the finding did: the same scenario, rules and step.
/// The target is text-tasks-server.py with `--reuse-ids`, whose command has quotes of its
/// own, so the line's quoting is replayed too.
#[test]
#[cfg_attr(not(taskproof_has_python), ignore = "needs python3 on PATH")]
fn a_fuzz_findings_printed_replay_line_replays_an_mcp_target() {
    require(&[Tool::Python]);
    let dir = tempdir();
    std::fs::copy(
        repo().join("tests/fixtures/mcp/text-tasks.toml"),
        dir.path().join("text-tasks.toml"),
    )
    .unwrap();
    let target = format!("mcp:{}", text_tasks_server(" --reuse-ids"));
    let out = taskproof_in(dir.path())
        .args(["fuzz", "--target", &target, "--mapping", "text-tasks.toml"])
        .args(["--cases", "100", "--seed", "1", "--max-findings", "1"])
        .args([
            "--out",
            "found",
            "--report",
            "json:fuzz.json",
            "--color",
            "never",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "no finding:\n{text}");
    let printed = text
        .lines()
        .find_map(|l| l.strip_prefix("replay: "))
        .unwrap_or_else(|| panic!("no replay line:\n{text}"));
    let report: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("fuzz.json")).unwrap()).unwrap();
    let found = &report["found"][0];
    assert_eq!(found["replay"], printed, "{report}");
    assert!(printed.contains("--mapping text-tasks.toml"), "{printed}");
    // The line as a user pastes it: `taskproof` found on PATH, run by a shell.
    let bin_dir = Path::new(bin()).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let replay = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{printed} --color never"))
        .current_dir(dir.path())
        .env("PATH", path)
        .env_remove("NO_COLOR")
        .env_remove("TASKPROOF_ROOT")
        .output()
        .unwrap();
    let again = String::from_utf8_lossy(&replay.stdout);
    let err = String::from_utf8_lossy(&replay.stderr);
    assert!(!err.contains("needs --mapping"), "{err}");
    assert_eq!(replay.status.code(), Some(1), "{again}\n{err}");
    let fingerprint = found["fingerprint"].as_str().unwrap();
    assert!(
        again.contains(&format!("FAIL fuzz-{fingerprint}:")),
        "{again}"
    );
    assert!(again.contains("0 passed, 1 failed, 0 errors"), "{again}");
    let rules: Vec<&str> = found["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    assert!(
        again.contains(&format!("  rules:    {}\n", rules.join(", "))),
        "{rules:?}\n{again}"
    );
    // The step that failed is the one the finding diverged at: its note names the divergence.
    let summary = found["summary"].as_str().unwrap();
    assert!(
        again.contains(&format!("    note:     found: {summary}\n")),
        "{summary}\n{again}"
    );
}
