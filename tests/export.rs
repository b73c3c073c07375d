//! `taskproof run --export DIR`: a failing scenario written out for its store's maintainer
//! reproduces with the store and `sh` alone. Each test runs taskproof once with `--export`,
//! then runs the exported `replay.sh` with `sh` (taskproof nowhere on its PATH) on a fresh
//! folder and checks that the store's own answers there show the failure: a fixture MCP
//! server (tests/fixtures/mcp/fake-server.sh), a fixture adapter that makes up its ids
//! (tests/fixtures/export/truncating-adapter.sh), and a real MCP server from npm (ohno-mcp,
//! one of the five of reports/mcp/run.sh), which needs node.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::run::run_in;
use crate::util::{Tool, repo, require, tempdir};

fn fixtures() -> PathBuf {
    repo().join("tests/fixtures/export")
}

/// What a replay printed: its whole output, and the lines sent and got, in order.
struct Replayed {
    output: String,
    sent: Vec<Value>,
    got: Vec<Value>,
}

/// The lines of a file, each as JSON.
fn json_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

/// PATH without any folder that holds a `taskproof`: the replay runs without it.
fn path_without_taskproof() -> String {
    let path = std::env::var("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .filter(|d| !d.join("taskproof").exists())
        .map(|d| d.display().to_string())
        .collect::<Vec<_>>()
        .join(":")
}

/// Runs `sh replay.sh ROOT` in the exported folder of a scenario, with `sh` alone, in a
/// process group of its own that is killed if it has not ended within two minutes.
fn replay(folder: &Path, root: &Path) -> Replayed {
    use std::os::unix::process::CommandExt as _;
    let mut child = Command::new("sh")
        .arg("replay.sh")
        .arg(root)
        .current_dir(folder)
        .env("PATH", path_without_taskproof())
        .env("REPLAY_TIMEOUT", "30")
        .env_remove("TASKPROOF_ROOT")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("start sh");
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().expect("wait for sh").is_none() {
        if Instant::now() > deadline {
            // SAFETY: kill(2) on the group of the child this test started.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            panic!(
                "replay.sh in {} did not end within 2 minutes",
                folder.display()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("the replay's output");
    let output = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "replay.sh failed ({}):\n{output}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let after = |prefix: &str| -> Vec<Value> {
        output
            .lines()
            .filter_map(|l| l.strip_prefix(prefix))
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
            .collect()
    };
    Replayed {
        sent: after("-> [1] "),
        got: after("<- [1] "),
        output,
    }
}

/// The processes that still run on `root`: its path in their command line or environment.
fn left_on(root: &Path) -> Vec<String> {
    let needle = root.display().to_string();
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let read = |f: &str| std::fs::read(e.path().join(f)).unwrap_or_default();
        let stat = String::from_utf8_lossy(&read("stat")).into_owned();
        let zombie = stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
        let text = |b: Vec<u8>| String::from_utf8_lossy(&b).replace('\0', " ");
        let cmdline = text(read("cmdline"));
        if !zombie && (cmdline.contains(&needle) || text(read("environ")).contains(&needle)) {
            out.push(format!("{name}: {cmdline}"));
        }
    }
    out
}

/// Waits up to 5 s for every process on `root` to be gone (a killed process is reaped by
/// its parent a moment later); answers those left.
fn gone(root: &Path) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left = left_on(root);
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn method(line: &Value) -> &str {
    line["method"].as_str().unwrap_or("")
}

#[test]
fn an_mcp_failure_is_exported_and_replays_with_a_shell_alone() {
    let dir = tempdir();
    let out = dir.path().join("out");
    let target = format!(
        "mcp:sh '{}' ok",
        repo().join("tests/fixtures/mcp/fake-server.sh").display()
    );
    let mapping = repo().join("tests/fixtures/mcp/fake.toml");
    let run = run_in(
        repo(),
        &[
            fixtures().to_str().unwrap(),
            "--filter",
            "export-list-is-empty",
            "--filter",
            "export-missing-is-not-found",
            "--target",
            &target,
            "--mapping",
            mapping.to_str().unwrap(),
            "--export",
            out.to_str().unwrap(),
            "--color",
            "never",
        ],
    );
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("FAIL export-list-is-empty"),
        "{}",
        run.stdout
    );
    // Only the failing scenario is exported.
    let written: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(written, ["export-list-is-empty"]);
    let folder = out.join("export-list-is-empty");
    assert!(
        run.stdout.contains(&format!(
            "exported for its maintainer: {}",
            folder.join("README.md").display()
        )),
        "{}",
        run.stdout
    );
    // The JSON-RPC lines as sent: the handshake, the tool list, then the tool call.
    let sent = json_lines(&folder.join("process-1.in.jsonl"));
    let methods: Vec<&str> = sent.iter().map(method).collect();
    assert_eq!(
        methods,
        [
            "initialize",
            "notifications/initialized",
            "tools/list",
            "tools/call"
        ]
    );
    assert_eq!(sent[3]["params"]["name"], "list_tasks");
    assert_eq!(
        sent[3]["params"]["arguments"],
        serde_json::json!({"list": "l"})
    );
    let got = json_lines(&folder.join("process-1.out.jsonl"));
    let answer = got.last().unwrap();
    assert_eq!(answer["id"], sent[3]["id"]);
    let readme = std::fs::read_to_string(folder.join("README.md")).unwrap();
    for part in [
        "# fake-tasks 9.9 fails `export-list-is-empty`",
        "S1 (ids)",
        &format!("taskproof {}", env!("CARGO_PKG_VERSION")),
        "sh replay.sh",
        "expected: {\"ok\":true,\"tasks\":[]}",
        "got:      {\"ok\":true,\"tasks\":[{\"id\":\"1\"",
        "tasks: expected 0 tasks, got 2",
    ] {
        assert!(readme.contains(part), "{part:?} not in:\n{readme}");
    }
    // The taskproof line it gives carries the mapping file, and run as written it fails the
    // same scenario the same way (issue 55: a replay line that replays).
    let line = readme
        .lines()
        .find_map(|l| l.strip_prefix("taskproof run "))
        .unwrap_or_else(|| panic!("no taskproof line in:\n{readme}"));
    assert!(line.contains("--mapping "), "{line}");
    let words = shlex::split(line).expect("a shell line");
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let again = run_in(dir.path(), &words);
    assert_eq!(again.code, 1, "{line}\n{}\n{}", again.stdout, again.stderr);
    assert!(
        again.stdout.contains("FAIL export-list-is-empty"),
        "{line}\n{}",
        again.stdout
    );

    // The replay, with sh alone: the server lists the two tasks it should not have.
    let root = tempdir();
    let r = replay(&folder, root.path());
    assert_eq!(r.sent, sent, "{}", r.output);
    let listed = r.got.last().unwrap_or_else(|| panic!("{}", r.output));
    assert_eq!(listed, answer, "{}", r.output);
    let text = listed["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains(r#""status":"done""#), "{text}");
    // The server ran on the folder given, and nothing of it is left.
    assert!(root.path().join("server.pid").exists(), "{}", r.output);
    assert_eq!(gone(root.path()), Vec::<String>::new());
}

#[test]
fn a_cmd_failure_replays_with_the_ids_its_own_run_made() {
    let dir = tempdir();
    let out = dir.path().join("out");
    let target = format!(
        "cmd:sh '{}'",
        fixtures().join("truncating-adapter.sh").display()
    );
    let run = run_in(
        repo(),
        &[
            fixtures().to_str().unwrap(),
            "--filter",
            "export-subject-kept",
            "--target",
            &target,
            "--export",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    let folder = out.join("export-subject-kept");
    // The adapter-protocol lines, as sent: hello, the create, the get of the id it made.
    let sent = json_lines(&folder.join("process-1.in.jsonl"));
    let ops: Vec<&str> = sent.iter().map(|l| l["op"].as_str().unwrap()).collect();
    assert_eq!(ops, ["hello", "create", "get"]);
    let recorded = sent[2]["id"].as_str().unwrap().to_string();
    let readme = std::fs::read_to_string(folder.join("README.md")).unwrap();
    assert!(readme.contains("truncating-store 1.2.3"), "{readme}");
    assert!(readme.contains(&format!("(`{recorded}`)")), "{readme}");

    let root = tempdir();
    let r = replay(&folder, root.path());
    // The get asks for the id this run's create made, not the recorded one (which this
    // adapter process never made: it would answer not_found) ...
    let made = r.got[1]["task"]["id"].as_str().unwrap().to_string();
    assert_ne!(made, recorded, "{}", r.output);
    assert_eq!(r.sent[2]["id"], made.as_str(), "{}", r.output);
    // ... and the answer shows the bug: the subject cut short.
    assert_eq!(r.got[2]["task"]["id"], made.as_str(), "{}", r.output);
    assert_eq!(r.got[2]["task"]["subject"], "hel", "{}", r.output);
    assert!(
        r.output.contains(
            r#"# taskproof judged this step: expected {"ok":true,"task":{"subject":"hello world"}}"#
        ),
        "{}",
        r.output
    );
    assert_eq!(gone(root.path()), Vec::<String>::new());
}

#[test]
fn export_refuses_a_file_or_a_folder_it_cannot_make_before_anything_runs() {
    let dir = tempdir();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    for (export, why) in [
        (file.clone(), "not a folder"),
        (file.join("under"), "cannot make the folder"),
    ] {
        let run = run_in(
            repo(),
            &["--filter", "rt04-*", "--export", export.to_str().unwrap()],
        );
        assert_eq!(run.code, 2, "{}\n{}", run.stdout, run.stderr);
        assert!(
            run.stderr.contains(&format!(
                "taskproof run: --export {}: {why}",
                export.display()
            )),
            "{}",
            run.stderr
        );
        assert!(!run.stdout.contains("running"), "{}", run.stdout);
    }
}

/// Where reports/mcp/run.sh finds the five servers.
fn mcp_cache() -> PathBuf {
    if let Some(d) = std::env::var_os("TASKPROOF_MCP_CACHE") {
        return PathBuf::from(d);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache"));
    cache.join("taskproof/mcp")
}

#[test]
#[cfg_attr(not(taskproof_has_npm), ignore = "needs node and npm on PATH")]
fn a_real_mcp_servers_failure_replays_with_the_server_and_a_shell() {
    require(&[Tool::Npm]);
    // ohno-mcp 0.20.0 accepts a two-task cycle (reports/mcp/ohno-mcp/run.md); one server per
    // list, started with --db {root}/{list}.db and HOME in the root, ids made up per run.
    let prefix = mcp_cache().join("@stevestomp+ohno-mcp@0.20.0");
    let server = prefix.join("node_modules/.bin/ohno-mcp");
    if !server.exists() {
        let installed = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(&prefix)
            .arg("@stevestomp/ohno-mcp@0.20.0")
            .status()
            .expect("run npm");
        assert!(installed.success(), "npm install of ohno-mcp failed");
    }
    let dir = tempdir();
    let out = dir.path().join("out");
    let target = format!("mcp:{}", server.display());
    let run = run_in(
        repo(),
        &[
            "--filter",
            "rt04-circular-dependency",
            "--target",
            &target,
            "--mapping",
            "mappings/ohno-mcp.toml",
            "--export",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    let folder = out.join("rt04-circular-dependency");
    let readme = std::fs::read_to_string(folder.join("README.md")).unwrap();
    for part in ["S7 (no cycles)", "expected: {\"error\":\"cycle\"}", "ohno"] {
        assert!(readme.contains(part), "{part:?} not in:\n{readme}");
    }
    let adds = |lines: &[Value]| -> Vec<Value> {
        lines
            .iter()
            .filter(|l| l["params"]["name"] == "add_dependency")
            .map(|l| l["params"]["arguments"].clone())
            .collect()
    };
    let recorded = adds(&json_lines(&folder.join("process-1.in.jsonl")));
    assert_eq!(recorded.len(), 2, "{recorded:?}");

    let root = tempdir();
    let r = replay(&folder, root.path());
    let replayed = adds(&r.sent);
    assert_eq!(replayed.len(), 2, "{}", r.output);
    // The second edge closes the cycle 1 -> 2 -> 1 between the tasks this run made ...
    assert_eq!(replayed[1]["task_id"], replayed[0]["depends_on_task_id"]);
    assert_eq!(replayed[1]["depends_on_task_id"], replayed[0]["task_id"]);
    assert_ne!(
        replayed, recorded,
        "the replay sent the recorded ids:\n{}",
        r.output
    );
    // ... and the server accepts it.
    let id = r
        .sent
        .iter()
        .rfind(|l| l["params"]["name"] == "add_dependency")
        .map(|l| l["id"].clone())
        .unwrap();
    let answer = r.got.iter().find(|l| l["id"] == id).unwrap();
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains(r#""success": true"#), "{text}\n{}", r.output);
    assert_eq!(gone(root.path()), Vec::<String>::new());
}

/// A target error carries the target's stderr and exit status into the JSON report and the
/// exported folder: at a request (`Aborted()` and status 134 of SIGABRT), and at the hello,
/// where no scenario runs (issue 55: both had an empty stderr).
#[test]
fn a_target_error_carries_its_stderr_and_exit_status_into_every_report() {
    let dir = tempdir();
    let adapter = fixtures().join("aborting-adapter.sh");
    let (out, json) = (dir.path().join("out"), dir.path().join("run.json"));
    let target = format!("cmd:sh '{}'", adapter.display());
    let run = run_in(
        dir.path(),
        &[
            "--filter",
            "rt01-basic-creation",
            "--target",
            &target,
            "--export",
            out.to_str().unwrap(),
            "--report",
            &format!("json:{}", json.display()),
        ],
    );
    assert_eq!(run.code, 3, "{}\n{}", run.stdout, run.stderr);
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let s = &report["scenarios"][0];
    assert_eq!(s["outcome"], "error", "{s:#}");
    assert!(s["stderr"].as_str().unwrap().contains("Aborted()"), "{s:#}");
    assert!(
        s["error"]["message"].as_str().unwrap().contains("134"),
        "{s:#}"
    );
    let folder = out.join("rt01-basic-creation");
    let stderr = std::fs::read_to_string(folder.join("stderr.txt")).unwrap();
    assert!(stderr.contains("Aborted()"), "{stderr}");
    let readme = std::fs::read_to_string(folder.join("README.md")).unwrap();
    assert!(readme.contains("Aborted()"), "{readme}");
    assert!(readme.contains("134"), "{readme}");

    // At the hello: said in the target and in every scenario of the JSON report.
    let target = format!("cmd:sh '{}' --abort-at-hello", adapter.display());
    let run = run_in(
        dir.path(),
        &[
            "--filter",
            "rt01-basic-creation",
            "--target",
            &target,
            "--report",
            &format!("json:{}", json.display()),
        ],
    );
    assert_eq!(run.code, 3, "{}\n{}", run.stdout, run.stderr);
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(
        report["target"]["stderr"]
            .as_str()
            .is_some_and(|e| e.contains("Aborted()")),
        "{report:#}"
    );
    assert!(
        report["scenarios"][0]["stderr"]
            .as_str()
            .unwrap()
            .contains("Aborted()"),
        "{report:#}"
    );
}
