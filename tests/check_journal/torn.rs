//! Restore beside writers that rewrite task files in place: a version the hook read while the
//! file was being rewritten is passed over, a task with no whole version journaled is named
//! and not written, and under concurrent hooks only whole tasks are written back.

use super::*;

/// The journal's line numbers (1-based) of the `seen` entries of `file`, with their `torn`
/// mark.
fn seen_lines(c: &Config, file: &str) -> Vec<(usize, Option<String>)> {
    std::fs::read_to_string(c.journal())
        .unwrap()
        .lines()
        .enumerate()
        .filter_map(|(i, l)| {
            let v: Value = serde_json::from_str(l).ok()?;
            (v["op"] == "seen" && v["file"] == file)
                .then(|| (i + 1, v["torn"].as_str().map(str::to_string)))
        })
        .collect()
}

#[test]
fn restore_passes_over_a_version_read_while_the_file_was_being_rewritten() {
    let c = Config::new();
    c.write_task(1, "Alpha", "pending");
    let one = c.write_task(1, "Alpha", "completed");
    let two = c.write_task(2, "Beta", "completed");
    // The last runs read both files mid-rewrite: 1.json truncated, 2.json half written.
    c.torn_read(1, b"");
    c.torn_read(2, &two[..two.len() / 2]);
    let ones = seen_lines(&c, "1.json");
    let twos = seen_lines(&c, "2.json");
    let (torn_one, whole_one) = (ones[ones.len() - 1].0, ones[ones.len() - 2].0);
    let (torn_two, whole_two) = (twos[twos.len() - 1].0, twos[twos.len() - 2].0);
    c.reset();

    // A journal an earlier build wrote has no marks: restore judges the bytes themselves.
    let legacy = c.dir.join("legacy.jsonl");
    let text = std::fs::read_to_string(c.journal()).unwrap();
    let unmarked = text
        .replace(r#""torn":"empty","#, "")
        .replace(r#""torn":"malformed","#, "");
    assert!(!unmarked.contains("\"torn\""), "{unmarked}");
    std::fs::write(&legacy, unmarked).unwrap();
    let journal = legacy.to_str().unwrap();
    let (code, doc, stderr) = check(
        &c.list(),
        &["--restore", "--journal", journal, "--into", "old"],
    );
    let got = files(&c.dir.join("tasks/old"));
    assert_eq!((&got["1.json"], &got["2.json"]), (&one, &two));
    // The new list is judged by its own journal, not the one --journal named.
    assert_eq!(code, 0, "{doc:#}\n{stderr}");

    // The journal marked both reads.
    assert_eq!(ones.last().unwrap().1.as_deref(), Some("empty"), "{ones:?}");
    assert_eq!(
        twos.last().unwrap().1.as_deref(),
        Some("malformed"),
        "{twos:?}"
    );
    assert!(ones[..ones.len() - 1].iter().all(|(_, t)| t.is_none()));

    let (code, doc, _) = check(&c.list(), &[]);
    assert_eq!(code, 1);
    let vanished = of_kind(&doc, "vanished");
    let m = &vanished["1.json"];
    assert!(
        m.contains(&format!(
            "its last version in the journal is not whole (line {torn_one}, journaled at "
        )) && m.contains("is empty: ")
            && m.contains(&format!("(line {whole_one}): restore it with")),
        "{m}"
    );
    // The cause is judged from the whole versions: both were completed.
    assert!(m.contains("known cause: Claude Code's reset"), "{m}");

    let (code, doc, stderr) = check(&c.list(), &["--restore", "--into-same-list"]);
    assert_eq!(code, 0, "{doc:#}\n{stderr}");
    let got = files(&c.list());
    assert_eq!((&got["1.json"], &got["2.json"]), (&one, &two));
    let changes: Vec<&str> = doc["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["change"].as_str().unwrap())
        .collect();
    let said = |file: &str, whole: usize, torn: usize, why: &str| {
        changes.iter().any(|c| {
            c.starts_with(&format!("restore {file} into "))
                && c.contains(&format!(
                    "(line {whole}), its last whole one; the newer ones are not (line {torn}, journaled at "
                ))
                && c.contains(why)
        })
    };
    assert!(
        said("1.json", whole_one, torn_one, "is empty: "),
        "{changes:?}"
    );
    assert!(
        said("2.json", whole_two, torn_two, "is not a task: "),
        "{changes:?}"
    );
    let text = taskproof()
        .args(["check", "--restore"])
        .arg(c.list())
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&text.stdout).contains("nothing to restore"));
}

#[test]
fn a_task_the_journal_holds_no_whole_version_of_is_named_and_not_written() {
    let c = Config::new();
    let one = c.write_task(1, "Alpha", "completed");
    // Task 2 was only ever read mid-write.
    c.torn_read(2, b"");
    c.torn_read(2, br#"{"id": "2", "subj"#);
    let twos = seen_lines(&c, "2.json");
    assert_eq!(twos.len(), 2, "{twos:?}");
    c.reset();

    let (code, doc, _) = check(&c.list(), &[]);
    assert_eq!(code, 1);
    let m = &of_kind(&doc, "vanished")["2.json"];
    assert!(
        m.contains(&format!(
            "the journal holds no whole version of it (line {}, journaled at ",
            twos[1].0
        )) && m.contains(&format!("line {}, journaled at ", twos[0].0))
            && m.ends_with("so it cannot be restored"),
        "{m}"
    );

    let (code, doc, stderr) = check(&c.list(), &["--restore", "--into", "back"]);
    assert_eq!(code, 1, "task 2 is still vanished: {doc:#}\n{stderr}");
    let got = files(&c.dir.join("tasks/back"));
    assert_eq!(got["1.json"], one, "the other tasks are restored");
    assert!(!got.contains_key("2.json"), "nothing is written for task 2");
    let skipped: Vec<(&str, &str)> = doc["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["done"] == false)
        .map(|c| {
            (
                c["change"].as_str().unwrap(),
                c["skipped"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(skipped.len(), 1, "{doc:#}");
    let (change, why) = skipped[0];
    assert!(change.starts_with("restore 2.json into "), "{change}");
    assert!(
        why.contains("holds no whole version of it (")
            && why.contains("is not a task: ")
            && why.contains("is empty: ")
            && why.ends_with("nothing was written for it"),
        "{why}"
    );
}

/// Writer processes of the stress test: stopped, killed if they outlive it, and reaped however
/// the test ends.
struct Writers(Vec<std::process::Child>);

impl Writers {
    /// Waits for every writer (they stop on their own once the stop file exists; one that has
    /// not within 30 s is killed and fails the test) and returns how many rewrites each made.
    fn finish(&mut self) -> Vec<u64> {
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut made = Vec::new();
        for mut child in std::mem::take(&mut self.0) {
            while child.try_wait().unwrap().is_none() {
                if Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!("a writer did not stop within 30 s of the stop file");
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let out = child.wait_with_output().unwrap();
            let said = String::from_utf8_lossy(&out.stdout);
            assert!(out.status.success(), "a writer failed: {out:?}");
            made.push(said.trim().parse().unwrap_or(0));
        }
        made
    }
}

impl Drop for Writers {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// One hook run of the stress test, as Claude Code starts it for the list `plan` of the
/// configuration folder `dir`.
fn stress_hook(dir: &Path, event: &Value) -> Output {
    let mut cmd = taskproof();
    cmd.args(["check", "--stdin"])
        .env("CLAUDE_CONFIG_DIR", dir)
        .env("CLAUDE_CODE_TASK_LIST_ID", LIST)
        .env_remove("HOME");
    run_with_stdin(cmd, event.to_string().as_bytes())
}

/// A version of a task file as the journal holds it: its bytes, and its `torn` mark.
type Version = (Vec<u8>, Option<String>);

/// Whether `bytes` are a whole task of the file `name` (claude-code layout): a JSON object
/// with the id its name says, a subject and a status.
fn is_task(name: &str, bytes: &[u8]) -> bool {
    let Ok(v) = serde_json::from_slice::<Value>(bytes) else {
        return false;
    };
    v["id"].as_str().map(|i| format!("{i}.json")).as_deref() == Some(name)
        && v["subject"].is_string()
        && v["status"].is_string()
}

#[test]
#[cfg_attr(not(taskproof_has_python), ignore = "needs python3 on PATH")]
fn restore_after_writers_rewrote_tasks_in_place_under_concurrent_hooks_writes_only_whole_tasks() {
    // The stress of issue 49, made short: 200 tasks, 4 processes rewriting them in place, 6
    // threads running the hook on the list as Claude Code would, then a last hook run, a
    // reset, and a restore into the same list.
    require(&[Tool::Python]);
    const TASKS: u64 = 200;
    const WRITERS: u64 = 4;
    const HOOKS: u64 = 6;
    let c = Config::new();
    let list = c.list();
    for i in 1..=TASKS {
        let task = json!({"id": i.to_string(), "subject": format!("Task {i}"),
                          "description": "as created", "activeForm": format!("Doing task {i}"),
                          "status": "pending", "blocks": [], "blockedBy": []});
        write(
            &list,
            &format!("{i}.json"),
            &serde_json::to_string_pretty(&task).unwrap(),
        );
    }
    write(&list, ".highwatermark", &TASKS.to_string());
    write(&list, ".lock", "");
    // The hook has journaled every task whole before the writers start.
    let owner = |id: u64, who: &str| {
        pre(
            "TaskUpdate",
            json!({"taskId": id.to_string(), "owner": who}),
        )
    };
    c.hook(&owner(1, "first"), &[]);

    let stop = c.dir.join("stop");
    let script = crate::util::repo().join("tests/fixtures/check/rewrite_in_place.py");
    let mut writers = Writers(Vec::new());
    for w in 0..WRITERS {
        let child = std::process::Command::new("python3")
            .arg(&script)
            .arg(&list)
            .args([w, WRITERS, TASKS].map(|n| n.to_string()))
            .arg(&stop)
            .arg("60")
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        writers.0.push(child);
    }
    let until = Instant::now() + Duration::from_secs(3);
    let dir = c.dir.as_path();
    let runs: Vec<(u64, Vec<String>)> = std::thread::scope(|s| {
        let hooks: Vec<_> = (0..HOOKS)
            .map(|h| {
                s.spawn(move || {
                    let (mut n, mut bad) = (0u64, Vec::new());
                    let mut x = h * 7919 + 1;
                    while Instant::now() < until {
                        x = x
                            .wrapping_mul(6_364_136_223_846_793_005)
                            .wrapping_add(1_442_695_040_888_963_407);
                        let id = (x >> 33) % TASKS + 1;
                        // A call's PreToolUse reads the whole list; its PostToolUse reads the
                        // file the call wrote.
                        let event = if n % 2 == 0 {
                            owner(id, &format!("hook {h}"))
                        } else {
                            post("TaskUpdate", json!({"taskId": id.to_string()}))
                        };
                        let out = stress_hook(dir, &event);
                        n += 1;
                        let said = String::from_utf8_lossy(&out.stdout);
                        if out.status.code() != Some(0)
                            || said.contains("could not keep its journal")
                        {
                            bad.push(format!("{out:?}"));
                        }
                    }
                    (n, bad)
                })
            })
            .collect();
        hooks.into_iter().map(|h| h.join().unwrap()).collect()
    });
    std::fs::write(&stop, "").unwrap();
    let made = writers.finish();
    let bad: Vec<&String> = runs.iter().flat_map(|(_, b)| b).collect();
    assert!(bad.is_empty(), "hook runs that failed: {bad:#?}");
    // The last hook run, then Claude Code's reset of the list.
    c.hook(&owner(1, "last"), &[]);

    // What the journal saw: every version of each task file, in order, and its mark.
    let text = std::fs::read_to_string(c.journal()).unwrap();
    let mut versions: BTreeMap<String, Vec<Version>> = BTreeMap::new();
    for line in text.lines().skip(1) {
        let v: Value = serde_json::from_str(line).unwrap();
        assert_ne!(v["op"], "gone", "no file went during the stress: {line}");
        if v["op"] == "seen" {
            let bytes = v["text"].as_str().unwrap().as_bytes().to_vec();
            let file = v["file"].as_str().unwrap().to_string();
            versions
                .entry(file)
                .or_default()
                .push((bytes, v["torn"].as_str().map(str::to_string)));
        }
    }
    assert_eq!(versions.len(), TASKS as usize);
    let marked: Vec<&str> = versions
        .values()
        .flatten()
        .filter_map(|(_, t)| t.as_deref())
        .collect();
    // Every version the hook did not mark is a whole task: a torn read is never unmarked.
    for (file, vs) in &versions {
        for (bytes, torn) in vs {
            assert!(
                torn.is_some() || is_task(file, bytes),
                "{file}: an unmarked version that is not a task: {:?}",
                String::from_utf8_lossy(bytes)
            );
        }
    }
    // Each writer stopped in the middle of a rewrite: the last run read its file torn.
    let stopped: Vec<String> = (0..WRITERS)
        .map(|w| format!("{}.json", if w == 0 { WRITERS } else { w }))
        .collect();
    for file in &stopped {
        let last = versions[file].last().unwrap();
        assert!(
            last.1.is_some(),
            "{file}: {:?}",
            String::from_utf8_lossy(&last.0)
        );
    }
    let latest_whole: BTreeMap<&String, &Vec<u8>> = versions
        .iter()
        .map(|(f, vs)| {
            let whole = vs.iter().rev().find(|(b, t)| t.is_none() && is_task(f, b));
            (
                f,
                &whole
                    .expect("every task was journaled whole before the writers")
                    .0,
            )
        })
        .collect();
    eprintln!(
        "{} hook runs, {made:?} rewrites by the writers, {} journaled versions, {} of them marked torn ({} empty, {} changing, {} malformed)",
        runs.iter().map(|r| r.0).sum::<u64>(),
        versions.values().map(Vec::len).sum::<usize>(),
        marked.len(),
        marked.iter().filter(|t| **t == "empty").count(),
        marked.iter().filter(|t| **t == "changing").count(),
        marked.iter().filter(|t| **t == "malformed").count(),
    );

    c.reset_files();
    let (code, doc, stderr) = check(&list, &["--restore", "--into-same-list"]);
    let back: BTreeMap<String, Vec<u8>> = files(&list)
        .into_iter()
        .filter(|(n, _)| n.ends_with(".json"))
        .collect();
    assert_eq!(back.len(), TASKS as usize, "{doc:#}\n{stderr}");
    for (file, bytes) in &back {
        assert!(
            is_task(file, bytes),
            "{file} restored is not a task: {:?}",
            String::from_utf8_lossy(bytes)
        );
        assert!(
            bytes == latest_whole[file],
            "{file} restored is not the latest whole version the journal saw"
        );
    }
    assert_eq!(code, 0, "{doc:#}\n{stderr}");
    let changes: Vec<&str> = doc["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["change"].as_str().unwrap())
        .collect();
    for file in &stopped {
        let said = changes
            .iter()
            .find(|c| c.starts_with(&format!("restore {file} into ")))
            .unwrap();
        assert!(
            said.contains("its last whole one; the newer ones are not ("),
            "{said}"
        );
    }
}
