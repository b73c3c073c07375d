//! What each target did to the other's files ([`crate::files::FilesReport`]), judged from the
//! phases' snapshots of the shared folder and what the watcher saw: `.lock` and
//! `.highwatermark` kept, deleted or replaced, task files removed or replaced by the other
//! target, files a target's final listing hides, and `taskproof check` of the folder.

use super::*;

/// Works out the file effects of a finished run from its snapshots and the watcher's log.
#[allow(clippy::too_many_arguments)]
pub(super) fn judge_files(
    workload: Workload,
    names: Vec<String>,
    layouts: Vec<Layout>,
    acts: Vec<bool>,
    parts: Vec<Run>,
    full: &[Vec<taskproof_core::task::Task>],
    snaps: &[(String, Snapshot)],
    log: &WatchLog,
    folder: &Path,
    settle: Option<f64>,
) -> OwnRun {
    let n = names.len();
    let l = |t: usize| files::letter(t);
    let last = &snaps.last().expect("the end is snapshotted").1;

    // Each target's task files: named by its layout for the ids it created, or found
    // holding its tag in any snapshot.
    let mut files_of: Vec<BTreeMap<TaskId, String>> = vec![BTreeMap::new(); n];
    let mut subject_of: Vec<BTreeMap<TaskId, String>> = vec![BTreeMap::new(); n];
    let mut deleted: Vec<BTreeSet<TaskId>> = vec![BTreeSet::new(); n];
    for (t, p) in parts.iter().enumerate() {
        for op in &p.history.ops {
            match &op.request {
                Request::Create { task, .. } => {
                    if let Some(id) = op.task_id() {
                        subject_of[t].insert(id, task.subject.clone());
                        if let Some(f) = layouts[t].file_name(id) {
                            files_of[t].insert(id, f);
                        }
                    }
                }
                Request::Delete { id, .. } => {
                    deleted[t].insert(*id);
                }
                _ => {}
            }
        }
    }
    // An opaque target's file of a task: the one that held the subject it created the
    // task with, in some snapshot.
    for t in 0..n {
        if layouts[t] != Layout::Opaque {
            continue;
        }
        for (id, subject) in &subject_of[t] {
            let found = snaps.iter().find_map(|(_, s)| {
                s.task_files()
                    .find(|(_, e)| e.subject.as_deref() == Some(subject))
                    .map(|(name, _)| name.clone())
            });
            if let Some(f) = found {
                files_of[t].insert(*id, f);
            }
        }
    }
    let owner_in = |e: &files::Entry| {
        e.subject
            .as_deref()
            .and_then(|s| files::owner_of_subject(s, n))
    };

    // What befell each target's files.
    let mut fates: Vec<BTreeMap<String, Fate>> = vec![BTreeMap::new(); n];
    for t in 0..n {
        for (id, f) in &files_of[t] {
            if deleted[t].contains(id) {
                continue;
            }
            match last.files.get(f) {
                Some(e) => {
                    if let Some(u) = owner_in(e).filter(|&u| u != t) {
                        // The first snapshot after which the file held U's task.
                        let when = snaps
                            .windows(2)
                            .find(|w| {
                                w[1].1.files.get(f).and_then(owner_in) == Some(u)
                                    && w[0].1.files.get(f).and_then(owner_in) != Some(u)
                            })
                            .map(|w| format!("between \"{}\" and \"{}\"", w[0].0, w[1].0))
                            .unwrap_or_else(|| "during the run".into());
                        fates[t].insert(
                            f.clone(),
                            Fate {
                                what: "replaced",
                                by: Some(u),
                                when,
                                evidence: format!(
                                    "{LIST}/{f} holds a task with {}'s tag ({:?})",
                                    l(u),
                                    e.subject.as_deref().unwrap_or_default()
                                ),
                            },
                        );
                    }
                }
                None => {
                    let seen = log.removals.iter().rev().find(|r| &r.file == f);
                    let phase = seen.map(|r| r.phase);
                    let others: Vec<usize> = (0..n).filter(|&u| u != t).collect();
                    let (by, why) = match phase {
                        Some(p) if p < n && p != t => {
                            (Some(p), format!("it went while only {}'s setup ran", l(p)))
                        }
                        _ if !acts[t] && others.len() == 1 => (
                            Some(others[0]),
                            format!(
                                "{} acts only inside a request and sent no delete of it; {} is the only other target",
                                l(t),
                                l(others[0])
                            ),
                        ),
                        _ => (
                            None,
                            format!(
                                "{} sent no delete of it, but its sessions can act between requests too",
                                l(t)
                            ),
                        ),
                    };
                    fates[t].insert(
                        f.clone(),
                        Fate {
                            what: "removed",
                            by,
                            when: phase
                                .map(|p| phase_words(p, n))
                                .unwrap_or_else(|| "unseen by the watcher".into()),
                            evidence: format!("{LIST}/{f} is gone at the end; {why}"),
                        },
                    );
                }
            }
        }
    }
    let mut effects: Vec<Effect> = Vec::new();
    for t in 0..n {
        let mut groups: BTreeMap<(Option<usize>, &'static str, String), Vec<&Fate>> =
            BTreeMap::new();
        let mut names_of: BTreeMap<(Option<usize>, &'static str, String), Vec<String>> =
            BTreeMap::new();
        for (f, fate) in &fates[t] {
            let key = (fate.by, fate.what, fate.when.clone());
            groups.entry(key.clone()).or_default().push(fate);
            names_of.entry(key).or_default().push(format!("{LIST}/{f}"));
        }
        for ((by, what, when), fs) in groups {
            let examples: Vec<String> = names_of[&(by, what, when.clone())]
                .iter()
                .take(5)
                .cloned()
                .collect();
            effects.push(Effect {
                by: by.map(|u| names[u].clone()),
                on: names[t].clone(),
                what: what.into(),
                file: "task files".into(),
                when,
                count: fs.len(),
                examples,
                evidence: fs[0].evidence.clone(),
            });
        }
    }

    // The special files: states at each snapshot, kind changes the watcher saw, and who
    // deleted or replaced whose (read from the setups, which run alone).
    let mut special = Vec::new();
    for name in files::SPECIAL {
        let states: Vec<FileState> = snaps
            .iter()
            .map(|(when, s)| FileState {
                when: when.clone(),
                kind: s.kind(name),
                content: s
                    .files
                    .get(name)
                    .and_then(|e| e.preview.clone())
                    .filter(|p| !p.is_empty()),
            })
            .collect();
        let changes: Vec<KindChange> = log
            .changes
            .iter()
            .filter(|(c, _)| c.file == name)
            .map(|(c, &seen)| KindChange {
                during: phase_words(c.phase, n),
                from: c.from,
                to: c.to,
                seen,
            })
            .collect();
        // Who made each kind: a target whose setup, alone, turned the file into it.
        let before_after = |t: usize| (snaps[t].1.kind(name), snaps[t + 1].1.kind(name));
        let seen_in = |t: usize, from: Option<FileKind>, to: Option<FileKind>| -> usize {
            log.changes
                .iter()
                .filter(|(c, _)| {
                    c.file == name
                        && c.phase == t
                        && from.is_none_or(|k| c.from == k)
                        && to.is_none_or(|k| c.to == k)
                })
                .map(|(_, &k)| k)
                .sum()
        };
        let maker = |kind: FileKind| -> Option<usize> {
            (0..n).find(|&t| {
                let (b, a) = before_after(t);
                (a == kind && b != kind) || seen_in(t, None, Some(kind)) > 0
            })
        };
        // Who was seen, alone, deleting or replacing a file of each kind.
        let mut undoers: BTreeMap<FileKind, BTreeSet<usize>> = BTreeMap::new();
        for u in 0..n {
            let (b, a) = before_after(u);
            for kind in [
                FileKind::Empty,
                FileKind::Json,
                FileKind::NotJson,
                FileKind::Folder,
            ] {
                if seen_in(u, Some(kind), None) > 0 || (b == kind && a != kind) {
                    undoers.entry(kind).or_default().insert(u);
                }
            }
        }
        for u in 0..n {
            let (b, a) = before_after(u);
            for kind in [
                FileKind::Empty,
                FileKind::Json,
                FileKind::NotJson,
                FileKind::Folder,
            ] {
                let Some(t) = maker(kind).filter(|&t| t != u) else {
                    continue;
                };
                let deleted_seen = seen_in(u, Some(kind), Some(FileKind::Missing));
                let gone = b == kind && a == FileKind::Missing;
                let replaced_seen: usize = [
                    FileKind::Empty,
                    FileKind::Json,
                    FileKind::NotJson,
                    FileKind::Folder,
                ]
                .into_iter()
                .filter(|&k| k != kind && k != FileKind::Missing)
                .map(|k| seen_in(u, Some(kind), Some(k)))
                .sum();
                if deleted_seen > 0 || gone {
                    effects.push(Effect {
                        by: Some(names[u].clone()),
                        on: names[t].clone(),
                        what: "deleted".into(),
                        file: name.into(),
                        when: phase_words(u, n),
                        // The one file the earlier setup left; the evidence gives what was seen.
                        count: 1,
                        examples: Vec::new(),
                        evidence: format!(
                            "{}'s setup left {name} {}; while only {}'s setup ran it went from {} to missing{}",
                            l(t),
                            kind.words(),
                            l(u),
                            kind.words(),
                            if gone {
                                format!(", and was {} after it", a.words())
                            } else {
                                format!(" ({deleted_seen} times seen)")
                            }
                        ),
                    });
                } else if replaced_seen > 0 || (b == kind && a != kind) {
                    effects.push(Effect {
                        by: Some(names[u].clone()),
                        on: names[t].clone(),
                        what: "replaced".into(),
                        file: name.into(),
                        when: phase_words(u, n),
                        count: 1,
                        examples: Vec::new(),
                        evidence: format!(
                            "{}'s setup left {name} {}; while only {}'s setup ran it became {}",
                            l(t),
                            kind.words(),
                            l(u),
                            a.words()
                        ),
                    });
                }
            }
        }
        // During the race: a file of a kind one target makes, gone or turned into another
        // kind, put on the one other target seen doing that alone.
        for kind in [
            FileKind::Empty,
            FileKind::Json,
            FileKind::NotJson,
            FileKind::Folder,
        ] {
            // A kind is the target's whose setup left the file so, when only one did.
            // Another may make it for a moment (a `.lock` created empty and written
            // after): then some of what was seen may be that target's own.
            let makers: Vec<usize> = (0..n)
                .filter(|&t| {
                    let (b, a) = before_after(t);
                    a == kind && b != kind
                })
                .collect();
            let [t] = makers[..] else { continue };
            let fleeting: Vec<char> = (0..n)
                .filter(|&u| u != t && seen_in(u, None, Some(kind)) > 0)
                .map(l)
                .collect();
            let caveat = if fleeting.is_empty() {
                String::new()
            } else {
                format!(
                    " ({} also made it {} for a moment while its setup ran, so some of these may be its own)",
                    fleeting
                        .iter()
                        .map(char::to_string)
                        .collect::<Vec<_>>()
                        .join(" and "),
                    kind.words()
                )
            };
            let seen: usize = changes
                .iter()
                .filter(|c| c.during == phase_words(n, n) && c.from == kind && c.to != kind)
                .map(|c| c.seen)
                .sum();
            if seen == 0 {
                continue;
            }
            let others: Vec<usize> = undoers
                .get(&kind)
                .into_iter()
                .flatten()
                .copied()
                .filter(|&u| u != t)
                .collect();
            let by = (others.len() == 1).then(|| others[0]);
            effects.push(Effect {
                by: by.map(|u| names[u].clone()),
                on: names[t].clone(),
                what: "deleted or replaced".into(),
                file: name.into(),
                when: phase_words(n, n),
                count: seen,
                examples: Vec::new(),
                evidence: match by {
                    Some(u) => format!(
                        "{} {name}, as {}'s setup left it, went missing or changed kind {seen} times (seen){caveat}; {} is the only other target seen doing that alone",
                        a_kind(kind),
                        l(t),
                        l(u)
                    ),
                    None => format!(
                        "{} {name}, as {}'s setup left it, went missing or changed kind {seen} times (seen){caveat}; no single other target was seen doing that alone",
                        a_kind(kind),
                        l(t)
                    ),
                },
            });
        }
        special.push(SpecialFile {
            file: name.into(),
            states,
            changes,
        });
    }

    // Task files on disk that each target's final listing does not show.
    let mut hidden = Vec::new();
    for (t, listed) in full.iter().enumerate() {
        let shown: BTreeSet<String> = if layouts[t] == Layout::Opaque {
            let subjects: BTreeSet<&str> = listed.iter().map(|x| x.subject.as_str()).collect();
            last.task_files()
                .filter(|(_, e)| e.subject.as_deref().is_some_and(|s| subjects.contains(s)))
                .map(|(f, _)| f.clone())
                .collect()
        } else {
            listed
                .iter()
                .filter_map(|x| layouts[t].file_name(x.id))
                .collect()
        };
        let mut by_owner: BTreeMap<Option<usize>, Vec<String>> = BTreeMap::new();
        for (f, e) in last.task_files() {
            if shown.contains(f) {
                continue;
            }
            let owner =
                owner_in(e).or_else(|| (0..n).find(|&u| files_of[u].values().any(|x| x == f)));
            by_owner
                .entry(owner)
                .or_default()
                .push(format!("{LIST}/{f}"));
        }
        for (owner, fs) in by_owner {
            hidden.push(Hidden {
                listing: names[t].clone(),
                owner: owner.map(|u| names[u].clone()),
                files: fs.len(),
                examples: fs.into_iter().take(3).collect(),
            });
        }
    }

    let report = FilesReport {
        targets: (0..n)
            .map(|t| format!("{} = {} ({})", l(t), names[t], layouts[t].as_str()))
            .collect(),
        special,
        effects,
        hidden,
        shown: Vec::new(),
        check: Some(files::check_folder(folder)),
    };
    // Task files gone in the settle phase, with no request in flight.
    let settle = settle.map(|seconds| SettleReport {
        seconds,
        vanished: log
            .removals
            .iter()
            .filter(|r| r.phase == n + 1)
            .map(|r| {
                let owner = (0..n).find(|&t| files_of[t].values().any(|f| *f == r.file));
                let fate = owner.and_then(|t| fates[t].get(&r.file));
                let charged_to = match (owner, fate.and_then(|f| f.by)) {
                    (_, Some(u)) => names[u].clone(),
                    (Some(t), None) => {
                        format!("{} or another target: the evidence cannot tell", names[t])
                    }
                    (None, None) => "unknown: no target's task file by name or content".into(),
                };
                VanishedFile {
                    file: format!("{LIST}/{}", r.file),
                    after_s: (r.after.as_secs_f64() * 1000.0).round() / 1000.0,
                    charged_to,
                    evidence: fate.map_or_else(
                        || {
                            "the file was gone in the settle phase, with no request in flight"
                                .into()
                        },
                        |f| f.evidence.clone(),
                    ),
                }
            })
            .collect(),
    });
    OwnRun {
        workload,
        targets: names,
        layouts,
        parts,
        files_of,
        fates,
        files: report,
        settle,
        writers: Vec::new(),
    }
}

/// "an empty", "a JSON", ...
fn a_kind(kind: FileKind) -> String {
    match kind {
        FileKind::Empty => "an empty".into(),
        FileKind::Folder => "a folder as".into(),
        k => format!("a {}", k.words()),
    }
}
