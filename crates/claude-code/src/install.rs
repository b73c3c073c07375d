//! Installing published versions of `@anthropic-ai/claude-code` with npm into a cache outside
//! the repository, once per version.
//!
//! Layout: `CACHE/VERSION/node_modules/@anthropic-ai/claude-code/…`, where CACHE is
//! `$TASKPROOF_CLAUDE_CODE_CACHE`, else `$XDG_CACHE_HOME/taskproof/claude-code`, else
//! `$HOME/.cache/taskproof/claude-code`. A version is installed into a temporary folder beside
//! its final place and renamed into place when npm succeeded, so a folder named after a
//! version is always a complete installation; `CACHE/.lock` (an exclusive `flock`) keeps two
//! processes from installing at once. Nothing npm installs is changed afterwards.

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The package every version is published as.
pub const PACKAGE: &str = "@anthropic-ai/claude-code";

/// The environment variable that overrides the cache folder.
pub const CACHE_ENV: &str = "TASKPROOF_CLAUDE_CODE_CACHE";

#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("no cache folder: set {CACHE_ENV}, XDG_CACHE_HOME or HOME")]
    NoCache,
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "run npm ({0}); Claude Code is installed with npm, so node and npm must be on PATH (e.g. `apt-get install -y nodejs npm`)"
    )]
    NoNpm(std::io::Error),
    #[error("install {PACKAGE}@{version} with npm (exit {status}): {stderr}")]
    Npm {
        version: String,
        status: String,
        stderr: String,
    },
    #[error("ask npm which version `{tag}` is: {reason}")]
    Resolve { tag: String, reason: String },
    #[error("find the executable of {PACKAGE}@{version} in {dir}: neither cli.js nor {native}")]
    NoExecutable {
        version: String,
        dir: PathBuf,
        native: String,
    },
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> InstallError {
    let what = what.into();
    move |source| InstallError::Io { what, source }
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
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(dir) = var(CACHE_ENV) {
        return Ok(dir);
    }
    if let Some(dir) = var("XDG_CACHE_HOME") {
        return Ok(dir.join("taskproof").join("claude-code"));
    }
    var("HOME")
        .map(|h| h.join(".cache").join("taskproof").join("claude-code"))
        .ok_or(InstallError::NoCache)
}

/// Whether `version` looks like a published version number (digits and dots, maybe a
/// pre-release tail), so that it can name a folder and an npm spec safely.
pub fn is_version(version: &str) -> bool {
    !version.is_empty()
        && version.len() <= 64
        && version.starts_with(|c: char| c.is_ascii_digit())
        && version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+'))
}

/// Asks npm which version a dist-tag (`latest`) stands for today.
pub fn resolve_tag(tag: &str) -> Result<String, InstallError> {
    let out = npm()
        .args(["view", &format!("{PACKAGE}@{tag}"), "version"])
        .stdin(Stdio::null())
        .output()
        .map_err(InstallError::NoNpm)?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let version = text.lines().last().unwrap_or("").trim().to_string();
    if !out.status.success() || !is_version(&version) {
        return Err(InstallError::Resolve {
            tag: tag.into(),
            reason: format!(
                "npm view exited {}: {}{}",
                out.status,
                text,
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        });
    }
    Ok(version)
}

fn npm() -> Command {
    let mut c = Command::new("npm");
    // npm's update notice and funding messages are noise in a harness's stderr.
    c.env("NO_UPDATE_NOTIFIER", "1")
        .env("npm_config_update_notifier", "false")
        .env("npm_config_fund", "false")
        .env("npm_config_audit", "false");
    c
}

/// Installs `version` into the cache unless it is there already, and says how to start it.
pub fn ensure(version: &str) -> Result<Installation, InstallError> {
    assert!(is_version(version), "callers check version numbers");
    let cache = cache_dir()?;
    let dir = cache.join(version);
    if let Some(found) = installed(version, &dir)? {
        return Ok(found);
    }
    fs::create_dir_all(&cache).map_err(io(format!("create {}", cache.display())))?;
    let lock_path = cache.join(".lock");
    let lock = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(io(format!("open {}", lock_path.display())))?;
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive)
        .map_err(|e| io(format!("lock {}", lock_path.display()))(e.into()))?;
    // Another process may have installed it while this one waited for the lock.
    if let Some(found) = installed(version, &dir)? {
        return Ok(found);
    }
    let staging = cache.join(format!(".installing-{version}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&staging);
    fs::create_dir_all(&staging).map_err(io(format!("create {}", staging.display())))?;
    fs::write(staging.join("package.json"), "{\"private\": true}\n")
        .map_err(io(format!("write {}/package.json", staging.display())))?;
    let out = npm()
        .current_dir(&staging)
        .args([
            "install",
            "--no-save",
            "--loglevel=error",
            &format!("{PACKAGE}@{version}"),
        ])
        .stdin(Stdio::null())
        .output()
        .map_err(InstallError::NoNpm)?;
    if !out.status.success() {
        let _ = fs::remove_dir_all(&staging);
        return Err(InstallError::Npm {
            version: version.into(),
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    let found = executable(version, &staging)?;
    fs::rename(&staging, &dir).map_err(io(format!(
        "move {} to {}",
        staging.display(),
        dir.display()
    )))?;
    drop(lock);
    let program = match found {
        Executable::Node(p) => Executable::Node(dir.join(p.strip_prefix(&staging).unwrap_or(&p))),
        Executable::Native(p) => {
            Executable::Native(dir.join(p.strip_prefix(&staging).unwrap_or(&p)))
        }
    };
    Ok(Installation {
        version: version.into(),
        dir,
        program,
    })
}

fn installed(version: &str, dir: &Path) -> Result<Option<Installation>, InstallError> {
    if !dir.is_dir() {
        return Ok(None);
    }
    Ok(Some(Installation {
        version: version.into(),
        dir: dir.to_path_buf(),
        program: executable(version, dir)?,
    }))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_numbers_are_checked_before_they_name_folders() {
        for ok in ["2.1.17", "2.1.330", "1.0.0-beta.1"] {
            assert!(is_version(ok), "{ok}");
        }
        for bad in ["", "latest", "../2", "2.1.17/..", "2 1", "v2.1.17"] {
            assert!(!is_version(bad), "{bad}");
        }
    }
}
