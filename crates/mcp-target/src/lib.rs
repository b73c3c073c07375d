//! `mcp:COMMAND`: any MCP task server as a target, through a mapping file (docs/mcp-targets.md).
//!
//! Each session starts its own server process, as each agent starts its own: `sh -c COMMAND`
//! with the mapping's arguments appended, in its working directory (`server.cwd`, else the
//! session's root, or the list's folder with `server.per_list`), with `TASKPROOF_ROOT` and
//! the mapping's environment set, leading a process group of its own (taskproof-session's `Group`), which is
//! killed when the session ends. The session is an MCP client over the server's stdio
//! (taskproof-mcp-client's `Connection`, rmcp's client): `initialize` is the session's `hello` (the
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
//!
//! Split by concern: the kind (kind.rs), the server process (server.rs), the session
//! (session.rs), request translation (translate.rs), answer reading (read.rs, and text.rs
//! for text written for a model), ids (ids.rs), servers reused between lists (pool.rs), and the mapping file and its compiler
//! (mapping/). The mapping generator, `taskproof mcp-draft`, is off this path: the crate
//! taskproof-mcp-draft.

mod ids;
mod kind;
pub mod mapping;
mod pool;
mod read;
mod server;
mod session;
pub mod text;
mod translate;

pub use kind::{KIND, McpTarget, Probe};
pub use mapping::{Mapping, MappingError};
pub use pool::why_not_reused;
pub use server::with_stderr;
pub use session::McpSession;
