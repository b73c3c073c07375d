//! taskproof's MCP server (docs/architecture.md, "Crates"): `taskproof mcp`, the reference
//! store served to agents as tools. The client the `mcp:` target speaks through is a crate
//! of its own (`taskproof-mcp-client`); the two share rmcp and nothing else. It needs the
//! wire types and the store only.
//!
//! `taskproof mcp`: the strict reference store as a Model Context Protocol server on stdio,
//! with tools that mirror Claude Code's task tools (see `docs/mcp.md`).
//!
//! Built on the official Rust SDK, `rmcp`: its stdio transport and its tool macros. Each tool
//! call is decoded into an adapter-protocol request ([`tools::decode`]), answered by the
//! store on a blocking thread (the store waits on file locks), and turned into a tool result
//! whose text says what happened, or, for a failure, the rule that was broken and what to do
//! instead (`isError: true`, which a model reads; never a protocol error).

pub mod splice;
pub mod tools;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rmcp::handler::server::common::schema_for_input;
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock,
    Implementation, JsonObject, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
    ResultType, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;

use taskproof_core::protocol::{ErrorKind, Failure, Response};
use taskproof_core::task::ListName;
use taskproof_store::{Options, StrictStore};

/// Where the server keeps its tasks and which list it uses by default.
#[derive(Debug, Clone)]
pub struct Config {
    /// The folder holding one folder per list (Claude Code's `tasks`).
    pub root: PathBuf,
    /// The list a call uses when it names none.
    pub list: Option<ListName>,
    /// The actor a call is recorded under when it names none (`TASKPROOF_ACTOR`); else the
    /// MCP client's name.
    pub actor: Option<String>,
    pub options: Options,
}

/// The root Claude Code uses: `$CLAUDE_CONFIG_DIR/tasks`, else `~/.claude/tasks`.
pub fn claude_code_root(config_dir: Option<&Path>, home: Option<&Path>) -> Option<PathBuf> {
    match config_dir {
        Some(c) => Some(c.join("tasks")),
        None => home.map(|h| h.join(".claude").join("tasks")),
    }
}

struct Inner {
    store: StrictStore,
    config: Config,
    /// Where `task_list` leaves its answers' bytes for the writer (see `splice.rs`).
    parts: Arc<splice::Parts>,
}

/// The MCP server.
#[derive(Clone)]
pub struct TaskServer {
    inner: Arc<Inner>,
}

/// One tool as `tools/list` describes it: every call goes to [`TaskServer::call`], which
/// decodes the arguments itself ([`tools::decode`]), so a table is all the routing there is.
struct ToolEntry {
    name: &'static str,
    title: &'static str,
    description: &'static str,
    schema: fn() -> Arc<JsonObject>,
    read_only: bool,
    /// `None` for a read-only tool, where the hint means nothing.
    destructive: Option<bool>,
}

/// The tools in name order, the order `tools/list` gives them.
const TOOLS: [ToolEntry; 6] = [
    ToolEntry {
        name: "task_claim",
        title: "Claim a task",
        description: tools::CLAIM_DESCRIPTION,
        schema: schema::<tools::ClaimArgs>,
        read_only: false,
        destructive: Some(false),
    },
    ToolEntry {
        name: "task_create",
        title: "Create a task",
        description: tools::CREATE_DESCRIPTION,
        schema: schema::<tools::CreateArgs>,
        read_only: false,
        destructive: Some(false),
    },
    ToolEntry {
        name: "task_delete",
        title: "Delete a task",
        description: tools::DELETE_DESCRIPTION,
        schema: schema::<tools::IdArgs>,
        read_only: false,
        destructive: Some(true),
    },
    ToolEntry {
        name: "task_get",
        title: "Get a task",
        description: tools::GET_DESCRIPTION,
        schema: schema::<tools::IdArgs>,
        read_only: true,
        destructive: None,
    },
    ToolEntry {
        name: "task_list",
        title: "List tasks",
        description: tools::LIST_DESCRIPTION,
        schema: schema::<tools::ListArgs>,
        read_only: true,
        destructive: None,
    },
    ToolEntry {
        name: "task_update",
        title: "Update a task",
        description: tools::UPDATE_DESCRIPTION,
        schema: schema::<tools::UpdateArgs>,
        read_only: false,
        destructive: Some(true),
    },
];

impl ToolEntry {
    fn tool(&self) -> Tool {
        Tool::new_with_raw(self.name, Some(self.description.into()), (self.schema)())
            .with_annotations(ToolAnnotations::from_raw(
                Some(self.title.into()),
                Some(self.read_only),
                self.destructive,
                None,
                None,
            ))
    }
}

fn schema<T: schemars::JsonSchema + 'static>() -> Arc<JsonObject> {
    schema_for_input::<T>().expect("the tool input types are objects")
}

impl TaskServer {
    /// Opens the store on the configured root, creating the root if needed. The server must
    /// be served through [`TaskServer::writer`]: its `task_list` answers are spliced in there.
    fn open(config: Config) -> std::io::Result<TaskServer> {
        std::fs::create_dir_all(&config.root)?;
        let store = StrictStore::open(&config.root, config.options)?
            .with_audit()
            .with_claude_code_locks();
        Ok(TaskServer {
            inner: Arc::new(Inner {
                store,
                config,
                parts: Arc::new(splice::Parts::new()),
            }),
        })
    }
}

impl TaskServer {
    /// Who a call is made by when it does not say: the server's actor (`TASKPROOF_ACTOR`),
    /// else the MCP client's name.
    fn default_actor(&self, ctx: &RequestContext<RoleServer>) -> String {
        self.inner
            .config
            .actor
            .clone()
            .or_else(|| {
                ctx.peer
                    .peer_info()
                    .map(|p| p.client_info.name.clone())
                    .filter(|n| !n.trim().is_empty())
            })
            .unwrap_or_else(|| "unknown".into())
    }

    async fn call(
        &self,
        tool: &str,
        args: JsonObject,
        ctx: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        let default_actor = self.default_actor(ctx);
        let call = match tools::decode(tool, &args, self.inner.config.list.as_ref(), &default_actor)
        {
            Ok(c) => c,
            Err(f) => return failure(&f),
        };
        let (request, actor) = (call.request, call.actor);
        if let taskproof_core::protocol::Request::List { list } = &request {
            return self.list(list.clone()).await;
        }
        let inner = self.inner.clone();
        let req = request.clone();
        let answer = tokio::task::spawn_blocking(move || inner.store.handle_as(&req, &actor)).await;
        let response = match answer {
            Ok(r) => r,
            Err(e) => Response::Error(Failure::new(
                ErrorKind::Io,
                format!("the store stopped while answering: {e}"),
            )),
        };
        match &response {
            Response::Error(f) => failure(f),
            r => {
                let mut result = CallToolResult::success(vec![ContentBlock::text(
                    tools::answer_text(&request, r),
                )]);
                result.structured_content = Some(tools::answer_value(r));
                result
            }
        }
    }
}

impl TaskServer {
    /// `task_list`: its text and structured form are written as JSON from the tasks the
    /// store's cache shares, on the blocking thread, after the list's lock is released, and
    /// reach the client through the writer (`splice.rs`); `rmcp` carries placeholders.
    async fn list(&self, list: ListName) -> CallToolResult {
        let inner = self.inner.clone();
        let answer = tokio::task::spawn_blocking(move || {
            inner
                .store
                .list_shared(&list)
                .map(|(tasks, corrupt)| tools::list_answer(&list, &tasks, &corrupt))
        })
        .await;
        match answer {
            Ok(Ok((text, value))) => {
                // Registered with no wait left before the result goes to `rmcp`: a call
                // cancelled while the store answered leaves no part behind.
                let parts = &self.inner.parts;
                let mut result =
                    CallToolResult::success(vec![ContentBlock::text(parts.string(text))]);
                result.structured_content = Some(parts.object(value));
                result
            }
            Ok(Err(f)) => failure(&f),
            Err(e) => failure(&Failure::new(
                ErrorKind::Io,
                format!("the store stopped while answering: {e}"),
            )),
        }
    }

    /// The writer to serve this server's messages through: `out` with the answers' parts
    /// spliced in.
    fn writer<W>(&self, out: W) -> splice::SplicingWriter<W> {
        splice::SplicingWriter::new(out, self.inner.parts.clone())
    }
}

fn failure(f: &Failure) -> CallToolResult {
    let (text, v): (String, Value) = tools::error_value(f);
    let mut result = CallToolResult::error(vec![ContentBlock::text(text)]);
    result.structured_content = Some(v);
    result
}

const INSTRUCTIONS: &str = "A shared task list, safe for several agents at once (every \
change is checked and written under the list's lock, and recorded in its audit log). Plan \
with task_create, find work with task_list, take it with task_claim, finish it with \
task_update status \"completed\". Errors say which rule was broken and what to do instead.";

impl ServerHandler for TaskServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("taskproof", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(tool) = TOOLS.iter().find(|t| t.name == request.name) else {
            return Err(ErrorData::invalid_params("tool not found", None));
        };
        let args = request.arguments.unwrap_or_default();
        Ok(self.call(tool.name, args, &ctx).await.into())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        // As rmcp's own router answers: a client of the 2026-07-28 protocol or later may
        // cache the list, which never changes.
        let hints = ctx
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
        Ok(ListToolsResult {
            result_type: Some(ResultType::COMPLETE),
            tools: TOOLS.iter().map(ToolEntry::tool).collect(),
            meta: None,
            next_cursor: None,
            ttl_ms: hints.then_some(0),
            cache_scope: hints.then_some(CacheScope::Public),
        })
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        TOOLS.iter().find(|t| t.name == name).map(ToolEntry::tool)
    }
}

/// Why `taskproof mcp` stopped with an error. Each message is whole (no `#[source]`), so a
/// chain printer shows the cause once.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The task folder could not be created or opened as a store.
    #[error("failed to open the task folder {}: {error}", root.display())]
    Open {
        root: PathBuf,
        error: std::io::Error,
    },
    /// The async runtime the server runs on could not be built.
    #[error("failed to start the async runtime: {0}")]
    Runtime(std::io::Error),
    /// The client's `initialize` exchange failed (boxed: rmcp's error is large).
    #[error("MCP handshake failed: {0}")]
    Handshake(Box<rmcp::service::ServerInitializeError>),
    /// The server's task ended abnormally.
    #[error("MCP server stopped: {0}")]
    Stopped(tokio::task::JoinError),
}

/// Serves MCP on stdin/stdout until the client closes the connection.
pub fn serve_stdio(config: Config) -> Result<(), ServeError> {
    let server = TaskServer::open(config.clone()).map_err(|error| ServeError::Open {
        root: config.root.clone(),
        error,
    })?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(ServeError::Runtime)?;
    runtime.block_on(async move {
        let out = server.writer(tokio::io::stdout());
        let running = server
            .serve((tokio::io::stdin(), out))
            .await
            .map_err(|e| ServeError::Handshake(Box::new(e)))?;
        running.waiting().await.map_err(ServeError::Stopped)?;
        Ok(())
    })
}
