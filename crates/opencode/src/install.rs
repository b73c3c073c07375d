//! Installing a published version of oh-my-opencode with the OpenCode it runs in, with npm,
//! into taskproof's cache: `CACHE/oh-my-opencode/PLUGIN+opencode-OPENCODE/` holds
//! `node_modules` of `oh-my-opencode@PLUGIN` and `opencode-ai@OPENCODE` (whose platform
//! package carries the `opencode` binary), and `config-modules/node_modules` of
//! `@opencode-ai/plugin@OPENCODE`, which OpenCode would otherwise install with npm into every
//! config folder it reads, on every start of a fresh HOME. Installed once, under the cache's
//! lock, as every npm product taskproof runs (`taskproof_session::npm`).

use std::path::{Path, PathBuf};

use taskproof_session::npm::{self, NpmError};

/// The plugin's package.
pub const PLUGIN: &str = "oh-my-opencode";
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
    /// `node_modules` with `@opencode-ai/plugin`, for OpenCode's config folders.
    pub config_modules: PathBuf,
}

impl Installation {
    /// Gives the config folder `config` the installation's `@opencode-ai/plugin`, as OpenCode
    /// would install it there (`package.json` naming it, `node_modules` a link).
    pub fn link_config_modules(&self, config: &Path) -> Result<(), String> {
        let package = config.join("package.json");
        let json =
            serde_json::json!({"dependencies": {"@opencode-ai/plugin": self.opencode_version}});
        std::fs::write(&package, format!("{json:#}\n"))
            .map_err(|e| format!("failed to write {}: {e}", package.display()))?;
        std::os::unix::fs::symlink(&self.config_modules, config.join("node_modules"))
            .map_err(|e| format!("failed to link {}/node_modules: {e}", config.display()))
    }
}

/// Installs the pair unless it is in the cache, and says where everything is.
pub fn ensure(plugin: &str, opencode: &str) -> Result<Installation, NpmError> {
    let name = format!("{plugin}+opencode-{opencode}");
    let (plugin_spec, opencode_spec) = (
        format!("{PLUGIN}@{plugin}"),
        format!("{OPENCODE}@{opencode}"),
    );
    let config_spec = format!("@opencode-ai/plugin@{opencode}");
    let dir = npm::install_once(
        &npm::cache_dir("oh-my-opencode")?,
        &name,
        &[
            (".", &[plugin_spec.as_str(), opencode_spec.as_str()][..]),
            ("config-modules", &[config_spec.as_str()][..]),
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
        config_modules: dir.join("config-modules").join("node_modules"),
        opencode: binary,
        plugin_entry: entry,
        dir,
    })
}
