//! A target's answer: the response to one request, and the answer as the harness decodes it
//! once.

use serde_json::{Value, json};

use crate::task::{Strictness, Task, type_name};

use super::*;

/// A decoded response.
// One response exists per request and is encoded at once; boxing the task would cost an
// allocation on every answer to save stack space nobody is short of.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Response {
    Hello(Hello),
    /// `create`, `get`, `update` and `claim`.
    Task(Task),
    /// `list`: tasks in ascending id order, and the names of unreadable task files.
    Tasks {
        tasks: Vec<Task>,
        corrupt: Vec<String>,
    },
    /// `delete`.
    Done,
    Error(Failure),
}

impl Response {
    pub fn error(kind: ErrorKind, message: impl Into<String>) -> Response {
        Response::Error(Failure::new(kind, message))
    }

    pub fn is_ok(&self) -> bool {
        !matches!(self, Response::Error(_))
    }

    pub fn error_kind(&self) -> Option<ErrorKind> {
        match self {
            Response::Error(f) => Some(f.kind),
            _ => None,
        }
    }

    pub fn to_json(&self) -> Value {
        match self {
            Response::Hello(h) => h.to_json(),
            Response::Task(t) => json!({"ok": true, "task": t.to_json()}),
            Response::Tasks { tasks, corrupt } => json!({
                "ok": true,
                "tasks": tasks.iter().map(Task::to_json).collect::<Vec<_>>(),
                "corrupt": corrupt,
            }),
            Response::Done => json!({"ok": true}),
            Response::Error(f) => json!({
                "ok": false,
                "error": {"kind": f.kind.as_str(), "message": f.message},
            }),
        }
    }

    /// Writes the answer as one line of JSON (its bytes are those of
    /// `serde_json::to_vec(&self.to_json())`), straight from the typed answer.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        serde_json::to_writer(out, self).expect("answers serialize");
    }

    /// Decodes a target's answer to a request of kind `op`. Tasks are read leniently (any
    /// status string), since judging them is the harness's business, not the decoder's.
    pub fn from_json(v: &Value, op: Op) -> Result<Response, String> {
        let obj = v
            .as_object()
            .ok_or_else(|| format!("expected a JSON object, got {}", type_name(v)))?;
        match obj.get("ok") {
            Some(Value::Bool(true)) => {}
            Some(Value::Bool(false)) => {
                let err = obj
                    .get("error")
                    .and_then(Value::as_object)
                    .ok_or("`ok` is false but `error` is not an object")?;
                let kind = err
                    .get("kind")
                    .and_then(Value::as_str)
                    .ok_or("`error.kind` must be a string")?
                    .parse::<ErrorKind>()?;
                let message = match err.get("message") {
                    Some(Value::String(s)) => s.clone(),
                    None => String::new(),
                    Some(_) => return Err("`error.message` must be a string".into()),
                };
                return Ok(Response::Error(Failure { kind, message }));
            }
            _ => return Err("`ok` must be true or false".into()),
        }
        let task = |v: Option<&Value>| -> Result<Task, String> {
            let v = v.ok_or("missing `task`")?;
            Task::from_json(v, Strictness::Lenient).map_err(|e| format!("task: {e}"))
        };
        match op {
            Op::Hello => Hello::from_json(v).map(Response::Hello),
            Op::Create | Op::Get | Op::Update | Op::Claim => {
                task(obj.get("task")).map(Response::Task)
            }
            Op::Delete => Ok(Response::Done),
            Op::List => {
                let tasks = match obj.get("tasks") {
                    Some(Value::Array(items)) => items
                        .iter()
                        .enumerate()
                        .map(|(i, t)| {
                            Task::from_json(t, Strictness::Lenient)
                                .map_err(|e| format!("tasks[{i}].{e}"))
                        })
                        .collect::<Result<Vec<_>, _>>()?,
                    _ => return Err("`tasks` must be an array".into()),
                };
                let corrupt = match obj.get("corrupt") {
                    None => Vec::new(),
                    Some(Value::Array(items)) => items
                        .iter()
                        .map(|c| {
                            c.as_str()
                                .map(str::to_string)
                                .ok_or_else(|| "`corrupt` must hold strings".to_string())
                        })
                        .collect::<Result<_, _>>()?,
                    Some(_) => return Err("`corrupt` must be an array".into()),
                };
                Ok(Response::Tasks { tasks, corrupt })
            }
        }
    }
}

/// The JSON of [`Response::to_json`], written without building it: a `list` answer's tasks
/// go out through [`Task`]'s own `Serialize`.
impl serde::Serialize for Response {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        if let Response::Hello(h) = self {
            return serde::Serialize::serialize(&h.to_json(), s);
        }
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("ok", &self.is_ok())?;
        match self {
            Response::Hello(_) | Response::Done => {}
            Response::Task(t) => m.serialize_entry("task", t)?,
            Response::Tasks { tasks, corrupt } => {
                m.serialize_entry("tasks", tasks)?;
                m.serialize_entry("corrupt", corrupt)?;
            }
            Response::Error(f) => m.serialize_entry("error", &FailureJson(f))?,
        }
        m.end()
    }
}

pub(super) struct FailureJson<'a>(&'a Failure);

impl serde::Serialize for FailureJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("kind", self.0.kind.as_str())?;
        m.serialize_entry("message", &self.0.message)?;
        m.end()
    }
}

impl From<Result<Task, Failure>> for Response {
    fn from(r: Result<Task, Failure>) -> Response {
        match r {
            Ok(t) => Response::Task(t),
            Err(f) => Response::Error(f),
        }
    }
}

/// An adapter's answer, decoded once: the JSON as the adapter wrote it (what a scenario's
/// expectations judge field for field, and what reports show) beside its decoded
/// [`Response`] (what listings, the race history and the recorder read).
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub json: Value,
    /// `None` only for an acknowledgement (`{"ok": true, ...}`) of a request whose op is not
    /// one of the protocol's.
    pub response: Option<Response>,
}

impl Answer {
    /// Decodes `json` as the answer to `request`, checking that it is a protocol-valid answer
    /// for the request's op (SPEC §2); the error says why not, and is an error of the
    /// target. A request whose op is not one of the protocol's can only be answered with a
    /// failure or a plain success.
    pub fn decode(request: &Value, json: Value) -> Result<Answer, String> {
        let op = request
            .get("op")
            .and_then(Value::as_str)
            .and_then(|s| s.parse::<Op>().ok());
        let decoded = match op {
            Some(op) => Response::from_json(&json, op).map(Some),
            None => match json.get("ok") {
                Some(Value::Bool(true)) => Ok(None),
                _ => Response::from_json(&json, Op::Delete).map(Some),
            },
        };
        match decoded {
            Ok(response) => Ok(Answer { json, response }),
            Err(reason) => {
                let op = op.map_or("malformed", Op::as_str);
                Err(format!(
                    "the adapter answered a {op} request with a malformed response: {reason}: {json}"
                ))
            }
        }
    }

    /// Whether the target acknowledged the request (`"ok": true`).
    pub fn is_ok(&self) -> bool {
        self.json.get("ok") == Some(&Value::Bool(true))
    }
}
