//! `Session::release_lists` on an `mcp:` target with one server per list: a released list's
//! server is emptied through the server's own tools and serves the next list named, and
//! nothing of the released list reaches it (crates/mcp-target/src/pool.rs).

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use taskproof_mcp_target::McpTarget;
use taskproof_session::{Session, SessionOptions};
use taskproof_targets::TargetSpec;

use crate::util::{Tool, repo, require, tempdir, write};

fn options() -> SessionOptions {
    SessionOptions {
        timeout: Duration::from_secs(5),
        start_timeout: Duration::from_secs(10),
        ..SessionOptions::default()
    }
}

/// `mcp:text-tasks-server.py` (data in its working folder, one server per list, ids through
/// the id table, deletes that archive: the server keeps what it deleted, out of sight) with
/// its mapping, changed by `edit`, opened on `root`.
fn open(root: &Path, edit: &dyn Fn(String) -> String) -> (tempfile::TempDir, Box<dyn Session>) {
    let (dir, target) = target(edit);
    let s = target.open(root, options()).expect("opens");
    (dir, s)
}

/// The fixture server's target, its mapping changed by `edit`: sessions opened from one
/// target share its pool of emptied servers, as the fuzzer's do.
fn target(edit: &dyn Fn(String) -> String) -> (tempfile::TempDir, TargetSpec) {
    let dir = tempdir();
    let mapping =
        std::fs::read_to_string(repo().join("tests/fixtures/mcp/text-tasks.toml")).unwrap();
    write(dir.path(), "m.toml", &edit(mapping));
    let command = format!(
        "python3 '{}'",
        repo()
            .join("tests/fixtures/mcp/text-tasks-server.py")
            .display()
    );
    let target = McpTarget::parse(&command)
        .unwrap()
        .with_mapping(&dir.path().join("m.toml"))
        .unwrap();
    (dir, TargetSpec::from(target))
}

fn call(s: &mut dyn Session, request: Value) -> Value {
    s.call(&request).unwrap()
}

fn ok(s: &mut dyn Session, request: Value) -> Value {
    let answer = call(s, request.clone());
    assert_eq!(answer["ok"], true, "{request} -> {answer}");
    answer
}

/// Fills `list` with three tasks, one done and one owned, and deletes one (the server's
/// counter and its archive keep them).
fn fill(s: &mut dyn Session, list: &str) {
    for subject in ["first", "second", "third"] {
        ok(
            s,
            json!({"op": "create", "list": list, "task": {"subject": format!("{subject} of {list}")}}),
        );
    }
    ok(
        s,
        json!({"op": "update", "list": list, "id": "1", "patch": {"status": "completed"}}),
    );
    ok(
        s,
        json!({"op": "update", "list": list, "id": "2", "patch": {"owner": "agent-a"}}),
    );
    ok(s, json!({"op": "delete", "list": list, "id": "3"}));
}

/// What a list shows, as a fresh server shows it: the list, each task got by its id, and
/// ids the list never gave.
fn shown(s: &mut dyn Session, list: &str) -> Vec<Value> {
    let mut out = vec![ok(s, json!({"op": "list", "list": list}))["tasks"].clone()];
    for id in ["1", "2", "3", "4", "5", "6"] {
        let a = call(s, json!({"op": "get", "list": list, "id": id}));
        out.push(if a["ok"] == true {
            a["task"].clone()
        } else {
            a["error"]["kind"].clone()
        });
    }
    out
}

/// A released list's server is emptied and then serves the next list named instead of a new
/// server (the new list's folder is a link to the released one's, where the server works); the
/// new list starts afresh: its ids from 1, nothing of the released list's tasks, statuses,
/// owners or deleted ids shows, and what it shows is what a fresh server shows for the
/// same requests. Three lists in a row, so a server reused twice is covered.
#[test]
#[cfg_attr(not(taskproof_has_python), ignore = "needs python3 on PATH")]
fn a_released_lists_server_is_emptied_and_serves_the_next_list_with_nothing_of_it() {
    require(&[Tool::Python]);
    // The baseline: each list on a server of its own.
    let fresh_root = tempdir();
    let (_m, mut fresh) = open(fresh_root.path(), &|t| t);
    fill(&mut *fresh, "x");
    ok(
        &mut *fresh,
        json!({"op": "create", "list": "y", "task": {"subject": "only of y"}}),
    );
    let want = shown(&mut *fresh, "y");
    fresh.close().unwrap();

    let root = tempdir();
    let (_m, mut s) = open(root.path(), &|t| t);
    fill(&mut *s, "a");
    s.release_lists(&["a"]);
    ok(
        &mut *s,
        json!({"op": "create", "list": "b", "task": {"subject": "only of y"}}),
    );
    // b took a's emptied server rather than starting one: its folder is a link to the
    // folder that server keeps its store in, where another session's server for b starts.
    assert_eq!(
        std::fs::read_link(root.path().join("b")).expect("b's folder is a link"),
        Path::new("a"),
    );
    assert_eq!(
        shown(&mut *s, "b"),
        want,
        "b shows what a fresh server shows"
    );
    // Reused again, after b's own tasks.
    fill(&mut *s, "b");
    s.release_lists(&["b"]);
    ok(
        &mut *s,
        json!({"op": "create", "list": "c", "task": {"subject": "only of y"}}),
    );
    assert_eq!(
        std::fs::read_link(root.path().join("c")).expect("c's folder is a link"),
        Path::new("a"),
    );
    assert_eq!(
        shown(&mut *s, "c"),
        want,
        "c shows what a fresh server shows"
    );
    s.close().unwrap();
}

/// Two sessions on one root keep one store for a list, whether a session's server for it
/// came from the pool or was started: a task one session makes on the reused list is what
/// the other lists. (Before, one session's reused server kept list b in a's folder while the
/// other's fresh server kept it in b's, and each saw only its own tasks.)
#[test]
#[cfg_attr(not(taskproof_has_python), ignore = "needs python3 on PATH")]
fn sessions_on_one_root_share_a_reused_lists_store() {
    require(&[Tool::Python]);
    let root = tempdir();
    let (_m1, mut one) = open(root.path(), &|t| t);
    let (_m2, mut two) = open(root.path(), &|t| t);
    let listed = |s: &mut dyn Session, list: &str| -> Vec<Value> {
        ok(s, json!({"op": "list", "list": list}))["tasks"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    };
    fill(&mut *one, "a");
    assert_eq!(listed(&mut *two, "a"), listed(&mut *one, "a"));
    one.release_lists(&["a"]);
    two.release_lists(&["a"]);
    ok(
        &mut *one,
        json!({"op": "create", "list": "b", "task": {"subject": "made by one"}}),
    );
    let seen = listed(&mut *two, "b");
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0]["subject"], "made by one");
    ok(
        &mut *two,
        json!({"op": "create", "list": "b", "task": {"subject": "made by two"}}),
    );
    assert_eq!(listed(&mut *one, "b").len(), 2);
    one.close().unwrap();
    two.close().unwrap();
}

/// A mapping that says the server keeps state a delete does not reset (`server.reuse =
/// false`) gets a new server for the next list, started in that list's own folder, and the
/// released one is stopped; so does a server that cannot be emptied (here: its delete is
/// refused for every task).
#[test]
#[cfg_attr(not(taskproof_has_python), ignore = "needs python3 on PATH")]
fn a_server_that_keeps_state_or_cannot_be_emptied_is_stopped_not_reused() {
    require(&[Tool::Python]);
    let root = tempdir();
    let (_m, mut s) = open(root.path(), &|t| {
        t.replace("per_list = true", "per_list = true\nreuse = false")
    });
    fill(&mut *s, "a");
    s.release_lists(&["a"]);
    ok(
        &mut *s,
        json!({"op": "create", "list": "b", "task": {"subject": "b"}}),
    );
    assert!(root.path().join("b").exists(), "a new server in b's folder");
    s.close().unwrap();

    // A delete the server always refuses (a tool argument it does not know is refused as
    // invalid by the fixture): the list cannot be emptied.
    let root = tempdir();
    let (_m, mut s) = open(root.path(), &|t| {
        t.replace(
            "calls = [{ tool = \"task_archive\", args = { id = \"{id}\" } }]",
            "calls = [{ tool = \"task_archive\", args = { id = \"nope-{id}\" } }]",
        )
    });
    ok(
        &mut *s,
        json!({"op": "create", "list": "a", "task": {"subject": "kept"}}),
    );
    s.release_lists(&["a"]);
    ok(
        &mut *s,
        json!({"op": "create", "list": "b", "task": {"subject": "b"}}),
    );
    assert!(root.path().join("b").exists(), "a new server in b's folder");
    let b = ok(&mut *s, json!({"op": "list", "list": "b"}));
    assert_eq!(b["tasks"].as_array().unwrap().len(), 1, "{b}");
    s.close().unwrap();
}

/// Every list of a case keeps a store of its own, whichever sessions serve it and however
/// their servers came: a server a session starts on a list another session linked to a
/// pooled folder keeps its store in that folder, and is pooled under it, so the next two
/// lists named never share one. (Before, it was pooled under the list's name, itself a link
/// to the other folder, and two lists of the next case were given one store: the fuzzer saw
/// a fresh list show another's tasks.)
#[test]
#[cfg_attr(not(taskproof_has_python), ignore = "needs python3 on PATH")]
fn two_lists_named_after_a_shared_one_never_share_a_store() {
    require(&[Tool::Python]);
    let root = tempdir();
    let (_m, target) = target(&|t| t);
    let mut one = target.open(root.path(), options()).expect("opens");
    let mut two = target.open(root.path(), options()).expect("opens");
    let count = |s: &mut dyn Session, list: &str| {
        ok(s, json!({"op": "list", "list": list}))["tasks"]
            .as_array()
            .map_or(0, Vec::len)
    };
    let make = |s: &mut dyn Session, list: &str| {
        ok(
            s,
            json!({"op": "create", "list": list, "task": {"subject": format!("of {list}")}}),
        );
    };
    // Both sessions serve a: two servers on one folder, both pooled under it.
    make(&mut *one, "a");
    assert_eq!(count(&mut *two, "a"), 1);
    one.release_lists(&["a"]);
    two.release_lists(&["a"]);
    // b takes a pooled server (b links to a's folder); a third session, as after a
    // restart, starts its own server for b through that link; c gets the other pooled one
    // only if its folder serves no list, else a server of its own.
    make(&mut *one, "b");
    let mut three = target.open(root.path(), options()).expect("opens");
    assert_eq!(count(&mut *three, "b"), 1, "three sees b's store");
    make(&mut *two, "c");
    assert_eq!(count(&mut *one, "b"), 1, "b and c are apart");
    for s in [&mut one, &mut two, &mut three] {
        s.release_lists(&["b", "c"]);
    }
    // The next two lists: each starts empty and sees none of the other's tasks.
    make(&mut *one, "d");
    make(&mut *two, "e");
    make(&mut *three, "e");
    assert_eq!(count(&mut *one, "d"), 1, "d holds only its own task");
    assert_eq!(count(&mut *three, "e"), 2, "e holds only its own tasks");
    assert_eq!(count(&mut *two, "d"), 1);
    for mut s in [one, two, three] {
        s.close().unwrap();
    }
}
