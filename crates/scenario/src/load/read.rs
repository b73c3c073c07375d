//! Reading scenario files: files and folders (recursively, `*.json`), JSON syntax errors
//! with their line and column, the top-level object of a scenario, and duplicate ids across
//! files. Steps are read by [`super::step`]; placeholders are proven bound by
//! [`super::variables`].

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::step::{parse_profiles, parse_rules, parse_step};
use super::variables::check_variables;
use crate::format::{Action, Scenario};
use taskproof_core::field::{FieldError, Fields, str_array, type_name};
use taskproof_core::protocol::{Feature, SESSION_LIST};
use taskproof_profile::Profile;
use taskproof_session::SessionEvent;

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
    parse_scenario(&v, file).map_err(|e| LoadError::Field {
        file: file.to_path_buf(),
        path: e.field,
        message: e.message,
    })
}

/// Parses a scenario from its JSON (used by [`load_file`], and by tests).
pub fn parse_scenario(v: &Value, file: &Path) -> Result<Scenario, FieldError> {
    let top = Fields::only(
        v,
        "",
        &[
            "id", "title", "source", "rules", "needs", "profiles", "steps",
        ],
    )?;
    let id = top.req_str("id")?;
    let id_ok = !id.is_empty()
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if !id_ok {
        return Err(FieldError::new(
            "id",
            format!("expected [a-z0-9-]+, got {id:?}"),
        ));
    }
    let title = top.req_str("title")?;
    let source = top.opt_str("source")?;
    let rules = parse_rules(top.req("rules")?, "rules")?;
    if rules.is_empty() {
        return Err(FieldError::new("rules", "name at least one rule id"));
    }
    let needs = match top.get("needs") {
        None => BTreeSet::new(),
        Some(v) => str_array(v, "needs")?
            .into_iter()
            .enumerate()
            .map(|(i, s)| {
                s.parse::<Feature>()
                    .map_err(|e| FieldError::new(format!("needs[{i}]"), e))
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
            return Err(FieldError::new(
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
    check_resumes(&scenario)?;
    check_session_lists(&scenario)?;
    Ok(scenario)
}

/// The session's own list (`"list": "@session"`) is one session's: a concurrent block's
/// lanes are separate sessions and its verification reads through another, so it cannot
/// name it; nor can a file step, whose path would need the folder's name, which the target
/// chooses (Claude Code: the session id).
fn check_session_lists(s: &Scenario) -> Result<(), FieldError> {
    for step in &s.steps {
        let at = |key: &str| format!("steps[{}].{key}", step.index);
        match &step.action {
            Action::Concurrent(c)
                if c.list == SESSION_LIST
                    || c.requests()
                        .any(|r| r.get("list").and_then(Value::as_str) == Some(SESSION_LIST)) =>
            {
                return Err(FieldError::new(
                    at("concurrent"),
                    format!(
                        "{SESSION_LIST} is each session's own list: the lanes are separate sessions and the verification reads through another, so they share no such list; name a list"
                    ),
                ));
            }
            Action::WriteTask { list, .. } if list == SESSION_LIST => {
                return Err(FieldError::new(at("write_task.list"), file_step_refusal()));
            }
            a => {
                let (key, path) = match a {
                    Action::WriteFile { path, .. } => ("write_file.path", path),
                    Action::Symlink { path, .. } => ("symlink.path", path),
                    Action::AssertFile { path, .. } => ("assert_file.path", path),
                    Action::Mkdir(path) => ("mkdir", path),
                    Action::RemoveFile(path) => ("remove_file", path),
                    _ => continue,
                };
                if path.split('/').next() == Some(SESSION_LIST) {
                    return Err(FieldError::new(at(key), file_step_refusal()));
                }
            }
        }
    }
    Ok(())
}

fn file_step_refusal() -> String {
    format!(
        "a file step cannot name {SESSION_LIST}: the session's own list is kept in a folder the target names (Claude Code: the session id); a failure after a session step says what became of its files"
    )
}

/// A `resume` starts again a conversation that ended: its session must have been ended
/// (`exit`, `kill`, `close`) by an earlier step and not used since, under every profile the
/// step runs under.
fn check_resumes(s: &Scenario) -> Result<(), FieldError> {
    for profile in s.profiles.iter().copied() {
        let mut ended: BTreeSet<&str> = BTreeSet::new();
        for step in s.steps_for(profile) {
            match &step.action {
                Action::Kill(name)
                | Action::Close(name)
                | Action::Event {
                    event: SessionEvent::Exit,
                    session: name,
                } => {
                    ended.insert(name);
                }
                Action::Event {
                    event: SessionEvent::Resume,
                    session: name,
                } if !ended.contains(name.as_str()) => {
                    return Err(FieldError::new(
                        format!("steps[{}].resume", step.index),
                        format!(
                            "session {name:?} is not ended here{}: resume follows an `exit` or `kill` of the same session",
                            if s.profiles.len() > 1 {
                                format!(" under profile {profile}")
                            } else {
                                String::new()
                            }
                        ),
                    ));
                }
                Action::Open(name) | Action::Restart(name) => {
                    ended.remove(name.as_str());
                }
                Action::Event { session, .. } => {
                    ended.remove(session.as_str());
                }
                Action::Concurrent(c) => {
                    for lane in &c.lanes {
                        ended.remove(lane.session.as_str());
                    }
                    for t in &c.then {
                        ended.remove(t.session.as_str());
                    }
                }
                Action::Send { .. } | Action::Check { .. } => {
                    ended.remove(step.session.as_str());
                }
                _ => {}
            }
        }
    }
    Ok(())
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use serde_json::json;

    pub(in crate::load) fn parse(v: Value) -> Result<Scenario, FieldError> {
        parse_scenario(&v, Path::new("x.json"))
    }

    /// A scenario file around `steps`, under every profile.
    pub(in crate::load) fn base(steps: Value) -> Value {
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
            let FieldError {
                field: p,
                message: m,
            } = parse(v.clone()).unwrap_err();
            assert_eq!(p, path, "{v}: {m}");
        }
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

    /// Issue 53: a fuzz finding's concurrent block: lanes of their own requests (`sends`),
    /// requests after them (`then`), judged `linearizable`, which reads no list. `then`
    /// belongs to that verify only, and a lane has `send` or `sends`, not both.
    #[test]
    fn a_linearizable_block_has_lanes_of_requests_and_then() {
        let s = parse(base(json!([
            {"send": {"op": "create", "list": "l", "task": {"subject": "a"}}, "bind": {"t": "task.id"}},
            {"concurrent": {
                "lanes": [
                    {"session": "main", "sends": [{"op": "delete", "list": "l", "id": "${t}"}]},
                    {"session": "b", "sends": [
                        {"op": "update", "list": "l", "id": "${t}", "patch": {"description": "d"}},
                        {"op": "get", "list": "l", "id": "${t}"}]}],
                "then": [{"send": {"op": "list", "list": "l"}}],
                "verify": "linearizable"}}
        ])))
        .unwrap();
        let Action::Concurrent(c) = &s.steps[1].action else {
            panic!("{:?}", s.steps[1].action)
        };
        assert_eq!(c.verify, crate::format::Verify::Linearizable);
        assert_eq!(c.lanes[1].repeat, 2);
        assert_eq!(c.then[0].session, "main");
        assert_eq!(c.requests().count(), 4);
        let bad = |block: Value, field: &str, words: &str| {
            let e = parse(base(json!([{"concurrent": block}]))).unwrap_err();
            assert_eq!(e.field, field, "{}", e.message);
            assert!(e.message.contains(words), "{}", e.message);
        };
        bad(
            json!({"lanes": [{"sends": [{"op": "list", "list": "l"}]}], "verify": "acyclic",
                   "list": "l", "then": [{"send": {"op": "list", "list": "l"}}]}),
            "steps[0].concurrent.then",
            "linearizable",
        );
        bad(
            json!({"lanes": [{"send": {"op": "list", "list": "l"}, "sends": [{"op": "list", "list": "l"}]}],
                   "verify": "linearizable"}),
            "steps[0].concurrent.lanes[0].sends",
            "not both",
        );
        bad(
            json!({"lanes": [{"sends": []}], "verify": "linearizable"}),
            "steps[0].concurrent.lanes[0].sends",
            "non-empty",
        );
        bad(
            json!({"lanes": [{"sends": [{"op": "list", "list": "l"}]}], "verify": "acyclic"}),
            "steps[0].concurrent.list",
            "",
        );
    }

    /// The session's own list: a step that sends to it needs `session_list`; a concurrent
    /// block and a file step cannot name it.
    #[test]
    fn the_sessions_own_list_is_a_part_and_only_for_requests_of_one_session() {
        let s = parse(base(json!([
            {"send": {"op": "create", "list": "@session", "task": {"subject": "a"}}},
            {"clear": "main"},
            {"send": {"op": "list", "list": "@session"}}
        ])))
        .unwrap();
        assert_eq!(
            s.needs_for(Profile::Strict).into_iter().collect::<Vec<_>>(),
            vec![(Feature::SessionList, Some(0))]
        );
        let lanes = base(json!([{"concurrent": {
            "lanes": [{"send": {"op": "create", "list": "@session", "task": {"subject": "a"}}}],
            "verify": "unique_ids", "list": "l"}}]));
        let e = parse(lanes).unwrap_err();
        assert_eq!(e.field, "steps[0].concurrent");
        assert!(
            e.message.contains("each session's own list"),
            "{}",
            e.message
        );
        for (step, field) in [
            (
                json!({"assert_file": {"path": "@session/1.json", "exists": true}}),
                "steps[0].assert_file.path",
            ),
            (
                json!({"remove_file": "@session/1.json"}),
                "steps[0].remove_file",
            ),
            (
                json!({"write_task": {"list": "@session", "id": "1", "task": {"subject": "a"}}}),
                "steps[0].write_task.list",
            ),
        ] {
            let e = parse(base(json!([step]))).unwrap_err();
            assert_eq!(e.field, field, "{step}");
            assert!(e.message.contains("the target names"), "{}", e.message);
        }
    }

    #[test]
    fn odd_field_names_are_quoted_in_error_paths() {
        let path = parse_scenario(&serde_json::json!({"": 1}), Path::new("f.json"))
            .unwrap_err()
            .field;
        assert_eq!(path, "[\"\"]");
        let path = parse_scenario(&serde_json::json!({"a b": 1}), Path::new("f.json"))
            .unwrap_err()
            .field;
        assert_eq!(path, "[\"a b\"]");
    }
}
