//! The background-task protocol: one JSON object per line on a runner's stdin, one answer
//! per line on its stdout, like the store's adapter protocol (docs/adapters.md) but for a
//! background-task runner (docs/background.md, "The protocol"). [`serve`] is the runner's
//! side (`taskproof serve-background`); [`ProcessBgSession`] is the harness's, a
//! [`BgSession`] over a process (the `reference`, `mutant:NAME` and `bg-cmd:COMMAND`
//! targets of the background suite).
//!
//! Requests and answers:
//!
//! ```text
//! {"op":"hello"}                          {"ok":true,"protocol":1,"kind":"background","name":…,"version":…,
//!                                          "output_cap":N|null,"features":["hold"]}
//! {"op":"spawn","command":C,"hold":B}     {"ok":true,"id":ID,"output_file":PATH|null}
//! {"op":"start","id":ID}                  {"ok":true}
//! {"op":"kill","id":ID}                   {"ok":true,"result":"killed"}
//!                                         {"ok":true,"result":"already_final","status":S}
//!                                         {"ok":true,"result":"not_found","message":M}
//! {"op":"output","id":ID,"offset":N}      {"ok":true,"text":T,"next_offset":N|null,"status":S|null}
//!                                         {"ok":false,"error":"not_found","message":M}
//! {"op":"notifications","within_ms":N}    {"ok":true,"notifications":[{"id","status","exit_code",
//!                                          "output_file","raw"}…]}
//! {"op":"task_pids"}                      {"ok":true,"pids":[PGID…]}
//! {"op":"end"}                            {"ok":true}   (then the runner exits)
//! anything else                           {"ok":false,"error":"invalid","message":M}
//! ```

use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use taskproof_session::background::{
    BgEnd, BgError, BgKill, BgNotification, BgOutput, BgSession, BgStarted, BgStatus, BgWork,
};
use taskproof_session::group::Group;
use taskproof_session::pipes::{self, Line};

/// The protocol's version, in `hello`.
pub const PROTOCOL: u64 = 1;

/// The longest line read either way.
const MAX_LINE: usize = 64 * 1024 * 1024;
/// How much of a runner's stderr is kept for the report.
const MAX_STDERR: usize = 64 * 1024;

/// What a runner said in its `hello`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BgHello {
    pub name: String,
    pub version: String,
    pub output_cap: Option<u64>,
    pub hold: bool,
}

impl BgHello {
    /// Reads a `hello` answer; anything that is not a background runner's is an error
    /// naming the field.
    pub fn from_json(v: &Value) -> Result<BgHello, String> {
        if v.get("ok") != Some(&Value::Bool(true)) {
            return Err(format!("the hello answer is not ok: {v}"));
        }
        if v.get("protocol").and_then(Value::as_u64) != Some(PROTOCOL) {
            return Err(format!(
                "\"protocol\" must be {PROTOCOL}, got {}",
                v.get("protocol").unwrap_or(&Value::Null)
            ));
        }
        match v.get("kind").and_then(Value::as_str) {
            Some("background") => {}
            other => {
                return Err(format!(
                    "\"kind\" must be \"background\" (a background-task runner), got {other:?}; a store adapter belongs in the store suite (cmd:COMMAND)"
                ));
            }
        }
        let text = |k: &str| -> Result<String, String> {
            v.get(k)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| format!("\"{k}\" must be a string"))
        };
        let output_cap = match v.get("output_cap") {
            None | Some(Value::Null) => None,
            Some(c) => Some(
                c.as_u64()
                    .ok_or_else(|| "\"output_cap\" must be a whole number or null".to_string())?,
            ),
        };
        let hold = match v.get("features") {
            None => false,
            Some(Value::Array(a)) => a.iter().any(|f| f == "hold"),
            Some(_) => return Err("\"features\" must be an array of strings".into()),
        };
        Ok(BgHello {
            name: text("name")?,
            version: text("version")?,
            output_cap,
            hold,
        })
    }
}

fn status_of(v: &Value, field: &str) -> Result<BgStatus, String> {
    serde_json::from_value(v.clone()).map_err(|_| {
        format!("\"{field}\" must be pending, running, completed, failed or killed, got {v}")
    })
}

fn invalid(message: impl Into<String>) -> Value {
    json!({"ok": false, "error": "invalid", "message": message.into()})
}

/// Answers one request with `session` (the runner's side). `None` for `end`'s answer means
/// the runner should stop reading after writing it.
pub fn answer(session: &mut dyn BgSession, hello: &Value, line: &str) -> (Value, bool) {
    let req: Value = match serde_json::from_str(line) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => return (invalid("a request is a JSON object"), false),
        Err(e) => return (invalid(format!("not JSON: {e}")), false),
    };
    let Some(op) = req.get("op").and_then(Value::as_str) else {
        return (invalid("\"op\" must be a string"), false);
    };
    let id = || -> Result<String, Value> {
        req.get("id")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| invalid(format!("{op}: \"id\" must be a string")))
    };
    let failed = |e: BgError| match e {
        BgError::NoSuchTask(words) => json!({"ok": false, "error": "not_found", "message": words}),
        e => json!({"ok": false, "error": "failed", "message": e.to_string()}),
    };
    let result = match op {
        "hello" => Ok(hello.clone()),
        "spawn" => {
            let Some(command) = req.get("command").and_then(Value::as_str) else {
                return (invalid("spawn: \"command\" must be a string"), false);
            };
            let work = BgWork {
                command: command.to_string(),
            };
            let held = req.get("hold").and_then(Value::as_bool).unwrap_or(false);
            let started = if held {
                session.spawn_held(&work).and_then(|s| {
                    s.ok_or_else(|| {
                        BgError::Unsupported("this runner cannot hold a task in pending".into())
                    })
                })
            } else {
                session.spawn(&work)
            };
            started.map(|s| json!({"ok": true, "id": s.id, "output_file": s.output_file}))
        }
        "start" => match id() {
            Ok(id) => session.start(&id).map(|()| json!({"ok": true})),
            Err(e) => return (e, false),
        },
        "kill" => match id() {
            Ok(id) => session.kill(&id).map(|k| match k {
                BgKill::Killed => json!({"ok": true, "result": "killed"}),
                BgKill::AlreadyFinal(s) => {
                    json!({"ok": true, "result": "already_final", "status": s})
                }
                BgKill::NotFound(m) => json!({"ok": true, "result": "not_found", "message": m}),
            }),
            Err(e) => return (e, false),
        },
        "output" => {
            let id = match id() {
                Ok(id) => id,
                Err(e) => return (e, false),
            };
            let Some(offset) = req.get("offset").and_then(Value::as_u64) else {
                return (invalid("output: \"offset\" must be a whole number"), false);
            };
            session.output(&id, offset).map(|o| {
                json!({"ok": true, "text": o.text, "next_offset": o.next_offset, "status": o.status})
            })
        }
        "notifications" => {
            let Some(ms) = req.get("within_ms").and_then(Value::as_u64) else {
                return (
                    invalid("notifications: \"within_ms\" must be a whole number"),
                    false,
                );
            };
            session
                .notifications(Duration::from_millis(ms))
                .map(|n| json!({"ok": true, "notifications": n}))
        }
        "task_pids" => session.task_pids().map(|p| json!({"ok": true, "pids": p})),
        "end" => {
            let r = session.end(BgEnd::Exit).map(|()| json!({"ok": true}));
            return (r.unwrap_or_else(failed), true);
        }
        other => return (invalid(format!("unknown op {other:?}")), false),
    };
    (result.unwrap_or_else(failed), false)
}

/// Serves `session` on `input`/`output` until `end` or the end of the input (then the
/// session is ended as its user would end it). An error is the session's own (ending it at
/// the end of the input) or a failure to read a request or write an answer.
pub fn serve(
    session: &mut dyn BgSession,
    hello: &Value,
    input: impl BufRead,
    mut output: impl Write,
) -> Result<(), BgError> {
    let mut input = input;
    loop {
        let mut buf = Vec::new();
        let n = (&mut input)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut buf)
            .map_err(BgError::io("failed to read a request"))?;
        if n == 0 {
            session.end(BgEnd::Exit)?;
            return Ok(());
        }
        let line = String::from_utf8_lossy(&buf);
        if line.trim().is_empty() {
            continue;
        }
        let (answer, stop) = if buf.len() > MAX_LINE {
            (invalid("the request line is too long"), false)
        } else {
            answer(session, hello, line.trim_end())
        };
        writeln!(output, "{answer}")
            .and_then(|()| output.flush())
            .map_err(BgError::io("failed to write an answer"))?;
        if stop {
            return Ok(());
        }
    }
}

/// Per-session limits of a process target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// How long one request may go unanswered (added to a `notifications` wait).
    pub timeout: Duration,
    /// How long starting and `hello` may take.
    pub start_timeout: Duration,
}

/// A background runner behind the protocol, as a process leading its own group.
pub struct ProcessBgSession {
    child: Group,
    stdin: Option<ChildStdin>,
    lines: Receiver<Line>,
    stderr: Arc<Mutex<Vec<u8>>>,
    limits: Limits,
    hello: BgHello,
    dead: Option<String>,
    /// The task groups last reported (kept for the checks after a SIGKILL).
    pids: Vec<i32>,
}

impl std::fmt::Debug for ProcessBgSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessBgSession")
            .field("pid", &self.child.id())
            .field("hello", &self.hello)
            .finish()
    }
}

impl ProcessBgSession {
    /// Starts `command` (with `TASKPROOF_ROOT` set to `folder`, absolute) in a group of its
    /// own and asks `hello`.
    pub fn open(
        mut command: Command,
        folder: &Path,
        limits: Limits,
    ) -> Result<ProcessBgSession, BgError> {
        let folder = std::path::absolute(folder).map_err(|e| {
            BgError::Start(format!(
                "failed to resolve the session folder {}: {e}",
                folder.display()
            ))
        })?;
        let mut child = Group::spawn(
            command
                .env("TASKPROOF_ROOT", &folder)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped()),
        )
        .map_err(|e| BgError::Start(format!("failed to start the background runner: {e}")))?;
        let stdout = child.child().stdout.take().expect("piped stdout");
        let stderr_pipe = child.child().stderr.take().expect("piped stderr");
        let stdin = child.child().stdin.take();
        let lines = pipes::lines(stdout, MAX_LINE);
        let (stderr, _) = pipes::keep_stderr(stderr_pipe, MAX_STDERR);
        let mut s = ProcessBgSession {
            child,
            stdin,
            lines,
            stderr,
            limits,
            hello: BgHello {
                name: String::new(),
                version: String::new(),
                output_cap: None,
                hold: false,
            },
            dead: None,
            pids: Vec::new(),
        };
        let answer = s.call(&json!({"op": "hello"}), limits.start_timeout)?;
        s.hello = BgHello::from_json(&answer)
            .map_err(|e| s.fail(BgError::Garbage, format!("bad hello: {e}")))?;
        Ok(s)
    }

    /// The runner's `hello`.
    pub fn hello(&self) -> &BgHello {
        &self.hello
    }

    /// What the runner wrote to stderr so far (its tail).
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap_or_else(|p| p.into_inner())).into_owned()
    }

    /// Kills the runner's group, records why the session is dead, and returns the error of
    /// the `kind` that says why.
    fn fail(&mut self, kind: fn(String) -> BgError, why: String) -> BgError {
        self.child.kill();
        self.dead = Some(why.clone());
        kind(why)
    }

    /// Sends one request and returns the answer object, waiting at most `wait`.
    fn call(&mut self, request: &Value, wait: Duration) -> Result<Value, BgError> {
        if let Some(d) = &self.dead {
            return Err(BgError::Ended(format!("the session is dead: {d}")));
        }
        let op = request["op"].as_str().unwrap_or("?").to_string();
        let sent = match self.stdin.as_mut() {
            Some(w) => writeln!(w, "{request}").and_then(|()| w.flush()),
            None => Err(std::io::Error::other("stdin closed")),
        };
        if let Err(e) = sent {
            return Err(self.fail(
                BgError::Exited,
                format!("failed to send {op}: {e} (the runner is gone)"),
            ));
        }
        let line = match self.lines.recv_timeout(wait) {
            Ok(Line::Text(l)) => l,
            Ok(Line::TooLong) => {
                return Err(self.fail(
                    BgError::Garbage,
                    format!("the answer to {op} is longer than {MAX_LINE} bytes"),
                ));
            }
            Err(RecvTimeoutError::Timeout) => {
                return Err(self.fail(
                    BgError::Timeout,
                    format!(
                        "no answer to {op} within {wait:?}; the runner was killed (the limit is --timeout SECS)"
                    ),
                ));
            }
            Err(RecvTimeoutError::Disconnected) => {
                let status = self.child.kill();
                return Err(self.fail(
                    BgError::Exited,
                    format!(
                        "the runner exited ({}) before answering {op}",
                        status.map_or("unknown status".to_string(), |s| s.to_string())
                    ),
                ));
            }
        };
        match serde_json::from_slice::<Value>(&line) {
            Ok(v @ Value::Object(_)) => Ok(v),
            _ => {
                let text = String::from_utf8_lossy(&line).trim_end().to_string();
                Err(self.fail(
                    BgError::Garbage,
                    format!(
                        "the runner answered {op} with something that is not a JSON object: {text:?}"
                    ),
                ))
            }
        }
    }

    /// Sends a request that must answer `ok: true`, or names what was wrong.
    fn ok(&mut self, request: &Value) -> Result<Value, BgError> {
        let timeout = self.limits.timeout;
        let v = self.call(request, timeout)?;
        match v.get("ok") {
            Some(Value::Bool(true)) => Ok(v),
            Some(Value::Bool(false)) => {
                let message = v.get("message").and_then(Value::as_str).unwrap_or("");
                if v.get("error").and_then(Value::as_str) == Some("not_found") {
                    Err(BgError::NoSuchTask(message.to_string()))
                } else {
                    Err(BgError::Refused(format!(
                        "the runner refused {}: {} {message}",
                        request["op"],
                        v.get("error").unwrap_or(&Value::Null)
                    )))
                }
            }
            _ => Err(self.malformed(request, "\"ok\" must be true or false")),
        }
    }

    fn malformed(&mut self, request: &Value, why: &str) -> BgError {
        self.fail(
            BgError::Garbage,
            format!(
                "the runner answered a {} request with a malformed answer: {why}",
                request["op"].as_str().unwrap_or("?")
            ),
        )
    }

    fn started(&mut self, request: &Value, v: &Value) -> Result<BgStarted, BgError> {
        let Some(id) = v.get("id").and_then(Value::as_str) else {
            return Err(self.malformed(request, "\"id\" must be a string"));
        };
        let output_file = match v.get("output_file") {
            None | Some(Value::Null) => None,
            Some(Value::String(p)) => Some(PathBuf::from(p)),
            Some(_) => return Err(self.malformed(request, "\"output_file\" must be a string")),
        };
        Ok(BgStarted {
            id: id.to_string(),
            output_file,
        })
    }
}

impl BgSession for ProcessBgSession {
    fn spawn(&mut self, work: &BgWork) -> Result<BgStarted, BgError> {
        let req = json!({"op": "spawn", "command": work.command});
        let v = self.ok(&req)?;
        self.started(&req, &v)
    }

    fn spawn_held(&mut self, work: &BgWork) -> Result<Option<BgStarted>, BgError> {
        if !self.hello.hold {
            return Ok(None);
        }
        let req = json!({"op": "spawn", "command": work.command, "hold": true});
        let v = self.ok(&req)?;
        self.started(&req, &v).map(Some)
    }

    fn start(&mut self, id: &str) -> Result<(), BgError> {
        self.ok(&json!({"op": "start", "id": id})).map(drop)
    }

    fn kill(&mut self, id: &str) -> Result<BgKill, BgError> {
        let req = json!({"op": "kill", "id": id});
        let v = self.ok(&req)?;
        match v.get("result").and_then(Value::as_str) {
            Some("killed") => Ok(BgKill::Killed),
            Some("already_final") => match status_of(&v["status"], "status") {
                Ok(s) if s.is_final() => Ok(BgKill::AlreadyFinal(s)),
                Ok(s) => Err(self.malformed(
                    &req,
                    &format!("already_final with a status that is not final: {s:?}"),
                )),
                Err(e) => Err(self.malformed(&req, &e)),
            },
            Some("not_found") => Ok(BgKill::NotFound(
                v.get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            )),
            _ => Err(self.malformed(
                &req,
                "\"result\" must be killed, already_final or not_found",
            )),
        }
    }

    fn output(&mut self, id: &str, offset: u64) -> Result<BgOutput, BgError> {
        let req = json!({"op": "output", "id": id, "offset": offset});
        let v = self.ok(&req)?;
        let Some(text) = v.get("text").and_then(Value::as_str) else {
            return Err(self.malformed(&req, "\"text\" must be a string"));
        };
        let next_offset = match v.get("next_offset") {
            None | Some(Value::Null) => None,
            Some(n) => match n.as_u64() {
                Some(n) => Some(n),
                None => {
                    return Err(self.malformed(&req, "\"next_offset\" must be a whole number"));
                }
            },
        };
        let status = match v.get("status") {
            None | Some(Value::Null) => None,
            Some(s) => match status_of(s, "status") {
                Ok(s) => Some(s),
                Err(e) => return Err(self.malformed(&req, &e)),
            },
        };
        Ok(BgOutput {
            text: text.to_string(),
            next_offset,
            status,
        })
    }

    fn notifications(&mut self, within: Duration) -> Result<Vec<BgNotification>, BgError> {
        let req = json!({"op": "notifications", "within_ms": within.as_millis() as u64});
        let wait = within + self.limits.timeout;
        let v = self.call(&req, wait)?;
        if v.get("ok") != Some(&Value::Bool(true)) {
            return Err(self.malformed(&req, "\"ok\" must be true"));
        }
        let Some(list) = v.get("notifications") else {
            return Err(self.malformed(&req, "\"notifications\" is missing"));
        };
        match serde_json::from_value::<Vec<BgNotification>>(list.clone()) {
            Ok(n) => Ok(n),
            Err(e) => Err(self.malformed(&req, &format!("\"notifications\": {e}"))),
        }
    }

    fn end(&mut self, how: BgEnd) -> Result<(), BgError> {
        if self.dead.is_some() {
            return Ok(());
        }
        match how {
            BgEnd::Exit => {
                let r = self.ok(&json!({"op": "end"}));
                self.stdin = None;
                // It exits on its own after answering; what is left is killed.
                let deadline = std::time::Instant::now() + self.limits.timeout;
                while self.child.exited().is_none() && std::time::Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(5));
                }
                self.child.kill();
                self.dead = Some("the session ended".into());
                r.map(drop)
            }
            BgEnd::Sigkill => {
                self.child.kill();
                self.dead = Some("the session was SIGKILLed".into());
                Ok(())
            }
        }
    }

    fn task_pids(&mut self) -> Result<Vec<i32>, BgError> {
        if self.dead.is_some() {
            return Ok(self.pids.clone());
        }
        let req = json!({"op": "task_pids"});
        let v = self.ok(&req)?;
        match serde_json::from_value::<Vec<i32>>(v.get("pids").cloned().unwrap_or(Value::Null)) {
            Ok(p) => {
                self.pids = p.clone();
                Ok(p)
            }
            Err(_) => Err(self.malformed(&req, "\"pids\" must be an array of whole numbers")),
        }
    }

    fn output_cap(&self) -> Option<u64> {
        self.hello.output_cap
    }
}

impl Drop for ProcessBgSession {
    fn drop(&mut self) {
        if self.dead.is_none() {
            // The end of its input ends the runner as its user would.
            self.stdin = None;
            let deadline = std::time::Instant::now() + Duration::from_secs(5);
            while self.child.exited().is_none() && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        self.child.kill();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::{Runner, RunnerOptions};

    const HELLO: &str =
        r#"{"ok":true,"protocol":1,"kind":"background","name":"sh","version":"1","features":[]}"#;

    /// A runner written in `sh`: it answers `hello`, then runs `then` on the next request,
    /// which may go unanswered for `timeout` (long enough for `sh` on a loaded machine, except
    /// where the test waits for it to pass).
    fn session_within(then: &str, timeout: Duration) -> Result<ProcessBgSession, BgError> {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Command::new("sh");
        c.arg("-c")
            .arg(format!("read l; echo '{HELLO}'; read l; {then}"));
        let limits = Limits {
            timeout,
            start_timeout: Duration::from_secs(10),
        };
        ProcessBgSession::open(c, dir.path(), limits)
    }

    fn session(then: &str) -> Result<ProcessBgSession, BgError> {
        session_within(then, Duration::from_secs(10))
    }

    fn work() -> BgWork {
        BgWork {
            command: "true".into(),
        }
    }

    #[test]
    fn a_runners_failures_are_told_apart_by_variant() {
        let e = session("echo 'not json'")
            .unwrap()
            .spawn(&work())
            .unwrap_err();
        assert!(
            matches!(&e, BgError::Garbage(m) if m.contains("not a JSON object")),
            "{e}"
        );
        let e = session_within("sleep 30", Duration::from_millis(300))
            .unwrap()
            .spawn(&work())
            .unwrap_err();
        assert!(
            matches!(&e, BgError::Timeout(m) if m.contains("no answer to spawn")),
            "{e}"
        );
        let e = session("exit 0").unwrap().spawn(&work()).unwrap_err();
        assert!(
            matches!(&e, BgError::Exited(m) if m.contains("exited")),
            "{e}"
        );
        let e = session(r#"echo '{"ok":false,"error":"failed","message":"full"}'"#)
            .unwrap()
            .spawn(&work())
            .unwrap_err();
        assert!(
            matches!(&e, BgError::Refused(m) if m.contains("full")),
            "{e}"
        );
        let mut s = session(
            r#"echo '{"ok":false,"error":"not_found","message":"No task found with ID: b1"}'"#,
        )
        .unwrap();
        let e = s.output("b1", 0).unwrap_err();
        assert!(
            matches!(&e, BgError::NoSuchTask(m) if m == "No task found with ID: b1"),
            "{e}"
        );
    }

    #[test]
    fn a_session_that_died_says_so_and_a_bad_start_is_a_start_error() {
        let mut s = session("echo 'not json'").unwrap();
        assert!(s.spawn(&work()).is_err());
        let e = s.spawn(&work()).unwrap_err();
        assert!(
            matches!(&e, BgError::Ended(m) if m.starts_with("the session is dead: ")),
            "{e}"
        );
        let dir = tempfile::tempdir().unwrap();
        let limits = Limits {
            timeout: Duration::from_secs(1),
            start_timeout: Duration::from_secs(1),
        };
        let missing = Command::new(dir.path().join("no-such-runner"));
        let e = ProcessBgSession::open(missing, dir.path(), limits).unwrap_err();
        assert!(
            matches!(&e, BgError::Start(m) if m.starts_with("failed to start the background runner: ")),
            "{e}"
        );
        let e = session_hello("echo '{\"ok\":true,\"protocol\":2}'").unwrap_err();
        assert!(
            matches!(&e, BgError::Garbage(m) if m.starts_with("bad hello: ")),
            "{e}"
        );
    }

    fn session_hello(answer: &str) -> Result<ProcessBgSession, BgError> {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Command::new("sh");
        c.arg("-c").arg(format!("read l; {answer}; sleep 5"));
        let limits = Limits {
            timeout: Duration::from_secs(1),
            start_timeout: Duration::from_secs(10),
        };
        ProcessBgSession::open(c, dir.path(), limits)
    }

    #[test]
    fn the_served_runner_answers_not_found_apart_from_other_failures() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = Runner::new(dir.path(), RunnerOptions::default()).unwrap();
        let hello = json!({"ok": true});
        let (v, _) = answer(
            &mut r,
            &hello,
            r#"{"op":"output","id":"b00000000","offset":0}"#,
        );
        assert_eq!(
            v,
            json!({"ok": false, "error": "not_found", "message": "No task found with ID: b00000000"})
        );
        let (v, _) = answer(&mut r, &hello, r#"{"op":"start","id":"b00000000"}"#);
        assert_eq!(v["error"], "not_found", "{v}");
        let held = r.spawn(&work()).unwrap();
        let (v, _) = answer(
            &mut r,
            &hello,
            &json!({"op": "start", "id": held.id}).to_string(),
        );
        assert_eq!(v["error"], "failed", "{v}");
        assert!(
            v["message"]
                .as_str()
                .unwrap()
                .contains("is not held in pending"),
            "{v}"
        );
        assert!(matches!(
            r.end(BgEnd::Sigkill),
            Err(BgError::Unsupported(_))
        ));
    }
}
