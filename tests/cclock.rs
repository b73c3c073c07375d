//! The strict store (through `taskproof mcp`) honours Claude Code's lock protocol
//! (proper-lockfile: a lock is the directory `X.lock`) against other processes: a change waits
//! while another process holds the list's `.lock.lock` or a task's `{id}.json.lock`, takes
//! over a stale one, and leaves no lock directory behind.

use std::path::Path;
use std::process::{Child, Command};
use std::time::Duration;

use serde_json::json;

use crate::mcp::{call, connect, ok, runtime};
use crate::util::tempdir;

/// A process that holds the lock directory `lock` (as Claude Code does: it made it), then
/// writes `marker` and releases the lock.
fn holder(folder: &Path, lock: &str, marker: &str) -> Child {
    let script = format!("mkdir '{lock}' || exit 9; sleep 1; touch '{marker}'; rmdir '{lock}'",);
    let child = Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(folder)
        .spawn()
        .unwrap();
    // Wait until it holds the lock (its mkdir ran).
    while !folder.join(lock).is_dir() {
        std::thread::sleep(Duration::from_millis(5));
    }
    child
}

#[test]
fn cclock_changes_wait_for_claude_codes_lock_directories() {
    let dir = tempdir();
    let root = dir.path();
    let folder = root.join("l");
    runtime().block_on(async {
        let client = connect(
            &[
                "--root",
                root.to_str().unwrap(),
                "--list",
                "l",
                "--no-fsync",
            ],
            &[],
            "test",
        )
        .await;
        ok(call(&client, "task_create", json!({"subject": "a"})).await);

        // Claude Code creating a task holds `.lock.lock`.
        let mut h = holder(&folder, ".lock.lock", "released-list");
        ok(call(&client, "task_create", json!({"subject": "b"})).await);
        assert!(
            folder.join("released-list").exists(),
            "the create finished while another process held .lock.lock"
        );
        assert!(h.wait().unwrap().success());

        // Claude Code claiming task 1 holds `1.json.lock`.
        let mut h = holder(&folder, "1.json.lock", "released-task");
        ok(call(
            &client,
            "task_update",
            json!({"taskId": "1", "subject": "a2"}),
        )
        .await);
        assert!(
            folder.join("released-task").exists(),
            "the update finished while another process held 1.json.lock"
        );
        assert!(h.wait().unwrap().success());

        // A lock left by a killed Claude Code (older than 10 s) is taken over.
        std::fs::create_dir(folder.join(".lock.lock")).unwrap();
        let st = Command::new("touch")
            .args(["-m", "-d", "-30 seconds", ".lock.lock"])
            .current_dir(&folder)
            .status()
            .unwrap();
        assert!(st.success());
        ok(call(&client, "task_create", json!({"subject": "c"})).await);
        client.cancel().await.unwrap();
    });
    let dirs: Vec<String> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(dirs.is_empty(), "lock directories left: {dirs:?}");
}

#[test]
fn cclock_two_servers_and_lock_holders_never_lose_a_create() {
    // Two `taskproof mcp` processes and a process taking `.lock.lock` the way Claude Code's
    // TaskCreate does (mkdir, pick the next id from the files, write it, rmdir) all create at
    // once: every acknowledged task survives with its own id.
    let dir = tempdir();
    let root = dir.path();
    let folder = root.join("l");
    std::fs::create_dir_all(&folder).unwrap();
    let script = r#"
n=0
while [ $n -lt 20 ]; do
  if mkdir .lock.lock 2>/dev/null; then
    max=0
    for f in [0-9]*.json; do [ -e "$f" ] || continue; i=${f%.json}; [ "$i" -gt "$max" ] && max=$i; done
    if [ -e .highwatermark ]; then h=$(cat .highwatermark); [ "$h" -gt "$max" ] && max=$h; fi
    id=$((max+1))
    printf '{"id":"%s","subject":"cc","description":"","status":"pending","blocks":[],"blockedBy":[]}' $id > $id.json
    echo $id >> cc-ids
    rmdir .lock.lock
    n=$((n+1))
  fi
done
"#;
    let mut cc = Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(&folder)
        .spawn()
        .unwrap();
    let ids = runtime().block_on(async {
        let a = connect(
            &[
                "--root",
                root.to_str().unwrap(),
                "--list",
                "l",
                "--no-fsync",
            ],
            &[],
            "a",
        )
        .await;
        let b = connect(
            &[
                "--root",
                root.to_str().unwrap(),
                "--list",
                "l",
                "--no-fsync",
            ],
            &[],
            "b",
        )
        .await;
        let mut ids = Vec::new();
        for i in 0..20 {
            let (x, y) = tokio::join!(
                call(&a, "task_create", json!({"subject": format!("a{i}")})),
                call(&b, "task_create", json!({"subject": format!("b{i}")}))
            );
            for r in [x, y] {
                ids.push(ok(r)["task"]["id"].as_str().unwrap().to_string());
            }
        }
        a.cancel().await.unwrap();
        b.cancel().await.unwrap();
        ids
    });
    assert!(cc.wait().unwrap().success());
    let mut all = ids.clone();
    all.extend(
        std::fs::read_to_string(folder.join("cc-ids"))
            .unwrap()
            .lines()
            .map(str::to_string),
    );
    let n = all.len();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), n, "an id was handed out twice");
    for id in &ids {
        let v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(folder.join(format!("{id}.json"))).unwrap())
                .unwrap();
        assert_ne!(
            v["subject"], "cc",
            "task {id}, acknowledged by the store, was overwritten"
        );
    }
}
