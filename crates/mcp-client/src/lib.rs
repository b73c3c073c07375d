//! The client side of MCP, for the `mcp:` target (taskproof-mcp-target): one connection to
//! a server over its stdio pipes, blocking, every step bounded by a limit the caller gives.
//! rmcp's client runs on a current-thread tokio runtime owned by the connection.
//!
//! It is a crate of its own, apart from the server (`taskproof mcp`, taskproof-mcp), so that
//! the target crate builds without rmcp or tokio and without the server (docs/architecture.md,
//! "Build times"). What it hands back is plain data: tool lists, tool results and errors
//! carry no rmcp type.

use std::fmt;
use std::io;
use std::process::{ChildStdin, ChildStdout};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ContentBlock, Implementation,
};
use rmcp::service::{RoleClient, RunningService, ServiceError};
use serde_json::{Map, Value};

type Service = RunningService<RoleClient, ClientConfig>;

/// The server's side of the connection: its stdio pipes, and where a stdout line that is
/// not JSON goes.
pub struct ServerPipes {
    pub stdin: ChildStdin,
    pub stdout: ChildStdout,
    /// Reading stops at the first stdout line that is not JSON and keeps it here: the client
    /// then sees the end of the stream at once, where rmcp would skip the line and wait.
    pub garbage: Arc<Mutex<Option<String>>>,
    /// Or, when set, such lines are skipped into it.
    pub noise: Option<Noise>,
    /// When set, every line written to the server and every JSON line read from it, as it
    /// passes (`taskproof run --export`).
    pub wire: Option<WireTap>,
}

/// Which way a line of the connection went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Written to the server's stdin.
    Sent,
    /// Read from the server's stdout and handed to the client.
    Got,
}

/// Where the lines of a connection go as they pass, each without its newline.
pub type WireTap = Arc<dyn Fn(Direction, &str) + Send + Sync>;

/// Lines the server writes on stdout that are not JSON, when the caller asks to skip them
/// instead of failing on the first one: appended to `sink` (the session's copy of the
/// server's stderr) while it holds fewer than `limit` bytes.
#[derive(Clone)]
pub struct Noise {
    pub sink: Arc<Mutex<Vec<u8>>>,
    pub limit: usize,
}

/// The server as `initialize` described it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerInfo {
    /// `serverInfo`'s name and version; `None` when the server sent no `serverInfo`.
    pub implementation: Option<(String, String)>,
    /// The protocol version the server chose.
    pub protocol_version: String,
}

/// One tool of `tools/list`.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInfo {
    pub name: String,
    /// Empty when the server gave none.
    pub description: String,
    pub input_schema: Value,
}

/// One `tools/call` result.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    /// `isError: true`: the tool refused or failed (an answer, not a protocol error).
    pub is_error: bool,
    /// The text content blocks, joined by newlines.
    pub text: String,
    /// `structuredContent`, when the tool gave it.
    pub structured: Option<Value>,
}

/// Why a step of the connection did not complete.
#[derive(Debug)]
pub enum ClientError {
    /// The limit passed before the answer came.
    Timeout,
    /// The runtime the client runs on could not be built.
    Runtime(io::Error),
    /// The server's pipes could not be handed to the runtime.
    Pipes(io::Error),
    /// `initialize` failed: the server closed, or answered something else.
    Handshake(String),
    /// The server answered with a JSON-RPC error.
    Rpc { code: i32, message: String },
    /// The connection closed under the request (the server may have exited).
    Closed(String),
    /// Anything else rmcp reported.
    Other(String),
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientError::Timeout => f.write_str("no answer within the limit"),
            ClientError::Runtime(e) => write!(f, "a tokio runtime: {e}"),
            ClientError::Pipes(e) => write!(f, "the server's pipes: {e}"),
            ClientError::Handshake(m) | ClientError::Closed(m) | ClientError::Other(m) => {
                f.write_str(m)
            }
            ClientError::Rpc { code, message } => write!(f, "JSON-RPC error {code}: {message}"),
        }
    }
}

impl std::error::Error for ClientError {}

impl From<ServiceError> for ClientError {
    fn from(e: ServiceError) -> ClientError {
        match e {
            ServiceError::McpError(err) => ClientError::Rpc {
                code: err.code.0,
                message: err.message.to_string(),
            },
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                ClientError::Closed(e.to_string())
            }
            other => ClientError::Other(other.to_string()),
        }
    }
}

/// A connection to one server process: its runtime and rmcp's running client.
pub struct Connection {
    rt: tokio::runtime::Runtime,
    service: Option<Service>,
}

impl Connection {
    /// Makes the MCP handshake over the server's pipes within `limit`, introducing the
    /// client as `client_name` `client_version`.
    pub fn connect(
        pipes: ServerPipes,
        client_name: &str,
        client_version: &str,
        limit: Duration,
    ) -> Result<Connection, ClientError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(ClientError::Runtime)?;
        let ServerPipes {
            stdin,
            stdout,
            garbage,
            noise,
            wire,
        } = pipes;
        let service = rt.block_on(async {
            let stdout =
                tokio::process::ChildStdout::from_std(stdout).map_err(ClientError::Pipes)?;
            let stdin = tokio::process::ChildStdin::from_std(stdin).map_err(ClientError::Pipes)?;
            let io = (
                pump(stdout, garbage, noise, wire.clone()),
                Tee::new(stdin, wire),
            );
            let client = ClientConfig::new(
                ClientCapabilities::default(),
                Implementation::new(client_name, client_version),
            );
            match tokio::time::timeout(limit, client.serve(io)).await {
                Err(_) => Err(ClientError::Timeout),
                Ok(Err(e)) => Err(ClientError::Handshake(e.to_string())),
                Ok(Ok(c)) => Ok(c),
            }
        })?;
        Ok(Connection {
            rt,
            service: Some(service),
        })
    }

    /// What the server's `initialize` answer said of it; `None` before a handshake.
    pub fn server(&self) -> Option<ServerInfo> {
        let info = self.service.as_ref()?.peer_info()?;
        Some(ServerInfo {
            implementation: info
                .server_info
                .as_ref()
                .map(|s| (s.name.clone(), s.version.clone())),
            protocol_version: info.protocol_version.to_string(),
        })
    }

    fn service(&self) -> Result<&Service, ClientError> {
        self.service
            .as_ref()
            .ok_or_else(|| ClientError::Closed("the connection was closed".into()))
    }

    /// Every tool the server lists (all pages), within `limit`.
    pub fn list_tools(&self, limit: Duration) -> Result<Vec<ToolInfo>, ClientError> {
        let service = self.service()?;
        let listed = self
            .rt
            .block_on(async { tokio::time::timeout(limit, service.list_all_tools()).await });
        match listed {
            Err(_) => Err(ClientError::Timeout),
            Ok(Err(e)) => Err(e.into()),
            Ok(Ok(tools)) => Ok(tools
                .into_iter()
                .map(|t| ToolInfo {
                    name: t.name.to_string(),
                    description: t.description.as_deref().unwrap_or("").to_string(),
                    input_schema: Value::Object((*t.input_schema).clone()),
                })
                .collect()),
        }
    }

    /// Calls `tool` with `args` within `limit`.
    pub fn call_tool(
        &self,
        tool: &str,
        args: Map<String, Value>,
        limit: Duration,
    ) -> Result<ToolResult, ClientError> {
        let service = self.service()?;
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(args);
        let r = self
            .rt
            .block_on(async { tokio::time::timeout(limit, service.call_tool(params)).await });
        match r {
            Err(_) => Err(ClientError::Timeout),
            Ok(Err(e)) => Err(e.into()),
            Ok(Ok(result)) => Ok(ToolResult {
                is_error: result.is_error == Some(true),
                text: result
                    .content
                    .iter()
                    .filter_map(|c| match c {
                        ContentBlock::Text(t) => Some(t.text.as_str()),
                        _ => None,
                    })
                    .collect::<Vec<_>>()
                    .join("\n"),
                structured: result.structured_content,
            }),
        }
    }

    /// Ends the session as an MCP client ends a stdio one: closes the server's input and
    /// waits up to `grace` for the service loop to stop.
    pub fn close(&mut self, grace: Duration) {
        if let Some(mut s) = self.service.take() {
            let _ = self
                .rt
                .block_on(async { tokio::time::timeout(grace, s.close()).await });
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        if let Some(s) = self.service.take() {
            // Dropping the client inside the runtime ends its service loop there.
            let _guard = self.rt.enter();
            drop(s);
        }
    }
}

/// Passes the server's stdout on to the MCP client line by line, stopping at the first line
/// that is not JSON (kept in `garbage`): the client then sees the end of the stream at once,
/// where rmcp would skip the line and wait. With `noise` such lines are appended there
/// instead and skipped.
fn pump(
    stdout: tokio::process::ChildStdout,
    garbage: Arc<Mutex<Option<String>>>,
    noise: Option<Noise>,
    wire: Option<WireTap>,
) -> tokio::io::DuplexStream {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let (ours, mut theirs) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        let mut reader = tokio::io::BufReader::new(stdout);
        let mut line = Vec::new();
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            let text = String::from_utf8_lossy(&line);
            let text = text.trim();
            if text.is_empty() {
                continue;
            }
            if serde_json::from_str::<serde::de::IgnoredAny>(text).is_err() {
                if let Some(noise) = &noise {
                    let mut kept = noise.sink.lock().unwrap_or_else(|p| p.into_inner());
                    if kept.len() < noise.limit {
                        kept.extend_from_slice(format!("[stdout, not MCP] {text}\n").as_bytes());
                    }
                    continue;
                }
                *garbage.lock().unwrap_or_else(|p| p.into_inner()) = Some(text.to_string());
                return;
            }
            if let Some(tap) = &wire {
                tap(Direction::Got, text);
            }
            if theirs.write_all(&line).await.is_err() {
                return;
            }
        }
    });
    ours
}

/// The server's stdin, with every complete line written through it handed to a [`WireTap`].
struct Tee {
    inner: tokio::process::ChildStdin,
    wire: Option<WireTap>,
    /// The part of a line written so far.
    partial: Vec<u8>,
}

impl Tee {
    fn new(inner: tokio::process::ChildStdin, wire: Option<WireTap>) -> Tee {
        Tee {
            inner,
            wire,
            partial: Vec::new(),
        }
    }
}

impl tokio::io::AsyncWrite for Tee {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<io::Result<usize>> {
        let me = &mut *self;
        let polled = std::pin::Pin::new(&mut me.inner).poll_write(cx, buf);
        if let (std::task::Poll::Ready(Ok(n)), Some(tap)) = (&polled, &me.wire) {
            me.partial.extend_from_slice(&buf[..*n]);
            while let Some(end) = me.partial.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = me.partial.drain(..=end).collect();
                let text = String::from_utf8_lossy(&line);
                let text = text.trim_end_matches(['\n', '\r']);
                if !text.is_empty() {
                    tap(Direction::Sent, text);
                }
            }
        }
        polled
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
