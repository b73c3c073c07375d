//! `check` naming what vanished from a list: the tasks a reset took, with the cause and its
//! time, apart from what the agent deleted itself, and a warning that says how sure it is when
//! there is no journal.

use super::*;

/// The time a message gives right after `marker` (`2026-11-27T17:41:52.274Z`, UTC), in
/// milliseconds since the epoch.
fn time_after(m: &str, marker: &str) -> u64 {
    let at = m
        .find(marker)
        .unwrap_or_else(|| panic!("no {marker:?} in {m}"))
        + marker.len();
    let t = m
        .get(at..at + 24)
        .unwrap_or_else(|| panic!("no time after {marker:?} in {m}"));
    let b = t.as_bytes();
    let shape = b[4] == b'-' && b[7] == b'-' && b[10] == b'T' && b[13] == b':' && b[16] == b':';
    assert!(
        shape && b[19] == b'.' && b[23] == b'Z',
        "not a time: {t:?} in {m}"
    );
    let n = |r: std::ops::Range<usize>| -> i64 { t[r].parse().unwrap() };
    let (y, mo, d) = (n(0..4), n(5..7), n(8..10));
    // Days since the epoch of a civil date (Howard Hinnant's days_from_civil).
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((mo + 9) % 12) + 2) / 5 + d - 1;
    let days = era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468;
    let secs = days * 86_400 + n(11..13) * 3600 + n(14..16) * 60 + n(17..19);
    (secs * 1000 + n(20..23)) as u64
}

/// `times` never goes back.
fn assert_in_order(times: &[u64], m: &str) {
    assert!(
        times.windows(2).all(|w| w[0] <= w[1]),
        "times out of order {times:?} in {m}"
    );
}

#[test]
fn the_tests_read_the_reports_times() {
    // 2026-11-28T16:40:01.123Z, as crates/check/src/restore.rs pins it.
    assert_eq!(
        time_after("at 2026-11-28T16:40:01.123Z.", "at "),
        1_795_884_001_123
    );
    assert_eq!(time_after("1970-01-01T00:00:00.000Z", ""), 0);
    assert_eq!(time_after("2000-03-01T00:00:00.001Z", ""), 951_868_800_001);
}

#[test]
fn check_names_the_tasks_a_reset_took_with_the_cause_and_not_the_one_the_agent_deleted() {
    let c = Config::new();
    finished_and_reset(&c);
    let (code, doc, _) = check(&c.list(), &[]);
    assert_eq!(code, 1, "{doc:#}");
    let vanished = of_kind(&doc, "vanished");
    assert_eq!(
        vanished.keys().collect::<Vec<_>>(),
        ["1.json", "2.json"],
        "{doc:#}"
    );
    let one = &vanished["1.json"];
    for want in [
        "task 1 \"Alpha\" (completed) is gone, and no delete was asked for",
        "when .highwatermark was rewritten",
        "known cause: Claude Code's reset of a finished list (anthropics/claude-code#38075): all 2 tasks were completed and went together, and .highwatermark kept the next id (3)",
        "taskproof check --restore",
    ] {
        assert!(one.contains(want), "missing {want:?} in {one}");
    }
    let seen = time_after(one, "the journal last saw it at ");
    let went = time_after(one, "its file went at about ");
    assert_in_order(&[c.start, seen, went, now_ms()], one);
    let f = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["file"] == "1.json")
        .unwrap();
    assert_eq!(f["rule"], "S14");
    // With a journal, the emptied folder is not the unsure warning.
    assert!(of_kind(&doc, "emptied").is_empty(), "{doc:#}");
}

#[test]
fn a_reset_that_leaves_highwatermark_alone_is_dated_by_the_folders_last_change() {
    let c = Config::new();
    c.write_task(1, "Alpha", "pending");
    c.write_task(2, "Beta", "pending");
    c.agent_deletes(2);
    c.write_task(1, "Alpha", "completed");
    c.reset_files();
    let (_, doc, _) = check(&c.list(), &[]);
    let m = &of_kind(&doc, "vanished")["1.json"];
    let seen = time_after(m, "the journal last saw it at ");
    let went = time_after(m, "and its file went by ");
    assert_in_order(&[c.start, seen, went, now_ms()], m);
    assert!(m.contains("(the list folder's last change)"), "{m}");
    assert!(
        m.contains("its 1 task was completed and went, and .highwatermark kept the next id (2)"),
        "{m}"
    );
}

#[test]
fn a_list_the_agent_emptied_itself_is_clean_with_a_journal() {
    let c = Config::new();
    c.write_task(1, "Alpha", "completed");
    c.write_task(2, "Beta", "pending");
    c.agent_deletes(1);
    c.agent_deletes(2);
    let (code, doc, _) = check(&c.list(), &[]);
    assert_eq!(code, 0, "{doc:#}");
}

#[test]
fn tasks_that_go_while_others_stay_are_named_without_a_cause() {
    let c = Config::new();
    c.write_task(1, "Alpha", "completed");
    c.write_task(2, "Beta", "pending");
    std::fs::remove_file(c.list().join("1.json")).unwrap();
    // A later hook run finds it gone.
    c.hook(
        &pre("TaskUpdate", json!({"taskId": "2", "owner": "me"})),
        &[],
    );
    let (_, doc, _) = check(&c.list(), &[]);
    let vanished = of_kind(&doc, "vanished");
    assert_eq!(vanished.keys().collect::<Vec<_>>(), ["1.json"]);
    let m = &vanished["1.json"];
    let seen = time_after(m, "the journal last saw it at ");
    let gone = time_after(m, "a hook run found it gone at ");
    assert_in_order(&[c.start, seen, gone, now_ms()], m);
    assert!(!vanished["1.json"].contains("known cause"), "{vanished:?}");
}

#[test]
fn without_a_journal_an_emptied_list_is_a_warning_that_says_how_sure_it_is() {
    let tmp = tempdir();
    let reset = tmp.path().join("reset");
    write(&reset, ".lock", "");
    write(&reset, ".highwatermark", "3");
    let (code, doc, _) = check(&reset, &[]);
    assert_eq!(code, 1);
    let m = &of_kind(&doc, "emptied")[".highwatermark"];
    assert!(
        m.contains("the list holds no task, and .highwatermark says 3"),
        "{m}"
    );
    assert!(
        m.contains("taskproof cannot tell which without a journal"),
        "{m}"
    );
    assert!(m.contains("PostToolUse"), "{m}");

    let old = tmp.path().join("old");
    write(&old, ".lock", "");
    let (_, doc, _) = check(&old, &[]);
    let m = &of_kind(&doc, "emptied")[".lock"];
    assert!(m.contains("the shape Claude Code 2.1.17 leaves"), "{m}");

    // A folder with a task, or with nothing at all, is not emptied.
    let fresh = tmp.path().join("fresh");
    std::fs::create_dir(&fresh).unwrap();
    let (code, doc, _) = check(&fresh, &[]);
    assert_eq!(code, 0, "{doc:#}");
    let busy = tmp.path().join("busy");
    write(&busy, ".lock", "");
    write(&busy, ".highwatermark", "3");
    write(
        &busy,
        "3.json",
        r#"{"id":"3","subject":"c","description":"","status":"pending","blocks":[],"blockedBy":[]}"#,
    );
    let (code, doc, _) = check(&busy, &[]);
    assert_eq!(code, 0, "{doc:#}");
    assert!(of_kind(&doc, "emptied").is_empty(), "{doc:#}");
}

#[test]
fn a_new_task_the_hook_refused_and_claude_code_took_back_did_not_vanish() {
    let c = Config::new();
    c.write_task(1, "Alpha", "pending");
    // TaskCreated with an empty subject: written, refused, deleted again by Claude Code.
    write(
        &c.list(),
        "2.json",
        r#"{"id":"2","subject":"","status":"pending","blocks":[],"blockedBy":[]}"#,
    );
    let ev = json!({"session_id": "s", "hook_event_name": "TaskCreated", "task_id": "2",
                    "task_subject": "", "task_description": ""});
    assert_eq!(c.hook(&ev, &[]).status.code(), Some(2));
    std::fs::remove_file(c.list().join("2.json")).unwrap();
    c.hook(
        &pre("TaskUpdate", json!({"taskId": "1", "owner": "me"})),
        &[],
    );
    let (code, doc, _) = check(&c.list(), &[]);
    assert_eq!(code, 0, "{doc:#}");
}

#[test]
fn a_reset_that_kept_no_highwatermark_and_an_id_used_again_still_names_the_old_task() {
    // 2.1.17: the reset leaves `.lock` only and the next create takes id 1 again.
    let c = Config::new();
    let old = c.write_task(1, "Alpha", "completed");
    std::fs::remove_file(c.list().join("1.json")).unwrap();
    std::fs::remove_file(c.list().join(".highwatermark")).unwrap();
    write(&c.list(), ".lock", "");
    let (_, doc, _) = check(&c.list(), &[]);
    let m = &of_kind(&doc, "vanished")["1.json"];
    assert!(m.contains("as 2.1.17 does it"), "{m}");
    // The agent's next create runs the hook first (which finds 1.json gone), then writes 1.json.
    c.hook(&pre("TaskCreate", json!({"subject": "Zeta"})), &[]);
    c.write_task(1, "Zeta", "pending");
    let (_, doc, _) = check(&c.list(), &[]);
    let m = &of_kind(&doc, "vanished")["1.json"];
    assert!(m.contains("task 1 \"Alpha\" (completed) is gone"), "{m}");
    assert!(m.contains("its name 1.json now holds another task"), "{m}");
    // Restored into a new list, the old task 1 comes back as it was.
    let (_, doc, _) = check(&c.list(), &["--restore"]);
    let new = doc["lists"][1]["name"].as_str().unwrap().to_string();
    assert_eq!(
        std::fs::read(c.dir.join("tasks").join(new).join("1.json")).unwrap(),
        old
    );
}
