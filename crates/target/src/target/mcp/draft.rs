//! `taskproof mcp-draft COMMAND`: a first mapping for an MCP server, from its tool list.
//!
//! The server is started as a session would start it, with no operation mapped; its tools and
//! input schemas become comments, and for each operation the tool whose name fits best is
//! mapped with its arguments matched to the request by name. Every guess is marked
//! `# CHECK:` for a person; the draft is read back through the mapping checker (and against
//! the tools) before it is returned, so it parses.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use super::mapping::{Mapping, OPS};
use super::{McpSession, McpTarget};
use crate::protocol::Op;
use crate::target::{Session, SessionOptions};

/// Starts `command` on a scratch root, lists its tools and returns the draft mapping's text.
pub fn draft(command: &str, options: SessionOptions) -> Result<String, String> {
    let none = format!(
        "unsupported = [{}]",
        OPS.iter()
            .map(|o| format!("\"{o}\""))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let empty = Mapping::parse(&none, Path::new("(no mapping)")).map_err(|e| e.to_string())?;
    let target = McpTarget::new(command, Some(Arc::new(empty)));
    let root = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut session = McpSession::open(&target, root.path(), options).map_err(|(e, stderr)| {
        if stderr.trim().is_empty() {
            e.to_string()
        } else {
            format!("{e}\nthe server's stderr:\n{}", stderr.trim_end())
        }
    })?;
    let hello = session.hello().clone();
    let tools = session.tools().clone();
    session.kill();
    let text = render(command, &hello.name, &hello.version, &tools);
    let checked = Mapping::parse(&text, Path::new("(draft)"))
        .map_err(|e| format!("the draft does not read back (a bug of mcp-draft): {e}"))?;
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

/// How well a tool's name fits an operation (0: not at all).
fn score(op: Op, name: &str) -> u32 {
    let w = words(name);
    let has = |k: &str| w.iter().any(|x| x == k);
    let verbs: &[&str] = match op {
        Op::Create => &["create", "add", "new", "insert"],
        Op::Get => &["get", "show", "read", "view", "fetch"],
        Op::Update => &["update", "edit", "modify", "patch", "set"],
        Op::Delete => &["delete", "remove", "rm", "del"],
        Op::List => &["list", "ls", "all", "tasks"],
        Op::Claim => &["claim", "take", "assign", "start"],
        Op::Hello => &[],
    };
    let Some(rank) = verbs.iter().position(|v| has(v)) else {
        return 0;
    };
    // A plural or "list" belongs to list; a relation (dependency, tag, subtask) to no task
    // operation of its own.
    let plural = has("tasks") || has("list") || has("all");
    if op != Op::List && plural {
        return 0;
    }
    if op == Op::List && !plural && rank > 0 {
        return 0;
    }
    let mut s = 100 - 10 * rank as u32;
    if has("task") || has("tasks") || has("issue") || has("todo") {
        s += 50;
    }
    if [
        "dependency",
        "dependencies",
        "tag",
        "subtask",
        "comment",
        "status",
    ]
    .iter()
    .any(|x| has(x))
    {
        s /= 4;
    }
    s
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

/// The draft's text.
pub fn render(
    command: &str,
    name: &str,
    version: &str,
    tools: &BTreeMap<String, (String, Value)>,
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
    let mut chosen: BTreeMap<Op, &String> = BTreeMap::new();
    for op in OPS {
        let best = tools
            .keys()
            .filter(|t| !chosen.values().any(|c| c == t))
            .map(|t| (score(op, t), t))
            .filter(|(s, _)| *s > 0)
            .max_by_key(|(s, t)| (*s, std::cmp::Reverse(t.len())));
        if let Some((_, t)) = best {
            chosen.insert(op, t);
        }
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
        s.get("properties")
            .and_then(Value::as_object)
            .is_some_and(|p| {
                p.keys().any(|k| {
                    let k = k.to_lowercase();
                    k.contains("depend") || k.contains("blocked") || k == "blocks"
                })
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
         # args = [\"--root\", \"{{root}}\"]\n\
         # cwd = \"{{root}}\"\n\
         # CHECK: opaque unless the server writes Claude Code's layout (ROOT/LIST/ID.json).\n\
         layout = \"opaque\"\n\
         # CHECK: guessed from the tools mapped and the arguments seen.\n\
         features = [{}]\n\
         check_form = false\n",
        features.join(", ")
    );
    let _ = writeln!(
        out,
        "# CHECK: the server's status words, if they differ from the wire's.\n[status]\n\
         # pending = \"pending\"\n# in_progress = \"in_progress\"\n# completed = \"completed\"\n\n\
         # CHECK: the server's field names, if they differ (wire = server).\n[task]\n\
         # fields = {{ subject = \"title\", blockedBy = \"dependencies\" }}\n\n\
         # CHECK: read a few error results and say which text means which kind.\n[errors]\n\
         text = [\n  {{ pattern = '(?i)not found|does not exist|no such', kind = \"not_found\" }},\n  \
         {{ pattern = '(?i)invalid|required|must be', kind = \"invalid\" }},\n]\n\
         default = \"io\"\n"
    );
    for op in OPS {
        let Some(tool) = chosen.get(&op) else {
            continue;
        };
        let (_, schema) = &tools[*tool];
        let props = schema
            .get("properties")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut args = Vec::new();
        let mut unmatched = Vec::new();
        for p in props.keys() {
            match guess_arg(op, p) {
                Some(v) => args.push(format!("{} = {}", key(p), toml_string(&v))),
                None if required.contains(&p.as_str()) => unmatched.push(format!("{p} (required)")),
                None => unmatched.push(p.clone()),
            }
        }
        let _ = writeln!(out, "[ops.{op}]\n# CHECK: {tool} guessed from its name.");
        if !unmatched.is_empty() {
            let _ = writeln!(
                out,
                "# CHECK: arguments with no guess: {}",
                unmatched.join(", ")
            );
        }
        let _ = writeln!(
            out,
            "calls = [{{ tool = {}, args = {{ {} }} }}]",
            toml_string(tool),
            args.join(", ")
        );
        let answer = match op {
            Op::Create | Op::Get | Op::Update | Op::Claim => {
                "# CHECK: where the answer keeps the task (a JSON pointer into structuredContent,\n\
                 # else into the text parsed as JSON).\nanswer = { task = \"/task\" }"
            }
            Op::List => {
                "# CHECK: where the answer keeps the tasks.\nanswer = { tasks = \"/tasks\" }"
            }
            _ => "",
        };
        let _ = writeln!(out, "{answer}\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tool_names_are_split_into_words() {
        assert_eq!(words("add_task"), ["add", "task"]);
        assert_eq!(words("getTasks"), ["get", "tasks"]);
        assert_eq!(words("set-task-status"), ["set", "task", "status"]);
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
        let best = |op| {
            names
                .iter()
                .map(|n| (score(op, n), *n))
                .filter(|(s, _)| *s > 0)
                .max_by_key(|(s, n)| (*s, std::cmp::Reverse(n.len())))
                .map(|(_, n)| n)
        };
        assert_eq!(best(Op::Create), Some("add_task"));
        assert_eq!(best(Op::Get), Some("get_task"));
        assert_eq!(best(Op::List), Some("get_tasks"));
        assert_eq!(best(Op::Update), Some("update_task"));
        assert_eq!(best(Op::Delete), Some("remove_task"));
        assert_eq!(best(Op::Claim), None);
    }

    #[test]
    fn a_draft_parses_and_marks_its_guesses() {
        let schema = |props: &[&str], required: &[&str]| {
            json!({"type": "object", "required": required, "properties":
                props.iter().map(|p| (p.to_string(), json!({"type": "string"})))
                    .collect::<serde_json::Map<_, _>>()})
        };
        let tools: BTreeMap<String, (String, Value)> = [
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
    }
}
