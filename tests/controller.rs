//! `claude-code-controller@VERSION`: the npm package, installed into the cache the Claude
//! Code target uses and run through taskproof's built-in adapter
//! (adapters/claude-code-controller/adapter.mjs).
//!
//! The parsing and the errors for a missing node need nothing. The tests that install the
//! package need node and npm; without them they are skipped, each naming what is missing
//! (under CI, which installs them, they fail instead: tests/util.rs `require`).

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use taskproof_session::{Session, SessionOptions};
use taskproof_targets::TargetSpec;

use crate::util::{Tool, require, taskproof, tempdir};

const VERSION: &str = "0.3.0";

#[test]
fn the_kind_parses_a_version_and_refuses_anything_else() {
    let spec: TargetSpec = format!("claude-code-controller@{VERSION}").parse().unwrap();
    assert_eq!(spec.to_string(), "claude-code-controller@0.3.0");
    assert!(spec.is_process());
    // Not Claude Code's kind, nor the other way round.
    assert_eq!(spec.kind().prefix, "claude-code-controller@");
    let cc: TargetSpec = "claude-code@2.1.112".parse().unwrap();
    assert_eq!(cc.kind().prefix, "claude-code@");
    let e = "claude-code-controller".parse::<TargetSpec>().unwrap_err();
    assert_eq!(
        e,
        "claude-code-controller needs a version: claude-code-controller@0.3.0"
    );
    for bad in [
        "claude-code-controller@",
        "claude-code-controller@../x",
        "claude-code-controller@latest",
    ] {
        let e = bad.parse::<TargetSpec>().unwrap_err();
        assert!(
            e.contains("expected a published version such as 0.3.0"),
            "{bad}: {e}"
        );
    }
}

/// `taskproof run --filter 'rt01*'` against the controller with only `path` on PATH and the
/// cache at `cache`.
fn rt01_with_path(path: &std::path::Path, cache: &std::path::Path) -> std::process::Output {
    taskproof()
        .args([
            "run",
            "--target",
            "claude-code-controller@0.3.0",
            "--filter",
            "rt01*",
        ])
        .env("PATH", path)
        .env("TASKPROOF_CLAUDE_CODE_CACHE", cache)
        .output()
        .unwrap()
}

/// Without node the run stops before anything is installed, saying what to install.
#[test]
fn a_missing_node_is_named_and_nothing_is_installed() {
    let cache = tempdir();
    let empty = tempdir();
    let out = rt01_with_path(empty.path(), cache.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("failed to run node") && stderr.contains("node and npm must be on PATH"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_dir(cache.path()).unwrap().count(), 0);
}

/// A version npm does not have is named as such, and leaves no half-installed folder.
#[test]
#[cfg_attr(not(taskproof_has_npm), ignore = "needs node and npm on PATH")]
fn a_version_npm_does_not_have_is_named() {
    require(&[Tool::Npm]);
    let cache = tempdir();
    let out = taskproof()
        .args([
            "run",
            "--target",
            "claude-code-controller@0.0.999",
            "--filter",
            "rt01*",
        ])
        .env("TASKPROOF_CLAUDE_CODE_CACHE", cache.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("npm has no version 0.0.999 of claude-code-controller"),
        "{stderr}"
    );
    let left: Vec<String> = std::fs::read_dir(cache.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, vec![".lock".to_string()]);
}

fn call(s: &mut dyn Session, request: Value) -> Value {
    s.call(&request)
        .unwrap_or_else(|e| panic!("{request}: {e}\n{}", s.stderr()))
}

fn on_disk(root: &Path, rel: &str) -> String {
    std::fs::read_to_string(root.join(rel)).unwrap_or_else(|e| panic!("nothing at {rel}: {e}"))
}

/// The target installs the package (a no-op when the cache has it) and the package itself
/// writes the tasks: `ROOT/{list}/{id}.json` in its own format (four-space indent), its team
/// beside them under the adapter's HOME, and blockers mirrored by its `addBlocks`.
#[test]
#[cfg_attr(not(taskproof_has_npm), ignore = "needs node and npm on PATH")]
fn the_package_writes_the_tasks_under_the_root() {
    require(&[Tool::Npm]);
    let spec: TargetSpec = format!("claude-code-controller@{VERSION}").parse().unwrap();
    spec.prepare()
        .expect("install claude-code-controller with npm");
    let root = tempdir();
    let options = SessionOptions {
        timeout: Duration::from_secs(60),
        start_timeout: Duration::from_secs(120),
        ..SessionOptions::default()
    };
    let mut s = spec.open(root.path(), options).unwrap();
    let hello = s.hello().clone();
    assert_eq!(hello.name, "claude-code-controller");
    assert_eq!(hello.version, VERSION);
    let a = call(
        &mut *s,
        json!({"op":"create","list":"team","task":{"subject":"a"}}),
    );
    assert_eq!(a["task"]["id"], "1", "{a}");
    call(
        &mut *s,
        json!({"op":"create","list":"team","task":{"subject":"b"}}),
    );
    let u = call(
        &mut *s,
        json!({"op":"update","list":"team","id":"2","patch":{"addBlockedBy":["1"]}}),
    );
    assert_eq!(u["task"]["blockedBy"], json!(["1"]), "{u}");
    let unsupported = call(
        &mut *s,
        json!({"op":"update","list":"team","id":"2","patch":{"removeBlockedBy":["1"]}}),
    );
    assert_eq!(unsupported["error"]["kind"], "unsupported", "{unsupported}");
    s.close().unwrap();
    let one = on_disk(root.path(), "team/1.json");
    assert!(one.starts_with("{\n    \"id\": \"1\""), "{one}");
    let one: Value = serde_json::from_str(&one).unwrap();
    assert_eq!(one["blocks"], json!(["2"]));
    let config = on_disk(
        root.path(),
        ".claude-code-controller/home/.claude/teams/team/config.json",
    );
    let config: Value = serde_json::from_str(&config).unwrap();
    assert_eq!(config["name"], "team");
}

/// An installation the cache holds is used as it is, without npm (none is on PATH here), and an
/// adapter file there that is not taskproof's is replaced by the built-in one before the run.
#[test]
#[cfg_attr(not(taskproof_has_npm), ignore = "needs node and npm on PATH")]
fn a_cached_installation_is_reused_and_its_adapter_rewritten() {
    require(&[Tool::Npm]);
    let spec: TargetSpec = format!("claude-code-controller@{VERSION}").parse().unwrap();
    spec.prepare()
        .expect("install claude-code-controller with npm");
    let installed = taskproof_claude_code::cache_dir()
        .unwrap()
        .join(format!("claude-code-controller@{VERSION}"));
    let cache = tempdir();
    let copy = cache
        .path()
        .join(format!("claude-code-controller@{VERSION}"));
    std::fs::create_dir(&copy).unwrap();
    let status = std::process::Command::new("cp")
        .arg("-a")
        .arg(installed.join("node_modules"))
        .arg(&copy)
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::write(copy.join("adapter.mjs"), "process.exit(3);\n").unwrap();
    // PATH with node and sh only (taskproof runs adapters through `sh -c`): an install would
    // need npm and fail.
    let bin = tempdir();
    for program in ["node", "sh"] {
        let found = std::process::Command::new("sh")
            .args(["-c", &format!("command -v {program}")])
            .output()
            .unwrap()
            .stdout;
        let found = String::from_utf8(found).unwrap();
        std::os::unix::fs::symlink(found.trim(), bin.path().join(program)).unwrap();
    }
    let out = rt01_with_path(bin.path(), cache.path());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stdout.contains(
            "against claude-code-controller@0.3.0 (claude-code-controller 0.3.0, layout claude-code"
        ),
        "{stdout}\n{stderr}"
    );
    assert!(stdout.contains("1 passed"), "{stdout}\n{stderr}");
    let built_in = std::fs::read_to_string(
        crate::util::repo().join("adapters/claude-code-controller/adapter.mjs"),
    )
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(copy.join("adapter.mjs")).unwrap(),
        built_in
    );
}
