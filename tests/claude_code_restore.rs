//! Issue 42 inside the real Claude Code: the hook's journal, `check` naming what Claude Code's
//! reset of a finished list took, and `check --restore` giving it back.
//!
//! An unmodified Claude Code runs in its terminal UI (a pseudo-terminal: the reset is done by
//! the UI, about 5 s after it sees every task of its list completed) with docs/hooks/settings.json
//! installed as tests/claude_code_hook.rs installs it, and the `taskproof` of this build first
//! on its `PATH`. The scripted model makes three tasks in the named list `plan`, deletes the
//! third (`TaskUpdate` status `deleted`), completes the other two, and the test waits until the
//! UI has deleted their files. Then `taskproof check` must name both as vanished with the
//! cause, and not the deleted one; `taskproof check --restore` must write both back into a
//! new list byte for byte as Claude Code wrote them (read from disk right after each
//! completion), leave the deleted one out, and the restored list must still hold them a
//! while later, with the UI that reset the old list still running.
//!
//! Run on 2.1.112 and on the newest version measured (`TASKPROOF_TEST_CLAUDE_CODE_NEWEST`,
//! default 2.1.332). They need node and npm; without them they are skipped, each naming what
//! is missing (under CI they fail instead: tests/util.rs `require`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use taskproof_claude_code::{ClaudeCodeSession, Extra};
use taskproof_session::Drive;
use taskproof_session::{Session, SessionOptions};

use crate::claude_code_hook::{bin_dir, prepared_version, snippet_for};
use crate::util::taskproof;

const LIST: &str = "plan";

fn ok(s: &mut ClaudeCodeSession, request: Value) -> Value {
    let a = s
        .call(&request)
        .unwrap_or_else(|e| panic!("{request}: {e}\n{}", s.stderr()));
    assert_eq!(a["ok"], true, "{request} -> {a}\n{}", s.stderr());
    a
}

/// The task files of a list folder, by name, with their bytes.
fn task_files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json") && !n.starts_with('.'))
        .map(|n| {
            let b = std::fs::read(dir.join(&n)).unwrap();
            (n, b)
        })
        .collect()
}

/// Reads `1.json`-style files right after the call that wrote them.
fn bytes_of(dir: &Path, file: &str) -> Vec<u8> {
    std::fs::read(dir.join(file)).unwrap_or_else(|e| {
        panic!("{file} was gone before the test could read it (the reset came first?): {e}")
    })
}

/// `taskproof check ARGS` on `path`: exit status, stdout, stderr.
fn check(path: &Path, args: &[&str]) -> (i32, String, String) {
    let out = taskproof()
        .arg("check")
        .arg(path)
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn finished_list_is_reset_named_and_restored(version: &str) {
    let Some(cc) = prepared_version(version) else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let options = SessionOptions {
        timeout: Duration::from_secs(90),
        start_timeout: Duration::from_secs(120),
        interactive: true,
        ..SessionOptions::default()
    };
    let extra = Extra {
        settings: Some(snippet_for(version)),
        path: vec![bin_dir()],
    };
    let mut s = ClaudeCodeSession::open_with(&cc, root.path(), options, &extra)
        .unwrap_or_else(|(e, err)| panic!("open: {e}\n{err}"));
    assert_eq!(s.drive(), Drive::Terminal, "the reset is the terminal UI's");
    let list = root.path().join(LIST);

    for subject in ["Alpha", "Beta", "Gamma"] {
        ok(
            &mut s,
            json!({"op": "create", "list": LIST, "task": {"subject": subject}}),
        );
    }
    ok(&mut s, json!({"op": "delete", "list": LIST, "id": "3"}));
    assert!(!list.join("3.json").exists(), "the agent's delete ran");
    ok(
        &mut s,
        json!({"op": "update", "list": LIST, "id": "1", "patch": {"status": "completed"}}),
    );
    // Task 1 is final now: completing 2 does not touch it (no edges), and the list is not
    // finished while 2 is pending, so no reset can come before this read.
    let one = bytes_of(&list, "1.json");
    ok(
        &mut s,
        json!({"op": "update", "list": LIST, "id": "2", "patch": {"status": "completed"}}),
    );
    let two = bytes_of(&list, "2.json");
    assert!(
        String::from_utf8_lossy(&two).contains("\"completed\""),
        "{}",
        String::from_utf8_lossy(&two)
    );

    // The UI resets the finished list about 5 s later.
    let start = Instant::now();
    while !task_files(&list).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "Claude Code {version} did not reset the finished list within 30 s: {:?}",
            task_files(&list).keys()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!(
        "Claude Code {version}: the task files of {LIST} went {:.1} s after the last completion returned",
        start.elapsed().as_secs_f64()
    );

    let journal = root.path().join(".taskproof-journal").join("plan.jsonl");
    let text = std::fs::read_to_string(&journal)
        .unwrap_or_else(|e| panic!("the hook kept no journal at {}: {e}", journal.display()));
    eprintln!("$ cut -c1-150 {}\n{}", journal.display(), cut(&text, 150));

    let (code, out, err) = check(&list, &[]);
    eprintln!("$ taskproof check {}\n{out}{err}", list.display());
    assert_eq!(code, 1, "{out}{err}");
    for (file, subject) in [("1.json", "Alpha"), ("2.json", "Beta")] {
        let line = out
            .lines()
            .find(|l| l.contains(&format!("S14 vanished {file}:")))
            .unwrap_or_else(|| panic!("no vanished finding for {file}:\n{out}"));
        for want in [
            &format!(
                "task {} \"{subject}\" (completed) is gone, and no delete was asked for",
                &file[..1]
            ),
            "and its file went ",
            "known cause: Claude Code's reset of a finished list (anthropics/claude-code#38075): all 2 tasks were completed and went together",
        ] {
            assert!(line.contains(want), "missing {want:?} in {line}");
        }
    }
    assert!(
        !out.contains("3.json"),
        "the task the agent deleted is not vanished:\n{out}"
    );

    let (code, out, err) = check(&list, &["--restore"]);
    eprintln!("$ taskproof check {} --restore\n{out}{err}", list.display());
    assert_eq!(code, 0, "{out}{err}");
    let restored = restored_list(root.path());
    let back = task_files(&restored);
    assert_eq!(
        back.keys().collect::<Vec<_>>(),
        ["1.json", "2.json"],
        "every vanished task, and not the deleted one"
    );
    assert_eq!(back["1.json"], one, "1.json restored byte for byte");
    assert_eq!(back["2.json"], two, "2.json restored byte for byte");

    // The UI that reset the old list is still running: the new list is not its list.
    std::thread::sleep(Duration::from_secs(7));
    assert_eq!(
        task_files(&restored),
        back,
        "the restored list was left alone"
    );
    let (code, out, err) = check(&list, &[]);
    assert_eq!(code, 0, "nothing left vanished: {out}{err}");
    s.close().unwrap();
}

/// The one list folder `check --restore` made beside `plan`.
fn restored_list(root: &Path) -> PathBuf {
    let made: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("plan-restored-"))
        })
        .collect();
    assert_eq!(made.len(), 1, "{made:?}");
    made[0].clone()
}

/// Each line of `text` cut to `n` characters, for the test's output.
fn cut(text: &str, n: usize) -> String {
    text.lines()
        .map(|l| l.chars().take(n).collect::<String>() + "\n")
        .collect()
}

#[test]
#[cfg_attr(not(taskproof_has_npm), ignore = "needs node and npm on PATH")]
fn claude_code_2_1_112_finished_list_is_reset_then_named_and_restored() {
    finished_list_is_reset_named_and_restored("2.1.112");
}

#[test]
#[cfg_attr(not(taskproof_has_npm), ignore = "needs node and npm on PATH")]
fn claude_code_newest_finished_list_is_reset_then_named_and_restored() {
    let version =
        std::env::var("TASKPROOF_TEST_CLAUDE_CODE_NEWEST").unwrap_or_else(|_| "2.1.332".into());
    finished_list_is_reset_named_and_restored(&version);
}
