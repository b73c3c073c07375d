//! The session: a connection to one server process, or with `server.per_list` to one per
//! list (each started on its list's first use), saying `hello` for the mapping and answering
//! each request through it (translate.rs); its end, its stderr, servers started ahead.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use taskproof_core::protocol::{Hello, PROTOCOL_VERSION};
use taskproof_mcp_client::ToolResult;
use taskproof_session::ids;
use taskproof_session::starts::StartLog;
use taskproof_session::wire::WireLog;
use taskproof_session::{Session, SessionOptions, TargetError};

use crate::kind::McpTarget;
use crate::mapping::Mapping;
use crate::pool::RootPool;
use crate::server::{EXIT_GRACE, Server, Started, start, start_note, with_stderr};
use crate::translate::Stop;

/// A connection to one server process, or with `server.per_list` to one per list.
pub struct McpSession {
    pub(crate) command: String,
    /// The servers by list (`""`: the one server of a mapping without `per_list`).
    pub(crate) servers: BTreeMap<String, Server>,
    /// The server the request in progress talks to.
    pub(crate) current: String,
    pub(crate) mapping: Arc<Mapping>,
    pub(crate) root: PathBuf,
    pub(crate) timeout: Duration,
    pub(crate) start_timeout: Duration,
    pub(crate) hello: Hello,
    pub(crate) dead: Option<TargetError>,
    /// The server's tools: name → (description, input schema).
    pub(crate) tools: BTreeMap<String, (String, Value)>,
    /// The id book, when the mapping keeps an id table or containers.
    pub(crate) book: Option<ids::Book>,
    /// Where the servers' lines go (`SessionOptions::wire`).
    pub(crate) wire: Option<WireLog>,
    /// Servers emptied after their list was released, by any session on the root, for
    /// lists named later (pool.rs).
    pub(crate) pool: RootPool,
    /// The target's log of its servers' starts.
    pub(crate) starts: StartLog,
    /// With one server per list, the server's ids of the tasks deleted on each list's server
    /// (on a server taken from the pool, those of its earlier lists too).
    pub(crate) gone: BTreeMap<String, Vec<String>>,
    /// The folder (under the root) a server taken from the pool keeps its store in, by the
    /// list it serves now: the folder of the list it was started for.
    pub(crate) folders: BTreeMap<String, String>,
}

/// Whether a list name can name a folder and a table key (SPEC §3, S13).
pub(crate) fn list_name_ok(s: &str) -> bool {
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
        let (info, tools, took) = if mapping.launch.per_list {
            let p = target.probe(options.start_timeout)?;
            (p.info, p.tools, p.start)
        } else {
            let s = logged(
                &target.starts,
                start(
                    &target.command,
                    &mapping,
                    &root,
                    None,
                    options.start_timeout,
                    options.wire.as_ref(),
                ),
            )?;
            servers.insert(String::new(), s.server);
            (s.info, s.tools, s.start)
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
        stated.insert("start".into(), start_note(took, options.start_timeout));
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
        let pool = target.pools.of(&root);
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
            pool,
            starts: target.starts.clone(),
            gone: BTreeMap::new(),
            folders: BTreeMap::new(),
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

    pub(crate) fn fail(&mut self, e: TargetError) -> TargetError {
        self.kill_group();
        self.dead = Some(e.clone());
        e
    }

    pub(crate) fn kill_group(&mut self) {
        // The root's pooled servers end with its last session (pool.rs).
        for s in self.servers.values_mut() {
            s.kill();
        }
    }

    /// The server the request in progress talks to.
    pub(crate) fn server(&mut self) -> Result<&mut Server, TargetError> {
        self.servers
            .get_mut(&self.current)
            .ok_or_else(|| TargetError::Io("no server for this request".into()))
    }

    /// Makes `list`'s server the current one, starting it on its first use
    /// (`server.per_list`), within the start-up limit.
    pub(crate) fn use_server(&mut self, list: &str) -> Result<(), Stop> {
        self.current = list.to_string();
        if self.servers.contains_key(list) || self.take_pooled(list) {
            return Ok(());
        }
        let started = start(
            &self.command,
            &self.mapping,
            &self.root,
            Some(list),
            self.start_timeout,
            self.wire.as_ref(),
        );
        match logged(&self.starts, started) {
            Ok(s) => {
                // A list another session took a pooled server for is a link to that
                // server's folder, where this one keeps its store too (pool.rs).
                if let Ok(to) = std::fs::read_link(self.root.join(list)) {
                    self.folders
                        .insert(list.to_string(), to.to_string_lossy().into_owned());
                }
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
}

/// `started`, recorded in the target's log of starts: answered after how long, or not
/// within its limit. A server that exited or broke the handshake is not a slow start, and is
/// left out.
fn logged(
    log: &StartLog,
    started: Result<Started, (TargetError, String)>,
) -> Result<Started, (TargetError, String)> {
    match &started {
        Ok(s) => log.answered(s.start),
        Err((TargetError::StartTimeout(limit), _)) => log.timed_out(*limit),
        Err(_) => {}
    }
    started
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

    fn release_lists(&mut self, lists: &[&str]) {
        self.release(lists);
        // Their ids are never asked for again; a book that cannot be written is met again,
        // and said, by the next request that reads it.
        if let Some(book) = &self.book {
            let _ = book.forget(lists);
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
