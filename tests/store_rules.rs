//! One test per rule of SPEC §3 where the strict store itself is what is tested, driven
//! through `TaskStore::handle_value` as `taskproof serve` drives it. Each test is named after
//! the rule and the behaviour it checks. Concurrency (S19, S20 among processes), SIGKILL
//! (S14, S18) and symbolic links (S13, S17) have modules of their own.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use taskproof_core::protocol::{ErrorKind, Response};
use taskproof_core::task::{Status, Task, TaskId};
use taskproof_store::{
    HIGHWATERMARK_NAME, HIGHWATERMARK_SCRATCH_NAME, JOURNAL_NAME, Options, StrictStore, TMP_NAME,
    TaskStore,
};

use crate::util::tempdir;

struct Fixture {
    dir: tempfile::TempDir,
    store: StrictStore,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempdir();
        let store = StrictStore::open(dir.path(), Options { durable: false }).unwrap();
        Fixture { dir, store }
    }

    /// A store that syncs every write (`--fsync`).
    fn durable() -> Fixture {
        let dir = tempdir();
        let store = StrictStore::open(dir.path(), Options { durable: true }).unwrap();
        Fixture { dir, store }
    }

    fn reopen(&mut self) {
        self.store = StrictStore::open(self.dir.path(), Options { durable: false }).unwrap();
    }

    fn folder(&self) -> PathBuf {
        self.dir.path().join("l")
    }

    fn call(&self, v: Value) -> Response {
        self.store.handle_value(&v)
    }

    fn ok(&self, v: Value) -> Task {
        match self.call(v.clone()) {
            Response::Task(t) => t,
            other => panic!("{v}: expected a task, got {other:?}"),
        }
    }

    fn kind(&self, v: Value) -> ErrorKind {
        match self.call(v.clone()) {
            Response::Error(f) => f.kind,
            other => panic!("{v}: expected an error, got {other:?}"),
        }
    }

    fn create(&self, task: Value) -> Task {
        self.ok(json!({"op": "create", "list": "l", "task": task}))
    }

    fn update(&self, id: u64, patch: Value) -> Response {
        self.call(json!({"op": "update", "list": "l", "id": id.to_string(), "patch": patch}))
    }

    fn update_kind(&self, id: u64, patch: Value) -> Option<ErrorKind> {
        self.update(id, patch).error_kind()
    }

    fn get(&self, id: u64) -> Task {
        self.ok(json!({"op": "get", "list": "l", "id": id.to_string()}))
    }

    fn list(&self) -> (Vec<Task>, Vec<String>) {
        match self.call(json!({"op": "list", "list": "l"})) {
            Response::Tasks { tasks, corrupt } => (tasks, corrupt),
            other => panic!("list: {other:?}"),
        }
    }

    /// Every file of the list folder with its bytes, for "nothing changed" checks.
    fn snapshot(&self) -> Vec<(String, Vec<u8>)> {
        snapshot(&self.folder())
    }
}

fn snapshot(folder: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<_> = std::fs::read_dir(folder)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            (name, std::fs::read(e.path()).unwrap_or_default())
        })
        .filter(|(n, _)| n != ".lock")
        .collect();
    out.sort();
    out
}

fn ids(set: &std::collections::BTreeSet<TaskId>) -> Vec<u64> {
    set.iter().map(|i| i.get()).collect()
}

#[test]
fn s1_ids_start_at_one_and_are_never_reused_after_deletes_and_restarts() {
    let mut f = Fixture::new();
    assert_eq!(f.create(json!({"subject": "a"})).id, TaskId(1));
    assert_eq!(f.create(json!({"subject": "b"})).id, TaskId(2));
    for id in ["1", "2"] {
        assert_eq!(
            f.call(json!({"op": "delete", "list": "l", "id": id})),
            Response::Done
        );
    }
    f.reopen();
    assert_eq!(f.create(json!({"subject": "c"})).id, TaskId(3));
}

#[test]
fn s1_a_missing_or_damaged_highwatermark_never_reuses_an_existing_id() {
    let f = Fixture::new();
    for _ in 0..3 {
        f.create(json!({"subject": "a"}));
    }
    let hwm = f.folder().join(HIGHWATERMARK_NAME);
    std::fs::remove_file(&hwm).unwrap();
    assert_eq!(f.create(json!({"subject": "b"})).id, TaskId(4));
    std::fs::write(&hwm, b"not a number").unwrap();
    assert_eq!(f.create(json!({"subject": "c"})).id, TaskId(5));
    // A watermark below a task another program wrote is stepped past.
    std::fs::write(&hwm, b"1\n").unwrap();
    assert_eq!(f.create(json!({"subject": "d"})).id, TaskId(6));
}

#[test]
fn s1_a_durable_delete_leaves_both_watermark_files_at_the_deleted_id() {
    // Creates exchange the watermark with its twin and sync neither, so after a power cut
    // the name may carry either file's last synced content. A durable delete must leave both
    // covering the deleted id; the next create then writes only the one it exchanges in.
    let f = Fixture::durable();
    let read = |name: &str| std::fs::read_to_string(f.folder().join(name)).unwrap();
    for s in ["a", "b", "c"] {
        f.create(json!({"subject": s}));
    }
    assert_eq!(
        (read(HIGHWATERMARK_NAME), read(HIGHWATERMARK_SCRATCH_NAME)),
        ("3\n".into(), "2\n".into())
    );
    assert_eq!(
        f.call(json!({"op": "delete", "list": "l", "id": "3"})),
        Response::Done
    );
    assert_eq!(
        (read(HIGHWATERMARK_NAME), read(HIGHWATERMARK_SCRATCH_NAME)),
        ("3\n".into(), "3\n".into())
    );
    assert_eq!(f.create(json!({"subject": "d"})).id, TaskId(4));
    assert_eq!(
        (read(HIGHWATERMARK_NAME), read(HIGHWATERMARK_SCRATCH_NAME)),
        ("4\n".into(), "3\n".into())
    );
}

#[test]
fn s1_a_durable_delete_of_a_task_above_the_watermark_raises_both_files_and_follows_no_link() {
    let f = Fixture::durable();
    f.create(json!({"subject": "a"}));
    // Another program wrote task 7 without raising the watermark, and a link sits where the
    // twin goes.
    let mut seven = f.get(1).to_json();
    seven["id"] = json!("7");
    std::fs::write(f.folder().join("7.json"), seven.to_string()).unwrap();
    let outside = f.dir.path().join("outside");
    std::fs::write(&outside, b"keep").unwrap();
    let twin = f.folder().join(HIGHWATERMARK_SCRATCH_NAME);
    std::fs::remove_file(&twin).ok();
    std::os::unix::fs::symlink(&outside, &twin).unwrap();
    assert_eq!(
        f.call(json!({"op": "delete", "list": "l", "id": "7"})),
        Response::Done
    );
    assert_eq!(std::fs::read(&outside).unwrap(), b"keep");
    assert!(!std::fs::symlink_metadata(&twin).unwrap().is_symlink());
    for name in [HIGHWATERMARK_NAME, HIGHWATERMARK_SCRATCH_NAME] {
        assert_eq!(
            std::fs::read_to_string(f.folder().join(name)).unwrap(),
            "7\n",
            "{name}"
        );
    }
    assert_eq!(f.create(json!({"subject": "b"})).id, TaskId(8));
}

#[test]
fn s1_a_watermark_cut_short_by_a_power_cut_still_counts() {
    // A watermark that grew from 9 to 10 when the power went: its new length reached the
    // disk, its new bytes did not. It reads as the old number and a zero byte, and the old
    // number is still a floor for new ids (falling back to the highest task would hand out
    // 1 again here, where tasks 1 to 9 were deleted).
    let f = Fixture::durable();
    std::fs::create_dir_all(f.folder()).unwrap();
    std::fs::write(f.folder().join(HIGHWATERMARK_NAME), b"9\n\0").unwrap();
    assert_eq!(f.create(json!({"subject": "a"})).id, TaskId(10));
}

#[test]
fn s2_create_checks_the_subject_and_field_types_and_starts_pending() {
    let f = Fixture::new();
    for bad in [
        json!({}),
        json!({"subject": ""}),
        json!({"subject": "x".repeat(201)}),
        json!({"subject": 3}),
        json!({"subject": "a", "status": "completed"}),
        json!({"subject": "a", "metadata": [1]}),
        json!({"subject": "a", "blockedBy": [1]}),
    ] {
        assert_eq!(
            f.kind(json!({"op": "create", "list": "l", "task": bad})),
            ErrorKind::Invalid,
            "{bad}"
        );
    }
    let t = f.create(json!({"subject": "é".repeat(200), "owner": null, "activeForm": "doing"}));
    assert_eq!(t.status, Status::Pending);
    assert_eq!(t.owner, None);
    assert_eq!(t.active_form.as_deref(), Some("doing"));
    assert_eq!(t.description, "");
}

#[test]
fn s3_an_unknown_status_is_invalid_but_only_after_the_task_is_found() {
    let f = Fixture::new();
    f.create(json!({"subject": "a"}));
    assert_eq!(
        f.update_kind(1, json!({"status": "done"})),
        Some(ErrorKind::Invalid)
    );
    // Order of checks: the task must exist before the change is judged.
    assert_eq!(
        f.update_kind(9, json!({"status": "done"})),
        Some(ErrorKind::NotFound)
    );
    assert_eq!(f.get(1).status, Status::Pending);
}

#[test]
fn s4_allowed_transitions_succeed_and_completed_is_final() {
    let f = Fixture::new();
    f.create(json!({"subject": "a"}));
    for s in [
        "in_progress",
        "pending",
        "pending",
        "completed",
        "completed",
    ] {
        assert!(f.update(1, json!({"status": s})).is_ok(), "to {s}");
    }
    for s in ["pending", "in_progress"] {
        assert_eq!(
            f.update_kind(1, json!({"status": s})),
            Some(ErrorKind::Transition)
        );
    }
    assert_eq!(f.get(1).status, Status::Completed);
}

#[test]
fn s5_a_task_starts_only_when_every_blocker_is_completed() {
    let f = Fixture::new();
    f.create(json!({"subject": "a"}));
    f.create(json!({"subject": "b"}));
    f.create(json!({"subject": "c", "blockedBy": ["1", "2"]}));
    assert_eq!(
        f.update_kind(3, json!({"status": "in_progress"})),
        Some(ErrorKind::Blocked)
    );
    f.update(1, json!({"status": "completed"}));
    assert_eq!(
        f.update_kind(3, json!({"status": "completed"})),
        Some(ErrorKind::Blocked)
    );
    f.update(2, json!({"status": "completed"}));
    assert!(f.update(3, json!({"status": "in_progress"})).is_ok());
}

#[test]
fn s5_a_completed_task_never_gains_an_unfinished_blocker() {
    let f = Fixture::new();
    f.create(json!({"subject": "a"}));
    f.create(json!({"subject": "b"}));
    f.update(1, json!({"status": "completed"}));
    assert_eq!(
        f.update_kind(1, json!({"addBlockedBy": ["2"]})),
        Some(ErrorKind::Blocked)
    );
    assert_eq!(
        f.update_kind(2, json!({"addBlocks": ["1"]})),
        Some(ErrorKind::Blocked)
    );
    f.update(2, json!({"status": "completed"}));
    assert!(f.update(1, json!({"addBlockedBy": ["2"]})).is_ok());
}

#[test]
fn s5_a_blocker_that_does_not_exist_does_not_block() {
    let f = Fixture::new();
    f.create(json!({"subject": "a"}));
    // Another program wrote a task naming a blocker that is not there.
    std::fs::write(
        f.folder().join("5.json"),
        json!({"id": "5", "subject": "x", "status": "pending", "blockedBy": ["9"]}).to_string(),
    )
    .unwrap();
    assert!(f.update(5, json!({"status": "completed"})).is_ok());
}

#[test]
fn s6_edges_must_name_tasks_of_the_same_list() {
    let f = Fixture::new();
    f.create(json!({"subject": "a"}));
    f.ok(json!({"op": "create", "list": "other", "task": {"subject": "x"}}));
    f.ok(json!({"op": "create", "list": "other", "task": {"subject": "y"}}));
    assert_eq!(
        f.update_kind(1, json!({"addBlocks": ["2"]})),
        Some(ErrorKind::Dangling)
    );
    assert_eq!(
        f.kind(json!({"op": "create", "list": "l", "task": {"subject": "b", "blockedBy": ["7"]}})),
        ErrorKind::Dangling
    );
    // A failed create uses up no id.
    assert_eq!(f.create(json!({"subject": "b"})).id, TaskId(2));
}

#[test]
fn s6_a_create_naming_the_id_it_would_get_is_dangling() {
    let f = Fixture::new();
    assert_eq!(
        f.kind(json!({"op": "create", "list": "l", "task": {"subject": "a", "blockedBy": ["1"]}})),
        ErrorKind::Dangling
    );
    f.create(json!({"subject": "a"}));
    assert_eq!(
        f.kind(json!({"op": "create", "list": "l", "task": {"subject": "b", "blocks": ["2"]}})),
        ErrorKind::Dangling
    );
}

#[test]
fn s6_s7_a_create_checks_its_edges_in_request_order_blocked_by_first() {
    // Issue 11.4: with task 1 in the list, the create below would get id 2. `blockedBy`
    // ["1"] is fine; then `blocks` in the order given: "3" does not exist, which decides the
    // answer (`dangling`) before "1", which would close a cycle, is looked at.
    let f = Fixture::new();
    f.create(json!({"subject": "a"}));
    let before = f.snapshot();
    assert_eq!(
        f.kind(json!({"op": "create", "list": "l",
            "task": {"subject": "b", "blockedBy": ["1"], "blocks": ["3", "1"]}})),
        ErrorKind::Dangling
    );
    // The same ids the other way round: "1" closes the cycle first.
    assert_eq!(
        f.kind(json!({"op": "create", "list": "l",
            "task": {"subject": "b", "blockedBy": ["1"], "blocks": ["1", "3"]}})),
        ErrorKind::Cycle
    );
    // `blockedBy` is checked before `blocks`: a dangling blocker wins over a cycle named in
    // `blocks`.
    assert_eq!(
        f.kind(json!({"op": "create", "list": "l",
            "task": {"subject": "b", "blockedBy": ["1", "9"], "blocks": ["1"]}})),
        ErrorKind::Dangling
    );
    assert_eq!(f.snapshot(), before);
    assert_eq!(f.create(json!({"subject": "b"})).id, TaskId(2));
}

#[test]
fn s7_self_edges_and_cycles_are_refused() {
    let f = Fixture::new();
    for s in ["a", "b", "c"] {
        f.create(json!({"subject": s}));
    }
    assert_eq!(
        f.update_kind(1, json!({"addBlocks": ["1"]})),
        Some(ErrorKind::Cycle)
    );
    f.update(1, json!({"addBlocks": ["2"]}));
    f.update(2, json!({"addBlocks": ["3"]}));
    assert_eq!(
        f.update_kind(3, json!({"addBlocks": ["1"]})),
        Some(ErrorKind::Cycle)
    );
    assert_eq!(
        f.update_kind(1, json!({"addBlockedBy": ["3"]})),
        Some(ErrorKind::Cycle)
    );
    let before = f.snapshot();
    assert_eq!(
        f.kind(json!({"op": "create", "list": "l",
            "task": {"subject": "d", "blockedBy": ["3"], "blocks": ["1"]}})),
        ErrorKind::Cycle
    );
    assert_eq!(f.snapshot(), before);
}

#[test]
fn s7_a_cycle_recorded_on_one_side_by_another_writer_is_still_found() {
    let f = Fixture::new();
    f.create(json!({"subject": "a"}));
    // Task 2 says it waits on 1, but 1's `blocks` does not say so (written by another tool).
    std::fs::write(
        f.folder().join("2.json"),
        json!({"id": "2", "subject": "b", "status": "pending", "blockedBy": ["1"]}).to_string(),
    )
    .unwrap();
    assert_eq!(
        f.update_kind(2, json!({"addBlocks": ["1"]})),
        Some(ErrorKind::Cycle)
    );
    assert_eq!(
        f.update_kind(1, json!({"addBlockedBy": ["2"]})),
        Some(ErrorKind::Cycle)
    );
}

#[test]
fn s8_an_edge_added_or_removed_from_either_side_changes_both_tasks() {
    let f = Fixture::new();
    f.create(json!({"subject": "a"}));
    f.create(json!({"subject": "b"}));
    f.update(2, json!({"addBlockedBy": ["1"]}));
    assert_eq!(ids(&f.get(1).blocks), [2]);
    assert_eq!(ids(&f.get(2).blocked_by), [1]);
    f.update(1, json!({"removeBlocks": ["2"]}));
    assert!(f.get(1).blocks.is_empty() && f.get(2).blocked_by.is_empty());
    let c = f.create(json!({"subject": "c", "blocks": ["1"], "blockedBy": ["2"]}));
    assert_eq!((ids(&c.blocks), ids(&c.blocked_by)), (vec![1], vec![2]));
    assert_eq!(ids(&f.get(1).blocked_by), [3]);
    assert_eq!(ids(&f.get(2).blocks), [3]);
    // Removing an edge that is not there changes nothing and succeeds.
    let before = f.snapshot();
    assert!(f.update(1, json!({"removeBlockedBy": ["2"]})).is_ok());
    assert_eq!(f.snapshot(), before);
}

#[test]
fn s9_completing_a_task_rewrites_no_other_task() {
    let f = Fixture::new();
    f.create(json!({"subject": "a"}));
    f.create(json!({"subject": "b", "blockedBy": ["1"]}));
    let other = std::fs::read(f.folder().join("2.json")).unwrap();
    f.update(1, json!({"status": "completed"}));
    assert_eq!(std::fs::read(f.folder().join("2.json")).unwrap(), other);
    assert_eq!(ids(&f.get(2).blocked_by), [1]);
}

#[test]
fn s10_delete_removes_the_id_from_every_neighbour() {
    let f = Fixture::new();
    for s in ["a", "b", "c"] {
        f.create(json!({"subject": s}));
    }
    f.update(2, json!({"addBlockedBy": ["1"], "addBlocks": ["3"]}));
    assert_eq!(
        f.call(json!({"op": "delete", "list": "l", "id": "2"})),
        Response::Done
    );
    let (tasks, _) = f.list();
    assert_eq!(tasks.len(), 2);
    assert!(
        tasks
            .iter()
            .all(|t| t.blocks.is_empty() && t.blocked_by.is_empty())
    );
    assert_eq!(
        f.kind(json!({"op": "delete", "list": "l", "id": "2"})),
        ErrorKind::NotFound
    );
}

#[test]
fn s10_deleting_a_corrupt_task_removes_its_file() {
    let f = Fixture::new();
    f.create(json!({"subject": "a"}));
    std::fs::write(f.folder().join("1.json"), b"{ half").unwrap();
    assert_eq!(
        f.call(json!({"op": "delete", "list": "l", "id": "1"})),
        Response::Done
    );
    assert!(!f.folder().join("1.json").exists());
}

#[test]
fn s11_a_patch_is_applied_all_or_nothing() {
    let f = Fixture::new();
    f.create(json!({"subject": "a", "metadata": {"k": 1}}));
    let before = f.snapshot();
    // The subject and metadata parts pass; the dangling edge at the end fails the whole patch.
    assert_eq!(
        f.update_kind(
            1,
            json!({"subject": "new", "metadata": {"k": null}, "addBlocks": ["9"]})
        ),
        Some(ErrorKind::Dangling)
    );
    assert_eq!(f.snapshot(), before);
    assert_eq!(
        f.update_kind(1, json!({"bogus": 1})),
        Some(ErrorKind::Invalid)
    );
    assert_eq!(
        f.update_kind(1, json!({"subject": null})),
        Some(ErrorKind::Invalid)
    );
    assert_eq!(f.update(1, json!({})), Response::Task(f.get(1)));
    assert_eq!(f.snapshot(), before);
}

#[test]
fn s12_metadata_is_kept_exactly_and_merged_key_by_key() {
    let f = Fixture::new();
    let md = json!({"int": 9007199254740992u64, "neg": -3, "float": 0.1, "s": "", "u": "é☃\u{1F600}",
        "nested": {"a": [1, {"b": null}]}});
    f.create(json!({"subject": "a", "metadata": md}));
    assert_eq!(Value::Object(f.get(1).metadata.unwrap()), md);
    f.update(1, json!({"metadata": {"s": null, "new": true}}));
    let got = Value::Object(f.get(1).metadata.unwrap());
    assert!(got.get("s").is_none() && got["new"] == json!(true) && got["int"] == md["int"]);
    f.update(1, json!({"metadata": null}));
    assert_eq!(f.get(1).metadata, None);
}

#[test]
fn s12_metadata_of_64_kib_and_32_levels_is_accepted() {
    let f = Fixture::new();
    let big = json!({"blob": "x".repeat(64 * 1024 - 20)});
    let mut deep = json!(1);
    for _ in 0..31 {
        deep = json!({ "d": deep });
    }
    let t = f.create(json!({"subject": "a", "metadata": big}));
    assert_eq!(Value::Object(t.metadata.unwrap()), big);
    let t = f.create(json!({"subject": "b", "metadata": deep}));
    assert_eq!(Value::Object(f.get(t.id.get()).metadata.unwrap()), deep);
    // Far beyond the limits is invalid, checked before the task is looked up.
    let huge = json!({"blob": "x".repeat(1024 * 1024)});
    assert_eq!(
        f.update_kind(9, json!({"metadata": huge})),
        Some(ErrorKind::Invalid)
    );
}

#[test]
fn s13_lists_are_isolated_and_names_and_ids_are_checked() {
    let f = Fixture::new();
    f.create(json!({"subject": "a"}));
    let other = f.ok(json!({"op": "create", "list": "m", "task": {"subject": "b"}}));
    assert_eq!(other.id, TaskId(1));
    assert_eq!(f.list().0.len(), 1);
    for bad in ["", "..", "a/b", ".x", "a b", &"x".repeat(65)] {
        assert_eq!(
            f.kind(json!({"op": "list", "list": bad})),
            ErrorKind::Invalid,
            "{bad:?}"
        );
    }
    for bad in ["01", "-1", "a", "1.0"] {
        assert_eq!(
            f.kind(json!({"op": "get", "list": "l", "id": bad})),
            ErrorKind::Invalid
        );
    }
}

#[test]
fn s13_reads_of_a_list_never_written_create_nothing() {
    let f = Fixture::new();
    assert_eq!(
        f.kind(json!({"op": "get", "list": "l", "id": "1"})),
        ErrorKind::NotFound
    );
    assert_eq!(
        f.update_kind(1, json!({"subject": "x"})),
        Some(ErrorKind::NotFound)
    );
    assert_eq!(
        f.kind(json!({"op": "claim", "list": "l", "id": "1", "owner": "w"})),
        ErrorKind::NotFound
    );
    assert_eq!(f.list(), (vec![], vec![]));
    assert!(!f.folder().exists());
}

#[test]
fn s14_a_new_store_on_the_root_sees_the_acknowledged_state() {
    let mut f = Fixture::new();
    f.create(json!({"subject": "a", "metadata": {"k": [1, 2]}}));
    f.create(json!({"subject": "b", "blockedBy": ["1"]}));
    f.update(1, json!({"status": "completed", "owner": "w"}));
    let before = f.list();
    f.reopen();
    assert_eq!(f.list(), before);
}

#[test]
fn s15_list_skips_stray_names_and_names_unreadable_task_files() {
    let f = Fixture::new();
    f.create(json!({"subject": "a"}));
    f.create(json!({"subject": "b"}));
    let dir = f.folder();
    for stray in [
        "1.json.bak",
        "abc.json",
        "07.json",
        ".hidden.json",
        "notes.txt",
    ] {
        std::fs::write(dir.join(stray), b"garbage").unwrap();
    }
    std::fs::create_dir(dir.join("3.json")).unwrap();
    std::fs::write(dir.join("4.json"), b"{\"id\": \"4\", \"subj").unwrap();
    std::fs::write(
        dir.join("5.json"),
        json!({"id": "6", "subject": "s", "status": "pending"}).to_string(),
    )
    .unwrap();
    std::fs::write(
        dir.join("7.json"),
        json!({"id": "7", "subject": "s", "status": "done"}).to_string(),
    )
    .unwrap();
    let (tasks, corrupt) = f.list();
    assert_eq!(tasks.iter().map(|t| t.id.get()).collect::<Vec<_>>(), [1, 2]);
    assert_eq!(corrupt, ["4.json", "5.json", "7.json"]);
    assert_eq!(
        f.kind(json!({"op": "get", "list": "l", "id": "4"})),
        ErrorKind::Corrupt
    );
    assert_eq!(
        f.update_kind(7, json!({"subject": "x"})),
        Some(ErrorKind::Corrupt)
    );
    // An edge to an unreadable task is refused as corrupt, not accepted blindly.
    assert_eq!(
        f.update_kind(1, json!({"addBlocks": ["4"]})),
        Some(ErrorKind::Corrupt)
    );
}

#[test]
fn s16_task_files_of_other_writers_are_read_and_their_unknown_fields_survive() {
    let f = Fixture::new();
    f.create(json!({"subject": "a"}));
    std::fs::write(
        f.folder().join("8.json"),
        json!({"id": "8", "subject": "theirs", "status": "pending", "x-color": "red",
            "x-nested": {"k": [1]}})
        .to_string(),
    )
    .unwrap();
    assert_eq!(f.get(8).subject, "theirs");
    f.update(8, json!({"subject": "ours", "addBlockedBy": ["1"]}));
    let on_disk: Value =
        serde_json::from_slice(&std::fs::read(f.folder().join("8.json")).unwrap()).unwrap();
    assert_eq!(on_disk["x-color"], json!("red"));
    assert_eq!(on_disk["x-nested"], json!({"k": [1]}));
    assert_eq!(on_disk["subject"], json!("ours"));
    // Ids come from the watermark (S1); the foreign task only has to be stepped past when
    // the watermark reaches it.
    assert_eq!(f.create(json!({"subject": "c"})).id, TaskId(2));
}

#[test]
fn s18_operations_leave_no_temporary_file_or_journal_behind() {
    let f = Fixture::new();
    for s in ["a", "b", "c"] {
        f.create(json!({"subject": s}));
    }
    f.update(2, json!({"addBlockedBy": ["1"], "addBlocks": ["3"]}));
    f.call(json!({"op": "delete", "list": "l", "id": "2"}));
    let names: Vec<String> = f.snapshot().into_iter().map(|(n, _)| n).collect();
    // The watermark's scratch file stays (without fsync the two are exchanged on each
    // create); it is a whole number like the watermark, one create older.
    assert_eq!(
        names,
        [
            ".highwatermark",
            HIGHWATERMARK_SCRATCH_NAME,
            "1.json",
            "3.json"
        ]
    );
    assert_eq!(
        std::fs::read_to_string(f.folder().join(HIGHWATERMARK_SCRATCH_NAME)).unwrap(),
        "2\n"
    );
}

#[test]
fn s18_a_left_temporary_file_is_removed_and_a_left_journal_replayed_before_anything_else() {
    let f = Fixture::new();
    f.create(json!({"subject": "a"}));
    f.create(json!({"subject": "b"}));
    let dir = f.folder();
    std::fs::write(dir.join(TMP_NAME), b"{\"half").unwrap();
    // What a process killed between writing the journal and applying it leaves behind: the
    // edge 1 -> 2 decided, neither task rewritten yet.
    let mut one = f.get(1);
    one.blocks.insert(TaskId(2));
    let mut two = f.get(2);
    two.blocked_by.insert(TaskId(1));
    let content = |t: &Task| serde_json::to_string_pretty(&t.to_json()).unwrap();
    std::fs::write(
        dir.join(JOURNAL_NAME),
        json!({"version": 1, "entries": [
            {"name": "1.json", "content": content(&one)},
            {"name": "2.json", "content": content(&two)},
        ]})
        .to_string(),
    )
    .unwrap();
    // Even a read sees the repaired state.
    assert_eq!(ids(&f.get(2).blocked_by), [1]);
    assert_eq!(ids(&f.get(1).blocks), [2]);
    assert!(!dir.join(TMP_NAME).exists() && !dir.join(JOURNAL_NAME).exists());
}

#[test]
fn s20_claim_takes_a_ready_unowned_pending_task_once() {
    let f = Fixture::new();
    f.create(json!({"subject": "a"}));
    f.create(json!({"subject": "b", "blockedBy": ["1"]}));
    f.create(json!({"subject": "c", "owner": "someone"}));
    let claim = |id: &str, owner: &str| {
        f.call(json!({"op": "claim", "list": "l", "id": id, "owner": owner}))
    };
    let Response::Task(t) = claim("1", "w1") else {
        panic!()
    };
    assert_eq!(
        (t.status, t.owner.as_deref()),
        (Status::InProgress, Some("w1"))
    );
    assert_eq!(claim("1", "w2").error_kind(), Some(ErrorKind::Conflict));
    assert_eq!(claim("2", "w2").error_kind(), Some(ErrorKind::Blocked));
    assert_eq!(claim("3", "w2").error_kind(), Some(ErrorKind::Conflict));
    assert_eq!(claim("9", "w2").error_kind(), Some(ErrorKind::NotFound));
    f.update(1, json!({"status": "completed"}));
    assert!(claim("2", "w2").is_ok());
    assert_eq!(f.get(1).owner.as_deref(), Some("w1"));
}
