//! The one place where a task file's on-disk form meets the wire form of SPEC §1.
//!
//! The `claude-code` layout stores tasks as they travel. The `s07` layout (learn-claude-code
//! lesson s07) stores `id`, `blocks` and `blockedBy` as JSON integers; [`to_wire`] turns those
//! into id strings so [`crate::task::Task::from_json`] can judge the rest, and [`id_value`]
//! gives an id back in the form a layout writes, so a repair keeps the file's own style.

use serde_json::Value;

use crate::protocol::Layout;
use crate::task::TaskId;

/// The task object as it travels: in the `s07` layout, integer ids (non-negative) become
/// decimal strings; everything else is left as it is, so a field that is wrong stays wrong
/// and is reported by the schema check.
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
}
