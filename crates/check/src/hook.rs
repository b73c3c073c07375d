//! `taskproof check --stdin`: judging one change as a Claude Code hook.
//!
//! Claude Code runs a command hook with one JSON object on stdin (`session_id`, `cwd`,
//! `hook_event_name`, and for a teammate `agent_id` as `name@team`) plus the event's own
//! fields: `tool_name` and `tool_input` for `PreToolUse`; `task_id`, `task_subject`,
//! `task_description`, `teammate_name` and `team_name` for `TaskCreated` and
//! `TaskCompleted`. Exit 0 lets the action go on (a JSON object on stdout may carry a
//! `systemMessage` the user sees); exit 2 blocks it and hands stderr to the model.
//!
//! **The change is judged, not the list.** The hook finds the list the way Claude Code does
//! ([`crate::locate`]), reads it, applies the change to it as Claude Code's tool would (a
//! `TaskUpdate` writes a changed subject, description, owner or status, then adds each new
//! edge to both tasks, and silently drops an edge when either task does not exist; status
//! `deleted` removes the task and every reference to it), and refuses only what the change
//! itself brings: a cycle through an edge it adds, an edge to a task that does not exist, a
//! task made `in_progress` or `completed` while a blocker is unfinished (or a completed task
//! made to wait on an unfinished one), a status outside the three, a subject outside 1 to
//! 200 characters. What was wrong with the list before is never held against the change; the
//! hook says in one line that it is there.
//!
//! **A list it cannot find or read is never a reason to refuse, and never passed in
//! silence**: the verdict then carries a note naming where it looked, which the command
//! prints as the `systemMessage` of an exit-0 answer.
//!
//! Input that is a bare JSON array of tasks (or an object with a `tasks` array) is judged as
//! a whole list instead: every unsafe finding refuses it.
//!
//! **The journal.** Every run that reads the list also brings its [`journal`] up to date: the
//! bytes of each task file that changed since the journal last saw it (marked `torn` when the
//! run read it empty, mid-rewrite or not decoding as a task: [`journal::Torn`]), each delete
//! the agent asks for, each file that went without one. `PostToolUse` runs only for that: it comes after
//! the tool wrote, so it is the one run that sees the last write before Claude Code's reset of
//! a finished list (the other events come before their write). Each run locks the journal
//! before it reads the list, so that runs on one list (a team's) journal it in the order they
//! read it; a delete the run refuses is not journaled, since it does not happen. A journal
//! that cannot be kept never changes the verdict; the `PostToolUse` run says why in its
//! `systemMessage`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde_json::Value;

use crate::finding::{Finding, FindingKind};
use crate::journal::{self, Observed};
use crate::judge;
use crate::locate::{List, Place, locate, read_list};
use taskproof_core::graph::Graph;
use taskproof_core::protocol::Layout;
use taskproof_core::task::{MAX_SUBJECT_CHARS, Status, Task, TaskId};

/// Why hook input could not be judged at all.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    #[error("read the hook input from stdin: {0}")]
    Read(#[source] std::io::Error),
    #[error("parse the hook input: not valid JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("parse the hook input: expected an array of tasks or an object, got {0}")]
    Shape(&'static str),
}

/// Where the hook looks for the list a change belongs to.
#[derive(Debug, Clone, Default)]
pub struct HookContext {
    /// A list folder named on the command line; it wins over everything else.
    pub list_dir: Option<PathBuf>,
    /// Claude Code's configuration folder: `$CLAUDE_CONFIG_DIR`, else `~/.claude`. Lists
    /// are in its `tasks/`, teams in its `teams/`.
    pub config_dir: Option<PathBuf>,
    /// `CLAUDE_CODE_TASK_LIST_ID`, when set and not empty.
    pub list_id: Option<String>,
    /// The layout of the list on disk; detected when not given.
    pub layout: Option<Layout>,
    /// Keep the list's journal (off with `--no-journal`, and in the unit tests).
    pub journal: bool,
}

/// What the hook decided.
#[derive(Debug, Clone, Default)]
pub struct Verdict {
    /// The list judged (`stdin` when none was read from disk).
    pub list: String,
    /// What the change brings that makes the list unsafe; empty lets it through.
    pub blocking: Vec<Finding>,
    /// One-line notes for the user: the list could not be found or read, or it already
    /// held problems this change did not cause.
    pub notes: Vec<String>,
}

/// Claude Code's `TaskUpdate` input, as far as the hook needs it. Ids stay as given: the
/// tool looks them up as file names, so one that is not a task id names no task.
#[derive(Debug, Default)]
struct Update {
    task: String,
    subject: Option<String>,
    status: Option<String>,
    add_blocks: Vec<String>,
    add_blocked_by: Vec<String>,
}

/// The change an event describes.
#[derive(Debug)]
enum Change {
    /// `PreToolUse` of `TaskCreate`: a new pending task with this subject, no edges.
    Create { subject: Option<String> },
    /// `TaskCreated`: the task was just written; the list before did not have it.
    Created { id: TaskId, subject: Option<String> },
    /// `PreToolUse` of `TaskUpdate`.
    Update(Update),
    /// `TaskCompleted`: the task is about to become completed.
    Complete { id: TaskId },
    /// `PostToolUse` of `TaskCreate` or `TaskUpdate`: the tool has written; nothing to judge,
    /// the journal records what it wrote.
    Written(Written),
}

/// What a tool call that ran wrote, as far as its event says.
#[derive(Debug)]
struct Written {
    /// The ids of the tasks whose files it wrote, when the event names them all: the new
    /// task of a `TaskCreate`, or the task of a `TaskUpdate` and each it added an edge to.
    /// `None` when it cannot be told (a delete also rewrites every task that named it).
    touched: Option<Vec<String>>,
    /// The task a `TaskUpdate` deleted.
    deleted: Option<String>,
}

impl Written {
    fn of(tool: &str, input: &Value, response: &Value) -> Written {
        // A call the tool answered with a failure wrote nothing of what it asked for.
        let failed = response.get("success").and_then(Value::as_bool) == Some(false);
        match tool {
            "TaskCreate" => Written {
                touched: response
                    .get("task")
                    .and_then(|t| str_or_id(t.get("id")))
                    .map(|id| vec![id]),
                deleted: None,
            },
            _ => {
                let task = str_or_id(input.get("taskId"));
                if str_field(input, "status") == Some("deleted") {
                    return Written {
                        touched: None,
                        deleted: task.filter(|_| !failed),
                    };
                }
                let mut ids: Vec<String> = task.into_iter().collect();
                for id in id_list(input.get("addBlocks"))
                    .into_iter()
                    .chain(id_list(input.get("addBlockedBy")))
                {
                    if !ids.contains(&id) {
                        ids.push(id);
                    }
                }
                Written {
                    touched: Some(ids),
                    deleted: None,
                }
            }
        }
    }
}

/// Judges hook input.
pub fn judge(input: &[u8], ctx: &HookContext) -> Result<Verdict, HookError> {
    let value: Value = serde_json::from_slice(input)?;
    let event = match &value {
        Value::Array(items) => return Ok(judge_bare(items)),
        Value::Object(o) if !o.contains_key("hook_event_name") => match o.get("tasks") {
            Some(Value::Array(items)) => return Ok(judge_bare(items)),
            // A shape it does not know is not ours to judge (and never refused).
            _ => &value,
        },
        Value::Object(_) => &value,
        Value::Null => return Err(HookError::Shape("null")),
        Value::Bool(_) => return Err(HookError::Shape("a boolean")),
        Value::Number(_) => return Err(HookError::Shape("a number")),
        Value::String(_) => return Err(HookError::Shape("a string")),
    };
    let name = str_field(event, "hook_event_name").unwrap_or_default();
    let tool = str_field(event, "tool_name").unwrap_or_default();
    let input = event.get("tool_input").unwrap_or(&Value::Null);
    let change = match (name, tool) {
        ("PreToolUse", "TaskCreate") => Change::Create {
            subject: str_field(input, "subject").map(str::to_string),
        },
        ("PreToolUse", "TaskUpdate") => match str_or_id(input.get("taskId")) {
            Some(task) => Change::Update(Update {
                task,
                subject: str_field(input, "subject").map(str::to_string),
                status: str_field(input, "status").map(str::to_string),
                add_blocks: id_list(input.get("addBlocks")),
                add_blocked_by: id_list(input.get("addBlockedBy")),
            }),
            // No task named: the tool refuses the call itself.
            None => return Ok(Verdict::default()),
        },
        ("PostToolUse", "TaskCreate" | "TaskUpdate") if ctx.journal => {
            let response = event.get("tool_response").unwrap_or(&Value::Null);
            let written = Written::of(tool, input, response);
            if let Some(ids) = &written.touched {
                return Ok(journal_written(event, ctx, ids));
            }
            Change::Written(written)
        }
        ("PostToolUse", "TaskCreate" | "TaskUpdate") => {
            return Ok(Verdict {
                notes: vec![format!(
                    "taskproof check --stdin judges a {tool} before it is written, and with --no-journal it keeps no journal, so as a PostToolUse hook it does nothing; install it on PreToolUse to judge changes (see docs/check.md)."
                )],
                ..Verdict::default()
            });
        }
        ("TaskCreated", _) => match event.get("task_id").and_then(taskproof_core::layout::id_of) {
            Some(id) => Change::Created {
                id,
                subject: str_field(event, "task_subject").map(str::to_string),
            },
            None => return Ok(Verdict::default()),
        },
        ("TaskCompleted", _) => {
            match event.get("task_id").and_then(taskproof_core::layout::id_of) {
                Some(id) => Change::Complete { id },
                None => return Ok(Verdict::default()),
            }
        }
        // Not about the task list: not ours to judge.
        _ => return Ok(Verdict::default()),
    };

    let read = locate(event, ctx).and_then(|place| {
        // The journal's lock before the list is read, so that what this run journals is
        // never older than what another run on the list journaled before it.
        let held = if ctx.journal {
            lock_journal(&place)
        } else {
            None
        };
        read_list(&place, ctx.layout).map(|list| (list, held))
    });
    match read {
        Ok((list, held)) => {
            let mut verdict = match change {
                // After the write there is nothing to judge, and what the list held before
                // was said by the run before it.
                Change::Written(_) => Verdict {
                    list: list.name.clone(),
                    ..Verdict::default()
                },
                _ => judge_on_list(&change, &list),
            };
            if let Some(held) = held
                && let Err(e) = keep_journal(
                    &change,
                    held,
                    &list,
                    &verdict,
                    str_field(event, "session_id"),
                )
                && matches!(change, Change::Written(_))
            {
                verdict.notes.push(format!(
                    "taskproof could not keep its journal of the task list {}: {e}. Until it can, `taskproof check` cannot name or restore the tasks that vanish from it.",
                    list.name
                ));
            }
            Ok(verdict)
        }
        Err(_) if matches!(change, Change::Written(_)) => Ok(Verdict::default()),
        Err(why) => {
            let mut v = Verdict {
                list: "stdin".into(),
                blocking: judge_alone(&change),
                notes: Vec::new(),
            };
            v.notes.push(format!(
                "taskproof could not check this change against its task list: {why}. Only the change itself was checked."
            ));
            Ok(v)
        }
    }
}

/// The journal of the list at `place`, locked; `None` when there is no list folder there
/// (nothing to journal, and no journal is made) or no place for a journal.
fn lock_journal(place: &Place) -> Option<Result<journal::Locked, journal::JournalError>> {
    let folder = &place.location.path;
    if !folder.is_dir() {
        return None;
    }
    let path = journal::path_for(folder, &place.location.name)?;
    Some(journal::lock(&path))
}

/// Records what this run saw of the list in the journal `held` (locked before the list was
/// read): every task file's bytes, the delete a `TaskUpdate` asks for when this run lets it
/// through, and the new task Claude Code takes back when this run refuses its `TaskCreated`.
fn keep_journal(
    change: &Change,
    held: Result<journal::Locked, journal::JournalError>,
    list: &List,
    verdict: &Verdict,
    session: Option<&str>,
) -> Result<usize, journal::JournalError> {
    let held = held?;
    let file = |id: TaskId| list.layout.file_name(id);
    let deleting = match change {
        // A delete this run refuses does not happen: the task is still there.
        Change::Update(u)
            if u.status.as_deref() == Some("deleted") && verdict.blocking.is_empty() =>
        {
            u.task.parse::<TaskId>().ok().and_then(file)
        }
        Change::Written(Written {
            deleted: Some(task),
            ..
        }) => task.parse::<TaskId>().ok().and_then(file),
        Change::Created { id, .. } if !verdict.blocking.is_empty() => file(*id),
        _ => None,
    };
    let seen = Observed {
        files: &list.files,
        unreadable: &list.unreadable,
        deleting: deleting.into_iter().collect(),
        torn: &list.torn,
        session,
    };
    journal::record(held, &list.name, &list.path, &seen, journal::now_ms())
}

/// The `PostToolUse` run of a call that names every file it wrote: those files go into the
/// journal as they are now (read with the journal locked), and nothing else of the list is
/// read. A journal that cannot be kept is said; a list that cannot be found is not (the
/// `PreToolUse` run said it).
fn journal_written(event: &Value, ctx: &HookContext, ids: &[String]) -> Verdict {
    let Ok(place) = locate(event, ctx) else {
        return Verdict::default();
    };
    let Ok(dir) = place.location.open() else {
        return Verdict::default();
    };
    let name = place.location.name.clone();
    let Some(path) = journal::path_for(&place.location.path, &name) else {
        return Verdict::default();
    };
    let not_kept = |e: journal::JournalError| Verdict {
        notes: vec![format!(
            "taskproof could not keep its journal of the task list {name}: {e}. Until it can, `taskproof check` cannot name or restore the tasks that vanish from it."
        )],
        list: name.clone(),
        ..Verdict::default()
    };
    let held = match journal::lock(&path) {
        Ok(l) => l,
        Err(e) => return not_kept(e),
    };
    let mut files = Vec::new();
    let mut torn = Vec::new();
    for id in ids {
        let Ok(id) = id.parse::<TaskId>() else {
            continue;
        };
        // The layout Claude Code writes, unless the folder is in the other one.
        let candidates = match ctx.layout {
            Some(l) => vec![l],
            None => vec![Layout::ClaudeCode, Layout::S07],
        };
        for layout in candidates {
            let Some(file) = layout.file_name(id) else {
                continue;
            };
            let mut bytes = Vec::new();
            if let Ok(st) = dir.read_into(&file, &mut bytes) {
                // Another writer may be rewriting it in place: the journal marks what is not
                // a whole task, so that `--restore` never takes it for one.
                let decodes = crate::locate::decodes_as_task(&bytes);
                if let Some(t) = journal::Torn::of_read(&bytes, st.st_size, decodes) {
                    torn.push((file.clone(), t));
                }
                files.push((file, bytes));
                break;
            }
        }
    }
    let folder = &place.location.path;
    match journal::record_written(held, &name, folder, &files, &torn, journal::now_ms()) {
        Ok(_) => Verdict {
            list: name.clone(),
            ..Verdict::default()
        },
        Err(e) => not_kept(e),
    }
}

/// A JSON array of tasks judged as a whole list: every unsafe finding refuses it.
fn judge_bare(items: &[Value]) -> Verdict {
    let mut all = Vec::new();
    let mut tasks = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let id = item.get("id").and_then(taskproof_core::layout::id_of);
        let file = id
            .and_then(|i| Layout::ClaudeCode.file_name(i))
            .unwrap_or_else(|| format!("tasks[{i}]"));
        if let Some(t) = judge::judge_task_value(item, Layout::ClaudeCode, |kind, message| {
            all.push(Finding::new("stdin", file.clone(), kind, message).involving(id));
        }) {
            tasks.push(t);
        }
    }
    let present: BTreeSet<TaskId> = tasks.iter().map(|t| t.id).collect();
    let bound = present.iter().next_back().map_or(0, |i| i.get());
    all.extend(judge::judge_tasks(
        "stdin",
        Layout::ClaudeCode,
        &tasks,
        &present,
        bound,
    ));
    all.retain(|f| f.kind.blocks_hook());
    Verdict {
        list: "stdin".into(),
        blocking: all,
        notes: Vec::new(),
    }
}

pub(super) fn str_field<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// An id as Claude Code's tools take it: a string (a number is taken as its digits).
fn str_or_id(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// An array of ids, each once, in the order given; anything else reads as none.
fn id_list(v: Option<&Value>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for id in v
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|x| str_or_id(Some(x)))
    {
        if !out.contains(&id) {
            out.push(id);
        }
    }
    out
}

// Judging.

/// What a change brings, judged on its own: without the list, only what needs no other
/// task (a status outside the three, a subject outside 1 to 200 characters, a task made to
/// block itself).
fn judge_alone(change: &Change) -> Vec<Finding> {
    let mut out = Vec::new();
    let j = Judge {
        list: "stdin",
        layout: Layout::ClaudeCode,
    };
    match change {
        Change::Create { subject } | Change::Created { subject, .. } => {
            let id = match change {
                Change::Created { id, .. } => Some(*id),
                _ => None,
            };
            if let Some(s) = subject {
                out.extend(j.subject(id, s));
            }
        }
        // A delete writes nothing else of the call.
        Change::Update(u) if u.status.as_deref() == Some("deleted") => {}
        Change::Update(u) => {
            let id = u.task.parse::<TaskId>().ok();
            if let Some(s) = &u.subject {
                out.extend(j.subject(id, s));
            }
            if let Some(s) = &u.status {
                out.extend(j.status(id, s));
            }
            if let Some(id) = id
                && (u.add_blocks.contains(&u.task) || u.add_blocked_by.contains(&u.task))
            {
                out.push(j.cycle(id, id, &[id]));
            }
        }
        Change::Complete { .. } | Change::Written(_) => {}
    }
    out
}

/// Names findings the way `taskproof check` does: the list, and the task's file.
struct Judge<'a> {
    list: &'a str,
    layout: Layout,
}

impl Judge<'_> {
    fn file(&self, id: Option<TaskId>) -> String {
        id.and_then(|i| self.layout.file_name(i))
            .unwrap_or_else(|| "the new task".into())
    }

    fn finding(&self, id: Option<TaskId>, kind: FindingKind, message: String) -> Finding {
        Finding::new(self.list, self.file(id), kind, message)
    }

    fn subject(&self, id: Option<TaskId>, subject: &str) -> Option<Finding> {
        let n = subject.chars().count();
        (n == 0 || n > MAX_SUBJECT_CHARS).then(|| {
            self.finding(
                id,
                FindingKind::Schema,
                format!(
                    "subject: this change makes it {n} characters long; a subject has 1 to {MAX_SUBJECT_CHARS}"
                ),
            )
            .involving(id)
        })
    }

    fn status(&self, id: Option<TaskId>, status: &str) -> Option<Finding> {
        (!Status::parse(status).is_known() && status != "deleted").then(|| {
            self.finding(
                id,
                FindingKind::UnknownStatus,
                format!(
                    "this change sets status {status:?}, which is not one of pending, in_progress, completed (or deleted, to delete the task)"
                ),
            )
            .involving(id)
        })
    }

    /// The edge `from` blocks `to` that this change adds closes the cycle `to -> ... -> from`
    /// (`back`, both ends included).
    fn cycle(&self, from: TaskId, to: TaskId, back: &[TaskId]) -> Finding {
        let what = if from == to {
            format!("this change makes task {from} block itself")
        } else {
            let mut path: Vec<String> = vec![from.to_string()];
            path.extend(back.iter().map(|i| i.to_string()));
            format!(
                "this change closes the dependency cycle {} (each blocks the next) by making {from} block {to}",
                path.join(" -> ")
            )
        };
        self.finding(
            Some(from),
            FindingKind::Cycle,
            format!("{what}; no task on it could ever start"),
        )
        .involving(std::iter::once(from).chain(back.iter().copied()))
    }
}

/// The list after a change, with what the change added.
struct Applied {
    after: BTreeMap<TaskId, Task>,
    /// Edges `(blocker, blocked)` the change adds that no side recorded before.
    new_edges: Vec<(TaskId, TaskId)>,
    /// The task whose status the change sets to `in_progress` or `completed`.
    started: Option<(TaskId, Status)>,
    refusals: Vec<Finding>,
    /// A task the change brings into the list (`TaskCreated`): it is not part of "before".
    created: Option<TaskId>,
    /// The task the change is about, when the list has no readable task by that id.
    absent: Option<String>,
}

fn has_edge(tasks: &BTreeMap<TaskId, Task>, blocker: TaskId, blocked: TaskId) -> bool {
    tasks
        .get(&blocker)
        .is_some_and(|t| t.blocks.contains(&blocked))
        || tasks
            .get(&blocked)
            .is_some_and(|t| t.blocked_by.contains(&blocker))
}

/// Applies the change to the list as Claude Code's tools would, noting what it refuses on
/// the way (what the change itself sets).
fn apply(change: &Change, list: &List, j: &Judge) -> Applied {
    let mut a = Applied {
        after: list.tasks.clone(),
        new_edges: Vec::new(),
        started: None,
        refusals: Vec::new(),
        created: None,
        absent: None,
    };
    match change {
        Change::Create { subject } => {
            let id = TaskId(list.bound + 1);
            if let Some(s) = subject {
                a.refusals.extend(j.subject(Some(id), s));
            }
        }
        Change::Created { id, subject } => {
            a.created = Some(*id);
            if !a.after.contains_key(id) {
                a.absent = Some(id.to_string());
            }
            let subject = subject
                .clone()
                .or_else(|| a.after.get(id).map(|t| t.subject.clone()));
            if let Some(s) = subject {
                a.refusals.extend(j.subject(Some(*id), &s));
            }
        }
        Change::Complete { id } => {
            // The event says the task is becoming completed, whatever its file says yet.
            match a.after.get_mut(id) {
                Some(t) => {
                    t.status = Status::Completed;
                    a.started = Some((*id, Status::Completed));
                }
                None => a.absent = Some(id.to_string()),
            }
        }
        Change::Update(u) => apply_update(u, list, j, &mut a),
        Change::Written(_) => {}
    }
    a
}

fn apply_update(u: &Update, list: &List, j: &Judge, a: &mut Applied) {
    // The tool reads the task first and refuses the whole call when it cannot: then
    // nothing changes, and the tool says so itself.
    let Some((id, before)) = u
        .task
        .parse::<TaskId>()
        .ok()
        .and_then(|id| list.tasks.get(&id).map(|t| (id, t)))
    else {
        a.absent = Some(u.task.clone());
        return;
    };
    if let Some(s) = &u.subject
        && *s != before.subject
    {
        a.refusals.extend(j.subject(Some(id), s));
    }
    if let Some(s) = &u.status {
        if s == "deleted" {
            // The task goes, and with it every reference to it; the other fields of the call
            // are not written.
            a.after.remove(&id);
            for t in a.after.values_mut() {
                t.blocks.remove(&id);
                t.blocked_by.remove(&id);
            }
            return;
        }
        if s != before.status.as_str() {
            a.refusals.extend(j.status(Some(id), s));
            let status = Status::parse(s);
            if matches!(status, Status::InProgress | Status::Completed) {
                a.started = Some((id, status.clone()));
            }
            if let Some(t) = a.after.get_mut(&id) {
                t.status = status;
            }
        }
    }
    // Edges: `addBlocks` first, then `addBlockedBy`, each id not already on the task's own
    // side; an id naming no readable task is dropped by the tool without a word.
    let sides = [
        (&u.add_blocks, true, "addBlocks"),
        (&u.add_blocked_by, false, "addBlockedBy"),
    ];
    for (adds, blocks, field) in sides {
        for raw in adds {
            let other = raw.parse::<TaskId>().ok();
            let own = if blocks {
                &before.blocks
            } else {
                &before.blocked_by
            };
            if other.is_some_and(|o| own.contains(&o)) {
                continue;
            }
            let Some(other) = other.filter(|o| a.after.contains_key(o)) else {
                let why = match other {
                    Some(o) if list.present.contains(&o) => format!(
                        "the file of task {o} cannot be read, so Claude Code would drop the edge without a word"
                    ),
                    _ => format!(
                        "list {} has no task {raw:?}, so Claude Code would drop the edge without a word",
                        list.name
                    ),
                };
                a.refusals.push(
                    j.finding(
                        Some(id),
                        FindingKind::Dangling,
                        format!("this change adds {raw:?} to {field} of task {id}, but {why}"),
                    )
                    .involving(std::iter::once(id).chain(other)),
                );
                continue;
            };
            let (blocker, blocked) = if blocks { (id, other) } else { (other, id) };
            if !has_edge(&a.after, blocker, blocked) {
                a.new_edges.push((blocker, blocked));
            }
            if let Some(t) = a.after.get_mut(&blocker) {
                t.blocks.insert(blocked);
            }
            if let Some(t) = a.after.get_mut(&blocked) {
                t.blocked_by.insert(blocker);
            }
        }
    }
}

/// Judges a change against the list it belongs to.
fn judge_on_list(change: &Change, list: &List) -> Verdict {
    let j = Judge {
        list: &list.name,
        layout: list.layout,
    };
    let applied = apply(change, list, &j);
    let mut blocking = applied.refusals;
    let graph = Graph::new(&applied.after.values().cloned().collect::<Vec<_>>());

    // A cycle through an edge this change adds is new; one without such an edge was there.
    let mut cycles_seen = BTreeSet::new();
    for &(blocker, blocked) in &applied.new_edges {
        if let Some(back) = graph.path(blocked, blocker) {
            let members: BTreeSet<TaskId> = back.iter().copied().collect();
            if cycles_seen.insert(members) {
                blocking.push(j.cycle(blocker, blocked, &back));
            }
        }
    }

    // S5: a task made in_progress or completed must have no unfinished blocker, and a
    // completed task must not be made to wait on an unfinished one.
    let shown = |ids: &[TaskId]| {
        ids.iter()
            .map(|b| {
                let s = graph.get(*b).map_or("?", |t| t.status.as_str());
                format!("{b} ({s})")
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let Some((id, status)) = &applied.started {
        let open = graph.unfinished_blockers(*id);
        if !open.is_empty() {
            let kind = if *status == Status::Completed {
                FindingKind::CompletedBlocked
            } else {
                FindingKind::StartedBlocked
            };
            blocking.push(
                j.finding(
                    Some(*id),
                    kind,
                    format!(
                        "this change makes task {id} {status} while {} {} not completed",
                        if open.len() == 1 {
                            format!("its blocker {}", shown(&open))
                        } else {
                            format!("its blockers {}", shown(&open))
                        },
                        if open.len() == 1 { "is" } else { "are" },
                    ),
                )
                .involving(std::iter::once(*id).chain(open)),
            );
        }
    }
    for &(blocker, blocked) in &applied.new_edges {
        let done = |i| graph.get(i).is_some_and(|t| t.status == Status::Completed);
        if done(blocked) && !done(blocker) && applied.started.as_ref().map(|s| s.0) != Some(blocked)
        {
            blocking.push(
                j.finding(
                    Some(blocked),
                    FindingKind::CompletedBlocked,
                    format!(
                        "this change makes completed task {blocked} wait on task {}, which is not completed",
                        shown(&[blocker])
                    ),
                )
                .involving([blocked, blocker]),
            );
        }
    }

    let mut notes = Vec::new();
    if let Some(id) = &applied.absent {
        // Claude Code refuses a change to a task it cannot read; but if the hook chose
        // another list than Claude Code did, this says that nothing was checked.
        notes.push(format!(
            "taskproof: the task list {} ({}) has no readable task {id:?}, so this change was not checked against it.",
            list.name,
            list.path.display(),
        ));
    }
    let before: Vec<&Finding> = list
        .old
        .iter()
        .filter(|f| applied.created.is_none_or(|c| !f.tasks.contains(&c)))
        .collect();
    if let Some(first) = before.first() {
        notes.push(format!(
            "taskproof: the task list {} already has {} this change did not cause (first: {} {} {}: {}); they are not held against it. Run `taskproof check {}` to see them.",
            list.name,
            if before.len() == 1 {
                "1 problem".to_string()
            } else {
                format!("{} problems", before.len())
            },
            first.cites(),
            first.kind,
            first.file,
            first.message,
            list.path.display(),
        ));
    }
    Verdict {
        list: list.name.clone(),
        blocking,
        notes,
    }
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
    fn without_a_list_only_the_change_itself_is_judged_and_a_note_says_so() {
        let ev = json!({"hook_event_name": "PreToolUse", "tool_name": "TaskUpdate",
                        "tool_input": {"taskId": "4", "addBlockedBy": ["4"]}});
        assert_eq!(kinds(ev), vec![FindingKind::Cycle]);
        let ev = json!({"hook_event_name": "PreToolUse", "tool_name": "TaskUpdate",
                        "tool_input": {"taskId": "2", "status": "done"}});
        assert_eq!(kinds(ev), vec![FindingKind::UnknownStatus]);
        let ev = json!({"hook_event_name": "PreToolUse", "tool_name": "TaskCreate",
                        "tool_input": {"subject": "", "description": "d"}});
        assert_eq!(kinds(ev), vec![FindingKind::Schema]);
        let ev = json!({"hook_event_name": "PreToolUse", "tool_name": "TaskUpdate",
                        "tool_input": {"taskId": "2", "status": "deleted", "addBlocks": ["9"]}});
        let v = judge(ev.to_string().as_bytes(), &HookContext::default()).unwrap();
        assert!(v.blocking.is_empty());
        assert_eq!(v.notes.len(), 1);
        assert!(
            v.notes[0].contains("neither CLAUDE_CONFIG_DIR nor HOME"),
            "{v:?}"
        );
    }

    #[test]
    fn events_without_tasks_pass_in_silence() {
        for ev in [
            json!({"hook_event_name": "PreToolUse", "tool_name": "Bash",
                   "tool_input": {"command": "ls"}}),
            json!({"hook_event_name": "Stop"}),
        ] {
            let v = judge(ev.to_string().as_bytes(), &HookContext::default()).unwrap();
            assert!(v.blocking.is_empty() && v.notes.is_empty(), "{v:?}");
        }
    }

    #[test]
    fn input_that_is_not_json_or_not_tasks_is_an_error() {
        let ctx = HookContext::default();
        assert!(matches!(judge(b"{", &ctx), Err(HookError::Json(_))));
        assert!(matches!(judge(b"3", &ctx), Err(HookError::Shape(_))));
    }
}
