//! Symbolic links and path escapes (S13, S17): the strict store never reads or writes through
//! a link inside the root, and no request reaches outside the root.
//!
//! Each test builds a temporary folder holding the root and, beside it, an `outside` folder
//! with a valid task file in it, so that a store that followed a link would succeed in reading
//! (and could damage) it. Afterwards everything outside the root must be byte for byte as it
//! was.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use taskproof_core::protocol::{ErrorKind, Response};
use taskproof_core::task::TaskId;
use taskproof_store::{
    HIGHWATERMARK_NAME, JOURNAL_NAME, LOCK_NAME, Mutant, Options, StrictStore, TMP_NAME, TaskStore,
};

use crate::util::tempdir;

struct Fixture {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
    store: StrictStore,
}

/// A task file outside the root that is valid as task 2 of any list.
fn outside_task() -> Vec<u8> {
    json!({"id": "2", "subject": "outside", "status": "pending"})
        .to_string()
        .into_bytes()
}

impl Fixture {
    fn new() -> Fixture {
        let tmp = tempdir();
        let root = tmp.path().join("root");
        let outside = tmp.path().join("outside");
        std::fs::create_dir(&root).unwrap();
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("2.json"), outside_task()).unwrap();
        std::fs::write(outside.join("number"), b"100\n").unwrap();
        let store = StrictStore::open(&root, Options { durable: false }).unwrap();
        Fixture {
            _tmp: tmp,
            root,
            outside,
            store,
        }
    }

    fn call(&self, v: Value) -> Response {
        self.store.handle_value(&v)
    }

    fn kind(&self, v: Value) -> Option<ErrorKind> {
        self.call(v).error_kind()
    }

    /// Everything in the temporary folder outside the root, with contents.
    fn outside_snapshot(&self) -> Vec<(PathBuf, Vec<u8>)> {
        let mut out = Vec::new();
        walk(self.root.parent().unwrap(), &self.root, &mut out);
        out.sort();
        out
    }
}

fn walk(dir: &Path, skip: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p == skip {
            continue;
        }
        let meta = std::fs::symlink_metadata(&p).unwrap();
        if meta.is_dir() {
            out.push((p.clone(), Vec::new()));
            walk(&p, skip, out);
        } else {
            out.push((p.clone(), std::fs::read(&p).unwrap_or_default()));
        }
    }
}

#[test]
fn s17_a_task_file_that_is_a_link_is_corrupt_and_its_target_never_changes() {
    let f = Fixture::new();
    assert!(
        f.call(json!({"op": "create", "list": "l", "task": {"subject": "a"}}))
            .is_ok()
    );
    let link = f.root.join("l/2.json");
    symlink(f.outside.join("2.json"), &link).unwrap();
    let before = f.outside_snapshot();

    let get = json!({"op": "get", "list": "l", "id": "2"});
    assert_eq!(f.kind(get.clone()), Some(ErrorKind::Corrupt));
    match f.call(json!({"op": "list", "list": "l"})) {
        Response::Tasks { tasks, corrupt } => {
            assert_eq!(tasks.len(), 1);
            assert_eq!(corrupt, ["2.json"]);
        }
        other => panic!("{other:?}"),
    }
    for req in [
        json!({"op": "update", "list": "l", "id": "2", "patch": {"subject": "x"}}),
        json!({"op": "claim", "list": "l", "id": "2", "owner": "w"}),
        json!({"op": "update", "list": "l", "id": "1", "patch": {"addBlocks": ["2"]}}),
        json!({"op": "update", "list": "l", "id": "1", "patch": {"addBlockedBy": ["2"]}}),
    ] {
        assert_eq!(f.kind(req.clone()), Some(ErrorKind::Corrupt), "{req}");
    }
    assert_eq!(f.outside_snapshot(), before);

    // Delete removes the link itself, never its target.
    assert_eq!(
        f.call(json!({"op": "delete", "list": "l", "id": "2"})),
        Response::Done
    );
    assert!(std::fs::symlink_metadata(&link).is_err());
    assert_eq!(f.outside_snapshot(), before);
    assert_eq!(f.kind(get), Some(ErrorKind::NotFound));
}

#[test]
fn s17_the_follows_symlinks_mutant_is_caught_by_the_same_checks() {
    // The checks above must be able to fail: the mutant that reads through links answers
    // the linked file as a task.
    let f = Fixture::new();
    let mutant =
        StrictStore::open_mutant(&f.root, Options { durable: false }, Mutant::FollowsSymlinks)
            .unwrap();
    assert!(
        f.call(json!({"op": "create", "list": "l", "task": {"subject": "a"}}))
            .is_ok()
    );
    symlink(f.outside.join("2.json"), f.root.join("l/2.json")).unwrap();
    let r = mutant.handle_value(&json!({"op": "get", "list": "l", "id": "2"}));
    assert!(matches!(r, Response::Task(t) if t.subject == "outside"));
}

#[test]
fn s17_a_list_folder_that_is_a_link_is_refused() {
    let f = Fixture::new();
    symlink(&f.outside, f.root.join("l")).unwrap();
    let before = f.outside_snapshot();
    for req in [
        json!({"op": "get", "list": "l", "id": "2"}),
        json!({"op": "list", "list": "l"}),
        json!({"op": "create", "list": "l", "task": {"subject": "a"}}),
        json!({"op": "update", "list": "l", "id": "2", "patch": {"subject": "x"}}),
        json!({"op": "delete", "list": "l", "id": "2"}),
        json!({"op": "claim", "list": "l", "id": "2", "owner": "w"}),
    ] {
        let r = f.call(req.clone());
        assert_eq!(r.error_kind(), Some(ErrorKind::Corrupt), "{req}: {r:?}");
    }
    assert_eq!(f.outside_snapshot(), before);
}

#[test]
fn s13_list_names_that_could_leave_the_root_are_invalid_and_create_nothing() {
    let f = Fixture::new();
    let before = f.outside_snapshot();
    let escape = f.outside.to_string_lossy().into_owned();
    for name in [
        "..",
        ".",
        "../outside",
        "a/b",
        "/tmp",
        &escape,
        "",
        ".hidden",
        "l\0",
    ] {
        for req in [
            json!({"op": "create", "list": name, "task": {"subject": "a"}}),
            json!({"op": "list", "list": name}),
            json!({"op": "delete", "list": name, "id": "2"}),
        ] {
            assert_eq!(f.kind(req.clone()), Some(ErrorKind::Invalid), "{req}");
        }
    }
    assert_eq!(f.outside_snapshot(), before);
    assert_eq!(std::fs::read_dir(&f.root).unwrap().count(), 0);
}

#[test]
fn s17_a_lock_file_that_is_a_link_stops_the_list_and_is_not_touched() {
    let f = Fixture::new();
    std::fs::create_dir(f.root.join("l")).unwrap();
    symlink(f.outside.join("number"), f.root.join("l").join(LOCK_NAME)).unwrap();
    let before = f.outside_snapshot();
    let r = f.call(json!({"op": "create", "list": "l", "task": {"subject": "a"}}));
    assert_eq!(r.error_kind(), Some(ErrorKind::Io), "{r:?}");
    assert_eq!(f.outside_snapshot(), before);
}

#[test]
fn s17_a_highwatermark_that_is_a_link_is_not_read_and_is_replaced_not_written_through() {
    let f = Fixture::new();
    assert!(
        f.call(json!({"op": "create", "list": "l", "task": {"subject": "a"}}))
            .is_ok()
    );
    let hwm = f.root.join("l").join(HIGHWATERMARK_NAME);
    std::fs::remove_file(&hwm).unwrap();
    // Following the link would read 100 and hand out 101.
    symlink(f.outside.join("number"), &hwm).unwrap();
    let before = f.outside_snapshot();
    match f.call(json!({"op": "create", "list": "l", "task": {"subject": "b"}})) {
        Response::Task(t) => assert_eq!(t.id, TaskId(2)),
        other => panic!("{other:?}"),
    }
    assert_eq!(f.outside_snapshot(), before);
    assert!(
        !std::fs::symlink_metadata(&hwm)
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[test]
fn s17_a_temporary_file_or_journal_that_is_a_link_never_writes_through() {
    let f = Fixture::new();
    assert!(
        f.call(json!({"op": "create", "list": "l", "task": {"subject": "a"}}))
            .is_ok()
    );
    let dir = f.root.join("l");
    // A stale `.tmp` link is removed as a link; the write goes to a fresh file.
    symlink(f.outside.join("2.json"), dir.join(TMP_NAME)).unwrap();
    let before = f.outside_snapshot();
    assert!(
        f.call(json!({"op": "update", "list": "l", "id": "1", "patch": {"subject": "b"}}))
            .is_ok()
    );
    assert_eq!(f.outside_snapshot(), before);
    // A journal that is a link is not replayed: the list stops with an error instead.
    symlink(f.outside.join("2.json"), dir.join(JOURNAL_NAME)).unwrap();
    let r = f.call(json!({"op": "get", "list": "l", "id": "1"}));
    assert_eq!(r.error_kind(), Some(ErrorKind::Io), "{r:?}");
    assert_eq!(f.outside_snapshot(), before);
}
