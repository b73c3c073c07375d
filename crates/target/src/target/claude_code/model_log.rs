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
//! The first line is a header: `{"format": "taskproof-model-log", "format_version": 1,
//! "target": …, "scenario": …, "started": UTC}`. Then one line per request:
//! `{"seq", "ms" (since the header), "path", "kind" ("agent", "side" or "count_tokens"),
//! "request", "answer" (the content blocks the model answered), "note" (what the model made
//! of it, e.g. the notification blocks it counted)}`. A request whose body is not JSON is
//! kept as `{"raw": TEXT}`.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::{Value, json};

/// The format's name in the header line.
pub const FORMAT: &str = "taskproof-model-log";
/// The version of the line format.
pub const FORMAT_VERSION: u64 = 1;

/// Where a session's model log goes, and the scenario it is for (named in its header).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogTo {
    pub path: PathBuf,
    pub scenario: String,
}

/// Appends exchanges to one log file (or to nothing, when no log was asked for).
pub struct ModelLog {
    out: Option<(PathBuf, BufWriter<File>)>,
    start: Instant,
    seq: u64,
    /// The first request that sent each distinct `tools` and `system` value.
    firsts: Vec<(&'static str, Value, u64)>,
    /// The messages and sequence number of the last request of each kind.
    last: HashMap<&'static str, (u64, Vec<Value>)>,
    /// The first write error, reported once by [`ModelLog::finish`].
    error: Option<String>,
}

impl ModelLog {
    /// A log that keeps nothing.
    pub fn none() -> ModelLog {
        ModelLog {
            out: None,
            start: Instant::now(),
            seq: 0,
            firsts: Vec::new(),
            last: HashMap::new(),
            error: None,
        }
    }

    /// Creates (or truncates) `path` and writes the header naming `target` and `scenario`.
    pub fn create(path: &Path, target: &str, scenario: &str) -> Result<ModelLog, String> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("failed to create {}: {e}", parent.display()))?;
        }
        let file = File::create(path)
            .map_err(|e| format!("failed to create the model log {}: {e}", path.display()))?;
        let mut log = ModelLog {
            out: Some((path.to_path_buf(), BufWriter::new(file))),
            ..ModelLog::none()
        };
        log.line(&json!({
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "target": target,
            "scenario": scenario,
            "started": utc_now(),
        }));
        Ok(log)
    }

    /// Whether anything is kept.
    pub fn is_on(&self) -> bool {
        self.out.is_some()
    }

    /// Records one exchange: the request as sent (`raw`, its body), what kind it was, the
    /// answer's content blocks and what the model made of it.
    pub fn record(
        &mut self,
        path: &str,
        raw: &[u8],
        kind: &'static str,
        answer: &Value,
        note: Value,
    ) {
        if self.out.is_none() {
            return;
        }
        self.seq += 1;
        let seq = self.seq;
        let request = match serde_json::from_slice::<Value>(raw) {
            Ok(Value::Object(mut body)) => {
                for key in ["tools", "system"] {
                    if let Some(v) = body.get_mut(key) {
                        *v = self.same_as(key, v.take(), seq);
                    }
                }
                if let Some(Value::Array(messages)) = body.get_mut("messages") {
                    let full = std::mem::take(messages);
                    body.insert("messages".into(), self.messages(kind, full, seq));
                }
                Value::Object(body)
            }
            Ok(other) => other,
            Err(_) => json!({"raw": String::from_utf8_lossy(raw)}),
        };
        let ms = self.start.elapsed().as_millis() as u64;
        self.line(&json!({
            "seq": seq, "ms": ms, "path": path, "kind": kind,
            "request": request, "answer": answer, "note": note,
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

    /// The messages as what they add to the last request of the same kind.
    fn messages(&mut self, kind: &'static str, full: Vec<Value>, seq: u64) -> Value {
        let stored = match self.last.get(kind) {
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
        self.last.insert(kind, (seq, full));
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

    /// The path written to, and the first write error if there was one.
    pub fn finish(&mut self) -> Option<Result<PathBuf, String>> {
        let (path, mut out) = self.out.take()?;
        let flushed = out.flush().map_err(|e| e.to_string());
        Some(match (self.error.take(), flushed) {
            (Some(e), _) => Err(e),
            (None, Err(e)) => Err(format!(
                "failed to write the model log {}: {e}",
                path.display()
            )),
            (None, Ok(())) => Ok(path),
        })
    }
}

/// One exchange read back from a log, its request whole again.
#[derive(Debug, Clone, PartialEq)]
pub struct Logged {
    pub seq: u64,
    pub ms: u64,
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
/// line.
pub fn read(path: &Path) -> Result<LogFile, String> {
    let file = File::open(path).map_err(|e| format!("failed to open {}: {e}", path.display()))?;
    let at = |line: usize, what: String| format!("{}:{line}: {what}", path.display());
    let mut lines = BufReader::new(file).lines().enumerate();
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
    crate::store::audit::format_time(ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_reads_back_every_request_as_sent() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/x.jsonl");
        let mut log = ModelLog::create(&path, "claude-code@9.9.9", "s").unwrap();
        let tools = json!([{"name": "Bash", "input_schema": {}}]);
        let bodies = [
            json!({"model": "m", "tools": tools, "system": "sys", "messages": [{"role": "user", "content": "a"}]}),
            json!({"model": "m", "tools": tools, "system": "sys", "messages": [
                {"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
                {"role": "system", "content": "<task-notification>x</task-notification>"}]}),
            // A side request: its own conversation, not a prefix of the agent's.
            json!({"model": "small", "messages": [{"role": "user", "content": "title?"}]}),
            // History rewritten: nothing in common with the last agent request.
            json!({"model": "m", "tools": tools, "system": "other", "messages": [{"role": "user", "content": "z"}]}),
        ];
        for (i, b) in bodies.iter().enumerate() {
            let kind = if b.get("tools").is_some() {
                "agent"
            } else {
                "side"
            };
            log.record(
                "/v1/messages",
                b.to_string().as_bytes(),
                kind,
                &json!([{"type": "text", "text": i}]),
                json!({}),
            );
        }
        log.record("/v1/messages", b"not json", "side", &Value::Null, json!({}));
        assert_eq!(log.finish(), Some(Ok(path.clone())));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.lines().nth(2).unwrap().contains(r#""prefix_of":1"#),
            "{text}"
        );
        assert!(
            text.lines().nth(2).unwrap().contains(r#""same_as":1"#),
            "{text}"
        );
        let back = read(&path).unwrap();
        assert_eq!(back.target, "claude-code@9.9.9");
        assert_eq!(back.exchanges.len(), 5);
        for (b, e) in bodies.iter().zip(&back.exchanges) {
            assert_eq!(&e.request, b);
        }
        assert_eq!(back.exchanges[4].request, json!({"raw": "not json"}));
        assert_eq!(
            back.exchanges[1].answer,
            json!([{"type": "text", "text": 1}])
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
