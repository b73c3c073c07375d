//! Installing published versions of `@anthropic-ai/claude-code` with npm into a cache outside
//! the repository, once per version.
//!
//! Layout: `CACHE/VERSION/node_modules/@anthropic-ai/claude-code/…`, where CACHE is
//! `$TASKPROOF_CLAUDE_CODE_CACHE`, else `$XDG_CACHE_HOME/taskproof/claude-code`, else
//! `$HOME/.cache/taskproof/claude-code`. A version is installed into a temporary folder beside
//! its final place and renamed into place when npm succeeded, so a folder named after a
//! version is always a complete installation; `CACHE/.lock` (an exclusive `flock`) keeps two
//! processes from installing at once. Nothing npm installs is changed afterwards.

use std::path::{Path, PathBuf};
use std::process::Command;

use taskproof_session::npm::{self, NpmError};

/// The package every version is published as.
pub const PACKAGE: &str = "@anthropic-ai/claude-code";

/// The environment variable that overrides the cache folder.
pub const CACHE_ENV: &str = "TASKPROOF_CLAUDE_CODE_CACHE";

#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("{0}")]
    Npm(#[from] NpmError),
    #[error("find the executable of {PACKAGE}@{version} in {dir}: neither cli.js nor {native}")]
    NoExecutable {
        version: String,
        dir: PathBuf,
        native: String,
    },
}

/// How to start one installed version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installation {
    pub version: String,
    /// The installation folder (`CACHE/VERSION`).
    pub dir: PathBuf,
    pub program: Executable,
}

/// What npm installed: a JavaScript bundle for node (up to 2.1.112) or a native executable
/// from the platform package (later versions).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Executable {
    Node(PathBuf),
    Native(PathBuf),
}

impl Installation {
    /// The command that starts the CLI, before its own arguments.
    pub fn command(&self) -> std::process::Command {
        match &self.program {
            Executable::Node(cli) => {
                let mut c = Command::new("node");
                c.arg(cli);
                c
            }
            Executable::Native(exe) => Command::new(exe),
        }
    }
}

/// The cache folder (see the module docs).
pub fn cache_dir() -> Result<PathBuf, InstallError> {
    match std::env::var_os(CACHE_ENV).filter(|v| !v.is_empty()) {
        Some(dir) => Ok(PathBuf::from(dir)),
        None => Ok(npm::cache_dir("claude-code")?),
    }
}

/// Asks npm which version a dist-tag (`latest`) stands for today.
pub fn resolve_tag(tag: &str) -> Result<String, InstallError> {
    Ok(npm::resolve_tag(PACKAGE, tag)?)
}

/// Installs `version` into the cache unless it is there already, and says how to start it.
pub fn ensure(version: &str) -> Result<Installation, InstallError> {
    assert!(npm::is_version(version), "callers check version numbers");
    let cache = cache_dir()?;
    let dir = npm::install_once(
        &cache,
        version,
        &[(".", npm::depending_on(&[(PACKAGE, version)]))],
    )?;
    Ok(Installation {
        version: version.into(),
        program: executable(version, &dir)?,
        dir,
    })
}

/// The platform package that carries the native executable of versions after 2.1.112.
fn native_package() -> String {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        other => other,
    };
    format!("{PACKAGE}-linux-{arch}")
}

fn executable(version: &str, dir: &Path) -> Result<Executable, InstallError> {
    let modules = dir.join("node_modules");
    let cli = modules.join(PACKAGE).join("cli.js");
    if cli.is_file() {
        return Ok(Executable::Node(cli));
    }
    let native = modules.join(native_package()).join("claude");
    if native.is_file() {
        return Ok(Executable::Native(native));
    }
    Err(InstallError::NoExecutable {
        version: version.into(),
        dir: dir.to_path_buf(),
        native: format!("{}/claude", native_package()),
    })
}
