//! Writing `DIR/ID/` for one failing scenario: the folder's name and its files.

use std::path::{Path, PathBuf};

use taskproof_profile::Profile;
use taskproof_report::result::{Outcome, TargetFailure, TargetInfo};
use taskproof_session::wire::Event;

use crate::format::Scenario;

use super::*;

/// The most processes a replay keeps running at once: each holds one of the shell's file
/// descriptors 3 to 9 (POSIX shells need not offer more).
pub(super) const MAX_LIVE: usize = 7;

/// What [`write`] needs of the run.
pub(crate) struct Failed<'a> {
    pub scenario: &'a Scenario,
    pub profile: Profile,
    pub target: &'a TargetInfo,
    pub result: &'a Result<Outcome, TargetFailure>,
    pub events: &'a [Event],
    /// What `--profile` the run was given, as `run` takes it (`strict`, `written:s07`, a
    /// recorded profile's name).
    pub profile_flag: String,
    /// What the target's sessions wrote to stderr (the tail, labelled by session).
    pub stderr: &'a str,
}

/// Writes `DIR/ID/` for a failed (or errored) scenario and answers its README's path.
pub(crate) fn write(dir: &Path, f: &Failed<'_>) -> Result<PathBuf, String> {
    let folder = dir.join(folder_name(&f.scenario.id));
    let io = |what: &Path, e: std::io::Error| format!("{}: {e}", what.display());
    if folder.exists() {
        std::fs::remove_dir_all(&folder).map_err(|e| io(&folder, e))?;
    }
    std::fs::create_dir_all(&folder).map_err(|e| io(&folder, e))?;
    let put = |name: &str, text: &str| {
        let path = folder.join(name);
        std::fs::write(&path, text).map_err(|e| io(&path, e))
    };
    let processes = processes(f.events);
    let replay = if processes.is_empty() {
        None
    } else {
        for (n, p) in &processes {
            put(&format!("process-{n}.in.jsonl"), &lines(&p.sent))?;
            put(&format!("process-{n}.out.jsonl"), &lines(&p.got))?;
        }
        put("wire.jsonl", &wire_jsonl(f.events))?;
        let script = script(f);
        if let Ok(s) = &script {
            put("replay.sh", &s.text)?;
        }
        Some(script.map(|s| s.taken))
    };
    if !f.stderr.trim().is_empty() {
        put("stderr.txt", f.stderr)?;
    }
    let readme = folder.join("README.md");
    put("README.md", &readme_text(f, &processes, replay.as_ref()))?;
    Ok(readme)
}

/// A scenario id as one folder name: characters other than letters, digits, `.`, `_` and
/// `-` become `_`.
pub(super) fn folder_name(id: &str) -> String {
    let name: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    match name.as_str() {
        "" | "." | ".." => format!("scenario{name}"),
        _ => name,
    }
}
