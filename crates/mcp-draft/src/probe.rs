//! The probe: each chosen tool called once on a probe task (create, get, list, update,
//! delete), and what each answer showed: JSON or text, where the task, its id and the list
//! are, whether status words are read without case, where the server keeps its data.

use std::path::Path;

use std::collections::BTreeMap;

use regex_lite::Regex;
use serde_json::{Map, Value, json};
use taskproof_core::protocol::Op;
use taskproof_mcp_target::McpSession;

use crate::choose::*;
use crate::draft::PROBE_SUBJECT;
use crate::patterns::*;
use crate::render::toml_string;

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
pub(crate) fn probe_args(
    op: Op,
    choice: &Choice,
    schema: &Value,
    id: Option<&str>,
) -> Map<String, Value> {
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
    // A batch create: one task, in the array.
    if let Some(b) = &choice.batch {
        let plain_choice = Choice {
            batch: None,
            consts: Vec::new(),
            ..choice.clone()
        };
        let item = probe_args(op, &plain_choice, &ps[b]["items"], id);
        args.insert(b.clone(), json!([item]));
    }
    args
}

/// A plain value of a property's schema: its enum's first value, else one of its type.
pub(crate) fn plain(p: &Value) -> Value {
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
pub(crate) fn find_object(
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
pub(crate) fn find_array(
    doc: &Value,
    pred: &dyn Fn(&Map<String, Value>) -> bool,
    at: &str,
) -> Option<String> {
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

pub(crate) const ID_KEYS: [&str; 6] = ["id", "taskId", "task_id", "uuid", "key", "ID"];

pub(crate) fn names_probe(o: &Map<String, Value>) -> bool {
    o.values()
        .any(|v| v.as_str().is_some_and(|s| s.starts_with(PROBE_SUBJECT)))
}

/// The probe task's id as the server gave it: a string as it is, a number as its digits.
pub(crate) fn id_text(v: &Value) -> String {
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
pub(crate) fn learned_id_decimal(learned: &BTreeMap<Op, Learned>) -> bool {
    learned
        .get(&Op::Create)
        .and_then(|l| l.found_id.as_deref())
        .is_some_and(|i| !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit()))
}

/// Whether a result without isError says it refused (a server that answers refusals as
/// text).
pub(crate) fn looks_refused(text: &str) -> bool {
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
pub(crate) fn status_enum(
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
pub(crate) fn status_words(
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
