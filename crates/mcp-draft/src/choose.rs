//! Which tool maps each operation: tool names split into words and scored, a tool that
//! takes the operation as an enum value, arguments matched to the request by name and typed
//! from the schema.

use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use taskproof_core::protocol::Op;
use taskproof_mcp_target::mapping::OPS;

/// A tool name's words, lower case: `add_task`, `addTask`, `add-task` → add, task.
pub(crate) fn words(name: &str) -> Vec<String> {
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
pub(crate) fn verbs(op: Op) -> &'static [&'static str] {
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
pub(crate) const TASK_WORDS: [&str; 8] = [
    "task", "tasks", "todo", "todos", "issue", "issues", "ticket", "tickets",
];
/// Words that name no kind of record.
pub(crate) const NEUTRAL: [&str; 13] = [
    "by", "id", "ids", "one", "single", "to", "from", "of", "for", "in", "a", "the", "mcp",
];

/// How well a tool's name fits an operation (0: not at all). A name that names a task wins;
/// one that names another kind of record (an epic's handoffs, a dependency, the next task)
/// counts a quarter, and none when it names no task at all.
pub(crate) fn score(op: Op, name: &str) -> u32 {
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
    /// For a create that takes only an array of task objects (`addTasks {tasks: [{title}]}`):
    /// that argument, given one task.
    pub batch: Option<String>,
    /// An update whose only change is the status (`updateStatus {id, status}`).
    pub status_only: bool,
}

pub(crate) fn props(schema: &Value) -> Map<String, Value> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

pub(crate) fn enum_of(p: &Value) -> Vec<String> {
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
                        batch: None,
                        status_only: false,
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
                        batch: None,
                        status_only: false,
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
                        batch: None,
                        status_only: false,
                    },
                );
            }
            // An update whose only change is the status: an update verb and "status" in its
            // name (no task word needed), an id and a status argument.
            if op == Op::Update && !taken && status_only(tool, &ps) {
                consider(
                    40,
                    Choice {
                        tool: tool.clone(),
                        consts: Vec::new(),
                        why: "from its name and arguments: it changes only the status".into(),
                        batch: None,
                        status_only: true,
                    },
                );
            }
        }
        if let Some((_, _, mut c)) = best {
            if op == Op::Create {
                c.batch = batch_arg(&tools[&c.tool].1);
            }
            chosen.insert(op, c);
        }
    }
    chosen
}

/// Whether a tool is an update of the status alone: its name an update verb and `status`
/// with nothing else but task words, its arguments an id and a status.
fn status_only(tool: &str, ps: &Map<String, Value>) -> bool {
    let w = words(tool);
    let verb = w.iter().any(|x| verbs(Op::Update).contains(&x.as_str()));
    let rest_ok = w.iter().all(|x| {
        x == "status"
            || verbs(Op::Update).contains(&x.as_str())
            || TASK_WORDS.contains(&x.as_str())
            || NEUTRAL.contains(&x.as_str())
    });
    let arg = |want: &str| {
        ps.keys()
            .any(|k| guess_arg(Op::Update, k).as_deref() == Some(want))
    };
    verb && w.iter().any(|x| x == "status")
        && rest_ok
        && arg("{id}")
        && arg("{patch.status|status}")
}

/// A create tool's argument that is an array of task objects, when no argument of its own
/// takes the subject (`addTasks {tasks: [{title}]}`).
pub(crate) fn batch_arg(schema: &Value) -> Option<String> {
    let ps = props(schema);
    let subject = |ps: &Map<String, Value>| {
        ps.keys()
            .any(|k| guess_arg(Op::Create, k).as_deref() == Some("{task.subject}"))
    };
    if subject(&ps) {
        return None;
    }
    ps.iter()
        .find(|(_, p)| {
            schema_type(p) == Some("array")
                && p.get("items").is_some_and(|items| subject(&props(items)))
        })
        .map(|(k, _)| k.clone())
}

/// The request path an argument of `op`'s tool most likely takes, by its name.
pub(crate) fn guess_arg(op: Op, arg: &str) -> Option<String> {
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
pub(crate) fn lists_per_call(
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
pub(crate) fn schema_type(p: &Value) -> Option<&str> {
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
pub(crate) fn typed(template: &str, p: &Value) -> String {
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
