//! How one `opencode run` is started: a private HOME (every XDG folder under it), the config
//! in the environment, the plugin's own config file in OpenCode's config folder, and nothing
//! inherited that could point OpenCode or the plugin elsewhere.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::install::Installation;

/// The variables passed on from taskproof's own environment; every other is dropped (an
/// `ANTHROPIC_API_KEY`, an `OPENCODE_CONFIG` or a `CLAUDE_CODE_TASK_LIST_ID` of the user's
/// would change what OpenCode or the plugin does).
const INHERITED: &[&str] = &["PATH", "LANG", "LC_ALL", "TZ", "TMPDIR"];

/// The command of one OpenCode run in `dir` (created here), whose plugin keeps its tasks in
/// `storage`, talking to the scripted model at `base_url`.
///
/// Each run has a HOME of its own (`dir/home`): on its first start the plugin moves the
/// config it finds (`oh-my-opencode.json` in OpenCode's config folder) into `~/.omo/omo.jsonc`
/// and from then on reads that one, so a second run sharing the HOME kept the first run's
/// `storage_path` and wrote another list's tasks into the first list's folder (measured with
/// 4.19.4: the suite's `lists-are-isolated` saw team-b's task in team-a).
pub fn command(
    install: &Installation,
    dir: &Path,
    storage: &Path,
    base_url: &str,
) -> Result<Command, String> {
    let mkdir = |p: &Path| {
        std::fs::create_dir_all(p).map_err(|e| format!("failed to create {}: {e}", p.display()))
    };
    // OpenCode's config folder is XDG_CONFIG_HOME/opencode: the run's own, so that it is the
    // only one OpenCode reads (and checks its dependencies in).
    let config_home = dir.join("config");
    let config = config_home.join("opencode");
    let work = dir.join("work");
    install.copy_config_template(&config)?;
    mkdir(&work)?;
    let write = |name: &str, value: &serde_json::Value| {
        let path = config.join(name);
        std::fs::write(&path, format!("{value:#}\n"))
            .map_err(|e| format!("failed to write {}: {e}", path.display()))
    };
    // The plugin's config, as its README sets the task system up: `storage_path` is where a
    // user points it at a Claude Code list.
    write(
        "oh-my-opencode.json",
        &serde_json::json!({
            "experimental": {"task_system": true},
            "sisyphus": {"tasks": {"storage_path": storage}},
        }),
    )?;
    let opencode_config = crate::session::opencode_config(install, base_url);
    let output = std::fs::File::create(dir.join("output.txt"))
        .map_err(|e| format!("failed to create {}: {e}", dir.join("output.txt").display()))?;
    let output2 = output
        .try_clone()
        .map_err(|e| format!("failed to open OpenCode's output file twice: {e}"))?;
    let mut c = Command::new(&install.opencode);
    c.env_clear();
    for k in INHERITED {
        if let Some(v) = std::env::var_os(k) {
            c.env(k, v);
        }
    }
    let home = dir.join("home");
    mkdir(&home)?;
    c.env("HOME", &home)
        .env("XDG_CONFIG_HOME", &config_home)
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("XDG_STATE_HOME", dir.join("state"))
        .env("XDG_DATA_HOME", dir.join("data"))
        .env("OPENCODE_CONFIG_CONTENT", opencode_config.to_string())
        // Offline: no model catalogue, update, LSP download or sharing to try and wait for.
        .env("OPENCODE_DISABLE_MODELS_FETCH", "1")
        .env("OPENCODE_DISABLE_AUTOUPDATE", "1")
        .env("OPENCODE_DISABLE_LSP_DOWNLOAD", "1")
        .env("OPENCODE_DISABLE_SHARE", "1")
        .current_dir(&work)
        .stdin(Stdio::null())
        .stdout(output)
        .stderr(output2);
    Ok(c)
}
