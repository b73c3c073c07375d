//! `taskproof check --stdin`: judging one change as a Claude Code hook.
//!
//! Claude Code runs a command hook with a JSON object on stdin: `session_id`, `cwd`,
//! `hook_event_name` and the event's own fields; for `PreToolUse`/`PostToolUse` these are
//! `tool_name`, `tool_input` and (after the tool) `tool_response`; for `TaskCompleted` and
//! `TaskCreated`, `task_id`, `task_subject` and `task_description`. Exit 0 lets the action
//! go on; exit 2 blocks it and hands stderr to the model. docs/check.md says which of this is
//! verified and which is assumed.
//!
//! Accepted input, in order: a JSON array of tasks; an object with a `tasks` array; a hook
//! event. From an event the hook takes the change it describes (a `TaskUpdate` call's
//! `taskId`, `status`, `addBlockedBy`, `addBlocks`; a `TaskCompleted` event's `task_id`,
//! completed) and any task objects it carries (`task`/`tasks` in `tool_input` or
//! `tool_response`), lays them over the task list on disk when it can find it, and judges
//! the result. Only findings about the changed tasks block, and only the kinds that make a
//! list unsafe to work from ([`FindingKind::blocks_hook`]): an agent must not be stopped
//! for what was wrong before it came.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::audit::{self, Locking};
use super::discover::ListLocation;
use super::finding::{Finding, FindingKind};
use crate::protocol::Layout;
use crate::task::{ListName, Status, Task, TaskId};

/// Why hook input could not be judged at all.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    #[error("read the hook input from stdin: {0}")]
    Read(#[source] std::io::Error),
    #[error("parse the hook input: not valid JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("parse the hook input: expected an array of tasks or an object, got {0}")]
    Shape(&'static str),
    #[error("read the task list {path}: {message}")]
    List { path: PathBuf, message: String },
}

/// Where the hook looks for the list a change belongs to.
#[derive(Debug, Clone, Default)]
pub struct HookContext {
    /// A list folder named on the command line; it wins over everything else.
    pub list_dir: Option<PathBuf>,
    /// The folder of lists (`$CLAUDE_CONFIG_DIR/tasks`, else `~/.claude/tasks`).
    pub root: Option<PathBuf>,
    /// `CLAUDE_CODE_TASK_LIST_ID`, when set.
    pub list_id: Option<String>,
    /// The layout of the list on disk; detected when not given.
    pub layout: Option<Layout>,
}

/// What the hook decided.
#[derive(Debug, Clone)]
pub struct Verdict {
    /// The list judged (`stdin` when none was found on disk).
    pub list: String,
    /// The findings that block the action; empty lets it through.
    pub blocking: Vec<Finding>,
}

/// The change an event describes.
#[derive(Debug, Default)]
struct Change {
    task: Option<TaskId>,
    status: Option<Status>,
    add_blocked_by: BTreeSet<TaskId>,
    add_blocks: BTreeSet<TaskId>,
}

/// Judges hook input.
pub fn judge(input: &[u8], ctx: &HookContext) -> Result<Verdict, HookError> {
    let value: Value = serde_json::from_slice(input)?;
    let mut early = Vec::new();
    let mut carried: Vec<Task> = Vec::new();
    let mut decode = |v: &Value, where_: &str| decode_task(v, where_, &mut early, &mut carried);

    // Bare tasks: judge them as the whole list, every finding counts.
    let bare = match &value {
        Value::Array(items) => Some(items),
        Value::Object(o) if !o.contains_key("hook_event_name") => match o.get("tasks") {
            Some(Value::Array(items)) => Some(items),
            _ => None,
        },
        Value::Object(_) => None,
        Value::Null => return Err(HookError::Shape("null")),
        Value::Bool(_) => return Err(HookError::Shape("a boolean")),
        Value::Number(_) => return Err(HookError::Shape("a number")),
        Value::String(_) => return Err(HookError::Shape("a string")),
    };
    if let Some(items) = bare {
        for (i, item) in items.iter().enumerate() {
            decode(item, &format!("tasks[{i}]"));
        }
        let present: BTreeSet<TaskId> = carried.iter().map(|t| t.id).collect();
        let bound = present.iter().next_back().map_or(0, |i| i.get());
        let mut all = early;
        all.extend(audit::judge_tasks(
            "stdin",
            Layout::ClaudeCode,
            &carried,
            &present,
            bound,
        ));
        all.retain(|f| f.kind.blocks_hook());
        return Ok(Verdict {
            list: "stdin".into(),
            blocking: all,
        });
    }

    // A hook event.
    let event = value.get("hook_event_name").and_then(Value::as_str);
    let tool = value.get("tool_name").and_then(Value::as_str);
    let mut change = Change::default();
    let mut mentioned: BTreeSet<TaskId> = BTreeSet::new();
    for key in ["tool_input", "tool_response"] {
        let Some(part) = value.get(key) else { continue };
        // Only whole task objects are judged as tasks; a summary such as TaskCreate's
        // `{"task": {"id", "subject"}}` only says which task the event is about.
        let whole = |t: &Value| t.get("status").is_some();
        if let Some(t) = part.get("task").filter(|t| t.get("id").is_some()) {
            if whole(t) {
                decode(t, &format!("{key}.task"));
            } else {
                mentioned.extend(t.get("id").and_then(super::wire::id_of));
            }
        }
        if let Some(Value::Array(items)) = part.get("tasks") {
            for (i, item) in items.iter().enumerate().filter(|(_, t)| whole(t)) {
                decode(item, &format!("{key}.tasks[{i}]"));
            }
        }
    }
    if tool == Some("TaskUpdate")
        && let Some(input) = value.get("tool_input")
    {
        change.task = input.get("taskId").and_then(super::wire::id_of);
        change.status = input
            .get("status")
            .and_then(Value::as_str)
            .map(Status::parse);
        change.add_blocked_by = ids(input.get("addBlockedBy"));
        change.add_blocks = ids(input.get("addBlocks"));
        if let (Some(id), Some(Status::Other(s))) = (change.task, &change.status)
            && s != "deleted"
        {
            let file = Layout::ClaudeCode.file_name(id).expect("file layout");
            early.push(
                Finding::new(
                    "stdin",
                    file,
                    FindingKind::UnknownStatus,
                    format!("status {s:?} is not one of pending, in_progress, completed"),
                )
                .involving([id]),
            );
        }
    }
    if event == Some("TaskCompleted") {
        change.task = value.get("task_id").and_then(super::wire::id_of);
        change.status = Some(Status::Completed);
    } else if event == Some("TaskCreated") {
        change.task = value.get("task_id").and_then(super::wire::id_of);
    }

    // The focus: the changed task and every task the event carries.
    let mut focus: BTreeSet<TaskId> = carried.iter().map(|t| t.id).collect();
    focus.extend(change.task);
    focus.extend(mentioned);
    if focus.is_empty() {
        // Nothing about tasks in this event: not ours to judge.
        return Ok(Verdict {
            list: "stdin".into(),
            blocking: early,
        });
    }

    // The list on disk, when it can be found, with the event laid over it.
    let (list, layout, mut tasks, mut present, bound) = match locate(&value, ctx) {
        Some(location) => {
            let dir = location.open().map_err(|e| HookError::List {
                path: location.path.clone(),
                message: e.to_string(),
            })?;
            let layout = match ctx.layout {
                Some(l) => l,
                None => location.detect_layout(&dir).map_err(|e| HookError::List {
                    path: location.path.clone(),
                    message: e.to_string(),
                })?,
            };
            let a =
                audit::audit_dir(&dir, &location.name, layout, Locking::Probe).map_err(|e| {
                    HookError::List {
                        path: location.path.clone(),
                        message: e.to_string(),
                    }
                })?;
            let tasks: BTreeMap<TaskId, Task> =
                a.tasks.into_iter().map(|t| (t.task.id, t.task)).collect();
            (a.name, layout, tasks, a.present, a.bound)
        }
        None => (
            "stdin".to_string(),
            Layout::ClaudeCode,
            BTreeMap::new(),
            BTreeSet::new(),
            0,
        ),
    };
    for t in carried {
        present.insert(t.id);
        tasks.insert(t.id, t);
    }
    let mut added = BTreeSet::new();
    if let Some(id) = change.task
        && change
            .status
            .as_ref()
            .is_some_and(|s| s.as_str() == "deleted")
    {
        // Claude Code's TaskUpdate deletes a task with status "deleted": judge the list
        // without it. What it leaves behind are orphans, which do not block.
        tasks.remove(&id);
    } else if let Some(id) = change.task {
        present.insert(id);
        let t = tasks
            .entry(id)
            .or_insert_with(|| Task::new(id, format!("task {id}")));
        if let Some(s) = change.status {
            t.status = s;
        }
        t.blocked_by.extend(change.add_blocked_by.iter().copied());
        t.blocks.extend(change.add_blocks.iter().copied());
        added.extend(change.add_blocked_by.iter().copied());
        added.extend(change.add_blocks.iter().copied());
    }
    let bound = bound.max(present.iter().next_back().map_or(0, |i| i.get()));
    let tasks: Vec<Task> = tasks.into_values().collect();
    let mut blocking: Vec<Finding> = early.into_iter().filter(|f| f.kind.blocks_hook()).collect();
    for f in audit::judge_tasks(&list, layout, &tasks, &present, bound) {
        let about_focus = match f.kind {
            FindingKind::Cycle => f.tasks.iter().any(|t| focus.contains(t)),
            // A reference to nothing blocks when this change added it, or the event carries
            // the task that holds it.
            FindingKind::Dangling => {
                f.tasks.first().is_some_and(|t| focus.contains(t))
                    && (change.task.is_none()
                        || f.tasks.get(1).is_some_and(|m| added.contains(m))
                        || f.tasks.first() != change.task.as_ref())
            }
            _ => f.tasks.first().is_some_and(|t| focus.contains(t)),
        };
        if about_focus && f.kind.blocks_hook() {
            blocking.push(f);
        }
    }
    for f in &mut blocking {
        f.list.clone_from(&list);
    }
    Ok(Verdict { list, blocking })
}

/// Judges one task object the event carries: problems go to `early`, the task (when it can
/// be read at all) to `carried`. It is named by its file name when it has an id.
fn decode_task(v: &Value, where_: &str, early: &mut Vec<Finding>, carried: &mut Vec<Task>) {
    let id = v.get("id").and_then(super::wire::id_of);
    let file = id
        .map(|i| Layout::ClaudeCode.file_name(i).expect("file layout"))
        .unwrap_or_else(|| where_.to_string());
    if let Some(t) = audit::judge_task_value(v, Layout::ClaudeCode, |kind, message| {
        early.push(Finding::new("stdin", file.clone(), kind, message).involving(id));
    }) {
        carried.push(t);
    }
}

/// An array of ids, in either form; anything else reads as none.
fn ids(v: Option<&Value>) -> BTreeSet<TaskId> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(super::wire::id_of).collect())
        .unwrap_or_default()
}

/// The list folder a hook event belongs to: the folder named on the command line; else
/// `CLAUDE_CODE_TASK_LIST_ID`, the event's `task_list_id`, `team_name` or `session_id`,
/// whichever first names a folder that exists under the root. Names that are not valid list
/// names are never joined to a path.
fn locate(event: &Value, ctx: &HookContext) -> Option<ListLocation> {
    if let Some(dir) = &ctx.list_dir {
        return Some(ListLocation::direct(dir));
    }
    let root: &Path = ctx.root.as_deref()?;
    let from_event = ["task_list_id", "team_name", "session_id"]
        .into_iter()
        .filter_map(|k| event.get(k).and_then(Value::as_str).map(str::to_string));
    ctx.list_id
        .clone()
        .into_iter()
        .chain(from_event)
        .filter(|n| n.parse::<ListName>().is_ok())
        .find(|n| root.join(n).is_dir())
        .map(|n| ListLocation::in_root(root, &n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kinds(input: Value) -> Vec<FindingKind> {
        let v = judge(input.to_string().as_bytes(), &HookContext::default()).unwrap();
        v.blocking.iter().map(|f| f.kind).collect()
    }

    #[test]
    fn a_bare_array_is_judged_as_the_whole_list() {
        let cyc = json!([
            {"id": "1", "subject": "a", "status": "pending", "blockedBy": ["2"]},
            {"id": "2", "subject": "b", "status": "pending", "blockedBy": ["1"]}
        ]);
        assert_eq!(kinds(cyc), vec![FindingKind::Cycle]);
        // A one-sided edge alone does not block: Claude Code leaves those itself.
        let half = json!({"tasks": [
            {"id": "1", "subject": "a", "status": "pending", "blocks": ["2"]},
            {"id": "2", "subject": "b", "status": "pending"}
        ]});
        assert!(kinds(half).is_empty());
    }

    #[test]
    fn a_self_edge_in_a_task_update_is_refused_without_any_list() {
        let ev = json!({"hook_event_name": "PreToolUse", "tool_name": "TaskUpdate",
                        "tool_input": {"taskId": "4", "addBlockedBy": ["4"]}});
        assert_eq!(kinds(ev), vec![FindingKind::Cycle]);
    }

    #[test]
    fn a_task_summary_is_not_judged_as_a_whole_task() {
        // TaskCreate answers with the new task's id and subject only.
        let ev = json!({"hook_event_name": "PostToolUse", "tool_name": "TaskCreate",
                        "tool_input": {"subject": "s", "description": "d"},
                        "tool_response": {"task": {"id": "3", "subject": "s"}}});
        assert!(kinds(ev).is_empty());
        // A whole task in a response is judged.
        let ev = json!({"hook_event_name": "PostToolUse", "tool_name": "TaskGet",
                        "tool_response": {"task": {"id": "3", "subject": "s",
                                          "status": "pending", "blockedBy": ["3"]}}});
        assert_eq!(kinds(ev), vec![FindingKind::Cycle]);
    }

    #[test]
    fn deleting_a_task_through_task_update_is_not_judged_as_an_unknown_status() {
        let ev = json!({"hook_event_name": "PreToolUse", "tool_name": "TaskUpdate",
                        "tool_input": {"taskId": "2", "status": "deleted"}});
        assert!(kinds(ev).is_empty());
    }

    #[test]
    fn a_task_update_to_an_unknown_status_is_refused() {
        let ev = json!({"hook_event_name": "PreToolUse", "tool_name": "TaskUpdate",
                        "tool_input": {"taskId": "2", "status": "done"}});
        assert_eq!(kinds(ev), vec![FindingKind::UnknownStatus]);
    }

    #[test]
    fn events_without_tasks_pass() {
        let ev = json!({"hook_event_name": "PostToolUse", "tool_name": "Bash",
                        "tool_input": {"command": "ls"}});
        assert!(kinds(ev).is_empty());
    }

    #[test]
    fn input_that_is_not_json_or_not_tasks_is_an_error() {
        let ctx = HookContext::default();
        assert!(matches!(judge(b"{", &ctx), Err(HookError::Json(_))));
        assert!(matches!(judge(b"3", &ctx), Err(HookError::Shape(_))));
    }
}
