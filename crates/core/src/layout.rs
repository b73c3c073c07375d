//! Task-store layouts, the one home for everything that depends on where and how a target
//! keeps its files: the [`Layout`] names of `hello`, the file name of a task in each
//! ([`Layout::file_name`], [`Layout::task_id_of`]), and the conversion between a task file's
//! on-disk form and the wire form of SPEC §1 ([`to_wire`], [`to_disk`], [`id_value`],
//! [`id_of`]).
//!
//! The `claude-code` layout stores tasks as they travel. The `s07` layout (learn-claude-code
//! lesson s07) stores `id`, `blocks` and `blockedBy` as JSON integers; [`to_wire`] turns those
//! into id strings so [`crate::task::Task::from_json`] can judge the rest, [`to_disk`] writes
//! a task the way such a program would, and [`id_value`] gives an id back in the form a
//! layout writes, so a repair keeps the file's own style.

use serde_json::Value;

use crate::task::TaskId;

word_enum! {
    /// Where a target keeps its files, so that the harness knows whether it may look at them.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum Layout, unknown: |s| format!(
        "unknown layout {s:?}; expected claude-code, s07 or opaque"
    ), {
        /// `ROOT/{list}/{id}.json`
        ClaudeCode => "claude-code",
        /// `ROOT/{list}/task_{id}.json`
        S07 => "s07",
        /// The harness must not look at files.
        Opaque => "opaque",
    }
}

impl Layout {
    /// The file name of task `id` in this layout; `None` for `opaque`.
    pub fn file_name(self, id: TaskId) -> Option<String> {
        self.file_name_of(&id.to_string())
    }

    /// The file name of the task whose id is written `id` (a scenario's `{task:ID}` and
    /// `write_task`, where the id may be any text); `None` for `opaque`.
    pub fn file_name_of(self, id: &str) -> Option<String> {
        match self {
            Layout::ClaudeCode => Some(format!("{id}.json")),
            Layout::S07 => Some(format!("task_{id}.json")),
            Layout::Opaque => None,
        }
    }

    /// The id a file name stands for, if it is a task file of this layout (S15): `7.json`
    /// is, `07.json`, `7.json.bak` and `.7.json` are not.
    pub fn task_id_of(self, name: &str) -> Option<TaskId> {
        let stem = match self {
            Layout::ClaudeCode => name.strip_suffix(".json")?,
            Layout::S07 => name.strip_prefix("task_")?.strip_suffix(".json")?,
            Layout::Opaque => return None,
        };
        stem.parse().ok()
    }
}

/// The task object as it travels: in the `s07` layout, integer ids (non-negative) become
/// decimal strings; everything else is left as it is, so a field that is wrong stays wrong
/// and is reported by the schema check.
/// Claude Code's file and folder names for list ids and task ids (2.1.17 to 2.1.332): every
/// UTF-16 unit outside `[A-Za-z0-9_-]` becomes `-` (a JavaScript `replace` without the `u`
/// flag), so a character outside the Basic Multilingual Plane becomes `--` and `../x`
/// becomes `---x`: always one safe path component. The one copy in taskproof, used by the
/// Claude Code target and by `check`; tests/claude_code.rs pins it against the real tool.
pub fn claude_code_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
            out.push(c);
        } else {
            out.extend(std::iter::repeat_n('-', c.len_utf16()));
        }
    }
    out
}

pub fn to_wire(layout: Layout, v: &Value) -> Value {
    if layout != Layout::S07 {
        return v.clone();
    }
    let mut v = v.clone();
    if let Some(obj) = v.as_object_mut() {
        if let Some(id) = obj.get_mut("id") {
            int_to_string(id);
        }
        for key in ["blocks", "blockedBy"] {
            if let Some(Value::Array(items)) = obj.get_mut(key) {
                items.iter_mut().for_each(int_to_string);
            }
        }
    }
    v
}

fn int_to_string(v: &mut Value) {
    if let Some(n) = v.as_u64() {
        *v = Value::String(n.to_string());
    }
}

/// The id as `layout` writes it in a task file.
pub fn id_value(layout: Layout, id: TaskId) -> Value {
    match layout {
        Layout::S07 => Value::from(id.get()),
        _ => Value::String(id.to_string()),
    }
}

/// The id an element of an on-disk edge list stands for, in either form.
pub fn id_of(v: &Value) -> Option<TaskId> {
    match v {
        Value::String(s) => s.parse().ok(),
        Value::Number(n) => n.as_u64().map(TaskId),
        _ => None,
    }
}

/// A wire task object as another program would store it in `layout`: the `id` field is
/// added when missing, and in `s07` ids (`id`, `blocks`, `blockedBy`) are integers on disk.
pub fn to_disk(layout: Layout, id: &str, task: &Value) -> Value {
    let mut t = task.clone();
    if let Value::Object(m) = &mut t {
        m.entry("id")
            .or_insert_with(|| Value::String(id.to_string()));
        if layout == Layout::S07 {
            for key in ["id", "blocks", "blockedBy"] {
                if let Some(v) = m.get_mut(key) {
                    map_ids(v, |s| s.parse::<u64>().ok().map(Value::from));
                }
            }
        }
    }
    t
}

fn map_ids(v: &mut Value, f: impl Fn(&str) -> Option<Value> + Copy) {
    match v {
        Value::String(s) => {
            if let Some(n) = f(s) {
                *v = n;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| map_ids(i, f)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn s07_integers_become_id_strings_and_nothing_else_changes() {
        let disk = json!({"id": 3, "subject": "s", "status": "pending",
                          "blocks": [4, "5"], "blockedBy": [1], "extra": 7});
        let wire = to_wire(Layout::S07, &disk);
        assert_eq!(
            wire,
            json!({"id": "3", "subject": "s", "status": "pending",
                   "blocks": ["4", "5"], "blockedBy": ["1"], "extra": 7})
        );
        // The claude-code layout is already the wire form: an integer id there is an error
        // the schema check must see.
        assert_eq!(to_wire(Layout::ClaudeCode, &disk), disk);
        // A negative id is not an id; it stays a number and fails the schema check.
        assert_eq!(to_wire(Layout::S07, &json!({"id": -1}))["id"], json!(-1));
    }

    #[test]
    fn ids_are_written_in_the_layouts_form() {
        assert_eq!(id_value(Layout::S07, TaskId(4)), json!(4));
        assert_eq!(id_value(Layout::ClaudeCode, TaskId(4)), json!("4"));
        assert_eq!(id_of(&json!(4)), Some(TaskId(4)));
        assert_eq!(id_of(&json!("4")), Some(TaskId(4)));
        assert_eq!(id_of(&json!("04")), None);
    }

    #[test]
    fn s07_stores_integer_ids() {
        let t = json!({"subject": "a", "blocks": ["2"], "blockedBy": ["1", "x"]});
        let on_disk = to_disk(Layout::S07, "3", &t);
        assert_eq!(
            on_disk,
            json!({"subject": "a", "blocks": [2], "blockedBy": [1, "x"], "id": 3})
        );
        assert_eq!(
            to_wire(Layout::S07, &on_disk),
            json!({"subject": "a", "blocks": ["2"], "blockedBy": ["1", "x"], "id": "3"})
        );
        assert_eq!(to_disk(Layout::ClaudeCode, "3", &t)["id"], json!("3"));
    }

    #[test]
    fn layouts_name_only_canonical_task_files() {
        let cc = Layout::ClaudeCode;
        assert_eq!(cc.task_id_of("7.json"), Some(TaskId(7)));
        for stray in [
            "07.json",
            "7.json.bak",
            "abc.json",
            ".7.json",
            "7",
            ".lock",
            ".highwatermark",
        ] {
            assert_eq!(cc.task_id_of(stray), None, "{stray}");
        }
        assert_eq!(Layout::S07.task_id_of("task_12.json"), Some(TaskId(12)));
        assert_eq!(Layout::S07.task_id_of("12.json"), None);
    }
}
