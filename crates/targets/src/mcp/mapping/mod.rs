//! The mapping file of an `mcp:` target (docs/mcp-targets.md): which tools a protocol request
//! becomes, how their arguments are built from the request, and how the answers are read.
//!
//! A file is read once, strictly: an unknown or ill-typed key, a template naming something the
//! request does not have, a pattern that does not compile, or an operation neither mapped nor
//! declared `unsupported` is an error naming the file and the key, before any server starts.
//! Whether the server has the tools and arguments named is checked against its `tools/list`
//! when a session opens ([`Mapping::check_tools`]), before any request.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use regex_lite::Regex;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::text;
use taskproof_core::protocol::{ErrorKind, Feature, Layout, Op};
// The wire fields of a task (SPEC §1): the names `[task.fields]` may rename.
use taskproof_core::task::TASK_FIELDS;

/// The operations a mapping maps (`hello` is the server's `initialize`).
pub const OPS: [Op; 6] = [
    Op::Create,
    Op::Get,
    Op::Update,
    Op::Delete,
    Op::List,
    Op::Claim,
];

/// The wire's status words.
const STATUSES: [&str; 3] = ["pending", "in_progress", "completed"];

/// The filters of a template, for messages.
const FILTERS: &str = "status, int, ints, string, json, join, with:PATH, without:PATH or or:TEXT";

// ---------------------------------------------------------------------------------------
// The file as written.

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMapping {
    #[serde(default)]
    server: RawServer,
    #[serde(default)]
    status: BTreeMap<String, toml::Value>,
    #[serde(default)]
    task: RawTask,
    #[serde(default)]
    errors: RawErrors,
    #[serde(default)]
    lists: RawLists,
    #[serde(default)]
    unsupported: Vec<String>,
    #[serde(default)]
    ops: BTreeMap<String, RawOp>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServer {
    #[serde(default)]
    args: Vec<String>,
    cwd: Option<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    layout: Option<String>,
    #[serde(default)]
    features: Vec<String>,
    #[serde(default)]
    check_form: bool,
    #[serde(default)]
    skip_stdout_noise: bool,
    #[serde(default)]
    per_list: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTask {
    #[serde(default)]
    fields: BTreeMap<String, String>,
    blocks: Option<String>,
    #[serde(default)]
    values: BTreeMap<String, BTreeMap<String, String>>,
    #[serde(default)]
    sort: bool,
    ids: Option<String>,
    #[serde(default)]
    status_from: Vec<RawStatusRule>,
    #[serde(default)]
    parse: BTreeMap<String, RawParse>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStatusRule {
    field: Option<String>,
    equals: Option<toml::Value>,
    status: String,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum RawParse {
    Word(String),
    Each { each: String },
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawErrors {
    kind: Option<String>,
    #[serde(default)]
    text: Vec<RawErrorRule>,
    default: Option<String>,
    #[serde(default)]
    rpc: BTreeMap<String, String>,
    #[serde(default)]
    detect: Vec<RawDetect>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawErrorRule {
    pattern: String,
    kind: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDetect {
    at: Option<String>,
    is: Option<toml::Value>,
    pattern: Option<String>,
    kind: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLists {
    create: Option<RawCall>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOp {
    calls: Vec<RawCall>,
    #[serde(default)]
    answer: RawRead,
    #[serde(default)]
    unsupported_when: Vec<RawWhen>,
    #[serde(default)]
    unsupported_after: usize,
    undo: Option<RawCall>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum RawWhen {
    Path(String),
    Values(toml::Table),
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum RawPatterns {
    One(String),
    Many(Vec<String>),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCall {
    tool: Option<String>,
    #[serde(default)]
    args: toml::Table,
    when: Option<RawWhen>,
    unless: Option<RawWhen>,
    for_each: Option<String>,
    read: Option<String>,
    id: Option<String>,
    #[serde(default)]
    error_kinds: BTreeMap<String, String>,
    from: Option<String>,
    pattern: Option<RawPatterns>,
    each: Option<String>,
    section: Option<String>,
    section_end: Option<String>,
    text_at: Option<String>,
}

/// Where a result's document comes from: the keys shared by calls and answers.
#[derive(Debug, Default)]
struct RawDoc<'a> {
    from: Option<&'a str>,
    pattern: Option<&'a RawPatterns>,
    each: Option<&'a str>,
    section: Option<&'a str>,
    section_end: Option<&'a str>,
    text_at: Option<&'a str>,
}

macro_rules! raw_doc {
    ($r:expr) => {
        RawDoc {
            from: $r.from.as_deref(),
            pattern: $r.pattern.as_ref(),
            each: $r.each.as_deref(),
            section: $r.section.as_deref(),
            section_end: $r.section_end.as_deref(),
            text_at: $r.text_at.as_deref(),
        }
    };
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRead {
    call: Option<usize>,
    task: Option<String>,
    tasks: Option<String>,
    corrupt: Option<String>,
    id: Option<String>,
    #[serde(default)]
    fetch: bool,
    #[serde(default)]
    also: BTreeMap<String, RawAlso>,
    from: Option<String>,
    pattern: Option<RawPatterns>,
    each: Option<String>,
    section: Option<String>,
    section_end: Option<String>,
    text_at: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAlso {
    call: Option<usize>,
    at: String,
}

// ---------------------------------------------------------------------------------------
// The file as checked.

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
    pub task: TaskShape,
    pub errors: ErrorRules,
    /// `[lists.create]`: each list is a container the server makes (a project, a request),
    /// made by this call on the list's first `create`; `{container}` is its id.
    pub container: Option<Call>,
    pub unsupported: BTreeSet<Op>,
    pub ops: BTreeMap<Op, OpMap>,
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
    /// Request paths that make the request `unsupported` when present (not null, not
    /// empty).
    /// Each entry: conditions that together make the request `unsupported`.
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
                    })
                    .collect::<Vec<_>>()
                    .join(" or ")
            ),
        }
    }
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

/// A tool's arguments: the mapping's TOML value with templates in its strings.
#[derive(Debug, Clone)]
pub enum Template {
    Literal(Value),
    /// `"{path|filter|…}"`: the value at `path`, any type; absent → the key is left out.
    Value(Vec<String>, Vec<Filter>),
    /// A string with `{path}` inside: absent → the key is left out.
    Text(Vec<Part>),
    Array(Vec<Template>),
    /// Keys in order; `"..." = "{path|filter}"` spreads an object's keys (explicit keys
    /// win).
    Object(Vec<(String, Template)>, Option<(Vec<String>, Vec<Filter>)>),
    /// `{ "=json" = T }`: the JSON text of T filled.
    Encode(Box<Template>),
}

impl Template {
    /// Whether the template names a path under `root` anywhere (filters' paths included).
    pub fn names(&self, root: &str) -> bool {
        self.names_under(&[root])
    }

    /// Whether the template names `prefix`, a path under it or one above it (a whole
    /// `{patch}` names `patch.status`) anywhere, filters' paths included.
    pub fn names_under(&self, prefix: &[&str]) -> bool {
        // A path above the prefix (a whole `{patch}`) names it too.
        let path = |p: &[String]| p.iter().zip(prefix).all(|(a, b)| a == b);
        let filters = |fs: &[Filter]| {
            fs.iter().any(|f| match f {
                Filter::With(p) | Filter::Without(p) => path(p),
                _ => false,
            })
        };
        match self {
            Template::Literal(_) => false,
            Template::Value(p, f) => path(p) || filters(f),
            Template::Text(parts) => parts.iter().any(|x| match x {
                Part::Lit(_) => false,
                Part::Var(p, f) => path(p) || filters(f),
            }),
            Template::Array(items) => items.iter().any(|t| t.names_under(prefix)),
            Template::Object(keys, spread) => {
                keys.iter().any(|(_, t)| t.names_under(prefix))
                    || spread.as_ref().is_some_and(|(p, f)| path(p) || filters(f))
            }
            Template::Encode(t) => t.names_under(prefix),
        }
    }
}

#[derive(Debug, Clone)]
pub enum Part {
    Lit(String),
    Var(Vec<String>, Vec<Filter>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Filter {
    /// A wire status word → the server's word (others as given).
    Status,
    /// A decimal string → an integer (others as given).
    Int,
    /// Each element a decimal string → an integer.
    Ints,
    /// Any value → its text (strings as they are, others as JSON).
    String,
    /// Any value → its JSON text.
    Json,
    /// An array → its elements' texts joined with commas.
    Join,
    /// This text when the value is absent, null or `""` (`{task.description|or:none}`).
    Or(String),
    /// An array (absent: `[]`) with the value(s) at this path added, each once.
    With(Vec<String>),
    /// An array (absent: `[]`) without the value(s) at this path.
    Without(Vec<String>),
}

impl Filter {
    /// Parses `f|g|or:TEXT`: `or:` takes the rest, `|` included.
    fn parse_chain(s: &str, known: &BTreeSet<&str>) -> Result<Vec<Filter>, String> {
        let mut out = Vec::new();
        let mut rest = s;
        loop {
            if let Some(text) = rest.strip_prefix("or:") {
                out.push(Filter::Or(text.to_string()));
                return Ok(out);
            }
            let (one, more) = match rest.split_once('|') {
                Some((a, b)) => (a, Some(b)),
                None => (rest, None),
            };
            out.push(Filter::parse(one, known)?);
            match more {
                Some(m) => rest = m,
                None => return Ok(out),
            }
        }
    }

    fn parse(s: &str, known: &BTreeSet<&str>) -> Result<Filter, String> {
        Ok(match s {
            "status" => Filter::Status,
            "int" => Filter::Int,
            "ints" => Filter::Ints,
            "string" => Filter::String,
            "json" => Filter::Json,
            "join" => Filter::Join,
            _ => {
                if let Some(p) = s.strip_prefix("with:") {
                    Filter::With(var_path(p, known)?)
                } else if let Some(p) = s.strip_prefix("without:") {
                    Filter::Without(var_path(p, known)?)
                } else {
                    return Err(format!("unknown filter {s:?}; expected {FILTERS}"));
                }
            }
        })
    }
}

/// A mapping error: the file, the key and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {key}: {message}")]
pub struct MappingError {
    pub file: String,
    pub key: String,
    pub message: String,
}

/// What a call's templates may name besides the operation's own parts.
struct Scope<'a> {
    container: bool,
    err: &'a dyn Fn(&str, String) -> MappingError,
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
        let file = path.display().to_string();
        let err = |key: &str, message: String| MappingError {
            file: file.clone(),
            key: key.to_string(),
            message,
        };
        let raw: RawMapping = toml::from_str(text).map_err(|e| {
            // toml's message says the line, the column and the key's problem; the key path
            // is in its message too ("unknown field `x`", "invalid type ... for key `y`").
            err(
                "(toml)",
                e.to_string()
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" "),
            )
        })?;

        let layout = match &raw.server.layout {
            None => Layout::Opaque,
            Some(s) => s.parse().map_err(|e: String| err("server.layout", e))?,
        };
        let features = raw
            .server
            .features
            .iter()
            .enumerate()
            .map(|(i, f)| {
                f.parse::<Feature>()
                    .map_err(|e| err(&format!("server.features[{i}]"), e))
            })
            .collect::<Result<BTreeSet<_>, _>>()?;
        if !raw.server.per_list {
            let launch = raw
                .server
                .args
                .iter()
                .enumerate()
                .map(|(i, a)| (format!("server.args[{i}]"), a))
                .chain(raw.server.cwd.iter().map(|c| ("server.cwd".to_string(), c)))
                .chain(
                    raw.server
                        .env
                        .iter()
                        .map(|(k, v)| (format!("server.env.{k}"), v)),
                );
            for (key, v) in launch {
                if v.contains("{list}") {
                    return Err(err(
                        &key,
                        format!(
                            "{v:?}: {{list}} needs server.per_list = true (one server per list); \
                             without it one server serves every list"
                        ),
                    ));
                }
            }
        }

        let mut status = BTreeMap::new();
        for (k, v) in &raw.status {
            if !STATUSES.contains(&k.as_str()) {
                return Err(err(
                    &format!("status.{k}"),
                    "not a wire status; the keys are pending, in_progress and completed".into(),
                ));
            }
            let v = nulls(toml_to_json(v));
            if !(v.is_string() || v.is_object()) {
                return Err(err(
                    &format!("status.{k}"),
                    format!(
                        "expected the server's word (a string) or a table of arguments, got {v}"
                    ),
                ));
            }
            status.insert(k.clone(), v);
        }
        for (table, k) in raw
            .task
            .fields
            .keys()
            .map(|k| ("fields", k))
            .chain(raw.task.values.keys().map(|k| ("values", k)))
            .chain(raw.task.parse.keys().map(|k| ("parse", k)))
        {
            if !TASK_FIELDS.contains(&k.as_str()) {
                return Err(err(
                    &format!("task.{table}.{k}"),
                    format!(
                        "not a wire task field; expected one of {}",
                        TASK_FIELDS.join(", ")
                    ),
                ));
            }
        }
        let derived_blocks = match raw.task.blocks.as_deref() {
            None | Some("stored") => false,
            Some("derived") => true,
            Some(other) => {
                return Err(err(
                    "task.blocks",
                    format!("expected \"stored\" or \"derived\", got {other:?}"),
                ));
            }
        };
        let id_table = match raw.task.ids.as_deref() {
            None | Some("server") => false,
            Some("table") => true,
            Some(other) => {
                return Err(err(
                    "task.ids",
                    format!("expected \"server\" or \"table\", got {other:?}"),
                ));
            }
        };
        let mut status_from = Vec::new();
        for (i, r) in raw.task.status_from.iter().enumerate() {
            let key = format!("task.status_from[{i}]");
            if !STATUSES.contains(&r.status.as_str()) {
                return Err(err(
                    &format!("{key}.status"),
                    format!(
                        "{:?} is not a wire status; expected pending, in_progress or completed",
                        r.status
                    ),
                ));
            }
            if r.field.is_none() && r.equals.is_some() {
                return Err(err(
                    &format!("{key}.equals"),
                    "needs a field to compare".into(),
                ));
            }
            if r.field.is_none() && i + 1 != raw.task.status_from.len() {
                return Err(err(
                    &key,
                    "a rule without a field always holds: it must be the last".into(),
                ));
            }
            status_from.push(StatusRule {
                field: r.field.clone(),
                equals: r.equals.as_ref().map(toml_to_json),
                status: r.status.clone(),
            });
        }
        let mut parse = BTreeMap::new();
        for (field, p) in &raw.task.parse {
            let key = format!("task.parse.{field}");
            let how =
                match p {
                    RawParse::Word(w) if w == "json" => Parse::Json,
                    RawParse::Word(w) => {
                        return Err(err(
                            &key,
                            format!("expected \"json\" or {{ each = PATTERN }}, got {w:?}"),
                        ));
                    }
                    RawParse::Each { each } => Parse::Each(Regex::new(each).map_err(|e| {
                        err(&format!("{key}.each"), format!("does not compile: {e}"))
                    })?),
                };
            parse.insert(field.clone(), how);
        }

        let kind = |key: &str, s: &str| s.parse::<ErrorKind>().map_err(|e| err(key, e));
        let mut errors = ErrorRules {
            kind: match &raw.errors.kind {
                Some(p) => Some(pointer(p).map_err(|e| err("errors.kind", e))?),
                None => None,
            },
            default: match &raw.errors.default {
                Some(s) => Some(kind("errors.default", s)?),
                None => None,
            },
            ..ErrorRules::default()
        };
        for (i, rule) in raw.errors.text.iter().enumerate() {
            let key = format!("errors.text[{i}]");
            let re = Regex::new(&rule.pattern)
                .map_err(|e| err(&format!("{key}.pattern"), format!("does not compile: {e}")))?;
            errors
                .text
                .push((re, kind(&format!("{key}.kind"), &rule.kind)?));
        }
        for (code, k) in &raw.errors.rpc {
            let key = format!("errors.rpc.{code}");
            let n = code
                .parse::<i32>()
                .map_err(|_| err(&key, "the key must be a JSON-RPC error code".into()))?;
            errors.rpc.insert(n, kind(&key, k)?);
        }
        for (i, d) in raw.errors.detect.iter().enumerate() {
            let key = format!("errors.detect[{i}]");
            let how = match (&d.at, &d.pattern) {
                (Some(p), None) => DetectHow::At(
                    pointer(p).map_err(|e| err(&format!("{key}.at"), e))?,
                    d.is.as_ref().map(|v| match toml_to_json(v) {
                        Value::Array(a) => a,
                        one => vec![one],
                    }),
                ),
                (None, Some(p)) => {
                    if d.is.is_some() {
                        return Err(err(
                            &format!("{key}.is"),
                            "`is` compares the value `at` a pointer; a pattern has none".into(),
                        ));
                    }
                    DetectHow::Pattern(Regex::new(p).map_err(|e| {
                        err(&format!("{key}.pattern"), format!("does not compile: {e}"))
                    })?)
                }
                _ => {
                    return Err(err(
                        &key,
                        "needs either `at` (a JSON pointer) or `pattern` (over the text)".into(),
                    ));
                }
            };
            errors.detect.push(Detect {
                how,
                kind: d
                    .kind
                    .as_deref()
                    .map(|k| kind(&format!("{key}.kind"), k))
                    .transpose()?,
            });
        }

        let scope = Scope {
            container: raw.lists.create.is_some(),
            err: &err,
        };
        let container = match &raw.lists.create {
            None => None,
            Some(c) => {
                let known: BTreeSet<&str> = ["root", "list"].into_iter().collect();
                let call = call(c, "lists.create", &known, &scope)?;
                if call.id.is_none() {
                    return Err(err(
                        "lists.create.id",
                        "missing: a JSON pointer to the new container's id in the result".into(),
                    ));
                }
                if call.for_each.is_some() || call.read.is_some() {
                    return Err(err(
                        "lists.create",
                        "makes one container: no for_each or read".into(),
                    ));
                }
                Some(call)
            }
        };

        let mut unsupported = BTreeSet::new();
        for (i, s) in raw.unsupported.iter().enumerate() {
            let key = format!("unsupported[{i}]");
            let op = op_of(s).map_err(|e| err(&key, e))?;
            if raw.ops.contains_key(s) {
                return Err(err(
                    &key,
                    format!("{s} is both mapped (ops.{s}) and unsupported"),
                ));
            }
            unsupported.insert(op);
        }
        let mut ops = BTreeMap::new();
        for (name, raw_op) in &raw.ops {
            let op = op_of(name).map_err(|e| err(&format!("ops.{name}"), e))?;
            ops.insert(op, op_map(op, raw_op, &scope)?);
        }
        for op in OPS {
            if !ops.contains_key(&op) && !unsupported.contains(&op) {
                return Err(err(
                    &format!("ops.{op}"),
                    format!("missing: map {op} with [ops.{op}] or name it in `unsupported`"),
                ));
            }
        }
        for (f, op) in [(Feature::Delete, Op::Delete), (Feature::Claim, Op::Claim)] {
            if features.contains(&f) && !ops.contains_key(&op) {
                return Err(err(
                    "server.features",
                    format!("feature {f} needs [ops.{op}]"),
                ));
            }
        }
        if derived_blocks && !ops.contains_key(&Op::List) {
            return Err(err(
                "task.blocks",
                "\"derived\" needs [ops.list] to read every task".into(),
            ));
        }
        let reads = ops
            .iter()
            .any(|(_, m)| m.calls.iter().any(|c| c.read.is_some()));
        if (reads || ops.get(&Op::List).is_some_and(|l| l.answer.fetch))
            && !ops.contains_key(&Op::Get)
        {
            return Err(err(
                "ops.get",
                "missing: a call's `read` and a list's `fetch` read tasks through [ops.get]".into(),
            ));
        }
        Ok(Mapping {
            path: path.to_path_buf(),
            launch: Launch {
                args: raw.server.args,
                cwd: raw.server.cwd,
                env: raw.server.env,
                per_list: raw.server.per_list,
            },
            layout,
            features,
            check_form: raw.server.check_form,
            skip_stdout_noise: raw.server.skip_stdout_noise,
            status,
            task: TaskShape {
                fields: raw.task.fields,
                derived_blocks,
                values: raw.task.values,
                sort: raw.task.sort,
                id_table,
                status_from,
                parse,
            },
            errors,
            container,
            unsupported,
            ops,
        })
    }

    /// Every call of the mapping, the container's first.
    fn calls(&self) -> impl Iterator<Item = &Call> {
        self.container.iter().chain(
            self.ops
                .values()
                .flat_map(|m| m.calls.iter().chain(m.undo.iter())),
        )
    }

    /// Checks the tools and arguments named against the server's tool list: every tool must
    /// exist, and every argument named must be a property of its input schema when the schema
    /// lists them. The error names the file, the key and the tool.
    pub fn check_tools(&self, tools: &BTreeMap<String, Value>) -> Result<(), MappingError> {
        for call in self.calls().filter(|c| !c.tool.is_empty()) {
            let Some(schema) = tools.get(&call.tool) else {
                return Err(MappingError {
                    file: self.path.display().to_string(),
                    key: format!("{}.tool", call.key),
                    message: format!(
                        "the server has no tool {:?}; its tools are {}",
                        call.tool,
                        tools.keys().cloned().collect::<Vec<_>>().join(", ")
                    ),
                });
            };
            let (Template::Object(keys, _), Some(props)) = (
                &call.args,
                schema.get("properties").and_then(Value::as_object),
            ) else {
                continue;
            };
            for (k, _) in keys {
                if !props.contains_key(k) {
                    return Err(MappingError {
                        file: self.path.display().to_string(),
                        key: format!("{}.args.{k}", call.key),
                        message: format!(
                            "tool {:?} has no argument {k:?}; its arguments are {}",
                            call.tool,
                            props.keys().cloned().collect::<Vec<_>>().join(", ")
                        ),
                    });
                }
            }
        }
        Ok(())
    }

    /// The calls that read a task before they write (`read`): the mapping is then not
    /// atomic, whatever the server is.
    pub fn read_modify_write(&self) -> Vec<String> {
        self.ops
            .values()
            .flat_map(|m| m.calls.iter())
            .filter(|c| c.uses_current())
            .filter_map(|c| {
                c.read
                    .as_ref()
                    .map(|r| format!("{} ({} read = {})", c.key, c.tool, r.join(".")))
            })
            .collect()
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
        } else if self.task.status_from.is_empty() && self.status.values().any(Value::is_string) {
            m.insert(
                "status".into(),
                "a status outside pending, in_progress and completed that is one of the \
                 server's own words in [status] is answered invalid by taskproof's MCP client \
                 (passed on, it would mean another wire status); other words go to the server \
                 as given"
                    .into(),
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
            m.insert("atomic".into(), format!("no: {why}"));
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

    /// Whether `word` is one of the server's status words named in `[status]`.
    pub fn is_server_status(&self, word: &str) -> bool {
        self.status.values().any(|v| v.as_str() == Some(word))
    }

    /// The wire status word for a server word (others as given).
    pub fn status_in(&self, server: &str) -> String {
        self.status
            .iter()
            .find(|(_, s)| s.as_str() == Some(server))
            .map_or_else(|| server.to_string(), |(w, _)| w.clone())
    }
}

fn op_of(s: &str) -> Result<Op, String> {
    let op: Op = s.parse()?;
    if op == Op::Hello {
        return Err("hello is the server's initialize answer; it is not mapped".into());
    }
    Ok(op)
}

/// Checks a JSON pointer's form (`*` may stand for every element of an array).
fn pointer(p: &str) -> Result<String, String> {
    if p.is_empty() || p.starts_with('/') {
        Ok(p.to_string())
    } else {
        Err(format!(
            "{p:?} is not a JSON pointer (\"\" or starting with /)"
        ))
    }
}

/// The value at a JSON pointer in which a `*` part stands for every element of an array
/// (the result is then the array of what each element has there).
pub fn at(doc: &Value, p: &str) -> Option<Value> {
    if p.is_empty() {
        return Some(doc.clone());
    }
    let parts: Vec<String> = p[1..]
        .split('/')
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect();
    fn walk(v: &Value, parts: &[String]) -> Option<Value> {
        let Some((first, rest)) = parts.split_first() else {
            return Some(v.clone());
        };
        if first == "*" {
            let items = v.as_array()?;
            return Some(Value::Array(
                items.iter().filter_map(|i| walk(i, rest)).collect(),
            ));
        }
        let next = match v {
            Value::Object(o) => o.get(first)?,
            Value::Array(a) => a.get(first.parse::<usize>().ok()?)?,
            _ => return None,
        };
        walk(next, rest)
    }
    walk(doc, &parts)
}

fn doc_source(raw: &RawDoc<'_>) -> Result<DocSource, (String, String)> {
    let compile = |k: &str, p: &str| {
        Regex::new(p).map_err(|e| (k.to_string(), format!("does not compile: {e}")))
    };
    let how = match (raw.pattern, raw.each) {
        (Some(_), Some(_)) => {
            return Err((
                "each".into(),
                "a pattern (one match) and each (every match) exclude each other".into(),
            ));
        }
        (Some(RawPatterns::One(p)), None) => Some(TextHow::One(vec![compile("pattern", p)?])),
        (Some(RawPatterns::Many(ps)), None) => {
            if ps.is_empty() {
                return Err(("pattern".into(), "an empty list of patterns".into()));
            }
            Some(TextHow::One(
                ps.iter()
                    .enumerate()
                    .map(|(i, p)| compile(&format!("pattern[{i}]"), p))
                    .collect::<Result<_, _>>()?,
            ))
        }
        (None, Some(e)) => Some(TextHow::Each(compile("each", e)?)),
        (None, None) => None,
    };
    let base = match raw.from {
        None | Some("auto") => Base::Auto,
        Some("structured") => Base::Structured,
        Some("json") => Base::Json,
        Some("pattern") if how.is_some() => Base::Auto,
        Some("pattern") => {
            return Err(("pattern".into(), "missing (from = \"pattern\")".into()));
        }
        Some(f) => {
            return Err((
                "from".into(),
                format!("expected auto, structured, json or pattern, got {f:?}"),
            ));
        }
    };
    if how.is_some() && matches!(raw.from, Some("structured" | "json")) && raw.text_at.is_none() {
        return Err((
            "from".into(),
            format!(
                "from = {:?} and a pattern exclude each other (text_at reads a string of the \
                 JSON document)",
                raw.from.unwrap_or_default()
            ),
        ));
    }
    let section = match raw.section {
        None => {
            if raw.section_end.is_some() {
                return Err(("section_end".into(), "needs a section".into()));
            }
            None
        }
        Some(s) => Some((
            compile("section", s)?,
            raw.section_end
                .map(|e| compile("section_end", e))
                .transpose()?,
        )),
    };
    let text_at = raw
        .text_at
        .map(|p| pointer(p).map_err(|e| ("text_at".to_string(), e)))
        .transpose()?;
    let text = match (how, section) {
        (Some(how), section) => Some(TextRead { section, how }),
        (None, Some(_)) => {
            return Err((
                "section".into(),
                "a section is searched by a pattern or each; neither is given".into(),
            ));
        }
        (None, None) => {
            if text_at.is_some() {
                return Err((
                    "text_at".into(),
                    "the text at the pointer is read by a pattern or each; neither is given".into(),
                ));
            }
            None
        }
    };
    Ok(DocSource {
        base,
        text,
        text_at,
    })
}

/// The request's parts an operation's templates may name.
fn roots(op: Op) -> &'static [&'static str] {
    match op {
        Op::Create => &["root", "list", "task"],
        Op::Get | Op::Delete => &["root", "list", "id"],
        Op::Update => &["root", "list", "id", "patch"],
        Op::List => &["root", "list"],
        Op::Claim => &["root", "list", "id", "owner"],
        Op::Hello => &["root"],
    }
}

/// Checks one call; `known` are the paths its templates may name.
fn call(
    c: &RawCall,
    key: &str,
    known: &BTreeSet<&str>,
    scope: &Scope,
) -> Result<Call, MappingError> {
    let err = scope.err;
    let path_in = |k: &str, p: &str, known: &BTreeSet<&str>| {
        var_path(p, known).map_err(|e| err(&format!("{key}.{k}"), e))
    };
    let mut known = known.clone();
    if scope.container {
        known.insert("container");
    }
    let for_each = c
        .for_each
        .as_deref()
        .map(|p| path_in("for_each", p, &known))
        .transpose()?;
    if for_each.is_some() {
        known.insert("item");
    }
    let read = c
        .read
        .as_deref()
        .map(|p| path_in("read", p, &known))
        .transpose()?;
    if read.is_some() {
        known.insert("current");
    }
    let when = match &c.when {
        None => Vec::new(),
        Some(w) => conds(w, &format!("{key}.when"), &known, err)?,
    };
    let unless = match &c.unless {
        None => Vec::new(),
        Some(w) => conds(w, &format!("{key}.unless"), &known, err)?,
    };
    let args = toml_to_json(&toml::Value::Table(c.args.clone()));
    let args = template(&args, &known).map_err(|(at, e)| err(&format!("{key}.args{at}"), e))?;
    let doc = doc_source(&raw_doc!(c)).map_err(|(k, e)| err(&format!("{key}.{k}"), e))?;
    let id =
        c.id.as_deref()
            .map(|p| pointer(p).map_err(|e| err(&format!("{key}.id"), e)))
            .transpose()?;
    let mut error_kinds = BTreeMap::new();
    for (from, to) in &c.error_kinds {
        let k = format!("{key}.error_kinds.{from}");
        let parse = |s: &str| s.parse::<ErrorKind>().map_err(|e| err(&k, e));
        error_kinds.insert(parse(from)?, parse(to)?);
    }
    let tool = match (&c.tool, &read) {
        (Some(t), _) => t.clone(),
        (None, Some(_)) => {
            if !c.args.is_empty() || c.id.is_some() || for_each.is_some() {
                return Err(err(
                    key,
                    "a step without a tool only reads the task (read): no args, id or for_each"
                        .into(),
                ));
            }
            String::new()
        }
        (None, None) => {
            return Err(err(
                &format!("{key}.tool"),
                "missing: the tool to call (or `read` alone, a step that reads the task)".into(),
            ));
        }
    };
    Ok(Call {
        tool,
        args,
        when,
        unless,
        for_each,
        read,
        id,
        error_kinds,
        doc,
        key: key.to_string(),
    })
}

/// The conditions of a `when` (or an `unsupported_when` entry): a path that must be present,
/// or a table of paths and the values (one or a list) each must have.
fn conds(
    w: &RawWhen,
    key: &str,
    known: &BTreeSet<&str>,
    err: &dyn Fn(&str, String) -> MappingError,
) -> Result<Vec<Cond>, MappingError> {
    match w {
        RawWhen::Path(p) => Ok(vec![Cond::Present(
            var_path(p, known).map_err(|e| err(key, e))?,
        )]),
        RawWhen::Values(t) => {
            let mut out = Vec::new();
            for (p, v) in t {
                let path = var_path(p, known).map_err(|e| err(&format!("{key}.{p:?}"), e))?;
                let values = match toml_to_json(v) {
                    Value::Array(a) => a,
                    one => vec![one],
                };
                let values = values
                    .into_iter()
                    .map(|v| {
                        match v
                            .as_str()
                            .and_then(|s| s.strip_prefix('{')?.strip_suffix('}'))
                        {
                            Some(q) => var_path(q, known)
                                .map(CondValue::Path)
                                .map_err(|e| err(&format!("{key}.{p:?}"), e)),
                            None => Ok(CondValue::Lit(v)),
                        }
                    })
                    .collect::<Result<_, _>>()?;
                out.push(Cond::Is(path, values));
            }
            Ok(out)
        }
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

fn op_map(op: Op, raw: &RawOp, scope: &Scope) -> Result<OpMap, MappingError> {
    let err = scope.err;
    let base = format!("ops.{op}");
    if raw.calls.is_empty() {
        return Err(err(
            &format!("{base}.calls"),
            "needs at least one call".into(),
        ));
    }
    let mut known: BTreeSet<&str> = roots(op).iter().copied().collect();
    if scope.container {
        known.insert("container");
    }
    let mut calls = Vec::new();
    for (i, c) in raw.calls.iter().enumerate() {
        let key = format!("{base}.calls[{i}]");
        let checked = call(c, &key, &known, scope)?;
        if checked.id.is_some() {
            known.insert("id");
        }
        // `{current}` stays for the calls after a read.
        if checked.read.is_some() {
            known.insert("current");
        }
        calls.push(checked);
    }
    let a = &raw.answer;
    let akey = format!("{base}.answer");
    let doc = doc_source(&raw_doc!(a)).map_err(|(k, e)| err(&format!("{akey}.{k}"), e))?;
    let ptr = |k: &str, p: &Option<String>| {
        p.as_deref()
            .map(|p| pointer(p).map_err(|e| err(&format!("{akey}.{k}"), e)))
            .transpose()
    };
    let mut also = Vec::new();
    for (field, x) in &a.also {
        let k = format!("{akey}.also.{field}");
        if !TASK_FIELDS.contains(&field.as_str()) {
            return Err(err(
                &k,
                format!(
                    "not a wire task field; expected one of {}",
                    TASK_FIELDS.join(", ")
                ),
            ));
        }
        if let Some(n) = x.call
            && n >= calls.len()
        {
            return Err(err(
                &format!("{k}.call"),
                format!("there are only {} calls", calls.len()),
            ));
        }
        also.push((
            field.clone(),
            x.call,
            pointer(&x.at).map_err(|e| err(&format!("{k}.at"), e))?,
        ));
    }
    let answer = Read {
        call: a.call,
        doc,
        task: ptr("task", &a.task)?,
        tasks: ptr("tasks", &a.tasks)?,
        corrupt: ptr("corrupt", &a.corrupt)?,
        id: ptr("id", &a.id)?,
        fetch: a.fetch,
        also,
    };
    if let Some(n) = answer.call
        && n >= calls.len()
    {
        return Err(err(
            &format!("{akey}.call"),
            format!("there are only {} calls", calls.len()),
        ));
    }
    match op {
        Op::Create | Op::Update | Op::Claim | Op::Get => {
            if op == Op::Get && answer.fetch {
                return Err(err(
                    &format!("{akey}.fetch"),
                    "get cannot fetch itself".into(),
                ));
            }
            if op == Op::Get && answer.task.is_some() && answer.tasks.is_some() {
                return Err(err(
                    &format!("{akey}.tasks"),
                    "get reads one task: `task` (a pointer to it) or `tasks` (a list to pick it \
                     from by id), not both"
                        .into(),
                ));
            }
            if op != Op::Get && answer.tasks.is_some() {
                return Err(err(
                    &format!("{akey}.tasks"),
                    format!("{op} answers one task: `task`, or fetch = true"),
                ));
            }
            if answer.task.is_none() && !answer.fetch && answer.tasks.is_none() {
                return Err(err(
                    &format!("{akey}.task"),
                    "missing: a JSON pointer to the task in the result, or fetch = true".into(),
                ));
            }
            if op == Op::Create && answer.fetch && answer.id.is_none() && !known.contains("id") {
                return Err(err(
                    &format!("{akey}.id"),
                    "missing: create with fetch = true needs the new task's id (answer.id or \
                     a call's id)"
                        .into(),
                ));
            }
        }
        Op::List if answer.tasks.is_none() => {
            return Err(err(
                &format!("{akey}.tasks"),
                "missing: a JSON pointer to the array of tasks".into(),
            ));
        }
        _ => {}
    }
    let unsupported_when = raw
        .unsupported_when
        .iter()
        .enumerate()
        .map(|(i, w)| conds(w, &format!("{base}.unsupported_when[{i}]"), &known, err))
        .collect::<Result<_, _>>()?;
    if raw.unsupported_after > calls.len() {
        return Err(err(
            &format!("{base}.unsupported_after"),
            format!("there are only {} calls", calls.len()),
        ));
    }
    let undo = match &raw.undo {
        None => None,
        Some(u) => {
            if !calls.iter().any(|c| c.id.is_some()) {
                return Err(err(
                    &format!("{base}.undo"),
                    "undoes the task a call made: needs a call with `id`".into(),
                ));
            }
            let u = call(u, &format!("{base}.undo"), &known, scope)?;
            if u.for_each.is_some() || u.read.is_some() {
                return Err(err(
                    &format!("{base}.undo"),
                    "one call: no for_each or read".into(),
                ));
            }
            Some(u)
        }
    };
    Ok(OpMap {
        calls,
        answer,
        unsupported_when,
        unsupported_after: raw.unsupported_after,
        undo,
    })
}

fn toml_to_json(v: &toml::Value) -> Value {
    match v {
        toml::Value::String(s) => Value::String(s.clone()),
        toml::Value::Integer(i) => Value::from(*i),
        toml::Value::Float(f) => {
            serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number)
        }
        toml::Value::Boolean(b) => Value::Bool(*b),
        toml::Value::Datetime(d) => Value::String(d.to_string()),
        toml::Value::Array(a) => Value::Array(a.iter().map(toml_to_json).collect()),
        toml::Value::Table(t) => Value::Object(
            t.iter()
                .map(|(k, v)| (k.clone(), toml_to_json(v)))
                .collect(),
        ),
    }
}

/// A value with every string `"{null}"` in it made JSON null (TOML has no null).
fn nulls(v: Value) -> Value {
    match v {
        Value::String(s) if s == "{null}" => Value::Null,
        Value::Array(a) => Value::Array(a.into_iter().map(nulls).collect()),
        Value::Object(o) => Value::Object(o.into_iter().map(|(k, v)| (k, nulls(v))).collect()),
        other => other,
    }
}

/// A dotted path whose first part is one of `known`.
fn var_path(p: &str, known: &BTreeSet<&str>) -> Result<Vec<String>, String> {
    let parts: Vec<String> = p.split('.').map(str::to_string).collect();
    if parts.iter().any(String::is_empty) {
        return Err(format!("{p:?} is not a path like task.subject"));
    }
    if !known.contains(parts[0].as_str()) {
        return Err(format!(
            "{p:?}: this request has no {:?} here; it has {}",
            parts[0],
            known.iter().copied().collect::<Vec<_>>().join(", ")
        ));
    }
    Ok(parts)
}

/// Compiles a TOML value into a template. The error says where inside (`.key[2]`).
fn template(v: &Value, known: &BTreeSet<&str>) -> Result<Template, (String, String)> {
    match v {
        Value::String(s) => string_template(s, known).map_err(|e| (String::new(), e)),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, t)| template(t, known).map_err(|(at, e)| (format!("[{i}]{at}"), e)))
            .collect::<Result<_, _>>()
            .map(Template::Array),
        Value::Object(m) if m.contains_key("=json") => {
            if m.len() > 1 {
                return Err((
                    ".\"=json\"".into(),
                    "a table with \"=json\" is the JSON text of its value: no other key".into(),
                ));
            }
            let inner =
                template(&m["=json"], known).map_err(|(at, e)| (format!(".\"=json\"{at}"), e))?;
            Ok(Template::Encode(Box::new(inner)))
        }
        Value::Object(m) => {
            let mut keys = Vec::new();
            let mut spread = None;
            for (k, v) in m {
                if k == "..." {
                    match string_template(v.as_str().unwrap_or(""), known) {
                        Ok(Template::Value(p, f)) => spread = Some((p, f)),
                        Err(e) => return Err((".\"...\"".into(), e)),
                        _ => {
                            return Err((
                                ".\"...\"".into(),
                                "a spread must be one whole \"{path}\" naming an object".into(),
                            ));
                        }
                    }
                    continue;
                }
                let t = template(v, known).map_err(|(at, e)| (format!(".{k}{at}"), e))?;
                keys.push((k.clone(), t));
            }
            Ok(Template::Object(keys, spread))
        }
        other => Ok(Template::Literal(other.clone())),
    }
}

fn string_template(s: &str, known: &BTreeSet<&str>) -> Result<Template, String> {
    if s == "{null}" {
        return Ok(Template::Literal(Value::Null));
    }
    let mut parts = Vec::new();
    let mut rest = s;
    while let Some(open) = rest.find('{') {
        let close = rest[open..]
            .find('}')
            .map(|c| open + c)
            .ok_or_else(|| format!("{s:?}: a {{ without its }}"))?;
        if open > 0 {
            parts.push(Part::Lit(rest[..open].to_string()));
        }
        let inner = &rest[open + 1..close];
        let (path, filters) = match inner.split_once('|') {
            Some((p, f)) => (
                p,
                Filter::parse_chain(f, known).map_err(|e| format!("{s:?}: {e}"))?,
            ),
            None => (inner, Vec::new()),
        };
        parts.push(Part::Var(
            var_path(path, known).map_err(|e| format!("{s:?}: {e}"))?,
            filters,
        ));
        rest = &rest[close + 1..];
    }
    if !rest.is_empty() {
        parts.push(Part::Lit(rest.to_string()));
    }
    Ok(match parts.as_slice() {
        [] => Template::Literal(Value::String(String::new())),
        [Part::Lit(l)] => Template::Literal(Value::String(l.clone())),
        [Part::Var(p, f)] => Template::Value(p.clone(), f.clone()),
        _ => Template::Text(parts),
    })
}

// ---------------------------------------------------------------------------------------
// Filling templates.

/// The value at `path` in `vars`; `None` when absent or null.
pub fn lookup<'a>(vars: &'a Value, path: &[String]) -> Option<&'a Value> {
    let mut v = vars;
    for p in path {
        v = v.get(p)?;
    }
    (!v.is_null()).then_some(v)
}

/// Whether the value at `path` is given: present, not null, `[]` or `{}` (a string, `""`
/// included, is given: the server judges it).
pub fn present(vars: &Value, path: &[String]) -> bool {
    match lookup(vars, path) {
        None => false,
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(o)) => !o.is_empty(),
        Some(_) => true,
    }
}

/// Whether a value counts as set: not null, `false`, `""`, `[]` or `{}`.
pub fn is_set(v: &Value) -> bool {
    match v {
        Value::Null | Value::Bool(false) => false,
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
        _ => true,
    }
}

impl Mapping {
    /// The value at `path` through `filters`; `None` when absent (after `or:`, `with:` and
    /// `without:`, which fill an absent value).
    /// The value a spread (`"..." = "{path|filter}"`) would spread, when present.
    pub fn spread_value(&self, vars: &Value, path: &[String], filters: &[Filter]) -> Option<Value> {
        self.value(vars, path, filters)
    }

    fn value(&self, vars: &Value, path: &[String], filters: &[Filter]) -> Option<Value> {
        let mut v = lookup(vars, path).cloned();
        for f in filters {
            v = self.filter(f, v, vars);
        }
        v
    }

    fn filter(&self, f: &Filter, v: Option<Value>, vars: &Value) -> Option<Value> {
        let int = |v: &Value| match v {
            Value::String(s)
                if !s.is_empty()
                    && s.bytes().all(|b| b.is_ascii_digit())
                    && (s == "0" || !s.starts_with('0')) =>
            {
                s.parse::<u64>().map_or_else(|_| v.clone(), Value::from)
            }
            other => other.clone(),
        };
        let text = |v: &Value| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let items = |v: Option<&Value>| match v {
            None => Vec::new(),
            Some(Value::Array(a)) => a.clone(),
            Some(one) => vec![one.clone()],
        };
        Some(match f {
            Filter::Or(t) => match v {
                None => Value::String(t.clone()),
                Some(Value::String(s)) if s.is_empty() => Value::String(t.clone()),
                Some(v) => v,
            },
            Filter::With(p) => {
                let mut base = items(v.as_ref());
                for x in items(lookup(vars, p)) {
                    if !base.contains(&x) {
                        base.push(x);
                    }
                }
                Value::Array(base)
            }
            Filter::Without(p) => {
                let drop = items(lookup(vars, p));
                Value::Array(
                    items(v.as_ref())
                        .into_iter()
                        .filter(|x| !drop.contains(x))
                        .collect(),
                )
            }
            Filter::Status => match v? {
                Value::String(s) => self.status_out(&s),
                other => other,
            },
            Filter::Int => int(&v?),
            Filter::Ints => match v? {
                Value::Array(a) => Value::Array(a.iter().map(int).collect()),
                other => int(&other),
            },
            Filter::String => Value::String(text(&v?)),
            Filter::Json => Value::String(v?.to_string()),
            Filter::Join => match v? {
                Value::Array(a) => Value::String(a.iter().map(text).collect::<Vec<_>>().join(",")),
                other => other,
            },
        })
    }

    /// Fills a template from `vars`; `None` when it names something absent.
    pub fn fill(&self, t: &Template, vars: &Value) -> Option<Value> {
        match t {
            Template::Literal(v) => Some(v.clone()),
            Template::Value(p, f) => self.value(vars, p, f),
            Template::Text(parts) => {
                let mut s = String::new();
                for part in parts {
                    match part {
                        Part::Lit(l) => s.push_str(l),
                        Part::Var(p, f) => match self.value(vars, p, f)? {
                            Value::String(x) => s.push_str(&x),
                            other => s.push_str(&other.to_string()),
                        },
                    }
                }
                Some(Value::String(s))
            }
            Template::Array(items) => Some(Value::Array(
                items.iter().filter_map(|i| self.fill(i, vars)).collect(),
            )),
            Template::Object(keys, spread) => {
                let mut m = Map::new();
                if let Some((p, f)) = spread
                    && let Some(Value::Object(o)) = self.value(vars, p, f)
                {
                    for (k, v) in o {
                        if !keys.iter().any(|(e, _)| *e == k) {
                            m.insert(k.clone(), v.clone());
                        }
                    }
                }
                for (k, t) in keys {
                    if let Some(v) = self.fill(t, vars) {
                        m.insert(k.clone(), v);
                    }
                }
                Some(Value::Object(m))
            }
            Template::Encode(inner) => self.fill(inner, vars).map(|v| Value::String(v.to_string())),
        }
    }

    /// A server's task as a wire task: fields renamed, `also` fields added, values parsed,
    /// ids as strings, status words and values translated; everything else as the server
    /// gave it. Ids stay the server's (the id table, if any, is applied later).
    pub fn task_in(&self, v: &Value, also: &Map<String, Value>) -> Value {
        let Value::Object(server) = v else {
            return v.clone();
        };
        let mut o = server.clone();
        for (wire, name) in &self.task.fields {
            if let Some(x) = o.remove(name) {
                o.insert(wire.clone(), x);
            }
        }
        for (k, x) in also {
            o.insert(k.clone(), x.clone());
        }
        for (field, how) in &self.task.parse {
            let parsed = match (how, o.get(field)) {
                (Parse::Json, Some(Value::String(s))) => serde_json::from_str(s).ok(),
                (Parse::Each(re), Some(Value::String(s))) => Some(Value::Array(
                    text::each_first(re, s)
                        .into_iter()
                        .map(Value::String)
                        .collect(),
                )),
                (Parse::Each(_), None | Some(Value::Null)) => Some(Value::Array(Vec::new())),
                _ => None,
            };
            if let Some(p) = parsed {
                o.insert(field.clone(), p);
            }
        }
        let id = |v: &Value| match v {
            Value::Number(n) => Value::String(n.to_string()),
            other => other.clone(),
        };
        if let Some(x) = o.get_mut("id") {
            *x = id(x);
        }
        for k in ["blocks", "blockedBy"] {
            if let Some(Value::Array(a)) = o.get_mut(k) {
                for x in a.iter_mut() {
                    *x = id(x);
                }
            }
        }
        if self.task.status_from.is_empty() {
            if let Some(Value::String(s)) = o.get_mut("status") {
                *s = self.status_in(s);
            }
        } else {
            let status = self.task.status_from.iter().find(|r| match &r.field {
                None => true,
                Some(f) => match (server.get(f), &r.equals) {
                    (Some(x), Some(want)) => x == want,
                    (Some(x), None) => is_set(x),
                    (None, _) => false,
                },
            });
            if let Some(r) = status {
                o.insert("status".into(), Value::String(r.status.clone()));
            }
        }
        for (field, table) in &self.task.values {
            if let Some(Value::String(s)) = o.get_mut(field)
                && let Some(w) = table.get(s.as_str())
            {
                *s = w.clone();
            }
        }
        Value::Object(o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const GOOD: &str = r#"
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

    fn parse(text: &str) -> Result<Mapping, MappingError> {
        Mapping::parse(text, Path::new("m.toml"))
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

    #[test]
    fn templates_fill_from_the_request() {
        let m = parse(GOOD).unwrap();
        let vars = json!({"root": "/r", "list": "l", "id": "7",
            "patch": {"status": "completed", "metadata": {"a": 1}, "note": "mine"}});
        let calls = &m.ops[&Op::Update].calls;
        assert_eq!(
            m.fill(&calls[1].args, &vars),
            Some(json!({"id": "7", "status": "done"}))
        );
        // A spread passes every key; explicit keys win over spread ones.
        assert_eq!(
            m.fill(&calls[3].args, &vars),
            Some(
                json!({"status": "completed", "metadata": {"a": 1}, "id": "7", "note": "task 7 in l"})
            )
        );
        let get = &m.ops[&Op::Get].calls[0].args;
        assert_eq!(
            m.fill(get, &json!({"list": "l", "id": "12"})),
            Some(json!({"list": "l", "id": 12}))
        );
        // An id that is not decimal goes as given, for the server to judge.
        assert_eq!(
            m.fill(get, &json!({"list": "l", "id": "x1"})),
            Some(json!({"list": "l", "id": "x1"}))
        );
        // Absent parts leave their key out.
        let create = &m.ops[&Op::Create].calls[0].args;
        assert_eq!(
            m.fill(create, &json!({"list": "l", "task": {"subject": "s"}})),
            Some(json!({"list": "l", "title": "s"}))
        );
        let m2 = parse(&GOOD.replace(
            "title = \"{task.subject}\"",
            "title = \"{task.subject}\", about = \"{task.description|or:(none)}\", on = \"{task.blockedBy|join}\"",
        ))
        .unwrap();
        assert_eq!(
            m2.fill(
                &m2.ops[&Op::Create].calls[0].args,
                &json!({"list": "l", "task": {"subject": "s", "description": "", "blockedBy": ["1", "2"]}})
            ),
            Some(json!({"list": "l", "title": "s", "about": "(none)", "on": "1,2", "deps": [1, 2]}))
        );
        assert!(present(&vars, &["patch".into(), "status".into()]));
        assert!(!present(&vars, &["patch".into(), "owner".into()]));
    }

    #[test]
    fn tasks_are_read_back_into_wire_form() {
        let text = GOOD.replace(
            "[status]",
            "[task]\nfields = { subject = \"title\", blockedBy = \"dependencies\" }\nvalues = { description = { \"(none)\" = \"\" } }\n\n[status]",
        );
        let m = parse(&text).unwrap();
        let t = m.task_in(
            &json!({"id": 3, "title": "a", "dependencies": [1, 2],
            "status": "done", "description": "(none)", "priority": "high"}),
            &Map::new(),
        );
        assert_eq!(
            t,
            json!({"id": "3", "subject": "a", "blockedBy": ["1", "2"], "status": "completed",
                "description": "", "priority": "high"})
        );
    }

    /// Each bad input is an error naming the file and the key.
    #[test]
    fn bad_mappings_name_the_file_and_key() {
        let cases: Vec<(String, &str, &str)> = vec![
            (
                GOOD.replace("layout = \"claude-code\"", "layout = 3"),
                "(toml)",
                "layout",
            ),
            (
                GOOD.replace("[server]", "[server]\nport = 1"),
                "(toml)",
                "port",
            ),
            (
                GOOD.replace("layout = \"claude-code\"", "layout = \"flat\""),
                "server.layout",
                "flat",
            ),
            (
                GOOD.replace("\"not found\"", "\"not (found\""),
                "errors.text[0].pattern",
                "compile",
            ),
            (
                GOOD.replace("kind = \"not_found\"", "kind = \"gone\""),
                "errors.text[0].kind",
                "gone",
            ),
            (
                GOOD.replace("{task.subject}", "{patch.subject}"),
                "ops.create.calls[0].args.title",
                "patch",
            ),
            (
                GOOD.replace("\"...\" = \"{patch}\"", "\"...\" = \"{task}\""),
                "ops.update.calls[3].args.\"...\"",
                "no \"task\" here",
            ),
            (
                GOOD.replace("{id|int}", "{id|hex}"),
                "ops.get.calls[0].args.id",
                "hex",
            ),
            (
                GOOD.replace("{item}", "{list"),
                "ops.update.calls[2].args.on",
                "without",
            ),
            (
                GOOD.replace("unsupported = [\"claim\"]", ""),
                "ops.claim",
                "missing",
            ),
            (
                GOOD.replace("[\"claim\"]", "[\"claim\", \"get\"]"),
                "unsupported[1]",
                "both",
            ),
            (
                GOOD.replace("answer = { tasks = \"/tasks\" }", ""),
                "ops.list.answer.tasks",
                "missing",
            ),
            (
                GOOD.replace(
                    "answer = { tasks = \"/tasks\" }",
                    "answer = { tasks = \"tasks\" }",
                ),
                "ops.list.answer.tasks",
                "pointer",
            ),
            (
                GOOD.replace(
                    "features = [\"delete\", \"edges\"]",
                    "features = [\"claim\"]",
                ),
                "server.features",
                "claim",
            ),
            (
                GOOD.replace("[status]\ncompleted", "[status]\ndone"),
                "status.done",
                "wire status",
            ),
            (
                GOOD.replace("[ops.delete]", "[ops.hello]\ncalls = []\n[ops.delete]"),
                "ops.hello",
                "initialize",
            ),
            (
                GOOD.replace("default = \"io\"", "default = \"io\"\ndetect = [{ is = 1 }]"),
                "errors.detect[0]",
                "either `at`",
            ),
            (
                GOOD.replace(
                    "default = \"io\"",
                    "default = \"io\"\ndetect = [{ pattern = 'x', is = 1 }]",
                ),
                "errors.detect[0].is",
                "pattern",
            ),
            (
                GOOD.replace(
                    "[status]",
                    "[task]\nstatus_from = [{ status = \"done\" }]\n\n[status]",
                ),
                "task.status_from[0].status",
                "wire status",
            ),
            (
                GOOD.replace(
                    "[status]",
                    "[task]\nstatus_from = [{ status = \"pending\" }, { field = \"x\", status = \"completed\" }]\n\n[status]",
                ),
                "task.status_from[0]",
                "last",
            ),
            (
                GOOD.replace("[status]", "[task]\nparse = { owner = \"yaml\" }\n\n[status]"),
                "task.parse.owner",
                "json",
            ),
            (
                GOOD.replace(
                    "[status]",
                    "[lists]\ncreate = { tool = \"mk\", args = { name = \"{list}\" } }\n\n[status]",
                ),
                "lists.create.id",
                "missing",
            ),
            (
                GOOD.replace("completed = \"done\"", "completed = 3"),
                "status.completed",
                "table of arguments",
            ),
            (
                GOOD.replace(
                    "answer = { tasks = \"/tasks\" }",
                    "answer = { tasks = \"/tasks\", pattern = 'a', each = 'b' }",
                ),
                "ops.list.answer.each",
                "exclude",
            ),
            (
                GOOD.replace(
                    "answer = { tasks = \"/tasks\" }",
                    "answer = { tasks = \"/tasks\", section = '## x' }",
                ),
                "ops.list.answer.section",
                "neither",
            ),
            (
                GOOD.replace(
                    "calls = [{ tool = \"rm\", args = { id = \"{id}\" } }]",
                    "calls = [{ tool = \"rm\", args = { id = \"{id}\" } }]\nundo = { tool = \"rm\" }",
                ),
                "ops.delete.undo",
                "needs a call with `id`",
            ),
            (
                GOOD.replace(
                    "{ tool = \"set_status\", when = \"patch.status\",",
                    "{ tool = \"set_status\", when = { \"patch.status\" = \"{current.status}\" },",
                ),
                "ops.update.calls[1].when.\"patch.status\"",
                "no \"current\" here",
            ),
            (
                GOOD.replace("answer = { task = \"/task\" }\n\n[ops.get]", "answer = { task = \"/task\", also = { colour = { at = \"/c\" } } }\n\n[ops.get]"),
                "ops.create.answer.also.colour",
                "wire task field",
            ),
        ];
        for (text, key, word) in cases {
            let e = parse(&text).expect_err(key);
            assert_eq!(e.file, "m.toml");
            assert_eq!(e.key, key, "{e}");
            let shown = e.to_string();
            assert!(shown.contains(word), "{key}: {shown}");
            assert!(shown.starts_with("m.toml: "), "{shown}");
        }
    }

    #[test]
    fn status_from_fields_parsed_fields_and_pointers_with_stars() {
        let text = GOOD.replace(
            "[status]",
            "[task]\nfields = { blockedBy = \"deps\" }\nparse = { blockedBy = { each = '`([^`]+)`' }, metadata = \"json\" }\nstatus_from = [\n  { field = \"done\", equals = true, status = \"completed\" },\n  { field = \"started\", status = \"in_progress\" },\n  { status = \"pending\" },\n]\n\n[status]",
        );
        let m = parse(&text).unwrap();
        let t = m.task_in(
            &json!({"id": "x", "done": false, "started": "2026-01-01", "deps": "`a-1`, `b-2`",
                "metadata": "{\"k\": [1]}"}),
            &Map::new(),
        );
        assert_eq!(t["status"], "in_progress");
        assert_eq!(t["blockedBy"], json!(["a-1", "b-2"]));
        assert_eq!(t["metadata"], json!({"k": [1]}));
        // No Dependencies line: no edges.
        let t = m.task_in(&json!({"id": "y", "done": true}), &Map::new());
        assert_eq!(t["status"], "completed");
        assert_eq!(t["blockedBy"], json!([]));
        let t = m.task_in(&json!({"id": "z", "started": null}), &Map::new());
        assert_eq!(t["status"], "pending");
        let doc = json!({"deps": [{"on": "a"}, {"on": "b"}, {"off": 1}], "n": {"x/y": 2}});
        assert_eq!(at(&doc, "/deps/*/on"), Some(json!(["a", "b"])));
        assert_eq!(at(&doc, "/n/x~1y"), Some(json!(2)));
        assert_eq!(at(&doc, "/deps/1/on"), Some(json!("b")));
        assert_eq!(at(&doc, "/nope"), None);
    }

    #[test]
    fn filters_chain_and_fill_absent_lists() {
        let m = parse(GOOD).unwrap();
        let known: BTreeSet<&str> = ["current", "patch", "id"].into_iter().collect();
        let t = string_template(
            "{current.blockedBy|without:patch.removeBlockedBy|with:patch.addBlockedBy}",
            &known,
        )
        .unwrap();
        let vars = json!({"current": {"blockedBy": ["a", "b"]},
            "patch": {"removeBlockedBy": ["a"], "addBlockedBy": ["c", "b"]}});
        assert_eq!(m.fill(&t, &vars), Some(json!(["b", "c"])));
        // An absent list is empty: a task with no dependencies gains one.
        let t = string_template("{current.blockedBy|with:id}", &known).unwrap();
        assert_eq!(
            m.fill(&t, &json!({"current": {}, "id": "x"})),
            Some(json!(["x"]))
        );
        assert_eq!(
            m.fill(&string_template("{null}", &known).unwrap(), &json!({})),
            Some(Value::Null)
        );
        let enc = template(&json!({"=json": [{"n": "{id}"}]}), &known).unwrap();
        assert_eq!(
            m.fill(&enc, &json!({"id": "7"})),
            Some(json!("[{\"n\":\"7\"}]"))
        );
    }

    #[test]
    fn tools_and_arguments_are_checked_against_the_server() {
        let m = parse(GOOD).unwrap();
        let schema = |props: &[&str]| {
            json!({"type": "object", "properties":
                props.iter().map(|p| (p.to_string(), json!({}))).collect::<Map<_, _>>()})
        };
        let mut tools: BTreeMap<String, Value> = [
            ("add", schema(&["list", "title", "deps"])),
            ("show", json!({"type": "object"})),
            ("set_status", schema(&["id", "status"])),
            ("dep", schema(&["id", "on"])),
            ("edit", schema(&["id", "note"])),
            ("rm", schema(&["id"])),
            ("ls", schema(&["list"])),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        m.check_tools(&tools).unwrap();
        tools.remove("rm");
        let e = m.check_tools(&tools).unwrap_err();
        assert_eq!(e.key, "ops.delete.calls[0].tool");
        assert!(e.message.contains("no tool \"rm\""), "{e}");
        tools.insert("rm".into(), schema(&["taskId"]));
        let e = m.check_tools(&tools).unwrap_err();
        assert_eq!(e.key, "ops.delete.calls[0].args.id");
        assert!(e.message.contains("taskId"), "{e}");
    }
}
