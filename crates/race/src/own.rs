//! Mixed races where each target keeps its own tasks: two products that write one list
//! folder, each in its own file names and id scheme (`race --target A --target B` when
//! the targets' layouts differ, or any is `opaque`, or with `--own-tasks`).
//!
//! Each target gets its share of the workload: its own setup session creates its seeds
//! (target A first, then B, each alone), its own `--writers` sessions change only those,
//! and its own final session lists them, read back its own way. Every subject a target
//! writes carries its letter (`A: shared task`), so a task file's owner can be read from
//! the file whoever's naming it follows. Each target's history is checked on its own (the
//! linearizability checker and the lost-change logic), as a race on that target alone
//! would be; the report sums them, with every witness naming its target.
//!
//! Whose loss ([`charge`]). A lost change of target T is T's own unless the driver saw
//! another target do it to T's task file ([`crate::files`]): the file ended holding a task
//! with target U's tag (U wrote a file of the same name: U replaced it), or the file was
//! removed while U's setup ran alone, or removed at another time while T runs in-process
//! (it acts only inside a request), sent no delete of it, and U is the only other target.
//! A loss charged to U counts in U's `lost_of_others`.
//!
//! What each did to the other's files ([`crate::files::FilesReport`]): `.lock` and
//! `.highwatermark` before and after each phase and the kind changes the watcher saw; who
//! deleted or replaced whose `.lock` (read from the setups, which run alone); task files of
//! one target removed or replaced by another; task files on disk that a target's final
//! listing does not show (hidden); and `taskproof check` of the folder afterwards.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use crate::check::{AnomalyKind, Findings, TornRead};
use crate::driver::{Config, DriverError, Progress, Run, list_name, setup};
use crate::files::{
    self, Effect, FileKind, FileState, FilesReport, Hidden, KindChange, Snapshot, SpecialFile,
    WatchLog, Watcher,
};
use crate::history::{Completion, History, KeyTable, Operation};
use crate::mix::{Charge, Mix, TargetLosses};
use crate::readers::scan_corrupt;
use crate::report::{SettleReport, VanishedFile};
use crate::workload::{self, LIST, Workload};
use crate::writer::{Ctx, Orders, release_writers};
use taskproof_core::protocol::{Layout, Request, Response};
use taskproof_core::task::TaskId;
use taskproof_session::SessionOptions;
use taskproof_targets::TargetSpec;

/// `request` with `tag` put before every subject it writes.
pub fn tag_request(request: Request, tag: &str) -> Request {
    match request {
        Request::Create { list, mut task } => {
            task.subject = format!("{tag}{}", task.subject);
            Request::Create { list, task }
        }
        Request::Update {
            list,
            id,
            mut patch,
        } => {
            if let Some(s) = patch.subject.take() {
                patch.subject = Some(format!("{tag}{s}"));
            }
            Request::Update { list, id, patch }
        }
        other => other,
    }
}

/// What befell one of a target's task files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fate {
    /// `removed` or `replaced`.
    pub what: &'static str,
    /// The target that did it, when the evidence says.
    pub by: Option<usize>,
    /// The phase, in words.
    pub when: String,
    pub evidence: String,
}

/// A race where each target kept its own tasks.
#[derive(Debug)]
pub struct OwnRun {
    pub workload: Workload,
    /// The targets' names, in order (A, B, ...).
    pub targets: Vec<String>,
    pub layouts: Vec<Layout>,
    /// Each target's own run: its history (its setup and its writers), its final listing.
    pub parts: Vec<Run>,
    /// Per target: the task files the driver knows are its tasks', by task id.
    pub files_of: Vec<BTreeMap<TaskId, String>>,
    /// Per target: what befell its task files (by file name), by others or unknown hands.
    pub fates: Vec<BTreeMap<String, Fate>>,
    pub files: FilesReport,
    /// The settle phase, when there was one: the task files that vanished meanwhile.
    pub settle: Option<SettleReport>,
}

/// The phases of a run, in order: each target's setup, the race, the settle phase, the
/// final listings.
fn phase_words(p: usize, n: usize) -> String {
    match p {
        p if p < n => format!("during {}'s setup, alone", files::letter(p)),
        p if p == n => "during the race".into(),
        p if p == n + 1 => "in the settle phase".into(),
        _ => "during the final listings".into(),
    }
}

/// Runs one workload with each target on its own tasks, on a fresh root.
pub fn run_own(
    cfg: &Config,
    mix: &Mix,
    w: Workload,
    root: &Path,
    progress: Option<Progress<'_>>,
) -> Result<OwnRun, DriverError> {
    let targets = mix.targets.clone();
    let n = targets.len();
    let per = cfg.writers;
    let writers = per * n;
    std::fs::create_dir_all(root).map_err(|source| DriverError::Root {
        path: root.to_path_buf(),
        source,
    })?;
    let folder = root.join(LIST);
    let watcher = Watcher::start(folder.clone());
    let mut snaps: Vec<(String, Snapshot)> =
        vec![("before the run".into(), Snapshot::take(&folder))];
    let mut ctx = Ctx {
        targets: targets.clone(),
        per_target: per,
        mixed: true,
        root: root.to_path_buf(),
        options: SessionOptions {
            timeout: cfg.timeout,
            durable: cfg.fsync,
            drive: cfg.drive,
            ..SessionOptions::default()
        },
        start: Instant::now(),
        next_session: AtomicU32::new(0),
        keys: Arc::new(KeyTable::default()),
    };
    let mut setup_ops: Vec<Vec<Operation>> = Vec::new();
    let mut ids: Vec<Vec<TaskId>> = Vec::new();
    for (t, target) in targets.iter().enumerate() {
        watcher.phase(t);
        let mut ops = Vec::new();
        let got = setup(
            &mut ctx,
            t,
            t == 0,
            Some(&files::tag(t)),
            w,
            per,
            cfg.ops,
            &mut ops,
        )
        .map_err(|e| match e {
            DriverError::Unsupported(why) => DriverError::Unsupported(format!("{target}: {why}")),
            e => e,
        })?;
        ids.push(got);
        setup_ops.push(ops);
        snaps.push((
            format!("after {}'s setup", files::letter(t)),
            Snapshot::take(&folder),
        ));
    }
    let setup_end = ctx.now();
    let plans: Vec<Vec<Request>> = (0..writers)
        .map(|i| {
            let t = i / per;
            let tag = files::tag(t);
            workload::plan(w, i % per, per, cfg.ops, &ids[t], cfg.seed)
                .into_iter()
                .map(|r| tag_request(r, &tag))
                .collect()
        })
        .collect();
    let mut keys = History::default();
    for r in plans.iter().flatten() {
        keys.intern_request(r);
    }
    ctx.keys = Arc::new(keys.keys.clone());
    let planned: Vec<usize> = (0..n)
        .map(|t| plans[t * per..(t + 1) * per].iter().map(Vec::len).sum())
        .collect();
    let planned_all: usize = planned.iter().sum();

    let mut sessions = Vec::new();
    for i in 0..writers {
        let mut open = ctx
            .open_target(ctx.target_of(i))
            .map_err(DriverError::Open)?;
        open.session
            .request(&Request::List { list: list_name() })
            .map_err(DriverError::Open)?;
        sessions.push(open);
    }
    let layouts: Vec<Layout> = (0..n)
        .map(|t| sessions[t * per].session.hello().layout)
        .collect();
    let mut known: Vec<Layout> = Vec::new();
    for &l in &layouts {
        if l != Layout::Opaque && !known.contains(&l) {
            known.push(l);
        }
    }
    let orders = &Orders {
        seed: cfg.seed,
        kill: cfg.kill,
        duration: cfg.duration,
        think: mix.think,
    };
    watcher.phase(n);
    let ctx = &ctx;
    let readers: Vec<Layout> = known
        .iter()
        .flat_map(|&l| std::iter::repeat_n(l, cfg.readers))
        .collect();
    let (outs, reads, elapsed, released) = release_writers(
        ctx,
        orders,
        plans,
        sessions,
        &folder,
        &readers,
        progress,
        planned_all,
    );
    let end = ctx.now();
    snaps.push(("after the race".into(), Snapshot::take(&folder)));
    if !cfg.settle.is_zero() {
        watcher.phase(n + 1);
        std::thread::sleep(cfg.settle);
        snaps.push(("after the settle phase".into(), Snapshot::take(&folder)));
    }

    // Each target's operations, on one clock (the writers' start-up cut out, as in a race
    // on one target).
    let mut per_ops: Vec<Vec<Operation>> = setup_ops;
    let mut per_kills = vec![0; n];
    let mut per_errors: Vec<Vec<String>> = vec![Vec::new(); n];
    let mut idle = Vec::new();
    for (i, o) in outs.into_iter().enumerate() {
        let t = i / per;
        per_ops[t].extend(o.ops);
        per_kills[t] += o.kills;
        per_errors[t].extend(o.errors);
        idle.extend(o.open);
    }
    let released = per_ops
        .iter()
        .flatten()
        .filter(|o| o.writer.is_some())
        .map(|o| o.invoke)
        .min()
        .unwrap_or(released);
    let gap = released
        .saturating_sub(setup_end)
        .saturating_sub(Duration::from_micros(1));
    let shift = |t: Duration| {
        if t >= released {
            t - gap
        } else {
            t.min(setup_end)
        }
    };
    let (released, end) = (shift(released), shift(end.max(released)));

    // Raw reads and torn states, by the target whose tasks' files they are.
    let mut created: Vec<BTreeSet<TaskId>> = vec![BTreeSet::new(); n];
    for (t, ops) in per_ops.iter().enumerate() {
        for op in ops {
            if let (Request::Create { .. }, Some(id)) = (&op.request, op.task_id()) {
                created[t].insert(id);
            }
        }
    }
    let owner_of_file = |file_name: &str| -> Option<usize> {
        let mine = |t: usize| {
            layouts[t]
                .task_id_of(file_name)
                .is_some_and(|id| created[t].contains(&id))
        };
        (0..n)
            .find(|&t| mine(t))
            .or_else(|| (0..n).find(|&t| layouts[t].task_id_of(file_name).is_some()))
    };
    let mut raw_reads = vec![0; n];
    let mut torn_reads = vec![0; n];
    let mut torn: Vec<HashMap<String, TornRead>> = vec![HashMap::new(); n];
    for (layout, r) in reads {
        let first = (0..n).find(|&t| layouts[t] == layout).unwrap_or(0);
        raw_reads[first] += r.reads;
        for ((file, _state), mut tr) in r.torn {
            let name = file.rsplit('/').next().unwrap_or(&file).to_string();
            let t = owner_of_file(&name).unwrap_or(first);
            torn_reads[t] += tr.reads;
            tr.at = shift(tr.at);
            torn[t]
                .entry(format!("{file}@{}", tr.at.as_nanos()))
                .or_insert(tr);
        }
    }

    // Each target's final listing, its own way.
    watcher.phase(n + 2);
    let mut finals = Vec::new();
    for (t, target) in targets.iter().enumerate() {
        let mut last = ctx.open_target(t).map_err(DriverError::Open)?;
        let listed = match last.session.request(&Request::List { list: list_name() }) {
            Ok(Response::Tasks { tasks, corrupt }) => (tasks, corrupt),
            Ok(other) => {
                return Err(DriverError::Final(format!("{target}: {}", other.to_json())));
            }
            Err(e) => return Err(DriverError::Final(format!("{target}: {e}"))),
        };
        let _ = last.session.close();
        finals.push(listed);
    }
    for mut o in idle {
        let _ = o.session.close();
    }
    snaps.push(("at the end".into(), Snapshot::take(&folder)));
    let log = watcher.finish();
    let sessions_total = ctx.next_session.load(Ordering::SeqCst);

    // A listing that shows another target's tasks (their subjects carry its tag) shows
    // them; they are counted in the files' report and left out of the target's own check.
    let mut foreign: Vec<(usize, usize, Vec<String>)> = Vec::new();
    let full: Vec<Vec<taskproof_core::task::Task>> =
        finals.iter().map(|(tasks, _)| tasks.clone()).collect();
    let finals: Vec<_> = finals
        .into_iter()
        .enumerate()
        .map(|(t, (tasks, corrupt))| {
            let mut others: BTreeMap<usize, Vec<String>> = BTreeMap::new();
            let own: Vec<_> = tasks
                .into_iter()
                .filter(|x| match files::owner_of_subject(&x.subject, n) {
                    Some(u) if u != t => {
                        others.entry(u).or_default().push(x.id.to_string());
                        false
                    }
                    _ => true,
                })
                .collect();
            for (u, ids) in others {
                foreign.push((t, u, ids));
            }
            (own, corrupt)
        })
        .collect();
    let mut parts = Vec::new();
    for (t, ((ops, (final_tasks, listed_corrupt)), torn_t)) in
        per_ops.into_iter().zip(finals).zip(torn).enumerate()
    {
        let mut history = History {
            info_bounded: true,
            keys: ctx.keys.as_ref().clone(),
            ..History::default()
        };
        let mut ops = ops;
        ops.sort_by_key(|o| (o.invoke, o.session));
        let sessions: BTreeSet<u32> = ops.iter().map(|o| o.session).collect();
        for mut op in ops {
            op.invoke = shift(op.invoke);
            match &mut op.completion {
                Completion::Ok { at, .. }
                | Completion::Fail { at, .. }
                | Completion::Info { at, .. } => *at = shift(*at),
            }
            history.push(op);
        }
        let mut corrupt: Vec<(String, String)> = if layouts[t] == Layout::Opaque {
            Vec::new()
        } else {
            scan_corrupt(&folder, layouts[t])
                .into_iter()
                .filter(|(f, _)| {
                    let name = f.rsplit('/').next().unwrap_or(f);
                    owner_of_file(name) == Some(t)
                })
                .collect()
        };
        for name in listed_corrupt {
            let name = format!("{LIST}/{name}");
            if !corrupt.iter().any(|(c, _)| *c == name) {
                corrupt.push((name, "named corrupt by the target's listing".into()));
            }
        }
        let mut torn_t: Vec<TornRead> = torn_t.into_values().collect();
        torn_t.sort_by(|a, b| (a.at, &a.file, a.reader).cmp(&(b.at, &b.file, b.reader)));
        parts.push(Run {
            workload: w,
            history,
            final_tasks,
            corrupt,
            torn: torn_t,
            torn_reads: torn_reads[t],
            raw_reads: raw_reads[t],
            planned: planned[t],
            elapsed,
            released,
            end,
            kills: per_kills[t],
            // Its setup's, its writers' and its final listing's sessions.
            sessions: sessions.len() as u32 + 1,
            errors: std::mem::take(&mut per_errors[t]),
            layout: layouts[t],
            targets: Vec::new(),
            writer_targets: Vec::new(),
            settle: None,
        });
    }
    debug_assert!(parts.iter().map(|p| p.sessions).sum::<u32>() <= sessions_total);
    let names: Vec<String> = targets.iter().map(ToString::to_string).collect();
    let acts: Vec<bool> = targets
        .iter()
        .map(TargetSpec::acts_between_requests)
        .collect();
    let settle = (!cfg.settle.is_zero()).then_some(cfg.settle.as_secs_f64());
    let mut run = judge_files(
        w, names, layouts, acts, parts, &full, &snaps, &log, &folder, settle,
    );
    run.files.shown = foreign
        .into_iter()
        .map(|(t, u, ids)| files::Shown {
            listing: run.targets[t].clone(),
            owner: run.targets[u].clone(),
            tasks: ids.len(),
            ids: ids.into_iter().take(5).collect(),
        })
        .collect();
    Ok(run)
}

/// Works out the file effects of a finished run from its snapshots and the watcher's log.
#[allow(clippy::too_many_arguments)]
fn judge_files(
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
    }
}

/// Charges each lost change of each target (see the module's text), and counts each
/// target's requests. `findings[t]` are target `t`'s own findings.
pub fn charge(run: &OwnRun, findings: &[Findings]) -> (Vec<TargetLosses>, Vec<Charge>) {
    let n = run.targets.len();
    let mut per: Vec<TargetLosses> = run
        .parts
        .iter()
        .enumerate()
        .map(|(t, p)| {
            let writers: BTreeSet<u32> = p.history.ops.iter().filter_map(|o| o.writer).collect();
            let mut tl = TargetLosses {
                target: run.targets[t].clone(),
                writers: writers.len(),
                ..TargetLosses::default()
            };
            for op in p.history.ops.iter().filter(|o| o.writer.is_some()) {
                tl.requests += 1;
                if matches!(op.completion, Completion::Ok { .. }) {
                    tl.acknowledged += 1;
                }
            }
            tl
        })
        .collect();
    let mut charges = Vec::new();
    for (t, f) in findings.iter().enumerate().take(n) {
        let p = &run.parts[t];
        for w in f.witnesses.iter().filter(|w| w.kind == AnomalyKind::Lost) {
            let Some(&acked) = w.ops.first() else {
                continue;
            };
            let change = &p.history.ops[acked];
            let locked = crate::mix::under_lock(&run.targets[t], &change.request);
            let fate = w
                .task
                .and_then(|id| run.files_of[t].get(&id))
                .and_then(|file| run.fates[t].get(file));
            let (charged, why) = match fate {
                Some(Fate {
                    by: Some(u),
                    what,
                    when,
                    evidence,
                }) if *u != t => (
                    *u,
                    Some(format!(
                        "{} {what} the task's file {when}: {evidence}",
                        files::letter(*u)
                    )),
                ),
                Some(fate) => (
                    t,
                    Some(format!(
                        "the task's file was {}: {}",
                        fate.what, fate.evidence
                    )),
                ),
                // A change made under the list's lock, lost while another target deleted
                // that lock: said, though the dropping write was its own target's.
                None => (t, locked.then(|| lock_note(run, t)).flatten()),
            };
            per[charged].lost += 1;
            if charged == t {
                per[t].lost_own += 1;
            } else {
                per[charged].lost_of_others += 1;
            }
            charges.push(Charge {
                ops: w.ops.clone(),
                acknowledged_by: run.targets[t].clone(),
                under_lock: locked,
                dropped_by: (w.ops.len() > 1).then(|| run.targets[t].clone()),
                charged_to: run.targets[charged].clone(),
                why,
            });
        }
    }
    (per, charges)
}

/// "an empty", "a JSON", ...
fn a_kind(kind: FileKind) -> String {
    match kind {
        FileKind::Empty => "an empty".into(),
        FileKind::Folder => "a folder as".into(),
        k => format!("a {}", k.words()),
    }
}

/// For a loss of target `t`'s own: another target deleted or replaced `t`'s `.lock`
/// during the race, when the report saw it (the loss is still `t`'s writers' doing).
fn lock_note(run: &OwnRun, t: usize) -> Option<String> {
    let e = run.files.effects.iter().find(|e| {
        e.file == ".lock"
            && e.on == run.targets[t]
            && e.when == phase_words(run.targets.len(), run.targets.len())
            && e.by.as_ref().is_some_and(|b| *b != run.targets[t])
    })?;
    Some(format!(
        "dropped by {}'s own writers; meanwhile {} {} {}'s `.lock` {} times during the race (seen)",
        files::letter(t),
        e.by.as_deref()
            .and_then(|b| run.targets.iter().position(|x| x == b))
            .map_or('?', files::letter),
        e.what,
        files::letter(t),
        e.count
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::Witness;
    use crate::files::{Entry, SeenChange, SeenRemoval};
    use crate::history::TaskView;
    use taskproof_core::task::{NewTask, Patch, Task};

    fn entry(kind: FileKind, subject: Option<&str>) -> Entry {
        Entry {
            kind,
            subject: subject.map(str::to_string),
            preview: None,
        }
    }

    fn snap(files: &[(&str, Entry)]) -> Snapshot {
        Snapshot {
            files: files
                .iter()
                .map(|(n, e)| (n.to_string(), e.clone()))
                .collect(),
        }
    }

    /// A part whose setup created task 1 with `subject`, and nothing else.
    fn part_with_task_1(layout: Layout, subject: &str) -> Run {
        let keys = KeyTable::default();
        let mut history = History::default();
        history.push(Operation {
            index: 0,
            session: 0,
            writer: None,
            request: Request::Create {
                list: list_name(),
                task: NewTask::new(subject),
            },
            invoke: Duration::ZERO,
            completion: Completion::Ok {
                at: Duration::from_millis(1),
                task: Some(TaskView::new(&Task::new(TaskId(1), subject), &keys)),
            },
        });
        Run {
            workload: Workload::Metadata,
            history,
            final_tasks: Vec::new(),
            corrupt: Vec::new(),
            torn: Vec::new(),
            torn_reads: 0,
            raw_reads: 0,
            planned: 0,
            elapsed: Duration::ZERO,
            released: Duration::ZERO,
            end: Duration::ZERO,
            kills: 0,
            sessions: 1,
            errors: Vec::new(),
            layout,
            targets: Vec::new(),
            writer_targets: Vec::new(),
            settle: None,
        }
    }

    /// A's task file 1.json and its empty `.lock` (left by A's setup), then B's setup and
    /// the race; `gone_in` is the phase the watcher saw 1.json go in.
    fn judged(gone_in: usize, a_acts: bool) -> OwnRun {
        let a_left = snap(&[
            ("1.json", entry(FileKind::Json, Some("A: t"))),
            (".lock", entry(FileKind::Empty, None)),
        ]);
        let b_left = if gone_in == 1 {
            snap(&[])
        } else {
            snap(&[("1.json", entry(FileKind::Json, Some("A: t")))])
        };
        let snaps = vec![
            ("before the run".to_string(), snap(&[])),
            ("after A's setup".to_string(), a_left),
            ("after B's setup".to_string(), b_left),
            ("at the end".to_string(), snap(&[])),
        ];
        let mut log = WatchLog::default();
        log.changes.insert(
            SeenChange {
                file: ".lock",
                phase: 1,
                from: FileKind::Empty,
                to: FileKind::Missing,
            },
            1,
        );
        log.removals.push(SeenRemoval {
            file: "1.json".into(),
            phase: gone_in,
            after: Duration::from_millis(3),
        });
        let parts = vec![
            part_with_task_1(Layout::ClaudeCode, "A: t"),
            part_with_task_1(Layout::Opaque, "B: t"),
        ];
        let none = tempfile::tempdir().unwrap();
        judge_files(
            Workload::Metadata,
            vec!["a".into(), "b".into()],
            vec![Layout::ClaudeCode, Layout::Opaque],
            vec![a_acts, true],
            parts,
            &[Vec::new(), Vec::new()],
            &snaps,
            &log,
            &none.path().join(LIST),
            None,
        )
    }

    fn lost_task_1() -> Vec<Findings> {
        let w = Witness {
            kind: AnomalyKind::Lost,
            task: Some(TaskId(1)),
            text: "lost".into(),
            ops: vec![0],
            at: None,
            observation: false,
            target: None,
        };
        vec![
            Findings {
                witnesses: vec![w],
                ..Findings::default()
            },
            Findings::default(),
        ]
    }

    #[test]
    fn a_file_gone_while_only_the_other_target_ran_is_its_doing() {
        let run = judged(1, true);
        let fate = &run.fates[0]["1.json"];
        assert_eq!((fate.what, fate.by), ("removed", Some(1)));
        assert_eq!(fate.when, "during B's setup, alone");
        let (per, charges) = charge(&run, &lost_task_1());
        assert_eq!(charges[0].charged_to, "b");
        assert_eq!((per[0].lost, per[1].lost, per[1].lost_of_others), (0, 1, 1));
        // A's setup left `.lock` empty and B's, alone, deleted it.
        assert!(
            run.files
                .effects
                .iter()
                .any(|e| e.by.as_deref() == Some("b")
                    && e.on == "a"
                    && e.what == "deleted"
                    && e.file == ".lock")
        );
    }

    #[test]
    fn a_file_gone_during_the_race_is_put_on_the_other_only_when_its_own_target_cannot_act() {
        // A runs in-process: it removes a file only inside a request, and sent no delete.
        let run = judged(2, false);
        assert_eq!(run.fates[0]["1.json"].by, Some(1));
        assert_eq!(charge(&run, &lost_task_1()).1[0].charged_to, "b");
        // A's sessions are processes too: the evidence cannot tell, so the loss is A's.
        let run = judged(2, true);
        let fate = &run.fates[0]["1.json"];
        assert_eq!((fate.what, fate.by), ("removed", None));
        let (per, charges) = charge(&run, &lost_task_1());
        assert_eq!(charges[0].charged_to, "a");
        assert_eq!((per[0].lost_own, per[1].lost), (1, 0));
        assert!(
            run.files
                .effects
                .iter()
                .any(|e| e.by.is_none() && e.on == "a" && e.what == "removed"),
            "{:?}",
            run.files.effects
        );
    }

    #[test]
    fn tags_go_on_every_subject_written() {
        let list = list_name();
        let create = tag_request(
            Request::Create {
                list: list.clone(),
                task: NewTask::new("w0-1"),
            },
            "B: ",
        );
        let Request::Create { task, .. } = create else {
            unreachable!()
        };
        assert_eq!(task.subject, "B: w0-1");
        let update = tag_request(
            Request::Update {
                list,
                id: TaskId(3),
                patch: Patch {
                    subject: Some("s".into()),
                    ..Patch::default()
                },
            },
            "A: ",
        );
        let Request::Update { patch, .. } = update else {
            unreachable!()
        };
        assert_eq!(patch.subject.as_deref(), Some("A: s"));
    }
}
