//! `mcp:COMMAND`: any MCP task server as a target, through a mapping file (docs/mcp-targets.md).
//!
//! Each session starts its own server process, as each agent starts its own: `sh -c COMMAND`
//! with the mapping's arguments appended, in its working directory (`server.cwd`, else the
//! session's root, or the list's folder with `server.per_list`), with `TASKPROOF_ROOT` and
//! the mapping's environment set, leading a process group of its own ([`Group`]), which is
//! killed when the session ends. The session is an MCP client over the server's stdio
//! (taskproof-mcp's [`Connection`], rmcp's client): `initialize` is the session's `hello` (the
//! server's `serverInfo` and the mapping, stated), and each protocol request becomes the tool
//! calls the mapping names, their results read back as the mapping says. With
//! `server.per_list` a session starts one server per list instead, on the list's first use,
//! and says `hello` from a server the target probed once ([`Probe`]). With an id table or
//! containers, the request's ids and list go through the root's id book ([`taskproof_session::ids::Book`]) on
//! the way in and the answer's on the way out.
//!
//! Whatever the server does, taskproof neither hangs nor panics: starting, the handshake and
//! the tool list are bounded by the start-up limit, every tool call by the request limit; a
//! server that exits, writes something that is not MCP or answers a JSON-RPC error is an error
//! of the target, and the group is killed.
pub mod draft;
pub mod mapping;
pub mod text;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use taskproof_mcp::client::{
    ClientError, Connection, Direction, Noise, ServerInfo, ServerPipes, ToolResult, WireTap,
};

use taskproof_core::protocol::{ErrorKind, Hello, Op, PROTOCOL_VERSION, Request};
use taskproof_session::group::Group;
use taskproof_session::ids;
use taskproof_session::wire::{Launch, WireLog};
use taskproof_session::{Kind, Session, SessionOptions, Target, TargetError};

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
            .map(|command| McpTarget::parse(command).map(|t| Arc::new(t) as Arc<dyn Target>))
    },
    takes_mapping: true,
};

/// `mcp:COMMAND` with its mapping (`--mapping FILE`).
#[derive(Debug, Clone)]
pub struct McpTarget {
    pub command: String,
    /// Set by `--mapping`; a target without one cannot open sessions.
    pub mapping: Option<Arc<Mapping>>,
    /// What a server said of itself, once asked (with `server.per_list`, sessions say
    /// `hello` before they start any server).
    probe: Arc<Mutex<Option<Probe>>>,
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
        Ok(McpTarget::new(command, None))
    }

    /// `mcp:COMMAND` with a mapping already read.
    pub fn new(command: &str, mapping: Option<Arc<Mapping>>) -> McpTarget {
        McpTarget {
            command: command.to_string(),
            mapping,
            probe: Arc::default(),
        }
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
        if self.mapping()?.launch.per_list {
            // Sessions say hello from this server's answers.
            self.probe(PREPARE_START_TIMEOUT)
                .map_err(|(e, stderr)| with_stderr(e, &stderr))?;
            return Ok(());
        }
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

    fn with_mapping(&self, path: Option<&Path>) -> Result<Arc<dyn Target>, String> {
        match path {
            // The inherent method: reads the file.
            Some(p) => McpTarget::with_mapping(self.clone(), p)
                .map(|t| Arc::new(t) as Arc<dyn Target>)
                .map_err(|e| e.to_string()),
            None => Err(format!(
                "{self} needs --mapping FILE (docs/mcp-targets.md; `taskproof mcp-draft` writes a draft)"
            )),
        }
    }

    fn prepare(&self) -> Result<(), TargetError> {
        McpTarget::prepare(self)
    }

    fn not_atomic(&self) -> Option<String> {
        let m = self.mapping.as_ref()?;
        m.not_atomic()
            .map(|why| format!("the mapping {}: {why}", m.path.display()))
    }
}

/// A failure to start a server with the end of what it wrote on stderr, for people: a
/// failure to start (once, however `e` said it) and the last 2000 characters.
fn with_stderr(e: TargetError, stderr: &str) -> TargetError {
    if stderr.trim().is_empty() {
        return e;
    }
    let tail: String = {
        let chars: Vec<char> = stderr.trim_end().chars().collect();
        chars[chars.len().saturating_sub(2000)..].iter().collect()
    };
    let what = match e {
        TargetError::Spawn(m) => m,
        other => other.to_string(),
    };
    TargetError::Spawn(format!("{what}\nthe server's stderr:\n{tail}"))
}

/// One server process: its connection, its process group and what it wrote on stderr.
struct Server {
    client: Option<Connection>,
    group: Group,
    stderr: Arc<Mutex<Vec<u8>>>,
    stderr_thread: Option<std::thread::JoinHandle<()>>,
    /// The first line the server wrote that is not a JSON-RPC message, if any.
    garbage: Arc<Mutex<Option<String>>>,
    /// The scenario's wire log and this server's number in it (`SessionOptions::wire`).
    wire: Option<(WireLog, usize)>,
}

impl Server {
    fn kill(&mut self) {
        if let Some((log, process)) = &self.wire {
            log.ended(*process, true);
        }
        // The connection ends its service loop on its own runtime when dropped.
        self.client = None;
        self.group.kill();
        if let Some(h) = self.stderr_thread.take() {
            taskproof_session::pipes::finish_stderr(h, taskproof_session::pipes::STDERR_GRACE);
        }
    }

    fn stderr(&self) -> String {
        let kept = self.stderr.lock().unwrap_or_else(|p| p.into_inner());
        String::from_utf8_lossy(&kept).into_owned()
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
}

/// A server started and greeted: what it said of itself and its tools.
struct Started {
    server: Server,
    info: Option<ServerInfo>,
    tools: BTreeMap<String, (String, Value)>,
}

/// Starts the server of `command` with `mapping`'s launch on `root` (for `list`, with
/// `server.per_list`), makes the MCP handshake and lists its tools, all within `limit`. A
/// failure comes with the server's stderr; the server is killed. With `wire`, the start and
/// every line of the connection go to that log.
fn start(
    command: &str,
    mapping: &Mapping,
    root: &Path,
    list: Option<&str>,
    limit: Duration,
    wire: Option<&WireLog>,
) -> Result<Started, (TargetError, String)> {
    let no_stderr = |e: TargetError| (e, String::new());
    let started = Instant::now();
    let fill = |t: &str| mapping::Launch::fill(t, root, list);
    let mut cmd = Command::new("sh");
    // The mapping's arguments follow the command as "$@", each one word.
    cmd.arg("-c")
        .arg(format!("{command} \"$@\""))
        .arg("sh")
        .args(mapping.launch.args.iter().map(|a| fill(a)))
        .env("TASKPROOF_ROOT", root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in &mapping.launch.env {
        cmd.env(k, fill(v));
    }
    // The working folder: `server.cwd`, else the session's own folder (the list's under
    // `per_list`), never taskproof's, so that a server that keeps its data in its working
    // folder keeps it with the session's.
    let cwd = match &mapping.launch.cwd {
        Some(cwd) => PathBuf::from(fill(cwd)),
        None => match list {
            Some(l) if mapping.launch.per_list => root.join(l),
            _ => root.to_path_buf(),
        },
    };
    std::fs::create_dir_all(&cwd).map_err(|e| {
        no_stderr(TargetError::Spawn(format!(
            "server.cwd {}: {e}",
            cwd.display()
        )))
    })?;
    cmd.current_dir(cwd);
    let mut group = Group::spawn(&mut cmd)
        .map_err(|e| no_stderr(TargetError::Spawn(format!("sh -c {command:?}: {e}"))))?;
    let stdout = group.child().stdout.take().expect("piped stdout");
    let stdin = group.child().stdin.take().expect("piped stdin");
    let stderr_pipe = group.child().stderr.take().expect("piped stderr");
    let (stderr, stderr_thread) = taskproof_session::pipes::keep_stderr(stderr_pipe, MAX_STDERR);
    let mut server = Server {
        client: None,
        group,
        stderr,
        stderr_thread: Some(stderr_thread),
        garbage: Arc::default(),
        wire: wire.map(|log| (log.clone(), log.start(launch(command, mapping, root, list)))),
    };
    let fail = |mut server: Server, e: TargetError| {
        server.kill();
        let stderr = server.stderr();
        (e, stderr)
    };
    // Skipped noise goes to the report with the server's stderr.
    let noise = mapping.skip_stdout_noise.then(|| Noise {
        sink: Arc::clone(&server.stderr),
        limit: MAX_STDERR,
    });
    let pipes = ServerPipes {
        stdin,
        stdout,
        garbage: Arc::clone(&server.garbage),
        noise,
        wire: server.wire.clone().map(|(log, process)| tap(log, process)),
    };
    let left = limit.saturating_sub(started.elapsed());
    let client = match Connection::connect(pipes, "taskproof", env!("CARGO_PKG_VERSION"), left) {
        Ok(c) => c,
        Err(e) => {
            let e = match e {
                ClientError::Timeout => TargetError::StartTimeout(limit),
                e @ (ClientError::Runtime(_) | ClientError::Pipes(_)) => {
                    TargetError::Spawn(e.to_string())
                }
                other => TargetError::BadHello(format!("the MCP handshake failed: {other}")),
            };
            let e = server.explain(e);
            return Err(fail(server, e));
        }
    };
    let info = client.server();
    let left = limit.saturating_sub(started.elapsed());
    let listed = client.list_tools(left);
    server.client = Some(client);
    let tools = match listed {
        Err(ClientError::Timeout) => return Err(fail(server, TargetError::StartTimeout(limit))),
        Err(e) => {
            let e = server.service_error("tools/list", e);
            return Err(fail(server, e));
        }
        Ok(tools) => tools
            .into_iter()
            .map(|t| (t.name, (t.description, t.input_schema)))
            .collect::<BTreeMap<_, _>>(),
    };
    let schemas = tools
        .iter()
        .map(|(k, (_, schema))| (k.clone(), schema.clone()))
        .collect();
    if let Err(e) = mapping.check_tools(&schemas) {
        let e = TargetError::BadHello(format!("the mapping does not fit the server: {e}"));
        return Err(fail(server, e));
    }
    Ok(Started {
        server,
        info,
        tools,
    })
}

/// How [`start`] starts a server, for the wire log: the same script, words, variables and
/// folder.
fn launch(command: &str, mapping: &Mapping, root: &Path, list: Option<&str>) -> Launch {
    let fill = |t: &str| mapping::Launch::fill(t, root, list);
    let mut env = vec![(
        "TASKPROOF_ROOT".to_string(),
        root.to_string_lossy().into_owned(),
    )];
    env.extend(mapping.launch.env.iter().map(|(k, v)| (k.clone(), fill(v))));
    Launch {
        script: format!("{command} \"$@\""),
        args: mapping.launch.args.iter().map(|a| fill(a)).collect(),
        env,
        cwd: mapping
            .launch
            .cwd
            .as_deref()
            .map(|c| PathBuf::from(fill(c))),
        root: root.to_path_buf(),
        list: list.map(str::to_string),
    }
}

/// The connection's lines into the wire log, as server `process`'s.
fn tap(log: WireLog, process: usize) -> WireTap {
    Arc::new(move |direction, line| match direction {
        Direction::Sent => log.sent(process, line),
        Direction::Got => log.got(process, line),
    })
}

/// What a probe server said of itself, kept by the target so that sessions with one server
/// per list can say `hello` before they know a list.
#[derive(Debug, Clone)]
pub struct Probe {
    info: Option<ServerInfo>,
    tools: BTreeMap<String, (String, Value)>,
}

impl McpTarget {
    /// The server's `initialize` answer and tools, from a server started on a scratch root
    /// once per target (its first session or [`McpTarget::prepare`]).
    fn probe(&self, limit: Duration) -> Result<Probe, (TargetError, String)> {
        let mut kept = self.probe.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = kept.as_ref() {
            return Ok(p.clone());
        }
        let mapping = self.mapping().map_err(|e| (e, String::new()))?;
        let scratch =
            tempfile::tempdir().map_err(|e| (TargetError::Spawn(e.to_string()), String::new()))?;
        let list = mapping.launch.per_list.then_some("probe");
        let mut s = start(&self.command, mapping, scratch.path(), list, limit, None)?;
        s.server.kill();
        let p = Probe {
            info: s.info,
            tools: s.tools,
        };
        *kept = Some(p.clone());
        Ok(p)
    }
}

/// A connection to one server process, or with `server.per_list` to one per list.
pub struct McpSession {
    command: String,
    /// The servers by list (`""`: the one server of a mapping without `per_list`).
    servers: BTreeMap<String, Server>,
    /// The server the request in progress talks to.
    current: String,
    mapping: Arc<Mapping>,
    root: PathBuf,
    timeout: Duration,
    start_timeout: Duration,
    hello: Hello,
    dead: Option<TargetError>,
    /// The server's tools: name → (description, input schema).
    tools: BTreeMap<String, (String, Value)>,
    /// The id book, when the mapping keeps an id table or containers.
    book: Option<ids::Book>,
    /// Where the servers' lines go (`SessionOptions::wire`).
    wire: Option<WireLog>,
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

/// An error answer with its kind renamed by a call's `error_kinds`.
fn rekind(mut answer: Value, kinds: &BTreeMap<ErrorKind, ErrorKind>) -> Value {
    if let Some(k) = answer["error"]["kind"]
        .as_str()
        .and_then(|k| k.parse::<ErrorKind>().ok())
        && let Some(to) = kinds.get(&k)
    {
        answer["error"]["kind"] = Value::String(to.as_str().to_string());
    }
    answer
}

/// Whether a list name can name a folder and a table key (SPEC §3, S13).
fn list_name_ok(s: &str) -> bool {
    (1..=64).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl McpSession {
    /// Starts the server on `root` (with `server.per_list`, none yet: each list's starts on
    /// its first use), makes the MCP handshake, lists its tools and checks the mapping
    /// against them, all within `options.start_timeout`.
    pub fn open(
        target: &McpTarget,
        root: &Path,
        options: SessionOptions,
    ) -> Result<McpSession, (TargetError, String)> {
        let no_stderr = |e: TargetError| (e, String::new());
        let mapping = Arc::clone(target.mapping().map_err(no_stderr)?);
        let root =
            std::path::absolute(root).map_err(|e| no_stderr(TargetError::Spawn(e.to_string())))?;
        let mut servers = BTreeMap::new();
        let (info, tools) = if mapping.launch.per_list {
            let p = target.probe(options.start_timeout)?;
            (p.info, p.tools)
        } else {
            let s = start(
                &target.command,
                &mapping,
                &root,
                None,
                options.start_timeout,
                options.wire.as_ref(),
            )?;
            servers.insert(String::new(), s.server);
            (s.info, s.tools)
        };
        let mut stated = mapping.stated();
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
        let hello = Hello {
            protocol: PROTOCOL_VERSION,
            name,
            version,
            layout: mapping.layout,
            features: mapping.features.clone(),
            mapping: stated,
        };
        let book =
            (mapping.task.id_table || mapping.container.is_some()).then(|| ids::Book::new(&root));
        Ok(McpSession {
            command: target.command.clone(),
            servers,
            current: String::new(),
            mapping,
            root,
            timeout: options.timeout,
            start_timeout: options.start_timeout,
            hello,
            dead: None,
            tools,
            book,
            wire: options.wire,
        })
    }

    /// The server's tools, each with its description and input schema, as `tools/list`
    /// answered when the session opened.
    pub fn tools(&self) -> &BTreeMap<String, (String, Value)> {
        &self.tools
    }

    /// Calls one tool of the session's server as given, for `mcp-draft`'s probe: the result
    /// as the server answered it (an error result included), or why there is none.
    pub fn probe_call(&mut self, tool: &str, args: Value) -> Result<ToolResult, String> {
        self.current = String::new();
        match self.call_tool(tool, args) {
            Ok(r) => Ok(r),
            Err(Stop::Answer(a)) => Err(a["error"]["message"].as_str().unwrap_or("").to_string()),
            Err(Stop::Target(e)) => Err(e.to_string()),
        }
    }

    fn fail(&mut self, e: TargetError) -> TargetError {
        self.kill_group();
        self.dead = Some(e.clone());
        e
    }

    fn kill_group(&mut self) {
        for s in self.servers.values_mut() {
            s.kill();
        }
    }

    /// The server the request in progress talks to.
    fn server(&mut self) -> Result<&mut Server, TargetError> {
        self.servers
            .get_mut(&self.current)
            .ok_or_else(|| TargetError::Io("no server for this request".into()))
    }

    /// Makes `list`'s server the current one, starting it on its first use
    /// (`server.per_list`), within the start-up limit.
    fn use_server(&mut self, list: &str) -> Result<(), Stop> {
        self.current = list.to_string();
        if self.servers.contains_key(list) {
            return Ok(());
        }
        match start(
            &self.command,
            &self.mapping,
            &self.root,
            Some(list),
            self.start_timeout,
            self.wire.as_ref(),
        ) {
            Ok(s) => {
                self.servers.insert(list.to_string(), s.server);
                Ok(())
            }
            Err((e, stderr)) => Err(Stop::Target(match e {
                TargetError::Spawn(_) | TargetError::StartTimeout(_) | TargetError::BadHello(_)
                    if !stderr.trim().is_empty() =>
                {
                    with_stderr(
                        TargetError::Spawn(format!("the server for list {list:?}: {e}")),
                        &stderr,
                    )
                }
                other => other,
            })),
        }
    }

    /// Calls one tool within the request limit. A JSON-RPC error is the target's error
    /// unless the mapping's `errors.rpc` names its code.
    fn call_tool(&mut self, tool: &str, args: Value) -> Result<ToolResult, Stop> {
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
    fn call_checked(
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
    fn is_error(&self, result: &ToolResult) -> Option<Option<ErrorKind>> {
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
            ids_in(&mut vars, &tables, &list);
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

    fn book(&self) -> &ids::Book {
        self.book
            .as_ref()
            .expect("a book with an id table or containers")
    }

    fn tables(&self) -> Result<ids::Tables, Stop> {
        self.book()
            .read()
            .map_err(|e| Stop::Target(TargetError::Io(format!("the id book: {e}"))))
    }

    /// The server's container for `list`, from the book as the request read it (`tables`);
    /// made by `[lists.create]` when `make` and there is none yet (under the book's lock, so
    /// that it is made once).
    fn container(
        &mut self,
        list: &str,
        make: bool,
        tables: &ids::Tables,
    ) -> Result<Option<String>, Stop> {
        let known = tables.containers.get(list).cloned();
        if known.is_some() || !make {
            return Ok(known);
        }
        let book = self.book().clone();
        let mapping = Arc::clone(&self.mapping);
        let call = mapping.container.as_ref().expect("checked: containers");
        let root = self.root.to_string_lossy().into_owned();
        let made = book.with(|t| {
            if let Some(c) = t.containers.get(list) {
                return Ok((c.clone(), false));
            }
            let vars = json!({"root": root, "list": list});
            let args = mapping.fill(&call.args, &vars).unwrap_or(json!({}));
            let result = self.call_checked(&call.tool, args, &call.error_kinds)?;
            let ptr = call.id.as_deref().expect("checked: lists.create.id");
            let doc = document(&call.doc, &result)
                .map_err(|e| bad_answer(Op::Create, "lists.create.id", &call.tool, e))?;
            let id = match mapping::at(&doc, ptr) {
                Some(Value::String(s)) => s,
                Some(Value::Number(n)) => n.to_string(),
                _ => {
                    return Err(bad_answer(
                        Op::Create,
                        "lists.create.id",
                        &call.tool,
                        format!("no id at {ptr:?} in {doc}"),
                    ));
                }
            };
            t.containers.insert(list.to_string(), id.clone());
            Ok((id, true))
        });
        match made {
            Err(e) => Err(Stop::Target(TargetError::Io(format!("the id book: {e}")))),
            Ok(r) => r.map(Some),
        }
    }

    /// The answer's tasks with wire ids: a task's id from the table (a new one numbered),
    /// its edges' ids from the table when it knows them, else as the server gave them. When
    /// the book as the request read it (`tables`) knows every id, that is all; else the ids
    /// are given under the book's lock, from the book as it is then.
    fn ids_out(&mut self, answer: &mut Value, list: &str, tables: ids::Tables) -> Result<(), Stop> {
        let mut tasks: Vec<&mut Value> = Vec::new();
        let Some(o) = answer.as_object_mut() else {
            return Ok(());
        };
        if o.contains_key("task") {
            tasks.extend(o.get_mut("task"));
        } else if let Some(Value::Array(a)) = o.get_mut("tasks") {
            tasks.extend(a.iter_mut());
        }
        if tasks.is_empty() {
            return Ok(());
        }
        let mut tables = tables;
        if tables.knows_all(list, &tasks) {
            tables.give_wire_ids(list, &mut tasks);
            return Ok(());
        }
        let done = self
            .book()
            .with(|t| Ok::<_, ()>(((), t.give_wire_ids(list, &mut tasks))));
        match done {
            Err(e) => Err(Stop::Target(TargetError::Io(format!("the id book: {e}")))),
            Ok(_) => Ok(()),
        }
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

    /// The protocol answer for an error result: its kind from the rule that found it, else
    /// the mapping's rules.
    fn error_answer(&self, tool: &str, result: &ToolResult, kind: Option<ErrorKind>) -> Value {
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
    fn read_answer(
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
    fn read_tasks(
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
    fn read_task(&mut self, vars: &Value, id: &str) -> Result<Value, Stop> {
        let mut vars = vars.clone();
        vars["id"] = Value::String(id.to_string());
        self.fetch(&vars, false)
    }

    /// The task named by `vars.id`, through the `get` mapping.
    fn fetch(&mut self, vars: &Value, derive: bool) -> Result<Value, Stop> {
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
    fn derive_blocks(&mut self, task: &mut Value, vars: &Value) -> Result<(), Stop> {
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

/// The request's wire ids as the server's, through the id table (`task.ids = "table"`); a
/// wire id the table does not know is left as it is.
fn ids_in(vars: &mut Value, tables: &ids::Tables, list: &str) {
    let one = |v: &mut Value| {
        if let Value::String(s) = v {
            *s = tables.server_id(list, s);
        }
    };
    if let Some(id) = vars.get_mut("id") {
        one(id);
    }
    for (part, fields) in [
        ("task", &["blockedBy", "blocks"][..]),
        (
            "patch",
            &[
                "addBlockedBy",
                "addBlocks",
                "removeBlockedBy",
                "removeBlocks",
            ][..],
        ),
    ] {
        for f in fields {
            if let Some(Value::Array(a)) = vars.get_mut(part).and_then(|p| p.get_mut(*f)) {
                a.iter_mut().for_each(one);
            }
        }
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
        for s in self.servers.values_mut() {
            if let Some((log, process)) = &s.wire {
                log.ended(*process, false);
            }
            if let Some(mut c) = s.client.take() {
                c.close(EXIT_GRACE);
            }
        }
        let deadline = Instant::now() + EXIT_GRACE;
        while self
            .servers
            .values_mut()
            .any(|s| s.group.exited().is_none())
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(5));
        }
        self.kill_group();
        self.dead = Some(TargetError::Killed);
        Ok(())
    }

    fn stderr(&self) -> String {
        match self.servers.len() {
            0 => String::new(),
            1 => self
                .servers
                .values()
                .next()
                .map(Server::stderr)
                .unwrap_or_default(),
            _ => self
                .servers
                .iter()
                .map(|(list, s)| format!("[the server of list {list}]\n{}", s.stderr()))
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }

    fn start_ahead(&mut self, lists: &[&str]) {
        if !self.mapping.launch.per_list || self.dead.is_some() {
            return;
        }
        for list in lists.iter().filter(|l| list_name_ok(l)) {
            // A server that does not start is met again by the first request for its list,
            // which answers as it always did.
            let _ = self.use_server(list);
        }
        self.current = String::new();
    }
}

impl Drop for McpSession {
    fn drop(&mut self) {
        self.kill_group();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A failure to start keeps one "failed to start" and the end of the server's stderr.
    #[test]
    fn a_start_failure_carries_the_end_of_the_servers_stderr_once() {
        let e = with_stderr(TargetError::Spawn("no such file".into()), "");
        assert_eq!(e.to_string(), "failed to start the adapter: no such file");
        let long = format!("{}\nTraceback: the end\n", "x".repeat(5000));
        let e = with_stderr(TargetError::Spawn("exited".into()), &long).to_string();
        assert!(
            e.starts_with("failed to start the adapter: exited\nthe server's stderr:\n"),
            "{e:.200}"
        );
        assert!(e.ends_with("Traceback: the end"), "{e:.200}");
        assert!(e.len() < 2200, "only the end of a long stderr: {}", e.len());
        let e = with_stderr(TargetError::BadHello("no serverInfo".into()), "oops").to_string();
        assert_eq!(
            e,
            "failed to start the adapter: bad hello: no serverInfo\nthe server's stderr:\noops"
        );
    }
}
