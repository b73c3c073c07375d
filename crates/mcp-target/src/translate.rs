//! Request translation: a protocol request checked, its list kept apart, turned into the
//! tool calls the mapping names (arguments filled from the request, conditions, calls for
//! each item, an undo when a later call is refused), each call bounded by the request limit
//! and its result judged an error or not.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use taskproof_core::protocol::{ErrorKind, Op, Request};
use taskproof_mcp_client::{ClientError, ToolResult};
use taskproof_session::{TargetError, ids};

use crate::ids::ids_in;
use crate::mapping;
use crate::read::{bad_answer, document};
use crate::session::{McpSession, list_name_ok};

/// Why a request could not be answered: a protocol answer to give (the server refused), or
/// an error of the target.
pub(crate) enum Stop {
    Answer(Value),
    Target(TargetError),
}

impl From<TargetError> for Stop {
    fn from(e: TargetError) -> Stop {
        Stop::Target(e)
    }
}

pub(crate) fn failure(kind: ErrorKind, message: impl Into<String>) -> Value {
    json!({"ok": false, "error": {"kind": kind.as_str(), "message": message.into()}})
}

/// An error answer with its kind renamed by a call's `error_kinds`.
pub(crate) fn rekind(mut answer: Value, kinds: &BTreeMap<ErrorKind, ErrorKind>) -> Value {
    if let Some(k) = answer["error"]["kind"]
        .as_str()
        .and_then(|k| k.parse::<ErrorKind>().ok())
        && let Some(to) = kinds.get(&k)
    {
        answer["error"]["kind"] = Value::String(to.as_str().to_string());
    }
    answer
}

impl McpSession {
    /// Calls one tool within the request limit. A JSON-RPC error is the target's error
    /// unless the mapping's `errors.rpc` names its code.
    pub(crate) fn call_tool(&mut self, tool: &str, args: Value) -> Result<ToolResult, Stop> {
        let args = match args {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        let limit = self.timeout;
        let rpc = self.mapping.errors.rpc.clone();
        let server = self.server()?;
        let client = server.client.as_ref().expect("connected");
        match client.call_tool(tool, args, limit) {
            Ok(result) => Ok(result),
            Err(ClientError::Timeout) => Err(Stop::Target(TargetError::Timeout(limit))),
            Err(ClientError::Rpc { code, message }) if rpc.contains_key(&code) => {
                Err(Stop::Answer(failure(
                    rpc[&code],
                    format!("{tool}: JSON-RPC error {code}: {message}"),
                )))
            }
            Err(e) => Err(Stop::Target(
                server.service_error(&format!("tool {tool}"), e),
            )),
        }
    }

    /// Calls a tool; a result that is an error (`isError`, or one of `errors.detect`) stops
    /// the request as the answer.
    pub(crate) fn call_checked(
        &mut self,
        tool: &str,
        args: Value,
        kinds: &BTreeMap<ErrorKind, ErrorKind>,
    ) -> Result<ToolResult, Stop> {
        let result = match self.call_tool(tool, args) {
            Err(Stop::Answer(a)) => return Err(Stop::Answer(rekind(a, kinds))),
            other => other?,
        };
        if let Some(kind) = self.is_error(&result) {
            let a = self.error_answer(tool, &result, kind);
            return Err(Stop::Answer(rekind(a, kinds)));
        }
        Ok(result)
    }

    /// Whether a result is an error: `isError`, or a rule of `errors.detect` holds; with the
    /// kind the rule names.
    pub(crate) fn is_error(&self, result: &ToolResult) -> Option<Option<ErrorKind>> {
        if result.is_error {
            return Some(None);
        }
        let mut doc = None;
        for d in &self.mapping.errors.detect {
            let hit = match &d.how {
                mapping::DetectHow::Pattern(re) => re.is_match(&result.text),
                mapping::DetectHow::At(p, values) => {
                    let doc = doc.get_or_insert_with(|| {
                        document(&mapping::DocSource::default(), result).ok()
                    });
                    match (doc.as_ref().and_then(|d| mapping::at(d, p)), values) {
                        (Some(v), Some(values)) => values.contains(&v),
                        (Some(v), None) => mapping::is_set(&v) && v != json!(0),
                        (None, _) => false,
                    }
                }
            };
            if hit {
                return Some(d.kind);
            }
        }
        None
    }

    /// Answers one request through the mapping.
    pub(crate) fn answer(&mut self, request: &Value) -> Result<Value, Stop> {
        let invalid = |m: String| Stop::Answer(failure(ErrorKind::Invalid, m));
        let Some(obj) = request.as_object() else {
            return Err(invalid("a request must be a JSON object".into()));
        };
        let op = match obj.get("op").and_then(Value::as_str).map(str::parse::<Op>) {
            Some(Ok(op)) => op,
            Some(Err(e)) => return Err(invalid(format!("op: {e}"))),
            None => return Err(invalid("op: missing or not a string".into())),
        };
        if op == Op::Hello {
            return Ok(self.hello.to_json());
        }
        if self.mapping.check_form
            && let Err(e) = Request::from_json(request)
        {
            return Err(invalid(e.to_string()));
        }
        let mapping = Arc::clone(&self.mapping);
        let Some(map) = mapping.ops.get(&op) else {
            return Err(Stop::Answer(failure(
                ErrorKind::Unsupported,
                format!("{op}: the mapping names it unsupported"),
            )));
        };
        // A list that names a server, a folder or a table entry must be a list name.
        let keyed = mapping.launch.per_list || mapping.container.is_some() || mapping.task.id_table;
        let list = match obj.get("list") {
            Some(Value::String(s)) => s.clone(),
            _ if keyed => {
                return Err(invalid(
                    "list: missing or not a string (taskproof's MCP client: the mapping keeps \
                     lists apart by name)"
                        .into(),
                ));
            }
            _ => String::new(),
        };
        if keyed && !list_name_ok(&list) {
            return Err(invalid(format!(
                "list {list:?}: not 1 to 64 characters of [A-Za-z0-9_-] (taskproof's MCP \
                 client: the mapping keeps lists apart by name)"
            )));
        }
        if mapping.launch.per_list {
            self.use_server(&list)?;
        } else {
            self.current = String::new();
        }
        let mut vars = request.clone();
        vars["root"] = Value::String(self.root.to_string_lossy().into_owned());
        // The id book, read once for the request (a change to it is made under its lock).
        let tables = match self.book {
            Some(_) => self.tables()?,
            None => ids::Tables::default(),
        };
        if mapping.task.id_table {
            let gone = self.gone.get(&list).and_then(|g| g.first()).cloned();
            ids_in(&mut vars, &tables, &list, gone.as_deref());
        }
        if mapping.container.is_some() {
            match self.container(&list, op == Op::Create, &tables)? {
                Some(c) => vars["container"] = Value::String(c),
                // The list was never written: there is nothing of it on the server.
                None if op == Op::List => {
                    return Ok(json!({"ok": true, "tasks": [], "corrupt": []}));
                }
                None => {
                    return Err(Stop::Answer(failure(
                        ErrorKind::NotFound,
                        format!(
                            "list {list:?} was never written: the server has no container for \
                             it (taskproof's MCP client)"
                        ),
                    )));
                }
            }
        }
        // The first `unsupported_after` calls (a read that finds a missing task) run before
        // the unsupported parts are judged, as the order of checks wants.
        let had_id = vars.get("id").is_some();
        let first = map.unsupported_after.min(map.calls.len());
        let mut results = self.run_calls(op, map, &mut vars, 0..first)?;
        // A status the server cannot be asked faithfully is judged by taskproof's client
        // (stated in hello): any status outside the three when the server has no status words,
        // and one of the server's own words (which means something else on the wire).
        if let Some(st) = vars.get("patch").and_then(|p| p.get("status"))
            && !matches!(st.as_str(), Some("pending" | "in_progress" | "completed"))
        {
            let why = if !mapping.task.status_from.is_empty() {
                Some("the server has no status words")
            } else if !mapping.passes_status() {
                Some("the server is never given a status word, only calls that move it")
            } else if st.as_str().is_some_and(|w| mapping.is_server_status(w)) {
                Some("it is one of the server's own status words, which means another wire status")
            } else {
                None
            };
            if let Some(why) = why {
                return Err(invalid(format!(
                    "patch.status: {st} is not pending, in_progress or completed (taskproof's \
                     MCP client: {why})"
                )));
            }
        }
        for c in &map.unsupported_when {
            if c.iter().all(|c| c.holds(&vars)) {
                return Err(Stop::Answer(failure(
                    ErrorKind::Unsupported,
                    format!(
                        "{op} with {}: the mapping names it unsupported",
                        mapping::describe(c)
                    ),
                )));
            }
        }
        match self.run_calls(op, map, &mut vars, first..map.calls.len()) {
            Ok(r) => results.extend(r),
            Err(Stop::Answer(refused)) => {
                // A request of several calls refused after its task was made: remove it again.
                if let Some(u) = &map.undo
                    && !had_id
                    && vars.get("id").is_some_and(Value::is_string)
                {
                    let args = mapping.fill(&u.args, &vars).unwrap_or(json!({}));
                    self.call_checked(&u.tool, args, &u.error_kinds)
                        .map_err(|e| match e {
                            Stop::Answer(a) => bad_answer(
                                op,
                                &u.key,
                                &u.tool,
                                format!(
                                    "the undo was refused: {a}; the request was refused: {refused}"
                                ),
                            ),
                            other => other,
                        })?;
                }
                return Err(Stop::Answer(refused));
            }
            Err(e) => return Err(e),
        }
        if op == Op::Delete
            && mapping.launch.per_list
            && let Some(Value::String(id)) = vars.get("id")
        {
            // A server's id it no longer has (pool.rs, ids.rs).
            self.gone.entry(list.clone()).or_default().push(id.clone());
        }
        let mut answer = self.read_answer(op, map, &results, &vars, true)?;
        if mapping.task.id_table {
            self.ids_out(&mut answer, &list, tables)?;
        }
        if mapping.task.sort
            && let Some(Value::Array(tasks)) = answer.get_mut("tasks")
        {
            let num = |t: &Value| {
                t.get("id")
                    .and_then(Value::as_str)
                    .and_then(|s| s.parse::<u64>().ok())
                    .unwrap_or(u64::MAX)
            };
            tasks.sort_by_key(num);
        }
        Ok(answer)
    }

    /// Runs the operation's calls `which` in order; the first error result stops them and is the
    /// answer. Returns each call's last result by position (`None` for calls that did not
    /// run).
    pub(crate) fn run_calls(
        &mut self,
        op: Op,
        map: &mapping::OpMap,
        vars: &mut Value,
        which: std::ops::Range<usize>,
    ) -> Result<Vec<Option<ToolResult>>, Stop> {
        let mapping = Arc::clone(&self.mapping);
        let mut results = Vec::new();
        for call in &map.calls[which] {
            let items: Vec<Option<Value>> = match &call.for_each {
                None => vec![None],
                Some(p) => match mapping::lookup(vars, p) {
                    Some(Value::Array(a)) => a.iter().cloned().map(Some).collect(),
                    Some(other) => vec![Some(other.clone())],
                    None => Vec::new(),
                },
            };
            let mut last = None;
            for item in items {
                if let Some(item) = item {
                    vars["item"] = item;
                }
                // Conditions on the request first; those on the task read by `read` after it.
                let (later, now): (Vec<_>, Vec<_>) =
                    call.when.iter().partition(|c| c.reads_current());
                let unless_now = call.unless.iter().all(|c| !c.reads_current());
                let skip = |vars: &Value| {
                    !call.unless.is_empty() && call.unless.iter().all(|c| c.holds(vars))
                };
                if !now.iter().all(|c| c.holds(vars)) || (unless_now && skip(vars)) {
                    continue;
                }
                if let Some(p) = &call.read {
                    let id = match mapping::lookup(vars, p) {
                        Some(Value::String(s)) => s.clone(),
                        Some(Value::Number(n)) => n.to_string(),
                        _ => continue,
                    };
                    vars["current"] = self.read_task(vars, &id).map_err(|e| match e {
                        Stop::Answer(a) => Stop::Answer(rekind(a, &call.error_kinds)),
                        other => other,
                    })?;
                }
                if !later.iter().all(|c| c.holds(vars)) || skip(vars) || call.tool.is_empty() {
                    continue;
                }
                if let mapping::Template::Object(_, Some((p, f))) = &call.args
                    && let Some(v) = mapping.spread_value(vars, p, f)
                    && !v.is_object()
                {
                    return Err(Stop::Answer(failure(
                        ErrorKind::Invalid,
                        format!(
                            "{}: expected an object, got {v} (taskproof's client: {} spreads it \
                             into the arguments of {})",
                            p.join("."),
                            call.key,
                            call.tool
                        ),
                    )));
                }
                let args = mapping.fill(&call.args, vars).unwrap_or(json!({}));
                let result = match self.call_checked(&call.tool, args, &call.error_kinds) {
                    // An error the mapping says is none for the request: this call had
                    // nothing to do, and the next one runs.
                    Err(Stop::Answer(a))
                        if a["error"]["kind"]
                            .as_str()
                            .and_then(|k| k.parse::<ErrorKind>().ok())
                            .is_some_and(|k| call.no_error.contains(&k)) =>
                    {
                        continue;
                    }
                    other => other?,
                };
                if let Some(ptr) = &call.id {
                    let doc = document(&call.doc, &result)
                        .map_err(|e| bad_answer(op, &format!("{}.id", call.key), &call.tool, e))?;
                    match mapping::at(&doc, ptr) {
                        Some(Value::String(s)) => vars["id"] = Value::String(s),
                        Some(Value::Number(n)) => vars["id"] = Value::String(n.to_string()),
                        _ => {
                            return Err(bad_answer(
                                op,
                                &format!("{}.id", call.key),
                                &call.tool,
                                format!("no id at {ptr:?} in {doc}"),
                            ));
                        }
                    }
                }
                last = Some(result);
            }
            if let Some(o) = vars.as_object_mut() {
                o.remove("item");
            }
            results.push(last);
        }
        Ok(results)
    }
}
