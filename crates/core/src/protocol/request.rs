//! A request of the protocol, read from and written to its JSON line.

use serde_json::{Map, Value};

use crate::task::{FieldError, ListName, NewTask, Patch, Strictness, TaskId, type_name};

use super::*;

/// A decoded request.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    Hello,
    Create {
        list: ListName,
        task: NewTask,
    },
    Get {
        list: ListName,
        id: TaskId,
    },
    Update {
        list: ListName,
        id: TaskId,
        patch: Patch,
    },
    Delete {
        list: ListName,
        id: TaskId,
    },
    List {
        list: ListName,
    },
    Claim {
        list: ListName,
        id: TaskId,
        owner: String,
    },
}

impl Request {
    pub fn op(&self) -> Op {
        match self {
            Request::Hello => Op::Hello,
            Request::Create { .. } => Op::Create,
            Request::Get { .. } => Op::Get,
            Request::Update { .. } => Op::Update,
            Request::Delete { .. } => Op::Delete,
            Request::List { .. } => Op::List,
            Request::Claim { .. } => Op::Claim,
        }
    }

    pub fn list(&self) -> Option<&ListName> {
        match self {
            Request::Hello => None,
            Request::Create { list, .. }
            | Request::Get { list, .. }
            | Request::Update { list, .. }
            | Request::Delete { list, .. }
            | Request::List { list }
            | Request::Claim { list, .. } => Some(list),
        }
    }

    /// Decodes one request line.
    pub fn parse_line(line: &str) -> Result<Request, FieldError> {
        let v: Value = serde_json::from_str(line)
            .map_err(|e| FieldError::new("request", format!("not valid JSON: {e}")))?;
        Request::from_json(&v)
    }

    /// Decodes a request object. The form is checked completely here (list name, id, field
    /// names and types), which is the first step of SPEC §3's order of checks.
    pub fn from_json(v: &Value) -> Result<Request, FieldError> {
        let obj = v.as_object().ok_or_else(|| {
            FieldError::new(
                "request",
                format!("expected an object, got {}", type_name(v)),
            )
        })?;
        let op: Op = match obj.get("op") {
            Some(Value::String(s)) => s.parse().map_err(|m| FieldError::new("op", m))?,
            Some(other) => {
                return Err(FieldError::new(
                    "op",
                    format!("expected a string, got {}", type_name(other)),
                ));
            }
            None => return Err(FieldError::new("op", "missing")),
        };
        let allowed: &[&str] = match op {
            Op::Hello => &["op"],
            Op::Create => &["op", "list", "task"],
            Op::Get | Op::Delete => &["op", "list", "id"],
            Op::Update => &["op", "list", "id", "patch"],
            Op::List => &["op", "list"],
            Op::Claim => &["op", "list", "id", "owner"],
        };
        for k in obj.keys() {
            if !allowed.contains(&k.as_str()) {
                return Err(FieldError::new(
                    k.clone(),
                    format!("unknown field for {op}; expected {}", allowed.join(", ")),
                ));
            }
        }
        let need = |k: &str| obj.get(k).ok_or_else(|| FieldError::new(k, "missing"));
        let list = || ListName::from_json(need("list")?, "list");
        let id = || TaskId::from_json(need("id")?, "id");
        Ok(match op {
            Op::Hello => Request::Hello,
            Op::Create => Request::Create {
                list: list()?,
                task: NewTask::from_json(need("task")?, Strictness::Strict)?,
            },
            Op::Get => Request::Get {
                list: list()?,
                id: id()?,
            },
            Op::Update => Request::Update {
                list: list()?,
                id: id()?,
                patch: Patch::from_json(need("patch")?, Strictness::Strict)?,
            },
            Op::Delete => Request::Delete {
                list: list()?,
                id: id()?,
            },
            Op::List => Request::List { list: list()? },
            Op::Claim => {
                let owner = match need("owner")? {
                    Value::String(s) if !s.is_empty() => s.clone(),
                    Value::String(_) => {
                        return Err(FieldError::new("owner", "must not be empty"));
                    }
                    other => {
                        return Err(FieldError::new(
                            "owner",
                            format!("expected a string, got {}", type_name(other)),
                        ));
                    }
                };
                Request::Claim {
                    list: list()?,
                    id: id()?,
                    owner,
                }
            }
        })
    }

    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("op".into(), Value::String(self.op().as_str().into()));
        if let Some(list) = self.list() {
            m.insert("list".into(), Value::String(list.as_str().into()));
        }
        match self {
            Request::Hello | Request::List { .. } => {}
            Request::Create { task, .. } => {
                m.insert("task".into(), task.to_json());
            }
            Request::Get { id, .. } | Request::Delete { id, .. } => {
                m.insert("id".into(), Value::String(id.to_string()));
            }
            Request::Update { id, patch, .. } => {
                m.insert("id".into(), Value::String(id.to_string()));
                m.insert("patch".into(), patch.to_json());
            }
            Request::Claim { id, owner, .. } => {
                m.insert("id".into(), Value::String(id.to_string()));
                m.insert("owner".into(), Value::String(owner.clone()));
            }
        }
        Value::Object(m)
    }
}
