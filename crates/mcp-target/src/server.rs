//! The server process: started as `sh -c COMMAND` with the mapping's launch (arguments,
//! environment, working folder), in a process group of its own, greeted (`initialize`,
//! `tools/list`) and checked against the mapping within the start-up limit; its stderr
//! kept, its lost connection told as its exit.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use taskproof_mcp_client::{
    ClientError, Connection, Direction, Noise, ServerInfo, ServerPipes, WireTap,
};
use taskproof_session::TargetError;
use taskproof_session::group::Group;
use taskproof_session::wire::{Launch, WireLog};

use crate::mapping::{self, Mapping};

/// How much of the server's stderr is kept for the report.
pub(crate) const MAX_STDERR: usize = 256 * 1024;
/// How long a server may take to exit after its input closed before it is killed.
pub(crate) const EXIT_GRACE: Duration = Duration::from_millis(500);

/// A failure to start a server with the end of what it wrote on stderr, for people: a
/// failure to start (once, however `e` said it) and the last 2000 characters.
pub fn with_stderr(e: TargetError, stderr: &str) -> TargetError {
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
pub(crate) struct Server {
    pub(crate) client: Option<Connection>,
    pub(crate) group: Group,
    pub(crate) stderr: Arc<Mutex<Vec<u8>>>,
    pub(crate) stderr_thread: Option<std::thread::JoinHandle<()>>,
    /// The first line the server wrote that is not a JSON-RPC message, if any.
    pub(crate) garbage: Arc<Mutex<Option<String>>>,
    /// The scenario's wire log and this server's number in it (`SessionOptions::wire`).
    pub(crate) wire: Option<(WireLog, usize)>,
}

impl Server {
    pub(crate) fn kill(&mut self) {
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

    pub(crate) fn stderr(&self) -> String {
        let kept = self.stderr.lock().unwrap_or_else(|p| p.into_inner());
        String::from_utf8_lossy(&kept).into_owned()
    }

    /// The server wrote something that is not MCP: that is the error, whatever followed.
    pub(crate) fn garbage_line(&self) -> Option<TargetError> {
        let g = self.garbage.lock().unwrap_or_else(|p| p.into_inner());
        g.as_ref().map(|line| TargetError::Garbage {
            line: line.chars().take(500).collect(),
            reason: "the server wrote a line that is not an MCP (JSON-RPC) message on stdout"
                .into(),
        })
    }

    pub(crate) fn exit_status(&mut self) -> Option<String> {
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
    pub(crate) fn explain(&mut self, e: TargetError) -> TargetError {
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

    pub(crate) fn service_error(&mut self, what: &str, e: ClientError) -> TargetError {
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
pub(crate) struct Started {
    pub(crate) server: Server,
    pub(crate) info: Option<ServerInfo>,
    pub(crate) tools: BTreeMap<String, (String, Value)>,
    /// How long the server took to answer `initialize` after it was started.
    pub(crate) start: Duration,
}

/// What `hello` says of a server's start: how long `initialize` took to answer, under its
/// own limit (`--start-timeout`, apart from each request's `--timeout`), and for a slow
/// start (a quarter of the limit, or 1 s) which flags help.
pub(crate) fn start_note(took: Duration, limit: Duration) -> String {
    let mut note = format!(
        "initialize answered {:.1} s after the server started (the start's own limit, \
         --start-timeout, is {} s; no request's --timeout is charged for it)",
        took.as_secs_f64(),
        limit.as_secs()
    );
    if took * 4 > limit || took >= Duration::from_secs(1) {
        note.push_str(
            "; a slow start: --start-ahead N starts the servers of the next scenarios while one \
             runs, and a larger --start-timeout keeps a loaded machine's starts from failing",
        );
    }
    note
}

/// Starts the server of `command` with `mapping`'s launch on `root` (for `list`, with
/// `server.per_list`), makes the MCP handshake and lists its tools, all within `limit`. A
/// failure comes with the server's stderr; the server is killed. With `wire`, the start and
/// every line of the connection go to that log.
pub(crate) fn start(
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
    let start = started.elapsed();
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
        start,
    })
}

/// How [`start`] starts a server, for the wire log: the same script, words, variables and
/// folder.
pub(crate) fn launch(command: &str, mapping: &Mapping, root: &Path, list: Option<&str>) -> Launch {
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
pub(crate) fn tap(log: WireLog, process: usize) -> WireTap {
    Arc::new(move |direction, line| match direction {
        Direction::Sent => log.sent(process, line),
        Direction::Got => log.got(process, line),
    })
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
