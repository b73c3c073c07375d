//! `check --restore`: every vanished task written back byte for byte, into a new list or the
//! same one without writing over a newer file; what it cannot trust (no journal, a torn or
//! foreign line, a list it cannot name) named and left alone.

use super::*;

#[test]
fn restore_writes_every_vanished_task_back_byte_for_byte_into_a_new_list() {
    let c = Config::new();
    let (one, two) = finished_and_reset(&c);
    let before = files(&c.list());
    let (code, doc, stderr) = check(&c.list(), &["--restore"]);
    assert_eq!(code, 0, "{doc:#}\n{stderr}");
    assert_eq!(doc["mode"], "restore");
    let lists: Vec<&str> = doc["lists"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["name"].as_str().unwrap())
        .collect();
    assert_eq!(lists.len(), 2, "{doc:#}");
    let new = lists[1];
    assert!(new.starts_with("plan-restored-"), "{new}");
    let dir = c.dir.join("tasks").join(new);
    let got = files(&dir);
    assert_eq!(got["1.json"], one);
    assert_eq!(got["2.json"], two);
    assert!(
        !got.contains_key("3.json"),
        "the task the agent deleted stays deleted"
    );
    assert_eq!(
        got[".highwatermark"], b"3",
        "the old list's next id is kept"
    );
    assert_eq!(files(&c.list()), before, "the old list is left as it was");
    let changes: Vec<&str> = doc["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["change"].as_str().unwrap())
        .collect();
    assert!(
        changes[0].starts_with("restore 1.json into "),
        "{changes:?}"
    );
    assert!(stderr.contains("written into a new list"), "{stderr}");

    // Restored once: check no longer names them, a second restore has nothing to do, and
    // the new list has a journal of its own.
    let (code, doc, _) = check(&c.list(), &[]);
    assert_eq!(code, 0, "{doc:#}");
    let (code, doc, _) = check(&c.list(), &["--restore"]);
    assert_eq!((code, doc["changes"].as_array().unwrap().len()), (0, 0));
    let text = taskproof()
        .args(["check", "--restore"])
        .arg(c.list())
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&text.stdout).contains("nothing to restore"));
    assert!(
        c.dir
            .join("tasks/.taskproof-journal")
            .join(format!("{new}.jsonl"))
            .exists()
    );
}

#[test]
fn restore_into_the_same_list_never_writes_over_a_newer_file_and_says_the_risk() {
    let c = Config::new();
    let (one, _) = finished_and_reset(&c);
    // The agent's next call: its hook run finds the list reset.
    c.hook(&pre("TaskCreate", json!({"subject": "Delta"})), &[]);
    // A file written at that name since (another writer, or a version that reuses ids).
    let newer = r#"{"id":"2","subject":"newer","status":"pending","blocks":[],"blockedBy":[]}"#;
    write(&c.list(), "2.json", newer);
    let (code, doc, stderr) = check(&c.list(), &["--restore", "--into-same-list"]);
    // Task 2 is still vanished: it was not written back, and a new list can take it.
    assert_eq!(code, 1, "{doc:#}\n{stderr}");
    let left = of_kind(&doc, "vanished");
    assert_eq!(left.keys().collect::<Vec<_>>(), ["2.json"], "{doc:#}");
    assert!(left["2.json"].contains("its name 2.json now holds another task"));
    assert_eq!(std::fs::read(c.list().join("1.json")).unwrap(), one);
    assert_eq!(
        std::fs::read_to_string(c.list().join("2.json")).unwrap(),
        newer
    );
    assert!(!c.list().join("3.json").exists());
    let skipped: Vec<&Value> = doc["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| !c["skipped"].is_null())
        .collect();
    assert_eq!(skipped.len(), 1, "{doc:#}");
    assert!(
        skipped[0]["skipped"]
            .as_str()
            .unwrap()
            .contains("2.json exists in the list"),
        "{doc:#}"
    );
    assert!(
        stderr.contains("about 5 s after the next task in it is completed"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(c.list().join(".highwatermark")).unwrap(),
        "3"
    );
}

#[test]
fn restore_without_a_journal_names_where_it_looked_and_changes_nothing() {
    let tmp = tempdir();
    let list = tmp.path().join("tasks").join("plan");
    write(&list, ".lock", "");
    write(&list, ".highwatermark", "2");
    let before = tree(tmp.path());
    let (code, _, stderr) = check(&list, &["--restore"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("restore plan: there is no journal at /"),
        "{stderr}"
    );
    assert!(
        stderr.contains("/tasks/.taskproof-journal/plan.jsonl"),
        "{stderr}"
    );
    assert!(stderr.contains("nothing was changed"), "{stderr}");
    assert_eq!(tree(tmp.path()), before);
}

#[test]
fn a_torn_or_damaged_journal_line_is_named_and_never_restored() {
    let c = Config::new();
    let pending = c.write_task(1, "Alpha", "pending");
    c.write_task(2, "Beta", "pending");
    c.write_task(1, "Alpha", "completed");
    let two = c.write_task(2, "Beta", "completed");
    c.reset();
    let text = std::fs::read_to_string(c.journal()).unwrap();
    // Damage the last version of task 1: one changed character in its bytes.
    let i = text.rfind("\"subject\\\": \\\"Alpha\\\"").unwrap();
    let mut damaged = text.clone();
    damaged.replace_range(i + 14..i + 15, "a");
    // And a torn entry at the end, as a writer killed mid-append leaves it.
    damaged.push_str(r#"{"at":1,"op":"seen","file":"4.json","hash":"#);
    std::fs::write(c.journal(), &damaged).unwrap();
    let line = damaged[..i].matches('\n').count() + 1;
    let last = damaged.matches('\n').count() + 1;

    let (code, doc, _) = check(&c.list(), &[]);
    assert_eq!(code, 1);
    let journal: Vec<(&str, &str)> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "journal")
        .map(|f| (f["file"].as_str().unwrap(), f["message"].as_str().unwrap()))
        .collect();
    let all = format!("{journal:?}");
    assert_eq!(journal.len(), 2, "{all}");
    assert!(
        all.contains(&format!(
            "line {line}: the bytes of 1.json do not match their hash"
        )),
        "{all}"
    );
    assert!(all.contains(&format!("line {last}: a torn entry")), "{all}");
    assert!(
        journal
            .iter()
            .all(|(f, _)| f.ends_with("/tasks/.taskproof-journal/plan.jsonl")),
        "{all}"
    );
    let vanished = of_kind(&doc, "vanished");
    assert!(
        vanished["1.json"].contains(&format!(
            "its last version in the journal is not whole (line {line}, journaled at "
        )) && vanished["1.json"].contains("is damaged in the journal"),
        "{}",
        vanished["1.json"]
    );
    assert!(
        !vanished.contains_key("4.json"),
        "a torn entry is never a task"
    );

    // The damaged version is never written; the whole one before it is, and the change
    // says which and why.
    let (code, doc, _) = check(&c.list(), &["--restore"]);
    assert_eq!(code, 1, "the damaged line is still named: {doc:#}");
    assert!(of_kind(&doc, "vanished").is_empty(), "{doc:#}");
    let new = doc["lists"][1]["name"].as_str().unwrap().to_string();
    let got = files(&c.dir.join("tasks").join(&new));
    assert_eq!(got["1.json"], pending);
    assert!(!got.contains_key("4.json"));
    assert_eq!(got["2.json"], two);
    let change = doc["changes"][0]["change"].as_str().unwrap();
    assert!(
        change.starts_with("restore 1.json into ")
            && change.contains("its last whole one; the newer ones are not (")
            && change.contains(&format!("line {line}, journaled at "))
            && change.contains("is damaged in the journal"),
        "{change}"
    );
    let change = doc["changes"][1]["change"].as_str().unwrap();
    assert!(
        change.contains(": its last version, journaled at "),
        "{change}"
    );
}

#[test]
fn a_foreign_journal_or_another_lists_is_named_and_left_alone() {
    let c = Config::new();
    finished_and_reset(&c);
    let theirs = std::fs::read(c.journal()).unwrap();
    let renamed = c.dir.join("tasks").join("other");
    std::fs::create_dir(&renamed).unwrap();
    std::fs::write(renamed.join(".highwatermark"), "2").unwrap();

    // Plan's journal named with --journal for another list.
    let (code, _, stderr) = check(
        &renamed,
        &["--restore", "--journal", c.journal().to_str().unwrap()],
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("it is the journal of list \"plan\""),
        "{stderr}"
    );
    assert!(!c.dir.join("tasks").read_dir().unwrap().any(|e| {
        e.unwrap()
            .file_name()
            .to_string_lossy()
            .contains("restored")
    }));

    // The same file copied to the other list's journal place: read as another list's.
    let place = c.dir.join("tasks/.taskproof-journal/other.jsonl");
    std::fs::write(&place, &theirs).unwrap();
    let (code, doc, _) = check(&renamed, &[]);
    assert_eq!(code, 1);
    let m = &of_kind(&doc, "journal")[&place.display().to_string()];
    assert!(m.contains("it is the journal of list \"plan\""), "{m}");
    assert!(
        m.contains("not of \"other\"; the file is left alone"),
        "{m}"
    );
    // Judged without it, by its shape.
    assert!(
        of_kind(&doc, "emptied").contains_key(".highwatermark"),
        "{doc:#}"
    );
    let before = tree(&c.dir);
    let (code, _, stderr) = check(&renamed, &["--restore"]);
    assert_eq!(code, 2);
    assert!(stderr.contains(&place.display().to_string()), "{stderr}");
    assert_eq!(tree(&c.dir), before, "a refused restore changes nothing");

    // Not a journal at all: the hook leaves it alone and says so after the write.
    std::fs::write(c.journal(), "not mine\n").unwrap();
    c.write_task(4, "Delta", "pending");
    let out = c.hook(&post("TaskUpdate", json!({"taskId": "4"})), &[]);
    let said: Value = serde_json::from_slice(&out.stdout).unwrap();
    let said = said["systemMessage"].as_str().unwrap();
    assert!(said.contains("could not keep its journal"), "{said}");
    assert!(
        said.contains("line 1 is not a taskproof journal's first line"),
        "{said}"
    );
    assert!(said.contains(&c.journal().display().to_string()), "{said}");
    assert_eq!(std::fs::read_to_string(c.journal()).unwrap(), "not mine\n");
    let (_, doc, _) = check(&c.list(), &[]);
    assert!(
        of_kind(&doc, "journal")
            .values()
            .any(|m| m.contains("not a taskproof journal"))
    );
}

#[test]
fn into_names_the_new_list_and_refuses_one_that_exists() {
    let c = Config::new();
    finished_and_reset(&c);
    std::fs::create_dir(c.dir.join("tasks").join("taken")).unwrap();
    let (code, _, stderr) = check(&c.list(), &["--restore", "--into", "taken"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("it exists already"), "{stderr}");
    let (code, _, stderr) = check(&c.list(), &["--restore", "--into", "a.b"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("a list name is letters, digits"),
        "{stderr}"
    );
    let (code, doc, _) = check(&c.list(), &["--restore", "--into", "kept"]);
    assert_eq!(code, 0, "{doc:#}");
    assert!(c.dir.join("tasks/kept/1.json").exists());
}

#[test]
fn into_names_one_new_list_and_is_refused_over_a_folder_of_several() {
    let c = Config::new();
    finished_and_reset(&c);
    let other = c.dir.join("tasks").join("other");
    write(&other, ".highwatermark", "1");
    let before = tree(&c.dir);
    let (code, _, stderr) = check(&c.dir.join("tasks"), &["--restore", "--into", "back"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--into"), "{stderr}");
    assert!(stderr.contains("2 lists"), "{stderr}");
    assert_eq!(tree(&c.dir), before, "nothing was changed");
    // A folder that holds one list is fine.
    std::fs::remove_dir_all(&other).unwrap();
    let (code, doc, stderr) = check(&c.dir.join("tasks"), &["--restore", "--into", "back"]);
    assert_eq!(code, 0, "{doc:#}\n{stderr}");
    assert!(c.dir.join("tasks/back/1.json").exists());
}

#[test]
fn a_restore_whose_journal_cannot_record_it_says_what_it_wrote_and_why() {
    let c = Config::new();
    let (one, two) = finished_and_reset(&c);
    // The new list's journal cannot be written: its place holds a folder.
    let blocked = c.dir.join("tasks/.taskproof-journal/back.jsonl");
    std::fs::create_dir(&blocked).unwrap();
    let (code, doc, stderr) = check(&c.list(), &["--restore", "--into", "back"]);
    assert_eq!(code, 1, "{doc:#}\n{stderr}");
    let got = files(&c.dir.join("tasks/back"));
    assert_eq!((&got["1.json"], &got["2.json"]), (&one, &two));
    let changes = doc["changes"].as_array().unwrap();
    let done: Vec<&str> = changes
        .iter()
        .filter(|c| c["done"] == true)
        .map(|c| c["change"].as_str().unwrap())
        .collect();
    assert_eq!(done.len(), 3, "the two tasks and .highwatermark: {doc:#}");
    let failed: Vec<&Value> = changes.iter().filter(|c| c["done"] == false).collect();
    assert_eq!(failed.len(), 1, "{doc:#}");
    let change = failed[0]["change"].as_str().unwrap();
    assert!(change.contains("journal"), "{change}");
    assert!(change.contains(&blocked.display().to_string()), "{change}");
    let why = failed[0]["skipped"].as_str().unwrap();
    assert!(!why.contains("nothing was changed"), "{why}");
    assert!(stderr.contains("written into a new list"), "{stderr}");
    // The old list's journal did record it: the tasks are not named as vanished again.
    assert!(of_kind(&doc, "vanished").is_empty(), "{doc:#}");
}
