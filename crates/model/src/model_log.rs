//! The scripted model's own log: every request an unmodified Claude Code CLI sent to the
//! scripted model and every answer it got, one JSON line each, written as they happen, so
//! that a verdict about the CLI can always be checked against what the CLI really sent
//! (issue 43: a count that disagreed with the requests went unnoticed because nothing kept
//! them).
//!
//! A conversation only grows, and every request of the agent repeats the tool list (60 KB
//! on 2.1.332) and the system prompt, so a line stores what is new and names what it
//! repeats: `tools` and `system` equal to an earlier request's are `{"same_as": SEQ}`, and
//! `messages` that begin with the messages of the last request of the same kind (agent or
//! side) are `{"prefix_of": SEQ, "keep": K, "then": [...]}`. [`read`] puts every request back
//! together exactly as it was sent.
//!
//! One file holds a scenario: every session and every CLI of it, each line naming its
//! `conversation` (the session and list of a task session's CLI, `background` for a
//! background session). The file is created at the first request, so a run against a target
//! without a scripted model leaves none.
//!
//! The first line is a header: `{"format": "taskproof-model-log", "format_version": 1,
//! "target": …, "scenario": …, "started": UTC}`. Then one line per request:
//! `{"seq", "ms" (since the header), "conversation", "path", "kind" ("agent", "side" or
//! "count_tokens"), "request", "answer" (the content blocks the model answered), "note"
//! (what the model made of it, e.g. the notification blocks it counted)}`. A request whose
//! body is not JSON is kept as `{"raw": TEXT}`.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{Value, json};

/// The format's name in the header line.
pub const FORMAT: &str = "taskproof-model-log";
/// The version of the line format.
pub const FORMAT_VERSION: u64 = 1;

/// A scenario's model log, shared by its sessions (cheap to clone: one file behind a lock).
/// Equal when it is the same log.
#[derive(Clone)]
pub struct LogHandle(Arc<Mutex<ModelLog>>);

impl LogHandle {
    /// The log of `scenario` against `target`, to be written to `path` from the first
    /// request on.
    pub fn new(path: PathBuf, target: &str, scenario: &str) -> LogHandle {
        LogHandle(Arc::new(Mutex::new(ModelLog {
            to: Some(Pending {
                path,
                target: target.to_string(),
                scenario: scenario.to_string(),
            }),
            ..ModelLog::none()
        })))
    }

    /// Records one exchange of `conversation` (see [`ModelLog::record`]).
    pub fn record(&self, conversation: &str, exchange: Exchange<'_>) {
        self.lock().record(conversation, exchange);
    }

    /// Closes the file: its path (None when nothing was recorded), or the first error that
    /// kept the log from being written whole.
    pub fn finish(&self) -> Result<Option<PathBuf>, String> {
        self.lock().finish()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ModelLog> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl PartialEq for LogHandle {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for LogHandle {}

impl std::fmt::Debug for LogHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let log = self.lock();
        let path = log
            .to
            .as_ref()
            .map(|p| p.path.clone())
            .or_else(|| log.out.as_ref().map(|(p, _)| p.clone()));
        f.debug_tuple("LogHandle").field(&path).finish()
    }
}

/// One request and what the model made of it.
pub struct Exchange<'a> {
    /// The request's path (`/v1/messages?beta=true`).
    pub path: &'a str,
    /// Its body as sent.
    pub raw: &'a [u8],
    /// `agent`, `side` or `count_tokens`.
    pub kind: &'static str,
    /// The content blocks answered (or the answer's body).
    pub answer: &'a Value,
    /// What the model made of it.
    pub note: Value,
}

/// A log file not created yet.
struct Pending {
    path: PathBuf,
    target: String,
    scenario: String,
}

/// Appends exchanges to one log file (or to nothing, when no log was asked for).
pub struct ModelLog {
    to: Option<Pending>,
    out: Option<(PathBuf, BufWriter<File>)>,
    start: Instant,
    seq: u64,
    /// The first request that sent each distinct `tools` and `system` value.
    firsts: Vec<(&'static str, Value, u64)>,
    /// The messages and sequence number of the last request of each conversation and kind.
    last: HashMap<(String, &'static str), (u64, Vec<Value>)>,
    /// The first error, reported by [`ModelLog::finish`].
    error: Option<String>,
}

impl ModelLog {
    /// A log that keeps nothing.
    pub fn none() -> ModelLog {
        ModelLog {
            to: None,
            out: None,
            start: Instant::now(),
            seq: 0,
            firsts: Vec::new(),
            last: HashMap::new(),
            error: None,
        }
    }

    /// Creates the file and writes the header, at the first request.
    fn open(&mut self) {
        let Some(to) = self.to.take() else {
            return;
        };
        let created = to
            .path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| File::create(&to.path));
        match created {
            Ok(file) => {
                self.out = Some((to.path, BufWriter::new(file)));
                self.start = Instant::now();
                self.line(&json!({
                    "format": FORMAT,
                    "format_version": FORMAT_VERSION,
                    "target": to.target,
                    "scenario": to.scenario,
                    "started": utc_now(),
                }));
            }
            Err(e) => {
                self.error = Some(format!(
                    "failed to create the model log {}: {e}",
                    to.path.display()
                ));
            }
        }
    }

    /// Records one exchange of `conversation`.
    pub fn record(&mut self, conversation: &str, e: Exchange<'_>) {
        self.open();
        if self.out.is_none() {
            return;
        }
        self.seq += 1;
        let seq = self.seq;
        let request = match serde_json::from_slice::<Value>(e.raw) {
            Ok(Value::Object(mut body)) => {
                for key in ["tools", "system"] {
                    if let Some(v) = body.get_mut(key) {
                        *v = self.same_as(key, v.take(), seq);
                    }
                }
                if let Some(Value::Array(messages)) = body.get_mut("messages") {
                    let full = std::mem::take(messages);
                    let stored = self.messages((conversation.to_string(), e.kind), full, seq);
                    body.insert("messages".into(), stored);
                }
                Value::Object(body)
            }
            Ok(other) => other,
            Err(_) => json!({"raw": String::from_utf8_lossy(e.raw)}),
        };
        let ms = self.start.elapsed().as_millis() as u64;
        self.line(&json!({
            "seq": seq, "ms": ms, "conversation": conversation, "path": e.path, "kind": e.kind,
            "request": request, "answer": e.answer, "note": e.note,
        }));
    }

    /// `value` itself the first time it is seen under `key`, else a reference to that time.
    fn same_as(&mut self, key: &'static str, value: Value, seq: u64) -> Value {
        if let Some((_, _, first)) = self
            .firsts
            .iter()
            .find(|(k, v, _)| *k == key && *v == value)
        {
            return json!({"same_as": first});
        }
        self.firsts.push((key, value.clone(), seq));
        value
    }

    /// The messages as what they add to the last request of the same conversation and kind.
    fn messages(&mut self, of: (String, &'static str), full: Vec<Value>, seq: u64) -> Value {
        let stored = match self.last.get(&of) {
            Some((prev, before)) => {
                let keep = before.iter().zip(&full).take_while(|(a, b)| a == b).count();
                if keep > 0 {
                    json!({"prefix_of": prev, "keep": keep, "then": &full[keep..]})
                } else {
                    Value::Array(full.clone())
                }
            }
            None => Value::Array(full.clone()),
        };
        self.last.insert(of, (seq, full));
        stored
    }

    fn line(&mut self, value: &Value) {
        let Some((path, out)) = self.out.as_mut() else {
            return;
        };
        // Flushed per line: the log is the evidence, so a killed run keeps what it saw.
        let written = writeln!(out, "{value}").and_then(|()| out.flush());
        if let Err(e) = written
            && self.error.is_none()
        {
            self.error = Some(format!(
                "failed to write the model log {}: {e}",
                path.display()
            ));
        }
    }

    /// Closes the file: its path (None when nothing was recorded), or the first error.
    pub fn finish(&mut self) -> Result<Option<PathBuf>, String> {
        self.to = None;
        let out = self.out.take();
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let Some((path, mut out)) = out else {
            return Ok(None);
        };
        out.flush()
            .map_err(|e| format!("failed to write the model log {}: {e}", path.display()))?;
        Ok(Some(path))
    }
}

/// One exchange read back from a log, its request whole again.
#[derive(Debug, Clone, PartialEq)]
pub struct Logged {
    pub seq: u64,
    pub ms: u64,
    pub conversation: String,
    pub path: String,
    pub kind: String,
    pub request: Value,
    pub answer: Value,
    pub note: Value,
}

/// A model log's header and exchanges.
#[derive(Debug, Clone, PartialEq)]
pub struct LogFile {
    pub target: String,
    pub scenario: String,
    pub exchanges: Vec<Logged>,
}

/// Reads a model log back, every request as the CLI sent it; an error names the file and
/// line. A log published gzipped (`ID.jsonl.gz`, as reports/claude-code keeps them) is read
/// the same.
pub fn read(path: &Path) -> Result<LogFile, String> {
    let file = File::open(path).map_err(|e| format!("failed to open {}: {e}", path.display()))?;
    let at = |line: usize, what: String| format!("{}:{line}: {what}", path.display());
    let reader: Box<dyn std::io::Read> = if path.extension().is_some_and(|e| e == "gz") {
        Box::new(flate2::read::GzDecoder::new(file))
    } else {
        Box::new(file)
    };
    let mut lines = BufReader::new(reader).lines().enumerate();
    let header: Value = match lines.next() {
        Some((_, Ok(l))) => serde_json::from_str(&l).map_err(|e| at(1, e.to_string()))?,
        Some((_, Err(e))) => return Err(at(1, e.to_string())),
        None => return Err(format!("{}: empty, not a model log", path.display())),
    };
    if header["format"] != FORMAT {
        return Err(at(
            1,
            format!("not a model log (format {})", header["format"]),
        ));
    }
    if header["format_version"] != FORMAT_VERSION {
        return Err(at(
            1,
            format!(
                "model log format_version {}, this taskproof reads {FORMAT_VERSION}",
                header["format_version"]
            ),
        ));
    }
    let mut firsts: HashMap<(String, u64), Value> = HashMap::new();
    let mut messages_of: HashMap<u64, Vec<Value>> = HashMap::new();
    let mut exchanges = Vec::new();
    for (i, line) in lines {
        let n = i + 1;
        let line = line.map_err(|e| at(n, e.to_string()))?;
        if line.trim().is_empty() {
            continue;
        }
        let mut v: Value = serde_json::from_str(&line).map_err(|e| at(n, e.to_string()))?;
        let seq = v["seq"].as_u64().ok_or_else(|| at(n, "no seq".into()))?;
        let request = &mut v["request"];
        for key in ["tools", "system"] {
            let Some(field) = request.get_mut(key) else {
                continue;
            };
            if let Some(first) = field.get("same_as").and_then(Value::as_u64) {
                *field = firsts
                    .get(&(key.to_string(), first))
                    .cloned()
                    .ok_or_else(|| at(n, format!("{key} same_as {first}, which is not earlier")))?;
            } else {
                firsts.insert((key.to_string(), seq), field.clone());
            }
        }
        if let Some(m) = request.get_mut("messages") {
            let whole = match m {
                Value::Array(all) => all.clone(),
                Value::Object(o) => {
                    let prev = o["prefix_of"]
                        .as_u64()
                        .ok_or_else(|| at(n, "messages without prefix_of".into()))?;
                    let keep = o["keep"].as_u64().unwrap_or(0) as usize;
                    let before = messages_of.get(&prev).ok_or_else(|| {
                        at(
                            n,
                            format!("messages prefix_of {prev}, which is not earlier"),
                        )
                    })?;
                    if keep > before.len() {
                        return Err(at(
                            n,
                            format!(
                                "keeps {keep} messages of {prev}, which had {}",
                                before.len()
                            ),
                        ));
                    }
                    let mut all = before[..keep].to_vec();
                    all.extend(o["then"].as_array().cloned().unwrap_or_default());
                    all
                }
                _ => return Err(at(n, "messages neither an array nor a prefix".into())),
            };
            messages_of.insert(seq, whole.clone());
            *m = Value::Array(whole);
        }
        exchanges.push(Logged {
            seq,
            ms: v["ms"].as_u64().unwrap_or(0),
            conversation: v["conversation"].as_str().unwrap_or("").to_string(),
            path: v["path"].as_str().unwrap_or("").to_string(),
            kind: v["kind"].as_str().unwrap_or("").to_string(),
            request: v["request"].take(),
            answer: v["answer"].take(),
            note: v["note"].take(),
        });
    }
    Ok(LogFile {
        target: header["target"].as_str().unwrap_or("").to_string(),
        scenario: header["scenario"].as_str().unwrap_or("").to_string(),
        exchanges,
    })
}

/// Now, as the audit log writes times (`2026-11-27T15:21:04.123Z`).
fn utc_now() -> String {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    taskproof_store::audit::format_time(ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_reads_back_every_request_as_sent() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/x.jsonl");
        let log = LogHandle::new(path.clone(), "claude-code@9.9.9", "s");
        let tools = json!([{"name": "Bash", "input_schema": {}}]);
        let bodies = [
            (
                "a",
                json!({"model": "m", "tools": tools, "system": "sys", "messages": [{"role": "user", "content": "a"}]}),
            ),
            // Another session's CLI: a conversation of its own.
            (
                "b",
                json!({"model": "m", "tools": tools, "system": "sys", "messages": [{"role": "user", "content": "q"}]}),
            ),
            (
                "a",
                json!({"model": "m", "tools": tools, "system": "sys", "messages": [
                {"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
                {"role": "system", "content": "<task-notification>x</task-notification>"}]}),
            ),
            // A side request: its own conversation, not a prefix of the agent's.
            (
                "a",
                json!({"model": "small", "messages": [{"role": "user", "content": "title?"}]}),
            ),
            // History rewritten: nothing in common with the last agent request.
            (
                "a",
                json!({"model": "m", "tools": tools, "system": "other", "messages": [{"role": "user", "content": "z"}]}),
            ),
        ];
        assert!(
            !path.exists(),
            "nothing is written before the first request"
        );
        for (i, (conversation, b)) in bodies.iter().enumerate() {
            let kind = if b.get("tools").is_some() {
                "agent"
            } else {
                "side"
            };
            let raw = b.to_string();
            let answer = json!([{"type": "text", "text": i}]);
            log.record(
                conversation,
                Exchange {
                    path: "/v1/messages",
                    raw: raw.as_bytes(),
                    kind,
                    answer: &answer,
                    note: json!({}),
                },
            );
        }
        log.record(
            "a",
            Exchange {
                path: "/v1/messages",
                raw: b"not json",
                kind: "side",
                answer: &Value::Null,
                note: json!({}),
            },
        );
        assert_eq!(log.finish(), Ok(Some(path.clone())));
        let text = std::fs::read_to_string(&path).unwrap();
        let third = text.lines().nth(3).unwrap();
        assert!(
            third.contains(r#""prefix_of":1"#) && third.contains(r#""same_as":1"#),
            "{text}"
        );
        let back = read(&path).unwrap();
        assert_eq!(back.target, "claude-code@9.9.9");
        assert_eq!(back.exchanges.len(), 6);
        for ((conversation, b), e) in bodies.iter().zip(&back.exchanges) {
            assert_eq!(&e.request, b);
            assert_eq!(&e.conversation, conversation);
        }
        assert_eq!(back.exchanges[5].request, json!({"raw": "not json"}));
        assert_eq!(
            back.exchanges[2].answer,
            json!([{"type": "text", "text": 2}])
        );
    }

    #[test]
    fn a_gzipped_log_reads_as_the_plain_one() {
        use std::io::Write as _;
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("x.jsonl");
        let log = LogHandle::new(plain.clone(), "t", "s");
        let body =
            json!({"model": "m", "tools": [], "messages": [{"role": "user", "content": "a"}]});
        let raw = body.to_string();
        log.record(
            "c",
            Exchange {
                path: "/v1/messages",
                raw: raw.as_bytes(),
                kind: "agent",
                answer: &Value::Null,
                note: Value::Null,
            },
        );
        log.finish().unwrap();
        let gz = dir.path().join("x.jsonl.gz");
        let mut enc =
            flate2::write::GzEncoder::new(File::create(&gz).unwrap(), flate2::Compression::best());
        enc.write_all(&std::fs::read(&plain).unwrap()).unwrap();
        enc.finish().unwrap();
        assert_eq!(read(&gz).unwrap(), read(&plain).unwrap());
        assert_eq!(read(&gz).unwrap().exchanges[0].request, body);
    }

    #[test]
    fn an_unused_log_writes_no_file_and_an_unwritable_one_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let unused = LogHandle::new(dir.path().join("u.jsonl"), "t", "s");
        assert_eq!(unused.finish(), Ok(None));
        assert!(!dir.path().join("u.jsonl").exists());
        std::fs::write(dir.path().join("file"), "").unwrap();
        let bad = LogHandle::new(dir.path().join("file/x.jsonl"), "t", "s");
        bad.record(
            "c",
            Exchange {
                path: "/",
                raw: b"{}",
                kind: "side",
                answer: &Value::Null,
                note: Value::Null,
            },
        );
        let e = bad.finish().unwrap_err();
        assert!(
            e.starts_with("failed to create the model log") && e.contains("file/x.jsonl"),
            "{e}"
        );
    }

    #[test]
    fn a_broken_log_is_refused_naming_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.jsonl");
        std::fs::write(&path, "{\"format\":\"other\"}\n").unwrap();
        assert!(
            read(&path)
                .unwrap_err()
                .contains("x.jsonl:1: not a model log")
        );
        std::fs::write(
            &path,
            format!("{{\"format\":\"{FORMAT}\",\"format_version\":1}}\n{{\"seq\":2,\"request\":{{\"messages\":{{\"prefix_of\":1,\"keep\":1,\"then\":[]}}}}}}\n"),
        )
        .unwrap();
        assert!(
            read(&path)
                .unwrap_err()
                .contains("x.jsonl:2: messages prefix_of 1, which is not earlier")
        );
    }
}
