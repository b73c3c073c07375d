//! The kind: `mcp:COMMAND` in the registry ([`KIND`]), the target with its mapping
//! ([`McpTarget`]), and the probe server that says `hello` for sessions with one server per
//! list ([`Probe`]).

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use taskproof_mcp_client::ServerInfo;
use taskproof_session::starts::StartLog;
use taskproof_session::{Kind, Session, SessionOptions, Target, TargetError};

use crate::mapping::{Mapping, MappingError};
use crate::server::{start, with_stderr};
use crate::session::McpSession;

/// How long the server started by [`McpTarget::prepare`] may take to start and list its tools.
pub(crate) const PREPARE_START_TIMEOUT: Duration = Duration::from_secs(600);

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
    pub(crate) probe: Arc<Mutex<Option<Probe>>>,
    /// The emptied servers of each root, shared by every session on that root (pool.rs).
    pub(crate) pools: crate::pool::Pools,
    /// How long each session's server took to answer `initialize` (the one-time check of
    /// [`McpTarget::prepare`] and the probe are not a session's).
    pub(crate) starts: StartLog,
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
            pools: crate::pool::Pools::default(),
            starts: StartLog::new("initialize"),
        }
    }

    /// Reads the mapping file (`--mapping FILE`).
    pub fn with_mapping(mut self, path: &Path) -> Result<McpTarget, MappingError> {
        self.mapping = Some(Arc::new(Mapping::load(path)?));
        Ok(self)
    }

    pub(crate) fn mapping(&self) -> Result<&Arc<Mapping>, TargetError> {
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

    fn starts(&self) -> Option<StartLog> {
        Some(self.starts.clone())
    }
}

/// What a probe server said of itself, kept by the target so that sessions with one server
/// per list can say `hello` before they know a list.
#[derive(Debug, Clone)]
pub struct Probe {
    pub(crate) info: Option<ServerInfo>,
    pub(crate) tools: BTreeMap<String, (String, Value)>,
    /// How long it took to answer `initialize`.
    pub(crate) start: Duration,
}

impl McpTarget {
    /// The server's `initialize` answer and tools, from a server started on a scratch root
    /// once per target (its first session or [`McpTarget::prepare`]).
    pub(crate) fn probe(&self, limit: Duration) -> Result<Probe, (TargetError, String)> {
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
            start: s.start,
        };
        *kept = Some(p.clone());
        Ok(p)
    }
}
