//! Reading expectations: an answer's (`{"ok": true, ...}`, `{"error": KIND}`, `{"any":
//! [...]}`, `"anything"`), a concurrent block and its verdict, and values given once or per
//! profile, checked to cover every profile a step runs under.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::step::session_name;
use crate::expect::Expect;
use crate::format::*;
use taskproof_core::field::{FieldError, Fields, str_array, type_name};
use taskproof_core::protocol::ErrorKind;
use taskproof_profile::Profile;

/// Reads a value given either once or per profile (`{"strict": E, "*": E}`), and checks that
/// every profile in `active` is covered.
pub(super) fn per_profile<T>(
    v: &Value,
    path: &str,
    active: &[Profile],
    parse: fn(&Value, &str) -> Result<T, FieldError>,
) -> Result<PerProfile<T>, FieldError> {
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
            return Err(FieldError::new(
                path,
                format!("no expectation for profile {p}; add \"{p}\" or \"*\""),
            ));
        }
    }
    Ok(out)
}

pub(super) fn parse_expect(v: &Value, path: &str) -> Result<Expect, FieldError> {
    const SHAPES: &str = "expected {\"ok\": true, ...}, {\"error\": KIND}, {\"any\": [...]}, \"anything\", or an object keyed by profile";
    match v {
        Value::String(s) if s == "anything" => Ok(Expect::Anything),
        Value::Object(m) if m.contains_key("ok") => {
            let o = Fields::only(v, path, &["ok", "task", "tasks", "corrupt"])?;
            if m.get("ok") != Some(&Value::Bool(true)) {
                return Err(FieldError::new(
                    o.at("ok"),
                    "must be true; expect a failure with {\"error\": KIND}",
                ));
            }
            let task = o
                .get("task")
                .map(|t| Fields::new(t, &o.at("task")).map(|_| t.clone()))
                .transpose()?;
            let tasks = match o.get("tasks") {
                None => None,
                Some(Value::Array(items)) => {
                    for (i, t) in items.iter().enumerate() {
                        Fields::new(t, &format!("{}[{i}]", o.at("tasks")))?;
                    }
                    Some(items.clone())
                }
                Some(other) => {
                    return Err(FieldError::new(
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
            let o = Fields::only(v, path, &["error"])?;
            let kind = o.req_str("error")?;
            kind.parse::<ErrorKind>()
                .map(Expect::Error)
                .map_err(|e| FieldError::new(o.at("error"), e))
        }
        Value::Object(m) if m.contains_key("any") => {
            let o = Fields::only(v, path, &["any"])?;
            match o.req("any")? {
                Value::Array(items) if !items.is_empty() => items
                    .iter()
                    .enumerate()
                    .map(|(i, e)| parse_expect(e, &format!("{}[{i}]", o.at("any"))))
                    .collect::<Result<_, _>>()
                    .map(Expect::Any),
                _ => Err(FieldError::new(
                    o.at("any"),
                    "expected a non-empty array of expectations",
                )),
            }
        }
        Value::Object(m) => match m.keys().next() {
            Some(k) => Err(FieldError::new(
                format!("{path}.{k}"),
                format!("unknown field; {SHAPES}"),
            )),
            None => Err(FieldError::new(path, SHAPES)),
        },
        _ => Err(FieldError::new(path, SHAPES)),
    }
}

fn parse_verify_expect(v: &Value, path: &str) -> Result<VerifyExpect, FieldError> {
    match v.as_str() {
        Some("holds") => Ok(VerifyExpect::Holds),
        Some("any") => Ok(VerifyExpect::Any),
        _ => Err(FieldError::new(
            path,
            format!("expected \"holds\" or \"any\", got {v}"),
        )),
    }
}

pub(super) fn parse_concurrent(
    v: &Value,
    path: &str,
    active: &[Profile],
) -> Result<Concurrent, FieldError> {
    let o = Fields::only(
        v,
        path,
        &["lanes", "lockstep", "verify", "list", "expect", "then"],
    )?;
    let lanes_v = match o.req("lanes")? {
        Value::Array(a) if !a.is_empty() => a,
        _ => {
            return Err(FieldError::new(
                o.at("lanes"),
                "expected a non-empty array of lanes",
            ));
        }
    };
    let mut lanes = Vec::new();
    let mut names = BTreeSet::new();
    for (k, l) in lanes_v.iter().enumerate() {
        let lp = format!("{}[{k}]", o.at("lanes"));
        let lo = Fields::only(l, &lp, &["session", "repeat", "send", "sends"])?;
        let session = match lo.get("session") {
            Some(s) => session_name(s, &lo.at("session"))?,
            None => format!("lane{k}"),
        };
        if !names.insert(session.clone()) {
            return Err(FieldError::new(
                lo.at("session"),
                format!("two lanes share session {session:?}; each lane needs its own"),
            ));
        }
        let repeat = match lo.get("repeat") {
            None => 1,
            Some(r) => match r.as_u64() {
                Some(n @ 1..=100_000) => n as usize,
                _ => {
                    return Err(FieldError::new(
                        lo.at("repeat"),
                        format!("expected a count from 1 to 100000, got {r}"),
                    ));
                }
            },
        };
        let (send, sends) = match (lo.get("send"), lo.get("sends")) {
            (Some(send), None) => (send.clone(), Vec::new()),
            (None, Some(Value::Array(a))) if !a.is_empty() && lo.get("repeat").is_none() => {
                (Value::Null, a.clone())
            }
            (None, Some(Value::Array(a))) if !a.is_empty() => {
                return Err(FieldError::new(
                    lo.at("repeat"),
                    "a lane with `sends` sends each once; `repeat` is for `send`",
                ));
            }
            (None, Some(_)) => {
                return Err(FieldError::new(
                    lo.at("sends"),
                    "expected a non-empty array of requests",
                ));
            }
            (Some(_), Some(_)) => {
                return Err(FieldError::new(
                    lo.at("sends"),
                    "a lane has `send` (repeated) or `sends` (each once), not both",
                ));
            }
            (None, None) => {
                return Err(FieldError::new(
                    lp.clone(),
                    "a lane needs `send` (with `repeat`) or `sends`",
                ));
            }
        };
        lanes.push(Lane {
            session,
            repeat: if sends.is_empty() {
                repeat
            } else {
                sends.len()
            },
            send,
            sends,
        });
    }
    let lockstep = match o.get("lockstep") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(FieldError::new(
                o.at("lockstep"),
                format!("expected true or false, got {other}"),
            ));
        }
    };
    // Lanes of their own requests (`sends`) may differ in length: one that has sent all of
    // its requests still meets the others' rounds.
    if lockstep
        && lanes.iter().any(|l| l.sends.is_empty())
        && lanes.iter().any(|l| l.repeat != lanes[0].repeat)
    {
        return Err(FieldError::new(
            o.at("lockstep"),
            "lanes in lockstep must all have the same repeat",
        ));
    }
    let verify_name = o.req_str("verify")?;
    let verify = Verify::ALL
        .into_iter()
        .find(|x| x.as_str() == verify_name)
        .ok_or_else(|| {
            FieldError::new(
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
    let linearizable = verify == Verify::Linearizable;
    let then = match o.get("then") {
        None => Vec::new(),
        Some(_) if !linearizable => {
            return Err(FieldError::new(
                o.at("then"),
                "`then` is judged with the lanes as one history: it needs verify \"linearizable\"",
            ));
        }
        Some(Value::Array(a)) => {
            let mut then = Vec::with_capacity(a.len());
            for (k, t) in a.iter().enumerate() {
                let tp = format!("{}[{k}]", o.at("then"));
                let to = Fields::only(t, &tp, &["session", "send"])?;
                let session = match to.get("session") {
                    Some(s) => session_name(s, &to.at("session"))?,
                    None => "main".to_string(),
                };
                then.push(ThenSend {
                    session,
                    send: to.req("send")?.clone(),
                });
            }
            then
        }
        Some(other) => {
            return Err(FieldError::new(
                o.at("then"),
                format!("expected an array of {{\"send\": …}} steps, got {other}"),
            ));
        }
    };
    let list = match (o.get("list"), linearizable) {
        (None, true) => String::new(),
        _ => o.req_str("list")?,
    };
    Ok(Concurrent {
        lanes,
        lockstep,
        verify,
        list,
        expect,
        then,
    })
}
