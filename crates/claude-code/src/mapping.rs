//! From protocol requests to the tool calls an agent makes, and from the tools' results back
//! to protocol answers.
//!
//! Requests go to the tools as raw as possible, so that the tools' own checks decide: an
//! unknown field or a mistyped value reaches the tool's input schema, a strange list name
//! reaches `CLAUDE_CODE_TASK_LIST_ID`. What no tool call can express is `unsupported`
//! (removing an edge; removing `activeForm` or the whole `metadata`; `delete` before 2.1.20).
//! A tool's verdict decides success or failure; the answer's task is then read from its file,
//! because the tools' texts leave fields out, and a file caught half-written (Claude Code
//! writes in place) is read again or, failing that, the task is taken from `TaskGet`'s text.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value, json};

use taskproof_core::protocol::ErrorKind;
use taskproof_model::scripted::ToolResult;
use taskproof_model::scripted::{Plan, Step, failure as error};

/// The operations the tools of a version can express.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Features {
    /// `TaskUpdate {status: "deleted"}` (Claude Code 2.1.20 and later).
    pub delete: bool,
}

impl Features {
    /// The mapping `hello` states (docs/claude-code.md has the same table): each request
    /// and each field the tools cannot express, and what the session asks the CLI instead.
    pub fn stated(self) -> std::collections::BTreeMap<String, String> {
        let delete = if self.delete {
            "TaskUpdate {taskId, status: \"deleted\"}"
        } else {
            "unsupported (this version's TaskUpdate has no status \"deleted\")"
        };
        [
            (
                "create",
                "TaskCreate, then TaskUpdate {addBlockedBy, addBlocks} for its edges",
            ),
            (
                "get",
                "TaskGet; owner, activeForm and metadata read from the task file",
            ),
            ("update", "TaskUpdate with the patch as given"),
            (
                "list",
                "TaskList; each task read from its file; corrupt is always []",
            ),
            (
                "claim",
                "TaskUpdate {taskId, status: \"in_progress\", owner}",
            ),
            ("delete", delete),
            ("patch.removeBlockedBy", "unsupported (only TaskGet runs)"),
            ("patch.removeBlocks", "unsupported (only TaskGet runs)"),
            ("activeForm: null", "unsupported (only TaskGet runs)"),
            ("metadata: null", "unsupported (only TaskGet runs)"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }
}

/// The folder of a list under the root, as the CLI names it.
pub fn list_dir(root: &Path, list: &str) -> PathBuf {
    root.join(taskproof_core::layout::claude_code_name(list))
}

/// A protocol request that needs the CLI: its list and the script of its tool calls.
pub struct Planned {
    pub list: String,
    pub script: Script,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Create,
    Get,
    Update,
    Delete,
    List,
    Claim,
}

/// The tool calls of one protocol request, run one at a time.
pub struct Script {
    op: Op,
    /// The task the request is about (for `create`, known once `TaskCreate` answered).
    id: Option<String>,
    queue: VecDeque<(&'static str, Value)>,
    /// For `create`: the fields only `TaskUpdate` sets (owner, edges).
    follow: Option<Map<String, Value>>,
    awaiting: Option<&'static str>,
    /// Whether the task was already asked for with `TaskGet` because its file was unreadable.
    fetched: bool,
    /// Why the request is `unsupported`, answered once `TaskGet` found the task: a missing
    /// task is `not_found`, as the tool says, whatever the request wanted done to it.
    refuse: Option<&'static str>,
}

/// Decides what to do with a raw request.
pub fn plan(request: &Value, features: Features) -> Plan<Planned> {
    match plan_inner(request, features) {
        Ok(p) => p,
        Err(answer) => Plan::Answer(answer),
    }
}

fn plan_inner(request: &Value, features: Features) -> Result<Plan<Planned>, Value> {
    let invalid = |m: String| error(ErrorKind::Invalid, m);
    let obj = request
        .as_object()
        .ok_or_else(|| invalid("a request must be a JSON object".into()))?;
    let op = match obj.get("op").and_then(Value::as_str) {
        Some("create") => Op::Create,
        Some("get") => Op::Get,
        Some("update") => Op::Update,
        Some("delete") => Op::Delete,
        Some("list") => Op::List,
        Some("claim") => Op::Claim,
        Some("hello") => {
            return Err(invalid(
                "hello is asked once, when the session opens".into(),
            ));
        }
        other => return Err(invalid(format!("op: unknown operation {other:?}"))),
    };
    // A top-level field the protocol does not have cannot reach a tool (TaskList has no
    // filter): the request is refused here, as a store would refuse it (S11, S13), rather than
    // sent without it and answered as if it were not there.
    if let Some(k) = obj.keys().find(|k| {
        !matches!(
            k.as_str(),
            "op" | "list" | "id" | "task" | "patch" | "owner"
        )
    }) {
        return Err(invalid(format!(
            "{k}: not a field of a request (taskproof's Claude Code driver: no tool takes it)"
        )));
    }
    let list = match obj.get("list") {
        Some(Value::String(s)) if !s.is_empty() && !s.contains('\0') => s.clone(),
        Some(Value::String(_)) => {
            return Err(invalid(
                "list: an empty name (or one with NUL) cannot name a Claude Code task list".into(),
            ));
        }
        Some(_) => return Err(invalid("list: expected a string".into())),
        None => return Err(invalid("list: missing".into())),
    };
    // The id goes to the tool as given: its schema judges it.
    let id = obj.get("id").cloned();
    let need_id = || id.clone().ok_or_else(|| invalid("id: missing".into()));
    let mut script = Script {
        op,
        id: None,
        queue: VecDeque::new(),
        follow: None,
        awaiting: None,
        fetched: false,
        refuse: None,
    };
    // What no tool call can express, about an existing task: `TaskGet` first decides whether
    // the task is there (not_found otherwise), then the answer is `unsupported`.
    let refuse = |mut script: Script, id: Value, why: &'static str| {
        script.id = id.as_str().map(str::to_string);
        script.queue.clear();
        script.queue.push_back(("TaskGet", json!({"taskId": id})));
        script.refuse = Some(why);
        Ok(Plan::Run(Planned {
            list: list.clone(),
            script,
        }))
    };
    match op {
        Op::Create => {
            let task = match obj.get("task") {
                Some(Value::Object(t)) => t,
                _ => return Err(invalid("task: expected an object".into())),
            };
            let mut create = Map::new();
            let mut follow = Map::new();
            for (k, v) in task {
                if v.is_null() {
                    continue; // an optional field given as null is absent
                }
                match k.as_str() {
                    "owner" => {
                        follow.insert("owner".into(), v.clone());
                    }
                    "blockedBy" if v.as_array().is_some_and(Vec::is_empty) => {}
                    "blocks" if v.as_array().is_some_and(Vec::is_empty) => {}
                    "blockedBy" => {
                        follow.insert("addBlockedBy".into(), v.clone());
                    }
                    "blocks" => {
                        follow.insert("addBlocks".into(), v.clone());
                    }
                    _ => {
                        create.insert(k.clone(), v.clone());
                    }
                }
            }
            // TaskCreate requires a description; an agent with none to give writes "".
            create
                .entry("description")
                .or_insert_with(|| Value::String(String::new()));
            script
                .queue
                .push_back(("TaskCreate", Value::Object(create)));
            script.follow = (!follow.is_empty()).then_some(follow);
        }
        Op::Get => {
            let id = need_id()?;
            script.id = id.as_str().map(str::to_string);
            script.queue.push_back(("TaskGet", json!({"taskId": id})));
        }
        Op::Update => {
            let id = need_id()?;
            let patch = match obj.get("patch") {
                Some(Value::Object(p)) => p,
                _ => return Err(invalid("patch: expected an object".into())),
            };
            let mut input = Map::new();
            input.insert("taskId".into(), id.clone());
            for (k, v) in patch {
                match (k.as_str(), v) {
                    ("removeBlockedBy" | "removeBlocks", Value::Array(a)) if a.is_empty() => {}
                    ("removeBlockedBy" | "removeBlocks", Value::Array(_)) => {
                        return refuse(
                            script,
                            id,
                            "TaskUpdate has no way to remove a dependency edge",
                        );
                    }
                    ("addBlockedBy" | "addBlocks", Value::Array(a)) if a.is_empty() => {}
                    ("activeForm", Value::Null) => {
                        return refuse(script, id, "TaskUpdate cannot remove activeForm");
                    }
                    ("metadata", Value::Null) => {
                        return refuse(
                            script,
                            id,
                            "TaskUpdate merges metadata key by key; it cannot remove it whole",
                        );
                    }
                    // An agent clears the owner by giving an empty one.
                    ("owner", Value::Null) => {
                        input.insert("owner".into(), Value::String(String::new()));
                    }
                    _ => {
                        input.insert(k.clone(), v.clone());
                    }
                }
            }
            script.id = id.as_str().map(str::to_string);
            script.queue.push_back(("TaskUpdate", Value::Object(input)));
        }
        Op::Delete => {
            let id = need_id()?;
            if !features.delete {
                return refuse(
                    script,
                    id,
                    "this version's TaskUpdate has no status \"deleted\" (it came in 2.1.20)",
                );
            }
            script
                .queue
                .push_back(("TaskUpdate", json!({"taskId": id, "status": "deleted"})));
        }
        Op::List => script.queue.push_back(("TaskList", json!({}))),
        Op::Claim => {
            let id = need_id()?;
            let owner = obj.get("owner").cloned().unwrap_or(Value::Null);
            script.id = id.as_str().map(str::to_string);
            script.queue.push_back((
                "TaskUpdate",
                json!({"taskId": id, "status": "in_progress", "owner": owner}),
            ));
        }
    }
    Ok(Plan::Run(Planned { list, script }))
}

impl Script {
    /// The next move, given the result of the last tool call (`None` at the start). `dir`
    /// is the list's folder.
    pub fn next(&mut self, result: Option<&ToolResult>, dir: &Path) -> Result<Step, String> {
        if let Some(r) = result {
            let tool = self.awaiting.take().unwrap_or("the tool");
            // Later versions report a failure as a plain text, not as an error result
            // (2.1.112: "Task not found", "Failed to delete task"): a result is a success
            // only in the shape the tool gives successes.
            if r.is_error || !succeeded(tool, &r.text) {
                return Ok(Step::Done(error(
                    error_kind(&r.text),
                    format!("{tool}: {}", r.text),
                )));
            }
            match (self.op, tool) {
                (Op::Create, "TaskCreate") => {
                    let id = created_id(&r.text).ok_or_else(|| {
                        format!(
                            "TaskCreate succeeded without naming the new task: {:?}",
                            r.text
                        )
                    })?;
                    if let Some(mut follow) = self.follow.take() {
                        follow.insert("taskId".into(), Value::String(id.clone()));
                        self.queue.push_back(("TaskUpdate", Value::Object(follow)));
                    }
                    self.id = Some(id);
                }
                (Op::List, "TaskList") => return Ok(Step::Done(list_answer(&r.text, dir))),
                (Op::Delete, "TaskUpdate") => return Ok(Step::Done(json!({"ok": true}))),
                (_, "TaskGet") if self.refuse.is_some() => {
                    let why = self.refuse.unwrap_or_default();
                    return Ok(Step::Done(error(ErrorKind::Unsupported, why)));
                }
                (_, "TaskGet") => {
                    let id = self.id.clone().unwrap_or_default();
                    let task = read_task(dir, &id)
                        .or_else(|| task_from_get(&r.text))
                        .ok_or_else(|| {
                            format!("TaskGet answered with an unreadable text: {:?}", r.text)
                        })?;
                    return Ok(Step::Done(json!({"ok": true, "task": task})));
                }
                _ => {}
            }
        }
        if let Some((name, input)) = self.queue.pop_front() {
            self.awaiting = Some(name);
            return Ok(Step::Call { name, input });
        }
        // Every call succeeded: the answer is the task as its file has it now.
        let id = self.id.clone().unwrap_or_default();
        match read_task(dir, &id) {
            Some(task) => Ok(Step::Done(json!({"ok": true, "task": task}))),
            None if !self.fetched => {
                self.fetched = true;
                self.awaiting = Some("TaskGet");
                Ok(Step::Call {
                    name: "TaskGet",
                    input: json!({"taskId": id}),
                })
            }
            None => Err(format!("task {id} was acknowledged but cannot be read")),
        }
    }
}

/// Whether `text` is a success of `tool`, by the form each tool's success takes.
fn succeeded(tool: &str, text: &str) -> bool {
    match tool {
        "TaskCreate" => created_id(text).is_some() && text.contains("created successfully"),
        "TaskGet" => text.starts_with("Task #"),
        "TaskUpdate" => text.starts_with("Updated task #"),
        _ => true,
    }
}

/// The error kind a tool's error text means. Unknown texts are `io`, never a success.
pub fn error_kind(text: &str) -> ErrorKind {
    hook_refusal_kind(text).unwrap_or_else(|| words_kind(text))
}

/// The error kind of a call a hook refused, or `None` when `text` is no hook's refusal.
/// Claude Code words them `PreToolUse:TaskUpdate hook error: [COMMAND]: REASON` (the tool did
/// not run) and `TaskCreated hook feedback:` / `TaskCompleted hook feedback:` then
/// `[COMMAND]: REASON` (the tool undid or did not write its change). The kind is what the
/// reason means, never the hook's own wording around it: for `taskproof check --stdin`, the
/// finding it names first (`- [S7 cycle] …`; the notes after the findings may name older
/// problems the change did not cause); for another hook, the reason's words.
fn hook_refusal_kind(text: &str) -> Option<ErrorKind> {
    let at = [" hook error: ", " hook feedback:"]
        .iter()
        .filter_map(|m| text.find(m).map(|i| i + m.len()))
        .min()?;
    let reason = &text[at..];
    let finding = reason.lines().find_map(|line| {
        let rest = line.trim_start().strip_prefix("- [")?;
        let (_rule, kind) = rest.split_once(']')?.0.split_once(' ')?;
        Some(kind.to_string())
    });
    Some(match finding.as_deref() {
        Some("cycle") => ErrorKind::Cycle,
        Some("dangling") => ErrorKind::Dangling,
        Some("completed-blocked" | "started-blocked") => ErrorKind::Blocked,
        Some("schema" | "unknown-status" | "malformed-json" | "id-mismatch") => ErrorKind::Invalid,
        Some("duplicate-id") => ErrorKind::Conflict,
        _ => words_kind(reason),
    })
}

/// The error kind the words of an error text mean; `io` when none is recognised.
fn words_kind(text: &str) -> ErrorKind {
    let t = text.to_ascii_lowercase();
    if t.contains("inputvalidationerror") || t.contains("invalid") {
        ErrorKind::Invalid
    } else if t.contains("no such tool available") {
        ErrorKind::Unsupported
    } else if t.contains("cycle") || t.contains("circular") {
        ErrorKind::Cycle
    } else if t.contains("not found") || t.contains("does not exist") {
        ErrorKind::NotFound
    } else if t.contains("already owned") || t.contains("already claimed") || t.contains("owned by")
    {
        ErrorKind::Conflict
    } else if t.contains("blocked") {
        ErrorKind::Blocked
    } else {
        ErrorKind::Io
    }
}

/// The id in `Task #7 created successfully: …`.
fn created_id(text: &str) -> Option<String> {
    let rest = text.split_once("Task #")?.1;
    let id: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    (!id.is_empty()).then_some(id)
}

/// How often a file that does not parse is read again: Claude Code truncates and rewrites
/// files in place, so a reader can catch one empty or half-written.
const READ_TRIES: usize = 20;

/// The task in `dir/{id}.json`, if the file holds a JSON object.
pub fn read_task(dir: &Path, id: &str) -> Option<Value> {
    let path = dir.join(format!(
        "{}.json",
        taskproof_core::layout::claude_code_name(id)
    ));
    for _ in 0..READ_TRIES {
        match std::fs::read(&path) {
            Ok(bytes) => match serde_json::from_slice::<Value>(&bytes) {
                Ok(v @ Value::Object(_)) => return Some(v),
                _ => std::thread::sleep(Duration::from_millis(5)),
            },
            Err(_) => return None,
        }
    }
    None
}

/// A task from `TaskGet`'s text (`Task #2: subject`, `Status: …`, `Description: …`,
/// `Blocked by: #1, #3`, `Blocks: #4`): what it shows, for a file that cannot be read.
fn task_from_get(text: &str) -> Option<Value> {
    let mut lines = text.lines();
    let head = lines.next()?.strip_prefix("Task #")?;
    let (id, subject) = head
        .split_once(": ")
        .unwrap_or((head.trim_end_matches(':'), ""));
    let mut task = json!({"id": id, "subject": subject, "description": "", "status": "pending",
                          "blocks": [], "blockedBy": []});
    for line in lines {
        if let Some(s) = line.strip_prefix("Status: ") {
            task["status"] = json!(s.trim());
        } else if let Some(s) = line.strip_prefix("Description: ") {
            task["description"] = json!(s);
        } else if let Some(s) = line.strip_prefix("Blocked by: ") {
            task["blockedBy"] = json!(ids(s));
        } else if let Some(s) = line.strip_prefix("Blocks: ") {
            task["blocks"] = json!(ids(s));
        } else if let Some(s) = line.strip_prefix("Owner: ") {
            task["owner"] = json!(s.trim());
        }
    }
    Some(task)
}

fn ids(s: &str) -> Vec<String> {
    s.split(',')
        .map(|p| p.trim().trim_start_matches('#').to_string())
        .filter(|p| !p.is_empty())
        .collect()
}

/// The `list` answer: the tasks `TaskList` names, each read from its file, or from its line
/// (`#2 [pending] subject (owner) [blocked by #1]`) when the file cannot be read. `corrupt`
/// is empty: the tool names no unreadable files, it leaves them out.
fn list_answer(text: &str, dir: &Path) -> Value {
    let mut tasks = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix('#') else {
            continue;
        };
        let id: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        if id.is_empty() {
            continue;
        }
        let task = read_task(dir, &id).unwrap_or_else(|| task_from_line(&id, &rest[id.len()..]));
        tasks.push(task);
    }
    tasks.sort_by_key(|t| {
        t["id"]
            .as_str()
            .and_then(|s| s.parse::<u64>().ok())
            .unwrap_or(u64::MAX)
    });
    json!({"ok": true, "tasks": tasks, "corrupt": []})
}

fn task_from_line(id: &str, rest: &str) -> Value {
    let rest = rest.trim_start();
    let (status, mut subject) = match rest.strip_prefix('[').and_then(|r| r.split_once("] ")) {
        Some((s, tail)) => (s.to_string(), tail.to_string()),
        None => ("pending".to_string(), rest.to_string()),
    };
    let mut blocked_by = Vec::new();
    if let Some(i) = subject.find(" [blocked by ") {
        blocked_by = ids(subject[i + 13..].trim_end_matches(']'));
        subject.truncate(i);
    }
    let mut task = json!({"id": id, "subject": subject, "description": "", "status": status,
                          "blocks": [], "blockedBy": blocked_by});
    if subject.ends_with(')')
        && let Some(i) = subject.rfind(" (")
    {
        task["owner"] = json!(subject[i + 2..subject.len() - 1]);
        task["subject"] = json!(subject[..i]);
    }
    task
}

#[cfg(test)]
mod tests {
    use super::*;

    const FEATURES: Features = Features { delete: true };

    /// The fuzzer's `{"op": "list", "filter": "all"}` was listed as if `filter` were not
    /// there (S2 against Claude Code); no tool takes it, so the driver refuses it.
    #[test]
    fn a_request_field_no_tool_takes_is_invalid() {
        let Plan::Answer(a) = plan(
            &json!({"op": "list", "list": "l", "filter": "all"}),
            FEATURES,
        ) else {
            panic!("planned a turn for a request with an unknown field");
        };
        assert_eq!(a["error"]["kind"], "invalid", "{a}");
        assert!(
            a["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("filter:"),
            "{a}"
        );
        assert!(matches!(
            plan(
                &json!({"op": "claim", "list": "l", "id": "1", "owner": "a"}),
                FEATURES
            ),
            Plan::Run(_)
        ));
    }

    #[test]
    fn hello_states_delete_only_where_the_version_has_it() {
        let new = FEATURES.stated();
        assert!(new["delete"].contains("\"deleted\""), "{new:?}");
        assert!(new["claim"].contains("in_progress"));
        assert!(new["patch.removeBlocks"].starts_with("unsupported"));
        let old = Features { delete: false }.stated();
        assert!(old["delete"].starts_with("unsupported"), "{old:?}");
    }

    fn run(req: Value) -> Planned {
        match plan(&req, FEATURES) {
            Plan::Run(p) => p,
            Plan::Answer(a) => panic!("answered at once: {a}"),
        }
    }

    fn ok(text: &str) -> ToolResult {
        ToolResult {
            tool_use_id: "t".into(),
            is_error: false,
            text: text.into(),
        }
    }

    #[test]
    fn a_create_with_edges_is_task_create_then_task_update() {
        let dir = tempfile::tempdir().unwrap();
        let mut p = run(json!({"op": "create", "list": "l",
            "task": {"subject": "a", "owner": "w", "blockedBy": ["1"], "activeForm": null}}));
        assert_eq!(
            p.script.next(None, dir.path()).unwrap(),
            Step::Call {
                name: "TaskCreate",
                input: json!({"subject": "a", "description": ""})
            }
        );
        let step = p
            .script
            .next(Some(&ok("Task #2 created successfully: a")), dir.path())
            .unwrap();
        assert_eq!(
            step,
            Step::Call {
                name: "TaskUpdate",
                input: json!({"owner": "w", "addBlockedBy": ["1"], "taskId": "2"})
            }
        );
        std::fs::write(dir.path().join("2.json"), r#"{"id":"2","subject":"a"}"#).unwrap();
        let step = p
            .script
            .next(Some(&ok("Updated task #2 owner")), dir.path())
            .unwrap();
        assert_eq!(
            step,
            Step::Done(json!({"ok": true, "task": {"id": "2", "subject": "a"}}))
        );
    }

    #[test]
    fn tool_errors_are_failures_of_their_meaning() {
        let dir = tempfile::tempdir().unwrap();
        let mut p = run(json!({"op": "get", "list": "l", "id": "9"}));
        p.script.next(None, dir.path()).unwrap();
        let err = ToolResult {
            is_error: true,
            ..ok("Task not found")
        };
        let Step::Done(v) = p.script.next(Some(&err), dir.path()).unwrap() else {
            panic!()
        };
        assert_eq!(v["error"]["kind"], "not_found");
        assert_eq!(
            error_kind("<tool_use_error>InputValidationError: [..]"),
            ErrorKind::Invalid
        );
        assert_eq!(error_kind("something new"), ErrorKind::Io);
        // 2.1.112 answers a missing task with a plain text, not an error result.
        let mut p = run(json!({"op": "update", "list": "l", "id": "9", "patch": {}}));
        p.script.next(None, dir.path()).unwrap();
        let Step::Done(v) = p
            .script
            .next(Some(&ok("Task not found")), dir.path())
            .unwrap()
        else {
            panic!()
        };
        assert_eq!(v["error"]["kind"], "not_found");
    }

    #[test]
    fn a_hook_refusal_is_the_kind_of_its_first_finding() {
        // As 2.1.112 words them (tests/claude_code_hook.rs shows them in the real CLI). The
        // note after the finding names an older cycle: it must not decide the kind.
        let pre = "PreToolUse:TaskUpdate hook error: [taskproof check --stdin]: taskproof: this \
                   change would leave the task list l unsafe:\n- [S5 completed-blocked] 2.json: \
                   this change makes task 2 completed while its blocker 1 (pending) is not \
                   completed\ntaskproof: the task list l already has 1 problem this change did \
                   not cause (first: S7 cycle 3.json: dependency cycle 3 -> 4 -> 3)";
        assert_eq!(error_kind(pre), ErrorKind::Blocked);
        let created = "<tool_use_error>Error: TaskCreated hook feedback:\n[taskproof check \
                       --stdin]: taskproof: this change would leave the task list l unsafe:\n\
                       - [S15 schema] 3.json: subject: this change makes it 0 characters long";
        assert_eq!(error_kind(created), ErrorKind::Invalid);
        let cycle = "PreToolUse:TaskUpdate hook error: [x]: taskproof: …\n- [S7 cycle] 2.json: …";
        assert_eq!(error_kind(cycle), ErrorKind::Cycle);
        // Another hook's refusal is what its reason says, else io: never a success.
        let other = "TaskCompleted hook feedback:\n[./lint.sh]: task 4 was not found";
        assert_eq!(error_kind(other), ErrorKind::NotFound);
        let vague = "PreToolUse:TaskUpdate hook error: [./policy.sh]: no";
        assert_eq!(error_kind(vague), ErrorKind::Io);
    }

    #[test]
    fn what_no_tool_expresses_is_unsupported_for_a_task_that_exists() {
        let dir = tempfile::tempdir().unwrap();
        let old = Features { delete: false };
        for (req, features) in [
            (
                json!({"op": "update", "list": "l", "id": "1", "patch": {"removeBlocks": ["2"]}}),
                FEATURES,
            ),
            (
                json!({"op": "update", "list": "l", "id": "1", "patch": {"metadata": null}}),
                FEATURES,
            ),
            (json!({"op": "delete", "list": "l", "id": "1"}), old),
        ] {
            let Plan::Run(mut p) = plan(&req, features) else {
                panic!("{req} answered at once")
            };
            // Only TaskGet runs: nothing is changed.
            assert_eq!(
                p.script.next(None, dir.path()).unwrap(),
                Step::Call {
                    name: "TaskGet",
                    input: json!({"taskId": "1"})
                },
                "{req}"
            );
            let found = ok("Task #1: a\nStatus: pending\nDescription: ");
            let Step::Done(a) = p.script.next(Some(&found), dir.path()).unwrap() else {
                panic!("{req} went on")
            };
            assert_eq!(a["error"]["kind"], "unsupported", "{req}");
            // A missing task is not_found, as the fuzzer found the strict model says.
            let Plan::Run(mut p) = plan(&req, features) else {
                panic!()
            };
            p.script.next(None, dir.path()).unwrap();
            let Step::Done(a) = p
                .script
                .next(Some(&ok("Task not found")), dir.path())
                .unwrap()
            else {
                panic!()
            };
            assert_eq!(a["error"]["kind"], "not_found", "{req}");
        }
        let del = json!({"op": "delete", "list": "l", "id": "1"});
        let Plan::Run(mut p) = plan(&del, FEATURES) else {
            panic!()
        };
        assert_eq!(
            p.script.next(None, dir.path()).unwrap(),
            Step::Call {
                name: "TaskUpdate",
                input: json!({"taskId": "1", "status": "deleted"})
            }
        );
    }

    #[test]
    fn an_unreadable_file_falls_back_to_the_tools_text() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("2.json"), "{\"id\": \"2\", \"subj").unwrap();
        let mut p = run(json!({"op": "get", "list": "l", "id": "2"}));
        p.script.next(None, dir.path()).unwrap();
        let text = "Task #2: second\nStatus: in_progress\nDescription: d2\nBlocked by: #1, #3";
        let Step::Done(v) = p.script.next(Some(&ok(text)), dir.path()).unwrap() else {
            panic!()
        };
        assert_eq!(v["task"]["status"], "in_progress");
        assert_eq!(v["task"]["blockedBy"], json!(["1", "3"]));
        let list = list_answer(
            "#1 [pending] first\n#2 [pending] second (me) [blocked by #1]",
            dir.path(),
        );
        assert_eq!(list["tasks"][1]["owner"], "me");
        assert_eq!(list["tasks"][1]["subject"], "second");
        assert_eq!(list["tasks"][1]["blockedBy"], json!(["1"]));
    }

    #[test]
    fn names_are_sanitized_as_claude_code_does() {
        assert_eq!(taskproof_core::layout::claude_code_name("../x"), "---x");
        assert_eq!(
            taskproof_core::layout::claude_code_name("team-a_1"),
            "team-a_1"
        );
        assert_eq!(
            taskproof_core::layout::claude_code_name("plan\u{1F600}"),
            "plan--"
        );
    }
}
