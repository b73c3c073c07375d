//! A session that is an adapter process: `sh -c COMMAND` with `TASKPROOF_ROOT` set, one JSON
//! request per line on its stdin, one answer per line on its stdout.
//!
//! The harness must never hang or leak processes whatever the adapter does, so: the adapter
//! runs in a process group of its own (a kill reaches whatever `sh` started, not just `sh`);
//! stdout and stderr are drained by threads, answers arrive over a channel read with a
//! timeout; a write to a dead adapter is an error (Rust ignores SIGPIPE); and dropping the
//! session kills the group.

use std::io::Write;
use std::path::Path;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use taskproof_core::protocol::Hello;
use taskproof_session::group::Group;
use taskproof_session::pipes::{self, Line};
use taskproof_session::wire::{Launch, WireLog};
use taskproof_session::{Session, SessionOptions, TargetError};

/// The longest answer line accepted.
const MAX_LINE: usize = 64 * 1024 * 1024;
/// How much of the adapter's stderr is kept for the report.
const MAX_STDERR: usize = 256 * 1024;

pub struct ProcessSession {
    child: Group,
    stdin: Option<ChildStdin>,
    lines: Receiver<Line>,
    stderr: Arc<Mutex<Vec<u8>>>,
    /// The thread draining stderr; joined (briefly) after a kill so the report has it all.
    stderr_thread: Option<std::thread::JoinHandle<()>>,
    timeout: Duration,
    hello: Hello,
    /// Set once the session failed or was killed; every later call returns it.
    dead: Option<TargetError>,
    /// The scenario's wire log and this process's number in it (`SessionOptions::wire`).
    wire: Option<(WireLog, usize)>,
}

impl ProcessSession {
    /// Starts the adapter on `root` and asks `hello`, giving start-up and every request the
    /// same limit, `timeout`. [`ProcessSession::spawn_with_stderr`] gives start-up its own.
    pub fn spawn(
        command: &str,
        root: &Path,
        timeout: Duration,
    ) -> Result<ProcessSession, TargetError> {
        let options = SessionOptions {
            timeout,
            start_timeout: timeout,
            ..SessionOptions::default()
        };
        Self::spawn_with_stderr(command, root, options).map_err(|(e, _)| e)
    }

    /// Starts the adapter on `root` and asks `hello`: starting and the `hello` answer
    /// together get `options.start_timeout` (a failure is [`TargetError::StartTimeout`]),
    /// every later request `options.timeout`. A failure comes with what the adapter wrote to
    /// stderr before it failed, for the report.
    pub fn spawn_with_stderr(
        command: &str,
        root: &Path,
        options: SessionOptions,
    ) -> Result<ProcessSession, (TargetError, String)> {
        let timeout = options.timeout;
        let no_stderr = |e: TargetError| (e, String::new());
        let root =
            std::path::absolute(root).map_err(|e| no_stderr(TargetError::Spawn(e.to_string())))?;
        let mut child = Group::spawn(
            Command::new("sh")
                .arg("-c")
                .arg(command)
                .env("TASKPROOF_ROOT", &root)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped()),
        )
        .map_err(|e| no_stderr(TargetError::Spawn(format!("sh -c {command:?}: {e}"))))?;
        let stdout = child.child().stdout.take().expect("piped stdout");
        let stderr_pipe = child.child().stderr.take().expect("piped stderr");
        let lines = pipes::lines(stdout, MAX_LINE);
        let (stderr, stderr_thread) = pipes::keep_stderr(stderr_pipe, MAX_STDERR);
        let stdin = child.child().stdin.take();
        let wire = options.wire.as_ref().map(|log| {
            let process = log.start(Launch {
                script: command.to_string(),
                args: Vec::new(),
                env: vec![(
                    "TASKPROOF_ROOT".to_string(),
                    root.to_string_lossy().into_owned(),
                )],
                cwd: None,
                root: root.clone(),
                list: None,
            });
            (log.clone(), process)
        });
        let mut session = ProcessSession {
            child,
            stdin,
            lines,
            stderr,
            stderr_thread: Some(stderr_thread),
            timeout,
            hello: Hello {
                protocol: 0,
                name: String::new(),
                version: String::new(),
                layout: taskproof_core::protocol::Layout::Opaque,
                features: Default::default(),
                mapping: Default::default(),
            },
            dead: None,
            wire,
        };
        // The start-up limit runs from the spawn, so that it bounds the whole start-up
        // (loading a runtime, reading the root) and the hello, not only the answer.
        let hello = serde_json::json!({"op": "hello"});
        let answer = match session.call_within(&hello, options.start_timeout, true) {
            Ok(a) => a,
            Err(e) => return Err((e, session.stderr())),
        };
        match Hello::from_json(&answer) {
            Ok(h) => session.hello = h,
            Err(e) => {
                session.kill();
                return Err((TargetError::BadHello(e), session.stderr()));
            }
        }
        Ok(session)
    }

    /// Sends one request and waits at most `limit` for its answer; `starting` says the
    /// limit is the start-up limit, for the error.
    fn call_within(
        &mut self,
        request: &Value,
        limit: Duration,
        starting: bool,
    ) -> Result<Value, TargetError> {
        if let Some(e) = &self.dead {
            return Err(e.clone());
        }
        let mut line = serde_json::to_vec(request).expect("requests serialize");
        line.push(b'\n');
        let written = match self.stdin.as_mut() {
            Some(stdin) => stdin.write_all(&line).and_then(|()| stdin.flush()).is_ok(),
            None => false,
        };
        if written && let Some((log, process)) = &self.wire {
            log.sent(*process, String::from_utf8_lossy(&line).trim_end());
        }
        if !written {
            let status = self.exit_status();
            return Err(self.fail(TargetError::Exited { status }));
        }
        match self.lines.recv_timeout(limit) {
            Ok(Line::Text(bytes)) => {
                let text = String::from_utf8_lossy(&bytes);
                let trimmed = text.trim_end_matches(['\n', '\r']);
                if let Some((log, process)) = &self.wire {
                    log.got(*process, trimmed);
                }
                match serde_json::from_str::<Value>(trimmed) {
                    Ok(v @ Value::Object(_)) => Ok(v),
                    Ok(_) => Err(self.fail(TargetError::Garbage {
                        line: trimmed.chars().take(500).collect(),
                        reason: "not an object".into(),
                    })),
                    Err(e) => Err(self.fail(TargetError::Garbage {
                        line: trimmed.chars().take(500).collect(),
                        reason: e.to_string(),
                    })),
                }
            }
            Ok(Line::TooLong) => Err(self.fail(TargetError::Garbage {
                line: String::new(),
                reason: format!("an answer line longer than {MAX_LINE} bytes"),
            })),
            Err(RecvTimeoutError::Timeout) => Err(self.fail(if starting {
                TargetError::StartTimeout(limit)
            } else {
                TargetError::Timeout(limit)
            })),
            Err(RecvTimeoutError::Disconnected) => {
                let status = self.exit_status();
                Err(self.fail(TargetError::Exited { status }))
            }
        }
    }

    /// The adapter's process id, which is also the id of its process group.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    fn fail(&mut self, e: TargetError) -> TargetError {
        self.kill_group();
        self.dead = Some(e.clone());
        e
    }

    fn kill_group(&mut self) {
        if let Some((log, process)) = &self.wire {
            log.ended(*process, self.stdin.is_some());
        }
        self.stdin = None;
        // Also when `sh` already ended: what it left running in its group ends too.
        self.child.kill();
        if let Some(h) = self.stderr_thread.take() {
            pipes::finish_stderr(h, pipes::STDERR_GRACE);
        }
    }

    /// The exit status once the process is gone, waiting a little for it to be reaped.
    fn exit_status(&mut self) -> String {
        let deadline = Instant::now() + Duration::from_secs(1);
        loop {
            match self.child.exited() {
                Some(s) => return s.to_string(),
                None if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
                None => return "still running; killed".into(),
            }
        }
    }
}

impl Session for ProcessSession {
    fn hello(&self) -> &Hello {
        &self.hello
    }

    fn call(&mut self, request: &Value) -> Result<Value, TargetError> {
        self.call_within(request, self.timeout, false)
    }

    fn kill(&mut self) {
        self.kill_group();
        self.dead = Some(TargetError::Killed);
    }

    fn close(&mut self) -> Result<(), TargetError> {
        if let Some(ended) = TargetError::closed_already(&self.dead) {
            return ended;
        }
        if let Some((log, process)) = &self.wire {
            log.ended(*process, false);
        }
        self.stdin = None; // end of input
        let deadline = Instant::now() + self.timeout;
        loop {
            match self.child.exited() {
                Some(s) if s.success() => {
                    // Whatever the adapter left running in its group ends with it.
                    self.kill_group();
                    self.dead = Some(TargetError::Killed);
                    return Ok(());
                }
                Some(s) => {
                    return Err(self.fail(TargetError::Exited {
                        status: format!("{s} at end of input; expected exit status 0"),
                    }));
                }
                None if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(2)),
                None => {
                    return Err(self.fail(TargetError::Io(format!(
                        "the adapter did not exit within {:?} after end of input; killed",
                        self.timeout
                    ))));
                }
            }
        }
    }

    fn stderr(&self) -> String {
        let kept = self.stderr.lock().unwrap_or_else(|p| p.into_inner());
        String::from_utf8_lossy(&kept).into_owned()
    }
}

impl Drop for ProcessSession {
    fn drop(&mut self) {
        self.kill_group();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HELLO: &str =
        r#"{"ok":true,"protocol":1,"name":"t","version":"0","layout":"opaque","features":[]}"#;

    fn spawn(script: &str) -> Result<ProcessSession, TargetError> {
        let root = tempfile::tempdir().unwrap();
        ProcessSession::spawn(script, root.path(), Duration::from_millis(500))
    }

    #[test]
    fn a_silent_adapter_times_out_and_is_killed() {
        let e = spawn("sleep 30").err().unwrap();
        assert_eq!(e, TargetError::StartTimeout(Duration::from_millis(500)));
    }

    #[test]
    fn start_up_has_its_own_limit_apart_from_requests() {
        // Starting takes longer than a request may, but less than start-up may: the session
        // opens, and its requests are still held to the request limit.
        let script = format!(
            r#"sleep 1; read l; echo '{HELLO}'; read l; echo '{{"ok":true}}'; read l; sleep 30"#
        );
        let root = tempfile::tempdir().unwrap();
        let options = SessionOptions {
            timeout: Duration::from_millis(300),
            start_timeout: Duration::from_secs(20),
            ..SessionOptions::default()
        };
        let mut s = ProcessSession::spawn_with_stderr(&script, root.path(), options)
            .map_err(|(e, _)| e)
            .expect("a start-up within the start-up limit");
        let list = serde_json::json!({"op": "list", "list": "l"});
        assert_eq!(s.call(&list), Ok(serde_json::json!({"ok": true})));
        assert_eq!(
            s.call(&list),
            Err(TargetError::Timeout(Duration::from_millis(300)))
        );
    }

    #[test]
    fn garbage_is_an_error_of_the_target() {
        let e = spawn("read l; echo 'hello there'").err().unwrap();
        assert!(matches!(e, TargetError::Garbage { .. }), "{e:?}");
    }

    #[test]
    fn an_early_exit_is_reported_with_its_status() {
        let e = spawn("exit 3").err().unwrap();
        assert!(matches!(e, TargetError::Exited { .. }), "{e:?}");
    }

    #[test]
    fn a_bad_hello_is_reported() {
        let e = spawn(r#"read l; echo '{"ok":true,"protocol":9}'"#)
            .err()
            .unwrap();
        assert!(matches!(e, TargetError::BadHello(_)), "{e:?}");
    }

    #[test]
    fn stderr_is_kept_and_the_root_is_passed() {
        let script = format!(
            r#"read l; echo "root=$TASKPROOF_ROOT" >&2; echo '{HELLO}'; read l; echo '{{"ok":true}}'; cat >/dev/null"#
        );
        let mut s = spawn(&script).unwrap();
        assert_eq!(s.hello().name, "t");
        let v = s
            .call(&serde_json::json!({"op": "list", "list": "l"}))
            .unwrap();
        assert_eq!(v, serde_json::json!({"ok": true}));
        s.close().unwrap();
        assert!(s.stderr().starts_with("root=/"), "{}", s.stderr());
    }

    #[test]
    fn kill_reaches_the_whole_process_group() {
        // `sh` starts a background grandchild that would keep the pipes open forever.
        let script = format!(r#"sleep 300 & read l; echo '{HELLO}'; wait"#);
        let mut s = spawn(&script).unwrap();
        s.kill();
        assert_eq!(
            s.call(&serde_json::json!({"op": "hello"})),
            Err(TargetError::Killed)
        );
    }
}
