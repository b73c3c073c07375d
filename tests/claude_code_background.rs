//! The real Claude Code as a background-task target (issue 25): one published version,
//! 2.1.112 (`TASKPROOF_TEST_CLAUDE_CODE_BG` to change it), driven through `Bash` with
//! `run_in_background`, its output tool and its kill tool, the notifications counted where
//! the model receives them and the processes read from `/proc`.
//!
//! These tests need node and npm (the CLI is installed from npm into the cache). Each starts
//! one CLI and keeps its turns few: every turn costs about a CPU-second.

use std::time::{Duration, Instant};

use taskproof_claude_code::ClaudeCode;
use taskproof_claude_code::background::{BgOptions, ClaudeCodeBg};
use taskproof_session::background::{BgEnd, BgKill, BgSession, BgStatus, BgWork};

fn version() -> String {
    std::env::var("TASKPROOF_TEST_CLAUDE_CODE_BG").unwrap_or_else(|_| "2.1.112".into())
}

/// A session on the real CLI; `None` (the test is skipped, or fails under CI) without node
/// and npm.
fn open(root: &std::path::Path) -> Option<ClaudeCodeBg> {
    crate::util::require(&[crate::util::Tool::Npm]);
    let cc = ClaudeCode::parse(&version()).expect("a version number");
    let options = BgOptions {
        timeout: Duration::from_secs(60),
        start_timeout: Duration::from_secs(120),
        model_log: None,
    };
    Some(ClaudeCodeBg::open(&cc, root, options).expect("open a background session"))
}

fn work(command: &str) -> BgWork {
    BgWork {
        command: command.into(),
    }
}

#[test]
#[cfg_attr(not(taskproof_has_npm), ignore = "needs node and npm on PATH")]
fn a_task_that_completes_is_notified_exactly_once_with_its_exit_code() {
    let root = tempfile::tempdir().unwrap();
    let Some(mut s) = open(root.path()) else {
        return;
    };
    let started = s.spawn(&work("echo made > made.txt; exit 0")).unwrap();
    let notes = s.notifications(Duration::from_secs(30)).unwrap();
    let mine: Vec<_> = notes.iter().filter(|n| n.id == started.id).collect();
    assert_eq!(mine.len(), 1, "{notes:?}");
    assert_eq!(mine[0].status, BgStatus::Completed);
    assert_eq!(mine[0].exit_code, Some(0));
    // The work really ran, in the session's folder.
    assert_eq!(
        std::fs::read_to_string(root.path().join("made.txt")).unwrap(),
        "made\n"
    );
    // A little longer: no second notification of the same task.
    std::thread::sleep(Duration::from_secs(2));
    let again = s.notifications(Duration::ZERO).unwrap();
    assert_eq!(again.iter().filter(|n| n.id == started.id).count(), 1);
    s.end(BgEnd::Exit).unwrap();
}

#[test]
#[cfg_attr(not(taskproof_has_npm), ignore = "needs node and npm on PATH")]
fn a_kill_ends_the_task_and_its_processes() {
    let root = tempfile::tempdir().unwrap();
    let Some(mut s) = open(root.path()) else {
        return;
    };
    assert_eq!(s.tools().kill.0, "TaskStop", "2.1.112's kill tool");
    let started = s.spawn(&work("echo started; sleep 120")).unwrap();
    // Its shell and the sleep are seen on the machine.
    let deadline = Instant::now() + Duration::from_secs(10);
    while s.procs_of(&started.id).is_empty() {
        assert!(
            Instant::now() < deadline,
            "no process of the task was found"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Its output so far, through the output tool, while it runs.
    let deadline = Instant::now() + Duration::from_secs(10);
    let output = loop {
        let o = s.output(&started.id, 0).unwrap();
        if !o.text.is_empty() || Instant::now() >= deadline {
            break o;
        }
    };
    assert_eq!(output.text, "started\n");
    assert_eq!(output.status, Some(BgStatus::Running));
    assert_eq!(s.kill(&started.id).unwrap(), BgKill::Killed);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !s.procs_of(&started.id).is_empty() {
        assert!(
            Instant::now() < deadline,
            "alive 10 s after the kill: {:?}",
            s.procs_of(&started.id)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // A second kill finds it final.
    assert!(matches!(
        s.kill(&started.id).unwrap(),
        BgKill::AlreadyFinal(_) | BgKill::NotFound(_)
    ));
    s.end(BgEnd::Exit).unwrap();
}

#[test]
#[cfg_attr(not(taskproof_has_npm), ignore = "needs node and npm on PATH")]
fn tasks_left_running_by_a_killed_session_are_seen_and_then_cleaned_up() {
    let root = tempfile::tempdir().unwrap();
    let Some(mut s) = open(root.path()) else {
        return;
    };
    let started = s.spawn(&work("sleep 120")).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while s.procs_of(&started.id).is_empty() {
        assert!(
            Instant::now() < deadline,
            "no process of the task was found"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let cli = s.pid();
    s.end(BgEnd::Sigkill).unwrap();
    // The CLI is gone; the task's shell is not (2.1.112 starts it in a session of its own),
    // and the harness sees it.
    assert!(
        std::fs::read_to_string(format!("/proc/{cli}/stat")).map_or(true, |st| st
            .rsplit_once(')')
            .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))),
        "the CLI outlived SIGKILL"
    );
    let pids = s.task_pids().unwrap();
    assert!(
        !pids.is_empty(),
        "the orphans of a SIGKILLed session are visible"
    );
    // Dropping the session kills them: nothing is left behind.
    drop(s);
    for pid in pids {
        let alive = std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|st| {
            !st.rsplit_once(')')
                .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
        });
        assert!(!alive, "process {pid} outlived the session's cleanup");
    }
}
