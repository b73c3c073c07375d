//! `claude-code-controller@VERSION`: the npm package `claude-code-controller` (The Vibe
//! Company's SDK that pilots Claude Code agents through their teams/inbox/tasks files), judged
//! through its public task API by the adapter `adapters/claude-code-controller/adapter.mjs`,
//! one node process per session ([`ProcessSession`], as `cmd:` runs an adapter).
//!
//! The version is installed with npm, once, into
//! `CACHE/claude-code-controller@VERSION/node_modules/…`, where CACHE is the Claude Code
//! target's cache folder (`taskproof_claude_code::cache_dir`:
//! `$TASKPROOF_CLAUDE_CODE_CACHE`, else `$XDG_CACHE_HOME/taskproof/claude-code`, else
//! `$HOME/.cache/taskproof/claude-code`); the name cannot be taken for a Claude Code version,
//! which starts with a digit. As for Claude Code, `taskproof_session::npm` installs into a
//! temporary folder beside the final one, renamed into place when npm succeeded, under the
//! cache's `.lock`. The
//! adapter is built into taskproof and written beside the package (`adapter.mjs`, rewritten
//! when taskproof's copy differs), where it finds the package in `node_modules`.

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};

use crate::ProcessSession;
use taskproof_claude_code::cache_dir;
use taskproof_session::npm::{self, NpmError, is_version};
use taskproof_session::{Kind, Parsed, Session, SessionOptions, Target, TargetError};

/// The package on npm.
pub const PACKAGE: &str = "claude-code-controller";

/// The adapter, as in the repository.
const ADAPTER: &str = include_str!("../../../adapters/claude-code-controller/adapter.mjs");

/// `claude-code-controller@VERSION` in the registry of target kinds.
pub static KIND: Kind = Kind {
    prefix: "claude-code-controller@",
    syntax: "claude-code-controller@VERSION",
    example: "claude-code-controller@0.3.0",
    parse: |s| {
        if let Some(v) = s.strip_prefix("claude-code-controller@") {
            Some(Controller::parse(v))
        } else if s == PACKAGE {
            Some(Err(format!("{PACKAGE} needs a version: {PACKAGE}@0.3.0")))
        } else {
            None
        }
    },
    takes_mapping: false,
};

/// One published version of the package.
#[derive(Debug)]
struct Controller {
    version: String,
    /// The installed adapter, once [`Controller::install`] succeeded in this process.
    installed: OnceLock<PathBuf>,
}

impl Controller {
    fn parse(version: &str) -> Parsed {
        if !is_version(version) {
            return Err(format!(
                "{PACKAGE}@{version}: expected a published version such as 0.3.0"
            ));
        }
        Ok(Arc::new(Controller {
            version: version.to_string(),
            installed: OnceLock::new(),
        }))
    }

    /// The installed adapter's path, installing the package first unless the cache has it.
    fn install(&self) -> Result<&Path, String> {
        // One install at a time in this process (sessions opened at once wait for one).
        static BUSY: Mutex<()> = Mutex::new(());
        if let Some(p) = self.installed.get() {
            return Ok(p);
        }
        let _busy = BUSY.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = self.installed.get() {
            return Ok(p);
        }
        let adapter = ensure(&self.version)?;
        Ok(self.installed.get_or_init(|| adapter))
    }

    fn command(&self) -> Result<String, String> {
        let adapter = self.install()?;
        Ok(format!("node {}", shell_quote(&adapter.to_string_lossy())))
    }
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// Installs `version` into the cache unless it is there, writes the adapter beside it, and
/// answers the adapter's path. Errors are sentences for the user.
fn ensure(version: &str) -> Result<PathBuf, String> {
    match Command::new("node")
        .arg("--version")
        .stdin(Stdio::null())
        .output()
    {
        Ok(out) if out.status.success() => {}
        Ok(out) => {
            return Err(format!(
                "failed to run node --version (exit {}); {PACKAGE} runs on node, which must be on PATH",
                out.status
            ));
        }
        Err(e) => {
            return Err(format!(
                "failed to run node ({e}); {PACKAGE} runs on node, so node and npm must be on PATH (e.g. `apt-get install -y nodejs npm`)"
            ));
        }
    }
    let cache = cache_dir().map_err(|e| format!("failed to find a cache folder: {e}"))?;
    let dir = npm::install_once(
        &cache,
        &format!("{PACKAGE}@{version}"),
        &[(".", npm::depending_on(&[(PACKAGE, version)]))],
    )
    .map_err(|e| match e {
        NpmError::Npm { stderr, .. }
            if stderr.contains("ETARGET") || stderr.contains("No matching version") =>
        {
            format!(
                "failed to install {PACKAGE}@{version}: npm has no version {version} of {PACKAGE} (`npm view {PACKAGE} versions` lists them): {stderr}"
            )
        }
        e => format!("failed to {e}"),
    })?;
    if !package(&dir).is_file() {
        return Err(format!(
            "failed to install {PACKAGE}@{version}: {} holds no {}",
            dir.display(),
            package(&dir).display()
        ));
    }
    write_adapter(&dir)
}

fn package(dir: &Path) -> PathBuf {
    dir.join("node_modules").join(PACKAGE).join("package.json")
}

/// Writes taskproof's adapter into the installation folder unless the same bytes are there
/// (written to a temporary name and renamed, so a session never runs half a file).
fn write_adapter(dir: &Path) -> Result<PathBuf, String> {
    let path = dir.join("adapter.mjs");
    if fs::read(&path).is_ok_and(|b| b == ADAPTER.as_bytes()) {
        return Ok(path);
    }
    let tmp = dir.join(format!(".adapter-{}.mjs", std::process::id()));
    fs::write(&tmp, ADAPTER).map_err(|e| format!("failed to write {}: {e}", tmp.display()))?;
    fs::rename(&tmp, &path).map_err(|e| {
        let _ = fs::remove_file(&tmp);
        format!(
            "failed to move {} to {}: {e}",
            tmp.display(),
            path.display()
        )
    })?;
    Ok(path)
}

impl fmt::Display for Controller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{PACKAGE}@{}", self.version)
    }
}

impl Target for Controller {
    fn kind(&self) -> &'static Kind {
        &KIND
    }

    fn open(
        &self,
        root: &Path,
        options: SessionOptions,
    ) -> Result<Box<dyn Session>, (TargetError, String)> {
        let command = self
            .command()
            .map_err(|e| (TargetError::Spawn(e), String::new()))?;
        Ok(Box::new(ProcessSession::spawn_with_stderr(
            &command, root, options,
        )?))
    }

    /// As a `cmd:` adapter races: the request limit for start-up too, and its process
    /// group killed in the middle of a request.
    fn open_racing(
        &self,
        root: &Path,
        options: SessionOptions,
        _shared: bool,
    ) -> Result<(Box<dyn Session>, Option<u32>), TargetError> {
        let command = self.command().map_err(TargetError::Spawn)?;
        let s = ProcessSession::spawn(&command, root, options.timeout)?;
        let pgid = Some(s.pid());
        Ok((Box::new(s), pgid))
    }

    fn is_process(&self) -> bool {
        true
    }

    fn prepare(&self) -> Result<(), TargetError> {
        self.install().map(drop).map_err(TargetError::Spawn)
    }
}
