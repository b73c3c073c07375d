//! The real OpenCode with the real oh-my-opencode plugin as a target
//! (`oh-my-opencode@VERSION`): both installed from npm, run unmodified, the plugin's task
//! tools called by a scripted model through OpenCode's own `anthropic` provider. See
//! docs/oh-my-opencode.md and adapters/oh-my-opencode/NOTES.md.

mod install;
mod mapping;
mod process;
mod session;

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

pub use install::{DEFAULT_OPENCODE, Installation};
use serde_json::Value;
pub use session::OpencodeSession;
use taskproof_model::scripted::Recognizer;
use taskproof_session::npm::is_version;
use taskproof_session::{Kind, Session, SessionOptions, Target, TargetError};

/// `oh-my-opencode@VERSION` in the registry of target kinds.
pub static KIND: Kind = Kind {
    prefix: "oh-my-opencode@",
    syntax: "oh-my-opencode@VERSION[+opencode@VERSION]",
    example: "oh-my-opencode@4.19.4",
    parse: |s| {
        if let Some(v) = s.strip_prefix("oh-my-opencode@") {
            Some(OhMyOpencode::parse(v).map(|t| std::sync::Arc::new(t) as Arc<dyn Target>))
        } else if s == "oh-my-opencode" {
            Some(Err(
                "oh-my-opencode needs a version: oh-my-opencode@4.19.4".into()
            ))
        } else {
            None
        }
    },
    takes_mapping: false,
};

/// How the scripted model tells the agent's own turns from OpenCode's side requests: only
/// the agent's conversation offers the plugin's `task_create` (a title request offers no
/// tools), and a request's prompt is the message `opencode run` was given.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpencodeRecognizer;

impl Recognizer for OpencodeRecognizer {
    fn is_agent(&self, body: &Value) -> bool {
        body["tools"]
            .as_array()
            .is_some_and(|tools| tools.iter().any(|t| t["name"] == "task_create"))
    }

    fn is_prompt(&self, texts: &[&str], n: u64) -> bool {
        let marker = prompt_marker(n);
        texts.iter().any(|t| t.contains(&marker))
    }
}

/// The marker that makes a message the prompt of protocol request `n`.
pub fn prompt_marker(n: u64) -> String {
    format!("taskproof request {n}")
}

/// A plugin version and the OpenCode version it runs in.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OhMyOpencode {
    pub plugin: String,
    pub opencode: String,
}

/// Whether a list name can be the last part of the plugin's `storage_path` under the root:
/// one path segment of at most 255 bytes, no NUL, and not hidden (a name starting with `.`
/// could be the root's id book, `.taskproof-mcp`, or `..`).
pub fn list_folder_ok(name: &str) -> bool {
    !name.is_empty() && !name.starts_with('.') && !name.contains(['/', '\0']) && name.len() <= 255
}

impl OhMyOpencode {
    /// Parses what follows `oh-my-opencode@`: `4.19.4`, or `4.19.4+opencode@1.18.33`.
    pub fn parse(s: &str) -> Result<OhMyOpencode, String> {
        let (plugin, opencode) = match s.split_once("+opencode@") {
            Some((p, o)) => (p, o),
            None => (s, DEFAULT_OPENCODE),
        };
        for (what, v) in [("oh-my-opencode", plugin), ("opencode", opencode)] {
            if !is_version(v) || v.contains('+') {
                return Err(format!(
                    "oh-my-opencode@{s}: {what}: expected a published version such as {}",
                    if what == "opencode" {
                        DEFAULT_OPENCODE
                    } else {
                        "4.19.4"
                    }
                ));
            }
        }
        Ok(OhMyOpencode {
            plugin: plugin.into(),
            opencode: opencode.into(),
        })
    }

    /// Installs the pair unless the cache has it, once per process.
    pub fn prepare(&self) -> Result<Installation, String> {
        static DONE: OnceLock<Mutex<HashMap<OhMyOpencode, Installation>>> = OnceLock::new();
        let done = DONE.get_or_init(Default::default);
        // Held across the install: sessions opened at once wait for one install.
        let mut done = done.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(found) = done.get(self) {
            return Ok(found.clone());
        }
        let found =
            install::ensure(&self.plugin, &self.opencode).map_err(|e| format!("failed to {e}"))?;
        done.insert(self.clone(), found.clone());
        Ok(found)
    }
}

impl Target for OhMyOpencode {
    fn kind(&self) -> &'static Kind {
        &KIND
    }

    fn open(
        &self,
        root: &Path,
        options: SessionOptions,
    ) -> Result<Box<dyn Session>, (TargetError, String)> {
        let install = self
            .prepare()
            .map_err(|e| (TargetError::Spawn(e), String::new()))?;
        Ok(Box::new(OpencodeSession::open(&install, root, options)?))
    }

    fn is_process(&self) -> bool {
        true
    }

    fn prepare(&self) -> Result<(), TargetError> {
        OhMyOpencode::prepare(self)
            .map(drop)
            .map_err(TargetError::Spawn)
    }
}

impl fmt::Display for OhMyOpencode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.opencode == DEFAULT_OPENCODE {
            write!(f, "oh-my-opencode@{}", self.plugin)
        } else {
            write!(
                f,
                "oh-my-opencode@{}+opencode@{}",
                self.plugin, self.opencode
            )
        }
    }
}
