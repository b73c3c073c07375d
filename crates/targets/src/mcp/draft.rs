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
//! says whether the server answers JSON or text, where the task, its id and the list are, and
//! the schema's status `enum` gives the status words. Every guess is marked `# CHECK:` for a
//! person; the draft is read back through the mapping checker (and against the tools) before
//! it is returned, so it parses.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use regex_lite::Regex;
use serde_json::{Map, Value, json};

use super::mapping::{Mapping, OPS};
use super::{McpSession, McpTarget, with_stderr};
use crate::{Session, SessionOptions};
use taskproof_core::protocol::Op;

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
    let learned = if probe {
        probe_tools(&mut session, &tools, &chosen)
    } else {
        BTreeMap::new()
    };
    session.kill();
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
            Some("{id}") => id.map(|i| json!(i)),
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

/// An id-like word in a text answer, and a pattern that finds it.
fn id_in_text(text: &str) -> Option<(String, String)> {
    let shapes = [
        (
            r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
            r"[0-9a-fA-F-]{36}",
        ),
        (r"\b[0-9a-f]{32}\b", r"[0-9a-f]{32}"),
        (r"\b[a-z]+-[0-9a-f]{4,}\b", r"[a-z]+-[0-9a-f]+"),
        (r"\b[a-z]+-\d+\b", r"[a-z]+-\d+"),
    ];
    for (find, shape) in shapes {
        let re = Regex::new(find).expect("fixed pattern");
        if let Some(m) = re.find(text) {
            return Some((m.as_str().to_string(), format!("(?P<id>{shape})")));
        }
    }
    None
}

/// Calls each chosen tool once on a probe task, in the order create, get, list, update,
/// delete, and says what each answer showed.
pub fn probe_tools(
    session: &mut McpSession,
    tools: &BTreeMap<String, (String, Value)>,
    chosen: &BTreeMap<Op, Choice>,
) -> BTreeMap<Op, Learned> {
    let mut out = BTreeMap::new();
    let mut id: Option<String> = None;
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
        let result = match session.probe_call(&choice.tool, Value::Object(args)) {
            Ok(r) => r,
            Err(e) => {
                l.failed = Some(e);
                out.insert(op, l);
                continue;
            }
        };
        l.excerpt = result.text.chars().take(600).collect();
        if result.is_error {
            l.failed = Some(format!("isError: {}", l.excerpt));
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
                            id = task
                                .get(*k)
                                .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string));
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
                    id = o
                        .get(*k)
                        .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string));
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
            (Op::List, None) => {
                if let Some(i) = &id
                    && result.text.contains(i.as_str())
                    && let Some((_, pattern)) = id_in_text(&result.text)
                {
                    l.answer = Some(format!(
                        "answer = {{ each = {}, tasks = \"\", fetch = true }}",
                        toml_string(&pattern)
                    ));
                }
            }
            _ => {}
        }
        out.insert(op, l);
    }
    out
}

/// The server's status words for the wire's, from the `enum` of a status argument.
fn status_words(
    tools: &BTreeMap<String, (String, Value)>,
    chosen: &BTreeMap<Op, Choice>,
) -> Vec<(String, String)> {
    let mut words: Vec<String> = Vec::new();
    let order: Vec<&String> = chosen
        .get(&Op::Update)
        .map(|c| &c.tool)
        .into_iter()
        .chain(tools.keys())
        .collect();
    for t in order {
        for (k, p) in props(&tools[t].1) {
            if matches!(k.to_lowercase().as_str(), "status" | "state") {
                words = enum_of(&p);
            }
        }
        if !words.is_empty() {
            break;
        }
    }
    let like: [(&str, &[&str]); 3] = [
        (
            "pending",
            &[
                "pending",
                "todo",
                "to_do",
                "to-do",
                "new",
                "open",
                "not_started",
                "backlog",
            ],
        ),
        (
            "in_progress",
            &[
                "in_progress",
                "in-progress",
                "inprogress",
                "active",
                "doing",
                "started",
                "wip",
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
    like.iter()
        .filter_map(|(wire, server)| {
            words
                .iter()
                .find(|w| server.contains(&w.to_lowercase().as_str()))
                .map(|w| (wire.to_string(), w.clone()))
        })
        .collect()
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
    let _ = writeln!(
        out,
        "\n# CHECK: operations no tool's name fits; map them if a tool does them.\nunsupported = [{}]\n",
        unsupported.join(", ")
    );
    let _ = writeln!(
        out,
        "[server]\n\
         # CHECK: how the server learns its folder (TASKPROOF_ROOT is always set): args, cwd, env.\n\
         # A server that keeps one project per process: per_list = true and {{list}} in these.\n\
         # args = [\"--root\", \"{{root}}\"]\n\
         # cwd = \"{{root}}\"\n\
         # CHECK: opaque unless the server writes Claude Code's layout (ROOT/LIST/ID.json).\n\
         layout = \"opaque\"\n\
         # CHECK: the optional parts of the contract the server has (docs/spec.md, \"Optional\n\
         # parts\"); guessed from the tools mapped and the arguments seen.\n\
         features = [{}]\n\
         check_form = false\n",
        features.join(", ")
    );
    let status = status_words(tools, chosen);
    let mut status_text = String::new();
    if status.is_empty() {
        status_text.push_str(
            "# pending = \"pending\"\n# in_progress = \"in_progress\"\n# completed = \"completed\"\n",
        );
    } else {
        for (w, s) in &status {
            let _ = writeln!(status_text, "{w} = {}", toml_string(s));
        }
    }
    let ids_text = match learned.get(&Op::Create).and_then(|l| l.id.as_ref()) {
        Some(_) => {
            "# CHECK: the server's ids are its own (the probe's was not decimal?): number them.\n# ids = \"table\"\n"
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
                Some(v) => args.push(format!("{} = {}", key(p), toml_string(&v))),
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
        assert!(text.contains("features = [\"edges\"]"), "{text}");
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

    #[test]
    fn ids_are_found_in_text_answers() {
        let (id, pattern) = id_in_text("**ID:** `0d511acd-6305-4cb3-ac7c-e575ac009150`").unwrap();
        assert_eq!(id, "0d511acd-6305-4cb3-ac7c-e575ac009150");
        assert!(Regex::new(&pattern).unwrap().is_match(&id));
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
