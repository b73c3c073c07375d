//! Decoding JSON by hand, so that every error names the field it is about: the one reader
//! behind the wire types of [`crate::task`] (`task.blockedBy[2]: expected an id string`)
//! and the scenario loader (`steps[3].expect.s07: unknown field`).
//!
//! Decoding is deliberately written against [`serde_json::Value`] rather than derived:
//! serde's messages say "invalid type: integer `3`, expected a string at line 1 column 20",
//! while a user who wrote a bad request or scenario needs "task.subject: expected a string,
//! got a number".

use serde_json::{Map, Value};

/// A field-level decoding error: which field, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct FieldError {
    /// Path of the field, e.g. `task.blockedBy[2]`, `steps[3].expect.s07` or `["a b"]`;
    /// `(file)` for a whole scenario file.
    pub field: String,
    pub message: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        FieldError {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// Names the JSON type of a value, for error messages.
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The path of `key` inside the object at `path` (`""`: the top). A key that is not a plain
/// name (empty, or with spaces, dots or quotes) is written as a quoted index, `[""]` or
/// `["a b"]`, so that the path always says which field is meant.
pub fn key_path(path: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    match (plain, path.is_empty()) {
        (true, true) => key.to_string(),
        (true, false) => format!("{path}.{key}"),
        (false, _) => format!("{path}[{}]", Value::String(key.to_string())),
    }
}

/// The path of item `i` of the array at `path`.
pub fn index_path(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}

/// An object being read, with its path for messages.
#[derive(Debug, Clone)]
pub struct Fields<'a> {
    pub map: &'a Map<String, Value>,
    pub path: String,
}

impl<'a> Fields<'a> {
    /// `v` as an object at `path`; an empty path is the whole file, named `(file)`.
    pub fn new(v: &'a Value, path: &str) -> Result<Fields<'a>, FieldError> {
        match v {
            Value::Object(map) => Ok(Fields::of(map, path)),
            other => Err(FieldError::new(
                if path.is_empty() { "(file)" } else { path },
                format!("expected an object, got {}", type_name(other)),
            )),
        }
    }

    /// `v` as an object at `path` with no key outside `allowed`.
    pub fn only(v: &'a Value, path: &str, allowed: &[&str]) -> Result<Fields<'a>, FieldError> {
        let f = Fields::new(v, path)?;
        f.deny_unknown(allowed)?;
        Ok(f)
    }

    /// An object already known to be one, at `path`.
    pub fn of(map: &'a Map<String, Value>, path: &str) -> Fields<'a> {
        Fields {
            map,
            path: path.to_string(),
        }
    }

    /// The path of `key` inside this object.
    pub fn at(&self, key: &str) -> String {
        key_path(&self.path, key)
    }

    /// Rejects every key not in `allowed`, naming it.
    pub fn deny_unknown(&self, allowed: &[&str]) -> Result<(), FieldError> {
        match self.map.keys().find(|k| !allowed.contains(&k.as_str())) {
            Some(k) => Err(FieldError::new(
                self.at(k),
                format!("unknown field; expected one of {}", allowed.join(", ")),
            )),
            None => Ok(()),
        }
    }

    pub fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key)
    }

    pub fn has(&self, key: &str) -> bool {
        self.map.contains_key(key)
    }

    /// A field that must be there.
    pub fn req(&self, key: &str) -> Result<&'a Value, FieldError> {
        self.get(key)
            .ok_or_else(|| FieldError::new(self.at(key), "missing"))
    }

    /// A string field that must be there.
    pub fn req_str(&self, key: &str) -> Result<String, FieldError> {
        string(self.req(key)?, &self.at(key))
    }

    /// A string field that may be absent (but not `null`).
    pub fn opt_str(&self, key: &str) -> Result<Option<String>, FieldError> {
        self.get(key).map(|v| string(v, &self.at(key))).transpose()
    }
}

/// `v` as a string, or an error at `path`.
pub fn string(v: &Value, path: &str) -> Result<String, FieldError> {
    match v {
        Value::String(s) => Ok(s.clone()),
        other => Err(FieldError::new(
            path,
            format!("expected a string, got {}", type_name(other)),
        )),
    }
}

/// `v` as an array of strings, naming the item that is not one.
pub fn str_array(v: &Value, path: &str) -> Result<Vec<String>, FieldError> {
    match v {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, x)| string(x, &index_path(path, i)))
            .collect(),
        other => Err(FieldError::new(
            path,
            format!("expected an array of strings, got {}", type_name(other)),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_quote_keys_that_are_not_plain_names() {
        assert_eq!(key_path("", "id"), "id");
        assert_eq!(key_path("task", "blockedBy"), "task.blockedBy");
        assert_eq!(key_path("", ""), "[\"\"]");
        assert_eq!(key_path("task", "a b"), "task[\"a b\"]");
        assert_eq!(index_path("task.blocks", 2), "task.blocks[2]");
    }

    #[test]
    fn errors_name_the_field() {
        let v = json!({"subject": 3, "x": 1});
        let f = Fields::new(&v, "task").unwrap();
        assert_eq!(
            f.req_str("subject").unwrap_err().to_string(),
            "task.subject: expected a string, got a number"
        );
        assert_eq!(f.req("owner").unwrap_err().field, "task.owner");
        assert_eq!(f.deny_unknown(&["subject"]).unwrap_err().field, "task.x");
        assert_eq!(Fields::new(&json!(1), "").unwrap_err().field, "(file)");
        assert_eq!(
            str_array(&json!(["a", 1]), "needs").unwrap_err().field,
            "needs[1]"
        );
    }
}
