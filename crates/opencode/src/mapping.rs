//! From protocol requests to the calls an agent makes of oh-my-opencode's task tools
//! (`task_create`, `task_get`, `task_list`, `task_update`), and from their results back to
//! protocol answers.
//!
//! The plugin names tasks `T-{uuid}`; the wire names them with numbers. The id book of the
//! root (`taskproof_session::ids`, shared by every session and race writer on the root)
//! gives each `T-…` id a wire number the first time an answer names it, and turns wire ids
//! back into the plugin's before a call. A wire id the book does not know goes to the tool as
//! it is, and the tool judges it (`invalid_task_id`): a decimal one is a task the plugin never
//! named, so `not_found`.
//!
//! Requests go to the tools as raw as the tools take them, so that the tools' own checks
//! decide; what no call can express is `unsupported` (removing an edge, removing `activeForm`
//! or the whole `metadata`), after `task_get` has said whether the task is there. The answer's
//! task is always the plugin's own reading of it (`task_get`, or `task_update`'s answer), never
//! its file: the driver does not look at files. Every choice is stated in `hello`
//! ([`stated`]) and in adapters/oh-my-opencode/NOTES.md.

use std::collections::VecDeque;

use serde_json::{Map, Value, json};

use taskproof_core::protocol::ErrorKind;
use taskproof_model::scripted::{Plan, Step, failure as error};
use taskproof_session::ids::Tables;

/// The mapping `hello` states: each request and each field the tools cannot express, and
/// what the session asks the plugin instead.
pub fn stated() -> std::collections::BTreeMap<String, String> {
    [
        (
            "create",
            "task_create (subject, description, activeForm, metadata, blocks, blockedBy); then task_update {owner} when an owner is given (task_create takes none); then task_get",
        ),
        (
            "get",
            "task_get; a task whose status is \"deleted\" is not_found, as task_list hides it",
        ),
        ("update", "task_update with the patch as given"),
        (
            "list",
            "task_list (it shows only tasks neither completed nor deleted), then task_get of each; ordered by wire id; corrupt is always []",
        ),
        (
            "claim",
            "unsupported (the plugin has no claim: an agent sets status and owner with task_update, which nothing makes exclusive)",
        ),
        ("delete", "task_update {id, status: \"deleted\"}"),
        ("ids", "T-{uuid} ids numbered in the order answers first name them (the id book of the root)"),
        ("owner: null", "task_update {owner: \"\"}"),
        ("patch.removeBlockedBy", "unsupported (only task_get runs)"),
        ("patch.removeBlocks", "unsupported (only task_get runs)"),
        ("activeForm: null", "unsupported (only task_get runs)"),
        ("metadata: null", "unsupported (only task_get runs)"),
        ("task_lock_unavailable", "io"),
        ("internal_error", "io"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Create,
    Get,
    Update,
    Delete,
    List,
}

/// A call waiting for its result, with the wire ids it named (to read its answer back).
#[derive(Debug, Clone)]
struct Call {
    name: &'static str,
    input: Value,
}

/// The tool calls of one protocol request, run one at a time. Ids in `queue` are wire ids;
/// they become the plugin's when the call is made ([`Script::next`]).
pub struct Script {
    op: Op,
    list: String,
    /// The wire id the request is about (for `create`, known once `task_create` answered).
    id: Option<String>,
    queue: VecDeque<Call>,
    /// For `create`: the owner, which only `task_update` sets.
    owner: Option<Value>,
    awaiting: Option<&'static str>,
    /// Why the request is `unsupported`, answered once `task_get` found the task.
    refuse: Option<&'static str>,
    /// For `list`: the tasks read so far, and the ids still to read.
    listed: Vec<Value>,
    to_read: VecDeque<String>,
}

/// Decides what to do with a raw request.
pub fn plan(request: &Value) -> Plan<Script> {
    match plan_inner(request) {
        Ok(p) => p,
        Err(answer) => Plan::Answer(answer),
    }
}

fn invalid(m: impl Into<String>) -> Value {
    error(ErrorKind::Invalid, m)
}

fn plan_inner(request: &Value) -> Result<Plan<Script>, Value> {
    let obj = request
        .as_object()
        .ok_or_else(|| invalid("a request must be a JSON object"))?;
    let op = match obj.get("op").and_then(Value::as_str) {
        Some("create") => Op::Create,
        Some("get") => Op::Get,
        Some("update") => Op::Update,
        Some("delete") => Op::Delete,
        Some("list") => Op::List,
        // The plugin has no claim; the part is not declared, so it is not judged.
        Some("claim") => {
            return Err(error(
                ErrorKind::Unsupported,
                "claim: the plugin has no claim (task_update sets status and owner, and nothing makes it exclusive)",
            ));
        }
        Some("hello") => return Err(invalid("hello is asked once, when the session opens")),
        other => return Err(invalid(format!("op: unknown operation {other:?}"))),
    };
    if let Some(k) = obj.keys().find(|k| {
        !matches!(
            k.as_str(),
            "op" | "list" | "id" | "task" | "patch" | "owner"
        )
    }) {
        return Err(invalid(format!(
            "{k}: not a field of a request (taskproof's oh-my-opencode driver: no tool takes it)"
        )));
    }
    // The list is the folder `storage_path` names; a name that cannot be a folder of one
    // path segment cannot be given to the plugin at all.
    let list = match obj.get("list") {
        Some(Value::String(s)) if crate::list_folder_ok(s) => s.clone(),
        Some(Value::String(s)) => {
            return Err(invalid(format!(
                "list: {s:?} cannot name a folder for the plugin's storage_path"
            )));
        }
        Some(_) => return Err(invalid("list: expected a string")),
        None => return Err(invalid("list: missing")),
    };
    let need_id = || match obj.get("id") {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(invalid("id: expected a string")),
        None => Err(invalid("id: missing")),
    };
    let mut script = Script {
        op,
        list: list.clone(),
        id: None,
        queue: VecDeque::new(),
        owner: None,
        awaiting: None,
        refuse: None,
        listed: Vec::new(),
        to_read: VecDeque::new(),
    };
    let call = |name, input| Call { name, input };
    match op {
        Op::Create => {
            let task = match obj.get("task") {
                Some(Value::Object(t)) => t,
                _ => return Err(invalid("task: expected an object")),
            };
            let mut input = Map::new();
            for (k, v) in task {
                if v.is_null() {
                    continue; // an optional field given as null is absent
                }
                if k == "owner" {
                    script.owner = Some(v.clone());
                } else {
                    input.insert(k.clone(), v.clone());
                }
            }
            script
                .queue
                .push_back(call("task_create", Value::Object(input)));
        }
        Op::Get => {
            let id = need_id()?;
            script.queue.push_back(call("task_get", json!({"id": id})));
            script.id = Some(id);
        }
        Op::Update => {
            let id = need_id()?;
            let patch = match obj.get("patch") {
                Some(Value::Object(p)) => p,
                _ => return Err(invalid("patch: expected an object")),
            };
            let mut input = Map::new();
            input.insert("id".into(), Value::String(id.clone()));
            for (k, v) in patch {
                let refused = match (k.as_str(), v) {
                    ("removeBlockedBy" | "removeBlocks", Value::Array(a)) if a.is_empty() => {
                        continue;
                    }
                    ("removeBlockedBy" | "removeBlocks", Value::Array(_)) => {
                        Some("task_update has no way to remove a dependency edge")
                    }
                    ("activeForm", Value::Null) => Some("task_update cannot remove activeForm"),
                    ("metadata", Value::Null) => {
                        Some("task_update merges metadata key by key; it cannot remove it whole")
                    }
                    // An agent clears the owner by giving an empty one.
                    ("owner", Value::Null) => {
                        input.insert("owner".into(), Value::String(String::new()));
                        continue;
                    }
                    _ => {
                        input.insert(k.clone(), v.clone());
                        continue;
                    }
                };
                script.refuse = refused;
                script.queue.clear();
                script.queue.push_back(call("task_get", json!({"id": id})));
                script.id = Some(id);
                return Ok(Plan::Run(script));
            }
            script
                .queue
                .push_back(call("task_update", Value::Object(input)));
            script.id = Some(id);
        }
        Op::Delete => {
            let id = need_id()?;
            script
                .queue
                .push_back(call("task_update", json!({"id": id, "status": "deleted"})));
            script.id = Some(id);
        }
        Op::List => script.queue.push_back(call("task_list", json!({}))),
    }
    Ok(Plan::Run(script))
}

/// What a tool answered, as its text says.
#[derive(Debug)]
enum Answered {
    /// `{"task": {…}}`
    Task(Value),
    /// `{"task": null}` (task_get of a missing or unreadable task)
    NoTask,
    /// `{"tasks": […]}`
    Tasks(Vec<Value>),
    /// `{"error": WORD, "message"?: TEXT}`
    Error(String, String),
}

fn read_answer(text: &str) -> Result<Answered, String> {
    let v: Value =
        serde_json::from_str(text.trim()).map_err(|e| format!("not JSON ({e}): {text:?}"))?;
    if let Some(word) = v.get("error") {
        let word = word.as_str().unwrap_or_default().to_string();
        let message = v
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        return Ok(Answered::Error(word, message));
    }
    match (v.get("task"), v.get("tasks")) {
        (Some(Value::Null), _) => Ok(Answered::NoTask),
        (Some(t @ Value::Object(_)), _) => Ok(Answered::Task(t.clone())),
        (_, Some(Value::Array(ts))) => Ok(Answered::Tasks(ts.clone())),
        _ => Err(format!("neither a task, tasks nor an error: {text:?}")),
    }
}

/// The protocol's error kind for one of the plugin's error words.
fn error_kind(word: &str, id_was_wire: bool) -> ErrorKind {
    match word {
        "task_not_found" => ErrorKind::NotFound,
        // A well-formed wire id the book does not know is a task the plugin never named.
        "invalid_task_id" if id_was_wire => ErrorKind::NotFound,
        "invalid_task_id" | "validation_error" | "invalid_arguments" => ErrorKind::Invalid,
        // `task_lock_unavailable`, `internal_error`, `unknown_error`: the store's failures.
        _ => ErrorKind::Io,
    }
}

/// Whether `id` is a wire id as the protocol writes them (decimal, no leading zero).
fn is_wire_id(id: &str) -> bool {
    !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()) && (id == "0" || !id.starts_with('0'))
}

impl Script {
    /// The list the request is about.
    pub fn list(&self) -> &str {
        &self.list
    }

    /// The next move, given the result of the last call (`None` at the start): `is_error`
    /// and the text OpenCode gave the model. `tables` is the id book, read or changed under
    /// its lock by the caller; the answer says whether it changed.
    pub fn next(
        &mut self,
        result: Option<(bool, &str)>,
        tables: &mut Tables,
    ) -> Result<(Step, bool), String> {
        let mut changed = false;
        if let Some((is_error, text)) = result {
            let tool = self.awaiting.take().unwrap_or("the tool");
            if is_error {
                // OpenCode refused the call before the tool ran (its input schema).
                return Ok((
                    Step::Done(error(ErrorKind::Invalid, format!("{tool}: {text}"))),
                    false,
                ));
            }
            let answered = read_answer(text).map_err(|e| format!("{tool} answered {e}"))?;
            let id_was_wire = self.id.as_deref().is_some_and(is_wire_id);
            match (self.op, tool, answered) {
                (_, _, Answered::Error(word, message)) => {
                    let kind = error_kind(&word, id_was_wire);
                    let text = if message.is_empty() {
                        word
                    } else {
                        format!("{word}: {message}")
                    };
                    return Ok((Step::Done(error(kind, format!("{tool}: {text}"))), false));
                }
                (Op::List, "task_list", Answered::Tasks(tasks)) => {
                    for t in tasks {
                        let server = t["id"].as_str().unwrap_or_default().to_string();
                        let (wire, c) = tables.wire_id(&self.list, &server);
                        changed |= c;
                        self.to_read.push_back(wire);
                    }
                }
                (Op::List, "task_get", Answered::Task(task)) => {
                    if task["status"] != "deleted" {
                        let (task, c) = to_wire(&task, &self.list, tables);
                        changed |= c;
                        self.listed.push(task);
                    }
                }
                // A listed task gone before its task_get: another writer deleted it.
                (Op::List, "task_get", Answered::NoTask) => {}
                (Op::Create, "task_create", Answered::Task(created)) => {
                    let server = created["id"]
                        .as_str()
                        .ok_or_else(|| format!("task_create named no id: {text:?}"))?;
                    let (wire, c) = tables.wire_id(&self.list, server);
                    changed |= c;
                    if let Some(owner) = self.owner.take() {
                        self.queue.push_back(Call {
                            name: "task_update",
                            input: json!({"id": wire, "owner": owner}),
                        });
                    }
                    self.id = Some(wire);
                }
                (Op::Create, "task_update", Answered::Task(_)) => {}
                (Op::Delete, "task_update", Answered::Task(_)) => {
                    return Ok((Step::Done(json!({"ok": true})), changed));
                }
                (_, "task_get", Answered::NoTask) => {
                    let id = self.id.clone().unwrap_or_default();
                    return Ok((
                        Step::Done(error(
                            ErrorKind::NotFound,
                            format!("task_get: no task {id}"),
                        )),
                        false,
                    ));
                }
                (_, "task_get", Answered::Task(task)) if task["status"] == "deleted" => {
                    let id = self.id.clone().unwrap_or_default();
                    return Ok((
                        Step::Done(error(
                            ErrorKind::NotFound,
                            format!("task_get: task {id} has status \"deleted\""),
                        )),
                        false,
                    ));
                }
                (_, "task_get", Answered::Task(_)) if self.refuse.is_some() => {
                    let why = self.refuse.unwrap_or_default();
                    return Ok((Step::Done(error(ErrorKind::Unsupported, why)), false));
                }
                (_, "task_get" | "task_update", Answered::Task(task)) if self.queue.is_empty() => {
                    let (task, c) = to_wire(&task, &self.list, tables);
                    return Ok((Step::Done(json!({"ok": true, "task": task})), changed | c));
                }
                (_, _, answered) => {
                    return Err(format!(
                        "{tool} answered {answered:?}, which this request does not expect"
                    ));
                }
            }
        }
        if let Some(Call { name, input }) = self.queue.pop_front() {
            self.awaiting = Some(name);
            return Ok((
                Step::Call {
                    name,
                    input: to_server(input, &self.list, tables),
                },
                changed,
            ));
        }
        match self.op {
            Op::List => {
                if let Some(wire) = self.to_read.pop_front() {
                    self.awaiting = Some("task_get");
                    let input = to_server(json!({"id": wire}), &self.list, tables);
                    return Ok((
                        Step::Call {
                            name: "task_get",
                            input,
                        },
                        changed,
                    ));
                }
                let mut tasks = std::mem::take(&mut self.listed);
                tasks.sort_by_key(|t| {
                    let id = t["id"].as_str().unwrap_or_default();
                    (id.len(), id.to_string())
                });
                Ok((
                    Step::Done(json!({"ok": true, "tasks": tasks, "corrupt": []})),
                    changed,
                ))
            }
            // Create: every call succeeded; the answer is the plugin's reading of the task.
            _ => {
                let id = self.id.clone().unwrap_or_default();
                self.awaiting = Some("task_get");
                let input = to_server(json!({"id": id}), &self.list, tables);
                Ok((
                    Step::Call {
                        name: "task_get",
                        input,
                    },
                    changed,
                ))
            }
        }
    }
}

/// A call's input with wire ids turned into the plugin's: `id`, and the items of every edge
/// array. A wire id the book does not know stays as it is.
fn to_server(mut input: Value, list: &str, tables: &Tables) -> Value {
    if let Some(obj) = input.as_object_mut() {
        if let Some(Value::String(id)) = obj.get_mut("id") {
            *id = tables.server_id(list, id);
        }
        for key in ["blocks", "blockedBy", "addBlocks", "addBlockedBy"] {
            if let Some(Value::Array(ids)) = obj.get_mut(key) {
                for id in ids {
                    if let Value::String(s) = id {
                        *s = tables.server_id(list, s);
                    }
                }
            }
        }
    }
    input
}

/// The plugin's task as a wire task: wire ids for itself and its edges, and only the fields
/// of the protocol (`threadID`, `repoURL` and `parentID` are the plugin's own).
fn to_wire(task: &Value, list: &str, tables: &mut Tables) -> (Value, bool) {
    let mut out = Map::new();
    let mut changed = false;
    let server = task["id"].as_str().unwrap_or_default();
    let (id, c) = tables.wire_id(list, server);
    changed |= c;
    out.insert("id".into(), Value::String(id));
    for key in [
        "subject",
        "description",
        "activeForm",
        "status",
        "owner",
        "metadata",
    ] {
        if let Some(v) = task.get(key)
            && !v.is_null()
        {
            out.insert(key.into(), v.clone());
        }
    }
    for key in ["blocks", "blockedBy"] {
        let ids = task[key]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|x| {
                        let s = x.as_str().unwrap_or_default();
                        let wire = tables
                            .known_wire_id(list, s)
                            .map(str::to_string)
                            .unwrap_or_else(|| s.to_string());
                        Value::String(wire)
                    })
                    .collect()
            })
            .unwrap_or_default();
        out.insert(key.into(), Value::Array(ids));
    }
    (Value::Object(out), changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(request: Value) -> Script {
        match plan(&request) {
            Plan::Run(s) => s,
            Plan::Answer(a) => panic!("answered at once: {a}"),
        }
    }

    fn call(step: (Step, bool)) -> (&'static str, Value) {
        match step.0 {
            Step::Call { name, input } => (name, input),
            Step::Done(a) => panic!("done early: {a}"),
        }
    }

    fn done(step: (Step, bool)) -> Value {
        match step.0 {
            Step::Done(a) => a,
            Step::Call { name, input } => panic!("another call: {name} {input}"),
        }
    }

    const T1: &str = "T-11111111-1111-4111-8111-111111111111";
    const T2: &str = "T-22222222-2222-4222-8222-222222222222";

    fn plugin_task(id: &str, status: &str, blocked_by: &[&str]) -> String {
        json!({"task": {"id": id, "subject": "s", "description": "", "status": status,
            "blocks": [], "blockedBy": blocked_by, "threadID": "ses_x", "repoURL": "r"}})
        .to_string()
    }

    #[test]
    fn a_create_with_an_owner_is_task_create_then_task_update_then_task_get_in_wire_ids() {
        let mut t = Tables::default();
        let mut s = script(json!({"op": "create", "list": "l",
            "task": {"subject": "s", "owner": "o", "activeForm": null}}));
        let (name, input) = call(s.next(None, &mut t).unwrap());
        assert_eq!(name, "task_create");
        assert_eq!(input, json!({"subject": "s"}), "no owner, no null field");
        let created = json!({"task": {"id": T1, "subject": "s"}}).to_string();
        let (name, input) = call(s.next(Some((false, &created)), &mut t).unwrap());
        assert_eq!(
            (name, input),
            ("task_update", json!({"id": T1, "owner": "o"}))
        );
        let (name, input) = call(
            s.next(Some((false, &plugin_task(T1, "pending", &[]))), &mut t)
                .unwrap(),
        );
        assert_eq!((name, input), ("task_get", json!({"id": T1})));
        let answer = done(
            s.next(Some((false, &plugin_task(T1, "pending", &[]))), &mut t)
                .unwrap(),
        );
        assert_eq!(answer["task"]["id"], "1");
        assert!(
            answer["task"].get("threadID").is_none() && answer["task"].get("repoURL").is_none()
        );
    }

    #[test]
    fn edges_go_out_as_the_plugins_ids_and_come_back_as_wire_ids() {
        let mut t = Tables::default();
        t.wire_id("l", T1);
        t.wire_id("l", T2);
        let mut s = script(
            json!({"op": "update", "list": "l", "id": "2", "patch": {"addBlockedBy": ["1"]}}),
        );
        let (_, input) = call(s.next(None, &mut t).unwrap());
        assert_eq!(input, json!({"id": T2, "addBlockedBy": [T1]}));
        let answer = done(
            s.next(Some((false, &plugin_task(T2, "pending", &[T1]))), &mut t)
                .unwrap(),
        );
        assert_eq!(answer["task"]["blockedBy"], json!(["1"]));
    }

    #[test]
    fn the_plugins_error_words_become_the_protocols_kinds() {
        let kind = |request: Value, text: &str| {
            let mut t = Tables::default();
            let mut s = script(request);
            s.next(None, &mut t).unwrap();
            done(s.next(Some((false, text)), &mut t).unwrap())["error"]["kind"].clone()
        };
        let get = |id: &str| json!({"op": "get", "list": "l", "id": id});
        assert_eq!(
            kind(get("7"), r#"{"error":"invalid_task_id"}"#),
            "not_found",
            "a wire id nobody named"
        );
        assert_eq!(kind(get("x"), r#"{"error":"invalid_task_id"}"#), "invalid");
        assert_eq!(kind(get("7"), r#"{"task":null}"#), "not_found");
        let update = json!({"op": "update", "list": "l", "id": "1", "patch": {"status": "done"}});
        assert_eq!(kind(update.clone(), r#"{"error":"internal_error"}"#), "io");
        assert_eq!(
            kind(update.clone(), r#"{"error":"task_lock_unavailable"}"#),
            "io"
        );
        assert_eq!(
            kind(
                update.clone(),
                r#"{"error":"validation_error","message":"Required"}"#
            ),
            "invalid"
        );
        assert_eq!(kind(update, r#"{"error":"task_not_found"}"#), "not_found");
        let mut t = Tables::default();
        let mut s = script(get("1"));
        s.next(None, &mut t).unwrap();
        let refused = done(s.next(Some((true, "invalid arguments")), &mut t).unwrap());
        assert_eq!(
            refused["error"]["kind"], "invalid",
            "OpenCode refused the call"
        );
        let mut s = script(get("1"));
        s.next(None, &mut t).unwrap();
        let gone = done(
            s.next(Some((false, &plugin_task(T1, "deleted", &[]))), &mut t)
                .unwrap(),
        );
        assert_eq!(gone["error"]["kind"], "not_found", "status deleted");
    }

    #[test]
    fn what_task_update_cannot_express_is_unsupported_once_task_get_found_the_task() {
        let mut t = Tables::default();
        t.wire_id("l", T1);
        for patch in [
            json!({"removeBlocks": ["2"]}),
            json!({"activeForm": null}),
            json!({"metadata": null}),
        ] {
            let mut s = script(json!({"op": "update", "list": "l", "id": "1", "patch": patch}));
            let (name, _) = call(s.next(None, &mut t).unwrap());
            assert_eq!(name, "task_get", "{patch}");
            let answer = done(
                s.next(Some((false, &plugin_task(T1, "pending", &[]))), &mut t)
                    .unwrap(),
            );
            assert_eq!(answer["error"]["kind"], "unsupported", "{patch}");
        }
    }

    #[test]
    fn a_list_reads_every_listed_task_and_orders_them_by_wire_id() {
        let mut t = Tables::default();
        t.wire_id("l", T2); // numbered first: wire id 1
        let mut s = script(json!({"op": "list", "list": "l"}));
        assert_eq!(call(s.next(None, &mut t).unwrap()).0, "task_list");
        let listed = json!({"tasks": [{"id": T1}, {"id": T2}]}).to_string();
        let (_, input) = call(s.next(Some((false, &listed)), &mut t).unwrap());
        assert_eq!(input, json!({"id": T1}));
        let (_, input) = call(
            s.next(Some((false, &plugin_task(T1, "pending", &[]))), &mut t)
                .unwrap(),
        );
        assert_eq!(input, json!({"id": T2}));
        let answer = done(
            s.next(Some((false, &plugin_task(T2, "pending", &[]))), &mut t)
                .unwrap(),
        );
        let ids: Vec<&str> = answer["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["1", "2"]);
        assert_eq!(answer["corrupt"], json!([]));
    }

    #[test]
    fn a_claim_is_unsupported_at_once_the_plugin_has_none() {
        match plan(&json!({"op": "claim", "list": "l", "id": "1", "owner": "o"})) {
            Plan::Answer(a) => assert_eq!(a["error"]["kind"], "unsupported", "{a}"),
            Plan::Run(_) => panic!("a claim went to a tool"),
        }
    }

    #[test]
    fn requests_no_tool_can_take_are_answered_at_once() {
        for (request, why) in [
            (json!({"op": "list", "list": "l", "filter": 1}), "filter"),
            (json!({"op": "list", "list": "../x"}), "list"),
            (json!({"op": "list", "list": ".taskproof-mcp"}), "list"),
            (json!({"op": "get", "list": "l"}), "id"),
            (json!({"op": "frob", "list": "l"}), "op"),
        ] {
            match plan(&request) {
                Plan::Answer(a) => {
                    assert_eq!(a["error"]["kind"], "invalid", "{request}");
                    assert!(a["error"]["message"].as_str().unwrap().contains(why), "{a}");
                }
                Plan::Run(_) => panic!("{request} went to a tool"),
            }
        }
    }
}
