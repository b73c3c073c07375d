//! `taskproof check` on folders: fixture folders in both layouts, one per finding, built here;
//! each is checked, dry-run (which must change nothing), fixed and checked again.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::{Value, json};

use super::{BOTH, Layout, file, id, put, snapshot, task};
use crate::util::{taskproof, tempdir, write};

/// Runs `check DIR --json ARGS` and returns the exit status and the document.
fn check(dir: &Path, args: &[&str]) -> (i32, Value) {
    let out = taskproof()
        .arg("check")
        .arg(dir)
        .arg("--json")
        .args(args)
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap(), doc)
}

type Triple = (String, String, String);

fn findings(doc: &Value) -> BTreeSet<Triple> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["rule"].as_str().unwrap().to_string(),
                f["kind"].as_str().unwrap().to_string(),
                f["file"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn t(rule: &str, kind: &str, file: impl Into<String>) -> Triple {
    (rule.to_string(), kind.to_string(), file.into())
}

/// What `--fix` should leave of a fixture's findings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AfterFix {
    /// Every finding repaired: the list checks clean.
    Clean,
    /// Nothing safe to repair: the same findings, and the folder untouched.
    Unchanged,
}

/// Builds the fixture with `build`, then: check finds exactly `expected`; a dry run changes
/// nothing; a fix does what `after` says; a second fix changes nothing more.
fn assert_case(l: Layout, build: impl Fn(&Path, Layout), expected: &[Triple], after: AfterFix) {
    let tmp = tempdir();
    let dir = tmp.path().join("list");
    std::fs::create_dir(&dir).unwrap();
    build(&dir, l);
    let layout = if l == Layout::Cc {
        "claude-code"
    } else {
        "s07"
    };

    let (code, doc) = check(&dir, &["--layout", layout]);
    let want: BTreeSet<Triple> = expected.iter().cloned().collect();
    assert_eq!(findings(&doc), want, "{l:?}: {doc:#}");
    assert_eq!(code, 1, "{l:?}: findings exit 1");
    for f in doc["findings"].as_array().unwrap() {
        assert_eq!(f["list"], "list");
        assert!(!f["message"].as_str().unwrap().is_empty());
    }

    let before = snapshot(&dir);
    let (code, dry) = check(&dir, &["--layout", layout, "--dry-run"]);
    assert_eq!(code, 1);
    assert_eq!(
        snapshot(&dir),
        before,
        "{l:?}: --dry-run changed the folder"
    );
    let planned = dry["changes"].as_array().unwrap().len();
    assert_eq!(planned > 0, after == AfterFix::Clean, "{l:?}: {dry:#}");

    let (code, fixed) = check(&dir, &["--layout", layout, "--fix"]);
    match after {
        AfterFix::Clean => {
            assert_eq!(code, 0, "{l:?}: {fixed:#}");
            assert!(
                fixed["changes"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|c| c["done"] == true)
            );
            let (code, again) = check(&dir, &["--layout", layout]);
            assert_eq!((code, findings(&again)), (0, BTreeSet::new()), "{l:?}");
        }
        AfterFix::Unchanged => {
            assert_eq!(code, 1);
            assert_eq!(findings(&fixed), want, "{l:?}");
            assert_eq!(
                snapshot(&dir),
                before,
                "{l:?}: nothing to repair, nothing written"
            );
        }
    }
    let settled = snapshot(&dir);
    let (_, second) = check(&dir, &["--layout", layout, "--fix"]);
    assert_eq!(
        second["changes"],
        json!([]),
        "{l:?}: a second fix changed more"
    );
    assert_eq!(snapshot(&dir), settled);
}

#[test]
fn a_clean_list_in_either_layout_passes() {
    for l in BOTH {
        let tmp = tempdir();
        let dir = tmp.path().join("clean");
        put(&dir, l, 1, "completed", &[2], &[]);
        put(&dir, l, 2, "in_progress", &[3], &[1]);
        put(&dir, l, 3, "pending", &[], &[2]);
        if l == Layout::Cc {
            write(&dir, ".highwatermark", "4\n");
        }
        // The store's own files and stray names are not tasks and not findings (S15).
        write(&dir, ".lock", "");
        write(&dir, "notes.json.bak", "{");
        std::fs::create_dir(dir.join("9.json")).unwrap();
        let (code, doc) = check(&dir, &[]);
        assert_eq!(code, 0, "{doc:#}");
        assert_eq!(doc["format_version"], 1);
        assert_eq!(doc["mode"], "check");
        assert_eq!(doc["tasks"], 3);
        assert_eq!(doc["findings"], json!([]));
        let list = &doc["lists"][0];
        assert_eq!(list["name"], "clean");
        assert_eq!(list["tasks"], 3);
        let detected = if l == Layout::Cc {
            "claude-code"
        } else {
            "s07"
        };
        assert_eq!(list["layout"], detected, "the layout is detected");
    }
}

#[test]
fn malformed_json_is_reported() {
    for l in BOTH {
        assert_case(
            l,
            |d, l| {
                write(d, &file(l, 1), "{\"id\": ");
                put(d, l, 2, "pending", &[], &[]);
            },
            &[t("S15", "malformed-json", file(l, 1))],
            AfterFix::Unchanged,
        );
    }
}

#[test]
fn a_missing_or_mistyped_field_is_a_schema_violation() {
    for l in BOTH {
        assert_case(
            l,
            |d, l| {
                write(
                    d,
                    &file(l, 1),
                    &json!({"id": id(l, 1), "status": "pending"}).to_string(),
                );
                write(
                    d,
                    &file(l, 2),
                    &json!({"id": id(l, 2), "subject": "s", "status": "pending", "blocks": "3"})
                        .to_string(),
                );
            },
            &[
                t("S15", "schema", file(l, 1)),
                t("S15", "schema", file(l, 2)),
            ],
            AfterFix::Unchanged,
        );
    }
}

#[test]
fn an_unknown_status_is_reported() {
    for l in BOTH {
        assert_case(
            l,
            |d, l| put(d, l, 1, "done", &[], &[]),
            &[t("S15", "unknown-status", file(l, 1))],
            AfterFix::Unchanged,
        );
    }
}

#[test]
fn an_id_that_does_not_match_its_file_name_is_reported() {
    for l in BOTH {
        assert_case(
            l,
            |d, l| write(d, &file(l, 1), &task(l, 2, "pending", &[], &[])),
            &[t("S15", "id-mismatch", file(l, 1))],
            AfterFix::Unchanged,
        );
    }
}

#[test]
fn duplicate_ids_are_reported() {
    // The s07 store hands out one id twice when two processes create at once.
    for l in BOTH {
        assert_case(
            l,
            |d, l| {
                put(d, l, 1, "pending", &[], &[]);
                write(d, &file(l, 2), &task(l, 1, "pending", &[], &[]));
            },
            &[
                t("S15", "id-mismatch", file(l, 2)),
                t("S1", "duplicate-id", file(l, 2)),
            ],
            AfterFix::Unchanged,
        );
    }
}

#[test]
fn a_cycle_is_reported_with_its_path_and_never_broken() {
    for l in BOTH {
        assert_case(
            l,
            |d, l| {
                put(d, l, 1, "pending", &[2], &[3]);
                put(d, l, 2, "pending", &[3], &[1]);
                put(d, l, 3, "pending", &[1], &[2]);
            },
            &[t("S7", "cycle", file(l, 1))],
            AfterFix::Unchanged,
        );
        let tmp = tempdir();
        put(tmp.path(), l, 1, "pending", &[2], &[2]);
        put(tmp.path(), l, 2, "pending", &[1], &[1]);
        let (_, doc) = check(tmp.path(), &[]);
        let msg = doc["findings"][0]["message"].as_str().unwrap();
        assert!(msg.contains("1 -> 2 -> 1"), "{msg}");
        // It names the edge whose removal would break the cycle.
        assert!(
            msg.contains(&format!("2 from blockedBy of {}", file(l, 1))),
            "{msg}"
        );
    }
}

#[test]
fn a_task_waiting_on_a_cycle_is_deadlocked() {
    for l in BOTH {
        assert_case(
            l,
            |d, l| {
                put(d, l, 1, "pending", &[2], &[2]);
                put(d, l, 2, "pending", &[1, 3], &[1]);
                put(d, l, 3, "pending", &[], &[2]);
            },
            &[
                t("S7", "cycle", file(l, 1)),
                t("S7", "deadlocked", file(l, 3)),
            ],
            AfterFix::Unchanged,
        );
    }
}

#[test]
fn a_dependency_on_a_task_never_assigned_is_dangling_and_dropped() {
    for l in BOTH {
        assert_case(
            l,
            |d, l| {
                put(d, l, 1, "pending", &[], &[9]);
                put(d, l, 2, "pending", &[], &[]);
            },
            &[t("S6", "dangling", file(l, 1))],
            AfterFix::Clean,
        );
    }
}

#[test]
fn a_reference_left_by_a_deleted_task_is_an_orphan_and_dropped() {
    for l in BOTH {
        assert_case(
            l,
            |d, l| {
                // Task 2 was assigned (task 3 exists), and is gone.
                put(d, l, 1, "pending", &[2], &[]);
                put(d, l, 3, "pending", &[], &[]);
            },
            &[t("S10", "orphan", file(l, 1))],
            AfterFix::Clean,
        );
    }
    // In the claude-code layout the high-watermark says what was assigned.
    assert_case(
        Layout::Cc,
        |d, l| {
            put(d, l, 1, "pending", &[], &[4]);
            write(d, ".highwatermark", "5\n");
        },
        &[t("S10", "orphan", "1.json")],
        AfterFix::Clean,
    );
}

#[test]
fn an_edge_recorded_on_one_side_is_mirrored() {
    for l in BOTH {
        assert_case(
            l,
            |d, l| {
                put(d, l, 1, "pending", &[2], &[]);
                put(d, l, 2, "pending", &[], &[]);
                put(d, l, 3, "pending", &[], &[2]);
            },
            &[
                t("S8", "half-edge", file(l, 2)),
                t("S8", "half-edge", file(l, 2)),
            ],
            AfterFix::Clean,
        );
    }
}

#[test]
fn a_completed_task_with_an_unfinished_blocker_is_reported() {
    for l in BOTH {
        assert_case(
            l,
            |d, l| {
                put(d, l, 1, "in_progress", &[2], &[]);
                put(d, l, 2, "completed", &[], &[1]);
            },
            &[t("S5", "completed-blocked", file(l, 2))],
            AfterFix::Unchanged,
        );
    }
}

#[test]
fn a_highwatermark_below_the_highest_id_is_raised() {
    assert_case(
        Layout::Cc,
        |d, l| {
            put(d, l, 1, "pending", &[], &[]);
            put(d, l, 7, "pending", &[], &[]);
            write(d, ".highwatermark", "3\n");
        },
        &[t("S1", "highwatermark", ".highwatermark")],
        AfterFix::Clean,
    );
    let tmp = tempdir();
    put(tmp.path(), Layout::Cc, 7, "pending", &[], &[]);
    write(tmp.path(), ".highwatermark", "3\n");
    check(tmp.path(), &["--fix"]);
    // As Claude Code writes it (and `--restore` too): the number alone.
    assert_eq!(
        std::fs::read_to_string(tmp.path().join(".highwatermark")).unwrap(),
        "7"
    );
}

#[test]
fn a_stale_temporary_file_is_removed() {
    for l in BOTH {
        assert_case(
            l,
            |d, l| {
                put(d, l, 1, "pending", &[], &[]);
                write(d, ".tmp", "{\"id\":");
            },
            &[t("S18", "stale-temp", ".tmp")],
            AfterFix::Clean,
        );
    }
}

#[test]
fn temporary_files_of_a_running_writer_are_left_alone() {
    let tmp = tempdir();
    put(tmp.path(), Layout::Cc, 1, "pending", &[], &[]);
    // The pid of this test process: alive, so its file may be mid-write.
    let live = format!(".tmp.{}.0", std::process::id());
    write(tmp.path(), &live, "{");
    // Other programs' names are not certainly temporary files of a store.
    write(tmp.path(), "1.json.tmp", "{");
    let (code, doc) = check(tmp.path(), &["--fix"]);
    assert_eq!((code, &doc["findings"]), (0, &json!([])), "{doc:#}");
    assert!(tmp.path().join(&live).exists());
    assert!(tmp.path().join("1.json.tmp").exists());
}

#[test]
fn an_abandoned_journal_is_replayed_before_anything_else_is_judged() {
    // A store died while mirroring the edge 1 -> 2: 1.json has it, the journal holds the
    // new 2.json. Replaying it completes the change, so no half-edge is left to "repair".
    let tmp = tempdir();
    put(tmp.path(), Layout::Cc, 1, "pending", &[2], &[]);
    put(tmp.path(), Layout::Cc, 2, "pending", &[], &[]);
    let journal = json!({"version": 1, "entries": [
        {"name": "2.json", "content": task(Layout::Cc, 2, "pending", &[], &[1])}
    ]});
    write(tmp.path(), ".journal", &journal.to_string());
    let (code, doc) = check(tmp.path(), &[]);
    assert_eq!(code, 1);
    assert_eq!(
        findings(&doc),
        [
            t("S8", "half-edge", "2.json"),
            t("S14", "interrupted-change", ".journal")
        ]
        .into()
    );
    let (code, doc) = check(tmp.path(), &["--fix"]);
    assert_eq!(code, 0, "{doc:#}");
    let changes: Vec<&str> = doc["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["change"].as_str().unwrap())
        .collect();
    assert_eq!(changes, ["replay the interrupted change in .journal"]);
    assert!(!tmp.path().join(".journal").exists());
}

#[test]
fn an_abandoned_journal_that_cannot_be_replayed_is_reported_and_kept() {
    let tmp = tempdir();
    put(tmp.path(), Layout::Cc, 1, "pending", &[], &[]);
    write(tmp.path(), ".journal", "not a journal");
    let (code, doc) = check(tmp.path(), &["--fix"]);
    assert_eq!(code, 1);
    assert_eq!(
        findings(&doc),
        [t("S14", "interrupted-change", ".journal")].into()
    );
    assert_eq!(doc["changes"][0]["done"], false, "{doc:#}");
    assert_eq!(
        std::fs::read_to_string(tmp.path().join(".journal")).unwrap(),
        "not a journal"
    );
}

#[test]
fn a_symbolic_link_is_reported_and_never_followed_or_changed() {
    for l in BOTH {
        let tmp = tempdir();
        let outside = tmp.path().join("outside.json");
        // What the link points to would be a valid task with a one-sided edge: if the audit
        // followed the link, --fix would "repair" the file outside.
        let target = task(l, 1, "pending", &[2], &[]);
        std::fs::write(&outside, &target).unwrap();
        let dir = tmp.path().join("list");
        put(&dir, l, 2, "pending", &[], &[]);
        std::os::unix::fs::symlink(&outside, dir.join(file(l, 1))).unwrap();
        let (code, doc) = check(&dir, &["--fix"]);
        assert_eq!(code, 1);
        assert_eq!(findings(&doc), [t("S17", "symlink", file(l, 1))].into());
        assert_eq!(doc["changes"], json!([]));
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), target);
        assert!(
            std::fs::symlink_metadata(dir.join(file(l, 1)))
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }
}

#[test]
fn a_list_whose_lock_is_a_link_is_not_fixed_and_keeps_its_findings() {
    let tmp = tempdir();
    let dir = tmp.path().join("list");
    put(&dir, Layout::Cc, 1, "pending", &[2], &[]);
    put(&dir, Layout::Cc, 2, "pending", &[], &[]);
    std::os::unix::fs::symlink(tmp.path().join("elsewhere"), dir.join(".lock")).unwrap();
    let before = snapshot(&dir);
    let (code, doc) = check(&dir, &["--fix"]);
    assert_eq!(code, 1);
    assert_eq!(
        findings(&doc),
        [t("S8", "half-edge", "2.json"), t("S17", "symlink", ".lock")].into()
    );
    assert_eq!(doc["changes"][0]["done"], false, "{doc:#}");
    assert_eq!(snapshot(&dir), before);
    assert!(!tmp.path().join("elsewhere").exists());
}

#[test]
fn a_linked_list_folder_is_reported_in_a_folder_of_lists() {
    let tmp = tempdir();
    let root = tmp.path().join("tasks");
    put(&root.join("real"), Layout::Cc, 1, "pending", &[], &[]);
    put(
        &tmp.path().join("elsewhere"),
        Layout::Cc,
        1,
        "pending",
        &[2],
        &[],
    );
    std::os::unix::fs::symlink(tmp.path().join("elsewhere"), root.join("linked")).unwrap();
    let (code, doc) = check(&root, &[]);
    assert_eq!(code, 1);
    assert_eq!(findings(&doc), [t("S17", "symlink", ".")].into());
    assert_eq!(doc["findings"][0]["list"], "linked");
    assert_eq!(doc["lists"].as_array().unwrap().len(), 1);
}

#[test]
fn every_list_under_the_claude_config_dir_is_checked_by_default() {
    let tmp = tempdir();
    put(
        &tmp.path().join("tasks/a"),
        Layout::Cc,
        1,
        "pending",
        &[],
        &[],
    );
    put(
        &tmp.path().join("tasks/b"),
        Layout::S07,
        1,
        "pending",
        &[],
        &[5],
    );
    let out = taskproof()
        .args(["check", "--json"])
        .env("CLAUDE_CONFIG_DIR", tmp.path())
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(doc["lists"].as_array().unwrap().len(), 2);
    assert_eq!(doc["lists"][1]["layout"], "s07");
    assert_eq!(doc["findings"][0]["list"], "b");
}

#[test]
fn a_missing_task_root_is_an_error_naming_where_it_looked_not_a_clean_result() {
    let empty = tempdir();
    let out = taskproof()
        .arg("check")
        .env("CLAUDE_CONFIG_DIR", empty.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let root = empty.path().join("tasks");
    assert!(
        stderr.contains(&format!("audit {}: no such folder", root.display())),
        "{stderr}"
    );
    assert!(!String::from_utf8(out.stdout).unwrap().contains("clean"));
    // A task root that exists but holds no list is clean, and the summary says where.
    std::fs::create_dir(&root).unwrap();
    let out = taskproof()
        .arg("check")
        .env("CLAUDE_CONFIG_DIR", empty.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        stdout,
        format!(
            "clean: 0 lists, 0 tasks in {}, no findings\n",
            root.display()
        )
    );
}

#[test]
fn an_unreadable_folder_is_named_once_in_the_error() {
    let tmp = tempdir();
    let a = tmp.path().join("a");
    std::os::unix::fs::symlink(tmp.path().join("b"), &a).unwrap();
    std::os::unix::fs::symlink(&a, tmp.path().join("b")).unwrap();
    let out = taskproof().arg("check").arg(&a).output().unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(
        stderr,
        format!(
            "taskproof: read {}: Too many levels of symbolic links (os error 40)\n",
            a.display()
        )
    );
}

#[test]
fn usage_errors_exit_2() {
    let tmp = tempdir();
    write(tmp.path(), "a-file", "");
    let cases: [&[&str]; 4] = [
        &["check", "/nonexistent/taskproof/folder"],
        &["check", "a-file"],
        &["check", "--layout", "opaque"],
        &["check", "--stdin", "--fix"],
    ];
    for args in cases {
        let out = taskproof()
            .args(args)
            .current_dir(tmp.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(!out.stderr.is_empty());
    }
}

/// An exclusive flock on a file, held by another process (util-linux `flock`) until
/// [`LockHolder::release`] has seen that process exit.
///
/// The lock must not be taken in this test process: flock belongs to the open file
/// description, and every child another test thread forks shares that description until it
/// execs. Such a child could keep the lock after this test dropped it, for as long as the
/// machine takes to schedule its exec, and the check that follows would read the list as
/// busy. A lock held by a process of its own is released exactly when that process is gone.
struct LockHolder(std::process::Child);

impl LockHolder {
    fn hold(file: &Path) -> LockHolder {
        use std::io::BufRead;
        use std::process::{Command, Stdio};
        let mut child = Command::new("flock")
            .arg("--exclusive")
            .arg(file)
            .args(["sh", "-c", "echo held; exec cat"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start flock (util-linux)");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("read from flock");
        assert_eq!(line, "held\n", "flock did not take the lock");
        LockHolder(child)
    }

    /// Ends the holder (closing its stdin ends `cat`) and waits until it has exited, which
    /// closes the last descriptor holding the lock.
    fn release(mut self) {
        drop(self.0.stdin.take());
        let status = self.0.wait().expect("wait for flock");
        assert!(status.success(), "flock: {status}");
    }
}

#[test]
#[cfg_attr(not(taskproof_has_flock), ignore = "needs flock on PATH")]
fn a_list_locked_by_a_writer_is_read_but_its_temporary_files_are_not_judged() {
    crate::util::require(&[crate::util::Tool::Flock]);
    let tmp = tempdir();
    put(tmp.path(), Layout::Cc, 1, "pending", &[], &[]);
    write(tmp.path(), ".tmp", "{");
    let held = LockHolder::hold(&tmp.path().join(taskproof_store::LOCK_NAME));
    let (code, doc) = check(tmp.path(), &[]);
    assert_eq!((code, &doc["findings"]), (0, &json!([])), "{doc:#}");
    assert_eq!(doc["lists"][0]["busy"], true);
    held.release();
    let (code, doc) = check(tmp.path(), &[]);
    assert_eq!(code, 1);
    assert_eq!(findings(&doc), [t("S18", "stale-temp", ".tmp")].into());
}

#[test]
fn colour_only_when_asked_for_or_on_a_terminal() {
    let tmp = tempdir();
    put(tmp.path(), Layout::Cc, 1, "pending", &[], &[9]);
    let text = |args: &[&str]| {
        let out = taskproof()
            .arg("check")
            .arg(tmp.path())
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        String::from_utf8(out.stdout).unwrap()
    };
    let piped = text(&[]);
    assert!(!piped.contains('\x1b'), "{piped}");
    assert!(piped.contains("S6 dangling 1.json"), "{piped}");
    assert!(text(&["--color", "always"]).contains("\x1b["));
    assert!(!text(&["--color", "never"]).contains('\x1b'));
}

/// `check --json` prints through the event stream's JSON reporter (`taskproof_reporters::json`); this pins
/// the bytes it printed when the command wrote them itself: the document pretty-printed with
/// two-space indents, its fields in report order, and one newline after it.
#[test]
fn check_json_prints_the_pretty_document_in_report_order_and_one_newline() {
    let tmp = tempdir();
    put(tmp.path(), Layout::Cc, 1, "completed", &[], &[2]);
    put(tmp.path(), Layout::Cc, 2, "pending", &[1], &[]);
    let out = taskproof()
        .arg("check")
        .arg(tmp.path())
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        text,
        format!("{}\n", serde_json::to_string_pretty(&doc).unwrap())
    );
    assert!(
        text.starts_with("{\n  \"format_version\": 1,\n  \"mode\": \"check\",\n  \"root\": "),
        "{text}"
    );
    let keys: Vec<&str> = doc
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "format_version",
            "mode",
            "root",
            "lists",
            "tasks",
            "findings",
            "changes"
        ]
    );
    assert_eq!(doc["findings"][0]["kind"], "completed-blocked");
}

/// A JSON report that cannot be written is an error of the command (exit 2, saying why),
/// not a clean check: only a closed pipe (`| head`) is let go.
#[test]
fn a_json_report_that_cannot_be_written_is_a_usage_error() {
    let dir = tempdir();
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    let out = taskproof()
        .args(["check", "--json"])
        .arg(dir.path())
        .stdout(full)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("taskproof check: failed to write to the terminal: No space left on device"),
        "{err}"
    );
}
