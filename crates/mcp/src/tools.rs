//! The tools `taskproof mcp` offers: their input schemas (derived from the types below, whose
//! doc comments are what a model reads), the mapping of a call's arguments onto the adapter
//! protocol's requests, and the wording of answers and errors.
//!
//! Arguments are taken as raw JSON and checked here, not by serde, so that every mistake comes
//! back as a tool error naming the argument (which a model reads and can fix), never as a
//! protocol error.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use taskproof_core::protocol::{ErrorKind, Failure, Request, Response};
use taskproof_core::task::{FieldError, ListName, NEW_FIELDS, PATCH_FIELDS, Task};

/// The tool names, in the order they are listed.
pub const TOOL_NAMES: [&str; 6] = [
    "task_create",
    "task_get",
    "task_update",
    "task_list",
    "task_delete",
    "task_claim",
];

/// Arguments every tool takes.
#[derive(Debug, Deserialize, JsonSchema)]
#[allow(dead_code)] // The types exist for their schemas; arguments are read as raw JSON.
pub struct Common {
    /// The task list to work on: 1 to 64 characters of letters, digits, `_` and `-`. Leave it
    /// out to use the server's list (its --list flag or CLAUDE_CODE_TASK_LIST_ID).
    pub list: Option<String>,
    /// Who is making this change, as the audit log records it (for example your agent or
    /// session name). Leave it out to use TASKPROOF_ACTOR or the MCP client's name.
    pub actor: Option<String>,
}

/// Input of `task_create`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct CreateArgs {
    /// A short imperative title, e.g. "Run the migrations". Required, 1 to 200 characters.
    pub subject: String,
    /// What needs to be done and how to tell it is done.
    pub description: Option<String>,
    /// The title in present continuous form, shown while the task is in progress, e.g.
    /// "Running the migrations".
    pub active_form: Option<String>,
    /// Who owns the task from the start. Usually left out: take work with task_claim.
    pub owner: Option<String>,
    /// Free-form JSON object kept with the task.
    pub metadata: Option<Map<String, Value>>,
    /// Ids of existing tasks that must be completed before this one can start.
    pub blocked_by: Option<Vec<String>>,
    /// Ids of existing tasks that cannot start until this one is completed.
    pub blocks: Option<Vec<String>>,
    #[serde(flatten)]
    pub common: Common,
}

/// Input of `task_get` and `task_delete`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct IdArgs {
    /// The task's id, as task_list or task_create gave it (e.g. "3").
    pub task_id: String,
    #[serde(flatten)]
    pub common: Common,
}

/// Input of `task_update`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct UpdateArgs {
    /// The task's id, as task_list or task_create gave it (e.g. "3").
    pub task_id: String,
    /// A new title.
    pub subject: Option<String>,
    /// A new description.
    pub description: Option<String>,
    /// A new present-continuous title; "" or null removes it.
    pub active_form: Option<Option<String>>,
    /// "pending", "in_progress" or "completed" ("completed" is final), or "deleted" to
    /// delete the task. A task can start or complete only when every task blocking it is
    /// completed.
    pub status: Option<String>,
    /// A new owner; "" or null releases the task.
    pub owner: Option<Option<String>>,
    /// Keys to merge into the task's metadata; a key set to null is removed; null removes
    /// all metadata.
    pub metadata: Option<Option<Map<String, Value>>>,
    /// Ids of tasks that must be completed before this one can start (edges to add).
    pub add_blocked_by: Option<Vec<String>>,
    /// Ids of tasks that cannot start until this one is completed (edges to add).
    pub add_blocks: Option<Vec<String>>,
    /// Ids to remove from this task's blockedBy (and this task from their blocks).
    pub remove_blocked_by: Option<Vec<String>>,
    /// Ids to remove from this task's blocks (and this task from their blockedBy).
    pub remove_blocks: Option<Vec<String>>,
    #[serde(flatten)]
    pub common: Common,
}

/// Input of `task_list`.
#[derive(Debug, Deserialize, JsonSchema)]
#[allow(dead_code)]
pub struct ListArgs {
    #[serde(flatten)]
    pub common: Common,
}

/// Input of `task_claim`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct ClaimArgs {
    /// The task's id (e.g. "3"). It must be pending, have no owner, and every task blocking
    /// it must be completed.
    pub task_id: String,
    /// The new owner: your agent or session name. Defaults to `actor`.
    pub owner: Option<String>,
    #[serde(flatten)]
    pub common: Common,
}

pub const CREATE_DESCRIPTION: &str = "Create a task in the shared task list and get its id. \
Use it to plan multi-step work others (or you, later) will pick up. The new task is pending \
and has the next unused id; give blockedBy/blocks to order it against existing tasks (ids \
must exist, and an edge that would make tasks wait on each other in a circle is refused).";

pub const GET_DESCRIPTION: &str = "Get one task with every field: subject, description, status, owner, blocks, blockedBy, \
metadata. Use it before working on a task to read its full description.";

pub const UPDATE_DESCRIPTION: &str = "Change a task: its fields, its status, its owner, its \
metadata, and its dependency edges (add or remove). Only the arguments you give change. \
Checked all at once under the list's lock: a task can become in_progress or completed only \
when every task blocking it is completed; completed is final; edges must name existing tasks \
and must not form a cycle. If any check fails nothing changes. status \"deleted\" deletes the \
task.";

pub const LIST_DESCRIPTION: &str = "List every task of the list in id order with status, \
owner and edges. A task is ready to start when it is pending, has no owner, and every id in \
its blockedBy is completed; take one with task_claim.";

pub const DELETE_DESCRIPTION: &str = "Delete a task for good. Every other task's reference to \
it (blocks/blockedBy) is removed in the same step. Ids are never reused.";

pub const CLAIM_DESCRIPTION: &str = "Take a task to work on it: atomically checks that it is \
pending, unowned and unblocked, then sets owner and status in_progress. Exactly one of several \
agents claiming the same task succeeds; the others get a conflict and should claim another.";

/// What a tool call turns into.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub request: Request,
    /// Who makes the call: the `actor` argument, else the server's default.
    pub actor: String,
}

/// A mistake in a call's arguments, before the store sees it.
fn bad(field: impl Into<String>, message: impl Into<String>) -> Failure {
    Failure::new(
        ErrorKind::Invalid,
        format!("argument `{}`: {}", field.into(), message.into()),
    )
}

/// Maps the protocol's field names back onto the tool's argument names.
fn argument_error(e: FieldError) -> Failure {
    let field = e.field.as_str();
    let field = field
        .strip_prefix("patch.")
        .or_else(|| field.strip_prefix("task."))
        .unwrap_or(field);
    let field = match field {
        "id" => "taskId",
        "patch" | "task" | "request" => "arguments",
        f => f,
    };
    bad(field, e.message)
}

/// Ids given as numbers (a common slip) are taken as their decimal strings.
fn ids_as_strings(v: &Value) -> Value {
    match v {
        Value::Number(n) if n.is_u64() => Value::String(n.to_string()),
        Value::Array(items) => Value::Array(items.iter().map(ids_as_strings).collect()),
        other => other.clone(),
    }
}

/// Decodes a tool call's arguments into a protocol request. `default_list` is the server's
/// list, used when the call names none; `default_actor` the actor, likewise.
pub fn decode(
    tool: &str,
    args: &Map<String, Value>,
    default_list: Option<&ListName>,
    default_actor: &str,
) -> Result<Call, Failure> {
    // A tool's own arguments, then the request fields it passes on as they are.
    let (own, fields): (&[&str], &[&str]) = match tool {
        "task_create" => (&[], &NEW_FIELDS),
        "task_get" | "task_delete" => (&["taskId"], &[]),
        "task_update" => (&["taskId"], &PATCH_FIELDS),
        "task_list" => (&[], &[]),
        "task_claim" => (&["taskId", "owner"], &[]),
        other => {
            return Err(Failure::new(
                ErrorKind::Invalid,
                format!(
                    "there is no tool {other:?}; the tools are {}",
                    TOOL_NAMES.join(", ")
                ),
            ));
        }
    };
    for k in args.keys() {
        let k = k.as_str();
        if !own.contains(&k) && !fields.contains(&k) && k != "list" && k != "actor" {
            let mut all: Vec<&str> = [own, fields].concat();
            all.extend(["list", "actor"]);
            return Err(bad(
                k,
                format!("{tool} has no such argument; it takes {}", all.join(", ")),
            ));
        }
    }
    let list = match args.get("list") {
        None | Some(Value::Null) => default_list.cloned().ok_or_else(|| {
            bad(
                "list",
                "no list is chosen: name one with the `list` argument (the server was started \
                 without --list and without CLAUDE_CODE_TASK_LIST_ID)",
            )
        })?,
        Some(v) => ListName::from_json(v, "list").map_err(argument_error)?,
    };
    let actor = match args.get("actor") {
        None | Some(Value::Null) => default_actor.to_string(),
        Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
        Some(Value::String(_)) => return Err(bad("actor", "must not be empty")),
        Some(other) => {
            return Err(bad(
                "actor",
                format!(
                    "expected a string, got {}",
                    taskproof_core::task::type_name(other)
                ),
            ));
        }
    };
    let id = || -> Result<Value, Failure> {
        args.get("taskId")
            .map(ids_as_strings)
            .ok_or_else(|| bad("taskId", "missing: name the task, e.g. \"3\""))
    };
    let mut req = Map::new();
    req.insert("list".into(), Value::String(list.as_str().into()));
    let op = match tool {
        "task_create" => {
            let mut task = Map::new();
            for (k, v) in args {
                if k == "list" || k == "actor" {
                    continue;
                }
                let v = if k == "blockedBy" || k == "blocks" {
                    ids_as_strings(v)
                } else {
                    v.clone()
                };
                task.insert(k.clone(), v);
            }
            req.insert("task".into(), Value::Object(task));
            "create"
        }
        "task_get" => {
            req.insert("id".into(), id()?);
            "get"
        }
        "task_delete" => {
            req.insert("id".into(), id()?);
            "delete"
        }
        "task_list" => "list",
        "task_update" => {
            req.insert("id".into(), id()?);
            let mut patch = Map::new();
            for (k, v) in args {
                if matches!(k.as_str(), "list" | "actor" | "taskId") {
                    continue;
                }
                let v = if k.starts_with("add") || k.starts_with("remove") {
                    ids_as_strings(v)
                } else {
                    v.clone()
                };
                patch.insert(k.clone(), v);
            }
            // Claude Code's TaskUpdate deletes with status "deleted"; so does this tool, as
            // long as nothing else is asked of the same call.
            if patch.get("status") == Some(&json!("deleted")) {
                if patch.len() > 1 {
                    return Err(bad(
                        "status",
                        "\"deleted\" deletes the task, so it cannot be combined with other \
                         changes; call task_update twice or use task_delete",
                    ));
                }
                req.insert("op".into(), json!("delete"));
                return finish(req, actor);
            }
            req.insert("patch".into(), Value::Object(patch));
            "update"
        }
        "task_claim" => {
            req.insert("id".into(), id()?);
            let owner = match args.get("owner") {
                Some(v) if !v.is_null() => v.clone(),
                _ => Value::String(actor.clone()),
            };
            req.insert("owner".into(), owner);
            "claim"
        }
        _ => unreachable!("checked above"),
    };
    req.insert("op".into(), Value::String(op.into()));
    finish(req, actor)
}

fn finish(req: Map<String, Value>, actor: String) -> Result<Call, Failure> {
    let request = Request::from_json(&Value::Object(req)).map_err(argument_error)?;
    Ok(Call { request, actor })
}

/// The rule behind each kind of error and what to do instead, for the model.
pub fn advice(kind: ErrorKind) -> (&'static str, &'static str) {
    match kind {
        ErrorKind::NotFound => (
            "the task does not exist (it may have been deleted)",
            "call task_list to see the ids that exist",
        ),
        ErrorKind::Invalid => (
            "an argument is malformed or out of range",
            "fix the argument named above and call again",
        ),
        ErrorKind::Cycle => (
            "dependency edges must never form a cycle, or the tasks on it could never start",
            "leave this edge out, or first remove an edge of the cycle named above with \
             removeBlocks/removeBlockedBy",
        ),
        ErrorKind::Dangling => (
            "an edge must name a task that exists in the same list",
            "create that task first, or use an id task_list shows",
        ),
        ErrorKind::Blocked => (
            "a task starts or completes only after every task blocking it is completed, and a \
             completed task cannot gain an unfinished blocker",
            "complete the blocking tasks named above first, or remove the edge with \
             removeBlockedBy if it is wrong",
        ),
        ErrorKind::Transition => (
            "completed is final",
            "create a new task for further work instead of reopening this one",
        ),
        ErrorKind::Conflict => (
            "a task can be claimed only while it is pending and has no owner",
            "someone else has it: call task_list and claim another ready task",
        ),
        ErrorKind::Corrupt => (
            "a task file on disk cannot be read",
            "tell the user; `taskproof check` on the task folder shows and repairs it",
        ),
        ErrorKind::Unsupported => (
            "the store does not support this",
            "do without this operation",
        ),
        ErrorKind::Io => (
            "the store could not read or write its files",
            "try again once; if it fails again, tell the user the message above",
        ),
    }
}

/// The text and structured form of a failed call.
pub fn error_value(f: &Failure) -> (String, Value) {
    let (rule, todo) = advice(f.kind);
    let text = format!(
        "Error ({}): {}.\nRule: {rule}.\nWhat to do: {todo}.",
        f.kind, f.message
    );
    let v = json!({"error": {"kind": f.kind.as_str(), "message": f.message, "rule": rule, "hint": todo}});
    (text, v)
}

/// The structured form of a successful answer.
pub fn answer_value(r: &Response) -> Value {
    match r {
        Response::Task(t) => json!({"task": serde_json::to_value(t).expect("tasks serialize")}),
        Response::Tasks { tasks, corrupt } => {
            serde_json::to_value(ListAnswer { tasks, corrupt }).expect("tasks serialize")
        }
        Response::Done => json!({"deleted": true}),
        Response::Hello(h) => h.to_json(),
        Response::Error(f) => error_value(f).1,
    }
}

/// `{"tasks": [...], "corrupt": [...]}`, written from the typed tasks.
struct ListAnswer<'a, T> {
    tasks: &'a [T],
    corrupt: &'a [String],
}

impl<T: std::borrow::Borrow<Task>> serde::Serialize for ListAnswer<'_, T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("tasks", &TaskSeq(self.tasks))?;
        m.serialize_entry("corrupt", self.corrupt)?;
        m.end()
    }
}

struct TaskSeq<'a, T>(&'a [T]);

impl<T: std::borrow::Borrow<Task>> serde::Serialize for TaskSeq<'_, T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|t| t.borrow()))
    }
}

/// A `list` answer as it goes out: its text as a JSON string literal (quotes included) and
/// its structured form as JSON, the same values [`answer_text`] and [`answer_value`] make,
/// written from the tasks as the store's cache shares them. Each task's two forms are made
/// once and kept with it (in parallel, where missing), so a warm list copies bytes: no value
/// tree, no copy of a task (see `splice.rs`).
pub fn list_answer(
    list: &ListName,
    tasks: &[std::sync::Arc<taskproof_store::SharedTask>],
    corrupt: &[String],
) -> (Vec<u8>, Vec<u8>) {
    use rayon::prelude::*;
    tasks.par_iter().with_min_len(64).for_each(|t| {
        t.pretty_in_list_escaped();
        t.json();
    });
    rayon::join(
        || {
            let size: usize = tasks
                .iter()
                .map(|t| t.pretty_in_list_escaped().len() + 12)
                .sum();
            let head = serde_json::to_vec(&list_head(list, tasks.len(), corrupt))
                .expect("strings serialize");
            let mut text = Vec::with_capacity(head.len() + size + 64);
            text.extend_from_slice(&head[..head.len() - 1]);
            text.extend_from_slice(br#"\n{\n  \"tasks\": "#);
            if tasks.is_empty() {
                text.extend_from_slice(b"[]");
            } else {
                text.extend_from_slice(br#"[\n    "#);
                for (i, t) in tasks.iter().enumerate() {
                    if i > 0 {
                        text.extend_from_slice(br#",\n    "#);
                    }
                    text.extend_from_slice(t.pretty_in_list_escaped());
                }
                text.extend_from_slice(br#"\n  ]"#);
            }
            text.extend_from_slice(br#",\n  \"corrupt\": "#);
            let names = serde_json::to_string_pretty(corrupt)
                .expect("names serialize")
                .replace('\n', "\n  ");
            let names = serde_json::to_vec(&names).expect("strings serialize");
            text.extend_from_slice(&names[1..names.len() - 1]);
            text.extend_from_slice(br#"\n}""#);
            text
        },
        || {
            let size: usize = tasks.iter().map(|t| t.json().len() + 1).sum();
            let mut value = Vec::with_capacity(size + 64);
            value.extend_from_slice(br#"{"tasks":["#);
            for (i, t) in tasks.iter().enumerate() {
                if i > 0 {
                    value.push(b',');
                }
                value.extend_from_slice(t.json());
            }
            value.extend_from_slice(br#"],"corrupt":"#);
            serde_json::to_writer(&mut value, corrupt).expect("names serialize");
            value.push(b'}');
            value
        },
    )
}

fn list_head(list: &ListName, tasks: usize, corrupt: &[String]) -> String {
    let mut s = format!("{tasks} task(s) in list {list}.");
    if !corrupt.is_empty() {
        s.push_str(&format!(" Unreadable files: {}.", corrupt.join(", ")));
    }
    s
}

/// The text of a successful answer: short lines a model reads at a glance, then the JSON.
pub fn answer_text(call: &Request, r: &Response) -> String {
    let head = match (call, r) {
        (Request::Create { .. }, Response::Task(t)) => format!("Created task {}.", t.id),
        (Request::Update { .. }, Response::Task(t)) => format!("Updated task {}.", t.id),
        (Request::Claim { .. }, Response::Task(t)) => format!(
            "Claimed task {} for {}; it is in_progress.",
            t.id,
            t.owner.as_deref().unwrap_or("?")
        ),
        (Request::Get { .. }, Response::Task(t)) => format!("Task {}.", t.id),
        (Request::Delete { id, .. }, Response::Done) => format!("Deleted task {id}."),
        (Request::List { list }, Response::Tasks { tasks, corrupt }) => {
            list_head(list, tasks.len(), corrupt)
        }
        _ => String::new(),
    };
    let json = match r {
        Response::Tasks { tasks, corrupt } => {
            serde_json::to_string_pretty(&ListAnswer { tasks, corrupt })
        }
        r => serde_json::to_string_pretty(&answer_value(r)),
    };
    format!("{head}\n{}", json.expect("answers serialize"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn an_empty_list_answer_is_the_json_of_no_tasks() {
        let list: ListName = "team".parse().unwrap();
        let (text, value) = list_answer(&list, &[], &[]);
        let text: String = serde_json::from_slice(&text).unwrap();
        let value: Value = serde_json::from_slice(&value).unwrap();
        let expected = json!({"tasks": [], "corrupt": []});
        assert_eq!(value, expected);
        let pretty = serde_json::to_string_pretty(&expected).unwrap();
        assert_eq!(text, format!("0 task(s) in list team.\n{pretty}"));
    }

    #[test]
    fn list_answers_are_the_json_of_the_tasks() {
        let mut a = Task::new(taskproof_core::task::TaskId(1), "ünï \u{1F600} \"q\"");
        a.metadata = Some(args(json!({"deep": {"x": [1, 2.5, null]}, "z": "\n"})));
        a.extra.insert("unknown".into(), json!({"kept": [1, "x"]}));
        let b = Task::new(taskproof_core::task::TaskId(2), "b");
        let list: ListName = "team".parse().unwrap();
        for corrupt in [vec![], vec!["3.json".to_string()]] {
            let tasks = vec![a.clone(), b.clone()];
            let expected = json!({
                "tasks": tasks.iter().map(Task::to_json).collect::<Vec<_>>(),
                "corrupt": corrupt,
            });
            let head = list_head(&list, 2, &corrupt);
            let expected_text = format!(
                "{head}\n{}",
                serde_json::to_string_pretty(&expected).unwrap()
            );
            let shared: Vec<_> = tasks
                .iter()
                .cloned()
                .map(taskproof_store::SharedTask::new)
                .collect();
            let (text, value) = list_answer(&list, &shared, &corrupt);
            let text: String = serde_json::from_slice(&text).unwrap();
            let value: Value = serde_json::from_slice(&value).unwrap();
            assert_eq!(value, expected);
            assert_eq!(text, expected_text);
            let r = Response::Tasks {
                tasks,
                corrupt: corrupt.clone(),
            };
            assert_eq!(answer_value(&r), expected);
            assert_eq!(
                answer_text(&Request::List { list: list.clone() }, &r),
                expected_text
            );
        }
    }

    #[test]
    fn arguments_map_onto_requests() {
        let l: ListName = "team".parse().unwrap();
        let c = decode(
            "task_update",
            &args(json!({"taskId": 3, "status": "completed", "addBlocks": [4], "actor": "a"})),
            Some(&l),
            "server",
        )
        .unwrap();
        assert_eq!(
            c.request.to_json(),
            json!({"op": "update", "list": "team", "id": "3",
                   "patch": {"status": "completed", "addBlocks": ["4"]}})
        );
        assert_eq!(c.actor, "a");
        let c = decode("task_claim", &args(json!({"taskId": "3"})), Some(&l), "me").unwrap();
        assert_eq!(
            c.request.to_json(),
            json!({"op": "claim", "list": "team", "id": "3", "owner": "me"})
        );
        let c = decode(
            "task_update",
            &args(json!({"taskId": "3", "status": "deleted", "list": "x"})),
            None,
            "server",
        )
        .unwrap();
        assert_eq!(
            c.request.to_json(),
            json!({"op": "delete", "list": "x", "id": "3"})
        );
    }

    #[test]
    fn mistakes_name_the_argument() {
        let l: ListName = "l".parse().unwrap();
        for (tool, a, field) in [
            ("task_get", json!({}), "taskId"),
            ("task_get", json!({"taskId": "03"}), "taskId"),
            ("task_create", json!({"subject": 3}), "subject"),
            ("task_create", json!({"title": "x"}), "title"),
            (
                "task_update",
                json!({"taskId": "1", "addBlocks": "2"}),
                "addBlocks",
            ),
            ("task_list", json!({"list": "../x"}), "list"),
        ] {
            let e = decode(tool, &args(a.clone()), Some(&l), "me").unwrap_err();
            assert_eq!(e.kind, ErrorKind::Invalid);
            assert!(
                e.message.starts_with(&format!("argument `{field}`")),
                "{tool} {a}: {}",
                e.message
            );
        }
        let e = decode("task_list", &args(json!({})), None, "me").unwrap_err();
        assert!(e.message.contains("argument `list`"), "{}", e.message);
    }
}
