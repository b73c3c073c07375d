//! Runs one generated sequence against a target and against the oracle, step by step,
//! comparing every answer and, at the end, every list: the *history* of one case.
//!
//! Steps are resolved to concrete requests with the oracle's view of the ids (the n-th
//! created task, a deleted one, one past the last), so the same sequence always means the
//! same requests, whatever the target answers. Each resolved step is kept twice: literally,
//! as sent, and with every created id written as a variable (`${l3}` for task 3 of list
//! `l`), which is how the scenario file shows it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::oracle::{Damage, Oracle, describe, differences};
use super::strategy::{
    Bad, Foreign, LISTS, Meta, MetaValue, PatchGen, Ref, SESSIONS, StatusGen, Step, Subject,
};
use crate::profile::Profile;
use crate::protocol::{Feature, Layout, Op, Response};
use crate::target::{Session, SessionOptions, TargetSpec};
use crate::task::{ListName, TaskId};

/// A resolved step.
#[derive(Debug, Clone)]
pub enum ResolvedStep {
    /// A request through a session: as sent, and as the scenario shows it (with variables).
    Send {
        session: usize,
        request: Value,
        shown: Value,
        /// The variable this step binds to `task.id` when the oracle says it creates a task.
        bind: Option<String>,
    },
    Restart {
        session: usize,
    },
    /// Garbage in place of a deleted task's file.
    Garbage {
        list: String,
        id: TaskId,
    },
    /// A symbolic link in place of a deleted task's file, to a valid task outside the root.
    Symlink {
        list: String,
        id: TaskId,
        outside: String,
        content: Value,
    },
    /// A live task's file rewritten by another program, with one more top-level field.
    WriteTask {
        list: String,
        id: TaskId,
        task: Value,
    },
}

/// One step of a history and what the oracle expected of it.
#[derive(Debug, Clone)]
pub struct Record {
    pub action: ResolvedStep,
    pub expected: Option<Response>,
    /// True for the listings added after the last generated step.
    pub final_check: bool,
}

/// Where and how the target and the oracle parted.
#[derive(Debug, Clone)]
pub struct Divergence {
    /// Index into the history.
    pub at: usize,
    pub expected: Response,
    /// The target's answer, or how it broke the protocol.
    pub actual: Result<Response, String>,
    pub differences: Vec<String>,
}

impl Divergence {
    pub fn summary(&self) -> String {
        match &self.actual {
            Ok(_) => self.differences.join("; "),
            Err(e) => format!("target error: {e} (expected {})", describe(&self.expected)),
        }
    }
}

/// One case's history, cut after the divergence if there was one.
#[derive(Debug, Clone)]
pub struct History {
    pub records: Vec<Record>,
    pub divergence: Option<Divergence>,
}

/// What the fuzzer runs against.
#[derive(Debug, Clone)]
pub struct Setup {
    pub target: TargetSpec,
    pub profile: Profile,
    pub session_options: SessionOptions,
    /// Where the cases' sandboxes go (a fresh folder each).
    pub scratch: PathBuf,
}

/// The oracle's bookkeeping of ids, per list.
#[derive(Debug, Default, Clone)]
struct Ids {
    created: Vec<TaskId>,
}

struct Resolver<'a> {
    oracle: &'a Oracle,
    ids: &'a BTreeMap<String, Ids>,
}

impl Resolver<'_> {
    fn list_name(i: u8) -> &'static str {
        LISTS[usize::from(i) % LISTS.len()]
    }

    fn id(&self, list: &str, r: Ref) -> TaskId {
        let created = self
            .ids
            .get(list)
            .map(|i| i.created.as_slice())
            .unwrap_or(&[]);
        let top = created.iter().map(|i| i.get()).max().unwrap_or(0);
        match r {
            Ref::Created(n) if !created.is_empty() => created[usize::from(n) % created.len()],
            Ref::Created(n) => TaskId(1 + u64::from(n % 2)),
            Ref::Missing(n) => TaskId(top + 1 + u64::from(n)),
        }
    }

    /// An id as the scenario shows it: a variable when the oracle created it.
    fn shown(&self, list: &str, id: TaskId) -> Value {
        let created = self.ids.get(list).is_some_and(|i| i.created.contains(&id));
        if created {
            Value::String(format!("${{{list}{id}}}"))
        } else {
            Value::String(id.to_string())
        }
    }

    fn listname(&self, list: &str) -> ListName {
        list.parse().expect("the fuzzer's lists are valid")
    }
}

fn subject(s: &Subject) -> Value {
    match s {
        Subject::Plain(n) => Value::String(format!("task {n}")),
        Subject::Unicode => Value::String("tâche 😀 ✓".into()),
        Subject::Empty => Value::String(String::new()),
        Subject::TooLong => Value::String("x".repeat(201)),
    }
}

fn meta(m: &Meta) -> Value {
    let mut o = Map::new();
    for (k, v) in m {
        let v = match v {
            None => Value::Null,
            Some(MetaValue::Int(i)) => json!(i),
            Some(MetaValue::Text(t)) => json!(t),
            Some(MetaValue::Nested(d)) => {
                let mut x = json!({"leaf": [1, "two", null]});
                for _ in 0..*d {
                    x = json!({ "in": x });
                }
                x
            }
            Some(MetaValue::Float(f)) => {
                serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number)
            }
        };
        o.insert(format!("k{k}"), v);
    }
    Value::Object(o)
}

/// Builds a request twice, literally and as shown, from one description that uses `id` for
/// every task id.
fn both(
    build: impl Fn(&dyn Fn(TaskId) -> Value) -> Value,
    r: &Resolver,
    list: &str,
) -> (Value, Value) {
    let literal = build(&|id| Value::String(id.to_string()));
    let shown = build(&|id| r.shown(list, id));
    (literal, shown)
}

fn resolve(step: &Step, r: &Resolver) -> Option<ResolvedStep> {
    let ids = |list: &str, refs: &[Ref], f: &dyn Fn(TaskId) -> Value| -> Value {
        Value::Array(refs.iter().map(|x| f(r.id(list, *x))).collect())
    };
    let send = |s: u8, (request, shown): (Value, Value)| ResolvedStep::Send {
        session: usize::from(s) % SESSIONS.len(),
        request,
        shown,
        bind: None,
    };
    Some(match step {
        Step::Create {
            s,
            list,
            subject: subj,
            blocked_by,
            blocks,
            owner,
            metadata,
        } => {
            let l = Resolver::list_name(*list);
            let pair = both(
                |f| {
                    let mut t = Map::new();
                    t.insert("subject".into(), subject(subj));
                    if !blocked_by.is_empty() {
                        t.insert("blockedBy".into(), ids(l, blocked_by, f));
                    }
                    if !blocks.is_empty() {
                        t.insert("blocks".into(), ids(l, blocks, f));
                    }
                    if let Some(o) = owner {
                        t.insert("owner".into(), json!(format!("agent-{o}")));
                    }
                    if let Some(m) = metadata {
                        t.insert("metadata".into(), meta(m));
                    }
                    json!({"op": "create", "list": l, "task": t})
                },
                r,
                l,
            );
            send(*s, pair)
        }
        Step::Get { s, list, task } => {
            let l = Resolver::list_name(*list);
            let id = r.id(l, *task);
            send(
                *s,
                both(|f| json!({"op": "get", "list": l, "id": f(id)}), r, l),
            )
        }
        Step::Delete { s, list, task } => {
            let l = Resolver::list_name(*list);
            let id = r.id(l, *task);
            send(
                *s,
                both(|f| json!({"op": "delete", "list": l, "id": f(id)}), r, l),
            )
        }
        Step::List { s, list } => {
            let l = Resolver::list_name(*list);
            send(*s, both(|_| json!({"op": "list", "list": l}), r, l))
        }
        Step::Claim {
            s,
            list,
            task,
            owner,
        } => {
            let l = Resolver::list_name(*list);
            let id = r.id(l, *task);
            send(
                *s,
                both(
                    |f| json!({"op": "claim", "list": l, "id": f(id), "owner": format!("agent-{owner}")}),
                    r,
                    l,
                ),
            )
        }
        Step::Update {
            s,
            list,
            task,
            patch,
        } => {
            let l = Resolver::list_name(*list);
            let id = r.id(l, *task);
            send(
                *s,
                both(
                    |f| json!({"op": "update", "list": l, "id": f(id), "patch": patch_json(patch, l, r, f)}),
                    r,
                    l,
                ),
            )
        }
        Step::Bad { s, bad } => {
            let v = match bad {
                Bad::ListName(n) => {
                    let name = ["../escaped", "a/b", "..", ".hidden"][usize::from(*n) % 4];
                    json!({"op": "create", "list": name, "task": {"subject": "escape"}})
                }
                Bad::Id(n) => {
                    let id = ["01", "-1", "x"][usize::from(*n) % 3];
                    json!({"op": "get", "list": "l", "id": id})
                }
                Bad::UnknownField => json!({"op": "list", "list": "l", "filter": "all"}),
                Bad::SubjectType => json!({"op": "create", "list": "l", "task": {"subject": 7}}),
                Bad::NullStatus => {
                    json!({"op": "update", "list": "l", "id": "1", "patch": {"status": null}})
                }
                Bad::EdgeType => {
                    json!({"op": "create", "list": "l", "task": {"subject": "e", "blockedBy": "1"}})
                }
            };
            send(*s, (v.clone(), v))
        }
        Step::Restart { s } => ResolvedStep::Restart {
            session: usize::from(*s) % SESSIONS.len(),
        },
        Step::Foreign { list, task, what } => {
            let l = Resolver::list_name(*list);
            let name = r.listname(l);
            let live = r.oracle.live(&name);
            let n = match task {
                Ref::Created(n) | Ref::Missing(n) => usize::from(*n),
            };
            match what {
                Foreign::Garbage | Foreign::Symlink => {
                    let created = r.ids.get(l).map(|i| i.created.clone()).unwrap_or_default();
                    let gone: Vec<TaskId> = created
                        .into_iter()
                        .filter(|i| !live.contains(i))
                        .filter(|i| !r.oracle.corrupt.contains_key(&(name.clone(), *i)))
                        .collect();
                    if gone.is_empty() {
                        return None;
                    }
                    let id = gone[n % gone.len()];
                    if *what == Foreign::Garbage {
                        ResolvedStep::Garbage { list: l.into(), id }
                    } else {
                        ResolvedStep::Symlink {
                            list: l.into(),
                            id,
                            outside: format!("task-{l}-{id}.json"),
                            content: json!({"id": id.to_string(), "subject": "outside the root",
                                "description": "", "status": "pending", "blocks": [], "blockedBy": []}),
                        }
                    }
                }
                Foreign::ExtraField => {
                    let live: Vec<TaskId> = live.into_iter().collect();
                    if live.is_empty() {
                        return None;
                    }
                    let id = live[n % live.len()];
                    let mut t = r.oracle.task(&name, id).expect("live task").to_json();
                    t["x-foreign"] = json!({"written by": "another program", "n": n});
                    ResolvedStep::WriteTask {
                        list: l.into(),
                        id,
                        task: t,
                    }
                }
            }
        }
    })
}

fn patch_json(p: &PatchGen, l: &str, r: &Resolver, f: &dyn Fn(TaskId) -> Value) -> Value {
    let mut m = Map::new();
    if let Some(s) = &p.subject {
        m.insert("subject".into(), subject(s));
    }
    if let Some(d) = p.description {
        m.insert("description".into(), json!(format!("about {d}")));
    }
    if let Some(s) = p.status {
        let s = match s {
            StatusGen::Pending => "pending",
            StatusGen::InProgress => "in_progress",
            StatusGen::Completed => "completed",
            StatusGen::Bogus => "done",
        };
        m.insert("status".into(), json!(s));
    }
    if let Some(o) = p.owner {
        m.insert(
            "owner".into(),
            o.map_or(Value::Null, |o| json!(format!("agent-{o}"))),
        );
    }
    if let Some(a) = p.active_form {
        m.insert(
            "activeForm".into(),
            a.map_or(Value::Null, |a| json!(format!("doing {a}"))),
        );
    }
    if let Some(md) = &p.metadata {
        m.insert("metadata".into(), md.as_ref().map_or(Value::Null, meta));
    }
    for (key, refs) in [
        ("addBlockedBy", &p.add_blocked_by),
        ("addBlocks", &p.add_blocks),
        ("removeBlockedBy", &p.remove_blocked_by),
        ("removeBlocks", &p.remove_blocks),
    ] {
        if !refs.is_empty() {
            m.insert(
                key.into(),
                Value::Array(refs.iter().map(|x| f(r.id(l, *x))).collect()),
            );
        }
    }
    Value::Object(m)
}

/// The op a request claims to be, for decoding its answer (an unknown op answers `invalid`,
/// which decodes whatever the op).
fn op_of(request: &Value) -> Op {
    request
        .get("op")
        .and_then(Value::as_str)
        .and_then(|s| s.parse().ok())
        .unwrap_or(Op::Get)
}

/// The sessions of one case, opened on first use.
struct Sessions<'a> {
    setup: &'a Setup,
    root: &'a Path,
    open: BTreeMap<usize, Box<dyn Session>>,
}

impl Sessions<'_> {
    fn get(&mut self, i: usize) -> Result<&mut Box<dyn Session>, String> {
        if !self.open.contains_key(&i) {
            let s = self
                .setup
                .target
                .open(self.root, self.setup.session_options)
                .map_err(|e| e.to_string())?;
            self.open.insert(i, s);
        }
        Ok(self.open.get_mut(&i).expect("just opened"))
    }
}

/// Why a case could not be run at all (a divergence, a target that breaks mid-case
/// included, is a [`History`], not an error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CaseError {
    /// The case's first session could not be opened: no verdict is possible.
    #[error("failed to start the target: {0}")]
    Start(String),
    /// The harness itself failed (a sandbox that cannot be made or written).
    #[error("{0}")]
    Harness(String),
}

impl From<String> for CaseError {
    fn from(message: String) -> CaseError {
        CaseError::Harness(message)
    }
}

/// Runs one case in a fresh sandbox under `setup.scratch`.
pub fn run_case(setup: &Setup, steps: &[Step]) -> Result<History, CaseError> {
    let sandbox = tempfile::Builder::new()
        .prefix("case-")
        .tempdir_in(&setup.scratch)
        .map_err(|e| CaseError::Harness(format!("failed to make a sandbox: {e}")))?;
    let root = sandbox.path().join("root");
    let outside = sandbox.path().join("outside");
    for d in [&root, &outside] {
        std::fs::create_dir_all(d)
            .map_err(|e| CaseError::Harness(format!("failed to make {}: {e}", d.display())))?;
    }
    let mut oracle = Oracle::new(setup.profile).ok_or_else(|| {
        CaseError::Harness(format!(
            "profile {} has no model to fuzz against",
            setup.profile
        ))
    })?;
    let mut ids: BTreeMap<String, Ids> = BTreeMap::new();
    let mut sessions = Sessions {
        setup,
        root: &root,
        open: BTreeMap::new(),
    };
    // The first session opens now: its hello says which features and files there are.
    let hello = sessions.get(0).map_err(CaseError::Start)?.hello().clone();
    let mut records: Vec<Record> = Vec::new();
    let mut touched: BTreeSet<&'static str> = BTreeSet::new();

    let mut actions: Vec<(ResolvedStep, bool)> = Vec::new();
    let mut step_iter = steps.iter();
    let mut finals_added = false;
    loop {
        let (action, final_check) = if let Some((a, f)) = actions.pop() {
            (a, f)
        } else if let Some(step) = step_iter.next() {
            let r = Resolver {
                oracle: &oracle,
                ids: &ids,
            };
            match resolve(step, &r) {
                Some(a) => {
                    if let Step::Create { list, .. }
                    | Step::Get { list, .. }
                    | Step::Update { list, .. }
                    | Step::Delete { list, .. }
                    | Step::List { list, .. }
                    | Step::Claim { list, .. } = step
                    {
                        touched.insert(Resolver::list_name(*list));
                    }
                    (a, false)
                }
                None => continue,
            }
        } else if !finals_added {
            finals_added = true;
            // The final state: every list the sequence touched, through the main session.
            for l in touched.iter().rev() {
                let v = json!({"op": "list", "list": l});
                actions.push((
                    ResolvedStep::Send {
                        session: 0,
                        request: v.clone(),
                        shown: v,
                        bind: None,
                    },
                    true,
                ));
            }
            continue;
        } else {
            break;
        };
        let mut action = action;
        match &mut action {
            ResolvedStep::Send {
                session,
                request,
                bind,
                ..
            } => {
                // A step that needs a feature the target lacks is skipped, not failed (§2).
                if needed_features(request).any(|f| !hello.has(f)) {
                    continue;
                }
                let expected = oracle.handle_value(request);
                if let (Response::Task(t), Some("create")) =
                    (&expected, request.get("op").and_then(Value::as_str))
                {
                    let l = request["list"].as_str().unwrap_or_default().to_string();
                    ids.entry(l.clone()).or_default().created.push(t.id);
                    *bind = Some(format!("{l}{}", t.id));
                }
                let actual = sessions
                    .get(*session)
                    .and_then(|s| s.call(request).map_err(|e| e.to_string()))
                    .and_then(|v| Response::from_json(&v, op_of(request)));
                let divergence = match &actual {
                    Err(e) => Some(Divergence {
                        at: records.len(),
                        expected: expected.clone(),
                        actual: Err(e.clone()),
                        differences: vec![format!("target error: {e}")],
                    }),
                    Ok(a) => {
                        let d = differences(&expected, a);
                        (!d.is_empty()).then(|| Divergence {
                            at: records.len(),
                            expected: expected.clone(),
                            actual: Ok(a.clone()),
                            differences: d,
                        })
                    }
                };
                records.push(Record {
                    action: action.clone(),
                    expected: Some(expected),
                    final_check,
                });
                if divergence.is_some() {
                    return Ok(History {
                        records,
                        divergence,
                    });
                }
            }
            ResolvedStep::Restart { session } => {
                let session = *session;
                // Only a session that is open can be restarted; otherwise nothing happens.
                let Some(mut s) = sessions.open.remove(&session) else {
                    continue;
                };
                s.kill();
                drop(s);
                records.push(Record {
                    action: action.clone(),
                    expected: None,
                    final_check,
                });
                if let Err(e) = sessions.get(session) {
                    return Ok(History {
                        records: records.clone(),
                        divergence: Some(Divergence {
                            at: records.len() - 1,
                            expected: Response::Done,
                            actual: Err(e.clone()),
                            differences: vec![format!("target error on restart: {e}")],
                        }),
                    });
                }
            }
            ResolvedStep::Garbage { list, id } => {
                if hello.layout != Layout::ClaudeCode {
                    continue;
                }
                let path = task_path(&root, list, *id);
                write(&path, b"{\"id\": \"")?;
                oracle
                    .corrupt
                    .insert((list.parse().expect("valid"), *id), Damage::Garbage);
                records.push(Record {
                    action,
                    expected: None,
                    final_check,
                });
            }
            ResolvedStep::Symlink {
                list,
                id,
                outside: name,
                content,
            } => {
                if hello.layout != Layout::ClaudeCode {
                    continue;
                }
                let target = outside.join(&*name);
                write(&target, content.to_string().as_bytes())?;
                let path = task_path(&root, list, *id);
                let _ = std::fs::remove_file(&path);
                // A store that keeps its files elsewhere (a mutant, an opaque-minded store
                // behind a claude-code hello) may have no folder for the list.
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent).map_err(|e| {
                        CaseError::Harness(format!("failed to make {}: {e}", parent.display()))
                    })?;
                }
                std::os::unix::fs::symlink(&target, &path)
                    .map_err(|e| format!("failed to link {}: {e}", path.display()))
                    .map_err(CaseError::Harness)?;
                oracle
                    .corrupt
                    .insert((list.parse().expect("valid"), *id), Damage::Symlink);
                records.push(Record {
                    action,
                    expected: None,
                    final_check,
                });
            }
            ResolvedStep::WriteTask { list, id, task } => {
                if hello.layout != Layout::ClaudeCode {
                    continue;
                }
                let mut bytes = serde_json::to_vec_pretty(task).expect("values serialize");
                bytes.push(b'\n');
                write(&task_path(&root, list, *id), &bytes)?;
                let extra: Map<String, Value> = task
                    .as_object()
                    .expect("object")
                    .iter()
                    .filter(|(k, _)| !crate::task::TASK_FIELDS.contains(&k.as_str()))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                oracle
                    .extras
                    .insert((list.parse().expect("valid"), *id), extra);
                records.push(Record {
                    action,
                    expected: None,
                    final_check,
                });
            }
        }
    }
    for (_, mut s) in std::mem::take(&mut sessions.open) {
        let _ = s.close();
    }
    Ok(History {
        records,
        divergence: None,
    })
}

/// The optional features a request needs: `delete`, `claim`, and `edges` for any edge field.
fn needed_features(request: &Value) -> impl Iterator<Item = Feature> {
    let op = request.get("op").and_then(Value::as_str);
    let has = |parent: &str, keys: &[&str]| {
        request
            .get(parent)
            .and_then(Value::as_object)
            .is_some_and(|o| keys.iter().any(|k| o.contains_key(*k)))
    };
    let edges = has("task", &["blockedBy", "blocks"])
        || has(
            "patch",
            &[
                "addBlockedBy",
                "addBlocks",
                "removeBlockedBy",
                "removeBlocks",
            ],
        );
    [
        (op == Some("delete")).then_some(Feature::Delete),
        (op == Some("claim")).then_some(Feature::Claim),
        edges.then_some(Feature::Edges),
    ]
    .into_iter()
    .flatten()
}

fn task_path(root: &Path, list: &str, id: TaskId) -> PathBuf {
    root.join(list).join(
        Layout::ClaudeCode
            .file_name(id)
            .expect("claude-code names files"),
    )
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), String> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("failed to make {}: {e}", parent.display()))?;
    }
    std::fs::write(path, bytes).map_err(|e| format!("failed to write {}: {e}", path.display()))
}
