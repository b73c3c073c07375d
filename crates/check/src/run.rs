//! One run of `taskproof check` over a folder: discover the lists, audit each (with what
//! vanished from it, [`super::vanish`]), and with `--fix` repair them, with `--dry-run` say
//! what a fix would do, or with `--restore` write back what vanished ([`super::restore`]).
//! The result is a [`Report`], which [`super::render`] turns into text or JSON.

use std::path::{Path, PathBuf};

use crate::CheckError;
use crate::audit::{self, Locking};
use crate::discover::{self, ListLocation};
use crate::finding::{Finding, FindingKind, Repair};
use crate::fix::{self, Change, RepairOutcome};
use crate::journal;
use crate::judge::sort_findings;
use crate::restore::{self, Into};
use crate::vanish::{self, Folder};
use crate::{gone, strand};
use taskproof_core::protocol::Layout;

/// What to do with what the audit finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Report only.
    Check,
    /// Repair what is safe to repair, then report what is left.
    Fix,
    /// Report, and say what `Fix` would change, changing nothing.
    DryRun,
    /// Write back from the journal what vanished, then report.
    Restore,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Check => "check",
            Mode::Fix => "fix",
            Mode::DryRun => "dry-run",
            Mode::Restore => "restore",
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

/// How a run reads and what it does.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The layout of every list; detected per list when `None`.
    pub layout: Option<Layout>,
    /// A journal to read instead of the list's own (`--journal`; one list only).
    pub journal: Option<PathBuf>,
    /// Where `--restore` writes.
    pub into: Into,
    /// The time of the run, in milliseconds since the epoch (names a restore's new list).
    pub now: u64,
}

/// Audits the lists under `path` (a list folder or a folder of lists; with `is_root`, always
/// a folder of lists that may not exist yet).
pub fn run(
    path: &Path,
    is_root: bool,
    layout: Option<Layout>,
    mode: Mode,
) -> Result<Report, CheckError> {
    let options = Options {
        layout,
        now: journal::now_ms(),
        ..Options::default()
    };
    run_with(path, is_root, mode, &options)
}

/// [`run`], with every option.
pub fn run_with(
    path: &Path,
    is_root: bool,
    mode: Mode,
    options: &Options,
) -> Result<Report, CheckError> {
    let layout = options.layout;
    let found = discover::discover(path, is_root)?;
    if options.journal.is_some() && found.lists.len() != 1 {
        return Err(CheckError::JournalForMany(
            path.to_path_buf(),
            found.lists.len(),
        ));
    }
    // Every list would make the same new list, and all but the first find it taken.
    if mode == Mode::Restore && matches!(options.into, Into::Named(_)) && found.lists.len() != 1 {
        return Err(CheckError::IntoForMany(
            path.to_path_buf(),
            found.lists.len(),
        ));
    }
    let mut report = Report {
        mode,
        root: path.to_path_buf(),
        lists: Vec::new(),
        findings: found.findings,
        changes: Vec::new(),
    };
    // A list folder named alone must restore or say why not; in a folder of lists, one list
    // that cannot be restored does not stop the others.
    let alone = found.lists.len() == 1 && !is_root && report.findings.is_empty();
    let mut made = Vec::new();
    if mode == Mode::Restore {
        for location in &found.lists {
            let one = restore::restore(
                location,
                layout,
                options.journal.as_deref(),
                &options.into,
                options.now,
            );
            match one {
                Ok(r) => {
                    report.changes.extend(r.changes);
                    made.extend(r.new_list);
                }
                Err(e) if alone => return Err(e),
                // Lists the hook never journaled have nothing to restore; only a list whose
                // shape says it lost its tasks is worth a line.
                Err(CheckError::NoJournal { .. }) if !looks_emptied(location, layout) => {}
                Err(e) => report.changes.push(Change {
                    list: location.name.clone(),
                    repair: Repair::RestoreVanished,
                    outcome: RepairOutcome::Skipped(e.to_string()),
                }),
            }
        }
    }
    // Lists out of reach of the session that made them: written where it reads now.
    let lists_root = match found.lists.as_slice() {
        [one] if one.path == path => path.parent().unwrap_or(path).to_path_buf(),
        _ => path.to_path_buf(),
    };
    if mode == Mode::Restore {
        for s in strand::strands(&lists_root, &found.lists) {
            report
                .changes
                .extend(strand::restore(&lists_root, &s, options.now));
            let into = ListLocation::in_root(&lists_root, &s.reads.list);
            let listed = found.lists.iter().chain(&made).any(|l| l.path == into.path);
            if !listed {
                made.push(into);
            }
        }
    }
    let hint = format!("taskproof check --restore {}", lists_root.display());
    // Journals of list folders that are gone, when the run looks at a folder of lists.
    if path == lists_root {
        if mode == Mode::Restore {
            for g in gone::gone(&lists_root, &found.lists) {
                if g.moved_to.is_some() {
                    continue;
                }
                match restore::restore(&g.location, layout, None, &options.into, options.now) {
                    Ok(r) => {
                        report.changes.extend(r.changes);
                        made.extend(r.new_list);
                    }
                    Err(e) => report.changes.push(Change {
                        list: g.location.name.clone(),
                        repair: Repair::RestoreVanished,
                        outcome: RepairOutcome::Skipped(e.to_string()),
                    }),
                }
            }
        }
        let now_lists: Vec<ListLocation> = found.lists.iter().chain(&made).cloned().collect();
        for g in gone::gone(&lists_root, &now_lists) {
            report.findings.extend(gone::findings(g, &hint));
        }
    }
    for s in strand::strands(&lists_root, &found.lists) {
        report.findings.extend(strand::findings(&s, &hint));
    }
    // A list the restore made has a journal of its own: `--journal` names the old list's.
    let own = Options {
        journal: None,
        ..options.clone()
    };
    let lists = found.lists.iter().map(|l| (l, options));
    for (location, options) in lists.chain(made.iter().map(|l| (l, &own))) {
        match audit_one(location, layout, mode, options) {
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

/// Whether a list without a journal has the shape of one that lost its tasks.
fn looks_emptied(location: &ListLocation, layout: Option<Layout>) -> bool {
    let options = Options {
        layout,
        ..Options::default()
    };
    audit_one(location, layout, Mode::Check, &options)
        .is_ok_and(|(_, findings, _)| findings.iter().any(|f| f.kind == FindingKind::Emptied))
}

fn audit_one(
    location: &ListLocation,
    layout: Option<Layout>,
    mode: Mode,
    options: &Options,
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
        Mode::Check | Mode::Restore => Vec::new(),
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
    let mut findings = audit.findings.clone();
    findings.extend(vanished(location, layout, &audit, options)?);
    sort_findings(&mut findings, layout);
    let summary = ListSummary {
        name: location.name.clone(),
        path: location.path.clone(),
        layout,
        tasks: audit.task_count(),
        busy: audit.busy,
    };
    Ok((summary, findings, changes))
}

/// What vanished from the list, from its journal (`--journal`'s, else its own) or its shape.
fn vanished(
    location: &ListLocation,
    layout: Layout,
    audit: &audit::ListAudit,
    options: &Options,
) -> Result<Vec<Finding>, CheckError> {
    let dir = location.open()?;
    let folder = Folder::read(&dir, audit).map_err(|e| CheckError::io(location.path.clone(), e))?;
    let path = options
        .journal
        .clone()
        .or_else(|| journal::path_for(&location.path, &location.name));
    let read = match &path {
        Some(p) => journal::read(p, &location.name),
        None => Ok(None),
    };
    let mut hint = format!("taskproof check --restore {}", location.path.display());
    if let Some(j) = &options.journal {
        hint += &format!(" --journal {}", j.display());
    }
    Ok(vanish::findings(
        &location.name,
        layout,
        &folder,
        path.as_deref(),
        read,
        &hint,
    ))
}
