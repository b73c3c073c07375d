//! Reading one step of a scenario: its one action key and that action's body, the keys
//! every step may carry (`session`, `only`, `rules`, `note`, `precondition`), paths that
//! cannot leave the root, and file contents as text or base64.

use std::path::{Component, Path};

use serde_json::Value;

use super::expect::{parse_concurrent, parse_expect, per_profile};
use crate::expect::Expect;
use crate::format::*;
use crate::vars;
use taskproof_core::field::{FieldError, Fields, str_array, string, type_name};
use taskproof_core::rule::Rule;
use taskproof_profile::Profile;
use taskproof_session::SessionEvent;

/// Rule ids: `S1` to `S20` (SPEC §3).
pub(super) fn parse_rules(v: &Value, path: &str) -> Result<Vec<Rule>, FieldError> {
    str_array(v, path)?
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let rule: Rule = r
                .parse()
                .map_err(|m| FieldError::new(format!("{path}[{i}]"), m))?;
            if Rule::BACKGROUND.contains(&rule) {
                return Err(FieldError::new(
                    format!("{path}[{i}]"),
                    format!(
                        "{r} is a background-task rule (docs/background.md); a store scenario cites S1 to S20"
                    ),
                ));
            }
            Ok(rule)
        })
        .collect()
}

pub(super) fn parse_profiles(v: &Value, path: &str) -> Result<Vec<Profile>, FieldError> {
    let names = str_array(v, path)?;
    if names.is_empty() {
        return Err(FieldError::new(path, "name at least one profile"));
    }
    names
        .iter()
        .enumerate()
        .map(|(i, s)| {
            s.parse::<Profile>()
                .map_err(|e| FieldError::new(format!("{path}[{i}]"), e))
        })
        .collect()
}

pub(super) fn session_name(v: &Value, path: &str) -> Result<String, FieldError> {
    let s = string(v, path)?;
    let ok = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(s)
    } else {
        Err(FieldError::new(
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

fn rel_path(v: &Value, path: &str) -> Result<String, FieldError> {
    let s = string(v, path)?;
    check_relative(&s).map_err(|m| FieldError::new(path, m))?;
    Ok(s)
}

fn outside_name(v: &Value, path: &str) -> Result<String, FieldError> {
    let s = string(v, path)?;
    if s.is_empty() || s.contains('/') || s == "." || s == ".." {
        return Err(FieldError::new(
            path,
            format!("expected a plain file name in the outside folder, got {s:?}"),
        ));
    }
    Ok(s)
}

const ACTIONS: [&str; 20] = [
    "send",
    "open",
    "restart",
    "kill",
    "close",
    "wait",
    "clear",
    "compact",
    "exit",
    "resume",
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

pub(super) fn parse_step(
    v: &Value,
    index: usize,
    profiles: &[Profile],
) -> Result<Step, FieldError> {
    let path = format!("steps[{index}]");
    let o = Fields::new(v, &path)?;
    let actions: Vec<&str> = ACTIONS
        .iter()
        .copied()
        .filter(|a| o.map.contains_key(*a))
        .collect();
    let action = match actions.as_slice() {
        [a] => *a,
        [] => {
            return Err(FieldError::new(
                &path,
                format!("a step needs one action key: {}", ACTIONS.join(", ")),
            ));
        }
        many => {
            return Err(FieldError::new(
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
    if action == "wait" && o.has("session") {
        return Err(FieldError::new(
            o.at("session"),
            "`wait` lets time pass for every session at once; it takes no `session`",
        ));
    }
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
        return Err(FieldError::new(
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
                    let bo = Fields::new(b, &o.at("bind"))?;
                    let mut out = Vec::new();
                    for (name, p) in bo.map {
                        if !vars::valid_name(name) {
                            return Err(FieldError::new(
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
        "wait" => Action::Wait(wait_seconds(body, &at)?),
        "clear" | "compact" | "exit" | "resume" => Action::Event {
            event: match action {
                "clear" => SessionEvent::Clear,
                "compact" => SessionEvent::Compact,
                "exit" => SessionEvent::Exit,
                _ => SessionEvent::Resume,
            },
            session: session_name(body, &at)?,
        },
        "write_task" => {
            let b = Fields::only(body, &at, &["list", "id", "task"])?;
            let task = b.req("task")?;
            Fields::new(task, &b.at("task"))?;
            Action::WriteTask {
                list: b.req_str("list")?,
                id: b.req_str("id")?,
                task: task.clone(),
            }
        }
        "write_file" => {
            let b = Fields::only(body, &at, &["path", "text", "base64"])?;
            Action::WriteFile {
                path: rel_path(b.req("path")?, &b.at("path"))?,
                contents: contents(&b)?,
            }
        }
        "outside_file" => {
            let b = Fields::only(body, &at, &["name", "text", "base64"])?;
            Action::OutsideFile {
                name: outside_name(b.req("name")?, &b.at("name"))?,
                contents: contents(&b)?,
            }
        }
        "symlink" => {
            let b = Fields::only(body, &at, &["path", "to_outside", "to"])?;
            let to = match (b.get("to_outside"), b.get("to")) {
                (Some(n), None) => LinkTarget::Outside(outside_name(n, &b.at("to_outside"))?),
                (None, Some(p)) => LinkTarget::Inside(rel_path(p, &b.at("to"))?),
                _ => {
                    return Err(FieldError::new(
                        &at,
                        "give exactly one of `to_outside` and `to`",
                    ));
                }
            };
            Action::Symlink {
                path: rel_path(b.req("path")?, &b.at("path"))?,
                to,
            }
        }
        "mkdir" => Action::Mkdir(rel_path(body, &at)?),
        "remove_file" => Action::RemoveFile(rel_path(body, &at)?),
        "assert_file" => {
            let b = Fields::only(body, &at, &["path", "exists", "text", "task"])?;
            let checks: Vec<&str> = ["exists", "text", "task"]
                .into_iter()
                .filter(|k| b.map.contains_key(*k))
                .collect();
            let check = match checks.as_slice() {
                ["exists"] => match b.req("exists")? {
                    Value::Bool(x) => FileCheck::Exists(*x),
                    other => {
                        return Err(FieldError::new(
                            b.at("exists"),
                            format!("expected true or false, got {}", type_name(other)),
                        ));
                    }
                },
                ["text"] => FileCheck::Text(b.req_str("text")?),
                ["task"] => {
                    let t = b.req("task")?;
                    Fields::new(t, &b.at("task"))?;
                    FileCheck::Task(t.clone())
                }
                _ => {
                    return Err(FieldError::new(
                        &at,
                        "give exactly one of `exists`, `text` and `task`",
                    ));
                }
            };
            Action::AssertFile {
                path: rel_path(b.req("path")?, &b.at("path"))?,
                check,
            }
        }
        "assert_outside" => {
            let b = Fields::only(body, &at, &["name", "text"])?;
            Action::AssertOutside {
                name: outside_name(b.req("name")?, &b.at("name"))?,
                text: b.req_str("text")?,
            }
        }
        "check" => {
            let b = Fields::only(body, &at, &["list", "invariants", "ready"])?;
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
                                FieldError::new(
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
                    return Err(FieldError::new(
                        b.at("ready"),
                        format!("expected an array of ids, got {}", type_name(other)),
                    ));
                }
            };
            if invariants.is_empty() && ready.is_none() {
                return Err(FieldError::new(&at, "name `invariants`, `ready` or both"));
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

/// The longest `wait` a scenario may ask for, in seconds: time is real, and a suite is run
/// by people waiting for it.
pub const MAX_WAIT_SECS: f64 = 600.0;

/// `wait`: real seconds, a number from 0 to [`MAX_WAIT_SECS`] (fractions allowed).
fn wait_seconds(v: &Value, path: &str) -> Result<std::time::Duration, FieldError> {
    let secs = match v {
        Value::Number(n) => n.as_f64().unwrap_or(f64::NAN),
        other => {
            return Err(FieldError::new(
                path,
                format!(
                    "expected a number of seconds (0 to {MAX_WAIT_SECS}), got {}",
                    type_name(other)
                ),
            ));
        }
    };
    if !(0.0..=MAX_WAIT_SECS).contains(&secs) {
        return Err(FieldError::new(
            path,
            format!("expected a number of seconds from 0 to {MAX_WAIT_SECS}, got {v}"),
        ));
    }
    Ok(std::time::Duration::from_secs_f64(secs))
}

fn contents(b: &Fields<'_>) -> Result<Contents, FieldError> {
    match (b.get("text"), b.get("base64")) {
        (Some(t), None) => Ok(Contents::Text(string(t, &b.at("text"))?)),
        (None, Some(x)) => {
            let s = string(x, &b.at("base64"))?;
            decode_base64(&s)
                .map(Contents::Bytes)
                .map_err(|m| FieldError::new(b.at("base64"), m))
        }
        _ => Err(FieldError::new(
            &b.path,
            "give exactly one of `text` and `base64`",
        )),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_decodes() {
        assert_eq!(decode_base64("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(decode_base64("AP8=").unwrap(), vec![0, 255]);
        assert!(decode_base64("a*").is_err());
        assert_eq!(decode_base64("aGVs\nbG8").unwrap(), b"hello");
    }
}
