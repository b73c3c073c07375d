//! The adapter protocol (SPEC §2): requests, responses and error kinds, one JSON object per
//! line. Both sides live here: the reference store decodes requests and encodes responses;
//! the harness encodes requests and decodes (and judges) what a target answers.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

pub use crate::layout::Layout;
use crate::task::{FieldError, ListName, NewTask, Patch, Strictness, Task, TaskId, type_name};

/// The protocol version this crate speaks. Version 2 added the optional parts of the
/// contract a target declares in `hello`'s `features` ([`Feature`]); a version 1 `hello`
/// is still read, as declaring every part version 2 added ([`Feature::ADDED_IN_2`]), which
/// is what version 1 assumed of every target.
pub const PROTOCOL_VERSION: u64 = 2;

/// The oldest protocol version a target may answer `hello` with.
pub const OLDEST_PROTOCOL_VERSION: u64 = 1;

word_enum! {
    /// The kinds of failure a target may answer (SPEC §2).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
    pub enum ErrorKind, unknown: |s| format!("unknown error kind {s:?}"), {
        NotFound => "not_found",
        Invalid => "invalid",
        Cycle => "cycle",
        Dangling => "dangling",
        Blocked => "blocked",
        Transition => "transition",
        Conflict => "conflict",
        Corrupt => "corrupt",
        Unsupported => "unsupported",
        Io => "io",
    }
}

/// A failed request: its kind and a message for people.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind}: {message}")]
pub struct Failure {
    pub kind: ErrorKind,
    pub message: String,
}

impl Failure {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Failure {
        Failure {
            kind,
            message: message.into(),
        }
    }
}

impl From<FieldError> for Failure {
    fn from(e: FieldError) -> Failure {
        Failure::new(ErrorKind::Invalid, e.to_string())
    }
}

word_enum! {
    /// The operations of SPEC §2.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
    pub enum Op, unknown: |s| format!(
        "unknown op {s:?}; expected one of hello, create, get, update, delete, list, claim"
    ), {
        Hello => "hello",
        Create => "create",
        Get => "get",
        Update => "update",
        Delete => "delete",
        List => "list",
        Claim => "claim",
    }
}

impl Op {
    /// The optional feature an operation needs, if any (`edges` is decided per request).
    pub fn feature(self) -> Option<Feature> {
        match self {
            Op::Delete => Some(Feature::Delete),
            Op::Claim => Some(Feature::Claim),
            _ => None,
        }
    }
}

word_enum! {
    /// The optional parts of the contract a target declares in `hello` (docs/spec.md,
    /// "Optional parts"). A scenario that needs a part the target does not declare is not
    /// judged, and its report says so; a declared part is judged like every rule.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
    pub enum Feature, unknown: |s| format!(
        "unknown feature {s:?}; expected one of {}",
        Feature::ALL.map(Feature::as_str).join(", ")
    ), {
        /// `delete`.
        Delete => "delete",
        /// `claim`.
        Claim => "claim",
        /// Dependencies: `blocks`/`blockedBy`, added with `addBlocks`/`addBlockedBy`.
        Edges => "edges",
        /// A task's free `metadata` object.
        Metadata => "metadata",
        /// A task's `owner` (set and removed by a patch).
        Owner => "owner",
        /// A task's `activeForm`.
        ActiveForm => "active_form",
        /// Removing a dependency: `removeBlocks`/`removeBlockedBy`.
        EdgeRemoval => "edge_removal",
        /// Dependencies given in `create`'s task.
        EdgesAtCreate => "edges_at_create",
        /// Separate lists on one root (a scenario that names more than one list).
        Lists => "lists",
        /// The session's own list ([`SESSION_LIST`]): the list an agent session keeps under
        /// its own id when it is given none (Claude Code without `CLAUDE_CODE_TASK_LIST_ID`).
        /// An agent target's part, not a store's: a store's sessions are connections, which
        /// keep no list of their own.
        SessionList => "session_list",
        /// Requests that each take effect at once, also beside concurrent ones. Never named in
        /// `features`: every target has it unless its `hello` names requests it performs by
        /// reading a task and then writing it in separate steps ([`ReadModifyWrite`], an
        /// `mcp:` mapping's `read`), and a `concurrent` block with a lane that sends such a
        /// request needs it: a change one lane makes between another lane's read and write
        /// can be lost by the way the store is reached, not by the store.
        Atomic => "atomic",
        /// The started status `in_progress` between `pending` and `completed`. Never named in
        /// `features`: every target has it unless its `hello`'s [`STATUSES`] entry leaves it
        /// out (a server whose tasks are only done or not done, read through an `mcp:`
        /// mapping's `status_from`). A create or update that gives `status: in_progress`
        /// needs it.
        InProgress => "in_progress",
        /// Dependencies a target accepts or refuses but never shows: no answer carries a
        /// task's `blocks`/`blockedBy` (an MCP server whose tools record dependencies and
        /// return none). Declared beside `edges`: the edge rules (S5, S6, S7) are judged on
        /// the answers alone (accepted or refused), and the steps that read edges back are
        /// not judged.
        HiddenEdges => "hidden_edges",
    }
}

/// How a request names the session's own list ([`Feature::SessionList`]): `"list":
/// "@session"`. The `@` keeps it apart from every list name a store accepts (S13).
pub const SESSION_LIST: &str = "@session";

impl Feature {
    /// The parts protocol 2 added: a protocol 1 `hello` declares them all.
    pub const ADDED_IN_2: [Feature; 6] = [
        Feature::Metadata,
        Feature::Owner,
        Feature::ActiveForm,
        Feature::EdgeRemoval,
        Feature::EdgesAtCreate,
        Feature::Lists,
    ];

    /// The parts a task store can have: every one but [`Feature::SessionList`], which only an
    /// agent session has, and [`Feature::Atomic`], which no target declares (a target has it
    /// unless its hello says otherwise). The built-in stores declare these.
    pub const OF_A_STORE: [Feature; 9] = [
        Feature::Delete,
        Feature::Claim,
        Feature::Edges,
        Feature::Metadata,
        Feature::Owner,
        Feature::ActiveForm,
        Feature::EdgeRemoval,
        Feature::EdgesAtCreate,
        Feature::Lists,
    ];
}

/// The `mapping` entry of `hello` that names the requests a target performs by reading a
/// task and then writing it in separate steps ([`ReadModifyWrite`], written by
/// [`ReadModifyWrite::write_all`]); the harness reads it ([`Hello::read_modify_write`]).
pub const READ_MODIFY_WRITE: &str = "read_modify_write";

/// The `mapping` entry of `hello` that names the request paths a target carries out in tool
/// calls of their own (one call for each item of a list): a request that has more than one of
/// them, or a list of more than one item there, is several calls, and a refusal of a later
/// call leaves the earlier ones done. So all-or-nothing (S11) is the adapter's to break
/// there, not the store's, and the fuzzer sends such parts one request each. Written as
/// [`READ_MODIFY_WRITE`] is (`update with patch.addBlocks; update with patch.status`), read
/// with [`Hello::calls_apart`].
pub const CALLS_APART: &str = "calls_apart";

/// The `mapping` entry of `hello` that names the statuses a target's tasks can have, comma
/// separated, when it has fewer than the three (`"pending, completed"`); the harness reads
/// it for [`Feature::InProgress`] ([`Hello::has`]).
pub const STATUSES: &str = "statuses";

/// The `mapping` entry of `hello` by which a target says, for people, why it is not atomic
/// (`"no: WHY"`).
pub const ATOMIC: &str = "atomic";

/// Requests a target performs by reading a task and then writing it in separate steps (an
/// `mcp:` mapping's `read`): those of `op` that have every path of `paths` (dotted request
/// paths, `patch.addBlocks`; none: every request of `op`). Written `update with
/// patch.addBlocks` (`and` between paths), several joined by `; `.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ReadModifyWrite {
    pub op: Op,
    pub paths: Vec<String>,
}

impl ReadModifyWrite {
    /// Whether `request` (as sent, or a scenario's template of it) is one of these: its op,
    /// with a value (not null) at every path.
    pub fn matches(&self, request: &Value) -> bool {
        request.get("op").and_then(Value::as_str) == Some(self.op.as_str())
            && self.paths.iter().all(|p| {
                p.split('.')
                    .try_fold(request, |v, k| v.get(k))
                    .is_some_and(|v| !v.is_null())
            })
    }

    /// Reads a `read_modify_write` entry.
    pub fn parse_all(s: &str) -> Result<Vec<ReadModifyWrite>, String> {
        s.split(';')
            .map(str::trim)
            .filter(|one| !one.is_empty())
            .map(|one| {
                let (op, paths) = match one.split_once(" with ") {
                    Some((op, paths)) => (op, paths.split(" and ").map(str::trim).collect()),
                    None => (one, Vec::new()),
                };
                let op: Op = op.trim().parse()?;
                if paths.iter().any(|p: &&str| p.is_empty() || p.contains(' ')) {
                    return Err(format!("{one:?}: expected OP or OP with PATH[ and PATH]"));
                }
                Ok(ReadModifyWrite {
                    op,
                    paths: paths.into_iter().map(str::to_string).collect(),
                })
            })
            .collect()
    }

    /// Writes a `read_modify_write` entry.
    pub fn write_all(all: &[ReadModifyWrite]) -> String {
        all.iter()
            .map(ReadModifyWrite::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    }
}

impl std::fmt::Display for ReadModifyWrite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.op.as_str())?;
        if !self.paths.is_empty() {
            write!(f, " with {}", self.paths.join(" and "))?;
        }
        Ok(())
    }
}

/// The keys of a create's task or an update's patch that need optional parts, with the parts
/// each needs: what [`request_features`] reads, and what the fuzzer takes out of a request for
/// a target without them.
pub const FIELD_PARTS: [(&str, &[Feature]); 9] = [
    ("metadata", &[Feature::Metadata]),
    ("owner", &[Feature::Owner]),
    ("activeForm", &[Feature::ActiveForm]),
    ("blocks", &[Feature::Edges, Feature::EdgesAtCreate]),
    ("blockedBy", &[Feature::Edges, Feature::EdgesAtCreate]),
    ("addBlocks", &[Feature::Edges]),
    ("addBlockedBy", &[Feature::Edges]),
    ("removeBlocks", &[Feature::Edges, Feature::EdgeRemoval]),
    ("removeBlockedBy", &[Feature::Edges, Feature::EdgeRemoval]),
];

/// The optional parts a request body uses, read from the JSON as sent (a malformed request
/// uses the parts its fields name: a target without them cannot be told to refuse them
/// for the right reason): `delete` and `claim` by its op; `edges`, `edges_at_create`,
/// `edge_removal`, `metadata`, `owner` and `active_form` by the fields of a `create` task
/// or an `update` patch (a `null` that removes the field too); `session_list` by a `list`
/// that is [`SESSION_LIST`]. Separate lists are a property of a whole scenario, not of one
/// request.
pub fn request_features(request: &Value) -> BTreeSet<Feature> {
    let mut out = BTreeSet::new();
    if request.get("list").and_then(Value::as_str) == Some(SESSION_LIST) {
        out.insert(Feature::SessionList);
    }
    let op = request.get("op").and_then(Value::as_str);
    match op {
        Some("delete") => {
            out.insert(Feature::Delete);
        }
        Some("claim") => {
            out.insert(Feature::Claim);
        }
        _ => {}
    }
    let body = match op {
        Some("create") => request.get("task"),
        Some("update") => request.get("patch"),
        _ => None,
    };
    let Some(Value::Object(body)) = body else {
        return out;
    };

    for (field, parts) in FIELD_PARTS {
        if body.contains_key(field) {
            out.extend(parts.iter().copied());
        }
    }
    // The one part a value decides: the status every target has but one that lacks it.
    if body.get("status").and_then(Value::as_str) == Some("in_progress") {
        out.insert(Feature::InProgress);
    }
    out
}

/// What one store operation gives: its result, or the failure the protocol answers for it.
pub type OpResult<T> = Result<T, Failure>;

/// What a target says about itself in answer to `hello`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello {
    pub protocol: u64,
    pub name: String,
    pub version: String,
    pub layout: Layout,
    pub features: BTreeSet<Feature>,
    /// How the adapter maps requests onto the store's own operations, where it is not
    /// one to one (a request's op or field → what the store is asked instead, or
    /// `unsupported`): optional, for people reading reports. The harness reads three
    /// entries, [`READ_MODIFY_WRITE`] ([`Hello::read_modify_write`]), [`CALLS_APART`]
    /// ([`Hello::calls_apart`]) and [`STATUSES`], and judges nothing by the rest.
    pub mapping: BTreeMap<String, String>,
}

impl Hello {
    /// Whether the target has the part: declares it in `features`; for [`Feature::Atomic`],
    /// names no request it performs by read-modify-write; for [`Feature::InProgress`], names
    /// no [`STATUSES`] or names `in_progress` among them.
    pub fn has(&self, f: Feature) -> bool {
        match f {
            Feature::Atomic => self.read_modify_write().is_empty(),
            Feature::InProgress => self
                .mapping
                .get(STATUSES)
                .is_none_or(|s| s.split(',').any(|w| w.trim() == "in_progress")),
            f => self.features.contains(&f),
        }
    }

    /// The requests the target performs by reading a task and then writing it in separate
    /// steps, as its `mapping` names them ([`READ_MODIFY_WRITE`]); none for most targets.
    /// (A malformed entry is refused when the hello is read: here it names none.)
    pub fn read_modify_write(&self) -> Vec<ReadModifyWrite> {
        self.mapping
            .get(READ_MODIFY_WRITE)
            .and_then(|s| ReadModifyWrite::parse_all(s).ok())
            .unwrap_or_default()
    }

    /// The request paths the target carries out in calls of their own, as its `mapping` names
    /// them ([`CALLS_APART`]), each an op with one path; none for most targets.
    pub fn calls_apart(&self) -> Vec<ReadModifyWrite> {
        self.mapping
            .get(CALLS_APART)
            .and_then(|s| ReadModifyWrite::parse_all(s).ok())
            .unwrap_or_default()
    }

    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "ok": true,
            "protocol": self.protocol,
            "name": self.name,
            "version": self.version,
            "layout": self.layout.as_str(),
            // A protocol 1 hello declared the parts protocol 2 added by not naming them.
            "features": self
                .features
                .iter()
                .filter(|f| self.protocol >= 2 || !Feature::ADDED_IN_2.contains(f))
                .map(|f| f.as_str())
                .collect::<Vec<_>>(),
        });
        if !self.mapping.is_empty() {
            v["mapping"] = json!(self.mapping);
        }
        v
    }

    /// Decodes a `hello` answer. Unknown features are an error: a target that claims
    /// something the harness cannot test should hear so.
    pub fn from_json(v: &Value) -> Result<Hello, String> {
        let obj = v
            .as_object()
            .ok_or_else(|| format!("expected an object, got {}", type_name(v)))?;
        if obj.get("ok") != Some(&Value::Bool(true)) {
            return Err(format!("hello was not answered with ok:true: {v}"));
        }
        let protocol = obj
            .get("protocol")
            .and_then(Value::as_u64)
            .ok_or("hello: `protocol` must be a number")?;
        if !(OLDEST_PROTOCOL_VERSION..=PROTOCOL_VERSION).contains(&protocol) {
            return Err(format!(
                "hello: protocol {protocol} is not supported (this harness speaks {OLDEST_PROTOCOL_VERSION} to {PROTOCOL_VERSION})"
            ));
        }
        let string = |k: &str| -> Result<String, String> {
            obj.get(k)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| format!("hello: `{k}` must be a string"))
        };
        let layout = string("layout")?
            .parse()
            .map_err(|e| format!("hello: {e}"))?;
        let mut features: BTreeSet<Feature> = match obj.get("features") {
            Some(Value::Array(items)) => items
                .iter()
                .map(|f| {
                    f.as_str()
                        .ok_or_else(|| "hello: `features` must be strings".to_string())?
                        .parse::<Feature>()
                        .map_err(|e| format!("hello: {e}"))
                })
                .collect::<Result<_, _>>()?,
            _ => return Err("hello: `features` must be an array".into()),
        };
        if features.contains(&Feature::Atomic) {
            return Err(format!(
                "hello: feature atomic is not declared: a target has it unless its mapping's \
                 `{READ_MODIFY_WRITE}` names requests it performs by read-modify-write"
            ));
        }
        if features.contains(&Feature::HiddenEdges) && !features.contains(&Feature::Edges) {
            return Err(
                "hello: feature hidden_edges says that edges are accepted but never shown: it \
                 needs edges"
                    .into(),
            );
        }
        if features.contains(&Feature::InProgress) {
            return Err(format!(
                "hello: feature in_progress is not declared: a target has it unless its \
                 mapping's `{STATUSES}` leaves it out"
            ));
        }
        if protocol == 1 {
            if let Some(f) = features.iter().find(|f| Feature::ADDED_IN_2.contains(f)) {
                return Err(format!(
                    "hello: feature {f} is protocol 2's; a target that declares it answers `\"protocol\": 2`"
                ));
            }
            features.extend(Feature::ADDED_IN_2);
        }
        let mapping = match obj.get("mapping") {
            None | Some(Value::Null) => BTreeMap::new(),
            Some(Value::Object(m)) => m
                .iter()
                .map(|(k, v)| match v.as_str() {
                    Some(s) => Ok((k.clone(), s.to_string())),
                    None => Err(format!("hello: `mapping.{k}` must be a string")),
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err("hello: `mapping` must be an object of strings".into()),
        };
        for key in [READ_MODIFY_WRITE, CALLS_APART] {
            if let Some(entry) = mapping.get(key) {
                ReadModifyWrite::parse_all(entry)
                    .map_err(|e| format!("hello: `mapping.{key}`: {e}"))?;
            }
        }
        Ok(Hello {
            protocol,
            name: string("name")?,
            version: string("version")?,
            layout,
            features,
            mapping,
        })
    }
}

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

struct FailureJson<'a>(&'a Failure);

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_answer_is_written_as_its_to_json() {
        let mut t = Task::new(TaskId(12), "sub \u{e9}\"\n");
        t.metadata = Some(
            json!({"a": {"b": [1, "x", null]}})
                .as_object()
                .unwrap()
                .clone(),
        );
        t.extra.insert("kept".into(), json!({"n": 1.5}));
        let hello = Hello::from_json(&json!({
            "ok": true, "protocol": PROTOCOL_VERSION, "name": "n", "version": "1",
            "layout": "claude-code", "features": []
        }));
        let mut answers = vec![
            Response::Task(t.clone()),
            Response::Tasks {
                tasks: vec![t.clone(), Task::new(TaskId(13), "b")],
                corrupt: vec!["7.json".into()],
            },
            Response::Tasks {
                tasks: vec![],
                corrupt: vec![],
            },
            Response::Done,
            Response::error(ErrorKind::Conflict, "taken \u{1F600}"),
        ];
        answers.push(Response::Hello(hello.expect("a hello")));
        for r in &answers {
            let mut line = Vec::new();
            r.write_json(&mut line);
            assert_eq!(line, serde_json::to_vec(&r.to_json()).unwrap(), "{r:?}");
        }
    }

    #[test]
    fn requests_use_the_parts_their_fields_name() {
        let parts = |v: Value| {
            request_features(&v)
                .into_iter()
                .map(Feature::as_str)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            parts(json!({"op": "create", "list": "l", "task": {"subject": "a"}})),
            Vec::<&str>::new()
        );
        assert_eq!(
            parts(
                json!({"op": "create", "task": {"subject": "a", "blockedBy": ["1"], "metadata": {}, "activeForm": "x"}})
            ),
            ["edges", "metadata", "active_form", "edges_at_create"]
        );
        assert_eq!(
            parts(
                json!({"op": "update", "patch": {"owner": null, "removeBlocks": ["1"], "addBlockedBy": []}})
            ),
            ["edges", "owner", "edge_removal"]
        );
        // A claim's owner is the claim's own: the part `owner` is setting it by a patch.
        assert_eq!(
            parts(json!({"op": "claim", "id": "1", "owner": "a"})),
            ["claim"]
        );
        assert_eq!(parts(json!({"op": "delete", "id": "1"})), ["delete"]);
        // Fields outside a create's task or an update's patch name no part.
        assert_eq!(
            parts(json!({"op": "get", "patch": {"metadata": {}}})),
            Vec::<&str>::new()
        );
        // The session's own list, by any op; a list merely called "session" is a list.
        assert_eq!(
            parts(json!({"op": "list", "list": SESSION_LIST})),
            ["session_list"]
        );
        assert_eq!(
            parts(json!({"op": "delete", "list": "@session", "id": "1"})),
            ["delete", "session_list"]
        );
        assert_eq!(
            parts(json!({"op": "list", "list": "session"})),
            Vec::<&str>::new()
        );
    }

    /// A store declares every part a store can have, and never the session's own list, which
    /// only an agent session has, nor atomic, which is not declared.
    #[test]
    fn the_parts_of_a_store_are_every_part_but_the_sessions_own_list() {
        let missing: Vec<Feature> = Feature::ALL
            .into_iter()
            .filter(|f| !Feature::OF_A_STORE.contains(f))
            .collect();
        assert_eq!(
            missing,
            [
                Feature::SessionList,
                Feature::Atomic,
                Feature::InProgress,
                Feature::HiddenEdges
            ]
        );
        assert!(
            Feature::ADDED_IN_2
                .iter()
                .all(|f| Feature::OF_A_STORE.contains(f))
        );
    }

    #[test]
    fn a_protocol_1_hello_declares_every_part_protocol_2_added() {
        let v1 = json!({"ok": true, "protocol": 1, "name": "x", "version": "1",
                        "layout": "opaque", "features": ["edges"]});
        let h = Hello::from_json(&v1).unwrap();
        assert!(h.has(Feature::Edges) && h.has(Feature::Metadata) && h.has(Feature::Lists));
        assert!(!h.has(Feature::Delete) && !h.has(Feature::Claim));
        assert_eq!(
            h.to_json()["features"],
            json!(["edges"]),
            "written back as it was"
        );
        assert_eq!(Hello::from_json(&h.to_json()).unwrap(), h);
        let v2 = json!({"ok": true, "protocol": 2, "name": "x", "version": "1",
                        "layout": "opaque", "features": ["edges", "owner"]});
        let h = Hello::from_json(&v2).unwrap();
        assert_eq!(
            h.features,
            BTreeSet::from([Feature::Edges, Feature::Owner]),
            "protocol 2 declares exactly what it names"
        );
        let mixed = json!({"ok": true, "protocol": 1, "name": "x", "version": "1",
                           "layout": "opaque", "features": ["metadata"]});
        let e = Hello::from_json(&mixed).unwrap_err();
        assert!(e.contains("feature metadata is protocol 2's"), "{e}");
        let mixed = json!({"ok": true, "protocol": 1, "name": "x", "version": "1",
                           "layout": "opaque", "features": ["active_form"]});
        let e = Hello::from_json(&mixed).unwrap_err();
        assert!(e.contains("feature active_form is protocol 2's"), "{e}");
        let e = Hello::from_json(&json!({"ok": true, "protocol": 3})).unwrap_err();
        assert!(
            e.contains("protocol 3 is not supported (this harness speaks 1 to 2)"),
            "{e}"
        );
        let e = "active-form".parse::<Feature>().unwrap_err();
        assert_eq!(
            e,
            "unknown feature \"active-form\"; expected one of delete, claim, edges, metadata, \
             owner, active_form, edge_removal, edges_at_create, lists, session_list, atomic, \
             in_progress, hidden_edges"
        );
    }

    /// A target has the started status unless its hello's `statuses` leaves it out; a create
    /// or update that gives it needs it, whatever else it gives; `in_progress` is never
    /// declared.
    #[test]
    fn in_progress_unless_the_hello_names_statuses_without_it() {
        let hello = |extra: Value| {
            let mut v = json!({"ok": true, "protocol": 2, "name": "x", "version": "1",
                "layout": "opaque", "features": ["delete"]});
            v.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            Hello::from_json(&v)
        };
        assert!(hello(json!({})).unwrap().has(Feature::InProgress));
        let all = hello(json!({"mapping": {STATUSES: "pending, in_progress, completed"}}));
        assert!(all.unwrap().has(Feature::InProgress));
        let two = hello(json!({"mapping": {STATUSES: "pending, completed"}})).unwrap();
        assert!(!two.has(Feature::InProgress) && two.has(Feature::Delete));
        let e = hello(json!({"features": ["in_progress"]})).unwrap_err();
        assert!(e.contains("feature in_progress is not declared"), "{e}");
        let parts = |r: Value| {
            request_features(&r)
                .into_iter()
                .map(Feature::as_str)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            parts(json!({"op": "update", "id": "1", "patch": {"status": "in_progress"}})),
            ["in_progress"]
        );
        assert_eq!(
            parts(
                json!({"op": "create", "task": {"subject": "a", "status": "in_progress", "owner": "x"}})
            ),
            ["owner", "in_progress"]
        );
        assert!(
            parts(json!({"op": "update", "id": "1", "patch": {"status": "completed"}})).is_empty()
        );
    }

    /// A target is atomic unless its hello's mapping names requests it performs by
    /// read-modify-write; those are matched against requests (and scenario templates) by op
    /// and paths present; `atomic` is never declared.
    #[test]
    fn atomic_unless_the_hello_names_read_modify_write_requests() {
        let hello = |mapping: Value| {
            Hello::from_json(
                &json!({"ok": true, "protocol": 2, "name": "x", "version": "1",
                "layout": "opaque", "features": ["edges"], "mapping": mapping}),
            )
        };
        let plain = hello(json!({"atomic": "no: answers are read back"})).unwrap();
        assert!(plain.has(Feature::Atomic) && plain.read_modify_write().is_empty());
        let entry = "update with patch.addBlocks; create with task.blocks and task.owner; claim";
        let h = hello(json!({ READ_MODIFY_WRITE: entry })).unwrap();
        assert!(!h.has(Feature::Atomic));
        let rmw = h.read_modify_write();
        assert_eq!(ReadModifyWrite::write_all(&rmw), entry);
        let update = |patch: Value| json!({"op": "update", "id": "${a}", "patch": patch});
        let hits = |r: &Value| rmw.iter().any(|x| x.matches(r));
        assert!(hits(&update(json!({"addBlocks": ["2${i}"]}))));
        assert!(!hits(&update(json!({"addBlockedBy": ["2"]}))));
        assert!(!hits(&update(json!({"addBlocks": null}))));
        assert!(!hits(&json!({"op": "create", "task": {"blocks": ["1"]}})));
        assert!(hits(
            &json!({"op": "create", "task": {"blocks": ["1"], "owner": "o"}})
        ));
        assert!(hits(&json!({"op": "claim", "id": "1", "owner": "w"})));
        assert!(!hits(&json!({"op": "get", "id": "1"})));
        let e = hello(json!({ READ_MODIFY_WRITE: "update with" })).unwrap_err();
        assert!(e.contains("mapping.read_modify_write"), "{e}");
        let e = hello(json!({ READ_MODIFY_WRITE: "fly with patch.x" })).unwrap_err();
        assert!(e.contains("unknown op \"fly\""), "{e}");
        let declared = json!({"ok": true, "protocol": 2, "name": "x", "version": "1",
                              "layout": "opaque", "features": ["atomic"]});
        let e = Hello::from_json(&declared).unwrap_err();
        assert!(e.contains("feature atomic is not declared"), "{e}");
    }

    #[test]
    fn hello_keeps_a_stated_mapping_and_refuses_a_malformed_one() {
        let line = r#"{"ok":true,"protocol":1,"name":"x","version":"1","layout":"opaque","features":[],"mapping":{"delete":"unsupported"}}"#;
        let h = Hello::from_json(&serde_json::from_str(line).unwrap()).unwrap();
        assert_eq!(
            h.mapping.get("delete").map(String::as_str),
            Some("unsupported")
        );
        assert_eq!(Hello::from_json(&h.to_json()).unwrap(), h);
        let plain = Hello {
            mapping: BTreeMap::new(),
            ..h.clone()
        };
        assert!(
            plain.to_json().get("mapping").is_none(),
            "no mapping, no field"
        );
        let bad = line.replace(r#""unsupported""#, "3");
        let e = Hello::from_json(&serde_json::from_str(&bad).unwrap()).unwrap_err();
        assert!(e.contains("mapping.delete"), "{e}");
    }

    #[test]
    fn requests_round_trip() {
        let lines = [
            r#"{"op":"hello"}"#,
            r#"{"op":"create","list":"l","task":{"subject":"a","blockedBy":["1"]}}"#,
            r#"{"op":"get","list":"l","id":"3"}"#,
            r#"{"op":"update","list":"l","id":"3","patch":{"status":"completed","owner":null}}"#,
            r#"{"op":"delete","list":"l","id":"3"}"#,
            r#"{"op":"list","list":"l"}"#,
            r#"{"op":"claim","list":"l","id":"3","owner":"w"}"#,
        ];
        for line in lines {
            let r = Request::parse_line(line).unwrap();
            assert_eq!(Request::from_json(&r.to_json()).unwrap(), r, "{line}");
        }
    }

    #[test]
    fn bad_requests_name_the_field() {
        let cases = [
            ("not json", "request"),
            (r#"[1]"#, "request"),
            (r#"{"op":"fly"}"#, "op"),
            (r#"{"op":"get","list":"../x","id":"1"}"#, "list"),
            (r#"{"op":"get","list":"l","id":"01"}"#, "id"),
            (r#"{"op":"get","list":"l"}"#, "id"),
            (r#"{"op":"get","list":"l","id":"1","extra":1}"#, "extra"),
            (r#"{"op":"claim","list":"l","id":"1","owner":""}"#, "owner"),
            (
                r#"{"op":"update","list":"l","id":"1","patch":{"addBlocks":"2"}}"#,
                "patch.addBlocks",
            ),
        ];
        for (line, field) in cases {
            let e = Request::parse_line(line).unwrap_err();
            assert_eq!(e.field, field, "{line}: {e}");
        }
    }

    #[test]
    fn responses_round_trip() {
        let t = Task::new(TaskId(1), "a");
        let cases = [
            (Response::Task(t.clone()), Op::Get),
            (
                Response::Tasks {
                    tasks: vec![t],
                    corrupt: vec!["2.json".into()],
                },
                Op::List,
            ),
            (Response::Done, Op::Delete),
            (Response::error(ErrorKind::Cycle, "2 -> 1 -> 2"), Op::Update),
        ];
        for (r, op) in cases {
            assert_eq!(Response::from_json(&r.to_json(), op).unwrap(), r);
        }
    }

    #[test]
    fn garbage_responses_are_rejected() {
        for (v, op) in [
            (json!([]), Op::Get),
            (json!({"ok": "yes"}), Op::Get),
            (json!({"ok": true}), Op::Get),
            (json!({"ok": false, "error": {"kind": "oops"}}), Op::Get),
            (json!({"ok": true, "tasks": 3}), Op::List),
            (
                json!({"ok": true, "protocol": 3, "name": "x", "version": "1", "layout": "s07", "features": []}),
                Op::Hello,
            ),
        ] {
            assert!(Response::from_json(&v, op).is_err(), "{v} accepted");
        }
    }

    #[test]
    fn answers_are_checked_against_their_request() {
        let get = json!({"op": "get", "list": "l", "id": "1"});
        assert!(Answer::decode(&get, json!({"ok": false, "error": {"kind": "not_found"}})).is_ok());
        assert!(Answer::decode(&get, json!({"ok": true})).is_err());
        assert!(Answer::decode(&get, json!({"ok": false, "error": {"kind": "nope"}})).is_err());
        let malformed = json!({"op": "fly"});
        assert!(
            Answer::decode(
                &malformed,
                json!({"ok": false, "error": {"kind": "invalid"}})
            )
            .is_ok()
        );
    }
}
