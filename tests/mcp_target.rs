//! The `mcp:COMMAND` target: the strict suite through `taskproof mcp` and its shipped mapping,
//! and servers that crash, hang, answer JSON-RPC errors, do not speak MCP or lack a tool
//! named by the mapping (tests/fixtures/mcp/fake-server.sh), each an error of the target
//! within the limits, with no process left behind.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use taskproof_mcp_target::McpTarget;
use taskproof_session::{Session, SessionOptions, TargetError};
use taskproof_targets::TargetSpec;

use crate::util::{bin, repo, taskproof_in, tempdir, write};

fn fake_server() -> PathBuf {
    repo().join("tests/fixtures/mcp/fake-server.sh")
}

pub(crate) fn fake_mapping() -> PathBuf {
    repo().join("tests/fixtures/mcp/fake.toml")
}

pub(crate) fn options() -> SessionOptions {
    SessionOptions {
        timeout: Duration::from_secs(2),
        start_timeout: Duration::from_secs(5),
        ..SessionOptions::default()
    }
}

/// `mcp:fake-server.sh MODE` with `mapping`.
pub(crate) fn fake(mode: &str, mapping: &Path) -> TargetSpec {
    let t = McpTarget::parse(&format!("sh '{}' {mode}", fake_server().display()))
        .unwrap()
        .with_mapping(mapping)
        .unwrap();
    TargetSpec::from(t)
}

/// Whether the process whose pid the fake server wrote under `root` is gone: no longer there,
/// or a zombie (dead, waiting for a parent that may not reap it), within a second.
fn server_gone(root: &Path) -> bool {
    let pid = std::fs::read_to_string(root.join("server.pid")).expect("the server wrote its pid");
    let stat = format!("/proc/{}/stat", pid.trim());
    let deadline = Instant::now() + Duration::from_secs(1);
    loop {
        let dead = match std::fs::read_to_string(&stat) {
            Err(_) => true,
            // "pid (comm) S ...": the state follows the command's closing parenthesis.
            Ok(s) => s
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        };
        if dead {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn open(
    mode: &str,
) -> (
    tempfile::TempDir,
    Result<Box<dyn Session>, TargetError>,
    Duration,
) {
    let root = tempdir();
    let started = Instant::now();
    let s = fake(mode, &fake_mapping()).open(root.path(), options());
    (root, s, started.elapsed())
}

#[test]
fn a_well_behaved_server_is_read_through_the_mapping() {
    let (root, s, _) = open("ok");
    let mut s = s.expect("the fake server opens");
    let hello = s.hello().clone();
    assert_eq!(hello.name, "fake-tasks");
    assert_eq!(hello.version, "9.9");
    assert!(
        hello.mapping["server"].contains("fake-tasks 9.9 over MCP (2025-06-18)"),
        "{hello:?}"
    );
    assert!(hello.mapping["mapping"].ends_with("fake.toml"), "{hello:?}");
    assert!(
        hello.mapping["claim"].starts_with("unsupported"),
        "{hello:?}"
    );
    // The text's JSON, with fields renamed, ids as strings, status words translated,
    // `blocks` derived and the tasks sorted by id.
    let list = s.call(&json!({"op": "list", "list": "l"})).unwrap();
    assert_eq!(
        list,
        json!({"ok": true, "corrupt": [], "tasks": [
            {"id": "1", "subject": "a", "status": "pending", "blockedBy": [], "blocks": ["2"]},
            {"id": "2", "subject": "b", "status": "completed", "blockedBy": ["1"], "blocks": []},
        ]})
    );
    // An error result's text, through the mapping's error patterns.
    let get = s
        .call(&json!({"op": "get", "list": "l", "id": "5"}))
        .unwrap();
    assert_eq!(get["error"]["kind"], "not_found", "{get}");
    assert!(
        get["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Task 5 was not found")
    );
    // A missing task is not_found before its change is judged unsupported
    // (`unsupported_after = 1`: the read runs first).
    let update = json!({"op": "update", "list": "l", "id": "5", "patch": {"subject": "x"}});
    let answer = s.call(&update).unwrap();
    assert_eq!(answer["error"]["kind"], "not_found", "{answer}");
    // What the mapping leaves out is unsupported; what no tool can carry is the client's.
    let claim = s
        .call(&json!({"op": "claim", "list": "l", "id": "1", "owner": "a"}))
        .unwrap();
    assert_eq!(claim["error"]["kind"], "unsupported", "{claim}");
    let fly = s.call(&json!({"op": "fly"})).unwrap();
    assert_eq!(fly["error"]["kind"], "invalid", "{fly}");
    s.close().unwrap();
    assert!(server_gone(root.path()));
}

/// rmcp's client reads the `initialize` answer as an `InitializeResult`, whose `serverInfo`
/// is required, though its own peer-info type has it optional (measured with rmcp 3.11): a
/// server that leaves it out fails to open, and the error shows what it sent.
#[test]
fn a_server_without_server_info_fails_the_handshake_and_says_what_it_sent() {
    let (root, s, _) = open("unnamed");
    let e = s.err().expect("the handshake fails without serverInfo");
    let text = e.to_string();
    assert!(text.contains("the MCP handshake failed"), "{text}");
    assert!(text.contains("\"protocolVersion\""), "{text}");
    assert!(server_gone(root.path()));
}

#[test]
fn a_server_that_crashes_is_an_error_of_the_target() {
    let (root, s, _) = open("crash");
    let mut s = s.expect("the handshake works");
    let started = Instant::now();
    let e = s.call(&json!({"op": "list", "list": "l"})).unwrap_err();
    assert!(matches!(e, TargetError::Exited { .. }), "{e:?}");
    assert!(e.to_string().contains('7'), "the exit status: {e}");
    assert!(started.elapsed() < Duration::from_secs(2));
    // The session is dead from then on.
    assert_eq!(s.call(&json!({"op": "list", "list": "l"})), Err(e));
    assert!(server_gone(root.path()));
}

#[test]
fn a_server_that_hangs_is_killed_at_the_request_limit() {
    let (root, s, _) = open("hang");
    let mut s = s.expect("the handshake works");
    let started = Instant::now();
    let e = s.call(&json!({"op": "list", "list": "l"})).unwrap_err();
    assert_eq!(e, TargetError::Timeout(Duration::from_secs(2)));
    assert!(started.elapsed() < Duration::from_secs(4));
    assert!(server_gone(root.path()));
}

#[test]
fn a_json_rpc_error_object_is_an_error_of_the_target() {
    let (root, s, _) = open("rpc-error");
    let mut s = s.expect("the handshake works");
    let e = s.call(&json!({"op": "list", "list": "l"})).unwrap_err();
    let shown = e.to_string();
    assert!(
        shown.contains("-32000") && shown.contains("the store is on fire"),
        "{shown}"
    );
    assert!(server_gone(root.path()));
}

#[test]
fn a_server_that_does_not_speak_mcp_fails_to_open_at_once() {
    let (root, s, took) = open("not-mcp");
    match s.err().expect("no session") {
        TargetError::Garbage { line, .. } => assert!(line.starts_with("Welcome"), "{line}"),
        e => panic!("expected garbage, got {e:?}"),
    }
    assert!(took < Duration::from_secs(3), "took {took:?}");
    assert!(server_gone(root.path()));
}

#[test]
fn stdout_noise_is_garbage_unless_the_mapping_skips_it() {
    let (root, s, _) = open("noisy");
    match s.err().expect("no session") {
        TargetError::Garbage { line, .. } => assert_eq!(line, "[WARN] a log line on stdout"),
        e => panic!("expected garbage, got {e:?}"),
    }
    assert!(server_gone(root.path()));
    let dir = tempdir();
    let text = std::fs::read_to_string(fake_mapping())
        .unwrap()
        .replace("[status]", "[server]\nskip_stdout_noise = true\n\n[status]");
    write(dir.path(), "m.toml", &text);
    let root = tempdir();
    let mut s = fake("noisy", &dir.path().join("m.toml"))
        .open(root.path(), options())
        .expect("the noise is skipped");
    let list = s.call(&json!({"op": "list", "list": "l"})).unwrap();
    assert_eq!(list["tasks"].as_array().map(Vec::len), Some(2), "{list}");
    assert!(s.hello().mapping["stdout"].contains("skipped"));
    assert!(
        s.stderr()
            .contains("[stdout, not MCP] [WARN] a log line on stdout"),
        "{}",
        s.stderr()
    );
}

#[test]
fn a_server_that_never_answers_fails_at_the_start_limit() {
    let (root, s, took) = open("silent");
    let e = s.err().expect("no session");
    assert_eq!(e, TargetError::StartTimeout(Duration::from_secs(5)));
    assert!(took < Duration::from_secs(7), "took {took:?}");
    assert!(server_gone(root.path()));
}

#[test]
fn a_mapping_naming_a_missing_tool_fails_before_any_request() {
    let dir = tempdir();
    let text = std::fs::read_to_string(fake_mapping())
        .unwrap()
        .replace("\"get_task\"", "\"show_task\"");
    write(dir.path(), "m.toml", &text);
    let root = tempdir();
    let e = fake("ok", &dir.path().join("m.toml"))
        .open(root.path(), options())
        .err()
        .expect("no session");
    let shown = e.to_string();
    assert!(shown.contains("m.toml"), "{shown}");
    assert!(shown.contains("ops.get.calls[0].tool"), "{shown}");
    assert!(shown.contains("\"show_task\""), "{shown}");
    assert!(shown.contains("get_task, list_tasks"), "{shown}");
    assert!(server_gone(root.path()));
}

/// Bad input on the command line is a usage error (exit 2) naming the file and the key,
/// before any server starts.
#[test]
fn bad_mappings_and_missing_ones_are_usage_errors() {
    let dir = tempdir();
    write(
        dir.path(),
        "bad.toml",
        &std::fs::read_to_string(fake_mapping())
            .unwrap()
            .replace("(?i)not found", "(unclosed"),
    );
    // regex-lite's syntax (docs/mcp-targets.md): a Unicode class is refused when read.
    write(
        dir.path(),
        "unicode.toml",
        &std::fs::read_to_string(fake_mapping())
            .unwrap()
            .replace("(?i)not found", r"\\p{L}+ not found"),
    );
    let target = format!("mcp:sh '{}' ok", fake_server().display());
    let cases: [(&[&str], &[&str]); 4] = [
        (&[], &["needs --mapping FILE"]),
        (
            &["--mapping", "bad.toml"],
            &["bad.toml", "errors.text[0].pattern", "does not compile"],
        ),
        (
            &["--mapping", "unicode.toml"],
            &[
                "unicode.toml",
                "errors.text[0].pattern",
                "Unicode character classes are not supported",
            ],
        ),
        (&["--mapping", "nope.toml"], &["nope.toml", "cannot read"]),
    ];
    for (extra, words) in cases {
        let out = taskproof_in(dir.path())
            .args(["run", "--target", &target])
            .args(extra)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {stderr}");
        for w in words {
            assert!(stderr.contains(w), "{extra:?}: {w:?} not in {stderr}");
        }
    }
    let out = taskproof_in(dir.path())
        .args(["run", "--target", "reference", "--mapping", "bad.toml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--mapping is for mcp: targets"));
}

/// Every mapping the project ships (mappings/) and every fixture mapping loads: the checker's
/// rules hold for them (a part declared and answered `unsupported` is one).
#[test]
fn every_shipped_and_fixture_mapping_loads() {
    let mut files: Vec<PathBuf> = ["mappings", "tests/fixtures/mcp"]
        .iter()
        .flat_map(|d| std::fs::read_dir(repo().join(d)).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 10, "{files:?}");
    for f in files {
        if let Err(e) = taskproof_mcp_target::Mapping::load(&f) {
            panic!("{e}");
        }
    }
}

/// The acceptance test: the whole strict suite through `taskproof mcp` and the shipped
/// mapping passes.
#[test]
fn taskproof_mcp_passes_the_strict_suite_through_its_mapping() {
    let report = tempdir();
    let json_path = report.path().join("run.json");
    let out = taskproof_in(repo())
        .args([
            "run",
            "--target",
            &format!("mcp:'{}' mcp", bin()),
            "--mapping",
            "mappings/taskproof.toml",
            "--report",
            &format!("json:{}", json_path.display()),
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary = stdout.lines().last().unwrap_or("");
    assert!(
        summary.contains(" passed, 0 failed, 0 errors, 0 skipped"),
        "{summary}"
    );
    // The report says how the verdicts were obtained: the server and the mapping.
    let report: Value = serde_json::from_slice(&std::fs::read(&json_path).unwrap()).unwrap();
    let text = report.to_string();
    assert!(text.contains("mappings/taskproof.toml"), "{text:.2000}");
    assert!(text.contains("task_claim"), "{text:.2000}");
}

/// `race --target mcp:… --writers N` runs N server processes on one root (and kills some),
/// and the strict store behind `taskproof mcp` loses nothing.
#[test]
fn race_runs_one_server_per_writer_on_one_root() {
    let out = taskproof_in(repo())
        .args([
            "race",
            "--target",
            &format!("mcp:'{}' mcp", bin()),
            "--mapping",
            "mappings/taskproof.toml",
            "--writers",
            "3",
            "--ops",
            "15",
            "--workload",
            "metadata",
            "--kill",
            "--seed",
            "5",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("0 anomalies"), "{stdout}");
    // Each writer is a session, and each session its own server process.
    for line in stdout
        .lines()
        .filter(|l| l.contains(" sessions") && l.contains(" requests in "))
    {
        let sessions: usize = line
            .split(", ")
            .find_map(|p| p.strip_suffix(" sessions"))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or_else(|| panic!("no session count in {line}"));
        assert!(sessions >= 3, "{line}");
    }
}
