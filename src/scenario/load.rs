//! The scenario loader: reads scenario files strictly, so that a typo never silently disables
//! a check. Every error names the file and the JSON path of the field (`steps[3].expect.s07`),
//! and everything that can be proven before running is: unknown fields, missing fields,
//! malformed expectations, profiles a step's expectation leaves uncovered, and placeholders
//! used before any step binds them (checked per profile, honouring `only`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

use serde_json::{Map, Value};

use super::expect::Expect;
use super::format::*;
use super::vars;
use crate::profile::Profile;
use crate::protocol::{ErrorKind, Feature};
use crate::rule::Rule;

/// A scenario file that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    #[error("{file}: {message}")]
    Io { file: PathBuf, message: String },
    #[error("{file}: line {line} column {column}: not valid JSON: {message}")]
    Syntax {
        file: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{file}: {path}: {message}")]
    Field {
        file: PathBuf,
        /// JSON path of the field, e.g. `steps[3].expect.s07`; `(file)` for the whole file.
        path: String,
        message: String,
    },
    #[error("duplicate scenario id {id:?} in {first} and {second}")]
    Duplicate {
        id: String,
        first: PathBuf,
        second: PathBuf,
    },
}

/// A field error before the file is known: path and message.
type Bad = (String, String);

fn bad(path: impl Into<String>, message: impl Into<String>) -> Bad {
    (path.into(), message.into())
}

/// Loads every scenario under `paths` (files, or folders searched recursively for `*.json`),
/// sorted by id. All errors are collected, not just the first.
pub fn load_paths(paths: &[PathBuf]) -> Result<Vec<Scenario>, Vec<LoadError>> {
    let mut files = Vec::new();
    let mut errors = Vec::new();
    for p in paths {
        match collect_files(p, &mut files) {
            Ok(()) => {}
            Err(e) => errors.push(e),
        }
    }
    let mut scenarios: Vec<Scenario> = Vec::new();
    for f in &files {
        match load_file(f) {
            Ok(s) => scenarios.push(s),
            Err(e) => errors.push(e),
        }
    }
    finish(scenarios, errors)
}

/// Checks that ids are unique, then sorts by id; every error found so far is returned.
pub(crate) fn finish(
    mut scenarios: Vec<Scenario>,
    mut errors: Vec<LoadError>,
) -> Result<Vec<Scenario>, Vec<LoadError>> {
    let mut seen: BTreeMap<String, PathBuf> = BTreeMap::new();
    for s in &scenarios {
        if let Some(first) = seen.insert(s.id.clone(), s.file.clone()) {
            errors.push(LoadError::Duplicate {
                id: s.id.clone(),
                first,
                second: s.file.clone(),
            });
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    scenarios.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(scenarios)
}

/// Loads every `*.json` file under a folder (recursively).
pub fn load_dir(dir: &Path) -> Result<Vec<Scenario>, Vec<LoadError>> {
    load_paths(&[dir.to_path_buf()])
}

fn collect_files(p: &Path, out: &mut Vec<PathBuf>) -> Result<(), LoadError> {
    let io = |e: std::io::Error| LoadError::Io {
        file: p.to_path_buf(),
        message: format!("failed to read: {e}"),
    };
    let meta = std::fs::metadata(p).map_err(io)?;
    if !meta.is_dir() {
        out.push(p.to_path_buf());
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(p)
        .map_err(io)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .map_err(io)?;
    entries.sort();
    for e in entries {
        if e.is_dir() {
            collect_files(&e, out)?;
        } else if e.extension().is_some_and(|x| x == "json") {
            out.push(e);
        }
    }
    Ok(())
}

/// Loads one scenario file.
pub fn load_file(file: &Path) -> Result<Scenario, LoadError> {
    let text = std::fs::read_to_string(file).map_err(|e| LoadError::Io {
        file: file.to_path_buf(),
        message: format!("failed to read: {e}"),
    })?;
    load_text(&text, file)
}

/// Loads one scenario from its text; `file` names it in errors and reports.
pub fn load_text(text: &str, file: &Path) -> Result<Scenario, LoadError> {
    let v: Value = serde_json::from_str(text).map_err(|e| LoadError::Syntax {
        file: file.to_path_buf(),
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })?;
    parse_scenario(&v, file).map_err(|(path, message)| LoadError::Field {
        file: file.to_path_buf(),
        path,
        message,
    })
}

/// Parses a scenario from its JSON (used by [`load_file`], and by tests).
pub fn parse_scenario(v: &Value, file: &Path) -> Result<Scenario, Bad> {
    let top = Obj::new(v, "")?;
    top.deny_unknown(&[
        "id", "title", "source", "rules", "needs", "profiles", "steps",
    ])?;
    let id = top.req_str("id")?;
    let id_ok = !id.is_empty()
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if !id_ok {
        return Err(bad("id", format!("expected [a-z0-9-]+, got {id:?}")));
    }
    let title = top.req_str("title")?;
    let source = top.opt_str("source")?;
    let rules = parse_rules(top.req("rules")?, "rules")?;
    if rules.is_empty() {
        return Err(bad("rules", "name at least one rule id"));
    }
    let needs = match top.get("needs") {
        None => BTreeSet::new(),
        Some(v) => str_array(v, "needs")?
            .into_iter()
            .enumerate()
            .map(|(i, s)| {
                s.parse::<Feature>()
                    .map_err(|e| bad(format!("needs[{i}]"), e))
            })
            .collect::<Result<_, _>>()?,
    };
    let profiles = match top.get("profiles") {
        None => Profile::ALL.to_vec(),
        Some(v) => parse_profiles(v, "profiles")?,
    };
    let steps_v = match top.req("steps")? {
        Value::Array(a) => a,
        other => {
            return Err(bad(
                "steps",
                format!("expected an array, got {}", type_name(other)),
            ));
        }
    };
    let mut steps = Vec::new();
    for (i, s) in steps_v.iter().enumerate() {
        steps.push(parse_step(s, i, &profiles)?);
    }
    let scenario = Scenario {
        id,
        title,
        source,
        rules,
        needs,
        profiles,
        steps,
        file: file.to_path_buf(),
    };
    check_variables(&scenario)?;
    Ok(scenario)
}

/// An object being read, with its path for messages.
struct Obj<'a> {
    map: &'a Map<String, Value>,
    path: String,
}

impl<'a> Obj<'a> {
    fn new(v: &'a Value, path: &str) -> Result<Obj<'a>, Bad> {
        match v {
            Value::Object(map) => Ok(Obj {
                map,
                path: path.to_string(),
            }),
            other => Err(bad(
                if path.is_empty() { "(file)" } else { path },
                format!("expected an object, got {}", type_name(other)),
            )),
        }
    }

    /// The path of `key` inside this object. A key that is not a plain name (empty, or with
    /// spaces, dots or quotes) is written as a quoted index, `[""]` or `["a b"]`, so that the
    /// path always says which field is meant.
    fn at(&self, key: &str) -> String {
        let plain = !key.is_empty()
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        match (plain, self.path.is_empty()) {
            (true, true) => key.to_string(),
            (true, false) => format!("{}.{key}", self.path),
            (false, _) => format!("{}[{}]", self.path, Value::String(key.to_string())),
        }
    }

    fn deny_unknown(&self, allowed: &[&str]) -> Result<(), Bad> {
        for k in self.map.keys() {
            if !allowed.contains(&k.as_str()) {
                return Err(bad(
                    self.at(k),
                    format!("unknown field; expected one of {}", allowed.join(", ")),
                ));
            }
        }
        Ok(())
    }

    fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key)
    }

    fn req(&self, key: &str) -> Result<&'a Value, Bad> {
        self.map
            .get(key)
            .ok_or_else(|| bad(self.at(key), "missing"))
    }

    fn req_str(&self, key: &str) -> Result<String, Bad> {
        string(self.req(key)?, &self.at(key))
    }

    fn opt_str(&self, key: &str) -> Result<Option<String>, Bad> {
        self.get(key).map(|v| string(v, &self.at(key))).transpose()
    }
}

fn type_name(v: &Value) -> &'static str {
    crate::task::type_name(v)
}

fn string(v: &Value, path: &str) -> Result<String, Bad> {
    match v {
        Value::String(s) => Ok(s.clone()),
        other => Err(bad(
            path,
            format!("expected a string, got {}", type_name(other)),
        )),
    }
}

fn str_array(v: &Value, path: &str) -> Result<Vec<String>, Bad> {
    match v {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, x)| string(x, &format!("{path}[{i}]")))
            .collect(),
        other => Err(bad(
            path,
            format!("expected an array of strings, got {}", type_name(other)),
        )),
    }
}

/// Rule ids: `S1` to `S20` (SPEC §3).
fn parse_rules(v: &Value, path: &str) -> Result<Vec<Rule>, Bad> {
    str_array(v, path)?
        .iter()
        .enumerate()
        .map(|(i, r)| r.parse().map_err(|m| bad(format!("{path}[{i}]"), m)))
        .collect()
}

fn parse_profiles(v: &Value, path: &str) -> Result<Vec<Profile>, Bad> {
    let names = str_array(v, path)?;
    if names.is_empty() {
        return Err(bad(path, "name at least one profile"));
    }
    names
        .iter()
        .enumerate()
        .map(|(i, s)| {
            s.parse::<Profile>()
                .map_err(|e| bad(format!("{path}[{i}]"), e))
        })
        .collect()
}

fn session_name(v: &Value, path: &str) -> Result<String, Bad> {
    let s = string(v, path)?;
    let ok = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(s)
    } else {
        Err(bad(
            path,
            format!("expected a session name of [A-Za-z0-9_-], got {s:?}"),
        ))
    }
}

/// A path relative to the root (or a name in the outside folder) that cannot leave it.
/// Placeholders are allowed; the runner checks the filled path again.
pub(crate) fn check_relative(p: &str) -> Result<(), String> {
    if p.is_empty() {
        return Err("expected a path relative to the root, got \"\"".into());
    }
    let path = Path::new(p);
    for c in path.components() {
        match c {
            Component::Normal(_) | Component::CurDir => {}
            _ => {
                return Err(format!(
                    "{p:?} leaves the root; use a relative path without `..`"
                ));
            }
        }
    }
    Ok(())
}

fn rel_path(v: &Value, path: &str) -> Result<String, Bad> {
    let s = string(v, path)?;
    check_relative(&s).map_err(|m| bad(path, m))?;
    Ok(s)
}

fn outside_name(v: &Value, path: &str) -> Result<String, Bad> {
    let s = string(v, path)?;
    if s.is_empty() || s.contains('/') || s == "." || s == ".." {
        return Err(bad(
            path,
            format!("expected a plain file name in the outside folder, got {s:?}"),
        ));
    }
    Ok(s)
}

const ACTIONS: [&str; 15] = [
    "send",
    "open",
    "restart",
    "kill",
    "close",
    "write_task",
    "write_file",
    "outside_file",
    "symlink",
    "mkdir",
    "remove_file",
    "assert_file",
    "assert_outside",
    "check",
    "concurrent",
];
const COMMON: [&str; 5] = ["session", "only", "rules", "note", "precondition"];

fn parse_step(v: &Value, index: usize, profiles: &[Profile]) -> Result<Step, Bad> {
    let path = format!("steps[{index}]");
    let o = Obj::new(v, &path)?;
    let actions: Vec<&str> = ACTIONS
        .iter()
        .copied()
        .filter(|a| o.map.contains_key(*a))
        .collect();
    let action = match actions.as_slice() {
        [a] => *a,
        [] => {
            return Err(bad(
                &path,
                format!("a step needs one action key: {}", ACTIONS.join(", ")),
            ));
        }
        many => {
            return Err(bad(
                &path,
                format!("a step has exactly one action key, got {}", many.join(", ")),
            ));
        }
    };
    let mut allowed: Vec<&str> = COMMON.to_vec();
    allowed.push(action);
    if action == "send" {
        allowed.extend(["expect", "bind"]);
    }
    o.deny_unknown(&allowed)?;
    let session = match o.get("session") {
        Some(v) => session_name(v, &o.at("session"))?,
        None => "main".to_string(),
    };
    let only = o
        .get("only")
        .map(|v| parse_profiles(v, &o.at("only")))
        .transpose()?;
    let rules = o
        .get("rules")
        .map(|v| parse_rules(v, &o.at("rules")))
        .transpose()?;
    let note = o.opt_str("note")?;
    let precondition = o.opt_str("precondition")?;
    if precondition.as_deref().is_some_and(|p| p.trim().is_empty()) {
        return Err(bad(
            o.at("precondition"),
            "say what the target must offer for the scenario to apply",
        ));
    }
    // The profiles this step runs under: its expectations must cover exactly these.
    let active: Vec<Profile> = profiles
        .iter()
        .copied()
        .filter(|p| only.as_ref().is_none_or(|o| o.contains(p)))
        .collect();
    let body = o.req(action)?;
    let at = o.at(action);
    let action = match action {
        "send" => {
            let expect = match o.get("expect") {
                None => PerProfile::same(Expect::Ok {
                    task: None,
                    tasks: None,
                    corrupt: None,
                }),
                Some(e) => per_profile(e, &o.at("expect"), &active, parse_expect)?,
            };
            let bind = match o.get("bind") {
                None => Vec::new(),
                Some(b) => {
                    let bo = Obj::new(b, &o.at("bind"))?;
                    let mut out = Vec::new();
                    for (name, p) in bo.map {
                        if !vars::valid_name(name) {
                            return Err(bad(
                                bo.at(name),
                                "bad variable name: use letters, digits and `_`",
                            ));
                        }
                        out.push((name.clone(), string(p, &bo.at(name))?));
                    }
                    out
                }
            };
            Action::Send {
                request: body.clone(),
                expect,
                bind,
            }
        }
        "open" => Action::Open(session_name(body, &at)?),
        "restart" => Action::Restart(session_name(body, &at)?),
        "kill" => Action::Kill(session_name(body, &at)?),
        "close" => Action::Close(session_name(body, &at)?),
        "write_task" => {
            let b = Obj::new(body, &at)?;
            b.deny_unknown(&["list", "id", "task"])?;
            let task = b.req("task")?;
            Obj::new(task, &b.at("task"))?;
            Action::WriteTask {
                list: b.req_str("list")?,
                id: b.req_str("id")?,
                task: task.clone(),
            }
        }
        "write_file" => {
            let b = Obj::new(body, &at)?;
            b.deny_unknown(&["path", "text", "base64"])?;
            Action::WriteFile {
                path: rel_path(b.req("path")?, &b.at("path"))?,
                contents: contents(&b)?,
            }
        }
        "outside_file" => {
            let b = Obj::new(body, &at)?;
            b.deny_unknown(&["name", "text", "base64"])?;
            Action::OutsideFile {
                name: outside_name(b.req("name")?, &b.at("name"))?,
                contents: contents(&b)?,
            }
        }
        "symlink" => {
            let b = Obj::new(body, &at)?;
            b.deny_unknown(&["path", "to_outside", "to"])?;
            let to = match (b.get("to_outside"), b.get("to")) {
                (Some(n), None) => LinkTarget::Outside(outside_name(n, &b.at("to_outside"))?),
                (None, Some(p)) => LinkTarget::Inside(rel_path(p, &b.at("to"))?),
                _ => return Err(bad(&at, "give exactly one of `to_outside` and `to`")),
            };
            Action::Symlink {
                path: rel_path(b.req("path")?, &b.at("path"))?,
                to,
            }
        }
        "mkdir" => Action::Mkdir(rel_path(body, &at)?),
        "remove_file" => Action::RemoveFile(rel_path(body, &at)?),
        "assert_file" => {
            let b = Obj::new(body, &at)?;
            b.deny_unknown(&["path", "exists", "text", "task"])?;
            let checks: Vec<&str> = ["exists", "text", "task"]
                .into_iter()
                .filter(|k| b.map.contains_key(*k))
                .collect();
            let check = match checks.as_slice() {
                ["exists"] => match b.req("exists")? {
                    Value::Bool(x) => FileCheck::Exists(*x),
                    other => {
                        return Err(bad(
                            b.at("exists"),
                            format!("expected true or false, got {}", type_name(other)),
                        ));
                    }
                },
                ["text"] => FileCheck::Text(b.req_str("text")?),
                ["task"] => {
                    let t = b.req("task")?;
                    Obj::new(t, &b.at("task"))?;
                    FileCheck::Task(t.clone())
                }
                _ => return Err(bad(&at, "give exactly one of `exists`, `text` and `task`")),
            };
            Action::AssertFile {
                path: rel_path(b.req("path")?, &b.at("path"))?,
                check,
            }
        }
        "assert_outside" => {
            let b = Obj::new(body, &at)?;
            b.deny_unknown(&["name", "text"])?;
            Action::AssertOutside {
                name: outside_name(b.req("name")?, &b.at("name"))?,
                text: b.req_str("text")?,
            }
        }
        "check" => {
            let b = Obj::new(body, &at)?;
            b.deny_unknown(&["list", "invariants", "ready"])?;
            let invariants = match b.get("invariants") {
                None => Vec::new(),
                Some(v) => str_array(v, &b.at("invariants"))?
                    .iter()
                    .enumerate()
                    .map(|(i, name)| {
                        Invariant::ALL
                            .into_iter()
                            .find(|x| x.as_str() == name)
                            .ok_or_else(|| {
                                bad(
                                    format!("{}[{i}]", b.at("invariants")),
                                    format!(
                                        "unknown invariant {name:?}; expected one of {}",
                                        Invariant::ALL.map(|x| x.as_str()).join(", ")
                                    ),
                                )
                            })
                    })
                    .collect::<Result<_, _>>()?,
            };
            let ready = match b.get("ready") {
                None => None,
                Some(Value::Array(items)) => Some(items.clone()),
                Some(other) => {
                    return Err(bad(
                        b.at("ready"),
                        format!("expected an array of ids, got {}", type_name(other)),
                    ));
                }
            };
            if invariants.is_empty() && ready.is_none() {
                return Err(bad(&at, "name `invariants`, `ready` or both"));
            }
            Action::Check {
                list: b.req_str("list")?,
                invariants,
                ready,
            }
        }
        "concurrent" => Action::Concurrent(parse_concurrent(body, &at, &active)?),
        _ => unreachable!("every action key is handled"),
    };
    Ok(Step {
        index,
        session,
        only,
        rules,
        note,
        precondition,
        action,
        raw: v.clone(),
    })
}

fn contents(b: &Obj<'_>) -> Result<Contents, Bad> {
    match (b.get("text"), b.get("base64")) {
        (Some(t), None) => Ok(Contents::Text(string(t, &b.at("text"))?)),
        (None, Some(x)) => {
            let s = string(x, &b.at("base64"))?;
            decode_base64(&s)
                .map(Contents::Bytes)
                .map_err(|m| bad(b.at("base64"), m))
        }
        _ => Err(bad(&b.path, "give exactly one of `text` and `base64`")),
    }
}

/// Standard base64 (RFC 4648, `=` padding optional, whitespace ignored).
fn decode_base64(s: &str) -> Result<Vec<u8>, String> {
    use base64::Engine;
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    const LENIENT: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new()
            .with_decode_padding_mode(DecodePaddingMode::Indifferent)
            .with_decode_allow_trailing_bits(true),
    );
    let compact: String = s.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    LENIENT
        .decode(compact)
        .map_err(|e| format!("not base64: {e}"))
}

/// Reads a value given either once or per profile (`{"strict": E, "*": E}`), and checks that
/// every profile in `active` is covered.
fn per_profile<T>(
    v: &Value,
    path: &str,
    active: &[Profile],
    parse: fn(&Value, &str) -> Result<T, Bad>,
) -> Result<PerProfile<T>, Bad> {
    let is_per_profile = match v {
        Value::Object(m) => {
            !m.is_empty() && m.keys().all(|k| k == "*" || k.parse::<Profile>().is_ok())
        }
        _ => false,
    };
    if !is_per_profile {
        return parse(v, path).map(PerProfile::same);
    }
    let m = v.as_object().expect("checked above");
    let mut out = PerProfile {
        by_profile: BTreeMap::new(),
        default: None,
    };
    for (k, e) in m {
        let here = format!("{path}.{k}");
        let parsed = parse(e, &here)?;
        if k == "*" {
            out.default = Some(parsed);
        } else {
            out.by_profile
                .insert(k.parse().expect("checked above"), parsed);
        }
    }
    for p in active {
        if out.get(*p).is_none() {
            return Err(bad(
                path,
                format!("no expectation for profile {p}; add \"{p}\" or \"*\""),
            ));
        }
    }
    Ok(out)
}

fn parse_expect(v: &Value, path: &str) -> Result<Expect, Bad> {
    const SHAPES: &str = "expected {\"ok\": true, ...}, {\"error\": KIND}, {\"any\": [...]}, \"anything\", or an object keyed by profile";
    match v {
        Value::String(s) if s == "anything" => Ok(Expect::Anything),
        Value::Object(m) if m.contains_key("ok") => {
            let o = Obj::new(v, path)?;
            o.deny_unknown(&["ok", "task", "tasks", "corrupt"])?;
            if m.get("ok") != Some(&Value::Bool(true)) {
                return Err(bad(
                    o.at("ok"),
                    "must be true; expect a failure with {\"error\": KIND}",
                ));
            }
            let task = o
                .get("task")
                .map(|t| Obj::new(t, &o.at("task")).map(|_| t.clone()))
                .transpose()?;
            let tasks = match o.get("tasks") {
                None => None,
                Some(Value::Array(items)) => {
                    for (i, t) in items.iter().enumerate() {
                        Obj::new(t, &format!("{}[{i}]", o.at("tasks")))?;
                    }
                    Some(items.clone())
                }
                Some(other) => {
                    return Err(bad(
                        o.at("tasks"),
                        format!("expected an array of tasks, got {}", type_name(other)),
                    ));
                }
            };
            let corrupt = o
                .get("corrupt")
                .map(|c| {
                    str_array(c, &o.at("corrupt"))
                        .map(|v| v.into_iter().map(Value::String).collect())
                })
                .transpose()?;
            Ok(Expect::Ok {
                task,
                tasks,
                corrupt,
            })
        }
        Value::Object(m) if m.contains_key("error") => {
            let o = Obj::new(v, path)?;
            o.deny_unknown(&["error"])?;
            let kind = o.req_str("error")?;
            kind.parse::<ErrorKind>()
                .map(Expect::Error)
                .map_err(|e| bad(o.at("error"), e))
        }
        Value::Object(m) if m.contains_key("any") => {
            let o = Obj::new(v, path)?;
            o.deny_unknown(&["any"])?;
            match o.req("any")? {
                Value::Array(items) if !items.is_empty() => items
                    .iter()
                    .enumerate()
                    .map(|(i, e)| parse_expect(e, &format!("{}[{i}]", o.at("any"))))
                    .collect::<Result<_, _>>()
                    .map(Expect::Any),
                _ => Err(bad(
                    o.at("any"),
                    "expected a non-empty array of expectations",
                )),
            }
        }
        Value::Object(m) => match m.keys().next() {
            Some(k) => Err(bad(
                format!("{path}.{k}"),
                format!("unknown field; {SHAPES}"),
            )),
            None => Err(bad(path, SHAPES)),
        },
        _ => Err(bad(path, SHAPES)),
    }
}

fn parse_verify_expect(v: &Value, path: &str) -> Result<VerifyExpect, Bad> {
    match v.as_str() {
        Some("holds") => Ok(VerifyExpect::Holds),
        Some("any") => Ok(VerifyExpect::Any),
        _ => Err(bad(path, format!("expected \"holds\" or \"any\", got {v}"))),
    }
}

fn parse_concurrent(v: &Value, path: &str, active: &[Profile]) -> Result<Concurrent, Bad> {
    let o = Obj::new(v, path)?;
    o.deny_unknown(&["lanes", "lockstep", "verify", "list", "expect"])?;
    let lanes_v = match o.req("lanes")? {
        Value::Array(a) if !a.is_empty() => a,
        _ => return Err(bad(o.at("lanes"), "expected a non-empty array of lanes")),
    };
    let mut lanes = Vec::new();
    let mut names = BTreeSet::new();
    for (k, l) in lanes_v.iter().enumerate() {
        let lp = format!("{}[{k}]", o.at("lanes"));
        let lo = Obj::new(l, &lp)?;
        lo.deny_unknown(&["session", "repeat", "send"])?;
        let session = match lo.get("session") {
            Some(s) => session_name(s, &lo.at("session"))?,
            None => format!("lane{k}"),
        };
        if !names.insert(session.clone()) {
            return Err(bad(
                lo.at("session"),
                format!("two lanes share session {session:?}; each lane needs its own"),
            ));
        }
        let repeat = match lo.get("repeat") {
            None => 1,
            Some(r) => match r.as_u64() {
                Some(n @ 1..=100_000) => n as usize,
                _ => {
                    return Err(bad(
                        lo.at("repeat"),
                        format!("expected a count from 1 to 100000, got {r}"),
                    ));
                }
            },
        };
        lanes.push(Lane {
            session,
            repeat,
            send: lo.req("send")?.clone(),
        });
    }
    let lockstep = match o.get("lockstep") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(bad(
                o.at("lockstep"),
                format!("expected true or false, got {other}"),
            ));
        }
    };
    if lockstep && lanes.iter().any(|l| l.repeat != lanes[0].repeat) {
        return Err(bad(
            o.at("lockstep"),
            "lanes in lockstep must all have the same repeat",
        ));
    }
    let verify_name = o.req_str("verify")?;
    let verify = Verify::ALL
        .into_iter()
        .find(|x| x.as_str() == verify_name)
        .ok_or_else(|| {
            bad(
                o.at("verify"),
                format!(
                    "unknown verify {verify_name:?}; expected one of {}",
                    Verify::ALL.map(|x| x.as_str()).join(", ")
                ),
            )
        })?;
    let expect = match o.get("expect") {
        None => PerProfile::same(VerifyExpect::Holds),
        Some(e) => per_profile(e, &o.at("expect"), active, parse_verify_expect)?,
    };
    Ok(Concurrent {
        lanes,
        lockstep,
        verify,
        list: o.req_str("list")?,
        expect,
    })
}

/// The JSON values of a step that may hold placeholders, with their paths.
pub(crate) fn templated(step: &Step) -> Vec<(Value, String)> {
    let p = format!("steps[{}]", step.index);
    let s = |x: &str| Value::String(x.to_string());
    match &step.action {
        Action::Send {
            request, expect, ..
        } => {
            let mut out = vec![(request.clone(), format!("{p}.send"))];
            for e in expect.by_profile.values().chain(expect.default.iter()) {
                out.push((e.to_json(), format!("{p}.expect")));
            }
            out
        }
        Action::WriteTask { list, id, task } => vec![
            (s(list), format!("{p}.write_task.list")),
            (s(id), format!("{p}.write_task.id")),
            (task.clone(), format!("{p}.write_task.task")),
        ],
        Action::WriteFile { path, contents } => {
            let mut out = vec![(s(path), format!("{p}.write_file.path"))];
            if let Contents::Text(t) = contents {
                out.push((s(t), format!("{p}.write_file.text")));
            }
            out
        }
        Action::OutsideFile { contents, .. } => match contents {
            Contents::Text(t) => vec![(s(t), format!("{p}.outside_file.text"))],
            Contents::Bytes(_) => vec![],
        },
        Action::Symlink { path, to } => {
            let mut out = vec![(s(path), format!("{p}.symlink.path"))];
            if let LinkTarget::Inside(t) = to {
                out.push((s(t), format!("{p}.symlink.to")));
            }
            out
        }
        Action::Mkdir(x) => vec![(s(x), format!("{p}.mkdir"))],
        Action::RemoveFile(x) => vec![(s(x), format!("{p}.remove_file"))],
        Action::AssertFile { path, check } => {
            let mut out = vec![(s(path), format!("{p}.assert_file.path"))];
            match check {
                FileCheck::Text(t) => out.push((s(t), format!("{p}.assert_file.text"))),
                FileCheck::Task(t) => out.push((t.clone(), format!("{p}.assert_file.task"))),
                FileCheck::Exists(_) => {}
            }
            out
        }
        Action::AssertOutside { text, .. } => vec![(s(text), format!("{p}.assert_outside.text"))],
        Action::Check { list, ready, .. } => {
            let mut out = vec![(s(list), format!("{p}.check.list"))];
            if let Some(r) = ready {
                out.push((Value::Array(r.clone()), format!("{p}.check.ready")));
            }
            out
        }
        Action::Concurrent(c) => {
            let mut out = vec![(s(&c.list), format!("{p}.concurrent.list"))];
            for (k, l) in c.lanes.iter().enumerate() {
                out.push((l.send.clone(), format!("{p}.concurrent.lanes[{k}].send")));
            }
            out
        }
        Action::Open(_) | Action::Restart(_) | Action::Kill(_) | Action::Close(_) => vec![],
    }
}

/// Proves, for every profile the scenario applies to, that each placeholder is bound by an
/// earlier step that runs under that profile (`${i}` inside concurrent lanes).
fn check_variables(s: &Scenario) -> Result<(), Bad> {
    for &profile in &s.profiles {
        let mut bound: BTreeSet<String> = BTreeSet::new();
        for step in s.steps_for(profile) {
            let lane = matches!(step.action, Action::Concurrent(_));
            for (value, path) in templated(step) {
                let used = vars::uses(&value, &path).map_err(|(p, e)| bad(p, e.to_string()))?;
                for (name, at) in used {
                    let ok = bound.contains(&name) || (lane && name == "i");
                    if !ok {
                        let under = if s.profiles.len() > 1 {
                            format!(" (under profile {profile})")
                        } else {
                            String::new()
                        };
                        return Err(bad(
                            at,
                            format!(
                                "variable `{name}` is not bound by any earlier step{under}; bind it with \"bind\": {{\"{name}\": \"task.id\"}}"
                            ),
                        ));
                    }
                }
            }
            if let Action::Send { bind, .. } = &step.action {
                bound.extend(bind.iter().map(|(n, _)| n.clone()));
            }
        }
    }
    Ok(())
}

/// A scenario of `steps` under profile strict, for unit tests of what reads scenarios.
#[cfg(test)]
pub(crate) fn test_scenario(steps: Value) -> Scenario {
    let v = serde_json::json!({"id": "s", "title": "t", "rules": ["S1"], "profiles": ["strict"], "steps": steps});
    parse_scenario(&v, Path::new("s.json")).expect("a valid test scenario")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<Scenario, Bad> {
        parse_scenario(&v, Path::new("x.json"))
    }

    fn base(steps: Value) -> Value {
        json!({"id": "t", "title": "t", "rules": ["S7"], "steps": steps})
    }

    #[test]
    fn a_minimal_scenario_loads() {
        let s = parse(base(json!([
            {"send": {"op": "create", "list": "l", "task": {"subject": "a"}}, "bind": {"a": "task.id"}},
            {"send": {"op": "update", "list": "l", "id": "${a}", "patch": {"addBlockedBy": ["${a}"]}},
             "expect": {"strict": {"error": "cycle"}, "*": {"ok": true}}}
        ])))
        .unwrap();
        assert_eq!(s.steps.len(), 2);
        assert_eq!(s.profiles, Profile::ALL.to_vec());
        assert_eq!(
            s.needs_for(Profile::Strict).into_iter().collect::<Vec<_>>(),
            vec![(Feature::Edges, Some(1))]
        );
    }

    #[test]
    fn errors_name_the_field_path() {
        let cases = [
            (json!({"title": "t", "rules": ["S1"], "steps": []}), "id"),
            (
                json!({"id": "t", "title": "t", "rules": ["S1"], "steps": [], "extra": 1}),
                "extra",
            ),
            (base(json!([{"send": {}, "expct": {}}])), "steps[0].expct"),
            (
                base(json!([{"send": {}, "expect": {"error": "cycles"}}])),
                "steps[0].expect.error",
            ),
            (
                base(json!([{"send": {}, "expect": {"strict": {"ok": true}}}])),
                "steps[0].expect",
            ),
            (
                base(json!([{"send": {"op": "get", "list": "l", "id": "${a}"}}])),
                "steps[0].send.id",
            ),
            (
                json!({"id": "t", "title": "t", "rules": ["S21"], "steps": []}),
                "rules[0]",
            ),
            (base(json!([{"mkdir": "../x"}])), "steps[0].mkdir"),
            (
                base(json!([{"check": {"list": "l", "invariants": ["acylic"]}}])),
                "steps[0].check.invariants[0]",
            ),
            (
                base(json!([{"send": {}, "expect": {"ok": true, "task": {}, "taks": {}}}])),
                "steps[0].expect.taks",
            ),
        ];
        for (v, path) in cases {
            let (p, m) = parse(v.clone()).unwrap_err();
            assert_eq!(p, path, "{v}: {m}");
        }
    }

    #[test]
    fn variables_are_checked_per_profile() {
        // Bound only under strict, used under every profile.
        let v = base(json!([
            {"send": {"op": "create", "list": "l", "task": {"subject": "a"}},
             "bind": {"a": "task.id"}, "only": ["strict"]},
            {"send": {"op": "get", "list": "l", "id": "${a}"}}
        ]));
        let (p, m) = parse(v).unwrap_err();
        assert_eq!(p, "steps[1].send.id");
        assert!(m.contains("cc-2.1.17"), "{m}");
        // `${i}` exists only inside lanes.
        let v = base(json!([{"send": {"op": "get", "list": "l", "id": "${i}"}}]));
        assert!(parse(v).is_err());
        let v = base(json!([{"concurrent": {
            "lanes": [{"session": "a", "repeat": 2, "send": {"op": "create", "list": "l", "task": {"subject": "x${i}"}}}],
            "verify": "unique_ids", "list": "l"}}]));
        assert!(parse(v).is_ok());
    }

    #[test]
    fn refusing_an_operation_does_not_need_it() {
        let s = parse(base(json!([
            {"send": {"op": "delete", "list": "l", "id": "1"},
             "expect": {"s07": {"error": "unsupported"}, "*": {"error": "not_found"}}}
        ])))
        .unwrap();
        assert!(s.needs_for(Profile::S07).is_empty());
        assert!(s.needs_for(Profile::Strict).contains_key(&Feature::Delete));
    }

    #[test]
    fn base64_decodes() {
        assert_eq!(decode_base64("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(decode_base64("AP8=").unwrap(), vec![0, 255]);
        assert!(decode_base64("a*").is_err());
        assert_eq!(decode_base64("aGVs\nbG8").unwrap(), b"hello");
    }

    #[test]
    fn odd_field_names_are_quoted_in_error_paths() {
        let (path, _) =
            parse_scenario(&serde_json::json!({"": 1}), Path::new("f.json")).unwrap_err();
        assert_eq!(path, "[\"\"]");
        let (path, _) =
            parse_scenario(&serde_json::json!({"a b": 1}), Path::new("f.json")).unwrap_err();
        assert_eq!(path, "[\"a b\"]");
    }
}
