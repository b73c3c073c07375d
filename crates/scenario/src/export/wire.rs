//! What the scenario's processes were sent and answered, from the targets' wire log: one
//! file of lines per process and `wire.jsonl` with everything in order.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use serde_json::{Value, json};
use taskproof_session::wire::{Event, Launch};

use super::*;

/// One process of the scenario: how it started, what it was sent and what it answered.
pub(super) struct Process {
    pub(super) launch: Launch,
    pub(super) sent: Vec<String>,
    pub(super) got: Vec<String>,
}

pub(super) fn processes(events: &[Event]) -> BTreeMap<usize, Process> {
    let mut out: BTreeMap<usize, Process> = BTreeMap::new();
    for e in events {
        match e {
            Event::Start { process, launch } => {
                out.insert(
                    *process,
                    Process {
                        launch: launch.clone(),
                        sent: Vec::new(),
                        got: Vec::new(),
                    },
                );
            }
            Event::Sent { process, line } => {
                if let Some(p) = out.get_mut(process) {
                    p.sent.push(line.clone());
                }
            }
            Event::Got { process, line } => {
                if let Some(p) = out.get_mut(process) {
                    p.got.push(line.clone());
                }
            }
            _ => {}
        }
    }
    out
}

pub(super) fn lines(ls: &[String]) -> String {
    ls.iter().map(|l| format!("{l}\n")).collect()
}

/// A line as JSON when it is, as a string otherwise.
pub(super) fn as_json(line: &str) -> Value {
    serde_json::from_str(line).unwrap_or_else(|_| Value::String(line.to_string()))
}

pub(super) fn wire_jsonl(events: &[Event]) -> String {
    let mut out = String::new();
    for e in events {
        let v = match e {
            Event::Step { index, what } => json!({"step": index, "what": what}),
            Event::Start { process, launch } => json!({
                "start": process,
                "script": launch.script,
                "args": launch.args,
                "env": launch.env.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>(),
                "cwd": launch.cwd,
                "root": launch.root,
                "list": launch.list,
            }),
            Event::Sent { process, line } => json!({"process": process, "sent": as_json(line)}),
            Event::Got { process, line } => json!({"process": process, "got": as_json(line)}),
            Event::Closed { process } => json!({"closed": process}),
            Event::Killed { process } => json!({"killed": process}),
        };
        out.push_str(&v.to_string());
        out.push('\n');
    }
    out
}

/// The root of process `n`'s launch.
pub(super) fn processes_root(events: &[Event], n: usize) -> Option<PathBuf> {
    events.iter().find_map(|e| match e {
        Event::Start { process, launch } if *process == n => Some(launch.root.clone()),
        _ => None,
    })
}

/// The script's `answer`: the result (or error) of each request a server made of the
/// client, by method, as taskproof's MCP client answered it first; what it answers those it
/// was never asked (no roots, a pong, no such method) otherwise.
pub(super) fn answers(events: &[Event]) -> String {
    let mut asked: BTreeMap<(usize, String), String> = BTreeMap::new();
    let mut answered: BTreeMap<String, String> = BTreeMap::new();
    for e in events {
        match e {
            Event::Got { process, line } => {
                let msg = as_json(line);
                if let (Some(Value::String(m)), Some(id)) = (msg.get("method"), msg.get("id")) {
                    asked.insert((*process, id.to_string()), m.clone());
                }
            }
            Event::Sent { process, line } => {
                let msg = as_json(line);
                if msg.get("method").is_some() {
                    continue;
                }
                let Some(id) = msg.get("id") else { continue };
                let Some(m) = asked.get(&(*process, id.to_string())) else {
                    continue;
                };
                let part = ["result", "error"]
                    .into_iter()
                    .find_map(|k| msg.get(k).map(|v| format!("\"{k}\":{v}")));
                if let Some(part) = part {
                    answered.entry(m.clone()).or_insert(part);
                }
            }
            _ => {}
        }
    }
    let mut out = String::from(
        "# What taskproof's MCP client answered a request of the server's.\nanswer() {\n  case $1 in\n",
    );
    for (m, part) in &answered {
        let _ = writeln!(out, "    {}) printf '%s' {} ;;", quote(m), quote(part));
    }
    out.push_str(
        "    roots/list) printf '%s' '\"result\":{\"roots\":[]}' ;;\n    \
         ping) printf '%s' '\"result\":{}' ;;\n    \
         *) printf '%s' '\"error\":{\"code\":-32601,\"message\":\"Method not found\"}' ;;\n  \
         esac\n}\n",
    );
    out
}
