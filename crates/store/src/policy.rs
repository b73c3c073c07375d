//! Opt-in permissions per list: `{list}/.policy.json` says who may complete, reassign or
//! delete a task. Without the file (the default) anyone may. See `docs/audit.md`.
//!
//! ```json
//! {"complete": "owner", "reassign": "owner", "delete": ["lead", "alice"]}
//! ```
//!
//! Each rule is `"anyone"`, `"owner"` (the task's current owner; a task without an owner is
//! anyone's) or a list of actor names. The actor is the request's (see `audit.rs`).

use serde_json::Value;

use crate::fsys::{Dir, ReadError};
use taskproof_core::protocol::{ErrorKind, Failure};
use taskproof_core::task::{Change, Patch, Status, Task};

/// The policy file's name in a list folder.
pub const POLICY_NAME: &str = ".policy.json";

/// Who may do one thing.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Who {
    Anyone,
    Owner,
    Named(Vec<String>),
}

impl Who {
    fn allows(&self, actor: &str, task: &Task) -> bool {
        match self {
            Who::Anyone => true,
            Who::Owner => task.owner.as_deref().is_none_or(|o| o == actor),
            Who::Named(names) => names.iter().any(|n| n == actor),
        }
    }

    fn describe(&self, task: &Task) -> String {
        match self {
            Who::Anyone => "anyone".into(),
            Who::Owner => format!(
                "only its owner ({})",
                task.owner.as_deref().unwrap_or("none")
            ),
            Who::Named(names) => format!("only {}", names.join(", ")),
        }
    }
}

fn invalid(why: String) -> Failure {
    Failure::new(
        ErrorKind::Io,
        format!("{POLICY_NAME}: {why}; fix or remove the file"),
    )
}

/// Reads the rule `key` of the list's policy; `Anyone` when there is no policy file.
fn rule(dir: &Dir, key: &str) -> Result<Who, Failure> {
    let bytes = match dir.read(POLICY_NAME) {
        Ok(b) => b,
        Err(ReadError::Missing) => return Ok(Who::Anyone),
        Err(e) => return Err(invalid(format!("cannot be read: {e}"))),
    };
    let v: Value =
        serde_json::from_slice(&bytes).map_err(|e| invalid(format!("not valid JSON: {e}")))?;
    let obj = v
        .as_object()
        .ok_or_else(|| invalid("not a JSON object".into()))?;
    for k in obj.keys() {
        if !["complete", "reassign", "delete"].contains(&k.as_str()) {
            return Err(invalid(format!(
                "unknown rule {k:?}; the rules are complete, reassign, delete"
            )));
        }
    }
    match obj.get(key) {
        None => Ok(Who::Anyone),
        Some(Value::String(s)) if s == "anyone" => Ok(Who::Anyone),
        Some(Value::String(s)) if s == "owner" => Ok(Who::Owner),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| i.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .map(Who::Named)
            .ok_or_else(|| invalid(format!("{key}: the list must hold actor names"))),
        Some(other) => Err(invalid(format!(
            "{key}: expected \"anyone\", \"owner\" or a list of actor names, got {other}"
        ))),
    }
}

fn refuse(what: &str, task: &Task, who: &Who, actor: &str) -> Failure {
    Failure::new(
        ErrorKind::Conflict,
        format!(
            "the list's policy ({POLICY_NAME}) lets {} {what} task {}; you are {actor:?}",
            who.describe(task),
            task.id
        ),
    )
}

/// Checks an update of `task` (as stored) by `actor`.
///
/// `actor` is asked only when a rule applies.
pub fn check_update(
    dir: &Dir,
    task: &Task,
    patch: &Patch,
    actor: fn() -> String,
) -> Result<(), Failure> {
    if patch.status == Some(Status::Completed) && task.status != Status::Completed {
        let who = rule(dir, "complete")?;
        let actor = actor();
        if !who.allows(&actor, task) {
            return Err(refuse("complete", task, &who, &actor));
        }
    }
    let new_owner = match &patch.owner {
        Change::Keep => None,
        Change::Set(o) => Some(Some(o.as_str())),
        Change::Remove => Some(None),
    };
    if let Some(new) = new_owner
        && task.owner.is_some()
        && new != task.owner.as_deref()
    {
        let who = rule(dir, "reassign")?;
        let actor = actor();
        if !who.allows(&actor, task) {
            return Err(refuse("reassign", task, &who, &actor));
        }
    }
    Ok(())
}

/// Checks a delete of `task` by `actor`.
pub fn check_delete(dir: &Dir, task: &Task, actor: fn() -> String) -> Result<(), Failure> {
    let who = rule(dir, "delete")?;
    if who == Who::Anyone {
        return Ok(());
    }
    let actor = actor();
    if who.allows(&actor, task) {
        Ok(())
    } else {
        Err(refuse("delete", task, &who, &actor))
    }
}
