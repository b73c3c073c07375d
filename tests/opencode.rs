//! OpenCode with the oh-my-opencode plugin as a target: both installed with npm into the
//! cache (`.ci/run` fills it first), the plugin's real task tools called through OpenCode's
//! own `anthropic` provider by the scripted model.
//!
//! These tests need node and npm; without them they are skipped, each naming what is missing
//! (under CI, which installs them, they fail instead: tests/util.rs `require`). They fail if
//! the tools did not really run: the tasks must be the plugin's own files in the list's
//! folder (`T-{uuid}.json`, with the `threadID` only the plugin writes), numbered on the wire
//! through the root's id book.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use taskproof_opencode::{OhMyOpencode, OpencodeSession};
use taskproof_session::{Session, SessionOptions};

fn prepared() -> Option<taskproof_opencode::Installation> {
    crate::util::require(&[crate::util::Tool::Npm]);
    let spec = OhMyOpencode::parse("4.19.4").expect("a version number");
    Some(
        spec.prepare()
            .expect("install oh-my-opencode and OpenCode with npm"),
    )
}

fn options() -> SessionOptions {
    SessionOptions {
        timeout: Duration::from_secs(60),
        start_timeout: Duration::from_secs(180),
        ..SessionOptions::default()
    }
}

fn call(s: &mut OpencodeSession, request: Value) -> Value {
    s.call(&request)
        .unwrap_or_else(|e| panic!("{request}: {e}\n{}", s.stderr()))
}

/// The plugin's task files in `ROOT/list`, parsed.
fn plugin_files(root: &Path, list: &str) -> Vec<Value> {
    let mut out: Vec<Value> = std::fs::read_dir(root.join(list))
        .unwrap()
        .flatten()
        .filter(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.starts_with("T-") && n.ends_with(".json")
        })
        .map(|e| serde_json::from_str(&std::fs::read_to_string(e.path()).unwrap()).unwrap())
        .collect();
    out.sort_by_key(|t| t["subject"].as_str().unwrap_or_default().to_string());
    out
}

#[test]
#[cfg_attr(not(taskproof_has_npm), ignore = "needs node and npm on PATH")]
fn the_plugin_runs_its_real_tools_for_every_request_in_one_opencode_turn() {
    let Some(install) = prepared() else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let mut s = OpencodeSession::open(&install, root.path(), options())
        .unwrap_or_else(|(e, err)| panic!("open: {e}\n{err}"));
    assert_eq!(s.hello().layout.as_str(), "opaque");

    let a = call(
        &mut s,
        json!({"op": "create", "list": "l", "task": {"subject": "a", "owner": "x"}}),
    );
    assert_eq!(a["ok"], true, "{a}");
    assert_eq!(a["task"]["id"], "1");
    assert_eq!(
        a["task"]["owner"], "x",
        "the owner, set by task_update after task_create"
    );
    let b = call(
        &mut s,
        json!({"op": "create", "list": "l", "task": {"subject": "b", "blockedBy": ["1"]}}),
    );
    assert_eq!(b["task"]["id"], "2");
    assert_eq!(
        b["task"]["blockedBy"],
        json!(["1"]),
        "the blocker's T- id read back as its wire id"
    );
    let done = call(
        &mut s,
        json!({"op": "update", "list": "l", "id": "1", "patch": {"status": "completed"}}),
    );
    assert_eq!(done["task"]["status"], "completed");
    let missing = call(&mut s, json!({"op": "get", "list": "l", "id": "9"}));
    assert_eq!(missing["error"]["kind"], "not_found", "{missing}");
    let edge = call(
        &mut s,
        json!({"op": "update", "list": "l", "id": "2", "patch": {"removeBlockedBy": ["1"]}}),
    );
    assert_eq!(edge["error"]["kind"], "unsupported", "{edge}");
    // Another list is another OpenCode with another storage_path, and sees nothing of l.
    let other = call(
        &mut s,
        json!({"op": "create", "list": "m", "task": {"subject": "m1"}}),
    );
    assert_eq!(other["task"]["id"], "1", "{other}");
    let m = call(&mut s, json!({"op": "list", "list": "m"}));
    assert_eq!(m["tasks"].as_array().map(Vec::len), Some(1), "{m}");
    // The plugin's task_list shows no completed task: only b is listed.
    let list = call(&mut s, json!({"op": "list", "list": "l"}));
    let ids: Vec<&str> = list["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["2"], "{list}");
    assert_eq!(
        plugin_files(root.path(), "m").len(),
        1,
        "m1 is in m's folder only"
    );
    s.close().unwrap();

    // The files are the plugin's own, written by its tools in the list's folder.
    let files = plugin_files(root.path(), "l");
    assert_eq!(files.len(), 2, "{files:?}");
    assert!(
        files.iter().all(|t| t["threadID"]
            .as_str()
            .is_some_and(|x| x.starts_with("ses_"))),
        "{files:?}"
    );
    assert_eq!(files[0]["status"], "completed");
    assert_eq!(files[1]["blockedBy"], json!([files[0]["id"]]));

    // A second session on the root (another agent) reads the same tasks under the same ids.
    let mut s2 = OpencodeSession::open(&install, root.path(), options())
        .unwrap_or_else(|(e, err)| panic!("open: {e}\n{err}"));
    let got = call(&mut s2, json!({"op": "get", "list": "l", "id": "1"}));
    assert_eq!(got["task"]["subject"], "a", "{got}");
    s2.close().unwrap();
}
