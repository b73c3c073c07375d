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

mod charge;
mod judge;

pub use charge::{charge, charge_writers, dropping_request, overlapping, writer_label};
use judge::judge_files;

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
use crate::mix::{Charge, Mix, TargetLosses, WriterLosses};
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
    /// Every race writer, by writer number: its target and, for a member of an agent team,
    /// its member (`lead`, `w1`, ...).
    pub writers: Vec<WriterOf>,
}

/// Whose a race writer is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriterOf {
    pub target: usize,
    /// `lead` or a teammate's name for a member of an agent team; `None` otherwise.
    pub member: Option<String>,
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
    let targets = mix.targets_or(&cfg.target);
    let n = targets.len();
    let per = cfg.writers;
    // A target with agent teams gives each of its writers `mix.teammates` teammates, each a
    // writer of its own in the lead's process.
    let teamed: Vec<bool> = targets
        .iter()
        .map(|t| mix.teammates > 0 && t.has_teams())
        .collect();
    if mix.teammates > 0 && !teamed.contains(&true) {
        return Err(DriverError::Unsupported(
            "--teammates: no target has agent teams (claude-code@VERSION:teams-env)".into(),
        ));
    }
    if mix.teammates > 0 && cfg.kill {
        return Err(DriverError::Unsupported(
            "--kill with --teammates: a team's members run in one process and are not replaced alone".into(),
        ));
    }
    let counts: Vec<usize> = teamed
        .iter()
        .map(|&team| if team { per * (1 + mix.teammates) } else { per })
        .collect();
    let writers: usize = counts.iter().sum();
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
        counts: counts.clone(),
        teamed: teamed.clone(),
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
            counts[t],
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
            let t = ctx.target_of(i);
            let tag = files::tag(t);
            let k = i - ctx.first_writer(t);
            workload::plan(w, k, counts[t], cfg.ops, &ids[t], cfg.seed)
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
        .map(|t| {
            let first = ctx.first_writer(t);
            plans[first..first + counts[t]].iter().map(Vec::len).sum()
        })
        .collect();
    let planned_all: usize = planned.iter().sum();

    // Each writer's session, warmed up with a listing before the release (a team's lead
    // starts its CLI and spawns its teammates then).
    let mut sessions = Vec::new();
    let mut writer_of = Vec::new();
    let members = crate::mix::teammate_names(mix.teammates);
    for (t, target) in targets.iter().enumerate() {
        if teamed[t] {
            for _ in 0..per {
                let team = target
                    .open_team(root, ctx.options.clone(), &members)
                    .map_err(DriverError::Open)?;
                for (k, session) in team.into_iter().enumerate() {
                    let id = ctx.next_session.fetch_add(1, Ordering::SeqCst);
                    sessions.push(crate::writer::Open {
                        session,
                        id,
                        pgid: None,
                    });
                    writer_of.push(WriterOf {
                        target: t,
                        member: Some(if k == 0 {
                            "lead".to_string()
                        } else {
                            members[k - 1].clone()
                        }),
                    });
                }
            }
        } else {
            for _ in 0..per {
                sessions.push(ctx.open_target(t).map_err(DriverError::Open)?);
                writer_of.push(WriterOf {
                    target: t,
                    member: None,
                });
            }
        }
    }
    for open in &mut sessions {
        open.session
            .request(&Request::List { list: list_name() })
            .map_err(DriverError::Open)?;
    }
    let layouts: Vec<Layout> = (0..n)
        .map(|t| sessions[ctx.first_writer(t)].session.hello().layout)
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
        let t = ctx.target_of(i);
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
    run.writers = writer_of;
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

#[cfg(test)]
mod tests {
    use super::*;
    use taskproof_core::task::{NewTask, Patch};

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
