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

use crate::protocol::{ErrorKind, Feature, Layout, Op};
// The wire fields of a task (SPEC §1): the names `[task.fields]` may rename.
use crate::task::TASK_FIELDS;

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

// ---------------------------------------------------------------------------------------
// The file as written.

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMapping {
    #[serde(default)]
    server: RawServer,
    #[serde(default)]
    status: BTreeMap<String, String>,
    #[serde(default)]
    task: RawTask,
    #[serde(default)]
    errors: RawErrors,
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
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawErrorRule {
    pattern: String,
    kind: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOp {
    calls: Vec<RawCall>,
    #[serde(default)]
    answer: RawRead,
    #[serde(default)]
    unsupported_when: Vec<String>,
    #[serde(default)]
    unsupported_after: usize,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCall {
    tool: String,
    #[serde(default)]
    args: toml::Table,
    when: Option<String>,
    for_each: Option<String>,
    id: Option<String>,
    from: Option<String>,
    pattern: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRead {
    call: Option<usize>,
    from: Option<String>,
    pattern: Option<String>,
    task: Option<String>,
    tasks: Option<String>,
    corrupt: Option<String>,
    id: Option<String>,
    #[serde(default)]
    fetch: bool,
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
    /// Wire status word → the server's word.
    pub status: BTreeMap<String, String>,
    pub task: TaskShape,
    pub errors: ErrorRules,
    pub unsupported: BTreeSet<Op>,
    pub ops: BTreeMap<Op, OpMap>,
}

/// How the server is started: arguments appended to the command, working directory and
/// environment, each a template over `{root}`.
#[derive(Debug, Default)]
pub struct Launch {
    pub args: Vec<String>,
    pub cwd: Option<String>,
    pub env: BTreeMap<String, String>,
}

impl Launch {
    /// `template` with `{root}` replaced.
    pub fn fill(template: &str, root: &Path) -> String {
        template.replace("{root}", &root.to_string_lossy())
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
}

/// One operation: the calls in order and how the answer is read.
#[derive(Debug)]
pub struct OpMap {
    pub calls: Vec<Call>,
    pub answer: Read,
    /// Request paths that make the request `unsupported` when present (not null, not
    /// empty).
    pub unsupported_when: Vec<Vec<String>>,
    /// How many calls run before `unsupported_when` is judged (a read of the task first).
    pub unsupported_after: usize,
}

#[derive(Debug)]
pub struct Call {
    pub tool: String,
    pub args: Template,
    pub when: Option<Vec<String>>,
    pub for_each: Option<Vec<String>>,
    /// Where the call's result gives the task id (later calls and the answer use it).
    pub id: Option<String>,
    pub doc: DocSource,
    /// `ops.create.calls[0]`, for messages.
    pub key: String,
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
    /// Read the task with the `get` mapping after the calls.
    pub fetch: bool,
}

/// Where a result's document comes from.
#[derive(Debug, Default)]
pub enum DocSource {
    /// `structuredContent` when there is one, else the text parsed as JSON.
    #[default]
    Auto,
    Structured,
    /// The text parsed as JSON.
    Json,
    /// A regular expression over the text: its named groups make an object of strings (a
    /// group named `json` is parsed and is the document).
    Pattern(Regex),
}

/// A tool's arguments: the mapping's TOML value with templates in its strings.
#[derive(Debug, Clone)]
pub enum Template {
    Literal(Value),
    /// `"{path|filter}"`: the value at `path`, any type; absent → the key is left out.
    Value(Vec<String>, Option<Filter>),
    /// A string with `{path}` inside: absent → the key is left out.
    Text(Vec<Part>),
    Array(Vec<Template>),
    /// Keys in order; `"..." = "{path}"` spreads an object's keys (explicit keys win).
    Object(Vec<(String, Template)>, Option<Vec<String>>),
}

#[derive(Debug, Clone)]
pub enum Part {
    Lit(String),
    Var(Vec<String>, Option<Filter>),
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
}

impl Filter {
    fn parse(s: &str) -> Result<Filter, String> {
        Ok(match s {
            "status" => Filter::Status,
            "int" => Filter::Int,
            "ints" => Filter::Ints,
            "string" => Filter::String,
            "json" => Filter::Json,
            "join" => Filter::Join,
            _ => match s.strip_prefix("or:") {
                Some(text) => Filter::Or(text.to_string()),
                None => {
                    return Err(format!(
                        "unknown filter {s:?}; expected status, int, ints, string, json, join \
                         or or:TEXT"
                    ));
                }
            },
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

        for k in raw.status.keys() {
            if !STATUSES.contains(&k.as_str()) {
                return Err(err(
                    &format!("status.{k}"),
                    "not a wire status; the keys are pending, in_progress and completed".into(),
                ));
            }
        }
        for k in raw.task.fields.keys().chain(raw.task.values.keys()) {
            if !TASK_FIELDS.contains(&k.as_str()) {
                return Err(err(
                    &format!("task.fields.{k}"),
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
            ops.insert(op, op_map(op, raw_op, &err)?);
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
        Ok(Mapping {
            path: path.to_path_buf(),
            launch: Launch {
                args: raw.server.args,
                cwd: raw.server.cwd,
                env: raw.server.env,
            },
            layout,
            features,
            check_form: raw.server.check_form,
            skip_stdout_noise: raw.server.skip_stdout_noise,
            status: raw.status,
            task: TaskShape {
                fields: raw.task.fields,
                derived_blocks,
                values: raw.task.values,
                sort: raw.task.sort,
            },
            errors,
            unsupported,
            ops,
        })
    }

    /// Checks the tools and arguments named against the server's tool list: every tool must
    /// exist, and every argument named must be a property of its input schema when the schema
    /// lists them. The error names the file, the key and the tool.
    pub fn check_tools(&self, tools: &BTreeMap<String, Value>) -> Result<(), MappingError> {
        for m in self.ops.values() {
            for call in &m.calls {
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
        }
        Ok(())
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
        for op in OPS {
            let text = match self.ops.get(&op) {
                None => "unsupported (the mapping's `unsupported`)".to_string(),
                Some(o) => {
                    let mut s = String::new();
                    for (i, c) in o.calls.iter().enumerate() {
                        if i > 0 {
                            s.push_str("; ");
                        }
                        s.push_str(&c.tool);
                        if let Some(w) = &c.when {
                            let _ = write!(s, " when {}", w.join("."));
                        }
                        if let Some(f) = &c.for_each {
                            let _ = write!(s, " for each of {}", f.join("."));
                        }
                    }
                    if o.answer.fetch {
                        s.push_str("; then get");
                    }
                    for p in &o.unsupported_when {
                        let _ = write!(s, "; {} unsupported", p.join("."));
                    }
                    s
                }
            };
            m.insert(op.to_string(), text);
        }
        m
    }

    /// The server's status word for a wire word (others as given).
    pub fn status_out(&self, wire: &str) -> String {
        self.status
            .get(wire)
            .cloned()
            .unwrap_or_else(|| wire.to_string())
    }

    /// The wire status word for a server word (others as given).
    pub fn status_in(&self, server: &str) -> String {
        self.status
            .iter()
            .find(|(_, s)| s.as_str() == server)
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

/// Checks a JSON pointer's form.
fn pointer(p: &str) -> Result<String, String> {
    if p.is_empty() || p.starts_with('/') {
        Ok(p.to_string())
    } else {
        Err(format!(
            "{p:?} is not a JSON pointer (\"\" or starting with /)"
        ))
    }
}

fn doc_source(from: Option<&str>, pattern: Option<&str>) -> Result<DocSource, (String, String)> {
    match (from, pattern) {
        (_, Some(p)) => match from {
            None | Some("pattern") => Regex::new(p)
                .map(DocSource::Pattern)
                .map_err(|e| ("pattern".into(), format!("does not compile: {e}"))),
            Some(f) => Err((
                "from".into(),
                format!("from = {f:?} and a pattern exclude each other"),
            )),
        },
        (None | Some("auto"), None) => Ok(DocSource::Auto),
        (Some("structured"), None) => Ok(DocSource::Structured),
        (Some("json"), None) => Ok(DocSource::Json),
        (Some("pattern"), None) => Err(("pattern".into(), "missing (from = \"pattern\")".into())),
        (Some(f), None) => Err((
            "from".into(),
            format!("expected auto, structured, json or pattern, got {f:?}"),
        )),
    }
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

fn op_map(
    op: Op,
    raw: &RawOp,
    err: &dyn Fn(&str, String) -> MappingError,
) -> Result<OpMap, MappingError> {
    let base = format!("ops.{op}");
    if raw.calls.is_empty() {
        return Err(err(
            &format!("{base}.calls"),
            "needs at least one call".into(),
        ));
    }
    let mut known: BTreeSet<&str> = roots(op).iter().copied().collect();
    let mut calls = Vec::new();
    for (i, c) in raw.calls.iter().enumerate() {
        let key = format!("{base}.calls[{i}]");
        let path_in = |k: &str, p: &str, known: &BTreeSet<&str>| {
            var_path(p, known).map_err(|e| err(&format!("{key}.{k}"), e))
        };
        let when = c
            .when
            .as_deref()
            .map(|p| path_in("when", p, &known))
            .transpose()?;
        let for_each = c
            .for_each
            .as_deref()
            .map(|p| path_in("for_each", p, &known))
            .transpose()?;
        let mut inner = known.clone();
        if for_each.is_some() {
            inner.insert("item");
        }
        let args = toml_to_json(&toml::Value::Table(c.args.clone()));
        let args = template(&args, &inner).map_err(|(at, e)| err(&format!("{key}.args{at}"), e))?;
        let doc = doc_source(c.from.as_deref(), c.pattern.as_deref())
            .map_err(|(k, e)| err(&format!("{key}.{k}"), e))?;
        let id =
            c.id.as_deref()
                .map(|p| pointer(p).map_err(|e| err(&format!("{key}.id"), e)))
                .transpose()?;
        if id.is_some() {
            known.insert("id");
        }
        calls.push(Call {
            tool: c.tool.clone(),
            args,
            when,
            for_each,
            id,
            doc,
            key,
        });
    }
    let a = &raw.answer;
    let akey = format!("{base}.answer");
    let doc = doc_source(a.from.as_deref(), a.pattern.as_deref())
        .map_err(|(k, e)| err(&format!("{akey}.{k}"), e))?;
    let ptr = |k: &str, p: &Option<String>| {
        p.as_deref()
            .map(|p| pointer(p).map_err(|e| err(&format!("{akey}.{k}"), e)))
            .transpose()
    };
    let answer = Read {
        call: a.call,
        doc,
        task: ptr("task", &a.task)?,
        tasks: ptr("tasks", &a.tasks)?,
        corrupt: ptr("corrupt", &a.corrupt)?,
        id: ptr("id", &a.id)?,
        fetch: a.fetch,
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
            if answer.task.is_none() && !answer.fetch {
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
        .map(|(i, p)| {
            var_path(p, &known).map_err(|e| err(&format!("{base}.unsupported_when[{i}]"), e))
        })
        .collect::<Result<_, _>>()?;
    if raw.unsupported_after > calls.len() {
        return Err(err(
            &format!("{base}.unsupported_after"),
            format!("there are only {} calls", calls.len()),
        ));
    }
    Ok(OpMap {
        calls,
        answer,
        unsupported_when,
        unsupported_after: raw.unsupported_after,
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
        Value::Object(m) => {
            let mut keys = Vec::new();
            let mut spread = None;
            for (k, v) in m {
                if k == "..." {
                    match string_template(v.as_str().unwrap_or(""), known) {
                        Ok(Template::Value(p, None)) => spread = Some(p),
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
        let (path, filter) = match inner.split_once('|') {
            Some((p, f)) => (
                p,
                Some(Filter::parse(f).map_err(|e| format!("{s:?}: {e}"))?),
            ),
            None => (inner, None),
        };
        parts.push(Part::Var(
            var_path(path, known).map_err(|e| format!("{s:?}: {e}"))?,
            filter,
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

/// Whether the value at `path` is there: present, not null, not `""`, `[]` or `{}`.
pub fn present(vars: &Value, path: &[String]) -> bool {
    match lookup(vars, path) {
        None => false,
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(o)) => !o.is_empty(),
        Some(_) => true,
    }
}

impl Mapping {
    /// The value at `path` through filter `f`; `None` when absent (after `or:`).
    fn value(&self, vars: &Value, path: &[String], f: Option<&Filter>) -> Option<Value> {
        if let Some(Filter::Or(text)) = f {
            return Some(match lookup(vars, path) {
                None => Value::String(text.clone()),
                Some(Value::String(s)) if s.is_empty() => Value::String(text.clone()),
                Some(v) => v.clone(),
            });
        }
        let v = lookup(vars, path)?;
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
        Some(match f {
            None | Some(Filter::Or(_)) => v.clone(),
            Some(Filter::Status) => match v {
                Value::String(s) => Value::String(self.status_out(s)),
                other => other.clone(),
            },
            Some(Filter::Int) => int(v),
            Some(Filter::Ints) => match v {
                Value::Array(a) => Value::Array(a.iter().map(int).collect()),
                other => int(other),
            },
            Some(Filter::String) => Value::String(text(v)),
            Some(Filter::Json) => Value::String(v.to_string()),
            Some(Filter::Join) => match v {
                Value::Array(a) => Value::String(a.iter().map(text).collect::<Vec<_>>().join(",")),
                other => other.clone(),
            },
        })
    }

    /// Fills a template from `vars`; `None` when it names something absent.
    pub fn fill(&self, t: &Template, vars: &Value) -> Option<Value> {
        match t {
            Template::Literal(v) => Some(v.clone()),
            Template::Value(p, f) => self.value(vars, p, f.as_ref()),
            Template::Text(parts) => {
                let mut s = String::new();
                for part in parts {
                    match part {
                        Part::Lit(l) => s.push_str(l),
                        Part::Var(p, f) => match self.value(vars, p, f.as_ref())? {
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
                if let Some(p) = spread
                    && let Some(Value::Object(o)) = lookup(vars, p)
                {
                    for (k, v) in o {
                        if !keys.iter().any(|(e, _)| e == k) {
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
        }
    }

    /// A server's task as a wire task: fields renamed, ids as strings, status words and
    /// values translated; everything else as the server gave it.
    pub fn task_in(&self, v: &Value) -> Value {
        let Value::Object(o) = v else {
            return v.clone();
        };
        let mut o = o.clone();
        for (wire, server) in &self.task.fields {
            if let Some(x) = o.remove(server) {
                o.insert(wire.clone(), x);
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
        if let Some(Value::String(s)) = o.get_mut("status") {
            *s = self.status_in(s);
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
        let t = m.task_in(&json!({"id": 3, "title": "a", "dependencies": [1, 2],
            "status": "done", "description": "(none)", "priority": "high"}));
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
