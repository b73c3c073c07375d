//! Installing a published version of oh-my-opencode with the OpenCode it runs in, with npm,
//! into taskproof's cache: `CACHE/oh-my-opencode/PLUGIN+opencode-OPENCODE/` holds
//! `node_modules` of `oh-my-opencode@PLUGIN` and `opencode-ai@OPENCODE` (whose platform
//! package carries the `opencode` binary), and `config-template/`, a config folder with
//! `@opencode-ai/plugin@OPENCODE` installed, which OpenCode would otherwise install with npm
//! into every config folder it reads, on every start of a fresh HOME. Installed once, under the cache's
//! lock, as every npm product taskproof runs (`taskproof_session::npm`).

use std::path::{Path, PathBuf};

use taskproof_session::npm::{self, NpmError};

/// The plugin's package.
pub const PLUGIN: &str = "oh-my-opencode";
/// The installation's folder that is the template of every run's config folder.
const CONFIG_TEMPLATE: &str = "config-template";
/// OpenCode's package; its binary comes in a platform package it depends on.
pub const OPENCODE: &str = "opencode-ai";
/// The OpenCode version a plugin version runs in unless the spec names one: the version
/// published when oh-my-opencode 4.19.4 was (measured: 1.18.33 runs its task tools).
pub const DEFAULT_OPENCODE: &str = "1.18.33";

/// One installed pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installation {
    pub plugin_version: String,
    pub opencode_version: String,
    pub dir: PathBuf,
    /// The `opencode` binary.
    pub opencode: PathBuf,
    /// The plugin's entry module, which OpenCode's `plugin` list names as a `file://` URL.
    pub plugin_entry: PathBuf,
    /// A config folder with `@opencode-ai/plugin` installed, copied into each run's.
    pub config_template: PathBuf,
}

impl Installation {
    /// Makes `config` (absent) a copy of the installation's config folder, whose
    /// `@opencode-ai/plugin` OpenCode then finds installed and up to date: given a folder
    /// without it, or with `node_modules` a link, OpenCode installs it with npm (64 MB from the
    /// registry, 30 to 60 s on a loaded machine; measured). Files are hard links (OpenCode
    /// changes none of them: measured), copies where the cache is on another file system.
    pub fn copy_config_template(&self, config: &Path) -> Result<(), String> {
        copy_tree(&self.config_template, config).map_err(|e| {
            format!(
                "failed to copy {} to {}: {e}",
                self.config_template.display(),
                config.display()
            )
        })
    }
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type()?;
        if kind.is_dir() {
            copy_tree(&src, &dst)?;
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&src)?, &dst)?;
        } else if std::fs::hard_link(&src, &dst).is_err() {
            std::fs::copy(&src, &dst)?;
        }
    }
    Ok(())
}

/// Installs the pair unless it is in the cache, and says where everything is.
pub fn ensure(plugin: &str, opencode: &str) -> Result<Installation, NpmError> {
    let name = format!("{plugin}+opencode-{opencode}");
    let dir = npm::install_once(
        &npm::cache_dir("oh-my-opencode")?,
        &name,
        &[
            (
                ".",
                npm::depending_on(&[(PLUGIN, plugin), (OPENCODE, opencode)]),
            ),
            // The config folder as OpenCode 1.18.33 leaves it after its own install there:
            // this package.json, npm's lock file and node_modules.
            (
                CONFIG_TEMPLATE,
                serde_json::json!({"dependencies": {"@opencode-ai/plugin": opencode}}),
            ),
        ],
    )?;
    let modules = dir.join("node_modules");
    let arch = match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        other => other,
    };
    let binary = modules
        .join(format!("opencode-linux-{arch}"))
        .join("bin")
        .join("opencode");
    let entry = modules.join(PLUGIN).join("dist").join("index.js");
    for (what, path) in [
        ("OpenCode's binary", &binary),
        ("the plugin's entry", &entry),
    ] {
        if !path.is_file() {
            return Err(NpmError::Missing {
                what: format!("{what} ({PLUGIN}@{plugin} with {OPENCODE}@{opencode})"),
                path: path.clone(),
            });
        }
    }
    Ok(Installation {
        plugin_version: plugin.into(),
        opencode_version: opencode.into(),
        config_template: dir.join(CONFIG_TEMPLATE),
        opencode: binary,
        plugin_entry: entry,
        dir,
    })
}
