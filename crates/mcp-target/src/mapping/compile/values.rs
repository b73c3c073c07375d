//! The small conversions the passes share: TOML values as JSON, `{null}`, pointers, op names.

use serde_json::Value;
use taskproof_core::protocol::Op;

/// The wire's status words.
pub(super) const STATUSES: [&str; 3] = ["pending", "in_progress", "completed"];

pub(super) fn op_of(s: &str) -> Result<Op, String> {
    let op: Op = s.parse()?;
    if op == Op::Hello {
        return Err("hello is the server's initialize answer; it is not mapped".into());
    }
    Ok(op)
}

/// Checks a JSON pointer's form (`*` may stand for every element of an array).
pub(super) fn pointer(p: &str) -> Result<String, String> {
    if p.is_empty() || p.starts_with('/') {
        Ok(p.to_string())
    } else {
        Err(format!(
            "{p:?} is not a JSON pointer (\"\" or starting with /)"
        ))
    }
}

pub(super) fn toml_to_json(v: &toml::Value) -> Value {
    match v {
        toml::Value::String(s) => Value::String(s.clone()),
        toml::Value::Integer(i) => Value::from(*i),
        toml::Value::Float(f) => {
            serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number)
        }
        toml::Value::Boolean(b) => Value::Bool(*b),
        toml::Value::Datetime(d) => Value::String(d.to_string()),
        toml::Value::Array(a) => Value::Array(a.iter().map(toml_to_json).collect()),
        toml::Value::Table(t) => Value::Object(
            t.iter()
                .map(|(k, v)| (k.clone(), toml_to_json(v)))
                .collect(),
        ),
    }
}

/// A value with every string `"{null}"` in it made JSON null (TOML has no null).
pub(super) fn nulls(v: Value) -> Value {
    match v {
        Value::String(s) if s == "{null}" => Value::Null,
        Value::Array(a) => Value::Array(a.into_iter().map(nulls).collect()),
        Value::Object(o) => Value::Object(o.into_iter().map(|(k, v)| (k, nulls(v))).collect()),
        other => other,
    }
}
