//! One run of `taskproof check` over a folder: discover the lists, audit each, and with
//! `--fix` repair them or with `--dry-run` say what a fix would do. The result is a
//! [`Report`], which [`super::render`] turns into text or JSON.

use std::path::{Path, PathBuf};

use super::CheckError;
use super::audit::{self, Locking};
use super::discover::{self, ListLocation};
use super::finding::{Finding, FindingKind};
use super::fix::{self, Change};
use crate::protocol::Layout;

/// What to do with what the audit finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Report only.
    Check,
    /// Repair what is safe to repair, then report what is left.
    Fix,
    /// Report, and say what `Fix` would change, changing nothing.
    DryRun,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Check => "check",
            Mode::Fix => "fix",
            Mode::DryRun => "dry-run",
        }
    }
}

/// One audited list.
#[derive(Debug, Clone)]
pub struct ListSummary {
    pub name: String,
    pub path: PathBuf,
    pub layout: Layout,
    pub tasks: usize,
    /// Another process held the lock while the list was read.
    pub busy: bool,
}

/// Everything one run found and did.
#[derive(Debug, Clone)]
pub struct Report {
    pub mode: Mode,
    /// The folder the run looked in, as given (a list folder or a folder of lists).
    pub root: PathBuf,
    pub lists: Vec<ListSummary>,
    /// The findings, after repairs when the mode is [`Mode::Fix`].
    pub findings: Vec<Finding>,
    /// The repairs made, skipped, or (in a dry run) that would be made.
    pub changes: Vec<Change>,
}

impl Report {
    pub fn task_count(&self) -> usize {
        self.lists.iter().map(|l| l.tasks).sum()
    }

    pub fn is_clean(&self) -> bool {
        self.findings.is_empty()
    }
}

/// Audits the lists under `path` (a list folder or a folder of lists; with `is_root`, always
/// a folder of lists that may not exist yet).
pub fn run(
    path: &Path,
    is_root: bool,
    layout: Option<Layout>,
    mode: Mode,
) -> Result<Report, CheckError> {
    let found = discover::discover(path, is_root)?;
    let mut report = Report {
        mode,
        root: path.to_path_buf(),
        lists: Vec::new(),
        findings: found.findings,
        changes: Vec::new(),
    };
    for location in &found.lists {
        match audit_one(location, layout, mode) {
            Ok((summary, findings, changes)) => {
                report.lists.push(summary);
                report.findings.extend(findings);
                report.changes.extend(changes);
            }
            // One list that cannot be read does not hide the others.
            Err(e) => report.findings.push(Finding::new(
                &location.name,
                ".",
                FindingKind::NotAFile,
                format!("the list folder cannot be read: {e}"),
            )),
        }
    }
    Ok(report)
}

fn audit_one(
    location: &ListLocation,
    layout: Option<Layout>,
    mode: Mode,
) -> Result<(ListSummary, Vec<Finding>, Vec<Change>), CheckError> {
    let dir = location.open()?;
    let layout = match layout {
        Some(l) => l,
        None => location.detect_layout(&dir)?,
    };
    let mut audit = audit::audit_dir(&dir, &location.name, layout, Locking::Probe)
        .map_err(|source| CheckError::io(location.path.clone(), source))?;
    drop(dir);
    let changes = match mode {
        Mode::Check => Vec::new(),
        Mode::DryRun => fix::dry_run(&audit),
        // A list with nothing to repair is not even locked: `--fix` on a clean list writes
        // nothing, not even a `.lock`.
        Mode::Fix if fix::plan(&audit).is_empty() => Vec::new(),
        Mode::Fix => match fix::fix_list(location, Some(layout)) {
            Ok((changes, after)) => {
                audit = after;
                changes
            }
            // The list could be read but not locked or written (a `.lock` that is a link, a
            // read-only folder): its findings stand, and each repair says why it was not made.
            Err(e) => fix::plan(&audit)
                .into_iter()
                .map(|repair| Change {
                    list: location.name.clone(),
                    repair,
                    outcome: fix::RepairOutcome::Skipped(e.to_string()),
                })
                .collect(),
        },
    };
    let summary = ListSummary {
        name: location.name.clone(),
        path: location.path.clone(),
        layout,
        tasks: audit.task_count(),
        busy: audit.busy,
    };
    Ok((summary, audit.findings, changes))
}
