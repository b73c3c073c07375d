//! The draft's TOML: the tools and schemas as comments, each operation's calls and answer,
//! every guess marked `# CHECK:`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::Value;
use taskproof_core::protocol::Op;
use taskproof_mcp_target::mapping::OPS;

use crate::choose::*;
use crate::draft::PROBE_SUBJECT;
use crate::probe::{Learned, learned_id_decimal, status_words};

/// A TOML key: bare when it can be.
pub(crate) fn key(k: &str) -> String {
    if !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        k.to_string()
    } else {
        toml_string(k)
    }
}

pub(crate) fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

pub(crate) fn toml_value(v: &Value) -> String {
    match v {
        Value::String(s) => toml_string(s),
        other => other.to_string(),
    }
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
pub(crate) const NO_GET: &str = "# CHECK: no tool was chosen for get, so no task can be read again (fetch = \
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
    // Edges only when some answer shows them: a tool that takes dependencies says nothing
    // of whether they can be read back.
    let takes_edges = tools.values().any(|(_, s)| {
        props(s).keys().any(|k| {
            let k = k.to_lowercase();
            k.contains("depend") || k.contains("blocked") || k == "blocks"
        })
    });
    let shows_edges = learned.values().any(|l| {
        let t = l.excerpt.to_lowercase();
        t.contains("depend") || t.contains("blocked") || t.contains("\"blocks\"")
    });
    if takes_edges && shows_edges {
        features.push("\"edges\"");
    }
    let hidden = if takes_edges && !shows_edges {
        "# CHECK: a tool takes dependencies, but no answer the probe saw shows them: add \"edges\"\n\
         # if a tool reads them back, or \"edges\" and \"hidden_edges\" if none does.\n"
    } else {
        ""
    };
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
         {hidden}features = [{}]\n\
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
    let renamed = renamed_fields(learned);
    let fields_text = if renamed.is_empty() {
        "# fields = { subject = \"title\", blockedBy = \"dependencies\" }".to_string()
    } else {
        let pairs: Vec<String> = renamed
            .iter()
            .map(|(wire, server)| format!("{wire} = {}", toml_string(server)))
            .collect();
        format!(
            "# PROBE: the probe's task came back with these fields under the server's names.\n\
             fields = {{ {} }}",
            pairs.join(", ")
        )
    };
    let _ = writeln!(
        out,
        "# CHECK: the server's status words (from a status argument's enum when there is one).\n\
         [status]\n{status_text}\n\
         # CHECK: the server's field names, if they differ (wire = server).\n[task]\n\
         {fields_text}\n{ids_text}\n\
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
        let batch = choice.batch.as_ref().map(|b| {
            let item = &props(schema)[b]["items"];
            let inner: Vec<String> = props(item)
                .iter()
                .filter_map(|(p, ps)| {
                    let v = typed(&guess_arg(op, p)?, ps);
                    Some(format!("{} = {}", key(p), toml_string(&v)))
                })
                .collect();
            (
                b.clone(),
                format!("{} = [{{ {} }}]", key(b), inner.join(", ")),
            )
        });
        if let Some((_, b)) = &batch {
            args.push(b.clone());
        }
        for p in props(schema).keys() {
            if choice.consts.iter().any(|(k, _)| k == p)
                || batch.as_ref().is_some_and(|(b, _)| b == p)
            {
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
        if let Some((b, _)) = &batch {
            let _ = writeln!(
                out,
                "# CHECK: {tool} takes only an array of tasks ({b}): each request gives one."
            );
        }
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
        // A status-only update runs when the patch gives a status; every other change is
        // one the server cannot make.
        let when = if choice.status_only {
            ", when = \"patch.status\""
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "calls = [{{ tool = {}{when}, args = {{ {} }}{id} }}]",
            toml_string(tool),
            args.join(", ")
        );
        if choice.status_only {
            let _ = writeln!(
                out,
                "# CHECK: {tool} changes only the status: the other changes are unsupported.\n\
                 unsupported_when = [\"patch.subject\", \"patch.description\", \"patch.owner\", \
                 \"patch.metadata\", \"patch.activeForm\"]"
            );
        }
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

pub(crate) fn one_line(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(300)
        .collect()
}

/// The wire fields the probe's task came back under another name in a JSON answer: the key
/// that holds the probe's subject, and the one that holds its description.
fn renamed_fields(learned: &BTreeMap<Op, Learned>) -> Vec<(&'static str, String)> {
    fn find(v: &Value, want: &str) -> Option<String> {
        match v {
            Value::Object(o) => o.iter().find_map(|(k, x)| match x {
                Value::String(s) if s == want => Some(k.clone()),
                other => find(other, want),
            }),
            Value::Array(a) => a.iter().find_map(|x| find(x, want)),
            _ => None,
        }
    }
    let docs: Vec<Value> = [Op::Get, Op::Create, Op::List]
        .iter()
        .filter_map(|op| learned.get(op))
        .filter(|l| l.json && l.failed.is_none())
        .filter_map(|l| serde_json::from_str(&l.excerpt).ok())
        .collect();
    let mut out = Vec::new();
    for (wire, probe) in [
        ("subject", PROBE_SUBJECT),
        ("description", crate::patterns::PROBE_DESCRIPTION),
    ] {
        if let Some(k) = docs.iter().find_map(|d| find(d, probe))
            && k != wire
        {
            out.push((wire, k));
        }
    }
    out
}
