//! The model: a mapping file as checked, every part typed (compile/ makes it from the file
//! as written, raw.rs).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use regex_lite::Regex;
use serde_json::Value;
use taskproof_core::protocol::{ErrorKind, Feature, Layout, Op};

use super::template::{Template, lookup, present};

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
    /// Whether a server emptied through its own tools starts afresh (`server.reuse`, true
    /// unless the mapping says the server keeps state a delete does not reset): with one
    /// server per list, a released list's server may then serve a list named later.
    pub reuse: bool,
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
    pub(super) fn path(&self) -> &[String] {
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

/// Conditions in words, for `hello`.
pub fn describe(conds: &[Cond]) -> String {
    conds
        .iter()
        .map(Cond::describe)
        .collect::<Vec<_>>()
        .join(" and ")
}
