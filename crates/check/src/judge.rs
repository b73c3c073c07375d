//! Judging tasks as an audit or a hook reads them: one task object on its own (S15, S17,
//! the schema and status), and a list's tasks together through [`taskproof_core::graph::Graph`]
//! (cycles, tasks stuck behind them, completed tasks with open blockers, one-sided edges,
//! orphan and dangling references); and the order findings are reported in. Reading the
//! folder is [`super::audit`]'s job; the hook judges a change with the same functions.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::finding::{EdgeField, Finding, FindingKind, Repair};
use taskproof_core::graph::{Graph, MissingSide};
use taskproof_core::layout;
use taskproof_core::protocol::Layout;
use taskproof_core::task::{Status, Strictness, Task, TaskId};

/// Judges one task object as read from disk (or from a hook) on its own. Reports each
/// problem through `report` and returns the task when it can be read at all, leniently: a
/// task with an unknown status still has edges an agent follows, so it stays in the graph.
pub fn judge_task_value(
    value: &Value,
    layout: Layout,
    mut report: impl FnMut(FindingKind, String),
) -> Option<Task> {
    let wire = layout::to_wire(layout, value);
    let task = match Task::from_json(&wire, Strictness::Lenient) {
        Ok(t) => t,
        Err(e) => {
            report(FindingKind::Schema, e.to_string());
            return None;
        }
    };
    if let Status::Other(s) = &task.status {
        report(
            FindingKind::UnknownStatus,
            format!("status {s:?} is not one of pending, in_progress, completed"),
        );
    }
    if let Err(e) = Task::from_json(&wire, Strictness::Strict)
        && e.field != "status"
    {
        report(FindingKind::Schema, e.to_string());
    }
    Some(task)
}

/// Judges a list's tasks together: cycles, tasks stuck behind them, completed tasks with open
/// blockers, one-sided edges and references to tasks that are not there.
pub fn judge_tasks(
    list: &str,
    layout: Layout,
    tasks: &[Task],
    present: &BTreeSet<TaskId>,
    bound: u64,
) -> Vec<Finding> {
    let file = |id: TaskId| layout.file_name(id).unwrap_or_else(|| id.to_string());
    let g = Graph::new(tasks);
    let mut out = Vec::new();

    let cycles = g.cycles();
    let mut on_cycle = BTreeSet::new();
    for path in &cycles {
        on_cycle.extend(path.iter().copied());
        let (a, b) = (path[path.len() - 2], path[path.len() - 1]);
        let mut sides = Vec::new();
        if g.get(b).is_some_and(|t| t.blocked_by.contains(&a)) {
            sides.push(format!("{a} from blockedBy of {}", file(b)));
        }
        if g.get(a).is_some_and(|t| t.blocks.contains(&b)) {
            sides.push(format!("{b} from blocks of {}", file(a)));
        }
        let what = taskproof_core::graph::cycle_words(path);
        out.push(
            Finding::new(
                list,
                file(path[0]),
                FindingKind::Cycle,
                format!(
                    "{what}; no task on it can ever start. Removing {} would break it",
                    sides.join(" and ")
                ),
            )
            .involving(path[..path.len() - 1].iter().copied()),
        );
    }

    for id in g.deadlocked() {
        if on_cycle.contains(&id) {
            continue;
        }
        out.push(
            Finding::new(
                list,
                file(id),
                FindingKind::Deadlocked,
                format!(
                    "task {id} can never become ready: it waits, directly or through unfinished tasks, on a dependency cycle"
                ),
            )
            .involving([id]),
        );
    }

    for (id, open) in g.completed_with_unfinished_blockers() {
        out.push(
            Finding::new(
                list,
                file(id),
                FindingKind::CompletedBlocked,
                taskproof_core::graph::completed_words(id, &open),
            )
            .involving(std::iter::once(id).chain(open)),
        );
    }

    for h in g.half_edges() {
        let (holder, lacking, _, _) = h.sides();
        let field = match h.missing {
            MissingSide::BlockedBy => EdgeField::BlockedBy,
            MissingSide::Blocks => EdgeField::Blocks,
        };
        let lacking_file = file(lacking);
        out.push(
            Finding::new(
                list,
                lacking_file.clone(),
                FindingKind::HalfEdge,
                h.words(file),
            )
            .involving([lacking, holder])
            .repair(Repair::AddEdge {
                file: lacking_file,
                field,
                id: holder,
            }),
        );
    }

    for d in g.dangling() {
        if present.contains(&d.missing) {
            continue;
        }
        let field = if d.in_blocked_by {
            EdgeField::BlockedBy
        } else {
            EdgeField::Blocks
        };
        let (kind, why) = if d.missing.get() <= bound {
            (
                FindingKind::Orphan,
                format!(
                    "task {} no longer exists (ids up to {bound} were assigned): a reference its delete left behind",
                    d.missing
                ),
            )
        } else {
            (
                FindingKind::Dangling,
                format!(
                    "no task {} exists or ever did (the highest id assigned is {bound})",
                    d.missing
                ),
            )
        };
        out.push(
            Finding::new(
                list,
                file(d.task),
                kind,
                format!("{} names {}; {why}", field.key(), d.missing),
            )
            .involving([d.task, d.missing])
            .repair(Repair::RemoveRef {
                file: file(d.task),
                field,
                id: d.missing,
            }),
        );
    }

    for id in g.duplicate_ids() {
        out.push(
            Finding::new(
                list,
                file(*id),
                FindingKind::DuplicateId,
                format!("id {id} is given to more than one task"),
            )
            .involving([*id]),
        );
    }
    out
}

/// Orders findings by file (task files by id, then the store's files), then kind.
pub fn sort_findings(findings: &mut [Finding], layout: Layout) {
    findings.sort_by(|a, b| {
        let key = |f: &Finding| {
            (
                layout.task_id_of(&f.file).map_or(u64::MAX, TaskId::get),
                f.file.clone(),
                f.kind,
                f.message.clone(),
            )
        };
        key(a).cmp(&key(b))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_ids_at_or_below_the_bound_are_orphans_and_above_it_dangling() {
        let mut t = Task::new(TaskId(1), "a");
        t.blocked_by = [TaskId(3), TaskId(9)].into_iter().collect();
        let present = [TaskId(1)].into_iter().collect();
        let f = judge_tasks("l", Layout::ClaudeCode, &[t], &present, 5);
        let kinds: Vec<_> = f.iter().map(|f| (f.kind, f.tasks[1])).collect();
        assert_eq!(
            kinds,
            vec![
                (FindingKind::Orphan, TaskId(3)),
                (FindingKind::Dangling, TaskId(9))
            ]
        );
    }
}
