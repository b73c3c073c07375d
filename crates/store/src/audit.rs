//! The audit trail of the strict store (see `docs/audit.md`).
//!
//! Every acknowledged change to an audited list is recorded as one JSON line in
//! `{list}/.audit.jsonl`: when, who (the actor), which operation, and every task it changed
//! with its fields before and after. A list is audited once its log exists (the MCP server
//! starts it); from then on every reference writer records its changes there.
//!
//! The record and the change are one unit. Under the list's lock, the change's files and its
//! record go together into the redo file `.audit.pending` (written whole, through `.tmp`),
//! with the log's length before the record; then the files are written, the record is
//! written at that offset (the log cut to it first), and the redo file is removed. Every
//! operation repairs a left redo file first, under the lock, by doing the same again: the
//! writes are whole contents and the append goes to a fixed offset, so redoing them is
//! harmless. A SIGKILL therefore leaves either neither (redo file not yet in place) or, after
//! the next operation's repair, both; never a change without its record or a record without
//! its change. A torn last line (a kill mid-append with no redo file cannot happen, since the
//! redo file is removed only after the append) is cut by the repair too.

use std::cell::RefCell;
use std::io;
use std::os::unix::fs::FileExt;
use std::time::{SystemTime, UNIX_EPOCH};

use rustix::fs::{Mode, OFlags};
use serde_json::{Map, Value, json};

use crate::fsys::{Dir, ReadError};
use crate::journal::Entry;
use taskproof_core::protocol::Op;

/// The log's file name in a list folder.
pub const AUDIT_NAME: &str = ".audit.jsonl";
/// The redo file of a change being recorded.
pub const PENDING_NAME: &str = ".audit.pending";

thread_local! {
    /// The actor and operation of the request this thread is answering.
    static CONTEXT: RefCell<(Option<String>, Option<Op>)> = const { RefCell::new((None, None)) };
}

/// Runs `f` with `actor` as the actor of the changes it makes.
pub fn with_actor<T>(actor: &str, f: impl FnOnce() -> T) -> T {
    let before = CONTEXT.with(|c| c.borrow_mut().0.replace(actor.to_string()));
    let out = f();
    CONTEXT.with(|c| c.borrow_mut().0 = before);
    out
}

/// Runs `f` as the operation `op`.
pub fn with_op<T>(op: Op, f: impl FnOnce() -> T) -> T {
    let before = CONTEXT.with(|c| c.borrow_mut().1.replace(op));
    let out = f();
    CONTEXT.with(|c| c.borrow_mut().1 = before);
    out
}

/// The actor of the current request: set by the caller, else `TASKPROOF_ACTOR`, else
/// `pid:N`, so that a record always says which process made it.
pub fn actor() -> String {
    CONTEXT
        .with(|c| c.borrow().0.clone())
        .or_else(|| {
            std::env::var("TASKPROOF_ACTOR")
                .ok()
                .filter(|a| !a.is_empty())
        })
        .unwrap_or_else(|| format!("pid:{}", std::process::id()))
}

fn op() -> &'static str {
    CONTEXT.with(|c| c.borrow().1).map_or("change", Op::as_str)
}

/// Whether the list in `dir` is audited (its log exists).
pub fn is_audited(dir: &Dir) -> io::Result<bool> {
    Ok(dir.entry_type(AUDIT_NAME)?.is_some())
}

/// Starts the log of the list in `dir` (empty) if it has none. Call under the lock.
pub fn start(dir: &Dir, durable: bool) -> io::Result<()> {
    if !is_audited(dir)? {
        dir.write_atomic(AUDIT_NAME, b"", durable)?;
    }
    Ok(())
}

/// One changed task: its JSON before (`None`: it did not exist) and after (`None`: removed).
pub struct Changed {
    pub id: String,
    pub before: Option<Value>,
    pub after: Option<Value>,
}

/// The log line of a change.
pub fn record(list: &str, changes: &[Changed]) -> Vec<u8> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let items: Vec<Value> = changes
        .iter()
        .map(|c| json!({"id": c.id, "before": c.before, "after": c.after}))
        .collect();
    let mut line = serde_json::to_vec(&json!({
        "time": format_time(now),
        "timeMs": now,
        "actor": actor(),
        "op": op(),
        "list": list,
        "changes": items,
    }))
    .expect("records serialize");
    line.push(b'\n');
    line
}

/// Writes `entries` and appends `line` to the log, as one unit (see the module docs). Call
/// under the lock, after [`recover`].
pub fn commit(dir: &Dir, entries: &[Entry], line: &[u8], durable: bool) -> io::Result<()> {
    let at = log_len(dir)?;
    let files = super::journal::entries_json(entries);
    let mut pending = serde_json::to_vec(&json!({
        "version": 1,
        "at": at,
        "line": String::from_utf8_lossy(line),
        "entries": files,
    }))
    .expect("pending records serialize");
    pending.push(b'\n');
    dir.write_atomic(PENDING_NAME, &pending, durable)?;
    apply(dir, entries, at, line, durable)
}

/// Finishes a change whose redo file a killed process left. Call under the lock.
pub fn recover(dir: &Dir, durable: bool) -> io::Result<()> {
    let bytes = match dir.read(PENDING_NAME) {
        Ok(b) => b,
        Err(ReadError::Missing) => return Ok(()),
        Err(e) => {
            return Err(io::Error::other(format!(
                "{}: cannot read: {e}",
                dir.path().join(PENDING_NAME).display()
            )));
        }
    };
    let damaged = |why: &str| {
        io::Error::other(format!(
            "{}: the audit redo file is damaged ({why}); move it away to continue",
            dir.path().join(PENDING_NAME).display()
        ))
    };
    let v: Value = serde_json::from_slice(&bytes).map_err(|e| damaged(&e.to_string()))?;
    if v.get("version").and_then(Value::as_u64) != Some(1) {
        return Err(damaged("unknown version"));
    }
    let at = v
        .get("at")
        .and_then(Value::as_u64)
        .ok_or_else(|| damaged("no offset"))?;
    let line = v
        .get("line")
        .and_then(Value::as_str)
        .ok_or_else(|| damaged("no line"))?;
    let items = v
        .get("entries")
        .and_then(Value::as_array)
        .ok_or_else(|| damaged("no entries"))?;
    let mut entries = Vec::with_capacity(items.len());
    for item in items {
        let name = item
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| damaged("an entry without a name"))?;
        // Only plain names inside the folder, never the log or the lock.
        if name.is_empty()
            || name.contains('/')
            || name.starts_with('.') && !name.starts_with(".highwatermark")
        {
            return Err(damaged(&format!("an entry names {name:?}")));
        }
        let content = match (item.get("content"), item.get("remove")) {
            (Some(Value::String(s)), None) => Some(s.as_bytes().to_vec()),
            (None, Some(Value::Bool(true))) => None,
            _ => return Err(damaged(&format!("entry {name:?}"))),
        };
        entries.push(Entry {
            name: name.to_string(),
            content,
        });
    }
    apply(dir, &entries, at, line.as_bytes(), durable)
}

fn apply(dir: &Dir, entries: &[Entry], at: u64, line: &[u8], durable: bool) -> io::Result<()> {
    for e in entries {
        match &e.content {
            Some(c) => dir.write_atomic(&e.name, c, durable)?,
            None => {
                dir.remove(&e.name)?;
            }
        }
    }
    let file = open_log(dir)?;
    file.set_len(at)?;
    file.write_all_at(line, at)?;
    if durable {
        file.sync_data()?;
    }
    drop(file);
    dir.remove(PENDING_NAME)?;
    if durable {
        dir.sync()?;
    }
    Ok(())
}

fn open_log(dir: &Dir) -> io::Result<std::fs::File> {
    let fd = rustix::fs::openat(
        dir.as_fd(),
        AUDIT_NAME,
        OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o644),
    )
    .map_err(|e| io::Error::other(format!("{}: {e}", dir.path().join(AUDIT_NAME).display())))?;
    Ok(std::fs::File::from(fd))
}

/// The log's length up to its last complete line (a torn tail is not counted, so the next
/// record overwrites it).
fn log_len(dir: &Dir) -> io::Result<u64> {
    let Some(st) = dir.stat(AUDIT_NAME)? else {
        return Ok(0);
    };
    let len = st.st_size as u64;
    if len == 0 {
        return Ok(0);
    }
    complete_len(&open_log(dir)?, len)
}

/// The length of the first `len` bytes of a file of lines up to the end of their last
/// complete line: a torn last line (a writer killed mid-append) is not counted, so the next
/// append writes over it. Reads one byte when the last line is whole. The audit log's, and
/// `taskproof check`'s journal's.
pub fn complete_len(file: &std::fs::File, len: u64) -> io::Result<u64> {
    if len == 0 {
        return Ok(0);
    }
    let mut last = [0u8; 1];
    file.read_exact_at(&mut last, len - 1)?;
    if last[0] == b'\n' {
        return Ok(len);
    }
    // Walk back to the previous newline.
    let mut end = len - 1;
    let mut buf = vec![0u8; 4096];
    while end > 0 {
        let start = end.saturating_sub(buf.len() as u64);
        let n = (end - start) as usize;
        file.read_exact_at(&mut buf[..n], start)?;
        if let Some(i) = buf[..n].iter().rposition(|&b| b == b'\n') {
            return Ok(start + i as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}

/// `2026-11-23T12:34:56.789Z` from milliseconds since the epoch.
pub fn format_time(ms: u64) -> String {
    let secs = ms / 1000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil-from-days algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        ms % 1000
    )
}

/// One record read back from a log.
#[derive(Debug, Clone)]
pub struct Record {
    /// 1-based line number in the log.
    pub line: usize,
    pub value: Map<String, Value>,
}

impl Record {
    pub fn str(&self, key: &str) -> &str {
        self.value.get(key).and_then(Value::as_str).unwrap_or("")
    }

    /// The changed tasks: (id, before, after).
    pub fn changes(&self) -> Vec<(String, Value, Value)> {
        self.value
            .get("changes")
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .map(|c| {
                        (
                            c.get("id")
                                .and_then(Value::as_str)
                                .unwrap_or("")
                                .to_string(),
                            c.get("before").cloned().unwrap_or(Value::Null),
                            c.get("after").cloned().unwrap_or(Value::Null),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// Reads a log: its records, and the problems found (line number and what is wrong).
pub fn read_log(bytes: &[u8]) -> (Vec<Record>, Vec<(usize, String)>) {
    let mut records = Vec::new();
    let mut problems = Vec::new();
    let text = String::from_utf8_lossy(bytes);
    let complete = text.ends_with('\n') || text.is_empty();
    let lines: Vec<&str> = text.lines().collect();
    for (i, l) in lines.iter().enumerate() {
        let n = i + 1;
        if i + 1 == lines.len() && !complete {
            problems.push((n, "torn last line (no newline)".to_string()));
            break;
        }
        match serde_json::from_str::<Value>(l) {
            Ok(Value::Object(m)) => {
                let missing: Vec<&str> = ["time", "actor", "op", "changes"]
                    .into_iter()
                    .filter(|k| !m.contains_key(*k))
                    .collect();
                if missing.is_empty() {
                    records.push(Record { line: n, value: m });
                } else {
                    problems.push((n, format!("missing {}", missing.join(", "))));
                }
            }
            Ok(_) => problems.push((n, "not a JSON object".into())),
            Err(e) => problems.push((n, format!("not valid JSON: {e}"))),
        }
    }
    (records, problems)
}

/// Checks a log against the tasks of its list: every task's current file must be what the
/// last record that touched it says it became (tasks no record touched predate the log).
/// Returns one message per mismatch, naming the task and the log line.
pub fn verify(
    records: &[Record],
    current: &std::collections::BTreeMap<String, Value>,
) -> Vec<String> {
    let mut last: std::collections::BTreeMap<String, (usize, Value)> = Default::default();
    for r in records {
        for (id, _before, after) in r.changes() {
            last.insert(id, (r.line, after));
        }
    }
    let mut out = Vec::new();
    for (id, (line, after)) in &last {
        match (after, current.get(id)) {
            (Value::Null, None) => {}
            (Value::Null, Some(_)) => out.push(format!(
                "task {id} exists, but the log's last record of it (line {line}) removed it: \
                 it was written by something that does not keep the log"
            )),
            (_, None) => out.push(format!(
                "task {id} is gone, but the log's last record of it (line {line}) does not \
                 remove it: it was removed by something that does not keep the log"
            )),
            (a, Some(c)) if a != c => out.push(format!(
                "task {id} differs from the log's last record of it (line {line}): it was \
                 changed by something that does not keep the log"
            )),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_utc_calendar_dates() {
        assert_eq!(format_time(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(format_time(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(format_time(1_795_437_296_000), "2026-11-23T12:34:56.000Z");
    }

    #[test]
    fn a_left_redo_file_is_finished_and_a_torn_tail_overwritten() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::open_root(tmp.path()).unwrap();
        std::fs::write(tmp.path().join(AUDIT_NAME), b"{\"a\":1}\n{\"torn").unwrap();
        assert_eq!(log_len(&dir).unwrap(), 8);
        let entries = [Entry {
            name: "1.json".into(),
            content: Some(b"{}\n".to_vec()),
        }];
        // What a process killed right after the redo file was in place leaves.
        let line = b"{\"b\":2}\n";
        let at = log_len(&dir).unwrap();
        let pending = json!({"version": 1, "at": at, "line": "{\"b\":2}\n",
            "entries": [{"name": "1.json", "content": "{}\n"}]});
        dir.write_atomic(PENDING_NAME, pending.to_string().as_bytes(), false)
            .unwrap();
        recover(&dir, false).unwrap();
        recover(&dir, false).unwrap();
        assert_eq!(
            std::fs::read(tmp.path().join(AUDIT_NAME)).unwrap(),
            b"{\"a\":1}\n{\"b\":2}\n"
        );
        assert_eq!(std::fs::read(tmp.path().join("1.json")).unwrap(), b"{}\n");
        assert!(!tmp.path().join(PENDING_NAME).exists());
        commit(&dir, &entries, line, false).unwrap();
        let (records, problems) = read_log(&std::fs::read(tmp.path().join(AUDIT_NAME)).unwrap());
        assert_eq!(records.len(), 0); // these test lines are not records
        assert_eq!(problems.len(), 3);
    }
}
