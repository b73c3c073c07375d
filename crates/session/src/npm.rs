//! Installing published npm packages into taskproof's cache, once: how every product
//! taskproof runs from npm gets onto the machine (Claude Code, OpenCode with oh-my-opencode,
//! claude-code-controller).
//!
//! The cache is `$XDG_CACHE_HOME/taskproof/PRODUCT`, else `$HOME/.cache/taskproof/PRODUCT`
//! (a product may have its own override, as Claude Code's `TASKPROOF_CLAUDE_CODE_CACHE`). An
//! installation is a folder named after what it holds (`CACHE/NAME`): it is installed into a
//! temporary folder beside it and renamed into place when npm succeeded, so a folder of that
//! name is always complete; `CACHE/.lock` (an exclusive `flock`) keeps two processes from
//! installing at once. Nothing npm installed is changed afterwards.

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

#[derive(Debug, thiserror::Error)]
pub enum NpmError {
    #[error("no cache folder: set XDG_CACHE_HOME or HOME")]
    NoCache,
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "run npm ({0}); the product is installed with npm, so node and npm must be on PATH (e.g. `apt-get install -y nodejs npm`)"
    )]
    NoNpm(std::io::Error),
    #[error("install {packages} with npm (exit {status}): {stderr}")]
    Npm {
        packages: String,
        status: String,
        stderr: String,
    },
    #[error("ask npm which version `{spec}` is: {reason}")]
    Resolve { spec: String, reason: String },
    #[error("npm installed {what}, but {} is not there", path.display())]
    Missing { what: String, path: PathBuf },
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> NpmError {
    let what = what.into();
    move |source| NpmError::Io { what, source }
}

/// `PRODUCT`'s folder in taskproof's cache (see the module docs).
pub fn cache_dir(product: &str) -> Result<PathBuf, NpmError> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(dir) = var("XDG_CACHE_HOME") {
        return Ok(dir.join("taskproof").join(product));
    }
    var("HOME")
        .map(|h| h.join(".cache").join("taskproof").join(product))
        .ok_or(NpmError::NoCache)
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

/// A `package.json` that depends on exactly `packages` (`(name, version)`), as npm's own
/// `npm install NAME@VERSION` would leave it.
pub fn depending_on(packages: &[(&str, &str)]) -> serde_json::Value {
    let deps: serde_json::Map<String, serde_json::Value> = packages
        .iter()
        .map(|(n, v)| (n.to_string(), serde_json::Value::String(v.to_string())))
        .collect();
    serde_json::json!({"private": true, "dependencies": deps})
}

/// npm, quiet about updates, funding and audits.
pub fn npm() -> Command {
    let mut c = Command::new("npm");
    c.env("NO_UPDATE_NOTIFIER", "1")
        .env("npm_config_update_notifier", "false")
        .env("npm_config_fund", "false")
        .env("npm_config_audit", "false");
    c
}

/// Asks npm which version `package@tag` (a dist-tag such as `latest`) is today.
pub fn resolve_tag(package: &str, tag: &str) -> Result<String, NpmError> {
    let spec = format!("{package}@{tag}");
    let out = npm()
        .args(["view", &spec, "version"])
        .stdin(Stdio::null())
        .output()
        .map_err(NpmError::NoNpm)?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let version = text.lines().last().unwrap_or("").trim().to_string();
    if !out.status.success() || !is_version(&version) {
        return Err(NpmError::Resolve {
            spec,
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

/// Makes `cache/name` unless it is there: for each `(sub, package_json)`, that
/// `package.json` written into `cache/name/sub` (`"."` for the folder itself) and `npm install`
/// run there, so that the folder holds exactly the dependencies it names, with npm's lock
/// file. Returns the folder.
pub fn install_once(
    cache: &Path,
    name: &str,
    parts: &[(&str, serde_json::Value)],
) -> Result<PathBuf, NpmError> {
    let dir = cache.join(name);
    if dir.is_dir() {
        return Ok(dir);
    }
    fs::create_dir_all(cache).map_err(io(format!("create {}", cache.display())))?;
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
    if dir.is_dir() {
        return Ok(dir);
    }
    let staging = cache.join(format!(".installing-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&staging);
    let result = (|| {
        for (sub, package_json) in parts {
            let folder = if *sub == "." {
                staging.clone()
            } else {
                staging.join(sub)
            };
            fs::create_dir_all(&folder).map_err(io(format!("create {}", folder.display())))?;
            fs::write(folder.join("package.json"), format!("{package_json}\n"))
                .map_err(io(format!("write {}/package.json", folder.display())))?;
            let out = npm()
                .current_dir(&folder)
                .args(["install", "--loglevel=error"])
                .stdin(Stdio::null())
                .output()
                .map_err(NpmError::NoNpm)?;
            if !out.status.success() {
                let deps = package_json["dependencies"]
                    .as_object()
                    .map(|d| {
                        d.iter()
                            .map(|(k, v)| format!("{k}@{}", v.as_str().unwrap_or("?")))
                            .collect::<Vec<_>>()
                            .join(" ")
                    })
                    .unwrap_or_default();
                return Err(NpmError::Npm {
                    packages: deps,
                    status: out.status.to_string(),
                    stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
                });
            }
        }
        Ok(())
    })();
    if let Err(e) = result {
        let _ = fs::remove_dir_all(&staging);
        return Err(e);
    }
    fs::rename(&staging, &dir).map_err(io(format!(
        "move {} to {}",
        staging.display(),
        dir.display()
    )))?;
    drop(lock);
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_numbers_are_checked_before_they_name_folders() {
        for ok in ["2.1.17", "2.1.330", "1.0.0-beta.1", "4.19.4"] {
            assert!(is_version(ok), "{ok}");
        }
        for bad in ["", "latest", "../2", "2.1.17/..", "2 1", "v2.1.17"] {
            assert!(!is_version(bad), "{bad}");
        }
    }
}
