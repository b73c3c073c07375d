//! The templates of a mapping, both ways: a call's arguments, compiled from the file's TOML
//! (every `{path}` checked to name a part of the request) and filled from each request; and
//! the answers read back, by JSON pointers into the result and into a wire task.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::{Mapping, Parse};
use crate::text;

/// The filters of a template, for messages.
const FILTERS: &str =
    "status, int, ints, string, json, join, array, with:PATH, without:PATH or or:TEXT";

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
    /// A value that is not an array → an array of it (an owner for a server that keeps a
    /// list of assignees); absent stays absent.
    Array,
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
            "array" => Filter::Array,
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

/// A dotted path whose first part is one of `known`.
pub(super) fn var_path(p: &str, known: &BTreeSet<&str>) -> Result<Vec<String>, String> {
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
pub(super) fn template(v: &Value, known: &BTreeSet<&str>) -> Result<Template, (String, String)> {
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
// Filling templates and reading answers.

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
    /// The value a spread (`"..." = "{path|filter}"`) would spread: the value at `path`
    /// through `filters`; `None` when absent (after `or:`, `with:` and `without:`, which fill
    /// an absent value).
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
            Filter::Array => match v? {
                Value::Array(a) => Value::Array(a),
                other => Value::Array(vec![other]),
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
    use crate::mapping::tests::{GOOD, parse};
    use serde_json::json;
    use taskproof_core::protocol::Op;

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
        // `equals = "{null}"` compares with JSON null (a field the server gives as null).
        let closed = parse(&text.replace(
            "{ field = \"started\", status = \"in_progress\" }",
            "{ field = \"closedAt\", equals = \"{null}\", status = \"in_progress\" }",
        ))
        .unwrap();
        let t = closed.task_in(&json!({"id": "z", "closedAt": null}), &Map::new());
        assert_eq!(t["status"], "in_progress");
        let t = closed.task_in(&json!({"id": "z", "closedAt": "{null}"}), &Map::new());
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
        // `array`: one value becomes a list of it, a list stays, absent stays absent (the key
        // is left out, not sent as []).
        let t = template(&json!({"who": "{patch.owner|array}"}), &known).unwrap();
        assert_eq!(
            m.fill(&t, &json!({"patch": {"owner": "a"}})),
            Some(json!({"who": ["a"]}))
        );
        assert_eq!(
            m.fill(&t, &json!({"patch": {"owner": ["a", "b"]}})),
            Some(json!({"who": ["a", "b"]}))
        );
        assert_eq!(m.fill(&t, &json!({"patch": {}})), Some(json!({})));
        let enc = template(&json!({"=json": [{"n": "{id}"}]}), &known).unwrap();
        assert_eq!(
            m.fill(&enc, &json!({"id": "7"})),
            Some(json!("[{\"n\":\"7\"}]"))
        );
    }
}
