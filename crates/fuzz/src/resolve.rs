//! Resolving a generated step into the requests it means: ids chosen with the oracle's view
//! of the list (the n-th created task, a deleted one, one past the last), so the same
//! sequence always means the same requests whatever the target answers. Each resolved step
//! is kept twice: literally, as sent, and with every created id written as a variable
//! (`${l3}` for task 3 of list `l`), which is how the scenario file shows it.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::oracle::FuzzOracle;
use crate::strategy::{
    Bad, EventGen, Foreign, LISTS, Meta, MetaValue, PatchGen, Ref, SESSIONS, StatusGen, Step,
    Subject,
};
use taskproof_core::protocol::Op;
use taskproof_core::task::{ListName, TaskId};

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
    /// Nothing sent for `tenths` tenths of a second; `settle` marks the settle phase after
    /// the last generated step.
    Wait {
        tenths: u16,
        settle: bool,
    },
    /// A user's event on a session; `ExitResume` is written as `exit` then `resume`.
    Event {
        session: usize,
        event: EventGen,
    },
}

/// The oracle's bookkeeping of ids, per list.
#[derive(Debug, Default, Clone)]
pub(super) struct Ids {
    pub(super) created: Vec<TaskId>,
    /// The task the sequence last named (the `id` of a request sent) or created in the list:
    /// what [`Ref::Last`] names.
    pub(super) last: Option<TaskId>,
}

pub(super) struct Resolver<'a> {
    pub(super) oracle: &'a FuzzOracle,
    pub(super) ids: &'a BTreeMap<String, Ids>,
}

impl Resolver<'_> {
    pub(super) fn list_name(i: u8) -> &'static str {
        LISTS[usize::from(i) % LISTS.len()]
    }

    pub(super) fn id(&self, list: &str, r: Ref) -> TaskId {
        let ids = self.ids.get(list);
        let created = ids.map(|i| i.created.as_slice()).unwrap_or(&[]);
        let top = created.iter().map(|i| i.get()).max().unwrap_or(0);
        // The live tasks first: a step that names a deleted task mostly learns `not_found`,
        // which a store seldom gets wrong. A deleted one is still named by `Last` right after
        // its delete, and when no task is live.
        let alive = self.oracle.live(&self.listname(list));
        let live: Vec<TaskId> = created
            .iter()
            .copied()
            .filter(|i| alive.contains(i))
            .collect();
        match r {
            Ref::Last => match ids.and_then(|i| i.last).or(created.last().copied()) {
                Some(id) => id,
                None => TaskId(1),
            },
            Ref::Created(n) if !live.is_empty() => live[usize::from(n) % live.len()],
            Ref::Created(n) if !created.is_empty() => created[usize::from(n) % created.len()],
            Ref::Created(n) => TaskId(1 + u64::from(n % 2)),
            Ref::Missing(n) => TaskId(top + 1 + u64::from(n)),
        }
    }

    /// An id as the scenario shows it: a variable when the oracle created it.
    pub(super) fn shown(&self, list: &str, id: TaskId) -> Value {
        let created = self.ids.get(list).is_some_and(|i| i.created.contains(&id));
        if created {
            Value::String(format!("${{{list}{id}}}"))
        } else {
            Value::String(id.to_string())
        }
    }

    pub(super) fn listname(&self, list: &str) -> ListName {
        list.parse().expect("the fuzzer's lists are valid")
    }
}

/// Subjects that cannot be file names as they are: a path, a parent folder, characters
/// some file systems reserve, a name Windows reserves.
const NOT_FILE_NAMES: [&str; 4] = ["a/b/../c", "..", "why? <now> | \\ \"quoted\" : *", "CON"];

fn subject(s: &Subject) -> Value {
    Value::String(match s {
        Subject::Plain(n) => format!("task {n}"),
        Subject::Unicode => "tâche 😀 ✓".into(),
        Subject::Nul => "before\u{0}after".into(),
        Subject::LongAstral => "😀".repeat(200),
        Subject::LongAccented => "é".repeat(200),
        Subject::NotAFileName(n) => NOT_FILE_NAMES[usize::from(*n) % NOT_FILE_NAMES.len()].into(),
        Subject::Empty => String::new(),
        Subject::TooLong => "x".repeat(201),
        Subject::TooLongAstral => "😀".repeat(201),
    })
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

pub(super) fn resolve(step: &Step, r: &Resolver) -> Option<ResolvedStep> {
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
                    // Ids that look like another id: a store that reads them as numbers (or
                    // trims them) finds task 1.
                    let look_alikes = ["01", "-1", "x", "1.0", "+1", " 1", "\u{ff11}", "0x1"];
                    let id = look_alikes[usize::from(*n) % look_alikes.len()];
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
        Step::Wait { tenths } => ResolvedStep::Wait {
            tenths: *tenths,
            settle: false,
        },
        Step::Event { s, event } => ResolvedStep::Event {
            session: usize::from(*s) % SESSIONS.len(),
            event: *event,
        },
        Step::Foreign { list, task, what } => {
            let l = Resolver::list_name(*list);
            let name = r.listname(l);
            let live = r.oracle.live(&name);
            let n = match task {
                Ref::Created(n) | Ref::Missing(n) => usize::from(*n),
                Ref::Last => 0,
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
pub(super) fn op_of(request: &Value) -> Op {
    request
        .get("op")
        .and_then(Value::as_str)
        .and_then(|s| s.parse().ok())
        .unwrap_or(Op::Get)
}
