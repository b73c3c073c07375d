//! The entry: start the server on a scratch root with no operation mapped, choose, probe,
//! render, and read the draft back through the mapping compiler.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use taskproof_core::protocol::Op;
use taskproof_mcp_target::mapping::{Mapping, OPS};
use taskproof_mcp_target::{McpSession, McpTarget, with_stderr};
use taskproof_session::{Session, SessionOptions};

use crate::choose::{choose, lists_per_call};
use crate::probe::{data_folder, probe_tools};
use crate::render::render_with;

/// The subject of the probe's task, found again in answers.
pub(crate) const PROBE_SUBJECT: &str = "taskproof probe task 7f3a";

/// Starts `command` on a scratch root, lists its tools, probes the chosen ones (when `probe`)
/// and returns the draft mapping's text.
pub fn draft(command: &str, options: SessionOptions, probe: bool) -> Result<String, String> {
    let none = format!(
        "unsupported = [{}]\n[server]\ncwd = \"{{root}}/cwd\"\nenv = {{ HOME = \"{{root}}/home\" }}\n",
        OPS.iter()
            .map(|o| format!("\"{o}\""))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let empty = Mapping::parse(&none, Path::new("(no mapping)")).map_err(|e| e.to_string())?;
    let target = McpTarget::new(command, Some(Arc::new(empty)));
    let root = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut session = McpSession::open(&target, root.path(), options)
        .map_err(|(e, stderr)| with_stderr(e, &stderr).to_string())?;
    let hello = session.hello().clone();
    let tools = session.tools().clone();
    let chosen = choose(&tools);
    let mut learned = if probe {
        probe_tools(&mut session, &tools, &chosen)
    } else {
        BTreeMap::new()
    };
    session.kill();
    // A server no tool of which takes a list keeps one list per process: where did its task go?
    if !lists_per_call(&tools, &chosen)
        && let Some(l) = learned.get_mut(&Op::Create)
    {
        l.data = data_folder(root.path()).map(str::to_string);
    }
    let text = render_with(
        command,
        &hello.name,
        &hello.version,
        &tools,
        &chosen,
        &learned,
    );
    let checked = Mapping::parse(&text, Path::new("(draft)"))
        .map_err(|e| format!("the draft does not read back (a bug of mcp-draft): {e}\n{text}"))?;
    let schemas = tools
        .iter()
        .map(|(k, (_, s))| (k.clone(), s.clone()))
        .collect();
    checked
        .check_tools(&schemas)
        .map_err(|e| format!("the draft does not fit the tools (a bug of mcp-draft): {e}"))?;
    Ok(text)
}
