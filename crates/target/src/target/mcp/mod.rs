//! `mcp:COMMAND`: any MCP task server as a target, through a mapping file (docs/mcp-targets.md).
//!
//! Each session starts its own server process, as each agent starts its own: `sh -c COMMAND`
//! with the mapping's arguments appended, in its working directory, with `TASKPROOF_ROOT` and
//! the mapping's environment set, leading a process group of its own ([`Group`]), which is
//! killed when the session ends. The session is an MCP client over the server's stdio
//! (taskproof-mcp's [`Connection`], rmcp's client): `initialize` is the session's `hello` (the
//! server's `serverInfo` and the mapping, stated), and each protocol request becomes the tool
//! calls the mapping names, their results read back as the mapping says.
//!
//! Whatever the server does, taskproof neither hangs nor panics: starting, the handshake and
//! the tool list are bounded by the start-up limit, every tool call by the request limit; a
//! server that exits, writes something that is not MCP or answers a JSON-RPC error is an error
//! of the target, and the group is killed.
pub mod draft;
pub mod mapping;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use taskproof_mcp::client::{ClientError, Connection, Noise, ServerPipes, ToolResult};

use super::group::Group;
use super::{Kind, Session, SessionOptions, Target, TargetError, TargetSpec};
use crate::protocol::{ErrorKind, Hello, Op, PROTOCOL_VERSION, Request};

pub use mapping::{Mapping, MappingError};

/// How much of the server's stderr is kept for the report.
const MAX_STDERR: usize = 256 * 1024;
/// How long the server started by [`McpTarget::prepare`] may take to start and list its tools.
const PREPARE_START_TIMEOUT: Duration = Duration::from_secs(600);
/// How long a server may take to exit after its input closed before it is killed.
const EXIT_GRACE: Duration = Duration::from_millis(500);

/// `mcp:COMMAND` in the registry of target kinds.
pub static KIND: Kind = Kind {
    prefix: "mcp:",
    syntax: "mcp:COMMAND",
    example: "mcp:taskproof mcp",
    parse: |s| {
        s.strip_prefix("mcp:")
            .map(|command| McpTarget::parse(command).map(TargetSpec::from))
    },
    takes_mapping: true,
};

/// `mcp:COMMAND` with its mapping (`--mapping FILE`).
#[derive(Debug, Clone)]
pub struct McpTarget {
    pub command: String,
    /// Set by `--mapping`; a target without one cannot open sessions.
    pub mapping: Option<Arc<Mapping>>,
}

impl PartialEq for McpTarget {
    fn eq(&self, other: &Self) -> bool {
        self.command == other.command
            && self.mapping.as_ref().map(|m| &m.path) == other.mapping.as_ref().map(|m| &m.path)
    }
}

impl Eq for McpTarget {}

impl fmt::Display for McpTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "mcp:{}", self.command)
    }
}

impl McpTarget {
    pub fn parse(command: &str) -> Result<McpTarget, String> {
        if command.trim().is_empty() {
            return Err("mcp: needs a command, e.g. mcp:'taskproof mcp' --mapping FILE".into());
        }
        Ok(McpTarget {
            command: command.to_string(),
            mapping: None,
        })
    }

    /// Reads the mapping file (`--mapping FILE`).
    pub fn with_mapping(mut self, path: &Path) -> Result<McpTarget, MappingError> {
        self.mapping = Some(Arc::new(Mapping::load(path)?));
        Ok(self)
    }

    fn mapping(&self) -> Result<&Arc<Mapping>, TargetError> {
        self.mapping.as_ref().ok_or_else(|| {
            TargetError::Spawn(format!(
                "{self} needs a mapping file: --mapping FILE (docs/mcp-targets.md)"
            ))
        })
    }

    /// Starts one server on a scratch root and checks the mapping against its tools, so that
    /// a bad mapping is reported before any scenario runs.
    pub fn prepare(&self) -> Result<(), TargetError> {
        self.mapping()?;
        let root = tempfile::tempdir().map_err(|e| TargetError::Spawn(e.to_string()))?;
        // A one-time check, charged to no session: a server on a loaded machine (Task
        // Master's takes up to minutes) gets a generous start-up limit.
        let options = SessionOptions {
            start_timeout: PREPARE_START_TIMEOUT,
            ..SessionOptions::default()
        };
        let mut s = McpSession::open(self, root.path(), options)
            .map_err(|(e, stderr)| with_stderr(e, &stderr))?;
        s.kill();
        Ok(())
    }
}

impl Target for McpTarget {
    fn kind(&self) -> &'static Kind {
        &KIND
    }

    fn open(
        &self,
        root: &Path,
        options: SessionOptions,
    ) -> Result<Box<dyn Session>, (TargetError, String)> {
        Ok(Box::new(McpSession::open(self, root, options)?))
    }

    fn is_process(&self) -> bool {
        true
    }

    fn with_mapping(&self, path: Option<&Path>) -> Result<TargetSpec, String> {
        match path {
            // The inherent method: reads the file.
            Some(p) => McpTarget::with_mapping(self.clone(), p)
                .map(TargetSpec::from)
                .map_err(|e| e.to_string()),
            None => Err(format!(
                "{self} needs --mapping FILE (docs/mcp-targets.md; `taskproof mcp-draft` writes a draft)"
            )),
        }
    }

    fn prepare(&self) -> Result<(), TargetError> {
        McpTarget::prepare(self)
    }
}

fn with_stderr(e: TargetError, stderr: &str) -> TargetError {
    if stderr.trim().is_empty() {
        return e;
    }
    let tail: String = {
        let chars: Vec<char> = stderr.trim_end().chars().collect();
        chars[chars.len().saturating_sub(2000)..].iter().collect()
    };
    TargetError::Spawn(format!("{e}\nthe server's stderr:\n{tail}"))
}

/// A connection to one server process.
pub struct McpSession {
    client: Option<Connection>,
    group: Group,
    mapping: Arc<Mapping>,
    root: PathBuf,
    stderr: Arc<Mutex<Vec<u8>>>,
    stderr_thread: Option<std::thread::JoinHandle<()>>,
    timeout: Duration,
    hello: Hello,
    dead: Option<TargetError>,
    /// The first line the server wrote that is not a JSON-RPC message, if any.
    garbage: Arc<Mutex<Option<String>>>,
    /// The server's tools: name → (description, input schema).
    tools: BTreeMap<String, (String, Value)>,
}

/// Why a request could not be answered: a protocol answer to give (the server refused), or
/// an error of the target.
enum Stop {
    Answer(Value),
    Target(TargetError),
}

impl From<TargetError> for Stop {
    fn from(e: TargetError) -> Stop {
        Stop::Target(e)
    }
}

fn failure(kind: ErrorKind, message: impl Into<String>) -> Value {
    json!({"ok": false, "error": {"kind": kind.as_str(), "message": message.into()}})
}

impl McpSession {
    /// Starts the server on `root`, makes the MCP handshake, lists its tools and checks the
    /// mapping against them, all within `options.start_timeout`.
    pub fn open(
        target: &McpTarget,
        root: &Path,
        options: SessionOptions,
    ) -> Result<McpSession, (TargetError, String)> {
        let no_stderr = |e: TargetError| (e, String::new());
        let mapping = Arc::clone(target.mapping().map_err(no_stderr)?);
        let root =
            std::path::absolute(root).map_err(|e| no_stderr(TargetError::Spawn(e.to_string())))?;
        let started = Instant::now();
        let mut cmd = Command::new("sh");
        // The mapping's arguments follow the command as "$@", each one word.
        cmd.arg("-c")
            .arg(format!("{} \"$@\"", target.command))
            .arg("sh")
            .args(
                mapping
                    .launch
                    .args
                    .iter()
                    .map(|a| mapping::Launch::fill(a, &root)),
            )
            .env("TASKPROOF_ROOT", &root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in &mapping.launch.env {
            cmd.env(k, mapping::Launch::fill(v, &root));
        }
        if let Some(cwd) = &mapping.launch.cwd {
            let cwd = PathBuf::from(mapping::Launch::fill(cwd, &root));
            std::fs::create_dir_all(&cwd).map_err(|e| {
                no_stderr(TargetError::Spawn(format!(
                    "server.cwd {}: {e}",
                    cwd.display()
                )))
            })?;
            cmd.current_dir(cwd);
        }
        let mut group = Group::spawn(&mut cmd).map_err(|e| {
            no_stderr(TargetError::Spawn(format!(
                "sh -c {:?}: {e}",
                target.command
            )))
        })?;
        let stdout = group.child().stdout.take().expect("piped stdout");
        let stdin = group.child().stdin.take().expect("piped stdin");
        let stderr_pipe = group.child().stderr.take().expect("piped stderr");
        let (stderr, stderr_thread) = super::pipes::keep_stderr(stderr_pipe, MAX_STDERR);
        let mut session = McpSession {
            client: None,
            group,
            mapping,
            root,
            stderr,
            stderr_thread: Some(stderr_thread),
            timeout: options.timeout,
            hello: Hello {
                protocol: PROTOCOL_VERSION,
                name: String::new(),
                version: String::new(),
                layout: crate::protocol::Layout::Opaque,
                features: Default::default(),
                mapping: Default::default(),
            },
            dead: None,
            garbage: Arc::default(),
            tools: BTreeMap::new(),
        };
        let limit = options.start_timeout;
        // Skipped noise goes to the report with the server's stderr.
        let noise = session.mapping.skip_stdout_noise.then(|| Noise {
            sink: Arc::clone(&session.stderr),
            limit: MAX_STDERR,
        });
        let pipes = ServerPipes {
            stdin,
            stdout,
            garbage: Arc::clone(&session.garbage),
            noise,
        };
        let left = limit.saturating_sub(started.elapsed());
        let client = match Connection::connect(pipes, "taskproof", env!("CARGO_PKG_VERSION"), left)
        {
            Ok(c) => c,
            Err(e) => {
                let e = match e {
                    ClientError::Timeout => TargetError::StartTimeout(limit),
                    e @ (ClientError::Runtime(_) | ClientError::Pipes(_)) => {
                        TargetError::Spawn(e.to_string())
                    }
                    other => TargetError::BadHello(format!("the MCP handshake failed: {other}")),
                };
                let e = session.explain(e);
                return Err((session.fail(e), session.stderr()));
            }
        };
        let info = client.server();
        session.client = Some(client);
        let left = limit.saturating_sub(started.elapsed());
        let tools = match session.list_tools(left, limit) {
            Ok(t) => t,
            Err(e) => return Err((session.fail(e), session.stderr())),
        };
        let schemas = tools
            .iter()
            .map(|(k, (_, schema))| (k.clone(), schema.clone()))
            .collect();
        session.tools = tools;
        if let Err(e) = session.mapping.check_tools(&schemas) {
            let e = TargetError::BadHello(format!("the mapping does not fit the server: {e}"));
            return Err((session.fail(e), session.stderr()));
        }
        let mut stated = session.mapping.stated();
        let (name, version) = match info.as_ref().and_then(|i| i.implementation.clone()) {
            Some(named) => named,
            None => ("unnamed MCP server".into(), String::new()),
        };
        stated.insert(
            "server".into(),
            format!(
                "{name} {version} over MCP ({}), started as {:?}",
                info.as_ref()
                    .map_or_else(String::new, |i| i.protocol_version.clone()),
                target.command
            ),
        );
        session.hello = Hello {
            protocol: PROTOCOL_VERSION,
            name,
            version,
            layout: session.mapping.layout,
            features: session.mapping.features.clone(),
            mapping: stated,
        };
        Ok(session)
    }

    /// The server's tools, each with its description and input schema, as `tools/list`
    /// answered when the session opened.
    pub fn tools(&self) -> &BTreeMap<String, (String, Value)> {
        &self.tools
    }

    fn list_tools(
        &mut self,
        left: Duration,
        limit: Duration,
    ) -> Result<BTreeMap<String, (String, Value)>, TargetError> {
        let client = self.client.as_ref().expect("connected");
        match client.list_tools(left) {
            Err(ClientError::Timeout) => Err(TargetError::StartTimeout(limit)),
            Err(e) => Err(self.service_error("tools/list", e)),
            Ok(tools) => Ok(tools
                .into_iter()
                .map(|t| (t.name, (t.description, t.input_schema)))
                .collect()),
        }
    }

    /// A lost connection is better told as the server's exit, with its status.
    fn explain(&mut self, e: TargetError) -> TargetError {
        if let Some(g) = self.garbage_line() {
            return g;
        }
        if let TargetError::BadHello(m) = &e
            && let Some(status) = self.exit_status()
        {
            return TargetError::Exited {
                status: format!("{status}; {m}"),
            };
        }
        e
    }

    fn exit_status(&mut self) -> Option<String> {
        let deadline = Instant::now() + Duration::from_millis(200);
        loop {
            if let Some(s) = self.group.exited() {
                return Some(s.to_string());
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The server wrote something that is not MCP: that is the error, whatever followed.
    fn garbage_line(&self) -> Option<TargetError> {
        let g = self.garbage.lock().unwrap_or_else(|p| p.into_inner());
        g.as_ref().map(|line| TargetError::Garbage {
            line: line.chars().take(500).collect(),
            reason: "the server wrote a line that is not an MCP (JSON-RPC) message on stdout"
                .into(),
        })
    }

    fn service_error(&mut self, what: &str, e: ClientError) -> TargetError {
        if let Some(g) = self.garbage_line() {
            return g;
        }
        match e {
            ClientError::Rpc { code, message } => TargetError::Io(format!(
                "the server answered {what} with a JSON-RPC error {code}: {message}"
            )),
            ClientError::Closed(e) => match self.exit_status() {
                Some(status) => TargetError::Exited { status },
                None => TargetError::Io(format!(
                    "the connection to the server closed during {what}: {e}"
                )),
            },
            other => TargetError::Io(format!("{what}: {other}")),
        }
    }

    fn fail(&mut self, e: TargetError) -> TargetError {
        self.kill_group();
        self.dead = Some(e.clone());
        e
    }

    fn kill_group(&mut self) {
        // The connection ends its service loop on its own runtime when dropped.
        self.client = None;
        self.group.kill();
        if let Some(h) = self.stderr_thread.take() {
            super::pipes::finish_stderr(h, super::pipes::STDERR_GRACE);
        }
    }

    /// Calls one tool within the request limit. A JSON-RPC error is the target's error
    /// unless the mapping's `errors.rpc` names its code.
    fn call_tool(&mut self, tool: &str, args: Value) -> Result<ToolResult, Stop> {
        let args = match args {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        let client = self.client.as_ref().expect("connected");
        let limit = self.timeout;
        match client.call_tool(tool, args, limit) {
            Ok(result) => Ok(result),
            Err(ClientError::Timeout) => Err(Stop::Target(TargetError::Timeout(limit))),
            Err(ClientError::Rpc { code, message })
                if self.mapping.errors.rpc.contains_key(&code) =>
            {
                Err(Stop::Answer(failure(
                    self.mapping.errors.rpc[&code],
                    format!("{tool}: JSON-RPC error {code}: {message}"),
                )))
            }
            Err(e) => Err(Stop::Target(self.service_error(&format!("tool {tool}"), e))),
        }
    }

    /// Answers one request through the mapping.
    fn answer(&mut self, request: &Value) -> Result<Value, Stop> {
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
        let mut vars = request.clone();
        vars["root"] = Value::String(self.root.to_string_lossy().into_owned());
        // The first `unsupported_after` calls (a read that finds a missing task) run before
        // the unsupported parts are judged, as the order of checks wants.
        let first = map.unsupported_after.min(map.calls.len());
        let mut results = self.run_calls(op, map, &mut vars, 0..first)?;
        for p in &map.unsupported_when {
            if mapping::present(&vars, p) {
                return Err(Stop::Answer(failure(
                    ErrorKind::Unsupported,
                    format!(
                        "{op} with {}: the mapping names it unsupported",
                        p.join(".")
                    ),
                )));
            }
        }
        results.extend(self.run_calls(op, map, &mut vars, first..map.calls.len())?);
        self.read_answer(op, map, &results, &vars)
    }

    /// Runs the operation's calls `which` in order; the first error result stops them and is the
    /// answer. Returns each call's last result by position (`None` for calls that did not
    /// run).
    fn run_calls(
        &mut self,
        op: Op,
        map: &mapping::OpMap,
        vars: &mut Value,
        which: std::ops::Range<usize>,
    ) -> Result<Vec<Option<ToolResult>>, Stop> {
        let mapping = Arc::clone(&self.mapping);
        let mut results = Vec::new();
        for call in &map.calls[which] {
            if let Some(w) = &call.when
                && !mapping::present(vars, w)
            {
                results.push(None);
                continue;
            }
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
                if let mapping::Template::Object(_, Some(p)) = &call.args
                    && let Some(v) = mapping::lookup(vars, p)
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
                let result = self.call_tool(&call.tool, args)?;
                if result.is_error {
                    return Err(Stop::Answer(self.error_answer(&call.tool, &result)));
                }
                if let Some(ptr) = &call.id {
                    let doc = document(&call.doc, &result)
                        .map_err(|e| bad_answer(op, &format!("{}.id", call.key), &call.tool, e))?;
                    match doc.pointer(ptr) {
                        Some(Value::String(s)) => vars["id"] = Value::String(s.clone()),
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

    /// The protocol answer for an error result: its kind from the mapping's rules.
    fn error_answer(&self, tool: &str, result: &ToolResult) -> Value {
        let rules = &self.mapping.errors;
        let text = &result.text;
        let doc = document(&mapping::DocSource::Auto, result).ok();
        let from_pointer = rules.kind.as_ref().and_then(|p| {
            doc.as_ref()?
                .pointer(p)?
                .as_str()?
                .parse::<ErrorKind>()
                .ok()
        });
        let kind = from_pointer
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

    fn read_answer(
        &mut self,
        op: Op,
        map: &mapping::OpMap,
        results: &[Option<ToolResult>],
        vars: &Value,
    ) -> Result<Value, Stop> {
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
        let doc = match picked {
            Some((i, r)) => Some((
                tool(i),
                document(&a.doc, r).map_err(|e| bad_answer(op, &key, &tool(i), e))?,
            )),
            None => None,
        };
        match op {
            Op::Delete => Ok(json!({"ok": true})),
            Op::List => {
                let (tool, doc) =
                    doc.ok_or_else(|| bad_answer(op, &key, "(none)", "no call ran".into()))?;
                let tasks = self.read_tasks(op, &key, &tool, &doc, a)?;
                let corrupt = match &a.corrupt {
                    None => json!([]),
                    Some(p) => doc.pointer(p).cloned().unwrap_or(json!([])),
                };
                Ok(json!({"ok": true, "tasks": tasks, "corrupt": corrupt}))
            }
            Op::Hello => Ok(self.hello.to_json()),
            Op::Create | Op::Get | Op::Update | Op::Claim => {
                let mut vars = vars.clone();
                if let (Some(p), Some((_, d))) = (&a.id, &doc) {
                    match d.pointer(p) {
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
                    Some((tool, d)) if !a.fetch => {
                        let p = a.task.as_deref().unwrap_or("");
                        let t = d.pointer(p).ok_or_else(|| {
                            bad_answer(
                                op,
                                &format!("{key}.task"),
                                &tool,
                                format!("no task at {p:?} in {d}"),
                            )
                        })?;
                        self.mapping.task_in(t)
                    }
                    // `get` reads its own answer: with no call run, it has none.
                    None if op == Op::Get => {
                        return Err(bad_answer(op, &key, "(none)", "no call ran".into()));
                    }
                    _ => self.fetch(&vars)?,
                };
                if self.mapping.task.derived_blocks {
                    self.derive_blocks(&mut task, &vars)?;
                }
                Ok(json!({"ok": true, "task": task}))
            }
        }
    }

    fn read_tasks(
        &self,
        op: Op,
        key: &str,
        tool: &str,
        doc: &Value,
        a: &mapping::Read,
    ) -> Result<Vec<Value>, Stop> {
        let p = a.tasks.as_deref().unwrap_or("");
        let mut tasks: Vec<Value> = match doc.pointer(p) {
            Some(Value::Array(items)) => items.iter().map(|t| self.mapping.task_in(t)).collect(),
            _ => {
                return Err(bad_answer(
                    op,
                    &format!("{key}.tasks"),
                    tool,
                    format!("no array at {p:?} in {doc}"),
                ));
            }
        };
        if self.mapping.task.derived_blocks {
            let all = tasks.clone();
            for t in &mut tasks {
                set_derived_blocks(t, &all);
            }
        }
        if self.mapping.task.sort {
            let num = |t: &Value| {
                t.get("id")
                    .and_then(Value::as_str)
                    .and_then(|s| s.parse::<u64>().ok())
                    .unwrap_or(u64::MAX)
            };
            tasks.sort_by_key(num);
        }
        Ok(tasks)
    }

    /// The task named by `vars.id`, through the `get` mapping.
    fn fetch(&mut self, vars: &Value) -> Result<Value, Stop> {
        let mapping = Arc::clone(&self.mapping);
        let get = mapping.ops.get(&Op::Get).ok_or_else(|| {
            Stop::Target(TargetError::Io(
                "the mapping fetches a task but has no [ops.get]".into(),
            ))
        })?;
        let mut vars = vars.clone();
        if let Some(o) = vars.as_object_mut() {
            o.remove("patch");
            o.remove("task");
            o.remove("owner");
        }
        let results = self.run_calls(Op::Get, get, &mut vars, 0..get.calls.len())?;
        let answer = self.read_answer(Op::Get, get, &results, &vars)?;
        Ok(answer["task"].clone())
    }

    /// Fills `blocks` from every task's `blockedBy`, through the `list` mapping.
    fn derive_blocks(&mut self, task: &mut Value, vars: &Value) -> Result<(), Stop> {
        let mapping = Arc::clone(&self.mapping);
        let list = mapping.ops.get(&Op::List).expect("checked when read");
        let mut vars = json!({"root": vars["root"], "list": vars["list"]});
        let results = self.run_calls(Op::List, list, &mut vars, 0..list.calls.len())?;
        let all = self.read_answer(Op::List, list, &results, &vars)?;
        let all = all["tasks"].as_array().cloned().unwrap_or_default();
        set_derived_blocks(task, &all);
        Ok(())
    }
}

/// Sets a task's `blocks` to the ids of the tasks in `all` whose `blockedBy` names it.
fn set_derived_blocks(task: &mut Value, all: &[Value]) {
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
fn bad_answer(op: Op, key: &str, tool: &str, reason: String) -> Stop {
    Stop::Target(TargetError::BadResponse {
        op: op.to_string(),
        reason: format!("{key} (tool {tool}): {reason}"),
    })
}

/// The document a mapping reads pointers from.
fn document(source: &mapping::DocSource, r: &ToolResult) -> Result<Value, String> {
    let json = |t: &str| {
        serde_json::from_str::<Value>(t.trim()).map_err(|e| {
            format!(
                "the text is not JSON ({e}): {:?}",
                t.chars().take(300).collect::<String>()
            )
        })
    };
    match source {
        mapping::DocSource::Auto => match &r.structured {
            Some(v) => Ok(v.clone()),
            None => json(&r.text),
        },
        mapping::DocSource::Structured => r
            .structured
            .clone()
            .ok_or_else(|| "the result has no structuredContent".to_string()),
        mapping::DocSource::Json => json(&r.text),
        mapping::DocSource::Pattern(re) => {
            let t = &r.text;
            let caps = re.captures(t).ok_or_else(|| {
                format!(
                    "the pattern {:?} does not match the text {:?}",
                    re.as_str(),
                    t.chars().take(300).collect::<String>()
                )
            })?;
            if let Some(j) = caps.name("json") {
                return json(j.as_str());
            }
            Ok(Value::Object(
                re.capture_names()
                    .flatten()
                    .filter_map(|n| Some((n.to_string(), json!(caps.name(n)?.as_str()))))
                    .collect(),
            ))
        }
    }
}

impl Session for McpSession {
    fn hello(&self) -> &Hello {
        &self.hello
    }

    fn call(&mut self, request: &Value) -> Result<Value, TargetError> {
        if let Some(e) = &self.dead {
            return Err(e.clone());
        }
        match self.answer(request) {
            Ok(v) | Err(Stop::Answer(v)) => Ok(v),
            Err(Stop::Target(e)) => Err(self.fail(e)),
        }
    }

    fn kill(&mut self) {
        self.kill_group();
        self.dead = Some(TargetError::Killed);
    }

    /// Closes the server's input, as an MCP client ends a stdio session, waits a moment for
    /// it to exit, then kills its group (many servers keep running after end of input).
    fn close(&mut self) -> Result<(), TargetError> {
        if let Some(ended) = TargetError::closed_already(&self.dead) {
            return ended;
        }
        if let Some(mut c) = self.client.take() {
            c.close(EXIT_GRACE);
        }
        let deadline = Instant::now() + EXIT_GRACE;
        while self.group.exited().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        self.kill_group();
        self.dead = Some(TargetError::Killed);
        Ok(())
    }

    fn stderr(&self) -> String {
        let kept = self.stderr.lock().unwrap_or_else(|p| p.into_inner());
        String::from_utf8_lossy(&kept).into_owned()
    }
}

impl Drop for McpSession {
    fn drop(&mut self) {
        self.kill_group();
    }
}
