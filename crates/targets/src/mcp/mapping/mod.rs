//! The mapping file of an `mcp:` target (docs/mcp-targets.md): which tools a protocol request
//! becomes, how their arguments are built from the request, and how the answers are read.
//!
//! A file is read once, strictly: an unknown or ill-typed key, a template naming something the
//! request does not have, a pattern that does not compile, or an operation neither mapped nor
//! declared `unsupported` is an error naming the file and the key, before any server starts.
//! Whether the server has the tools and arguments named is checked against its `tools/list`
//! when a session opens ([`Mapping::check_tools`]), before any request.
//!
//! Here the model, the file as checked, and its entry points ([`Mapping::load`],
//! [`Mapping::parse`]); raw.rs holds the file as written (serde's TOML shapes), check.rs turns
//! it into the model with the errors, and template.rs the templates: arguments built from a
//! request, answers read back.

mod check;
mod raw;
mod template;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use regex_lite::Regex;
use serde_json::Value;

pub use check::MappingError;
use taskproof_core::protocol::{
    ATOMIC, CALLS_APART, ErrorKind, Feature, Layout, Op, READ_MODIFY_WRITE, ReadModifyWrite,
    STATUSES,
};
use template::present;
pub use template::{Filter, Part, Template, at, is_set, lookup};

/// The operations a mapping maps (`hello` is the server's `initialize`).
pub const OPS: [Op; 6] = [
    Op::Create,
    Op::Get,
    Op::Update,
    Op::Delete,
    Op::List,
    Op::Claim,
];

/// A mapping file, read and checked.
#[derive(Debug)]
pub struct Mapping {
    pub path: PathBuf,
    pub launch: Launch,
    pub layout: Layout,
    pub features: BTreeSet<Feature>,
    /// Check each request's form with the protocol's own decoder before any tool call, and
    /// answer a malformed one `invalid` without asking the server.
    pub check_form: bool,
    /// Skip lines on the server's stdout that are not JSON (kept with its stderr for the
    /// report) instead of ending the session: MCP forbids them, but some servers log there.
    pub skip_stdout_noise: bool,
    /// Wire status word → the server's word, or a table of arguments that say it.
    pub status: BTreeMap<String, Value>,
    /// How the server reads status words: with or without case, and its further words.
    pub status_words: StatusWords,
    pub task: TaskShape,
    pub errors: ErrorRules,
    /// `[lists.create]`: each list is a container the server makes (a project, a request),
    /// made by this call on the list's first `create`; `{container}` is its id.
    pub container: Option<Call>,
    pub unsupported: BTreeSet<Op>,
    pub ops: BTreeMap<Op, OpMap>,
}

/// `[status]`'s `ignore_case` and `refuse`: how the client recognises the server's own status
/// words in a request's status outside the three, which it refuses (passed on, they would
/// mean another wire status, or move the task elsewhere).
#[derive(Debug, Default, Clone)]
pub struct StatusWords {
    /// The server reads its words without case (a wire `done` is its `Done`).
    pub ignore_case: bool,
    /// Words of the server's besides those `[status]` maps (a `Draft` that moves the task).
    pub refuse: Vec<String>,
}

impl StatusWords {
    /// Whether two words are one status word for the server.
    pub fn same(&self, a: &str, b: &str) -> bool {
        if self.ignore_case {
            a == b || a.to_lowercase() == b.to_lowercase()
        } else {
            a == b
        }
    }
}

/// How the server is started: arguments appended to the command, working directory and
/// environment, each a template over `{root}` (and `{list}` with `per_list`).
#[derive(Debug, Default)]
pub struct Launch {
    pub args: Vec<String>,
    pub cwd: Option<String>,
    pub env: BTreeMap<String, String>,
    /// One server per list, started on the list's first use (`server.per_list`).
    pub per_list: bool,
}

impl Launch {
    /// `template` with `{root}` (and `{list}`) replaced.
    pub fn fill(template: &str, root: &Path, list: Option<&str>) -> String {
        let s = template.replace("{root}", &root.to_string_lossy());
        match list {
            Some(l) => s.replace("{list}", l),
            None => s,
        }
    }
}

/// How a server's task becomes a wire task.
#[derive(Debug, Default)]
pub struct TaskShape {
    /// Wire field → the server's field.
    pub fields: BTreeMap<String, String>,
    /// `blocks` is derived from every task's `blockedBy` (a server that stores one side).
    pub derived_blocks: bool,
    /// Wire field → (server value → wire value), for strings.
    pub values: BTreeMap<String, BTreeMap<String, String>>,
    /// Sort `list` answers by id.
    pub sort: bool,
    /// Wire ids are taskproof's numbers for the server's ids (`ids = "table"`).
    pub id_table: bool,
    /// The wire status from the server's fields, first rule that holds (`status_from`).
    pub status_from: Vec<StatusRule>,
    /// Wire field → how its string value is read (`[task.parse]`).
    pub parse: BTreeMap<String, Parse>,
}

/// One rule of `status_from`: when `field` (absent: always) is set (or equals `equals`),
/// the status is `status`.
#[derive(Debug)]
pub struct StatusRule {
    pub field: Option<String>,
    pub equals: Option<Value>,
    pub status: String,
}

/// How a field's string value becomes its wire value.
#[derive(Debug)]
pub enum Parse {
    /// The string is JSON text.
    Json,
    /// Every match of the pattern (its first group, else the whole match): an array.
    Each(Regex),
}

#[derive(Debug, Default)]
pub struct ErrorRules {
    /// A JSON pointer into an error result's document giving the kind word.
    pub kind: Option<String>,
    pub text: Vec<(Regex, ErrorKind)>,
    pub default: Option<ErrorKind>,
    /// JSON-RPC error code → kind. Without an entry, a JSON-RPC error is an error of the
    /// target.
    pub rpc: BTreeMap<i32, ErrorKind>,
    /// Results without `isError` that are errors too (`errors.detect`).
    pub detect: Vec<Detect>,
}

/// A rule that makes a result the server did not mark `isError` an error result.
#[derive(Debug)]
pub struct Detect {
    pub how: DetectHow,
    /// The kind, else the usual rules decide.
    pub kind: Option<ErrorKind>,
}

#[derive(Debug)]
pub enum DetectHow {
    /// The value at the pointer (of the JSON document) is set: not null, false, 0, "", [] or
    /// {}; or, with values, equals one of them.
    At(String, Option<Vec<Value>>),
    /// The result's text matches.
    Pattern(Regex),
}

/// One operation: the calls in order and how the answer is read.
#[derive(Debug)]
pub struct OpMap {
    pub calls: Vec<Call>,
    pub answer: Read,
    /// Each entry: conditions that together make the request `unsupported` (a path alone:
    /// present, not null or empty; a table: the paths have the values).
    pub unsupported_when: Vec<Vec<Cond>>,
    /// How many calls run before `unsupported_when` is judged (a read of the task first).
    pub unsupported_after: usize,
    /// Run when a call fails after a call read the new task's id: the task is removed again,
    /// so that a refused request that takes several calls leaves nothing behind (`undo`).
    pub undo: Option<Call>,
}

#[derive(Debug)]
pub struct Call {
    /// The tool; empty for a step that only reads the task (`{ read = "id" }`).
    pub tool: String,
    pub args: Template,
    /// Every condition must hold for the call to run.
    pub when: Vec<Cond>,
    /// The call does not run when every one of these holds (none: it runs).
    pub unless: Vec<Cond>,
    pub for_each: Option<Vec<String>>,
    /// Read this task (a path holding its id) through `[ops.get]` before the call, as
    /// `{current}` (read-modify-write).
    pub read: Option<Vec<String>>,
    /// Where the call's result gives the task id (later calls and the answer use it).
    pub id: Option<String>,
    /// An error of this call of one kind means another (`error_kinds`): a task the call
    /// names that is not found is, for the request, a dangling reference.
    pub error_kinds: BTreeMap<ErrorKind, ErrorKind>,
    /// An error of this call of one of these kinds is none for the request (`error_kinds`
    /// value `"none"`): the call had nothing to do (an edge removed from a task that does
    /// not exist was never there), and the request goes on.
    pub no_error: BTreeSet<ErrorKind>,
    pub doc: DocSource,
    /// `ops.create.calls[0]`, for messages.
    pub key: String,
}

impl Call {
    /// Whether the call's arguments or conditions use the task its `read` read.
    pub fn uses_current(&self) -> bool {
        self.args.names("current")
            || self
                .when
                .iter()
                .chain(&self.unless)
                .any(Cond::reads_current)
    }
}

/// A condition of `when`.
#[derive(Debug, Clone)]
pub enum Cond {
    /// The path is present: not null, `""`, `[]` or `{}`.
    Present(Vec<String>),
    /// The value at the path is one of these (a value `"{path}"`: the value at that path).
    Is(Vec<String>, Vec<CondValue>),
}

/// A value a condition compares with.
#[derive(Debug, Clone)]
pub enum CondValue {
    Lit(Value),
    Path(Vec<String>),
    /// `"{null}"`: the path is given, as `null` (a request that removes the field); an
    /// absent path is not.
    Null,
}

impl Cond {
    fn path(&self) -> &[String] {
        match self {
            Cond::Present(p) | Cond::Is(p, _) => p,
        }
    }

    /// Whether the condition reads `{current}` (so the call's `read` runs first).
    pub fn reads_current(&self) -> bool {
        let current = |p: &[String]| p.first().is_some_and(|p| p == "current");
        current(self.path())
            || matches!(self, Cond::Is(_, values)
                if values.iter().any(|v| matches!(v, CondValue::Path(p) if current(p))))
    }

    pub fn holds(&self, vars: &Value) -> bool {
        match self {
            Cond::Present(p) => present(vars, p),
            Cond::Is(p, values) => {
                let v = lookup(vars, p).cloned().unwrap_or(Value::Null);
                values.iter().any(|w| match w {
                    CondValue::Lit(x) => *x == v,
                    CondValue::Path(q) => lookup(vars, q).cloned().unwrap_or(Value::Null) == v,
                    CondValue::Null => given_null(vars, p),
                })
            }
        }
    }

    fn describe(&self) -> String {
        match self {
            Cond::Present(p) => p.join("."),
            Cond::Is(p, v) => format!(
                "{} is {}",
                p.join("."),
                v.iter()
                    .map(|v| match v {
                        CondValue::Lit(x) => x.to_string(),
                        CondValue::Path(q) => q.join("."),
                        CondValue::Null => "given as null".to_string(),
                    })
                    .collect::<Vec<_>>()
                    .join(" or ")
            ),
        }
    }
}

/// Whether the request gives `path` and its value is `null` (not absent).
fn given_null(vars: &Value, path: &[String]) -> bool {
    let mut v = vars;
    for p in path {
        match v.get(p) {
            Some(next) => v = next,
            None => return false,
        }
    }
    v.is_null()
}

/// How an answer is read.
#[derive(Debug, Default)]
pub struct Read {
    /// Which call's result (by position in `calls`); default the last that ran.
    pub call: Option<usize>,
    pub doc: DocSource,
    pub task: Option<String>,
    pub tasks: Option<String>,
    pub corrupt: Option<String>,
    pub id: Option<String>,
    /// Read the task afterwards with the `get` mapping; for `list`, each task.
    pub fetch: bool,
    /// Wire fields read from (other) calls' results: field → (call, pointer).
    pub also: Vec<(String, Option<usize>, String)>,
}

/// Where a result's document comes from.
#[derive(Debug, Default)]
pub struct DocSource {
    pub base: Base,
    /// Read text instead of JSON: how.
    pub text: Option<TextRead>,
    /// The text read is the string at this pointer of the JSON document, not the result's
    /// text.
    pub text_at: Option<String>,
}

/// The JSON document of a result.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum Base {
    /// `structuredContent` when there is one, else the text parsed as JSON.
    #[default]
    Auto,
    Structured,
    /// The text parsed as JSON.
    Json,
}

/// A document read from text by regular expressions.
#[derive(Debug)]
pub struct TextRead {
    /// Only the text after the first match of this, up to the next heading of the same or a
    /// higher level (or `section_end`).
    pub section: Option<(Regex, Option<Regex>)>,
    pub how: TextHow,
}

#[derive(Debug)]
pub enum TextHow {
    /// The first pattern must match; its named groups make an object of strings, and every
    /// further pattern that matches adds its groups. A group named `json` is parsed and is
    /// the document.
    One(Vec<Regex>),
    /// Every match: an array of such objects.
    Each(Regex),
}

impl Mapping {
    /// Reads and checks a mapping file.
    pub fn load(path: &Path) -> Result<Mapping, MappingError> {
        let text = std::fs::read_to_string(path).map_err(|e| MappingError {
            file: path.display().to_string(),
            key: "(file)".into(),
            message: format!("cannot read it: {e}"),
        })?;
        Mapping::parse(&text, path)
    }

    /// Checks a mapping given as text; `path` names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Mapping, MappingError> {
        check::mapping(text, path)
    }

    /// The calls that write with a task read before them in a separate call, each with the
    /// call that read it: its own `read`, else the last earlier call of its operation that
    /// read (`{current}` stays for the calls after a read).
    fn written_after_read(&self) -> Vec<(Op, &Call, &Call)> {
        let mut out = Vec::new();
        for (op, m) in &self.ops {
            let mut reader: Option<&Call> = None;
            for c in &m.calls {
                if c.read.is_some() {
                    reader = Some(c);
                }
                if let Some(r) = reader
                    && !c.tool.is_empty()
                    && c.uses_current()
                {
                    out.push((*op, c, r));
                }
            }
        }
        out
    }

    /// The calls that read a task before they write (`read`): the mapping is then not
    /// atomic, whatever the server is.
    pub fn read_modify_write(&self) -> Vec<String> {
        self.written_after_read()
            .into_iter()
            .map(|(_, c, r)| {
                let path = r.read.as_deref().unwrap_or_default().join(".");
                if std::ptr::eq(c, r) {
                    format!("{} ({} read = {path})", c.key, c.tool)
                } else {
                    format!("{} ({}, with what {} read = {path})", c.key, c.tool, r.key)
                }
            })
            .collect()
    }

    /// The requests the mapping performs by read-modify-write, as `hello` names them for the
    /// harness ([`ReadModifyWrite`]): per call that writes with what a call read, the request
    /// paths that must be there for it to run (its `for_each`, its `read` of a request path,
    /// and the paths of its `when` conditions on the request; a condition that a missing
    /// value can meet, or one on what was read, requires nothing). What an earlier call read
    /// may have been read by another (one whose own conditions did not hold), so its
    /// conditions are not the writer's.
    pub fn read_modify_write_requests(&self) -> Vec<ReadModifyWrite> {
        let of_request =
            |p: &[String]| matches!(p.first().map(String::as_str), Some("task" | "patch"));
        let mut out = BTreeSet::new();
        for (op, c, _) in self.written_after_read() {
            let mut paths: BTreeSet<String> = BTreeSet::new();
            for p in c.for_each.iter().chain(&c.read) {
                if of_request(p) {
                    paths.insert(p.join("."));
                }
            }
            for cond in c.when.iter().filter(|w| !w.reads_current()) {
                let needs_value = match cond {
                    Cond::Present(_) => true,
                    Cond::Is(_, values) => values
                        .iter()
                        .all(|v| matches!(v, CondValue::Lit(x) if !x.is_null())),
                };
                if needs_value && of_request(cond.path()) {
                    paths.insert(cond.path().join("."));
                }
            }
            out.insert(ReadModifyWrite {
                op,
                paths: paths.into_iter().collect(),
            });
        }
        out.into_iter().collect()
    }

    /// The request paths carried out in tool calls of their own ([`CALLS_APART`]): per writing
    /// operation, each request path a call with a tool runs for (its `for_each`: a call per
    /// item) or on (a `when` condition on the request). A request with two of them, or with
    /// two items at a `for_each` path, is several calls with nothing to undo the first when a
    /// later one is refused.
    pub fn calls_apart(&self) -> Vec<ReadModifyWrite> {
        let of_request =
            |p: &[String]| matches!(p.first().map(String::as_str), Some("task" | "patch"));
        let mut out = BTreeSet::new();
        for (op, m) in &self.ops {
            if matches!(op, Op::Get | Op::List) {
                continue;
            }
            for c in m.calls.iter().filter(|c| !c.tool.is_empty()) {
                let paths = c
                    .for_each
                    .iter()
                    .map(Vec::as_slice)
                    .chain(c.when.iter().map(Cond::path))
                    .filter(|p| of_request(p));
                for p in paths {
                    out.insert(ReadModifyWrite {
                        op: *op,
                        paths: vec![p.join(".")],
                    });
                }
            }
        }
        out.into_iter().collect()
    }

    /// The operations whose answer is read by a later call (`fetch`): it can show another
    /// writer's change made after this one.
    pub fn read_back(&self) -> Vec<String> {
        self.ops
            .iter()
            .filter(|(op, m)| m.answer.fetch && **op != Op::List)
            .map(|(op, _)| format!("ops.{op}"))
            .collect()
    }

    /// Why concurrency verdicts through this mapping are not the server's alone, if they are
    /// not: calls that read a task and then write it, and answers read by a later call.
    pub fn not_atomic(&self) -> Option<String> {
        let rmw = self.read_modify_write();
        let back = self.read_back();
        let mut parts = Vec::new();
        if !rmw.is_empty() {
            parts.push(format!(
                "it reads a task and then writes it in separate tool calls (read-modify-write by \
                 taskproof's MCP client: {}): a change another writer makes in between can be \
                 lost by the mapping, not the server, unless the server refuses a stale write",
                rmw.join(", ")
            ));
        }
        if !back.is_empty() {
            parts.push(format!(
                "the answers of {} are read by a get after the change: they can show another \
                 writer's later change, so a nonlinearizable answer may be the mapping's",
                back.join(", ")
            ));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }

    /// The statuses the server's tasks can have, when `status_from` reads them from its
    /// fields and no rule gives `in_progress` (a task done or not done): hello's
    /// [`STATUSES`], so the steps that start a task are not judged.
    pub fn statuses(&self) -> Option<String> {
        let rules = &self.task.status_from;
        if rules.is_empty() || rules.iter().any(|r| r.status == "in_progress") {
            return None;
        }
        let mut have: Vec<&str> = Vec::new();
        for r in rules {
            if !have.contains(&r.status.as_str()) {
                have.push(&r.status);
            }
        }
        Some(have.join(", "))
    }

    /// What `hello` states: the file, and per operation the tools called.
    pub fn stated(&self) -> BTreeMap<String, String> {
        let mut m = BTreeMap::new();
        m.insert("mapping".into(), self.path.display().to_string());
        if self.skip_stdout_noise {
            m.insert(
                "stdout".into(),
                "lines on the server's stdout that are not MCP are skipped (server.skip_stdout_noise)"
                    .into(),
            );
        }
        if self.check_form {
            m.insert(
                "form".into(),
                "requests of a malformed form are answered invalid by taskproof's MCP client \
                 (server.check_form), without a tool call"
                    .into(),
            );
        }
        if let Some(statuses) = self.statuses() {
            m.insert(STATUSES.into(), statuses);
        }
        if !self.task.status_from.is_empty() {
            m.insert(
                "status".into(),
                "the server has no status words (task.status_from reads the status from its \
                 fields): a status other than pending, in_progress and completed is answered \
                 invalid by taskproof's MCP client"
                    .into(),
            );
        }
        if self.task.status_from.is_empty()
            && self.ops.contains_key(&Op::Update)
            && !self.passes_status()
        {
            m.insert(
                "status".into(),
                "the server is never given a status word (the mapping says a status by which \
                 calls run): a status other than pending, in_progress and completed is \
                 answered invalid by taskproof's MCP client"
                    .into(),
            );
        } else if self.task.status_from.is_empty() && !self.server_statuses().is_empty() {
            let mut words = self
                .server_statuses()
                .iter()
                .map(|w| format!("{w:?}"))
                .collect::<Vec<_>>();
            words.dedup();
            m.insert(
                "status".into(),
                format!(
                    "a status outside pending, in_progress and completed that is one of the \
                     server's own words ({}{}) is answered invalid by taskproof's MCP client \
                     (passed on, it would mean another wire status, or what the server does \
                     with it); other words go to the server as given",
                    words.join(", "),
                    if self.status_words.ignore_case {
                        ", compared without case: the server reads them so (status.ignore_case)"
                    } else {
                        ""
                    }
                ),
            );
        }
        if self.task.id_table {
            m.insert(
                "ids".into(),
                "wire ids are taskproof's numbers for the server's own ids (task.ids = \"table\", \
                 kept in ROOT/.taskproof-mcp/ids.json, shared by every session on the root): a \
                 server id never seen before gets one more than the highest number given in its \
                 list, one seen before gets its old number, and a wire id the table does not \
                 know goes to the server as given. So S1 judges whether the server hands out an \
                 id a second time, not how it numbers; and a wire id names a task of its own \
                 list only"
                    .into(),
            );
        }
        if self.launch.per_list {
            m.insert(
                "lists".into(),
                "one server per list (server.per_list), started on the list's first use; a list \
                 name that cannot name a folder is answered invalid by taskproof's MCP client"
                    .into(),
            );
        } else if let Some(c) = &self.container {
            m.insert(
                "lists".into(),
                format!(
                    "each list is a container of the server, made by {} on the list's first \
                     create and kept in ROOT/.taskproof-mcp/ids.json; before that, list answers [] \
                     and the other operations not_found without a tool call (taskproof's MCP \
                     client); a list name that is not a valid name is answered invalid",
                    c.tool
                ),
            );
        }
        if let Some(why) = self.not_atomic() {
            m.insert(ATOMIC.into(), format!("no: {why}"));
        }
        let rmw = self.read_modify_write_requests();
        if !rmw.is_empty() {
            m.insert(READ_MODIFY_WRITE.into(), ReadModifyWrite::write_all(&rmw));
        }
        let apart = self.calls_apart();
        if !apart.is_empty() {
            m.insert(CALLS_APART.into(), ReadModifyWrite::write_all(&apart));
        }
        for op in OPS {
            let text = match self.ops.get(&op) {
                None => "unsupported (the mapping's `unsupported`)".to_string(),
                Some(o) => {
                    let mut s = String::new();
                    for (i, c) in o.calls.iter().enumerate() {
                        if i > 0 {
                            s.push_str("; ");
                        }
                        match &c.read {
                            Some(r) if c.tool.is_empty() => {
                                let _ = write!(s, "get {}", r.join("."));
                            }
                            Some(r) => {
                                let _ = write!(s, "get {} then {}", r.join("."), c.tool);
                            }
                            None => s.push_str(&c.tool),
                        }
                        if !c.when.is_empty() {
                            let _ = write!(s, " when {}", describe(&c.when));
                        }
                        if !c.unless.is_empty() {
                            let _ = write!(s, " unless {}", describe(&c.unless));
                        }
                        if let Some(f) = &c.for_each {
                            let _ = write!(s, " for each of {}", f.join("."));
                        }
                    }
                    if o.answer.fetch {
                        s.push_str(if op == Op::List {
                            "; then get of each"
                        } else {
                            "; then get"
                        });
                    }
                    for c in &o.unsupported_when {
                        let _ = write!(s, "; {} unsupported", describe(c));
                    }
                    if let Some(u) = &o.undo {
                        let _ = write!(
                            s,
                            "; when a call fails after the task was made, {} removes it again \
                             (taskproof's MCP client: the server has no single call for it)",
                            u.tool
                        );
                    }
                    s
                }
            };
            m.insert(op.to_string(), text);
        }
        m
    }

    /// The server's status word (or table of arguments) for a wire word (others as given).
    pub fn status_out(&self, wire: &str) -> Value {
        self.status
            .get(wire)
            .cloned()
            .unwrap_or_else(|| Value::String(wire.to_string()))
    }

    /// Whether some call of `update` gives the request's status to the server (a template
    /// names `patch.status`); else the status is said only by which calls run.
    pub fn passes_status(&self) -> bool {
        self.ops.get(&Op::Update).is_some_and(|m| {
            m.calls
                .iter()
                .any(|c| c.args.names_under(&["patch", "status"]))
        })
    }

    /// The server's status words the mapping knows: those `[status]` names, the words of
    /// `status.refuse`, and with `ignore_case` the wire words `[status]` leaves as they are
    /// (they go to the server as given, so they are its words too).
    pub fn server_statuses(&self) -> Vec<&str> {
        let mut words: Vec<&str> = self.status.values().filter_map(Value::as_str).collect();
        words.extend(self.status_words.refuse.iter().map(String::as_str));
        if self.status_words.ignore_case {
            words.extend(
                ["pending", "in_progress", "completed"]
                    .into_iter()
                    .filter(|w| !self.status.contains_key(*w)),
            );
        }
        words
    }

    /// Whether `word` is one of the server's status words ([`Mapping::server_statuses`]),
    /// compared without case when `status.ignore_case` says the server reads them so.
    pub fn is_server_status(&self, word: &str) -> bool {
        self.server_statuses()
            .iter()
            .any(|w| self.status_words.same(w, word))
    }

    /// The wire status word for a server word (others as given); without case when
    /// `status.ignore_case` says so.
    pub fn status_in(&self, server: &str) -> String {
        let find = |same: &dyn Fn(&str) -> bool| {
            self.status
                .iter()
                .find(|(_, s)| s.as_str().is_some_and(same))
                .map(|(w, _)| w.clone())
        };
        find(&|s| s == server)
            .or_else(|| find(&|s| self.status_words.same(s, server)))
            .or_else(|| {
                // An unmapped wire word in the server's case (`Pending`).
                ["pending", "in_progress", "completed"]
                    .into_iter()
                    .find(|w| {
                        self.status_words.ignore_case
                            && !self.status.contains_key(*w)
                            && self.status_words.same(w, server)
                    })
                    .map(str::to_string)
            })
            .unwrap_or_else(|| server.to_string())
    }
}

/// Conditions in words, for `hello`.
pub fn describe(conds: &[Cond]) -> String {
    conds
        .iter()
        .map(Cond::describe)
        .collect::<Vec<_>>()
        .join(" and ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A mapping with some of everything; the tests of check.rs and template.rs start from it
    /// too.
    pub(super) const GOOD: &str = r#"
unsupported = ["claim"]

[server]
args = ["--root", "{root}"]
layout = "claude-code"
features = ["delete", "edges"]

[status]
completed = "done"

[errors]
kind = "/error/kind"
default = "io"
text = [{ pattern = "not found", kind = "not_found" }]

[ops.create]
calls = [{ tool = "add", args = { list = "{list}", title = "{task.subject}", deps = "{task.blockedBy|ints}" } }]
answer = { task = "/task" }

[ops.get]
calls = [{ tool = "show", args = { list = "{list}", id = "{id|int}" } }]
answer = { task = "/task" }

[ops.update]
calls = [
  { tool = "show", args = { id = "{id}" } },
  { tool = "set_status", when = "patch.status", args = { id = "{id}", status = "{patch.status|status}" } },
  { tool = "dep", for_each = "patch.addBlockedBy", args = { id = "{id}", on = "{item}" } },
  { tool = "edit", args = { id = "{id}", "..." = "{patch}", note = "task {id} in {list}" } },
]
answer = { fetch = true }

[ops.delete]
calls = [{ tool = "rm", args = { id = "{id}" } }]

[ops.list]
calls = [{ tool = "ls", args = { list = "{list}" } }]
answer = { tasks = "/tasks" }
"#;

    pub(super) fn parse(text: &str) -> Result<Mapping, MappingError> {
        Mapping::parse(text, Path::new("m.toml"))
    }

    /// The requests `hello` names read-modify-write: per call that writes with what it read,
    /// the request paths it runs for; a read whose task is not used is not one.
    #[test]
    fn read_modify_write_requests_are_named_by_the_paths_they_run_for() {
        let text = GOOD.replace(
            "answer = { fetch = true }",
            "answer = { fetch = true }\n\n[ops.claim]\ncalls = [{ tool = \"own\", read = \"id\", \
             when = { \"current.owner\" = \"\" }, args = { id = \"{id}\", owner = \"{owner}\" } }]\n\
             answer = { task = \"/task\" }",
        );
        let text = text.replace("unsupported = [\"claim\"]", "").replace(
            "{ tool = \"show\", args = { id = \"{id}\" } },",
            "{ tool = \"show\", read = \"id\", args = { id = \"{id}\" } },\n  \
             { tool = \"note\", when = \"patch.description\", args = { id = \"{id}\", \
             was = \"{current.subject}\" } },\n  \
             { tool = \"move\", read = \"id\", when = { \"patch.status\" = \"completed\", \
             \"current.status\" = \"pending\" }, args = { id = \"{id}\" } },\n  \
             { tool = \"dep2\", for_each = \"patch.addBlocks\", read = \"item\", \
             args = { id = \"{item}\", on = \"{current.blockedBy|with:id}\" } },",
        );
        let m = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let rmw = m.read_modify_write_requests();
        assert_eq!(
            ReadModifyWrite::write_all(&rmw),
            "update with patch.addBlocks; update with patch.description; update with \
             patch.status; claim"
        );
        // A call that writes with what an earlier call read (`{current}` stays) is one too.
        assert_eq!(
            m.read_modify_write()[0],
            "ops.update.calls[1] (note, with what ops.update.calls[0] read = id)"
        );
        assert_eq!(
            m.stated()[READ_MODIFY_WRITE],
            ReadModifyWrite::write_all(&rmw)
        );
        assert!(
            !parse(GOOD)
                .unwrap()
                .stated()
                .contains_key(READ_MODIFY_WRITE)
        );
    }

    /// A server whose tasks are done or not done (`status_from` never gives `in_progress`)
    /// says in hello which statuses it has, so it lacks the started status; one that reads
    /// `in_progress` too, or has status words, says nothing.
    #[test]
    fn statuses_read_from_fields_without_in_progress_are_stated() {
        let done_or_not = GOOD.replace(
            "[status]",
            "[task]\nstatus_from = [{ field = \"done\", equals = true, status = \"completed\" }, \
             { status = \"pending\" }]\n\n[status]",
        );
        let m = parse(&done_or_not).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(m.statuses().as_deref(), Some("completed, pending"));
        assert_eq!(m.stated()[STATUSES], "completed, pending");
        let three = done_or_not.replace(
            "{ status = \"pending\" }",
            "{ field = \"started\", status = \"in_progress\" }, { status = \"pending\" }",
        );
        assert_eq!(parse(&three).unwrap().statuses(), None);
        assert!(!parse(GOOD).unwrap().stated().contains_key(STATUSES));
    }

    /// `calls_apart` names the request paths a call runs for (`for_each`) or on (`when`), so
    /// the fuzzer sends them one request a call; `"none"` in `error_kinds` makes an error of
    /// that kind no error for the request, and any other word is still refused.
    #[test]
    fn calls_apart_and_errors_that_are_none_are_read() {
        let m = parse(GOOD).unwrap();
        assert_eq!(
            ReadModifyWrite::write_all(&m.calls_apart()),
            "update with patch.addBlockedBy; update with patch.status"
        );
        assert_eq!(
            m.stated()[CALLS_APART],
            "update with patch.addBlockedBy; update with patch.status"
        );
        let none = GOOD.replace(
            "on = \"{item}\" } },",
            "on = \"{item}\" }, error_kinds = { not_found = \"none\", io = \"dangling\" } },",
        );
        let m = parse(&none).unwrap();
        let dep = &m.ops[&Op::Update].calls[2];
        assert_eq!(dep.no_error, [ErrorKind::NotFound].into_iter().collect());
        assert_eq!(dep.error_kinds[&ErrorKind::Io], ErrorKind::Dangling);
        let bad = GOOD.replace(
            "on = \"{item}\" } },",
            "on = \"{item}\" }, error_kinds = { not_found = \"nothing\" } },",
        );
        let e = parse(&bad).unwrap_err().to_string();
        assert!(
            e.contains("ops.update.calls[2].error_kinds.not_found"),
            "{e}"
        );
    }

    /// `status.ignore_case` and `status.refuse`: the client knows the server's own words in
    /// any case (and the further words named), and reads its answers' words back without
    /// case; without `ignore_case` the words are compared exactly, as before.
    #[test]
    fn server_status_words_are_recognised_without_case_and_refused_words_added() {
        let words = GOOD.replace(
            "completed = \"done\"",
            "pending = \"To Do\"\ncompleted = \"Done\"\nrefuse = [\"Draft\"]",
        );
        let exact = parse(&words).unwrap();
        assert!(exact.is_server_status("Done") && exact.is_server_status("Draft"));
        assert!(!exact.is_server_status("done") && !exact.is_server_status("draft"));
        assert!(!exact.is_server_status("Pending"));
        assert_eq!(exact.status_in("Done"), "completed");
        assert_eq!(exact.status_in("DONE"), "DONE");
        let any_case = parse(&words.replace("refuse =", "ignore_case = true\nrefuse =")).unwrap();
        for w in ["done", "DONE", "Done", "to do", "draft", "DRAFT"] {
            assert!(any_case.is_server_status(w), "{w}");
        }
        // in_progress goes as given: the server's word for it is the wire's, in any case.
        assert!(any_case.is_server_status("In_Progress"));
        // The wire's word for a status the server names otherwise is not the server's.
        assert!(!any_case.is_server_status("Completed"));
        assert!(!any_case.is_server_status("finished"));
        assert_eq!(any_case.status_in("done"), "completed");
        assert_eq!(any_case.status_in("TO DO"), "pending");
        assert_eq!(any_case.status_in("IN_PROGRESS"), "in_progress");
        assert_eq!(any_case.status_in("Draft"), "Draft");
        let stated = &any_case.stated()["status"];
        assert!(
            stated.contains("\"Draft\"") && stated.contains("without case"),
            "{stated}"
        );
        assert!(!exact.stated()["status"].contains("without case"));
    }

    /// A `when` value `"{null}"` holds when the request gives the path as null (a field
    /// removed), not when the path is absent; other values do not hold for null.
    #[test]
    fn a_when_selects_a_field_given_as_null() {
        let text = GOOD.replace(
            "  { tool = \"edit\",",
            "  { tool = \"edit\", when = { \"patch.owner\" = \"{null}\" }, args = { id = \"{id}\", owners = [] } },\n  \
             { tool = \"edit\", when = { \"patch.owner\" = [\"{null}\", \"\"] }, args = { id = \"{id}\" } },\n  \
             { tool = \"edit\", unless = { \"patch.owner\" = \"{null}\" },",
        );
        let m = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let calls = &m.ops[&Op::Update].calls;
        let holds = |c: &Call, v: Value| c.when.iter().all(|w| w.holds(&v));
        let runs = |c: &Call, v: Value| {
            let skipped = !c.unless.is_empty() && c.unless.iter().all(|w| w.holds(&v));
            holds(c, v.clone()) && !skipped
        };
        let null = serde_json::json!({"patch": {"owner": null}});
        let absent = serde_json::json!({"patch": {"subject": "s"}});
        let given = serde_json::json!({"patch": {"owner": "a"}});
        let empty = serde_json::json!({"patch": {"owner": ""}});
        assert!(holds(&calls[3], null.clone()));
        assert!(!holds(&calls[3], absent.clone()));
        assert!(!holds(&calls[3], given.clone()));
        assert!(!holds(&calls[3], serde_json::json!({})));
        assert!(holds(&calls[4], empty) && holds(&calls[4], null.clone()));
        assert!(!holds(&calls[4], absent.clone()));
        assert!(!runs(&calls[5], null) && runs(&calls[5], absent) && runs(&calls[5], given));
        assert!(
            m.stated()["update"].contains("edit when patch.owner is given as null"),
            "{:?}",
            m.stated()
        );
    }

    #[test]
    fn a_good_mapping_is_read() {
        let m = parse(GOOD).unwrap();
        assert_eq!(m.layout, Layout::ClaudeCode);
        assert!(m.unsupported.contains(&Op::Claim));
        assert_eq!(m.ops[&Op::Update].calls.len(), 4);
        let stated = m.stated();
        assert!(stated["claim"].starts_with("unsupported"), "{stated:?}");
        assert!(
            stated["update"].contains("set_status when patch.status"),
            "{stated:?}"
        );
    }
}
