//! No process a target started outlives taskproof: not when a session closes normally, not
//! when `taskproof run` or `race` gets SIGTERM or SIGINT (crates/session/src/group.rs).
//!
//! The processes of one taskproof are told apart by a private `TMPDIR` given to it: an
//! adapter inherits it, and a Claude Code CLI (whose environment is cleared) has its private
//! `HOME` inside it. A process whose environment names that folder belongs to the run.

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::util;
use taskproof_session::Session;
use taskproof_targets::ProcessSession;

/// The processes (not zombies) other than `except` whose environment mentions `marker`.
fn marked(marker: &str, except: u32) -> Vec<(u32, String)> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == except || pid == std::process::id() {
            continue;
        }
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        if !String::from_utf8_lossy(&environ).contains(marker) {
            continue;
        }
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let zombie = stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
        if !zombie {
            let cmd = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            found.push((pid, cmd));
        }
    }
    found
}

/// Waits up to `limit` for `done` to hold, checking every 50 ms.
fn wait_for(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Starts `taskproof ARGS` with `tmp` as its TMPDIR, output discarded, and the signals it
/// handles at their default disposition, as a terminal leaves them. (A test run started in
/// the background by a shell without job control inherits SIGINT ignored, and taskproof
/// rightly leaves an ignored signal ignored, so the SIGINT test would wait in vain.)
fn start(tmp: &Path, args: &[&str]) -> Child {
    use std::os::unix::process::CommandExt;
    let mut command = util::taskproof();
    command
        .args(args)
        .env("TMPDIR", tmp)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: between fork and exec this only calls signal(2), which is async-signal-safe.
    unsafe {
        command.pre_exec(|| {
            for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                libc::signal(signal, libc::SIG_DFL);
            }
            Ok(())
        });
    }
    command.spawn().expect("start taskproof")
}

/// Sends `signal` to taskproof once `ready` holds for its processes, then checks that it
/// ended by that signal and that within a bounded wait nothing of its run is left.
fn signal_and_check(
    mut child: Child,
    marker: &str,
    signal: rustix::process::Signal,
    ready: impl Fn(&[(u32, String)]) -> bool,
) {
    let me = child.id();
    let started = wait_for(Duration::from_secs(180), || ready(&marked(marker, me)));
    if !started {
        let _ = child.kill();
        panic!(
            "the run's processes never showed up: {:?}",
            marked(marker, me)
        );
    }
    let pid = rustix::process::Pid::from_raw(me as i32).unwrap();
    rustix::process::kill_process(pid, signal).unwrap();
    let mut status = None;
    let ended = wait_for(Duration::from_secs(20), || {
        status = child.try_wait().unwrap();
        status.is_some()
    });
    if !ended {
        let _ = child.kill();
        panic!("taskproof did not end within 20 s of {signal:?}");
    }
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        status.unwrap().signal(),
        Some(signal.as_raw()),
        "taskproof should end as the signal would: {status:?}"
    );
    let mut left = Vec::new();
    let gone = wait_for(Duration::from_secs(10), || {
        left = marked(marker, me);
        left.is_empty()
    });
    if !gone {
        // Clean up before failing, so a broken build leaves nothing running either.
        for (pid, _) in &left {
            if let Some(p) = rustix::process::Pid::from_raw(*pid as i32) {
                let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
            }
        }
        panic!("processes of the run outlived taskproof's {signal:?}: {left:?}");
    }
}

/// An adapter that answers `hello`, leaves a sleeper in its group and then never answers.
fn sleepy_adapter(dir: &Path) -> String {
    let hello =
        r#"{"ok":true,"protocol":1,"name":"sleepy","version":"0","layout":"opaque","features":[]}"#;
    util::write(
        dir,
        "sleepy.sh",
        &format!("read l\necho '{hello}'\nsleep 300 &\nread l\nsleep 301\n"),
    );
    format!("cmd:sh {}", dir.join("sleepy.sh").display())
}

fn sleepers(found: &[(u32, String)]) -> usize {
    found
        .iter()
        .filter(|(_, c)| c.starts_with("sleep 30"))
        .count()
}

#[test]
fn sigterm_to_run_ends_every_adapter_process() {
    let tmp = util::tempdir();
    let target = sleepy_adapter(tmp.path());
    let marker = tmp.path().to_str().unwrap().to_string();
    let child = start(
        tmp.path(),
        &[
            "run",
            "--target",
            &target,
            "--filter",
            "rt01*",
            "--timeout",
            "120",
            "--jobs",
            "1",
        ],
    );
    // Both sleepers run: the session is inside its first request.
    signal_and_check(child, &marker, rustix::process::Signal::TERM, |f| {
        sleepers(f) == 2
    });
}

#[test]
fn sigint_to_race_ends_every_adapter_process() {
    let tmp = util::tempdir();
    let target = sleepy_adapter(tmp.path());
    let marker = tmp.path().to_str().unwrap().to_string();
    let child = start(
        tmp.path(),
        &[
            "race",
            "--target",
            &target,
            "--workload",
            "create",
            "--writers",
            "2",
            "--ops",
            "2",
            "--timeout",
            "120",
        ],
    );
    signal_and_check(child, &marker, rustix::process::Signal::INT, |f| {
        sleepers(f) >= 2
    });
}

#[test]
fn a_closed_adapter_leaves_nothing_running() {
    // The adapter leaves a sleeper behind and exits 0 at end of input, as asked: closing the
    // session ends the sleeper too.
    let root = util::tempdir();
    let hello =
        r#"{"ok":true,"protocol":1,"name":"t","version":"0","layout":"opaque","features":[]}"#;
    let script =
        format!("sleep 300 & echo \"sleeper $!\" >&2; read l; echo '{hello}'; cat >/dev/null");
    let mut s = ProcessSession::spawn(&script, root.path(), Duration::from_secs(30)).unwrap();
    // stderr is drained by a thread of its own: give it a moment.
    wait_for(Duration::from_secs(10), || s.stderr().contains('\n'));
    let sleeper: u32 = s
        .stderr()
        .trim()
        .strip_prefix("sleeper ")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no sleeper pid in {:?}", s.stderr()));
    s.close().unwrap();
    let gone = wait_for(Duration::from_secs(10), || {
        std::fs::read_to_string(format!("/proc/{sleeper}/stat"))
            .map(|stat| stat.contains(") Z"))
            .unwrap_or(true)
    });
    drop(s);
    assert!(
        gone,
        "the adapter's sleeper {sleeper} outlived the closed session"
    );
}

#[test]
#[cfg_attr(not(taskproof_has_npm), ignore = "needs node and npm on PATH")]
fn sigterm_to_run_on_claude_code_ends_every_cli() {
    // The real CLI (cached by .ci/run; installed here otherwise), as tests/claude_code.rs.
    crate::util::require(&[crate::util::Tool::Npm]);
    let version = std::env::var("TASKPROOF_TEST_CLAUDE_CODE").unwrap_or_else(|_| "2.1.112".into());
    let cc = taskproof_claude_code::ClaudeCode::parse(&version).unwrap();
    cc.prepare().expect("install Claude Code with npm");
    let tmp = util::tempdir();
    let marker = tmp.path().to_str().unwrap().to_string();
    let target = format!("claude-code@{version}");
    let child = start(
        tmp.path(),
        &[
            "run",
            "--target",
            &target,
            "--filter",
            "rt0*",
            "--timeout",
            "60",
            "--jobs",
            "2",
        ],
    );
    // A CLI runs (its private HOME is inside the TMPDIR): node for cli.js, or the native
    // executable.
    signal_and_check(child, &marker, rustix::process::Signal::TERM, |f| {
        f.iter().any(|(_, c)| c.contains("claude"))
    });
    // The CLIs' private config folders went with them.
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("taskproof-claude-code-"))
        .collect();
    assert!(left.is_empty(), "config folders left behind: {left:?}");
}
