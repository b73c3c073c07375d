//! The journal's unit tests: appends, reads, torn versions, compaction and the limits.

use super::*;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

fn setup() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join(JOURNAL_DIR).join("l.jsonl");
    (tmp, path)
}

fn try_run(
    path: &Path,
    present: &[(&str, &[u8])],
    deleting: &[&str],
    at: u64,
) -> Result<usize, JournalError> {
    let files: Vec<(String, Vec<u8>)> = present
        .iter()
        .map(|(n, b)| (n.to_string(), b.to_vec()))
        .collect();
    let seen = Observed {
        files: &files,
        unreadable: &[],
        deleting: deleting.iter().map(|d| d.to_string()).collect(),
        torn: &[],
        session: Some("0675e12e-0000-4000-8000-000000000001"),
    };
    record(lock(path)?, "l", Path::new("/t/l"), &seen, at)
}

/// Records one hook run that read `present` and was asked to delete `deleting`.
fn run(path: &Path, present: &[(&str, &[u8])], deleting: &[&str], at: u64) -> usize {
    try_run(path, present, deleting, at).unwrap()
}

/// Records one hook run that read `present`, those in `torn` not whole.
fn run_marked(path: &Path, present: &[(&str, &[u8])], torn: &[(&str, Torn)], at: u64) -> usize {
    let files: Vec<(String, Vec<u8>)> = present
        .iter()
        .map(|(n, b)| (n.to_string(), b.to_vec()))
        .collect();
    let torn: Vec<(String, Torn)> = torn.iter().map(|(n, t)| (n.to_string(), *t)).collect();
    let seen = Observed {
        files: &files,
        torn: &torn,
        ..Observed::default()
    };
    record(lock(path).unwrap(), "l", Path::new("/t/l"), &seen, at).unwrap()
}

const WHOLE: &[u8] = br#"{"id":"1","subject":"a","status":"pending","blocks":[],"blockedBy":[]}"#;

#[test]
fn each_run_line_names_the_session_that_made_it() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("l.jsonl");
    run(&path, &[("1.json", WHOLE)], &[], 10);
    run_marked(&path, &[("1.json", WHOLE)], &[], 20);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.contains(r#""op":"run","session":"0675e12e-0000-4000-8000-000000000001""#),
        "{text}"
    );
    let j = read(&path, "l").unwrap().unwrap();
    // The run without a session (an event that had none) names none.
    assert_eq!(
        j.sessions.into_iter().collect::<Vec<_>>(),
        [("0675e12e-0000-4000-8000-000000000001".to_string(), 10)]
    );
    assert_eq!(j.last_run, Some(20));
}

#[test]
fn what_a_read_marks() {
    // The size when opened differs from what was read: a writer was at work.
    assert_eq!(Torn::of_read(WHOLE, 3, true), Some(Torn::Changing));
    assert_eq!(Torn::of_read(b"", 70, false), Some(Torn::Changing));
    assert_eq!(Torn::of_read(b"", 0, false), Some(Torn::Empty));
    assert_eq!(Torn::of_read(&WHOLE[..9], 9, false), Some(Torn::Malformed));
    assert_eq!(Torn::of_read(WHOLE, WHOLE.len() as i64, true), None);
    // Without a mark, the bytes alone.
    assert_eq!(Torn::of_bytes(b""), Some(Torn::Empty));
    assert_eq!(Torn::of_bytes(&WHOLE[..9]), Some(Torn::Malformed));
    assert_eq!(Torn::of_bytes(b"[1]"), Some(Torn::Malformed));
    assert_eq!(Torn::of_bytes(WHOLE), None);
    for t in [Torn::Changing, Torn::Empty, Torn::Malformed] {
        assert_eq!(Torn::parse(t.as_str()), t);
    }
    assert_eq!(Torn::parse("sideways"), Torn::Other);
}

#[test]
fn a_version_that_is_not_whole_is_marked_and_the_whole_one_before_it_kept() {
    let (_tmp, path) = setup();
    run(&path, &[("1.json", WHOLE)], &[], 10);
    // Read while being rewritten in place: empty, then half written.
    run_marked(&path, &[("1.json", b"")], &[("1.json", Torn::Empty)], 20);
    let half = &WHOLE[..20];
    run_marked(
        &path,
        &[("1.json", half)],
        &[("1.json", Torn::Changing)],
        30,
    );
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(r#""torn":"empty","text":"""#), "{text}");
    assert!(text.contains(r#""torn":"changing","text":"#), "{text}");
    let j = journal(&path);
    assert!(j.problems.is_empty(), "{:?}", j.problems);
    let cur = j.current("1.json").unwrap();
    assert_eq!(cur.bytes.as_deref(), Some(half));
    assert_eq!(cur.flaw, Some(Flaw::Torn(Torn::Changing)));
    let r = cur.restorable().unwrap();
    assert_eq!((r.seen_at, r.bytes.as_deref()), (10, Some(WHOLE)));
    let passed: Vec<(u64, Flaw)> = cur
        .passed_over()
        .iter()
        .map(|s| (s.seen_at, s.flaw))
        .collect();
    assert_eq!(
        passed,
        [
            (30, Flaw::Torn(Torn::Changing)),
            (20, Flaw::Torn(Torn::Empty))
        ]
    );
    // The hook, reading without the bytes, knows the same from the marks.
    let light = parse(&path, &std::fs::read(&path).unwrap(), "l", false).unwrap();
    let cur = light.current("1.json").unwrap();
    assert_eq!(cur.flaw, Some(Flaw::Torn(Torn::Changing)));
    assert_eq!(cur.restorable().unwrap().seen_at, 10);
    // Torn the same way again: nothing new. The same bytes read whole after all: they
    // are journaled again, as a whole version.
    let marked = [("1.json", Torn::Changing)];
    assert_eq!(run_marked(&path, &[("1.json", half)], &marked, 35), 0);
    let rest = br#"{"id":"1","subject":"a"#;
    assert_eq!(run(&path, &[("1.json", rest)], &[], 40), 1);
    let cur = journal(&path).current("1.json").unwrap().clone();
    assert_eq!(
        cur.flaw,
        Some(Flaw::Torn(Torn::Malformed)),
        "judged by its bytes"
    );
    assert_eq!(run(&path, &[("1.json", WHOLE)], &[], 50), 1);
    assert_eq!(run(&path, &[("1.json", WHOLE)], &[], 60), 0);
    let cur = journal(&path).current("1.json").unwrap().clone();
    assert!(cur.is_whole() && cur.whole_before.is_none());
    assert_eq!(cur.restorable().unwrap().seen_at, 50);
    assert!(cur.passed_over().is_empty());
}

#[test]
fn entries_written_before_the_mark_are_judged_by_their_bytes() {
    let (_tmp, path) = setup();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    // What an earlier build wrote when a run read 1.json empty, then half written: no
    // mark on either.
    let mut text = header_line("l", Path::new("/t/l"), 1);
    text.extend(seen_line(10, "1.json", WHOLE, None));
    text.extend(seen_line(20, "1.json", b"", None));
    text.extend(Out::new(20, "run", None).line());
    std::fs::write(&path, &text).unwrap();
    let light = parse(&path, &text, "l", false).unwrap();
    let cur = light.current("1.json").unwrap();
    assert_eq!(
        cur.flaw,
        Some(Flaw::Torn(Torn::Empty)),
        "seen from the line"
    );
    assert_eq!(cur.restorable().unwrap().seen_at, 10);
    text.extend(seen_line(30, "1.json", &WHOLE[..20], None));
    std::fs::write(&path, &text).unwrap();
    let j = journal(&path);
    let cur = j.current("1.json").unwrap();
    assert_eq!(cur.flaw, Some(Flaw::Torn(Torn::Malformed)));
    let r = cur.restorable().unwrap();
    assert_eq!((r.seen_at, r.bytes.as_deref()), (10, Some(WHOLE)));
    assert_eq!(cur.passed_over().len(), 2);
    // A damaged entry is not whole either.
    let mut damaged = header_line("l", Path::new("/t/l"), 1);
    damaged.extend(seen_line(10, "1.json", WHOLE, None));
    let bad = String::from_utf8(seen_line(20, "1.json", WHOLE, None))
        .unwrap()
        .replace(r#"\"a\""#, r#"\"b\""#);
    damaged.extend(bad.as_bytes());
    std::fs::write(&path, &damaged).unwrap();
    let j = journal(&path);
    let cur = j.current("1.json").unwrap();
    assert_eq!(cur.flaw, Some(Flaw::Damaged));
    assert_eq!(cur.restorable().unwrap().seen_at, 10);
}

#[test]
fn a_compaction_keeps_the_whole_version_behind_one_that_is_not() {
    for marked in [true, false] {
        let (_tmp, path) = setup();
        run(&path, &[("1.json", WHOLE)], &[], 1);
        if marked {
            run_marked(&path, &[("1.json", b"")], &[("1.json", Torn::Empty)], 2);
        } else {
            // As an earlier build journaled it.
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(&path)
                .unwrap();
            f.write_all(&seen_line(2, "1.json", b"", None)).unwrap();
        }
        grow_past_compaction(&path, &[("1.json", b"")], 3);
        assert!(std::fs::metadata(&path).unwrap().len() < COMPACT_FROM);
        let j = journal(&path);
        assert!(j.problems.is_empty(), "{:?}", j.problems);
        let cur = j.current("1.json").unwrap();
        assert_eq!(cur.flaw, Some(Flaw::Torn(Torn::Empty)), "marked: {marked}");
        let r = cur.restorable().expect("the whole version survives");
        assert_eq!((r.seen_at, r.bytes.as_deref()), (1, Some(WHOLE)));
    }
}

fn journal(path: &Path) -> Journal {
    read(path, "l").unwrap().unwrap()
}

#[test]
fn the_hash_covers_the_name_and_the_bytes() {
    assert_ne!(hash("1.json", b"x"), hash("2.json", b"x"));
    assert_ne!(hash("1.json", b"x"), hash("1.json", b"y"));
    // Padding cannot pass for content, nor content move between name and bytes.
    assert_ne!(hash("1.json", b"ab"), hash("1.json", b"ab\0"));
    assert_ne!(hash("1.json", b"x"), hash("1.jsonx", b""));
    // Pinned: journals written by earlier builds must keep matching.
    assert_eq!(hash("1.json", b"{}"), 0xf6be_7bce_f767_4d97);
    assert_eq!(parse_hash(&hash_text(42)), Some(42));
    assert_eq!(parse_hash("42"), None);
}

#[test]
fn the_hook_reads_only_the_fields_before_the_bytes() {
    let line = seen_line(7, "1.json", b"{\"text\":\"x\"}", Some(Torn::Malformed));
    let line = &line[..line.len() - 1];
    let end = light_prefix(line).unwrap();
    assert!(
        line[end..].starts_with(b",\"text\":\""),
        "{}",
        String::from_utf8_lossy(line)
    );
    // A quote inside a string is escaped, so a path holding the key is not taken for it.
    let mut r = Out::new(1, "restored", Some("1.json"));
    r.into = Some(r#"/t/,"text":"x"#);
    let line = r.line();
    assert_eq!(light_prefix(&line[..line.len() - 1]), None);
    // A line cut inside its bytes is parsed whole, and refused.
    assert_eq!(
        light_prefix(br#"{"at":1,"op":"seen","file":"1.json","hash":"00","text":"ab"#),
        None
    );
}

#[test]
fn a_run_journals_only_what_changed_and_what_went() {
    let (_tmp, path) = setup();
    let both: &[(&str, &[u8])] = &[("1.json", b"{\"id\":\"1\"}"), ("2.json", b"two")];
    assert_eq!(run(&path, both, &[], 10), 2);
    assert_eq!(run(&path, both, &[], 20), 0);
    // 1 changes, 2 goes without a delete.
    assert_eq!(
        run(&path, &[("1.json", b"{\"id\":\"1\",\"x\":1}")], &[], 30),
        2
    );
    let j = journal(&path);
    assert!(j.problems.is_empty(), "{:?}", j.problems);
    let one = j.current("1.json").unwrap();
    assert_eq!(one.bytes.as_deref(), Some(&b"{\"id\":\"1\",\"x\":1}"[..]));
    assert!(one.is_alive());
    let two = j.current("2.json").unwrap();
    assert_eq!(two.end, Some((End::Gone, 30)));
    assert_eq!(two.last_at, 20, "the last run that saw it");
    assert_eq!(two.bytes.as_deref(), Some(&b"two"[..]));
    assert_eq!(j.last_run, Some(30));
}

#[test]
fn a_delete_asked_for_ends_the_task_as_deleted_not_gone() {
    let (_tmp, path) = setup();
    run(&path, &[("1.json", b"a")], &["1.json"], 10);
    run(&path, &[], &[], 20);
    assert_eq!(
        journal(&path).current("1.json").unwrap().end,
        Some((End::Deleted, 10))
    );
    // A delete that did not happen: the file is still there, and it is live again.
    run(&path, &[("2.json", b"b")], &["2.json"], 30);
    run(&path, &[("2.json", b"b")], &[], 40);
    assert!(journal(&path).current("2.json").unwrap().is_alive());
}

#[test]
fn a_torn_last_line_is_skipped_and_cut_by_the_next_append() {
    let (_tmp, path) = setup();
    run(&path, &[("1.json", b"a")], &[], 10);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    f.write_all(br#"{"at":11,"op":"seen","file":"2.json","hash":"00"#)
        .unwrap();
    drop(f);
    let j = journal(&path);
    assert_eq!(j.problems.len(), 1);
    assert_eq!(j.problems[0].line, 4, "{:?}", j.problems);
    assert!(j.problems[0].what.contains("torn"), "{:?}", j.problems);
    assert!(
        j.current("2.json").is_none(),
        "a torn entry is never a task"
    );
    run(&path, &[("1.json", b"a")], &[], 20);
    assert!(journal(&path).problems.is_empty());
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.ends_with(
            "}\n{\"at\":20,\"op\":\"run\",\"session\":\"0675e12e-0000-4000-8000-000000000001\"}\n"
        ),
        "{text}"
    );
}

#[test]
fn damaged_bytes_are_never_taken_for_the_task() {
    let (_tmp, path) = setup();
    run(&path, &[("1.json", b"abc")], &[], 10);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("\"text\":\"abc\"", "\"text\":\"abd\"")).unwrap();
    let j = journal(&path);
    assert_eq!(j.problems.len(), 1);
    assert_eq!(j.problems[0].line, 2);
    assert!(
        j.problems[0].what.contains("do not match their hash"),
        "{:?}",
        j.problems
    );
    // The task is still known (so it is not called new), but without bytes to restore.
    assert!(j.current("1.json").unwrap().bytes.is_none());
}

#[test]
fn a_line_that_is_not_an_entry_is_skipped_with_its_number() {
    let (_tmp, path) = setup();
    run(&path, &[("1.json", b"a")], &[], 10);
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("garbage\n{\"at\":1,\"op\":\"seen\",\"file\":\"../x\",\"hash\":\"0000000000000000\",\"text\":\"\"}\n{\"at\":1,\"op\":\"fly\",\"file\":\"1.json\"}\n");
    std::fs::write(&path, text).unwrap();
    let j = journal(&path);
    let lines: Vec<usize> = j.problems.iter().map(|p| p.line).collect();
    assert_eq!(lines, [4, 5, 6], "{:?}", j.problems);
    assert!(j.problems[0].what.contains("not a journal entry"));
    assert!(j.problems[1].what.contains("without a task file name"));
    assert!(j.problems[2].what.contains("unknown kind \"fly\""));
    assert!(j.current("1.json").unwrap().is_alive());
}

#[test]
fn bytes_that_are_not_utf8_round_trip_as_hex() {
    let (_tmp, path) = setup();
    run(&path, &[("1.json", &[0xff, 0x00, b'a'])], &[], 10);
    assert!(
        std::fs::read_to_string(&path)
            .unwrap()
            .contains("\"hex\":\"ff0061\"")
    );
    assert_eq!(
        journal(&path).current("1.json").unwrap().bytes.as_deref(),
        Some(&[0xff, 0x00, b'a'][..])
    );
}

#[test]
fn a_foreign_or_other_lists_journal_is_refused_and_left_alone() {
    let (_tmp, path) = setup();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    for (content, want) in [
        (
            "hello\n",
            "line 1 is not a taskproof journal's first line (not JSON",
        ),
        ("{\"a\":1}\n", "no taskproof_journal format number"),
        (
            "{\"taskproof_journal\":9,\"list\":\"l\",\"folder\":\"/\",\"created\":0}\n",
            "format 9, newer",
        ),
        (
            "{\"taskproof_journal\":1,\"list\":\"m\",\"folder\":\"/t/m\",\"created\":0}\n",
            "the journal of list \"m\" (/t/m), not of \"l\"",
        ),
        ("{\"taskproof_journal\":1", "it has no complete line"),
    ] {
        std::fs::write(&path, content).unwrap();
        let e = try_run(&path, &[("1.json", b"a")], &[], 10)
            .unwrap_err()
            .to_string();
        assert!(e.contains(want), "{e}");
        assert!(e.contains(&path.display().to_string()), "{e}");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            content,
            "left alone"
        );
        let e = read(&path, "l").unwrap_err().to_string();
        assert!(e.contains(want), "{e}");
    }
}

#[test]
fn a_journal_that_is_a_link_is_never_followed() {
    let (tmp, path) = setup();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let target = tmp.path().join("elsewhere");
    std::fs::write(&target, "x").unwrap();
    std::os::unix::fs::symlink(&target, &path).unwrap();
    let e = try_run(&path, &[], &[], 10).unwrap_err();
    assert!(matches!(e, JournalError::Symlink { .. }), "{e}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "x");
}

#[test]
fn compaction_keeps_live_and_vanished_tasks_and_drops_history() {
    let (_tmp, path) = setup();
    // Task 2 deleted by the agent, task 3 vanished, then many versions of task 1.
    run(&path, &[("2.json", b"two"), ("3.json", b"three")], &[], 1);
    run(&path, &[("2.json", b"two")], &["2.json"], 2);
    // Twenty versions of 64 KiB: the run that takes the file past 1 MiB compacts it, and
    // the few after it grow it again from there.
    let big = "x".repeat(64 * 1024);
    let mut v = String::new();
    let mut largest = 0;
    for at in 3..23 {
        v = format!("{big}{at}");
        run(&path, &[("1.json", v.as_bytes())], &[], at);
        largest = largest.max(std::fs::metadata(&path).unwrap().len());
    }
    let len = std::fs::metadata(&path).unwrap().len();
    assert!(largest <= COMPACT_FROM, "{largest}");
    assert!(
        len < COMPACT_FROM / 2,
        "compacted, then grown to {len} bytes"
    );
    let j = journal(&path);
    assert!(j.problems.is_empty(), "{:?}", j.problems);
    assert_eq!(
        j.current("1.json").unwrap().bytes.as_deref(),
        Some(v.as_bytes())
    );
    assert!(j.current("2.json").is_none(), "the deleted task is dropped");
    let three = j.current("3.json").unwrap();
    assert_eq!(three.end.map(|e| e.0), Some(End::Gone));
    assert_eq!(three.bytes.as_deref(), Some(&b"three"[..]));
    assert_eq!(three.last_at, 1);
    assert_eq!(j.last_run, Some(22));
}

#[test]
fn nothing_is_appended_past_the_hard_limit() {
    let (_tmp, path) = setup();
    run(&path, &[("1.json", b"a")], &[], 1);
    // A journal whose complete lines reach the limit exactly: its header, then a line
    // that is no entry (a hole of zero bytes, so the file takes no room) and a newline.
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(HARD_LIMIT).unwrap();
    f.write_all_at(b"\n", HARD_LIMIT - 1).unwrap();
    drop(f);
    let before = std::fs::read(&path).unwrap();
    let a = [("2.json".to_string(), b"b".to_vec())];
    let errors = [
        try_run(&path, &[("2.json", b"b")], &[], 2).unwrap_err(),
        record_written(lock(&path).unwrap(), "l", Path::new("/t/l"), &a, &[], 3).unwrap_err(),
        record_seen(&path, "l", Path::new("/t/l"), &a, 4).unwrap_err(),
        record_restore(&path, "l", Path::new("/t/l"), &a, "/t/m", false, 5).unwrap_err(),
    ];
    for e in errors {
        assert!(matches!(e, JournalError::TooLarge { .. }), "{e}");
        let e = e.to_string();
        assert!(e.contains(&path.display().to_string()), "{e}");
        assert!(e.contains("nothing more is journaled"), "{e}");
    }
    assert!(
        std::fs::read(&path).unwrap() == before,
        "the file is unchanged"
    );
}

/// Runs that see `also` and twenty versions of 64 KiB of 2.json: the run that takes the
/// journal past 1 MiB compacts it.
fn grow_past_compaction(path: &Path, also: &[(&str, &[u8])], from: u64) {
    let big = "x".repeat(64 * 1024);
    for at in from..from + 20 {
        let two = format!("{big}{at}");
        let mut files = also.to_vec();
        files.push(("2.json", two.as_bytes()));
        run(path, &files, &[], at);
    }
}

#[test]
fn compaction_drops_a_vanished_version_that_came_back() {
    let (_tmp, path) = setup();
    run(&path, &[("1.json", b"a")], &[], 1);
    run(&path, &[], &[], 2);
    // The same bytes again: a new life of 1.json, and the one found gone is history.
    run(&path, &[("1.json", b"a")], &[], 3);
    let j = journal(&path);
    assert_eq!(j.files["1.json"].len(), 2);
    let gone = crate::vanish::vanished(
        &j,
        taskproof_core::protocol::Layout::ClaudeCode,
        &crate::vanish::Folder::default(),
    );
    assert_eq!(
        gone.len(),
        1,
        "only the live one is missing from an empty folder"
    );
    grow_past_compaction(&path, &[("1.json", b"a")], 4);
    let j = journal(&path);
    assert!(j.problems.is_empty(), "{:?}", j.problems);
    let lives = &j.files["1.json"];
    assert_eq!(lives.len(), 1, "{lives:?}");
    assert!(lives[0].is_alive());
}

#[test]
fn a_compaction_leaves_no_temporary_file_even_after_one_was_killed() {
    let (_tmp, path) = setup();
    run(&path, &[("1.json", b"a")], &[], 1);
    let dir = path.parent().unwrap();
    // What a compaction killed before its rename leaves: its temporary file.
    std::fs::write(dir.join(".l.jsonl.compact"), "half of a journal").unwrap();
    grow_past_compaction(&path, &[], 2);
    assert!(std::fs::metadata(&path).unwrap().len() < COMPACT_FROM);
    let names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["l.jsonl"]);
}

#[test]
fn a_restore_marks_the_version_it_wrote_back() {
    let (_tmp, path) = setup();
    run(&path, &[("1.json", b"a")], &[], 1);
    let back = [("1.json".to_string(), b"a".to_vec())];
    record_restore(&path, "l", Path::new("/t/l"), &back, "/t/l-r", false, 5).unwrap();
    let l = journal(&path).current("1.json").unwrap().clone();
    assert_eq!(l.restored_into.as_deref(), Some("/t/l-r"));
    assert!(!l.is_alive());
    // Into the same list: the version is live again, so a later reset is found again.
    let (_tmp, path) = setup();
    run(&path, &[("1.json", b"a")], &[], 1);
    record_restore(&path, "l", Path::new("/t/l"), &back, "/t/l", true, 5).unwrap();
    let j = journal(&path);
    assert!(j.current("1.json").unwrap().is_alive());
    assert_eq!(j.files["1.json"].len(), 2);
}
