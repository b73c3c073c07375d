//! Answer reading: a tool result read back as the mapping says (structured content, JSON
//! in the text, or text written for a model through text.rs) into a protocol answer, with
//! tasks read again (`fetch`), a derived `blocks`, and an error result's kind.

use serde_json::{Map, Value, json};
use std::sync::Arc;
use taskproof_core::protocol::{ErrorKind, Op};
use taskproof_mcp_client::ToolResult;
use taskproof_session::TargetError;

use crate::mapping;
use crate::session::McpSession;
use crate::text;
use crate::translate::{Stop, failure};

impl McpSession {
    /// The protocol answer for an error result: its kind from the rule that found it, else
    /// the mapping's rules.
    pub(crate) fn error_answer(
        &self,
        tool: &str,
        result: &ToolResult,
        kind: Option<ErrorKind>,
    ) -> Value {
        let rules = &self.mapping.errors;
        let text = &result.text;
        let doc = document(&mapping::DocSource::default(), result).ok();
        let from_pointer = rules.kind.as_ref().and_then(|p| {
            mapping::at(doc.as_ref()?, p)?
                .as_str()?
                .parse::<ErrorKind>()
                .ok()
        });
        let kind = kind
            .or(from_pointer)
            .or_else(|| {
                rules
                    .text
                    .iter()
                    .find(|(re, _)| re.is_match(text))
                    .map(|(_, k)| *k)
            })
            .or(rules.default)
            .unwrap_or(ErrorKind::Io);
        failure(kind, format!("{tool}: {}", text.trim()))
    }

    /// Reads the answer of `op` from its calls' results, with the server's ids; `derive`:
    /// fill a derived `blocks` (not for a read inside a request).
    pub(crate) fn read_answer(
        &mut self,
        op: Op,
        map: &mapping::OpMap,
        results: &[Option<ToolResult>],
        vars: &Value,
        derive: bool,
    ) -> Result<Value, Stop> {
        if op == Op::Delete {
            // A delete needs no answer: a result that is not an error is done.
            return Ok(json!({"ok": true}));
        }
        let a = &map.answer;
        let key = format!("ops.{op}.answer");
        let picked = match a.call {
            Some(n) => results[n].as_ref().map(|r| (n, r)),
            None => results
                .iter()
                .enumerate()
                .rev()
                .find_map(|(i, r)| r.as_ref().map(|r| (i, r))),
        };
        let tool = |i: usize| map.calls[i].tool.clone();
        // A task read again afterwards (`fetch`) needs the answer's document only for its id
        // or fields read from it.
        let needed = op == Op::List
            || !a.fetch
            || a.id.is_some()
            || a.task.is_some()
            || a.also.iter().any(|x| x.1.is_none());
        let doc = match picked {
            Some((i, r)) if needed => Some((
                tool(i),
                document(&a.doc, r).map_err(|e| bad_answer(op, &key, &tool(i), e))?,
            )),
            _ => None,
        };
        // Fields read from other calls' results.
        let mut also = Map::new();
        for (field, call, ptr) in &a.also {
            let found = match call {
                Some(n) => match &results[*n] {
                    Some(r) => Some(document(&map.calls[*n].doc, r).map_err(|e| {
                        bad_answer(op, &format!("{key}.also.{field}"), &tool(*n), e)
                    })?),
                    None => None,
                },
                None => doc.as_ref().map(|(_, d)| d.clone()),
            };
            if let Some(v) = found.and_then(|d| mapping::at(&d, ptr)) {
                also.insert(field.clone(), v);
            }
        }
        if op == Op::List {
            let (tool, doc) =
                doc.ok_or_else(|| bad_answer(op, &key, "(none)", "no call ran".into()))?;
            let tasks = self.read_tasks(op, &key, &tool, &doc, a, vars, derive)?;
            let corrupt = match &a.corrupt {
                None => json!([]),
                Some(p) => mapping::at(&doc, p).unwrap_or(json!([])),
            };
            return Ok(json!({"ok": true, "tasks": tasks, "corrupt": corrupt}));
        }
        // One task: create, get, update or claim (hello is never mapped, delete answered
        // above).
        let mut vars = vars.clone();
        if let (Some(p), Some((_, d))) = (&a.id, &doc) {
            match mapping::at(d, p) {
                Some(Value::String(s)) => vars["id"] = json!(s),
                Some(Value::Number(n)) => vars["id"] = json!(n.to_string()),
                _ => {
                    return Err(bad_answer(
                        op,
                        &format!("{key}.id"),
                        &doc.as_ref().map_or(String::new(), |d| d.0.clone()),
                        format!("no id at {p:?}"),
                    ));
                }
            }
        }
        let mut task = match doc {
            // `get` through a list: the task whose id is the request's.
            Some((tool, d)) if a.tasks.is_some() => {
                let p = a.tasks.as_deref().unwrap_or("");
                let Some(Value::Array(items)) = mapping::at(&d, p) else {
                    return Err(bad_answer(
                        op,
                        &format!("{key}.tasks"),
                        &tool,
                        format!("no array at {p:?} in {d}"),
                    ));
                };
                let want = vars.get("id").cloned().unwrap_or(Value::Null);
                let found = items
                    .iter()
                    .map(|t| self.mapping.task_in(t, &also))
                    .find(|t| t.get("id") == Some(&want));
                match found {
                    Some(t) => t,
                    None => {
                        return Err(Stop::Answer(failure(
                            ErrorKind::NotFound,
                            format!(
                                "{tool}: no task with id {want} in the list the server \
                                 answered ({key}.tasks)"
                            ),
                        )));
                    }
                }
            }
            Some((tool, d)) if !a.fetch => {
                let p = a.task.as_deref().unwrap_or("");
                let t = mapping::at(&d, p).ok_or_else(|| {
                    bad_answer(
                        op,
                        &format!("{key}.task"),
                        &tool,
                        format!("no task at {p:?} in {d}"),
                    )
                })?;
                self.mapping.task_in(&t, &also)
            }
            // `get` reads its own answer: with no call run, it has none.
            None if op == Op::Get => {
                return Err(bad_answer(op, &key, "(none)", "no call ran".into()));
            }
            // A task read again that the server no longer finds (another writer's
            // change lost it): the answer is what the call itself answered, when the
            // mapping says where (`task` beside `fetch`), so the checker sees the
            // acknowledged change and its loss.
            Some((tool, d)) => match self.fetch(&vars, false) {
                Err(Stop::Answer(e)) if e["error"]["kind"] == "not_found" && a.task.is_some() => {
                    let p = a.task.as_deref().unwrap_or("");
                    let t = mapping::at(&d, p).ok_or_else(|| {
                        bad_answer(
                            op,
                            &format!("{key}.task"),
                            &tool,
                            format!("no task at {p:?} in {d}"),
                        )
                    })?;
                    self.mapping.task_in(&t, &also)
                }
                other => other?,
            },
            None => self.fetch(&vars, false)?,
        };
        if derive && self.mapping.task.derived_blocks {
            self.derive_blocks(&mut task, &vars)?;
        }
        Ok(json!({"ok": true, "task": task}))
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn read_tasks(
        &mut self,
        op: Op,
        key: &str,
        tool: &str,
        doc: &Value,
        a: &mapping::Read,
        vars: &Value,
        derive: bool,
    ) -> Result<Vec<Value>, Stop> {
        let p = a.tasks.as_deref().unwrap_or("");
        let items = match mapping::at(doc, p) {
            Some(Value::Array(items)) => items,
            _ => {
                return Err(bad_answer(
                    op,
                    &format!("{key}.tasks"),
                    tool,
                    format!("no array at {p:?} in {doc}"),
                ));
            }
        };
        let mut tasks = Vec::new();
        for t in &items {
            // An entry may be a task or only its id.
            let t = match t {
                Value::String(s) => json!({"id": s}),
                other => self.mapping.task_in(other, &Map::new()),
            };
            if !a.fetch {
                tasks.push(t);
                continue;
            }
            let id = match t.get("id") {
                Some(Value::String(s)) => s.clone(),
                _ => {
                    return Err(bad_answer(
                        op,
                        &format!("{key}.tasks"),
                        tool,
                        format!("an entry without an id: {t}"),
                    ));
                }
            };
            match self.read_task(vars, &id) {
                Ok(full) => tasks.push(full),
                // Deleted since it was listed (another writer): not in the list.
                Err(Stop::Answer(e)) if e["error"]["kind"] == "not_found" => {}
                Err(e) => return Err(e),
            }
        }
        if derive && self.mapping.task.derived_blocks {
            let all = tasks.clone();
            for t in &mut tasks {
                set_derived_blocks(t, &all);
            }
        }
        Ok(tasks)
    }

    /// The task with the server's id `id` through the `get` mapping, with the server's ids,
    /// without a derived `blocks` (a read inside a request).
    pub(crate) fn read_task(&mut self, vars: &Value, id: &str) -> Result<Value, Stop> {
        let mut vars = vars.clone();
        vars["id"] = Value::String(id.to_string());
        self.fetch(&vars, false)
    }

    /// The task named by `vars.id`, through the `get` mapping.
    pub(crate) fn fetch(&mut self, vars: &Value, derive: bool) -> Result<Value, Stop> {
        let mapping = Arc::clone(&self.mapping);
        let get = mapping.ops.get(&Op::Get).ok_or_else(|| {
            Stop::Target(TargetError::Io(
                "the mapping fetches a task but has no [ops.get]".into(),
            ))
        })?;
        let mut vars = vars.clone();
        if let Some(o) = vars.as_object_mut() {
            for k in ["patch", "task", "owner", "current", "item"] {
                o.remove(k);
            }
        }
        let results = self.run_calls(Op::Get, get, &mut vars, 0..get.calls.len())?;
        let answer = self.read_answer(Op::Get, get, &results, &vars, derive)?;
        Ok(answer["task"].clone())
    }

    /// Fills `blocks` from every task's `blockedBy`, through the `list` mapping.
    pub(crate) fn derive_blocks(&mut self, task: &mut Value, vars: &Value) -> Result<(), Stop> {
        let mapping = Arc::clone(&self.mapping);
        let list = mapping.ops.get(&Op::List).expect("checked when read");
        let container = vars.get("container").cloned();
        let mut vars = json!({"root": vars["root"], "list": vars["list"]});
        if let Some(c) = container {
            vars["container"] = c;
        }
        let results = self.run_calls(Op::List, list, &mut vars, 0..list.calls.len())?;
        let all = self.read_answer(Op::List, list, &results, &vars, false)?;
        let all = all["tasks"].as_array().cloned().unwrap_or_default();
        set_derived_blocks(task, &all);
        Ok(())
    }
}

/// Sets a task's `blocks` to the ids of the tasks in `all` whose `blockedBy` names it.
pub(crate) fn set_derived_blocks(task: &mut Value, all: &[Value]) {
    let id = task.get("id").cloned().unwrap_or(Value::Null);
    let blocks: Vec<Value> = all
        .iter()
        .filter(|t| {
            t.get("blockedBy")
                .and_then(Value::as_array)
                .is_some_and(|b| b.contains(&id))
        })
        .filter_map(|t| t.get("id").cloned())
        .collect();
    if let Some(o) = task.as_object_mut() {
        o.insert("blocks".into(), Value::Array(blocks));
    }
}

/// The result read back is not what the mapping says: an error of the target (or of the
/// mapping), naming the key and the tool.
pub(crate) fn bad_answer(op: Op, key: &str, tool: &str, reason: String) -> Stop {
    Stop::Target(TargetError::BadResponse {
        op: op.to_string(),
        reason: format!("{key} (tool {tool}): {reason}"),
    })
}

/// The document a mapping reads pointers from.
pub(crate) fn document(source: &mapping::DocSource, r: &ToolResult) -> Result<Value, String> {
    let json = |t: &str| {
        serde_json::from_str::<Value>(t.trim()).map_err(|e| {
            format!(
                "the text is not JSON ({e}): {:?}",
                t.chars().take(300).collect::<String>()
            )
        })
    };
    let base = || match source.base {
        mapping::Base::Auto => match &r.structured {
            Some(v) => Ok(v.clone()),
            None => json(&r.text),
        },
        mapping::Base::Structured => r
            .structured
            .clone()
            .ok_or_else(|| "the result has no structuredContent".to_string()),
        mapping::Base::Json => json(&r.text),
    };
    let Some(how) = &source.text else {
        return base();
    };
    match &source.text_at {
        None => text::read(how, &r.text),
        Some(p) => {
            let doc = base()?;
            match mapping::at(&doc, p) {
                Some(Value::String(s)) => text::read(how, &s),
                _ => Err(format!("no text at {p:?} in {doc}")),
            }
        }
    }
}
