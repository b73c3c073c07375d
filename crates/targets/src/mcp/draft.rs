//! `taskproof mcp-draft COMMAND`: a first mapping for an MCP server, from its tool list and
//! one probe call of each tool it chooses.
//!
//! The server is started as a session would start it (with `HOME` and the working folder in a
//! scratch folder too, so that a server that keeps its data there keeps the probe's task
//! there), with no operation mapped; its tools and input schemas become comments, and for each
//! operation the tool whose name names a task and fits best is mapped (also a tool that takes
//! the operation as an argument's enum value, `manage {operation: create}`), with its
//! arguments matched to the request by name. Then, unless told not to, each chosen tool is
//! called once on a probe task (create, get, list, update, delete in that order): its answer
//! says whether the server answers JSON or text, where the task, its id and the list are (for
//! text: the id from its label or header line, never from a file path, and patterns that
//! keep each field's label), whether the server reads its status words without case, and
//! where it keeps its data; the schema's status `enum` gives every status word and each
//! argument's type its template's filter. Every guess is marked `# CHECK:` for a person; the
//! draft is read back through the mapping checker (and against the tools) before it is
//! returned, so it parses.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use regex_lite::Regex;
use serde_json::{Map, Value, json};

use super::mapping::{Mapping, OPS};
use super::{McpSession, McpTarget, with_stderr};
use taskproof_core::protocol::Op;
use taskproof_session::{Session, SessionOptions};

/// The subject of the probe's task, found again in answers.
const PROBE_SUBJECT: &str = "taskproof probe task 7f3a";

/// Starts `command` on a scratch root, lists its tools, probes the chosen ones (when `probe`)
/// and returns the draft mapping's text.
pub fn draft(command: &str, options: SessionOptions, probe: bool) -> Result<String, String> {
    let none = format!(
        "unsupported = [{}]\n[server]\ncwd = \"{{root}}/cwd\"\nenv = {{ HOME = \"{{root}}/home\" }}\n",
        OPS.iter()
            .map(|o| format!("\"{o}\""))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let empty = Mapping::parse(&none, Path::new("(no mapping)")).map_err(|e| e.to_string())?;
    let target = McpTarget::new(command, Some(Arc::new(empty)));
    let root = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut session = McpSession::open(&target, root.path(), options)
        .map_err(|(e, stderr)| with_stderr(e, &stderr).to_string())?;
    let hello = session.hello().clone();
    let tools = session.tools().clone();
    let chosen = choose(&tools);
    let mut learned = if probe {
        probe_tools(&mut session, &tools, &chosen)
    } else {
        BTreeMap::new()
    };
    session.kill();
    // A server no tool of which takes a list keeps one list per process: where did its task go?
    if !lists_per_call(&tools, &chosen)
        && let Some(l) = learned.get_mut(&Op::Create)
    {
        l.data = data_folder(root.path()).map(str::to_string);
    }
    let text = render_with(
        command,
        &hello.name,
        &hello.version,
        &tools,
        &chosen,
        &learned,
    );
    let checked = Mapping::parse(&text, Path::new("(draft)"))
        .map_err(|e| format!("the draft does not read back (a bug of mcp-draft): {e}\n{text}"))?;
    let schemas = tools
        .iter()
        .map(|(k, (_, s))| (k.clone(), s.clone()))
        .collect();
    checked
        .check_tools(&schemas)
        .map_err(|e| format!("the draft does not fit the tools (a bug of mcp-draft): {e}"))?;
    Ok(text)
}

/// A tool name's words, lower case: `add_task`, `addTask`, `add-task` → add, task.
fn words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if c == '_' || c == '-' || c == '.' || c == ' ' {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// The verbs that name an operation, best first.
fn verbs(op: Op) -> &'static [&'static str] {
    match op {
        Op::Create => &["create", "add", "new", "insert"],
        Op::Get => &[
            "get", "show", "read", "view", "fetch", "open", "detail", "details",
        ],
        Op::Update => &["update", "edit", "modify", "patch", "set"],
        Op::Delete => &["delete", "remove", "rm", "del", "archive"],
        Op::List => &["list", "ls", "all", "tasks", "search"],
        Op::Claim => &["claim", "take", "assign", "start"],
        Op::Hello => &[],
    }
}

/// Words that name a task.
const TASK_WORDS: [&str; 8] = [
    "task", "tasks", "todo", "todos", "issue", "issues", "ticket", "tickets",
];
/// Words that name no kind of record.
const NEUTRAL: [&str; 13] = [
    "by", "id", "ids", "one", "single", "to", "from", "of", "for", "in", "a", "the", "mcp",
];

/// How well a tool's name fits an operation (0: not at all). A name that names a task wins;
/// one that names another kind of record (an epic's handoffs, a dependency, the next task)
/// counts a quarter, and none when it names no task at all.
fn score(op: Op, name: &str) -> u32 {
    let w = words(name);
    let has = |k: &str| w.iter().any(|x| x == k);
    let Some(rank) = verbs(op).iter().position(|v| has(v)) else {
        return 0;
    };
    // A plural or "list" belongs to list (and to create, which may add several); a
    // relation (dependency, tag, subtask) to no task operation of its own.
    let plural = has("tasks") || has("list") || has("all");
    if !matches!(op, Op::List | Op::Create) && plural {
        return 0;
    }
    if op == Op::List && !plural && rank > 0 {
        return 0;
    }
    let mut s = 100 - 10 * rank as u32;
    let tasky = TASK_WORDS.iter().any(|t| has(t));
    if tasky {
        s += 50;
    }
    let all_verbs: Vec<&str> = OPS.iter().flat_map(|o| verbs(*o).iter().copied()).collect();
    let other = w.iter().any(|x| {
        !TASK_WORDS.contains(&x.as_str())
            && !NEUTRAL.contains(&x.as_str())
            && !all_verbs.contains(&x.as_str())
    });
    match (other, tasky) {
        (true, false) => 0,
        (true, true) => s / 4,
        _ => s,
    }
}

/// A tool chosen for an operation, with the constant arguments that make it do it (an
/// `operation` enum's value, `containerType = "task"`, `delete = true`).
#[derive(Debug, Clone)]
pub struct Choice {
    pub tool: String,
    pub consts: Vec<(String, Value)>,
    /// How it was chosen, for the CHECK line.
    pub why: String,
}

fn props(schema: &Value) -> Map<String, Value> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

fn enum_of(p: &Value) -> Vec<String> {
    p.get("enum")
        .and_then(Value::as_array)
        .map(|e| {
            e.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// The best tool for each operation: by name, or by an argument whose enum names the
/// operation (and, when one names kinds of record, the task).
pub fn choose(tools: &BTreeMap<String, (String, Value)>) -> BTreeMap<Op, Choice> {
    let mut chosen: BTreeMap<Op, Choice> = BTreeMap::new();
    for op in OPS {
        let mut best: Option<(u32, usize, Choice)> = None;
        for (tool, (_, schema)) in tools {
            let taken = chosen
                .values()
                .any(|c| c.tool == *tool && c.consts.is_empty());
            let mut consider = |s: u32, c: Choice| {
                if s > 0
                    && best.as_ref().is_none_or(|(b, l, _)| {
                        (s, usize::MAX - tool.len()) > (*b, usize::MAX - *l)
                    })
                {
                    best = Some((s, tool.len(), c));
                }
            };
            if !taken {
                consider(
                    score(op, tool),
                    Choice {
                        tool: tool.clone(),
                        consts: Vec::new(),
                        why: "from its name".into(),
                    },
                );
            }
            // An argument whose enum names the operation: `operation: create`.
            let ps = props(schema);
            for (arg, p) in &ps {
                let values = enum_of(p);
                let Some((rank, v)) = verbs(op).iter().enumerate().find_map(|(i, verb)| {
                    values
                        .iter()
                        .find(|v| v.to_lowercase() == *verb)
                        .map(|v| (i, v))
                }) else {
                    continue;
                };
                let mut consts = vec![(arg.clone(), json!(v))];
                let mut s = 100 - 10 * rank as u32;
                // Another enum argument naming kinds of record: the task one.
                for (kind_arg, kp) in &ps {
                    if kind_arg == arg {
                        continue;
                    }
                    if let Some(t) = enum_of(kp)
                        .iter()
                        .find(|k| TASK_WORDS.contains(&k.to_lowercase().as_str()))
                    {
                        consts.push((kind_arg.clone(), json!(t)));
                        s += 50;
                    }
                }
                if TASK_WORDS
                    .iter()
                    .any(|t| words(tool).iter().any(|w| w == t))
                {
                    s += 50;
                }
                // The tool that makes tasks by an operation argument changes them too.
                if chosen
                    .values()
                    .any(|c| c.tool == *tool && !c.consts.is_empty())
                {
                    s += 10;
                }
                consider(
                    s,
                    Choice {
                        tool: tool.clone(),
                        why: format!("its argument {arg} takes {v:?}"),
                        consts,
                    },
                );
            }
            // A boolean argument named for the operation (`update_task {delete: true}`).
            if op == Op::Delete
                && let Some((arg, _)) = ps.iter().find(|(k, p)| {
                    verbs(op).contains(&k.to_lowercase().as_str())
                        && p.get("type").and_then(Value::as_str) == Some("boolean")
                })
            {
                consider(
                    60,
                    Choice {
                        tool: tool.clone(),
                        consts: vec![(arg.clone(), json!(true))],
                        why: format!("its boolean argument {arg}"),
                    },
                );
            }
        }
        if let Some((_, _, c)) = best {
            chosen.insert(op, c);
        }
    }
    chosen
}

/// The request path an argument of `op`'s tool most likely takes, by its name.
fn guess_arg(op: Op, arg: &str) -> Option<String> {
    let a = arg.to_lowercase().replace(['_', '-'], "");
    let in_task = |f: &str| match op {
        Op::Create => Some(format!("{{task.{f}}}")),
        Op::Update => Some(format!("{{patch.{f}}}")),
        _ => None,
    };
    match a.as_str() {
        "list" | "listid" | "listname" | "tasklist" | "tasklistid" => Some("{list}".into()),
        "projectroot" | "project" | "projectdir" | "root" | "dir" | "path" => {
            Some("{root}/{list}".into())
        }
        "id" | "taskid" | "task" | "number" | "tasknumber"
            if op != Op::Create && op != Op::List =>
        {
            Some("{id}".into())
        }
        "subject" | "title" | "name" | "summary" => in_task("subject"),
        "description" | "body" | "details" | "content" => in_task("description"),
        "activeform" => in_task("activeForm"),
        "metadata" | "meta" => in_task("metadata"),
        "status" | "state" if op == Op::Update => Some("{patch.status|status}".into()),
        "owner" | "assignee" => match op {
            Op::Claim => Some("{owner}".into()),
            _ => in_task("owner"),
        },
        "blockedby" | "dependencies" | "dependson" | "deps" if op == Op::Create => {
            Some("{task.blockedBy}".into())
        }
        "blocks" if op == Op::Create => Some("{task.blocks}".into()),
        "addblockedby" if op == Op::Update => Some("{patch.addBlockedBy}".into()),
        "addblocks" if op == Op::Update => Some("{patch.addBlocks}".into()),
        "removeblockedby" if op == Op::Update => Some("{patch.removeBlockedBy}".into()),
        "removeblocks" if op == Op::Update => Some("{patch.removeBlocks}".into()),
        _ => None,
    }
}

/// Whether a chosen tool takes the list (an argument matched to `{list}`).
fn lists_per_call(
    tools: &BTreeMap<String, (String, Value)>,
    chosen: &BTreeMap<Op, Choice>,
) -> bool {
    chosen.iter().any(|(op, c)| {
        props(&tools[&c.tool].1).keys().any(|k| {
            matches!(
                guess_arg(*op, k).as_deref(),
                Some("{list}" | "{root}/{list}")
            )
        })
    })
}

/// The JSON type a property's schema names (the first that is not null).
fn schema_type(p: &Value) -> Option<&str> {
    match p.get("type")? {
        Value::String(t) => Some(t),
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).find(|t| *t != "null"),
        _ => None,
    }
}

/// A guessed template made to give the type the argument's schema names: a request's text
/// for an array (`{task.owner|array}`: a server that keeps a list of assignees), a list for
/// a string (`{task.blockedBy|join}`), a list of numbers (`|ints`), a number for an integer
/// id (`|int`), an object as JSON text (`|json`). Others as guessed.
fn typed(template: &str, p: &Value) -> String {
    let Some(inner) = template
        .strip_prefix('{')
        .and_then(|t| t.strip_suffix('}'))
        .filter(|t| !t.contains('{'))
    else {
        return template.to_string();
    };
    let path = inner.split('|').next().unwrap_or("");
    let field = path.rsplit('.').next().unwrap_or("");
    let list = matches!(
        field,
        "blockedBy" | "blocks" | "addBlockedBy" | "addBlocks" | "removeBlockedBy" | "removeBlocks"
    );
    let object = field == "metadata";
    let items = p.get("items").and_then(schema_type);
    let filter = match (schema_type(p), list, object) {
        (Some("array"), false, false) => "array",
        (Some("array"), true, _) if matches!(items, Some("integer" | "number")) => "ints",
        (Some("string"), true, _) => "join",
        (Some("string"), _, true) => "json",
        (Some("integer" | "number"), false, false)
            if matches!(field, "id" | "owner") || path == "id" =>
        {
            "int"
        }
        _ => return template.to_string(),
    };
    format!("{{{inner}|{filter}}}")
}

/// A TOML key: bare when it can be.
fn key(k: &str) -> String {
    if !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        k.to_string()
    } else {
        toml_string(k)
    }
}

fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

fn toml_value(v: &Value) -> String {
    match v {
        Value::String(s) => toml_string(s),
        other => other.to_string(),
    }
}

// ---------------------------------------------------------------------------------------
// The probe.

/// What one probe call showed.
#[derive(Debug, Clone, Default)]
pub struct Learned {
    pub tool: String,
    /// The call failed or refused: why.
    pub failed: Option<String>,
    /// The answer was JSON (structuredContent or its text).
    pub json: bool,
    /// The first characters of the answer's text.
    pub excerpt: String,
    /// The answer line the probe suggests (TOML), when it found the task or the list.
    pub answer: Option<String>,
    /// Where the answer gives the new task's id: a pointer (`/data/id`), or a pattern.
    pub id: Option<(String, Option<String>)>,
    /// The update probe's status in another case than the server's word, and whether the
    /// server took it.
    pub ignore_case: Option<(String, bool)>,
    /// The new task's id as the create probe found it.
    pub found_id: Option<String>,
    /// Where the create probe's task was written when no tool takes a list: `cwd` (the
    /// server's working folder) or `home`.
    pub data: Option<String>,
}

/// The arguments a probe call gives: the guesses filled with probe values, the constants, and
/// a plain value for every other required argument.
fn probe_args(op: Op, choice: &Choice, schema: &Value, id: Option<&str>) -> Map<String, Value> {
    let ps = props(schema);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut args = Map::new();
    for (name, p) in &ps {
        let v = match guess_arg(op, name).as_deref() {
            Some("{task.subject}") => Some(json!(PROBE_SUBJECT)),
            Some("{patch.subject}") => Some(json!(format!("{PROBE_SUBJECT}, renamed"))),
            Some("{task.description}" | "{patch.description}") => {
                Some(json!("A task made by taskproof mcp-draft's probe."))
            }
            Some("{id}") => id.map(|i| match (schema_type(p), i.parse::<u64>()) {
                (Some("integer" | "number"), Ok(n)) => json!(n),
                _ => json!(i),
            }),
            Some("{list}") => Some(json!("probe")),
            Some("{root}/{list}") => None,
            _ if required.contains(&name.as_str()) => Some(plain(p)),
            _ => None,
        };
        if let Some(v) = v {
            args.insert(name.clone(), v);
        }
    }
    for (k, v) in &choice.consts {
        args.insert(k.clone(), v.clone());
    }
    args
}

/// A plain value of a property's schema: its enum's first value, else one of its type.
fn plain(p: &Value) -> Value {
    if let Some(v) = p
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return v.clone();
    }
    match p.get("type").and_then(Value::as_str) {
        Some("integer" | "number") => json!(1),
        Some("boolean") => json!(false),
        Some("array") => json!([]),
        Some("object") => json!({}),
        _ => json!("probe"),
    }
}

/// The pointer of the first object (depth first) for which `pred` holds.
fn find_object(
    doc: &Value,
    pred: &dyn Fn(&Map<String, Value>) -> bool,
    at: &str,
) -> Option<String> {
    match doc {
        Value::Object(o) => {
            if pred(o) {
                return Some(at.to_string());
            }
            o.iter().find_map(|(k, v)| {
                find_object(
                    v,
                    pred,
                    &format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")),
                )
            })
        }
        Value::Array(a) => a
            .iter()
            .enumerate()
            .find_map(|(i, v)| find_object(v, pred, &format!("{at}/{i}"))),
        _ => None,
    }
}

/// The pointer of the first array (depth first) with an element for which `pred` holds.
fn find_array(doc: &Value, pred: &dyn Fn(&Map<String, Value>) -> bool, at: &str) -> Option<String> {
    match doc {
        Value::Array(a) if a.iter().any(|e| e.as_object().is_some_and(pred)) => {
            Some(at.to_string())
        }
        Value::Array(a) => a
            .iter()
            .enumerate()
            .find_map(|(i, v)| find_array(v, pred, &format!("{at}/{i}"))),
        Value::Object(o) => o.iter().find_map(|(k, v)| {
            find_array(
                v,
                pred,
                &format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")),
            )
        }),
        _ => None,
    }
}

const ID_KEYS: [&str; 6] = ["id", "taskId", "task_id", "uuid", "key", "ID"];

fn names_probe(o: &Map<String, Value>) -> bool {
    o.values()
        .any(|v| v.as_str().is_some_and(|s| s.starts_with(PROBE_SUBJECT)))
}

// ---------------------------------------------------------------------------------------
// Text answers: where the id, the fields and a list's entries are.

/// The description the probe gives its task, found again in answers.
const PROBE_DESCRIPTION: &str = "A task made by taskproof mcp-draft's probe.";

/// The pattern of an id's kind, for a token that has the shape of one: a UUID, 32 hex digits,
/// a word, a dash and a number (`task-12`, its word kept: `task-\d+`) or a word, a dash and
/// hex digits (`task-d6aa0844`). A plain word or number is no id unless a label says so.
fn id_shape(token: &str) -> Option<String> {
    let fixed = |re: &str| Regex::new(re).expect("fixed pattern");
    if fixed(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
        .is_match(token)
    {
        return Some(r"[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}".into());
    }
    if fixed(r"^[0-9a-fA-F]{32}$").is_match(token) {
        return Some(r"[0-9a-fA-F]{32}".into());
    }
    let c = fixed(r"^([A-Za-z][A-Za-z0-9]*[-_])([0-9A-Za-z]+)$").captures(token)?;
    let (word, tail) = (&c[1], &c[2]);
    if tail.bytes().all(|b| b.is_ascii_digit()) {
        Some(format!(r"{}\d+", regex_lite::escape(word)))
    } else if tail.len() >= 4 && tail.bytes().all(|b| b.is_ascii_hexdigit()) {
        Some(format!(r"{}[0-9a-fA-F]+", regex_lite::escape(word)))
    } else {
        None
    }
}

/// The pattern of a token a label names as the id (`ID: 7`, `**Key:** \`6e5bxr8t\``).
fn labelled_shape(token: &str) -> String {
    id_shape(token).unwrap_or_else(|| {
        if token.bytes().all(|b| b.is_ascii_digit()) {
            r"\d+".into()
        } else {
            r"[A-Za-z0-9][A-Za-z0-9_.-]*".into()
        }
    })
}

/// The spans of `text` that are not the task's own words: file paths (from a `/` or `~/`
/// that starts a word to the end of its line; a server that names a file after the task's
/// subject shows id-like tokens there) and, when `subject` is true, the probe's subject
/// however the server wrote it (any case, any separators: `probe-task-7f3a`).
fn hidden(text: &str, subject: bool) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Regex::new(r"(?m)(?:^|[\s:(\[`'\x22=])(~?/[^\n]*)")
        .expect("fixed pattern")
        .captures_iter(text)
        .filter_map(|c| c.get(1).map(|m| (m.start(), m.end())))
        .collect();
    if subject {
        let words: Vec<String> = PROBE_SUBJECT.split(' ').map(regex_lite::escape).collect();
        let re = Regex::new(&format!("(?i){}", words.join("[^A-Za-z0-9\n]+"))).expect("escaped");
        out.extend(re.find_iter(text).map(|m| (m.start(), m.end())));
    }
    out
}

fn inside(spans: &[(usize, usize)], at: usize, end: usize) -> bool {
    spans.iter().any(|(s, e)| at < *e && end > *s)
}

/// The lines of `text` with the offset each starts at.
fn lines(text: &str) -> Vec<(usize, &str)> {
    let mut at = 0;
    text.split('\n')
        .map(|l| {
            let here = at;
            at += l.len() + 1;
            (here, l)
        })
        .collect()
}

/// A label that says the id follows: `ID:`, `**Task ID:** \``, `key =`, at a line's start.
fn id_label() -> Regex {
    Regex::new(r"(?i)^[^A-Za-z0-9\n]*(?:task[ _-]?)?(?:id|key|identifier)[^A-Za-z0-9\n]*[:=][^A-Za-z0-9\n]*")
        .expect("fixed pattern")
}

/// Whether a line is a header of the answer: a Markdown heading, the first line with words,
/// or a line that names the probe's subject.
fn header_lines(text: &str) -> Vec<(usize, &str)> {
    let subject =
        Regex::new(&format!("(?i){}", regex_lite::escape(PROBE_SUBJECT))).expect("escaped");
    let mut first = true;
    lines(text)
        .into_iter()
        .filter(|(_, l)| {
            if l.trim().is_empty() {
                return false;
            }
            let head = first || l.trim_start().starts_with('#') || subject.is_match(l);
            first = false;
            head
        })
        .collect()
}

/// The id tokens of a line (word characters and inner dashes), with their offsets.
fn tokens(line: &str) -> Vec<(usize, &str)> {
    Regex::new(r"[A-Za-z0-9](?:[A-Za-z0-9_-]*[A-Za-z0-9])?")
        .expect("fixed pattern")
        .find_iter(line)
        .map(|m| (m.start(), m.as_str()))
        .collect()
}

/// A line's literal text in a pattern: escaped, runs of blanks any run of blanks.
fn literal(s: &str) -> String {
    let mut out = String::new();
    let mut blank = false;
    for c in s.chars() {
        if c == ' ' || c == '\t' {
            if !blank {
                out.push_str("[ \\t]+");
            }
            blank = true;
            continue;
        }
        blank = false;
        out.push_str(&regex_lite::escape(&c.to_string()));
    }
    out
}

/// What comes before the first value of a line, in a pattern: a label up to its colon kept
/// (what follows the colon, a mark that changes with the value, skipped), marks alone any
/// marks, and other text kept with the probe's subject any text.
fn lead(before: &str) -> String {
    let marks = |s: &str| !s.chars().any(char::is_alphanumeric);
    if before.is_empty() {
        return String::new();
    }
    if marks(before) {
        return "[^A-Za-z0-9\\n]*".into();
    }
    if let Some(colon) = before.rfind(':') {
        let (label, rest) = before.split_at(colon + 1);
        let label = if marks(label.trim_end_matches(':')) {
            "[^A-Za-z0-9\\n]*:".to_string()
        } else {
            literal(label)
        };
        let rest = if rest.trim().is_empty() {
            "[ \\t]*"
        } else {
            "[^\\n]*?"
        };
        return format!("{label}{rest}");
    }
    let subject =
        Regex::new(&format!("(?i){}", regex_lite::escape(PROBE_SUBJECT))).expect("escaped");
    match subject.find(before) {
        Some(m) => format!(
            "{}.*?{}",
            literal(&before[..m.start()]),
            literal(&before[m.end()..])
        ),
        None => literal(before),
    }
}

/// The new task's id in a text answer and a pattern that finds it in every such answer: the
/// token a label names as the id (`ID: …`), else the first id-shaped token of a header line
/// (`Created task task-3`, `# Task task-3 - …`); never a token inside a file path or the
/// task's own subject (`…/task-3 - probe-task-7f3a.md` holds `task-7f3a`, which is not it).
fn id_in_text(text: &str) -> Option<(String, String)> {
    let hide = hidden(text, true);
    let label = id_label();
    for (at, line) in lines(text) {
        let Some(m) = label.find(line) else { continue };
        let Some((t, token)) = tokens(&line[m.end()..]).into_iter().next() else {
            continue;
        };
        let start = m.end() + t;
        if t != 0 || inside(&hide, at + start, at + start + token.len()) {
            continue;
        }
        return Some((
            token.to_string(),
            format!(
                "(?m)^{}(?P<id>{})",
                literal(&line[..start]),
                labelled_shape(token)
            ),
        ));
    }
    for (at, line) in header_lines(text) {
        for (t, token) in tokens(line) {
            if inside(&hide, at + t, at + t + token.len()) {
                continue;
            }
            if let Some(shape) = id_shape(token) {
                return Some((
                    token.to_string(),
                    format!("(?m)^{}(?P<id>{shape})", lead(&line[..t])),
                ));
            }
        }
    }
    None
}

/// A field found in a text answer: where, and its name.
#[derive(Debug, Clone)]
struct Found {
    start: usize,
    end: usize,
    name: &'static str,
}

/// Where `needle` stands as a whole token in `text` (not inside a longer id or word), outside
/// `hide`.
fn whole(text: &str, needle: &str, hide: &[(usize, usize)]) -> Vec<usize> {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '-' || c == '_');
    text.match_indices(needle)
        .map(|(i, _)| i)
        .filter(|&i| {
            !word(text[..i].chars().next_back())
                && !word(text[i + needle.len()..].chars().next())
                && !inside(hide, i, i + needle.len())
        })
        .collect()
}

/// The status alternatives of a pattern: the server's words, longest first.
fn status_group(words: &[String]) -> String {
    let mut w: Vec<&String> = words.iter().collect();
    w.sort_by_key(|w| std::cmp::Reverse(w.len()));
    w.iter()
        .map(|w| regex_lite::escape(w))
        .collect::<Vec<_>>()
        .join("|")
}

/// The pattern of one line of `text` holding `found` (in order, all on that line): the
/// text around them kept (a label, separators), each value a named group.
fn line_pattern(text: &str, found: &[Found], id_shape: &str, words: &[String]) -> String {
    let line_start = text[..found[0].start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[found[0].start..]
        .find('\n')
        .map_or(text.len(), |i| found[0].start + i);
    let line = &text[line_start..line_end];
    let mut re = String::from("(?m)^");
    let alone = found.len() == 1
        && line[..found[0].start - line_start].trim().is_empty()
        && line[found[0].end - line_start..].trim().is_empty();
    if alone {
        // A value on a line of its own: the lines before it, up to one with words, say
        // where it is (`Description:`, a rule of dashes).
        let mut before: Vec<&str> = Vec::new();
        for l in text[..line_start].trim_end_matches('\n').rsplit('\n') {
            before.push(l);
            if l.chars().any(char::is_alphanumeric) || before.len() == 3 {
                break;
            }
        }
        let between = text[..line_start].len() - text[..line_start].trim_end_matches('\n').len();
        for (i, l) in before.iter().rev().enumerate() {
            if i > 0 {
                re.push_str("\\n");
            }
            if l.chars().any(char::is_alphanumeric) {
                re.push_str(&literal(l.trim_end()));
                re.push_str("[ \\t]*");
            } else {
                re.push_str("[^A-Za-z0-9\\n]*");
            }
        }
        re.push_str(&"\\n".repeat(between.max(1)));
    }
    let mut at = line_start;
    for (i, f) in found.iter().enumerate() {
        let before = &text[at..f.start];
        if i == 0 {
            if !alone {
                re.push_str(&lead(before));
            }
        } else {
            re.push_str(&literal(before));
        }
        let last = i + 1 == found.len();
        let rest = &text[f.end..line_end];
        let group = match f.name {
            "id" => id_shape.to_string(),
            "status" => status_group(words),
            // A free text last on its line: to the line's end, or for a field that ends
            // the answer, to the end (its inner lines kept).
            _ if last && rest.trim().is_empty() => {
                if text[f.end..].trim().is_empty() {
                    "(?s:.*?)".into()
                } else {
                    ".*?".into()
                }
            }
            _ => ".+?".into(),
        };
        let _ = write!(re, "(?P<{}>{group})", f.name);
        at = f.end;
    }
    let last = found.last().expect("a field");
    let rest = &text[last.end..line_end];
    if matches!(last.name, "id" | "status") {
        // Bounded by its shape: what follows does not matter.
    } else if !rest.trim().is_empty() {
        let _ = write!(re, "[ \\t]*{}[ \\t]*$", literal(rest.trim()));
    } else if text[last.end..].trim().is_empty() {
        re.push_str(r"\s*\z");
    } else {
        re.push_str("[ \\t]*$");
    }
    re
}

/// The patterns that read the probe task from a text answer (its id `id`, subject,
/// description and status word among `words`): one per line that holds any, the id's first
/// (it must match).
fn task_patterns(text: &str, id: &str, words: &[String]) -> Option<Vec<String>> {
    let paths = hidden(text, false);
    let with_subject = hidden(text, true);
    let headers: Vec<usize> = header_lines(text).iter().map(|(at, _)| *at).collect();
    let label = id_label();
    let line_of = |i: usize| text[..i].rfind('\n').map_or(0, |n| n + 1);
    // The id: on a labelled line, else a header, else anywhere outside paths and the subject.
    let ids = whole(text, id, &with_subject);
    let id_at = ids
        .iter()
        .find(|&&i| label.is_match(&text[line_of(i)..]))
        .or_else(|| ids.iter().find(|&&i| headers.contains(&line_of(i))))
        .or_else(|| ids.first())
        .copied()?;
    let mut found = vec![Found {
        start: id_at,
        end: id_at + id.len(),
        name: "id",
    }];
    for (needle, name) in [
        (PROBE_SUBJECT, "subject"),
        (PROBE_DESCRIPTION, "description"),
    ] {
        if let Some(i) = text
            .match_indices(needle)
            .map(|(i, _)| i)
            .find(|&i| !inside(&paths, i, i + needle.len()))
        {
            found.push(Found {
                start: i,
                end: i + needle.len(),
                name,
            });
        }
    }
    // The status: a word of the server's, on a line that says status if there is one.
    let taken = found.clone();
    let mut statuses: Vec<usize> = Vec::new();
    for w in words {
        for i in whole(text, w, &with_subject) {
            if !taken.iter().any(|f| i < f.end && i + w.len() > f.start) {
                statuses.push(i);
            }
        }
    }
    statuses.sort_unstable();
    let says_status = |i: usize| {
        let l = &text[line_of(i)..i];
        l.to_lowercase().contains("status") || l.to_lowercase().contains("state")
    };
    if let Some(&i) = statuses
        .iter()
        .find(|&&i| says_status(i))
        .or(statuses.first())
    {
        let w = words
            .iter()
            .filter(|w| text[i..].starts_with(w.as_str()))
            .max_by_key(|w| w.len())
            .expect("found");
        found.push(Found {
            start: i,
            end: i + w.len(),
            name: "status",
        });
    }
    let shape = labelled_shape(id);
    // One pattern per line, the id's first.
    let mut by_line: Vec<(usize, Vec<Found>)> = Vec::new();
    for f in found {
        let l = line_of(f.start);
        match by_line.iter_mut().find(|(x, _)| *x == l) {
            Some((_, fs)) => fs.push(f),
            None => by_line.push((l, vec![f])),
        }
    }
    Some(
        by_line
            .into_iter()
            .map(|(_, mut fs)| {
                fs.sort_by_key(|f| f.start);
                line_pattern(text, &fs, &shape, words)
            })
            .collect(),
    )
}

/// The pattern of every entry of a text list: the line that holds the probe task's id (with
/// its subject and status when that line has them).
fn list_pattern(text: &str, id: &str, words: &[String]) -> Option<String> {
    let with_subject = hidden(text, true);
    let at = *whole(text, id, &with_subject).first()?;
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[at..].find('\n').map_or(text.len(), |i| at + i);
    let mut found = vec![Found {
        start: at,
        end: at + id.len(),
        name: "id",
    }];
    if let Some(i) = text[line_start..line_end].find(PROBE_SUBJECT) {
        found.push(Found {
            start: line_start + i,
            end: line_start + i + PROBE_SUBJECT.len(),
            name: "subject",
        });
    }
    found.sort_by_key(|f| f.start);
    let mut re = line_pattern(text, &found, &labelled_shape(id), words);
    // Every entry, not only the probe's: its subject ends its line, not the answer.
    re = re.replace("(?s:.*?)", ".*?").replace(r"\s*\z", "[ \\t]*$");
    Some(re)
}

/// A pattern as a TOML string: a literal string when it can be (no `'`, no newline), so that
/// it reads as written.
fn toml_pattern(p: &str) -> String {
    if p.contains('\'') || p.contains('\n') {
        toml_string(p)
    } else {
        format!("'{p}'")
    }
}

/// The probe task's id as the server gave it: a string as it is, a number as its digits.
fn id_text(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

/// Calls each chosen tool once on a probe task, in the order create, get, list, update,
/// delete, and says what each answer showed. The update also gives the status in another
/// case than the server's word (`in progress` for `In Progress`): taken, the server reads its
/// words without case.
pub fn probe_tools(
    session: &mut McpSession,
    tools: &BTreeMap<String, (String, Value)>,
    chosen: &BTreeMap<Op, Choice>,
) -> BTreeMap<Op, Learned> {
    let mut out = BTreeMap::new();
    let mut id: Option<String> = None;
    let words = status_enum(tools, chosen);
    for op in [Op::Create, Op::Get, Op::List, Op::Update, Op::Delete] {
        let Some(choice) = chosen.get(&op) else {
            continue;
        };
        if matches!(op, Op::Get | Op::Update | Op::Delete) && id.is_none() {
            continue;
        }
        let schema = &tools[&choice.tool].1;
        let args = probe_args(op, choice, schema, id.as_deref());
        let mut l = Learned {
            tool: choice.tool.clone(),
            ..Learned::default()
        };
        // The status in another case than the server's own word, when the update takes one.
        let status_arg = props(schema)
            .keys()
            .find(|k| matches!(k.to_lowercase().as_str(), "status" | "state"))
            .cloned();
        let other_case = words
            .get(1)
            .or(words.first())
            .map(|w| {
                let lower = w.to_lowercase();
                if lower == *w { w.to_uppercase() } else { lower }
            })
            .filter(|w| !words.contains(w));
        let mut result = None;
        if op == Op::Update
            && let (Some(arg), Some(word)) = (&status_arg, &other_case)
        {
            let mut with_status = args.clone();
            with_status.insert(arg.clone(), json!(word));
            match session.probe_call(&choice.tool, Value::Object(with_status)) {
                Ok(r) if !r.is_error && !looks_refused(&r.text) => {
                    l.ignore_case = Some((word.clone(), true));
                    result = Some(Ok(r));
                }
                _ => l.ignore_case = Some((word.clone(), false)),
            }
        }
        let result =
            match result.unwrap_or_else(|| session.probe_call(&choice.tool, Value::Object(args))) {
                Ok(r) => r,
                Err(e) => {
                    l.failed = Some(e);
                    // Refused without the status too: the case told nothing.
                    l.ignore_case = None;
                    out.insert(op, l);
                    continue;
                }
            };
        l.excerpt = result.text.chars().take(600).collect();
        if result.is_error {
            l.failed = Some(format!("isError: {}", l.excerpt));
            l.ignore_case = None;
            out.insert(op, l);
            continue;
        }
        let doc = result
            .structured
            .clone()
            .or_else(|| serde_json::from_str::<Value>(result.text.trim()).ok());
        l.json = doc.is_some();
        match (op, &doc) {
            (Op::Create | Op::Get | Op::Update, Some(d)) => {
                if let Some(p) = find_object(d, &names_probe, "") {
                    l.answer = Some(format!("answer = {{ task = {} }}", toml_string(&p)));
                    if op == Op::Create {
                        let task = d.pointer(&p).cloned().unwrap_or(Value::Null);
                        if let Some(k) = ID_KEYS.iter().find(|k| task.get(**k).is_some()) {
                            id = task.get(*k).map(id_text);
                            l.id = Some((format!("{p}/{k}"), None));
                        }
                    }
                } else if op == Op::Create
                    && let Some(p) =
                        find_object(d, &|o| ID_KEYS.iter().any(|k| o.contains_key(*k)), "")
                {
                    let o = d
                        .pointer(&p)
                        .and_then(Value::as_object)
                        .cloned()
                        .unwrap_or_default();
                    let k = ID_KEYS.iter().find(|k| o.contains_key(**k)).expect("found");
                    id = o.get(*k).map(id_text);
                    l.id = Some((format!("{p}/{k}"), None));
                    l.answer = Some("answer = { fetch = true }".into());
                }
            }
            (Op::List, Some(d)) => {
                if let Some(p) = find_array(d, &names_probe, "") {
                    l.answer = Some(format!("answer = {{ tasks = {} }}", toml_string(&p)));
                }
            }
            (Op::Create, None) => {
                if let Some((found, pattern)) = id_in_text(&result.text) {
                    id = Some(found);
                    l.id = Some(("/id".into(), Some(pattern)));
                    l.answer = Some("answer = { fetch = true }".into());
                }
            }
            (Op::Get, None) => {
                if let Some(i) = &id
                    && let Some(patterns) = task_patterns(&result.text, i, &words)
                {
                    l.answer = Some(format!(
                        "answer = {{ task = \"\", pattern = [\n  {},\n] }}",
                        patterns
                            .iter()
                            .map(|p| toml_pattern(p))
                            .collect::<Vec<_>>()
                            .join(",\n  ")
                    ));
                }
            }
            (Op::Update, None) => {
                // The answer is read again by get: what the update said is only its text.
                l.answer = Some("answer = { fetch = true }".into());
            }
            (Op::List, None) => {
                if let Some(i) = &id
                    && let Some(pattern) = list_pattern(&result.text, i, &words)
                {
                    l.answer = Some(format!(
                        "answer = {{ each = {}, tasks = \"\", fetch = true }}",
                        toml_pattern(&pattern)
                    ));
                }
            }
            _ => {}
        }
        if op == Op::Create {
            l.found_id.clone_from(&id);
        }
        out.insert(op, l);
    }
    out
}

/// Whether the create probe's id was a decimal number.
fn learned_id_decimal(learned: &BTreeMap<Op, Learned>) -> bool {
    learned
        .get(&Op::Create)
        .and_then(|l| l.found_id.as_deref())
        .is_some_and(|i| !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit()))
}

/// Whether a result without isError says it refused (a server that answers refusals as
/// text).
fn looks_refused(text: &str) -> bool {
    Regex::new(r"(?i)^\W*(error|invalid|failed|not allowed|unknown)")
        .expect("fixed pattern")
        .is_match(text.trim_start())
}

/// Where the probe's task went, when no tool takes a list: the server's working folder or
/// HOME (the draft session's `{root}/cwd` and `{root}/home`), so one server per list.
pub fn data_folder(root: &Path) -> Option<&'static str> {
    let has_files = |d: &Path| walk(d).is_some_and(|n| n > 0);
    fn walk(d: &Path) -> Option<usize> {
        let mut n = 0;
        for e in std::fs::read_dir(d).ok()? {
            let p = e.ok()?.path();
            n += if p.is_dir() { walk(&p).unwrap_or(0) } else { 1 };
        }
        Some(n)
    }
    ["cwd", "home"]
        .into_iter()
        .find(|d| has_files(&root.join(d)))
}

/// Every word of the status argument's `enum` (the update tool's first, else any tool's).
fn status_enum(
    tools: &BTreeMap<String, (String, Value)>,
    chosen: &BTreeMap<Op, Choice>,
) -> Vec<String> {
    let order: Vec<&String> = chosen
        .get(&Op::Update)
        .map(|c| &c.tool)
        .into_iter()
        .chain(chosen.get(&Op::Create).map(|c| &c.tool))
        .chain(tools.keys())
        .collect();
    for t in order {
        for (k, p) in props(&tools[t].1) {
            if matches!(k.to_lowercase().as_str(), "status" | "state") {
                // A filter's words for every status are not statuses (`all`).
                let words: Vec<String> = enum_of(&p)
                    .into_iter()
                    .filter(|w| !matches!(w.to_lowercase().as_str(), "all" | "any" | "*"))
                    .collect();
                if !words.is_empty() {
                    return words;
                }
            }
        }
    }
    Vec::new()
}

/// The server's status words for the wire's, from the `enum` of a status argument: by their
/// meaning (`To Do`, `todo`, `backlog` are pending; case, blanks and marks do not matter),
/// then, when some are left, by their place (an enum of three, in the order pending,
/// in_progress, completed), marked. The words left over are the server's others, to refuse.
fn status_words(
    tools: &BTreeMap<String, (String, Value)>,
    chosen: &BTreeMap<Op, Choice>,
) -> (Vec<(String, String, bool)>, Vec<String>) {
    let words = status_enum(tools, chosen);
    let norm = |w: &str| -> String {
        w.to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric())
            .collect()
    };
    let like: [(&str, &[&str]); 3] = [
        (
            "pending",
            &[
                "pending",
                "todo",
                "new",
                "open",
                "notstarted",
                "backlog",
                "ready",
                "planned",
                "queued",
            ],
        ),
        (
            "in_progress",
            &[
                "inprogress",
                "active",
                "doing",
                "started",
                "wip",
                "working",
                "ongoing",
            ],
        ),
        (
            "completed",
            &[
                "completed",
                "done",
                "closed",
                "complete",
                "finished",
                "resolved",
            ],
        ),
    ];
    let mut out: Vec<(String, String, bool)> = Vec::new();
    for (wire, server) in like {
        if let Some(w) = words
            .iter()
            .find(|w| server.contains(&norm(w).as_str()) && !out.iter().any(|(_, s, _)| s == *w))
        {
            out.push((wire.to_string(), w.clone(), false));
        }
    }
    let left: Vec<&String> = words
        .iter()
        .filter(|w| !out.iter().any(|(_, s, _)| s == *w))
        .collect();
    if words.len() == 3 && !left.is_empty() {
        for (i, wire) in ["pending", "in_progress", "completed"].iter().enumerate() {
            if !out.iter().any(|(x, _, _)| x == wire) && !out.iter().any(|(_, s, _)| *s == words[i])
            {
                out.push((wire.to_string(), words[i].clone(), true));
            }
        }
    }
    let order = |w: &str| {
        ["pending", "in_progress", "completed"]
            .iter()
            .position(|x| *x == w)
    };
    out.sort_by_key(|(w, _, _)| order(w));
    let rest = words
        .iter()
        .filter(|w| !out.iter().any(|(_, s, _)| s == *w))
        .cloned()
        .collect();
    (out, rest)
}

/// The draft's text, without a probe.
pub fn render(
    command: &str,
    name: &str,
    version: &str,
    tools: &BTreeMap<String, (String, Value)>,
) -> String {
    render_with(
        command,
        name,
        version,
        tools,
        &choose(tools),
        &BTreeMap::new(),
    )
}

/// Said where the probe would have read a task again (`fetch`) but no tool reads one.
const NO_GET: &str = "# CHECK: no tool was chosen for get, so no task can be read again (fetch = \
                      true needs\n# [ops.get]): the answer itself must hold the task (a list's \
                      answer, every task).\n";

/// The draft's text.
pub fn render_with(
    command: &str,
    name: &str,
    version: &str,
    tools: &BTreeMap<String, (String, Value)>,
    chosen: &BTreeMap<Op, Choice>,
    learned: &BTreeMap<Op, Learned>,
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# A DRAFT mapping for {name} {version}, written by `taskproof mcp-draft {command}`.\n\
         # Every line marked CHECK is a guess: read the tool's schema below and its answers\n\
         # (try a call), then fix it. The format: docs/mcp-targets.md. Use it with\n\
         #   taskproof run --target 'mcp:{command}' --mapping THIS_FILE\n#\n# The server's tools:"
    );
    for (tool, (about, schema)) in tools {
        let about = about.split_whitespace().collect::<Vec<_>>().join(" ");
        let _ = writeln!(
            out,
            "#\n#   {tool}: {}",
            about.chars().take(300).collect::<String>()
        );
        let _ = writeln!(out, "#     input schema: {schema}");
    }
    if !learned.is_empty() {
        let _ = writeln!(
            out,
            "#\n# The probe called each chosen tool once on a task named {PROBE_SUBJECT:?} (HOME and\n\
             # the working folder in a scratch folder); what each answered is beside its operation."
        );
    }
    let unsupported: Vec<String> = OPS
        .iter()
        .filter(|o| !chosen.contains_key(o))
        .map(|o| format!("\"{o}\""))
        .collect();
    let mut features = Vec::new();
    for (op, f) in [(Op::Delete, "\"delete\""), (Op::Claim, "\"claim\"")] {
        if chosen.contains_key(&op) {
            features.push(f);
        }
    }
    let edges = tools.values().any(|(_, s)| {
        props(s).keys().any(|k| {
            let k = k.to_lowercase();
            k.contains("depend") || k.contains("blocked") || k == "blocks"
        })
    });
    if edges {
        features.push("\"edges\"");
    }
    // Several lists: a tool takes the list, or one server per list keeps each apart.
    let per_process = learned.get(&Op::Create).is_some_and(|l| l.data.is_some());
    if lists_per_call(tools, chosen) || per_process {
        features.push("\"lists\"");
    }
    let _ = writeln!(
        out,
        "\n# CHECK: operations no tool's name fits; map them if a tool does them.\nunsupported = [{}]\n",
        unsupported.join(", ")
    );
    let (status, others) = status_words(tools, chosen);
    // The server cannot judge the wire's form when its ids or status words are not the
    // wire's (docs/mcp-targets.md, "Malformed requests").
    let own_ids = learned
        .get(&Op::Create)
        .is_some_and(|l| l.id.is_some() && !learned_id_decimal(learned));
    let own_words = status.iter().any(|(w, s, _)| w != s);
    let form = if own_ids || own_words {
        "# CHECK: the server's ids or status words are not the wire's, so it cannot judge the\n\
         # wire's form: taskproof's client does (hello says so).\ncheck_form = true\n"
    } else {
        "check_form = false\n"
    };
    let data = match learned.get(&Op::Create).and_then(|l| l.data.as_deref()) {
        Some("cwd") => {
            "# PROBE: the probe's task was written in the server's working folder, and no tool takes\n\
                        # a list: one server per list, each working in its list's folder ({root}/{list}, the\n\
                        # working folder when cwd is not given).\nper_list = true\n"
        }
        Some(_) => {
            "# PROBE: the probe's task was written under the server's HOME, and no tool takes a list:\n\
                    # one server per list, each with a HOME in its list's folder.\nper_list = true\n\
                    env = { HOME = \"{root}/{list}/.home\" }\n"
        }
        None => {
            "# CHECK: how the server learns its folder (TASKPROOF_ROOT is always set): args, cwd, env.\n\
                 # A server that keeps one project per process: per_list = true and {list} in these.\n\
                 # args = [\"--root\", \"{root}\"]\n\
                 # cwd = \"{root}\"\n"
        }
    };
    let _ = writeln!(
        out,
        "[server]\n{data}\
         # CHECK: opaque unless the server writes Claude Code's layout (ROOT/LIST/ID.json).\n\
         layout = \"opaque\"\n\
         # CHECK: the optional parts of the contract the server has (docs/spec.md, \"Optional\n\
         # parts\"); guessed from the tools mapped and the arguments seen.\n\
         features = [{}]\n\
         {}",
        features.join(", "),
        form
    );
    let mut status_text = String::new();
    if status.is_empty() {
        status_text.push_str(
            "# pending = \"pending\"\n# in_progress = \"in_progress\"\n# completed = \"completed\"\n",
        );
    } else {
        for (w, s, by_place) in &status {
            if *by_place {
                let _ = writeln!(
                    status_text,
                    "# CHECK: {s:?} taken for {w} by its place in the enum."
                );
            }
            let _ = writeln!(status_text, "{w} = {}", toml_string(s));
        }
    }
    if !others.is_empty() {
        let _ = writeln!(
            status_text,
            "# CHECK: the enum's other words: the server's own, refused by the client as the wire\n\
             # has no such status (add a word that moves a task elsewhere, as a Draft).\nrefuse = [{}]",
            others
                .iter()
                .map(|w| toml_string(w))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    match learned
        .get(&Op::Update)
        .and_then(|l| l.ignore_case.as_ref())
    {
        Some((word, true)) => {
            let _ = writeln!(
                status_text,
                "# PROBE: the update took {word:?} for the server's word: it reads its words without case,\n\
                 # so a wire word that is one of them in another case is refused too.\nignore_case = true"
            );
        }
        Some((word, false)) => {
            let _ = writeln!(
                status_text,
                "# PROBE: the update refused {word:?}: the server reads its words with their case (or\n\
                 # refused it for another reason: try it)."
            );
        }
        None => {}
    }
    let ids_text = match learned.get(&Op::Create).and_then(|l| l.id.as_ref()) {
        Some(_) if learned_id_decimal(learned) => {
            "# CHECK: the probe's id was a number: if the server numbers each list 1, 2, … the wire's\n\
             # ids are its own; else number them.\n# ids = \"table\"\n"
        }
        Some(_) => {
            "# PROBE: the server's ids are its own (the probe's was not a number): taskproof numbers them,\n\
             # and lists are answered in the order of those numbers, as the wire's are.\nids = \"table\"\nsort = true\n"
        }
        None => "",
    };
    let _ = writeln!(
        out,
        "# CHECK: the server's status words (from a status argument's enum when there is one).\n\
         [status]\n{status_text}\n\
         # CHECK: the server's field names, if they differ (wire = server).\n[task]\n\
         # fields = {{ subject = \"title\", blockedBy = \"dependencies\" }}\n{ids_text}\n\
         # CHECK: read a few error results and say which text means which kind; a server that\n\
         # answers refusals without isError needs errors.detect.\n[errors]\n\
         text = [\n  {{ pattern = '(?i)not found|does not exist|no such', kind = \"not_found\" }},\n  \
         {{ pattern = '(?i)invalid|required|must be', kind = \"invalid\" }},\n]\n\
         default = \"io\"\n"
    );
    let get = chosen.contains_key(&Op::Get);
    for op in OPS {
        let Some(choice) = chosen.get(&op) else {
            continue;
        };
        let tool = &choice.tool;
        let (_, schema) = &tools[tool];
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut args: Vec<String> = choice
            .consts
            .iter()
            .map(|(k, v)| format!("{} = {}", key(k), toml_value(v)))
            .collect();
        let mut unmatched = Vec::new();
        for p in props(schema).keys() {
            if choice.consts.iter().any(|(k, _)| k == p) {
                continue;
            }
            match guess_arg(op, p) {
                Some(v) => {
                    let v = typed(&v, &props(schema)[p]);
                    args.push(format!("{} = {}", key(p), toml_string(&v)));
                }
                None if required.contains(&p.as_str()) => unmatched.push(format!("{p} (required)")),
                None => unmatched.push(p.clone()),
            }
        }
        let _ = writeln!(out, "[ops.{op}]\n# CHECK: {tool} guessed {}.", choice.why);
        if !unmatched.is_empty() {
            let _ = writeln!(
                out,
                "# CHECK: arguments with no guess: {}",
                unmatched.join(", ")
            );
        }
        let l = learned.get(&op);
        if let Some(l) = l {
            let kind = if l.json { "JSON" } else { "text" };
            match &l.failed {
                Some(e) => {
                    let _ = writeln!(out, "# PROBE: {tool} refused or failed: {}", one_line(e));
                }
                None => {
                    let _ = writeln!(
                        out,
                        "# PROBE: {tool} answered {kind}: {}",
                        one_line(&l.excerpt)
                    );
                }
            }
        }
        let id = match l.and_then(|l| l.id.as_ref()) {
            Some((p, None)) => format!(", id = {}", toml_string(p)),
            Some((p, Some(pattern))) => {
                format!(
                    ", id = {}, pattern = {}",
                    toml_string(p),
                    toml_string(pattern)
                )
            }
            None => String::new(),
        };
        let _ = writeln!(
            out,
            "calls = [{{ tool = {}, args = {{ {} }}{id} }}]",
            toml_string(tool),
            args.join(", ")
        );
        // A task is read again (`fetch`) through [ops.get]: not without a get tool.
        let learned_answer = l.and_then(|l| l.answer.clone());
        let (learned_answer, no_get) = match learned_answer {
            Some(a) if !get && a.contains("fetch = true") => match op {
                Op::List => (Some(a.replace(", fetch = true", "")), NO_GET),
                _ => (None, NO_GET),
            },
            other => (other, ""),
        };
        let answer = match (op, learned_answer) {
            (Op::Delete, _) => String::new(),
            (Op::Create, _) if get && l.is_some_and(|l| l.id.is_some()) => {
                "# CHECK: the task read again with get, by the id the probe found.\nanswer = { fetch = true }".into()
            }
            (_, Some(a)) => format!("{no_get}# CHECK: where the probe found the probe task.\n{a}"),
            (Op::Create | Op::Get | Op::Update | Op::Claim, None) => format!(
                "{no_get}# CHECK: where the answer keeps the task (a JSON pointer into structuredContent,\n\
                 # else into the text parsed as JSON; a text answer needs `pattern`).\nanswer = {{ task = \"/task\" }}"
            ),
            (Op::List, None) => {
                "# CHECK: where the answer keeps the tasks (a text answer needs `each`).\nanswer = { tasks = \"/tasks\" }".into()
            }
            _ => String::new(),
        };
        let _ = writeln!(out, "{answer}\n");
    }
    out
}

fn one_line(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(300)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_are_split_into_words() {
        assert_eq!(words("add_task"), ["add", "task"]);
        assert_eq!(words("getTasks"), ["get", "tasks"]);
        assert_eq!(words("set-task-status"), ["set", "task", "status"]);
    }

    fn best(names: &[&str], op: Op) -> Option<String> {
        let tools: BTreeMap<String, (String, Value)> = names
            .iter()
            .map(|n| (n.to_string(), (String::new(), json!({"type": "object"}))))
            .collect();
        choose(&tools).get(&op).map(|c| c.tool.clone())
    }

    #[test]
    fn task_masters_tools_are_guessed_as_a_person_would() {
        let names = [
            "add_task",
            "get_task",
            "get_tasks",
            "update_task",
            "set_task_status",
            "remove_task",
            "add_dependency",
            "next_task",
            "add_subtask",
        ];
        assert_eq!(best(&names, Op::Create).as_deref(), Some("add_task"));
        assert_eq!(best(&names, Op::Get).as_deref(), Some("get_task"));
        assert_eq!(best(&names, Op::List).as_deref(), Some("get_tasks"));
        assert_eq!(best(&names, Op::Update).as_deref(), Some("update_task"));
        assert_eq!(best(&names, Op::Delete).as_deref(), Some("remove_task"));
        assert_eq!(best(&names, Op::Claim), None);
    }

    /// What the first drafts of issue 41 got wrong: a tool that removes another kind of
    /// record taken for delete, the next task for get; the tool names naming a task win.
    #[test]
    fn tools_whose_names_name_a_task_are_preferred() {
        let ohno = [
            "delete_epic_handoffs",
            "archive_task",
            "get_task",
            "get_next_task",
            "create_task",
        ];
        assert_eq!(best(&ohno, Op::Delete).as_deref(), Some("archive_task"));
        assert_eq!(best(&ohno, Op::Get).as_deref(), Some("get_task"));
        let kazuph = [
            "get_next_task",
            "open_task_details",
            "add_tasks_to_request",
            "delete_task",
        ];
        assert_eq!(best(&kazuph, Op::Get).as_deref(), Some("open_task_details"));
        assert_eq!(
            best(&kazuph, Op::Create).as_deref(),
            Some("add_tasks_to_request")
        );
        assert_eq!(best(&["delete_epic_handoffs"], Op::Delete), None);
    }

    /// A tool that takes the operation as an enum value (`manage {operation: create,
    /// containerType: task}`) is chosen with those constants; a boolean `delete` argument
    /// makes an update tool the delete.
    #[test]
    fn operations_named_by_an_argument_enum_are_chosen() {
        let tools: BTreeMap<String, (String, Value)> = [
            (
                "manage_container",
                json!({"type": "object", "properties": {
                "operation": {"type": "string", "enum": ["create", "update", "delete"]},
                "containerType": {"type": "string", "enum": ["project", "feature", "task"]},
                "title": {"type": "string"}, "id": {"type": "string"}}}),
            ),
            (
                "query_container",
                json!({"type": "object", "properties": {
                "operation": {"type": "string", "enum": ["get", "search", "overview"]},
                "containerType": {"type": "string", "enum": ["project", "task"]},
                "id": {"type": "string"}}}),
            ),
            ("get_next_task", json!({"type": "object"})),
            (
                "manage_sections",
                json!({"type": "object", "properties": {
                "operation": {"type": "string", "enum": ["add", "update", "delete"]},
                "entityType": {"type": "string", "enum": ["PROJECT", "TASK"]}}}),
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), (String::new(), v)))
        .collect();
        let c = choose(&tools);
        assert_eq!(c[&Op::Create].tool, "manage_container");
        // The sections of a task have the same operations: the tool that made the task wins.
        assert_eq!(c[&Op::Update].tool, "manage_container");
        assert_eq!(
            c[&Op::Create].consts,
            [
                ("operation".to_string(), json!("create")),
                ("containerType".to_string(), json!("task"))
            ]
        );
        assert_eq!(c[&Op::Get].tool, "query_container");
        assert_eq!(c[&Op::List].tool, "query_container");
        assert_eq!(c[&Op::List].consts[0].1, json!("search"));
        let text = render("srv", "srv", "1", &tools);
        let m =
            Mapping::parse(&text, Path::new("d.toml")).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(m.ops[&Op::Delete].calls[0].tool, "manage_container");
        assert!(
            text.contains("operation = \"delete\", containerType = \"task\""),
            "{text}"
        );
        let dex: BTreeMap<String, (String, Value)> = [(
            "update_task".to_string(),
            (
                String::new(),
                json!({"type": "object", "properties": {
                "id": {"type": "string"}, "delete": {"type": "boolean"}}}),
            ),
        )]
        .into_iter()
        .collect();
        let c = choose(&dex);
        assert_eq!(c[&Op::Delete].consts, [("delete".to_string(), json!(true))]);
    }

    #[test]
    fn a_draft_parses_and_marks_its_guesses() {
        let schema = |props: &[&str], required: &[&str]| {
            json!({"type": "object", "required": required, "properties":
                props.iter().map(|p| (p.to_string(), json!({"type": "string"})))
                    .collect::<serde_json::Map<_, _>>()})
        };
        let mut tools: BTreeMap<String, (String, Value)> = [
            (
                "task_create",
                schema(&["list", "subject", "blockedBy"], &["subject"]),
            ),
            ("task_get", schema(&["list", "taskId"], &["taskId"])),
            (
                "task_update",
                schema(&["list", "taskId", "status", "weird"], &["taskId"]),
            ),
            ("task_list", schema(&["list"], &[])),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), ("does things".to_string(), v)))
        .collect();
        tools.get_mut("task_update").unwrap().1["properties"]["status"]["enum"] =
            json!(["todo", "doing", "done"]);
        let text = render("srv", "srv", "1", &tools);
        let m =
            Mapping::parse(&text, Path::new("d.toml")).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert!(m.unsupported.contains(&Op::Delete) && m.unsupported.contains(&Op::Claim));
        assert_eq!(m.ops[&Op::Get].calls[0].tool, "task_get");
        assert!(text.contains("taskId = \"{id}\""), "{text}");
        assert!(
            text.contains("status = \"{patch.status|status}\""),
            "{text}"
        );
        assert!(
            text.contains("# CHECK: arguments with no guess: weird"),
            "{text}"
        );
        // A tool takes the list: several lists, per call.
        assert!(text.contains("features = [\"edges\", \"lists\"]"), "{text}");
        assert!(text.contains("task_update: does things"), "{text}");
        // The status words from the schema's enum.
        assert!(
            text.contains("pending = \"todo\"\nin_progress = \"doing\"\ncompleted = \"done\""),
            "{text}"
        );
    }

    /// A server with no tool to read one task: the probe found the new task's id and a list
    /// of ids, but nothing can read a task again, so the draft fetches nothing (the checker
    /// refuses a fetch without [ops.get], and the draft is read back through it).
    #[test]
    fn without_a_get_tool_the_draft_fetches_nothing() {
        let schema = json!({"type": "object", "properties": {"title": {"type": "string"}}});
        let tools: BTreeMap<String, (String, Value)> = [
            ("add_task", schema.clone()),
            ("list_tasks", json!({"type": "object"})),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), (String::new(), v)))
        .collect();
        let chosen = choose(&tools);
        assert!(!chosen.contains_key(&Op::Get), "{chosen:?}");
        let learned: BTreeMap<Op, Learned> = [
            (
                Op::Create,
                Learned {
                    tool: "add_task".into(),
                    id: Some(("/id".into(), Some("(?P<id>[a-z]+-\\d+)".into()))),
                    answer: Some("answer = { fetch = true }".into()),
                    ..Learned::default()
                },
            ),
            (
                Op::List,
                Learned {
                    tool: "list_tasks".into(),
                    answer: Some(
                        "answer = { each = '(?P<id>[a-z]+-\\d+)', tasks = \"\", fetch = true }"
                            .into(),
                    ),
                    ..Learned::default()
                },
            ),
        ]
        .into_iter()
        .collect();
        let text = render_with("srv", "srv", "1", &tools, &chosen, &learned);
        let m =
            Mapping::parse(&text, Path::new("d.toml")).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert!(m.ops.values().all(|o| !o.answer.fetch), "{text}");
        assert!(text.contains("no tool was chosen for get"), "{text}");
    }

    /// The recorded tools/list and answers of a text-answering server
    /// (tests/fixtures/mcp/text-tasks-answers.json).
    fn recorded() -> Value {
        serde_json::from_str(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/mcp/text-tasks-answers.json"
        )))
        .expect("the fixture is JSON")
    }

    fn answer(name: &str) -> String {
        recorded()["answers"][name]
            .as_str()
            .unwrap_or_else(|| panic!("no answer {name}"))
            .to_string()
    }

    /// What `patterns` read from `text`, as a mapping's `pattern` list reads it.
    fn read(patterns: &[String], text: &str, each: bool) -> Value {
        let res: Vec<Regex> = patterns
            .iter()
            .map(|p| Regex::new(p).unwrap_or_else(|e| panic!("{p}: {e}")))
            .collect();
        let how = if each {
            crate::mcp::mapping::TextHow::Each(res[0].clone())
        } else {
            crate::mcp::mapping::TextHow::One(res)
        };
        crate::mcp::text::read(&crate::mcp::mapping::TextRead { section: None, how }, text)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// Issue 49: the id of a create answer is the one its header gives (`Created task
    /// task-1`), not the id-like token inside the file path beside it (`…/task-1 -
    /// taskproof-probe-task-7f3a.md` holds `task-7f3a`, the probe subject's slug); and the
    /// pattern finds the id of another task's answer too.
    #[test]
    fn the_id_of_a_text_answer_is_its_own_not_a_token_of_its_file_path() {
        let create = answer("create");
        assert!(create.contains("probe-task-7f3a.md"), "{create}");
        let (id, pattern) = id_in_text(&create).unwrap();
        assert_eq!(id, "task-1");
        let re = Regex::new(&pattern).unwrap();
        assert_eq!(
            &re.captures(&answer("create_other")).unwrap()["id"],
            "task-2"
        );
        // A label names the id wherever it stands; a path alone names none.
        let labelled = "Saved to /home/u/.tasks/task-beef.json\n\n**ID:** `n-1a2b3c4d`\n";
        assert_eq!(id_in_text(labelled).unwrap().0, "n-1a2b3c4d");
        let number = "Task created.\nPath: /data/t/task-9f9f9f.md\nID: 42\n";
        let (id, pattern) = id_in_text(number).unwrap();
        assert_eq!(id, "42");
        assert_eq!(
            &Regex::new(&pattern).unwrap().captures(number).unwrap()["id"],
            "42"
        );
        assert!(id_in_text("Saved to /tmp/x/task-7f3a.md").is_none());
        // The subject's own words are not the id either.
        assert!(id_in_text("Made taskproof-probe-task-7f3a.").is_none());
    }

    /// The patterns proposed for a text get read the id, subject, status and description of
    /// the probe's answer, and of another task's (another status, a description of several
    /// lines and a blank one); a text list's pattern reads every entry.
    #[test]
    fn text_answers_get_text_patterns_for_get_and_list() {
        let words: Vec<String> = ["To Do", "In Progress", "Done"].map(String::from).to_vec();
        let patterns = task_patterns(&answer("get"), "task-1", &words).unwrap();
        assert!(
            patterns[0].contains("(?P<id>"),
            "the id's first: {patterns:?}"
        );
        assert_eq!(
            read(&patterns, &answer("get"), false),
            json!({"id": "task-1", "subject": PROBE_SUBJECT, "status": "To Do",
                "description": PROBE_DESCRIPTION})
        );
        assert_eq!(
            read(&patterns, &answer("get_other"), false),
            json!({"id": "task-2", "subject": "Ship the beef release", "status": "In Progress",
                "description": "line one\nline two\n\nline four"})
        );
        let each = list_pattern(&answer("list"), "task-1", &words).unwrap();
        assert_eq!(
            read(&[each], &answer("list"), true),
            json!([{"id": "task-1", "subject": PROBE_SUBJECT},
                {"id": "task-2", "subject": "Ship the beef release"}])
        );
    }

    /// Every word of a status enum is recognised, whatever its case and blanks (`To Do`,
    /// `In Progress`); an enum of three whose words mean nothing known is taken by place,
    /// marked; words beyond the three are the server's others, to refuse.
    #[test]
    fn every_word_of_a_status_enum_is_recognised() {
        let tools_with = |words: Value| -> BTreeMap<String, (String, Value)> {
            [(
                "task_edit".to_string(),
                (
                    String::new(),
                    json!({"type": "object", "properties": {"id": {"type": "string"},
                        "status": {"type": "string", "enum": words}}}),
                ),
            )]
            .into_iter()
            .collect()
        };
        let of = |words: Value| {
            let tools = tools_with(words);
            status_words(&tools, &choose(&tools))
        };
        let (three, rest) = of(json!(["To Do", "In Progress", "Done"]));
        assert_eq!(
            three,
            [
                ("pending".into(), "To Do".into(), false),
                ("in_progress".into(), "In Progress".into(), false),
                ("completed".into(), "Done".into(), false)
            ]
        );
        assert!(rest.is_empty());
        let (by_place, _) = of(json!(["Queued", "Cooking", "Served"]));
        assert_eq!(by_place[0], ("pending".into(), "Queued".into(), false));
        assert_eq!(by_place[1], ("in_progress".into(), "Cooking".into(), true));
        assert_eq!(by_place[2], ("completed".into(), "Served".into(), true));
        // A list's filter: `all` is no status.
        let (filter, rest) = of(json!(["all", "pending", "in_progress", "completed"]));
        assert_eq!(filter.len(), 3);
        assert!(rest.is_empty(), "{rest:?}");
        let (four, rest) = of(json!(["open", "wip", "blocked", "closed"]));
        assert_eq!(four.len(), 3);
        assert_eq!(rest, ["blocked"]);
        let tools = tools_with(json!(["open", "wip", "blocked", "closed"]));
        let text = render("srv", "srv", "1", &tools);
        assert!(text.contains("refuse = [\"blocked\"]"), "{text}");
        Mapping::parse(&text, Path::new("d.toml")).unwrap_or_else(|e| panic!("{e}\n{text}"));
    }

    /// Argument templates give the type the schema names: an owner for an array of
    /// assignees, dependencies for a comma string, numbers, JSON text.
    #[test]
    fn argument_templates_take_the_schema_type() {
        let t = |ty: Value| json!({ "type": ty });
        assert_eq!(
            typed("{task.owner}", &t(json!("array"))),
            "{task.owner|array}"
        );
        assert_eq!(
            typed("{patch.owner}", &t(json!(["array", "null"]))),
            "{patch.owner|array}"
        );
        assert_eq!(
            typed("{task.blockedBy}", &t(json!("string"))),
            "{task.blockedBy|join}"
        );
        assert_eq!(
            typed(
                "{task.blockedBy}",
                &json!({"type": "array", "items": {"type": "integer"}})
            ),
            "{task.blockedBy|ints}"
        );
        assert_eq!(
            typed("{task.blockedBy}", &t(json!("array"))),
            "{task.blockedBy}"
        );
        assert_eq!(typed("{id}", &t(json!("integer"))), "{id|int}");
        assert_eq!(
            typed("{task.metadata}", &t(json!("string"))),
            "{task.metadata|json}"
        );
        assert_eq!(
            typed("{task.subject}", &t(json!("string"))),
            "{task.subject}"
        );
        assert_eq!(typed("{root}/{list}", &t(json!("array"))), "{root}/{list}");
        // The recorded server's tools: its assignee is an array.
        let tools: BTreeMap<String, (String, Value)> = recorded()["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["name"].as_str().unwrap().to_string(),
                    (
                        t["description"].as_str().unwrap().to_string(),
                        t["inputSchema"].clone(),
                    ),
                )
            })
            .collect();
        let text = render("srv", "srv", "1", &tools);
        assert!(text.contains("assignee = \"{task.owner|array}\""), "{text}");
        assert!(
            text.contains("assignee = \"{patch.owner|array}\""),
            "{text}"
        );
        Mapping::parse(&text, Path::new("d.toml")).unwrap_or_else(|e| panic!("{e}\n{text}"));
    }

    #[test]
    fn ids_are_found_in_text_answers() {
        let text = "**ID:** `0d511acd-6305-4cb3-ac7c-e575ac009150`";
        let (id, pattern) = id_in_text(text).unwrap();
        assert_eq!(id, "0d511acd-6305-4cb3-ac7c-e575ac009150");
        assert_eq!(
            &Regex::new(&pattern).unwrap().captures(text).unwrap()["id"],
            id
        );
        assert_eq!(id_in_text("made task-12 for you").unwrap().0, "task-12");
        assert!(id_in_text("nothing here").is_none());
        let doc = json!({"data": {"items": [{"id": 3, "title": PROBE_SUBJECT}]}});
        assert_eq!(
            find_array(&doc, &names_probe, "").as_deref(),
            Some("/data/items")
        );
        assert_eq!(
            find_object(&doc, &names_probe, "").as_deref(),
            Some("/data/items/0")
        );
    }
}
