//! SIGKILL of real `taskproof mcp` processes in the middle of audited multi-file changes:
//! afterwards (once the next store has repaired the folder) the tasks are the state before
//! the change with no new record, or the state after it with exactly one new record that
//! says so; never a change without its record or a record without its change.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use rand::{RngExt, SeedableRng, rngs::StdRng};
use serde_json::{Value, json};
use taskproof_core::protocol::Response;
use taskproof_core::task::Task;
use taskproof_store::audit::{AUDIT_NAME, PENDING_NAME, read_log, verify};
use taskproof_store::{Options, StrictStore, TaskStore};

use crate::util::{bin, tempdir};

const NEIGHBOURS: u64 = 12;
const ITERATIONS: usize = 24;
const MAX_DELAY_US: u64 = 60_000;

fn seed(root: &Path) {
    let store = StrictStore::open(root, Options { durable: false })
        .unwrap()
        .with_audit();
    let call = |v: Value| assert!(store.handle_value(&v).is_ok(), "seed {v}");
    call(json!({"op": "create", "list": "l", "task": {"subject": "hub"}}));
    for i in 0..NEIGHBOURS {
        call(json!({"op": "create", "list": "l",
            "task": {"subject": format!("n{i}"), "blockedBy": ["1"]}}));
    }
}

fn tools() -> Vec<(&'static str, Value)> {
    let neighbours: Vec<String> = (2..=NEIGHBOURS + 1).map(|i| i.to_string()).collect();
    vec![
        ("task_delete", json!({"taskId": "1"})),
        (
            "task_create",
            json!({"subject": "new", "blocks": neighbours}),
        ),
        (
            "task_update",
            json!({"taskId": "1", "removeBlocks": neighbours, "status": "completed"}),
        ),
    ]
}

/// The tasks (after the repair a fresh store makes) and the log's records.
fn state(root: &Path) -> (Vec<Task>, Vec<taskproof_store::audit::Record>) {
    let store = StrictStore::open(root, Options { durable: false }).unwrap();
    let tasks = match store.handle_value(&json!({"op": "list", "list": "l"})) {
        Response::Tasks { tasks, corrupt } => {
            assert!(corrupt.is_empty(), "{corrupt:?}");
            tasks
        }
        other => panic!("{other:?}"),
    };
    let bytes = std::fs::read(root.join("l").join(AUDIT_NAME)).unwrap();
    let (records, problems) = read_log(&bytes);
    assert!(problems.is_empty(), "{problems:?}");
    let current = tasks
        .iter()
        .map(|t| (t.id.to_string(), t.to_json()))
        .collect();
    let mismatches = verify(&records, &current);
    assert!(mismatches.is_empty(), "{mismatches:?}");
    (tasks, records)
}

fn send(stdin: &mut impl Write, v: Value) {
    writeln!(stdin, "{v}").unwrap();
    stdin.flush().unwrap();
}

#[test]
fn audit_a_sigkill_never_separates_a_change_from_its_record() {
    let ops = tools();
    let seeded = tempdir();
    seed(seeded.path());
    let (before, seed_records) = state(seeded.path());
    let mut rng = StdRng::seed_from_u64(0xa0d1_7000);
    let (mut n_before, mut n_after, mut n_pending) = (0, 0, 0);
    for i in 0..ITERATIONS {
        let (tool, args) = &ops[i % ops.len()];
        let dir = tempdir();
        seed(dir.path());
        let mut child = Command::new(bin())
            .args(["mcp", "--root", dir.path().to_str().unwrap(), "--list", "l"])
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CLAUDE_CODE_TASK_LIST_ID")
            .env("TASKPROOF_ACTOR", "killed")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        send(
            &mut stdin,
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "kill-test", "version": "1"}}}),
        );
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        assert!(line.contains("\"result\""), "{line}");
        send(
            &mut stdin,
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        );
        let delay = rng.random_range(0..=MAX_DELAY_US);
        send(
            &mut stdin,
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": tool, "arguments": args}}),
        );
        std::thread::sleep(Duration::from_micros(delay));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        line.clear();
        let answered = stdout.read_line(&mut line).unwrap() > 0;
        let folder = dir.path().join("l");
        n_pending += folder.join(PENDING_NAME).exists() as usize;

        let (tasks, records) = state(dir.path());
        assert!(!folder.join(PENDING_NAME).exists());
        if tasks == before {
            assert!(
                !answered,
                "{tool}, iteration {i}: acknowledged but not applied"
            );
            assert_eq!(
                records.len(),
                seed_records.len(),
                "{tool}, iteration {i}: a record without its change"
            );
            n_before += 1;
        } else {
            assert_eq!(
                records.len(),
                seed_records.len() + 1,
                "{tool}, iteration {i}: a change without exactly one record"
            );
            let last = records.last().unwrap();
            assert_eq!(last.str("actor"), "killed");
            n_after += 1;
        }
    }
    eprintln!("audit kill test: {n_before} before, {n_after} after, {n_pending} redo files left");
    assert_eq!(n_before + n_after, ITERATIONS);
    // Without kills landing inside a change the test would prove nothing about the repair.
    assert!(
        n_pending + n_after > 0,
        "every kill landed before the change began"
    );
}

/// A redo file a SIGKILL left (the change and its record, not yet applied) is finished by
/// `check --fix` exactly as the next store operation would finish it. The redo file is the
/// one a killed update would leave: the same update made in a twin folder gives its record
/// line and the task file's new content.
#[test]
fn check_fix_finishes_a_change_left_in_the_audit_redo_file() {
    let (done, left) = (tempdir(), tempdir());
    seed(done.path());
    seed(left.path());
    let store = StrictStore::open(done.path(), Options { durable: false })
        .unwrap()
        .with_audit();
    let update = json!({"op": "update", "list": "l", "id": "1", "patch": {"subject": "renamed"}});
    assert!(store.handle_value(&update).is_ok());
    let log = std::fs::read_to_string(done.path().join("l").join(AUDIT_NAME)).unwrap();
    let record = format!("{}\n", log.lines().last().unwrap());
    let content = std::fs::read_to_string(done.path().join("l").join("1.json")).unwrap();
    let folder = left.path().join("l");
    let at = std::fs::metadata(folder.join(AUDIT_NAME)).unwrap().len();
    let pending = json!({"version": 1, "at": at, "line": record,
        "entries": [{"name": "1.json", "content": content}]});
    std::fs::write(folder.join(PENDING_NAME), pending.to_string()).unwrap();

    let check = |args: &[&str]| {
        let out = Command::new(bin())
            .arg("check")
            .arg(left.path())
            .args(["--json"])
            .args(args)
            .output()
            .unwrap();
        let doc: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)));
        (out.status.code(), doc)
    };
    let (code, before) = check(&[]);
    assert_eq!(code, Some(1), "{before:#}");
    assert!(before.to_string().contains(".audit.pending"), "{before:#}");
    let (_, fixed) = check(&["--fix"]);
    let changes = fixed["changes"].to_string();
    assert!(
        changes.contains("finish the interrupted change and its audit record"),
        "{fixed:#}"
    );
    assert!(!folder.join(PENDING_NAME).exists());
    assert_eq!(
        std::fs::read_to_string(folder.join("1.json")).unwrap(),
        content
    );
    let after = std::fs::read_to_string(folder.join(AUDIT_NAME)).unwrap();
    assert_eq!(after.lines().last().unwrap(), record.trim_end());
    assert_eq!(after.lines().count(), log.lines().count());
    let (code, clean) = check(&[]);
    assert_eq!(code, Some(0), "{clean:#}");
}
