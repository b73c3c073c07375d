//! What a target says about itself: the operations, the optional parts of the contract it
//! declares (`features`), and its answer to `hello`.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use crate::layout::Layout;
use crate::task::type_name;

use super::*;

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
        /// Agent teams: a request's [`MEMBER`] names the teammate that sends it, spawned by
        /// the session's lead (Claude Code with agent teams on, in its terminal UI). An agent
        /// target's part, as [`Feature::SessionList`] is.
        Team => "team",
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

/// The request field that names the member of an agent team that sends the request
/// ([`Feature::Team`]): `"member": "w1"`. Without it the session's lead sends it.
pub const MEMBER: &str = "member";

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

    /// The parts a task store can have: every one but [`Feature::SessionList`] and
    /// [`Feature::Team`], which only an agent session has, and [`Feature::Atomic`], which no target declares (a target has it
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
/// that is [`SESSION_LIST`]; `team` by a [`MEMBER`]. Separate lists are a property of a whole scenario, not of one
/// request.
pub fn request_features(request: &Value) -> BTreeSet<Feature> {
    let mut out = BTreeSet::new();
    if request.get("list").and_then(Value::as_str) == Some(SESSION_LIST) {
        out.insert(Feature::SessionList);
    }
    if request.get(MEMBER).is_some() {
        out.insert(Feature::Team);
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

    /// The fields the target can set but not remove: its `mapping` states `FIELD: null` as
    /// `unsupported…` (oh-my-opencode's `activeForm: null`, which no `task_update` call
    /// expresses). A generator does not ask such a target to remove them.
    pub fn cannot_remove(&self) -> std::collections::BTreeSet<String> {
        self.mapping
            .iter()
            .filter(|(_, v)| v.starts_with("unsupported"))
            .filter_map(|(k, _)| k.strip_suffix(": null"))
            .map(str::to_string)
            .collect()
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
