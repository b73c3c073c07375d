//! Checking a mapping: the file as written (raw.rs) turned into the model, strictly, every
//! error a [`MappingError`] naming the file and the key; and the model checked against the
//! tools a server lists ([`Mapping::check_tools`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use regex_lite::Regex;
use serde_json::{Value, json};

use super::raw::{RawCall, RawDoc, RawMapping, RawOp, RawParse, RawPatterns, RawWhen, raw_doc};
use super::template::{Template, template, var_path};
use super::{
    Base, Call, Cond, CondValue, Detect, DetectHow, DocSource, ErrorRules, Launch, Mapping, OPS,
    OpMap, Parse, Read, StatusRule, StatusWords, TaskShape, TextHow, TextRead,
};
use taskproof_core::protocol::{ErrorKind, Feature, Layout, Op, request_features};
// The wire fields of a task (SPEC §1): the names `[task.fields]` may rename.
use taskproof_core::task::TASK_FIELDS;

/// The wire's status words.
const STATUSES: [&str; 3] = ["pending", "in_progress", "completed"];

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

/// Reads and checks a mapping given as text ([`Mapping::parse`]); `path` names it in errors.
pub(super) fn mapping(text: &str, path: &Path) -> Result<Mapping, MappingError> {
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
            let key = format!("server.features[{i}]");
            match f.parse::<Feature>() {
                Ok(Feature::Atomic) => Err(err(
                    &key,
                    "atomic is not declared: a mapping is atomic unless a call reads a task and \
                     writes with what it read (`read`), and hello then says which requests do"
                        .into(),
                )),
                other => other.map_err(|e| err(&key, e)),
            }
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
    let mut status_words = StatusWords::default();
    for (k, v) in &raw.status {
        match k.as_str() {
            "ignore_case" => {
                status_words.ignore_case = v.as_bool().ok_or_else(|| {
                    err(
                        "status.ignore_case",
                        format!("expected true or false, got {v}"),
                    )
                })?;
                continue;
            }
            "refuse" => {
                status_words.refuse = refused_words(v, &err)?;
                continue;
            }
            _ => {}
        }
        if !STATUSES.contains(&k.as_str()) {
            return Err(err(
                &format!("status.{k}"),
                "not a wire status; the keys are pending, in_progress and completed (the \
                 server's word for each), ignore_case and refuse"
                    .into(),
            ));
        }
        let v = nulls(toml_to_json(v));
        if !(v.is_string() || v.is_object()) {
            return Err(err(
                &format!("status.{k}"),
                format!("expected the server's word (a string) or a table of arguments, got {v}"),
            ));
        }
        status.insert(k.clone(), v);
    }
    for (i, w) in status_words.refuse.iter().enumerate() {
        if STATUSES.iter().any(|s| status_words.same(s, w)) {
            return Err(err(
                &format!("status.refuse[{i}]"),
                format!(
                    "{w:?} is a wire status: the client answers the three wire words as the \
                     mapping says, so it cannot refuse one"
                ),
            ));
        }
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
            equals: r.equals.as_ref().map(|v| nulls(toml_to_json(v))),
            status: r.status.clone(),
        });
    }
    let mut parse = BTreeMap::new();
    for (field, p) in &raw.task.parse {
        let key = format!("task.parse.{field}");
        let how = match p {
            RawParse::Word(w) if w == "json" => Parse::Json,
            RawParse::Word(w) => {
                return Err(err(
                    &key,
                    format!("expected \"json\" or {{ each = PATTERN }}, got {w:?}"),
                ));
            }
            RawParse::Each { each } => Parse::Each(
                Regex::new(each)
                    .map_err(|e| err(&format!("{key}.each"), format!("does not compile: {e}")))?,
            ),
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
                d.is.as_ref().map(|v| match nulls(toml_to_json(v)) {
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
    // A declared part is judged (docs/spec.md, "Optional parts"): a request that needs only
    // declared parts cannot be answered `unsupported` by the mapping, or the refusal would be
    // the server's failure. A request that needs an undeclared part is not judged anyway.
    let declared_but_unsupported = |key: &str, request: Value, what: &str| {
        let needs = request_features(&request);
        if needs.is_empty() || !needs.is_subset(&features) {
            return Ok(());
        }
        let parts = needs.iter().map(|f| f.as_str()).collect::<Vec<_>>();
        Err(err(
            key,
            format!(
                "declares {} but answers {what} unsupported: a step that sends it is judged, and \
                 the refusal would be the server's failure; map it, or do not declare {}",
                parts.join(" and "),
                if parts.len() == 1 { "it" } else { "them" }
            ),
        ))
    };
    for (i, s) in raw.unsupported.iter().enumerate() {
        declared_but_unsupported(&format!("unsupported[{i}]"), json!({ "op": s }), s)?;
    }
    for (op, m) in &ops {
        for (i, conds) in m.unsupported_when.iter().enumerate() {
            // A plain path: the request that has it.
            let [Cond::Present(path)] = conds.as_slice() else {
                continue;
            };
            let mut request = json!({ "op": op.as_str() });
            let mut at = &mut request;
            for p in path {
                at = &mut at[p.as_str()];
            }
            *at = json!("x");
            declared_but_unsupported(
                &format!("ops.{op}.unsupported_when[{i}]"),
                request,
                &path.join("."),
            )?;
        }
    }
    if derived_blocks && !ops.contains_key(&Op::List) {
        return Err(err(
            "task.blocks",
            "\"derived\" needs [ops.list] to read every task".into(),
        ));
    }
    if !ops.contains_key(&Op::Get) {
        // Every read of a task inside a request goes through [ops.get]: a call's `read`, and
        // an answer's `fetch` (a list's of each task, another op's of its own).
        let reader = ops.values().find_map(|m| {
            let c = m.calls.iter().find(|c| c.read.is_some())?;
            Some(format!("{}'s read", c.key))
        });
        let fetcher = ops
            .iter()
            .find(|(_, m)| m.answer.fetch)
            .map(|(op, _)| format!("ops.{op}'s fetch"));
        if let Some(which) = reader.or(fetcher) {
            return Err(err(
                "ops.get",
                format!(
                    "missing: {which} reads a task through [ops.get] (a call's `read` and an \
                     answer's `fetch` do)"
                ),
            ));
        }
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
        status_words,
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

impl Mapping {
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
}

/// `status.refuse`: a list of the server's words, each a non-empty string.
fn refused_words(
    v: &toml::Value,
    err: &dyn Fn(&str, String) -> MappingError,
) -> Result<Vec<String>, MappingError> {
    let Some(items) = v.as_array() else {
        return Err(err(
            "status.refuse",
            format!("expected a list of the server's status words, got {v}"),
        ));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, w)| match w.as_str() {
            Some(s) if !s.is_empty() => Ok(s.to_string()),
            _ => Err(err(
                &format!("status.refuse[{i}]"),
                format!("expected one of the server's words (a non-empty string), got {w}"),
            )),
        })
        .collect()
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
    let mut no_error = BTreeSet::new();
    for (from, to) in &c.error_kinds {
        let k = format!("{key}.error_kinds.{from}");
        let parse = |s: &str| s.parse::<ErrorKind>().map_err(|e| err(&k, e));
        if to == "none" {
            no_error.insert(parse(from)?);
        } else {
            error_kinds.insert(parse(from)?, parse(to)?);
        }
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
        no_error,
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
                        if v.as_str() == Some("{null}") {
                            return Ok(CondValue::Null);
                        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::mapping::tests::{GOOD, parse};
    use serde_json::Map;

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
            // `each` makes the document an array; a list still names it (`tasks = ""`).
            (
                GOOD.replace("answer = { tasks = \"/tasks\" }", "answer = { each = '- (?P<id>\\d+)' }"),
                "ops.list.answer.tasks",
                "missing",
            ),
            // `[task.parse]` keys are wire fields (read after `[task.fields]` renames).
            (
                GOOD.replace("[status]", "[task]\nfields = { blockedBy = \"deps\" }\nparse = { deps = \"json\" }\n\n[status]"),
                "task.parse.deps",
                "not a wire task field",
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
                    "features = [\"delete\", \"claim\"]",
                ),
                "unsupported[0]",
                "declares claim but answers claim unsupported",
            ),
            (
                GOOD.replace(
                    "answer = { fetch = true }\n",
                    "answer = { fetch = true }\nunsupported_when = [\"patch.owner\", \"patch.addBlocks\"]\n",
                ),
                "ops.update.unsupported_when[1]",
                "declares edges but answers patch.addBlocks unsupported",
            ),
            (
                GOOD.replace("[\"delete\", \"edges\"]", "[\"delete\", \"atomic\"]"),
                "server.features[1]",
                "atomic is not declared",
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
                GOOD.replace("completed = \"done\"", "completed = \"done\"\nignore_case = \"yes\""),
                "status.ignore_case",
                "expected true or false",
            ),
            (
                GOOD.replace("completed = \"done\"", "completed = \"done\"\nrefuse = \"Draft\""),
                "status.refuse",
                "a list of the server's status words",
            ),
            (
                GOOD.replace("completed = \"done\"", "completed = \"done\"\nrefuse = [\"Draft\", 3]"),
                "status.refuse[1]",
                "non-empty string",
            ),
            (
                GOOD.replace(
                    "completed = \"done\"",
                    "completed = \"done\"\nignore_case = true\nrefuse = [\"Draft\", \"Pending\"]",
                ),
                "status.refuse[1]",
                "is a wire status",
            ),
            (
                GOOD.replace("completed = \"done\"", "completed = \"done\"\nignore_cases = true"),
                "status.ignore_cases",
                "ignore_case and refuse",
            ),
            (
                GOOD.replace(
                    "{ tool = \"set_status\", when = \"patch.status\",",
                    "{ tool = \"set_status\", when = { \"patch.status\" = \"{nul}\" },",
                ),
                "ops.update.calls[1].when.\"patch.status\"",
                "no \"nul\" here",
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
            (
                GOOD.replace("[\"claim\"]", "[\"claim\", \"get\"]").replace(
                    "[ops.get]\ncalls = [{ tool = \"show\", args = { list = \"{list}\", id = \"{id|int}\" } }]\nanswer = { task = \"/task\" }\n",
                    "",
                ),
                "ops.get",
                "ops.update's fetch",
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

    /// `"{null}"` is JSON null where the file gives a value to compare with: `errors.detect`'s
    /// `is` (as `status_from`'s `equals`, template.rs), not the text "{null}".
    #[test]
    fn null_in_detect_is_json_null() {
        let m = parse(&GOOD.replace(
            "default = \"io\"",
            "default = \"io\"\ndetect = [{ at = \"/error\", is = [\"{null}\", false] }]",
        ))
        .unwrap();
        match &m.errors.detect[0].how {
            DetectHow::At(p, Some(values)) => {
                assert_eq!(p, "/error");
                assert_eq!(values, &[Value::Null, Value::Bool(false)]);
            }
            other => panic!("{other:?}"),
        }
    }

    /// A request the mapping answers `unsupported` may need a part the mapping does not
    /// declare (its step is then not judged), or none at all; not only declared parts.
    #[test]
    fn unsupported_requests_that_need_an_undeclared_part_are_fine() {
        for when in [
            // edges and edge_removal: edge_removal is not declared.
            "[\"patch.removeBlocks\"]",
            // owner, metadata: not declared.
            "[\"patch.owner\", \"patch.metadata.k\"]",
            // A condition on values, not a part: not judged here.
            "[{ \"patch.status\" = \"pending\" }]",
            // No part at all: the refusal is judged, as the mapping says.
            "[\"patch.subject\"]",
        ] {
            let text = GOOD.replace(
                "answer = { fetch = true }\n",
                &format!("answer = {{ fetch = true }}\nunsupported_when = {when}\n"),
            );
            parse(&text).unwrap_or_else(|e| panic!("{when}: {e}"));
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
