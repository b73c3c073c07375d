//! The task as it travels (SPEC §1): ids, list names, statuses, tasks, new-task input and
//! patches, each decoded from JSON by hand with [`crate::field`], so that every error names
//! the field it is about ("task.subject: expected a string, got a number").

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

use serde_json::{Map, Value};

use crate::field::Fields;

/// The longest subject the strict profile accepts, in Unicode scalar values (S2).
pub const MAX_SUBJECT_CHARS: usize = 200;
/// The longest list name (S13).
pub const MAX_LIST_NAME: usize = 64;

pub use crate::field::{FieldError, type_name};

/// A task id: decimal digits without a leading zero. On the wire always a string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TaskId(pub u64);

impl TaskId {
    pub fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl FromStr for TaskId {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let canonical = !s.is_empty()
            && s.bytes().all(|b| b.is_ascii_digit())
            && (s == "0" || !s.starts_with('0'));
        if !canonical {
            return Err(format!(
                "expected an id of decimal digits without a leading zero, got {s:?}"
            ));
        }
        s.parse::<u64>()
            .map(TaskId)
            .map_err(|_| format!("id {s:?} is too large"))
    }
}

impl TaskId {
    /// Decodes an id that must be a JSON string.
    pub fn from_json(v: &Value, field: &str) -> Result<TaskId, FieldError> {
        match v {
            Value::String(s) => s.parse().map_err(|m| FieldError::new(field, m)),
            other => Err(FieldError::new(
                field,
                format!("expected an id string, got {}", type_name(other)),
            )),
        }
    }
}

/// A list name: 1 to 64 characters of `[A-Za-z0-9_-]` (S13). Anything else could name a
/// path outside the root (`..`, `a/b`) or a hidden file, so it never reaches the file system.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ListName(String);

impl ListName {
    /// A list name taken as given, unchecked. Only the `escapes-root` mutant uses it, to
    /// reproduce the bug that validation prevents.
    pub fn unchecked(s: String) -> ListName {
        ListName(s)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn from_json(v: &Value, field: &str) -> Result<ListName, FieldError> {
        match v {
            Value::String(s) => s.parse().map_err(|m| FieldError::new(field, m)),
            other => Err(FieldError::new(
                field,
                format!("expected a list name string, got {}", type_name(other)),
            )),
        }
    }
}

impl FromStr for ListName {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let ok = !s.is_empty()
            && s.len() <= MAX_LIST_NAME
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if ok {
            Ok(ListName(s.to_string()))
        } else {
            Err(format!(
                "expected 1 to {MAX_LIST_NAME} characters of [A-Za-z0-9_-], got {s:?}"
            ))
        }
    }
}

impl fmt::Display for ListName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A task's status. `Other` exists because some profiles keep any string (SPEC §4); the
/// strict store never writes one and reads a file holding one as corrupt.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Status {
    Pending,
    InProgress,
    Completed,
    Other(String),
}

impl Status {
    pub fn parse(s: &str) -> Status {
        match s {
            "pending" => Status::Pending,
            "in_progress" => Status::InProgress,
            "completed" => Status::Completed,
            other => Status::Other(other.to_string()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            Status::Pending => "pending",
            Status::InProgress => "in_progress",
            Status::Completed => "completed",
            Status::Other(s) => s,
        }
    }

    /// One of the three statuses of SPEC §1.
    pub fn is_known(&self) -> bool {
        !matches!(self, Status::Other(_))
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A task as stored and as returned on the wire.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    pub id: TaskId,
    pub subject: String,
    pub description: String,
    pub active_form: Option<String>,
    pub status: Status,
    /// Tasks that wait on this one. A set: ordered by id, each id once.
    pub blocks: BTreeSet<TaskId>,
    /// Tasks this one waits on.
    pub blocked_by: BTreeSet<TaskId>,
    pub owner: Option<String>,
    pub metadata: Option<Map<String, Value>>,
    /// Top-level fields this crate does not know, kept as they were (S16).
    pub extra: Map<String, Value>,
}

/// The fields of SPEC §1, in the order they are written.
pub const TASK_FIELDS: [&str; 9] = [
    "id",
    "subject",
    "description",
    "activeForm",
    "status",
    "blocks",
    "blockedBy",
    "owner",
    "metadata",
];

/// How strictly to read a task object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strictness {
    /// The strict schema: status one of three, subject 1 to 200 characters.
    Strict,
    /// Any status string and any subject string: what lenient profiles store and what a
    /// harness must be able to read back from any target.
    Lenient,
}

impl Task {
    /// A new pending task with nothing but an id and a subject.
    pub fn new(id: TaskId, subject: impl Into<String>) -> Task {
        Task {
            id,
            subject: subject.into(),
            description: String::new(),
            active_form: None,
            status: Status::Pending,
            blocks: BTreeSet::new(),
            blocked_by: BTreeSet::new(),
            owner: None,
            metadata: None,
            extra: Map::new(),
        }
    }

    /// Decodes a task object. `id`, `subject` and `status` are required; `description`,
    /// `blocks` and `blockedBy` default to empty; optional fields that are `null` or empty
    /// count as unset (SPEC §1).
    pub fn from_json(v: &Value, strictness: Strictness) -> Result<Task, FieldError> {
        // A stored task's fields are named bare (`subject`), as they stand in its file.
        let f = Fields::of(Fields::new(v, "task")?.map, "");
        let id = TaskId::from_json(f.req("id")?, "id")?;
        let subject = f.req_str("subject")?;
        if strictness == Strictness::Strict {
            check_subject(&subject, "subject")?;
        }
        let status = Status::parse(&f.req_str("status")?);
        if strictness == Strictness::Strict && !status.is_known() {
            return Err(FieldError::new(
                "status",
                format!(
                    "expected pending, in_progress or completed, got {:?}",
                    status.as_str()
                ),
            ));
        }
        let mut extra = Map::new();
        for (k, v) in f.map {
            if !TASK_FIELDS.contains(&k.as_str()) {
                extra.insert(k.clone(), v.clone());
            }
        }
        Ok(Task {
            id,
            subject,
            description: unset_string(&f, "description")?.unwrap_or_default(),
            active_form: unset_string(&f, "activeForm")?,
            status,
            blocks: id_set(f.get("blocks"), "blocks")?,
            blocked_by: id_set(f.get("blockedBy"), "blockedBy")?,
            owner: unset_string(&f, "owner")?,
            metadata: unset_object(&f, "metadata")?,
            extra,
        })
    }

    /// Encodes the task: the SPEC §1 fields in their order, unset optional fields left out,
    /// then the unknown fields it was read with.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("id".into(), Value::String(self.id.to_string()));
        m.insert("subject".into(), Value::String(self.subject.clone()));
        m.insert(
            "description".into(),
            Value::String(self.description.clone()),
        );
        if let Some(a) = &self.active_form {
            m.insert("activeForm".into(), Value::String(a.clone()));
        }
        m.insert("status".into(), Value::String(self.status.as_str().into()));
        m.insert("blocks".into(), ids_json(&self.blocks));
        m.insert("blockedBy".into(), ids_json(&self.blocked_by));
        if let Some(o) = &self.owner {
            m.insert("owner".into(), Value::String(o.clone()));
        }
        if let Some(md) = &self.metadata {
            m.insert("metadata".into(), Value::Object(md.clone()));
        }
        for (k, v) in &self.extra {
            m.entry(k.clone()).or_insert_with(|| v.clone());
        }
        Value::Object(m)
    }
}

/// On the wire an id is a string of its digits; written without building the string.
impl serde::Serialize for TaskId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

/// A set of ids as a JSON array of id strings.
struct IdArray<'a>(&'a BTreeSet<TaskId>);

impl serde::Serialize for IdArray<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0)
    }
}

/// The same JSON as [`Task::to_json`], field for field and in the same order, written
/// straight from the task: no `Value` tree is built and nothing is cloned, which is what
/// `list` answers of thousands of tasks spend their time on otherwise.
impl serde::Serialize for Task {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("id", &self.id)?;
        m.serialize_entry("subject", &self.subject)?;
        m.serialize_entry("description", &self.description)?;
        if let Some(a) = &self.active_form {
            m.serialize_entry("activeForm", a)?;
        }
        m.serialize_entry("status", self.status.as_str())?;
        m.serialize_entry("blocks", &IdArray(&self.blocks))?;
        m.serialize_entry("blockedBy", &IdArray(&self.blocked_by))?;
        if let Some(o) = &self.owner {
            m.serialize_entry("owner", o)?;
        }
        if let Some(md) = &self.metadata {
            m.serialize_entry("metadata", md)?;
        }
        // As in `to_json`, an unknown field never overrides a field written above (one
        // that is unset here, such as an `owner` kept in `extra`, is written from `extra`).
        for (k, v) in &self.extra {
            let written = match k.as_str() {
                "id" | "subject" | "description" | "status" | "blocks" | "blockedBy" => true,
                "activeForm" => self.active_form.is_some(),
                "owner" => self.owner.is_some(),
                "metadata" => self.metadata.is_some(),
                _ => false,
            };
            if !written {
                m.serialize_entry(k, v)?;
            }
        }
        m.end()
    }
}

/// Encodes a set of ids as a JSON array of strings.
pub fn ids_json<'a>(ids: impl IntoIterator<Item = &'a TaskId>) -> Value {
    Value::Array(
        ids.into_iter()
            .map(|i| Value::String(i.to_string()))
            .collect(),
    )
}

fn check_subject(s: &str, field: &str) -> Result<(), FieldError> {
    let n = s.chars().count();
    if n == 0 || n > MAX_SUBJECT_CHARS {
        return Err(FieldError::new(
            field,
            format!("expected 1 to {MAX_SUBJECT_CHARS} characters, got {n}"),
        ));
    }
    Ok(())
}

/// An optional string field: absent, `null` and `""` are all unset.
fn unset_string(f: &Fields<'_>, key: &str) -> Result<Option<String>, FieldError> {
    match f.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(v) => crate::field::string(v, &f.at(key)).map(Some),
    }
}

/// An optional object field: absent, `null` and `{}` are all unset.
fn unset_object(f: &Fields<'_>, key: &str) -> Result<Option<Map<String, Value>>, FieldError> {
    match f.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(m)) if m.is_empty() => Ok(None),
        Some(Value::Object(m)) => Ok(Some(m.clone())),
        Some(other) => Err(FieldError::new(
            f.at(key),
            format!("expected an object, got {}", type_name(other)),
        )),
    }
}

/// An array of id strings read as a set; absent or `null` is empty.
fn id_set(v: Option<&Value>, field: &str) -> Result<BTreeSet<TaskId>, FieldError> {
    Ok(id_list(v, field)?.into_iter().collect())
}

/// An array of id strings, in order, duplicates kept; absent or `null` is empty.
fn id_list(v: Option<&Value>, field: &str) -> Result<Vec<TaskId>, FieldError> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| TaskId::from_json(item, &format!("{field}[{i}]")))
            .collect(),
        Some(other) => Err(FieldError::new(
            field,
            format!("expected an array of id strings, got {}", type_name(other)),
        )),
    }
}

/// The input of `create` (NEW in SPEC §2).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NewTask {
    pub subject: String,
    pub description: String,
    pub active_form: Option<String>,
    pub owner: Option<String>,
    pub metadata: Option<Map<String, Value>>,
    /// The ids as the request gives them, in order and duplicates kept: SPEC §3 checks a
    /// create's edges id by id, `blockedBy` first, so the first failing id decides the error.
    pub blocked_by: Vec<TaskId>,
    /// As `blocked_by`, checked after it.
    pub blocks: Vec<TaskId>,
}

/// The fields a new task may be given: a create request's `task` object.
pub const NEW_FIELDS: [&str; 7] = [
    "subject",
    "description",
    "activeForm",
    "owner",
    "metadata",
    "blockedBy",
    "blocks",
];

impl NewTask {
    pub fn new(subject: impl Into<String>) -> NewTask {
        NewTask {
            subject: subject.into(),
            ..NewTask::default()
        }
    }

    /// Decodes NEW. The subject's length is checked here too: it is part of the request's
    /// form (S2), so every profile that checks it checks it first.
    pub fn from_json(v: &Value, strictness: Strictness) -> Result<NewTask, FieldError> {
        let f = Fields::only(v, "task", &NEW_FIELDS)?;
        let subject = f.req_str("subject")?;
        if strictness == Strictness::Strict {
            check_subject(&subject, "task.subject")?;
        }
        Ok(NewTask {
            subject,
            description: unset_string(&f, "description")?.unwrap_or_default(),
            active_form: unset_string(&f, "activeForm")?,
            owner: unset_string(&f, "owner")?,
            metadata: unset_object(&f, "metadata")?,
            blocked_by: id_list(f.get("blockedBy"), &f.at("blockedBy"))?,
            blocks: id_list(f.get("blocks"), &f.at("blocks"))?,
        })
    }

    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("subject".into(), Value::String(self.subject.clone()));
        if !self.description.is_empty() {
            m.insert(
                "description".into(),
                Value::String(self.description.clone()),
            );
        }
        if let Some(a) = &self.active_form {
            m.insert("activeForm".into(), Value::String(a.clone()));
        }
        if let Some(o) = &self.owner {
            m.insert("owner".into(), Value::String(o.clone()));
        }
        if let Some(md) = &self.metadata {
            m.insert("metadata".into(), Value::Object(md.clone()));
        }
        if !self.blocked_by.is_empty() {
            m.insert("blockedBy".into(), ids_json(&self.blocked_by));
        }
        if !self.blocks.is_empty() {
            m.insert("blocks".into(), ids_json(&self.blocks));
        }
        Value::Object(m)
    }
}

/// A change to one optional field: leave it, set it, or remove it.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Change<T> {
    #[default]
    Keep,
    Set(T),
    Remove,
}

/// The input of `update` (PATCH in SPEC §2), mirroring Claude Code's TaskUpdate tool.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Patch {
    pub subject: Option<String>,
    pub description: Option<String>,
    pub active_form: Change<String>,
    /// Kept as given; whether the value is allowed is the store's decision (S3 is checked
    /// after the task is found, SPEC §3 "order of checks").
    pub status: Option<Status>,
    pub owner: Change<String>,
    /// `Set` merges key by key: a key whose value is `null` is removed.
    pub metadata: Change<Map<String, Value>>,
    pub add_blocked_by: Vec<TaskId>,
    pub add_blocks: Vec<TaskId>,
    pub remove_blocked_by: Vec<TaskId>,
    pub remove_blocks: Vec<TaskId>,
}

/// The fields of an update's `patch` object.
pub const PATCH_FIELDS: [&str; 10] = [
    "subject",
    "description",
    "activeForm",
    "status",
    "owner",
    "metadata",
    "addBlockedBy",
    "addBlocks",
    "removeBlockedBy",
    "removeBlocks",
];

impl Patch {
    pub fn from_json(v: &Value, strictness: Strictness) -> Result<Patch, FieldError> {
        let f = Fields::only(v, "patch", &PATCH_FIELDS)?;
        let required_string = |key: &str| -> Result<Option<String>, FieldError> {
            match f.get(key) {
                Some(Value::Null) => Err(FieldError::new(
                    f.at(key),
                    "cannot be removed (null is only for activeForm, owner and metadata)",
                )),
                _ => f.opt_str(key),
            }
        };
        let subject = required_string("subject")?;
        if let (Some(s), Strictness::Strict) = (&subject, strictness) {
            check_subject(s, "patch.subject")?;
        }
        let description = required_string("description")?;
        let status = required_string("status")?.map(|s| Status::parse(&s));
        let string_change = |key: &str| -> Result<Change<String>, FieldError> {
            match f.get(key) {
                None => Ok(Change::Keep),
                Some(Value::Null) => Ok(Change::Remove),
                Some(Value::String(s)) if s.is_empty() => Ok(Change::Remove),
                Some(Value::String(s)) => Ok(Change::Set(s.clone())),
                Some(other) => Err(FieldError::new(
                    f.at(key),
                    format!("expected a string or null, got {}", type_name(other)),
                )),
            }
        };
        let metadata = match f.get("metadata") {
            None => Change::Keep,
            Some(Value::Null) => Change::Remove,
            Some(Value::Object(m)) => Change::Set(m.clone()),
            Some(other) => {
                return Err(FieldError::new(
                    "patch.metadata",
                    format!("expected an object or null, got {}", type_name(other)),
                ));
            }
        };
        Ok(Patch {
            subject,
            description,
            active_form: string_change("activeForm")?,
            status,
            owner: string_change("owner")?,
            metadata,
            add_blocked_by: id_list(f.get("addBlockedBy"), &f.at("addBlockedBy"))?,
            add_blocks: id_list(f.get("addBlocks"), &f.at("addBlocks"))?,
            remove_blocked_by: id_list(f.get("removeBlockedBy"), &f.at("removeBlockedBy"))?,
            remove_blocks: id_list(f.get("removeBlocks"), &f.at("removeBlocks"))?,
        })
    }

    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        if let Some(s) = &self.subject {
            m.insert("subject".into(), Value::String(s.clone()));
        }
        if let Some(s) = &self.description {
            m.insert("description".into(), Value::String(s.clone()));
        }
        change_json(&mut m, "activeForm", &self.active_form, |s| {
            Value::String(s.clone())
        });
        if let Some(s) = &self.status {
            m.insert("status".into(), Value::String(s.as_str().into()));
        }
        change_json(&mut m, "owner", &self.owner, |s| Value::String(s.clone()));
        change_json(&mut m, "metadata", &self.metadata, |o| {
            Value::Object(o.clone())
        });
        for (key, ids) in [
            ("addBlockedBy", &self.add_blocked_by),
            ("addBlocks", &self.add_blocks),
            ("removeBlockedBy", &self.remove_blocked_by),
            ("removeBlocks", &self.remove_blocks),
        ] {
            if !ids.is_empty() {
                m.insert(
                    key.into(),
                    Value::Array(ids.iter().map(|i| Value::String(i.to_string())).collect()),
                );
            }
        }
        Value::Object(m)
    }

    /// Applies the field and metadata parts of the patch (not status, not edges) to `task`.
    pub fn apply_fields(&self, task: &mut Task) {
        if let Some(s) = &self.subject {
            task.subject = s.clone();
        }
        if let Some(s) = &self.description {
            task.description = s.clone();
        }
        apply_change(&mut task.active_form, &self.active_form);
        apply_change(&mut task.owner, &self.owner);
        match &self.metadata {
            Change::Keep => {}
            Change::Remove => task.metadata = None,
            Change::Set(m) => task.metadata = merge_metadata(task.metadata.take(), m),
        }
    }
}

fn change_json<T>(m: &mut Map<String, Value>, key: &str, c: &Change<T>, f: impl Fn(&T) -> Value) {
    match c {
        Change::Keep => {}
        Change::Remove => {
            m.insert(key.into(), Value::Null);
        }
        Change::Set(v) => {
            m.insert(key.into(), f(v));
        }
    }
}

fn apply_change(slot: &mut Option<String>, c: &Change<String>) {
    match c {
        Change::Keep => {}
        Change::Remove => *slot = None,
        Change::Set(v) => *slot = Some(v.clone()),
    }
}

/// Merges `patch` into `stored` key by key; a `null` value removes the key. An object left
/// empty counts as unset (SPEC §1), so it becomes `None`.
pub fn merge_metadata(
    stored: Option<Map<String, Value>>,
    patch: &Map<String, Value>,
) -> Option<Map<String, Value>> {
    let mut m = stored.unwrap_or_default();
    for (k, v) in patch {
        if v.is_null() {
            m.remove(k);
        } else {
            m.insert(k.clone(), v.clone());
        }
    }
    if m.is_empty() { None } else { Some(m) }
}

/// Depth of a JSON value: a scalar is 0, an object or array one more than its deepest child.
pub fn json_depth(v: &Value) -> usize {
    // Iterative so that a hostile, very deep value cannot overflow the stack.
    let mut max = 0;
    let mut stack = vec![(v, 0usize)];
    while let Some((v, d)) = stack.pop() {
        match v {
            Value::Array(a) => {
                max = max.max(d + 1);
                stack.extend(a.iter().map(|c| (c, d + 1)));
            }
            Value::Object(o) => {
                max = max.max(d + 1);
                stack.extend(o.values().map(|c| (c, d + 1)));
            }
            _ => max = max.max(d),
        }
    }
    max
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Serializing a task directly must give exactly the bytes of serializing `to_json`,
    /// compact and pretty, for odd content too.
    fn assert_same_json(t: &Task) {
        let typed = serde_json::to_string(t).unwrap();
        let via_value = serde_json::to_string(&t.to_json()).unwrap();
        assert_eq!(typed, via_value);
        let typed = serde_json::to_string_pretty(t).unwrap();
        let via_value = serde_json::to_string_pretty(&t.to_json()).unwrap();
        assert_eq!(typed, via_value);
    }

    #[test]
    fn a_task_serializes_as_its_to_json() {
        let mut t = Task::new(TaskId(0), "plain");
        assert_same_json(&t);
        t = Task::new(
            TaskId(u64::MAX),
            "ünïcødé \u{1F600} \"quoted\" \\ back\nnew\tline \u{7f}\u{0}",
        );
        t.description = "line 1\r\nline 2 \u{2028} \u{1b}[0m".into();
        t.active_form = Some("Doing it".into());
        t.status = Status::Other("weird status \u{e9}".into());
        t.blocks = [TaskId(3), TaskId(10), TaskId(2)].into_iter().collect();
        t.blocked_by = [TaskId(1)].into_iter().collect();
        t.owner = Some("agent-\u{3b1}".into());
        let md = json!({
            "z": 1, "a": [1, 2.5, -3e300, null, true, {"deep": {"deeper": ["x", {}]}}],
            "big": 18446744073709551615u64, "neg": -9223372036854775808i64,
            "f": 0.1, "s": "\u{fffd}\u{0}", "": {"": ""}
        });
        t.metadata = Some(md.as_object().unwrap().clone());
        assert_same_json(&t);
        // Unknown fields keep their order and their nested values; those named like a field
        // that is unset are written (as `to_json` writes them), those named like a field that
        // is set are not.
        let extra = json!({
            "zeta": {"k": [1, {"v": null}]}, "owner": "hidden by the owner",
            "alpha": "\u{10ffff}", "id": "99", "metadata": {"m": 1},
        });
        t.extra = extra.as_object().unwrap().clone();
        assert_same_json(&t);
        t.owner = None;
        t.metadata = None;
        t.active_form = None;
        t.extra
            .insert("activeForm".into(), json!(["not", "a", "string"]));
        assert_same_json(&t);
        let v: Value = serde_json::from_str(&serde_json::to_string(&t).unwrap()).unwrap();
        assert_eq!(v["owner"], "hidden by the owner");
        assert_eq!(v["id"], json!(u64::MAX.to_string()));
    }

    proptest::proptest! {
        #[test]
        fn any_task_read_from_a_file_serializes_as_its_to_json(
            id in proptest::num::u64::ANY,
            subject in "\\PC{0,20}",
            description in proptest::option::of(".{0,30}"),
            owner in proptest::option::of("\\PC{0,10}"),
            key in "\\PC{0,8}",
            n in proptest::num::f64::ANY,
            edges in proptest::collection::btree_set(0u64..50, 0..5),
        ) {
            proptest::prop_assume!(!TASK_FIELDS.contains(&key.as_str()));
            let file = json!({
                "id": id.to_string(), "subject": subject, "description": description,
                "status": "pending", "owner": owner,
                "blocks": edges.iter().map(|e| e.to_string()).collect::<Vec<_>>(),
                "metadata": {key.clone(): n, "nested": {key.clone(): [n, key.clone()]}},
                key.clone(): {"unknown": key.clone()},
            });
            let t = Task::from_json(&file, Strictness::Lenient).unwrap();
            assert_same_json(&t);
        }
    }

    #[test]
    fn ids_are_canonical_decimal_strings() {
        assert_eq!("7".parse::<TaskId>(), Ok(TaskId(7)));
        assert_eq!("0".parse::<TaskId>(), Ok(TaskId(0)));
        for bad in ["", "07", "-1", "1.0", "a", " 1", "99999999999999999999999"] {
            assert!(bad.parse::<TaskId>().is_err(), "{bad:?} accepted");
        }
        let e = TaskId::from_json(&json!(7), "id").unwrap_err();
        assert_eq!(e.field, "id");
        assert!(e.message.contains("a number"), "{e}");
    }

    #[test]
    fn list_names_cannot_leave_the_root() {
        assert!("team-a_1".parse::<ListName>().is_ok());
        assert!("x".repeat(64).parse::<ListName>().is_ok());
        for bad in ["", "..", "a/b", ".hidden", "a b", "é", &"x".repeat(65)] {
            assert!(bad.parse::<ListName>().is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn new_task_errors_name_the_field() {
        let e = NewTask::from_json(&json!({"subject": 3}), Strictness::Strict).unwrap_err();
        assert_eq!(e.field, "task.subject");
        let e = NewTask::from_json(&json!({"subject": "a", "status": "x"}), Strictness::Strict)
            .unwrap_err();
        assert_eq!(e.field, "task.status");
        assert!(e.message.contains("unknown field"));
        let e = NewTask::from_json(
            &json!({"subject": "a", "blockedBy": ["1", 2]}),
            Strictness::Strict,
        )
        .unwrap_err();
        assert_eq!(e.field, "task.blockedBy[1]");
        let e = NewTask::from_json(&json!({"subject": ""}), Strictness::Strict).unwrap_err();
        assert_eq!(e.field, "task.subject");
        assert!(NewTask::from_json(&json!({"subject": ""}), Strictness::Lenient).is_ok());
    }

    #[test]
    fn subject_length_counts_scalar_values() {
        let ok = "é".repeat(200);
        assert!(NewTask::from_json(&json!({ "subject": ok }), Strictness::Strict).is_ok());
        let long = "é".repeat(201);
        assert!(NewTask::from_json(&json!({ "subject": long }), Strictness::Strict).is_err());
    }

    #[test]
    fn null_optional_fields_count_as_absent() {
        let n = NewTask::from_json(
            &json!({"subject": "a", "owner": null, "metadata": null, "activeForm": ""}),
            Strictness::Strict,
        )
        .unwrap();
        assert_eq!(n, NewTask::new("a"));
    }

    #[test]
    fn patch_null_rules() {
        let p = Patch::from_json(
            &json!({"owner": null, "activeForm": null, "metadata": null}),
            Strictness::Strict,
        )
        .unwrap();
        assert_eq!(p.owner, Change::Remove);
        assert_eq!(p.active_form, Change::Remove);
        assert_eq!(p.metadata, Change::Remove);
        let p = Patch::from_json(&json!({"owner": ""}), Strictness::Strict).unwrap();
        assert_eq!(p.owner, Change::Remove);
        for key in ["subject", "description", "status"] {
            let e = Patch::from_json(&json!({ key: null }), Strictness::Strict).unwrap_err();
            assert_eq!(e.field, format!("patch.{key}"));
        }
        let e = Patch::from_json(&json!({"bogus": 1}), Strictness::Strict).unwrap_err();
        assert_eq!(e.field, "patch.bogus");
    }

    #[test]
    fn metadata_merges_key_by_key() {
        let stored = json!({"a": 1, "b": {"x": 1}, "c": 3}).as_object().cloned();
        let patch = json!({"b": {"y": 2}, "c": null, "d": "new"});
        let merged = merge_metadata(stored, patch.as_object().unwrap()).unwrap();
        assert_eq!(
            Value::Object(merged),
            json!({"a": 1, "b": {"y": 2}, "d": "new"})
        );
        let stored = json!({"a": 1}).as_object().cloned();
        assert_eq!(
            merge_metadata(stored, json!({"a": null}).as_object().unwrap()),
            None
        );
    }

    #[test]
    fn tasks_round_trip_with_unknown_fields() {
        let v = json!({
            "id": "3", "subject": "s", "description": "d", "activeForm": "doing",
            "status": "in_progress", "blocks": ["10", "2"], "blockedBy": [],
            "owner": "w1", "metadata": {"k": [1, 2.5, "é"]}, "x-color": "red"
        });
        let t = Task::from_json(&v, Strictness::Strict).unwrap();
        assert_eq!(t.extra.get("x-color"), Some(&json!("red")));
        assert_eq!(
            t.blocks.iter().map(|i| i.0).collect::<Vec<_>>(),
            vec![2, 10]
        );
        let back = Task::from_json(&t.to_json(), Strictness::Strict).unwrap();
        assert_eq!(back, t);
    }

    #[test]
    fn stored_task_schema_is_checked() {
        let e = Task::from_json(
            &json!({"id": "1", "subject": "s", "status": "done"}),
            Strictness::Strict,
        )
        .unwrap_err();
        assert_eq!(e.field, "status");
        assert!(
            Task::from_json(
                &json!({"id": "1", "subject": "s", "status": "done"}),
                Strictness::Lenient
            )
            .is_ok()
        );
        let e = Task::from_json(
            &json!({"id": 1, "subject": "s", "status": "pending"}),
            Strictness::Strict,
        )
        .unwrap_err();
        assert_eq!(e.field, "id");
        let e = Task::from_json(&json!({"id": "1", "status": "pending"}), Strictness::Strict)
            .unwrap_err();
        assert_eq!(e.field, "subject");
    }

    #[test]
    fn depth_is_measured_without_recursion() {
        assert_eq!(json_depth(&json!(1)), 0);
        assert_eq!(json_depth(&json!({"a": [1]})), 2);
        let mut v = json!(0);
        for _ in 0..100_000 {
            v = Value::Array(vec![v]);
        }
        assert_eq!(json_depth(&v), 100_000);
        // Dropping a value this deep recurses in serde_json; forget it on purpose.
        std::mem::forget(v);
    }
}
