//! The dependency graph of one task list, for judging it: cycles with their paths, edges
//! recorded on one side only, references to missing tasks, readiness, and tasks that can
//! never become ready. The runner's invariant checks, the race checker and the folder audit
//! all read a list through this one module.
//!
//! An edge "A blocks B" exists when B is in A's `blocks` or A is in B's `blockedBy`; the two
//! sides agree in a healthy list (S8), and where they do not, the union is what an agent
//! would see, so cycles and readiness are judged on the union.

use std::collections::{BTreeMap, BTreeSet};

use crate::task::{Status, Task, TaskId};

/// Which side of an edge is missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum MissingSide {
    /// A lists B in `blocks`, but B lacks A in `blockedBy`.
    BlockedBy,
    /// B lists A in `blockedBy`, but A lacks B in `blocks`.
    Blocks,
}

/// An edge recorded on one side only: `blocker` blocks `blocked`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct HalfEdge {
    pub blocker: TaskId,
    pub blocked: TaskId,
    pub missing: MissingSide,
}

/// A reference to a task that is not in the list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Dangling {
    /// The task holding the reference.
    pub task: TaskId,
    /// The id it names.
    pub missing: TaskId,
    /// Whether it is in `blockedBy` (true) or `blocks` (false).
    pub in_blocked_by: bool,
}

impl HalfEdge {
    /// The task that lists the edge, the task that lacks it, and the field each keeps it in
    /// (`holder` lists `lacking` in `listed_in`; `lacking`'s `missing_from` lacks `holder`).
    pub fn sides(&self) -> (TaskId, TaskId, &'static str, &'static str) {
        match self.missing {
            MissingSide::BlockedBy => (self.blocker, self.blocked, "blocks", "blockedBy"),
            MissingSide::Blocks => (self.blocked, self.blocker, "blockedBy", "blocks"),
        }
    }

    /// The half edge in words, each task named by `name` (`task 4`, or its file `4.json`):
    /// `task 4 names 3 in blockedBy, but blocks of task 3 lacks 4`. The one wording of a
    /// half edge, for the runner, the race checker and `check`.
    pub fn words(&self, name: impl Fn(TaskId) -> String) -> String {
        let (holder, lacking, listed_in, missing_from) = self.sides();
        format!(
            "{} names {lacking} in {listed_in}, but {missing_from} of {} lacks {holder}",
            name(holder),
            name(lacking)
        )
    }
}

impl Dangling {
    /// The reference in words: `task 2's blockedBy names missing task 9`.
    pub fn words(&self) -> String {
        let field = if self.in_blocked_by {
            "blockedBy"
        } else {
            "blocks"
        };
        format!(
            "task {}'s {field} names missing task {}",
            self.task, self.missing
        )
    }
}

/// A task named by its id, as the wordings below name tasks when there is no file to name.
pub fn task_name(id: TaskId) -> String {
    format!("task {id}")
}

/// A cycle from [`Graph::cycles`] (its first task repeated at the end) in words: `task 3
/// blocks itself`, or `dependency cycle 3 -> 4 -> 3 (each blocks the next)`. The one
/// wording of a cycle, for the runner, the race checker and `check`.
pub fn cycle_words(path: &[TaskId]) -> String {
    if path.len() == 2 {
        return format!("task {} blocks itself", path[0]);
    }
    let shown: Vec<String> = path.iter().map(TaskId::to_string).collect();
    format!(
        "dependency cycle {} (each blocks the next)",
        shown.join(" -> ")
    )
}

/// A completed task whose blockers are not all completed, in words: `task 2 is completed,
/// but its blockers 1, 3 are not`.
pub fn completed_words(id: TaskId, open: &[TaskId]) -> String {
    let shown: Vec<String> = open.iter().map(TaskId::to_string).collect();
    format!(
        "task {id} is completed, but its blocker{} {} {} not",
        if open.len() == 1 { "" } else { "s" },
        shown.join(", "),
        if open.len() == 1 { "is" } else { "are" },
    )
}

/// A list's tasks indexed by id, with the union of both sides' edges.
#[derive(Debug, Clone)]
pub struct Graph {
    tasks: BTreeMap<TaskId, Task>,
    /// blocker -> tasks it blocks, over existing tasks only.
    succ: BTreeMap<TaskId, BTreeSet<TaskId>>,
    /// blocked -> its blockers, over existing tasks only (the reverse of `succ`).
    pred: BTreeMap<TaskId, BTreeSet<TaskId>>,
    /// Ids that appeared more than once in the input.
    duplicates: BTreeSet<TaskId>,
}

impl Graph {
    pub fn new(tasks: &[Task]) -> Graph {
        let mut map = BTreeMap::new();
        let mut duplicates = BTreeSet::new();
        for t in tasks {
            if map.insert(t.id, t.clone()).is_some() {
                duplicates.insert(t.id);
            }
        }
        let mut succ: BTreeMap<TaskId, BTreeSet<TaskId>> = BTreeMap::new();
        for t in map.values() {
            for &b in &t.blocks {
                if map.contains_key(&b) {
                    succ.entry(t.id).or_default().insert(b);
                }
            }
            for &a in &t.blocked_by {
                if map.contains_key(&a) {
                    succ.entry(a).or_default().insert(t.id);
                }
            }
        }
        let mut pred: BTreeMap<TaskId, BTreeSet<TaskId>> = BTreeMap::new();
        for (a, bs) in &succ {
            for b in bs {
                pred.entry(*b).or_default().insert(*a);
            }
        }
        Graph {
            tasks: map,
            succ,
            pred,
            duplicates,
        }
    }

    pub fn tasks(&self) -> impl Iterator<Item = &Task> {
        self.tasks.values()
    }

    pub fn get(&self, id: TaskId) -> Option<&Task> {
        self.tasks.get(&id)
    }

    /// Ids listed more than once.
    pub fn duplicate_ids(&self) -> &BTreeSet<TaskId> {
        &self.duplicates
    }

    fn successors(&self, id: TaskId) -> impl Iterator<Item = TaskId> + '_ {
        self.succ.get(&id).into_iter().flatten().copied()
    }

    /// One cycle per strongly connected component that has one, each as a path
    /// `a -> b -> ... -> a` (first id repeated at the end), smallest ids first.
    pub fn cycles(&self) -> Vec<Vec<TaskId>> {
        let mut out = Vec::new();
        for comp in self.components() {
            let in_comp: BTreeSet<TaskId> = comp.iter().copied().collect();
            let start = comp[0];
            if comp.len() == 1 && !self.successors(start).any(|s| s == start) {
                continue;
            }
            // Shortest way back to `start` inside the component, by breadth-first search.
            let mut parent: BTreeMap<TaskId, TaskId> = BTreeMap::new();
            let mut queue = std::collections::VecDeque::from([start]);
            let mut found = None;
            'bfs: while let Some(x) = queue.pop_front() {
                for y in self.successors(x) {
                    if y == start {
                        found = Some(x);
                        break 'bfs;
                    }
                    if in_comp.contains(&y) && !parent.contains_key(&y) && y != start {
                        parent.insert(y, x);
                        queue.push_back(y);
                    }
                }
            }
            let Some(last) = found else { continue };
            // Walk back from `last` to `start`, then close the loop.
            let mut path = vec![last];
            let mut cur = last;
            while let Some(&p) = parent.get(&cur) {
                path.push(p);
                cur = p;
            }
            if cur != start {
                path.push(start);
            }
            path.reverse();
            path.push(start);
            out.push(path);
        }
        out
    }

    /// Strongly connected components (Tarjan, iterative), each sorted, in id order.
    fn components(&self) -> Vec<Vec<TaskId>> {
        let ids: Vec<TaskId> = self.tasks.keys().copied().collect();
        let mut index: BTreeMap<TaskId, usize> = BTreeMap::new();
        let mut low: BTreeMap<TaskId, usize> = BTreeMap::new();
        let mut on_stack: BTreeSet<TaskId> = BTreeSet::new();
        let mut stack: Vec<TaskId> = Vec::new();
        let mut next = 0usize;
        let mut comps = Vec::new();
        for &root in &ids {
            if index.contains_key(&root) {
                continue;
            }
            // Each frame: the node and its successors not yet walked.
            let mut work: Vec<(TaskId, Vec<TaskId>)> = Vec::new();
            index.insert(root, next);
            low.insert(root, next);
            next += 1;
            stack.push(root);
            on_stack.insert(root);
            work.push((root, self.successors(root).collect()));
            while let Some((v, rest)) = work.last_mut() {
                let v = *v;
                if let Some(w) = rest.pop() {
                    if let std::collections::btree_map::Entry::Vacant(slot) = index.entry(w) {
                        slot.insert(next);
                        low.insert(w, next);
                        next += 1;
                        stack.push(w);
                        on_stack.insert(w);
                        work.push((w, self.successors(w).collect()));
                    } else if on_stack.contains(&w) {
                        let lw = index[&w];
                        let lv = low.get_mut(&v).expect("indexed");
                        *lv = (*lv).min(lw);
                    }
                } else {
                    work.pop();
                    if let Some((parent, _)) = work.last() {
                        let lv = low[&v];
                        let lp = low.get_mut(parent).expect("indexed");
                        *lp = (*lp).min(lv);
                    }
                    if low[&v] == index[&v] {
                        let mut comp = Vec::new();
                        while let Some(w) = stack.pop() {
                            on_stack.remove(&w);
                            comp.push(w);
                            if w == v {
                                break;
                            }
                        }
                        comp.sort();
                        comps.push(comp);
                    }
                }
            }
        }
        comps.sort();
        comps
    }

    /// A shortest way `from -> ... -> to` along "blocks" edges between existing tasks, both
    /// ends included (`[from]` when they are the same task), or `None` when `to` cannot be
    /// reached. With an edge `to -> from`, it is the rest of the cycle that edge closes.
    pub fn path(&self, from: TaskId, to: TaskId) -> Option<Vec<TaskId>> {
        if !self.tasks.contains_key(&from) {
            return None;
        }
        let mut parent: BTreeMap<TaskId, TaskId> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([from]);
        let mut seen = BTreeSet::from([from]);
        while let Some(x) = queue.pop_front() {
            if x == to {
                let mut path = vec![x];
                let mut at = x;
                while let Some(&p) = parent.get(&at) {
                    path.push(p);
                    at = p;
                }
                path.reverse();
                return Some(path);
            }
            for y in self.successors(x) {
                if seen.insert(y) {
                    parent.insert(y, x);
                    queue.push_back(y);
                }
            }
        }
        None
    }

    /// Whether the graph has no cycle.
    pub fn is_acyclic(&self) -> bool {
        self.cycles().is_empty()
    }

    /// Edges between existing tasks recorded on one side only (S8).
    pub fn half_edges(&self) -> Vec<HalfEdge> {
        let mut out = BTreeSet::new();
        for t in self.tasks.values() {
            for &b in &t.blocks {
                if let Some(other) = self.tasks.get(&b)
                    && !other.blocked_by.contains(&t.id)
                {
                    out.insert(HalfEdge {
                        blocker: t.id,
                        blocked: b,
                        missing: MissingSide::BlockedBy,
                    });
                }
            }
            for &a in &t.blocked_by {
                if let Some(other) = self.tasks.get(&a)
                    && !other.blocks.contains(&t.id)
                {
                    out.insert(HalfEdge {
                        blocker: a,
                        blocked: t.id,
                        missing: MissingSide::Blocks,
                    });
                }
            }
        }
        out.into_iter().collect()
    }

    /// References to ids that are not in the list (S6, S10).
    pub fn dangling(&self) -> Vec<Dangling> {
        let mut out = Vec::new();
        for t in self.tasks.values() {
            for (set, in_blocked_by) in [(&t.blocked_by, true), (&t.blocks, false)] {
                for &x in set {
                    if !self.tasks.contains_key(&x) {
                        out.push(Dangling {
                            task: t.id,
                            missing: x,
                            in_blocked_by,
                        });
                    }
                }
            }
        }
        out
    }

    /// Whether blocker `b` counts as finished: completed, or not in the list at all.
    fn finished(&self, b: TaskId) -> bool {
        self.tasks
            .get(&b)
            .is_none_or(|t| t.status == Status::Completed)
    }

    /// Blockers of `id` (union of both sides) that are not finished.
    pub fn unfinished_blockers(&self, id: TaskId) -> Vec<TaskId> {
        let mut blockers: BTreeSet<TaskId> = self
            .tasks
            .get(&id)
            .map(|t| t.blocked_by.clone())
            .unwrap_or_default();
        blockers.extend(self.pred.get(&id).into_iter().flatten().copied());
        blockers
            .into_iter()
            .filter(|b| !self.finished(*b))
            .collect()
    }

    /// Pending tasks whose blockers are all finished (S9: readiness is derived).
    pub fn ready(&self) -> BTreeSet<TaskId> {
        self.tasks
            .values()
            .filter(|t| t.status == Status::Pending && self.unfinished_blockers(t.id).is_empty())
            .map(|t| t.id)
            .collect()
    }

    /// Completed tasks with a blocker that is not finished (S5), with those blockers.
    pub fn completed_with_unfinished_blockers(&self) -> Vec<(TaskId, Vec<TaskId>)> {
        self.tasks
            .values()
            .filter(|t| t.status == Status::Completed)
            .filter_map(|t| {
                let u = self.unfinished_blockers(t.id);
                (!u.is_empty()).then_some((t.id, u))
            })
            .collect()
    }

    /// Unfinished tasks that can never become ready under the strict rules: those on a cycle,
    /// and those that wait, directly or through other unfinished tasks, on one that is.
    pub fn deadlocked(&self) -> BTreeSet<TaskId> {
        let mut stuck: BTreeSet<TaskId> = BTreeSet::new();
        for comp in self.components() {
            let cyclic = comp.len() > 1 || self.successors(comp[0]).any(|s| s == comp[0]);
            if cyclic {
                stuck.extend(comp.into_iter().filter(|m| !self.finished(*m)));
            }
        }
        // Spread forward: whatever waits on a stuck task is stuck.
        let mut frontier: Vec<TaskId> = stuck.iter().copied().collect();
        while let Some(x) = frontier.pop() {
            for y in self.successors(x) {
                if !self.finished(y) && stuck.insert(y) {
                    frontier.push(y);
                }
            }
        }
        stuck
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: u64, status: Status, blocks: &[u64], blocked_by: &[u64]) -> Task {
        let mut t = Task::new(TaskId(id), format!("t{id}"));
        t.status = status;
        t.blocks = blocks.iter().map(|&i| TaskId(i)).collect();
        t.blocked_by = blocked_by.iter().map(|&i| TaskId(i)).collect();
        t
    }

    #[test]
    fn path_follows_either_side_of_an_edge_and_is_shortest() {
        // 1 blocks 2 (recorded on 1), 2 blocks 3 (recorded on 3 only), 1 blocks 3 too.
        let g = Graph::new(&[
            task(1, Status::Pending, &[2, 3], &[]),
            task(2, Status::Pending, &[], &[]),
            task(3, Status::Pending, &[], &[2]),
        ]);
        assert_eq!(g.path(TaskId(1), TaskId(3)), Some(ids(&[1, 3])));
        assert_eq!(g.path(TaskId(2), TaskId(3)), Some(ids(&[2, 3])));
        assert_eq!(g.path(TaskId(2), TaskId(2)), Some(ids(&[2])));
        assert_eq!(g.path(TaskId(3), TaskId(1)), None);
        assert_eq!(g.path(TaskId(9), TaskId(9)), None);
    }

    fn ids(v: &[u64]) -> Vec<TaskId> {
        v.iter().map(|&i| TaskId(i)).collect()
    }

    #[test]
    fn a_two_cycle_is_found_with_its_path() {
        // Runtime test 4: 21 blockedBy 22, 22 blockedBy 21, nothing mirrored.
        let g = Graph::new(&[
            task(21, Status::Pending, &[], &[22]),
            task(22, Status::Pending, &[], &[21]),
        ]);
        assert_eq!(g.cycles(), vec![ids(&[21, 22, 21])]);
        assert_eq!(g.deadlocked(), ids(&[21, 22]).into_iter().collect());
        assert_eq!(g.half_edges().len(), 2);
    }

    #[test]
    fn self_loops_and_longer_cycles() {
        let g = Graph::new(&[
            task(1, Status::Pending, &[1], &[1]),
            task(2, Status::Pending, &[3], &[4]),
            task(3, Status::Pending, &[4], &[2]),
            task(4, Status::Pending, &[2, 5], &[3]),
            task(5, Status::Pending, &[], &[4]),
        ]);
        assert_eq!(g.cycles(), vec![ids(&[1, 1]), ids(&[2, 3, 4, 2])]);
        // 5 waits on the cycle, so it is stuck too.
        assert_eq!(g.deadlocked(), ids(&[1, 2, 3, 4, 5]).into_iter().collect());
        assert!(g.half_edges().is_empty());
    }

    #[test]
    fn a_dag_is_acyclic_and_readiness_follows_blockers() {
        let g = Graph::new(&[
            task(1, Status::Completed, &[3], &[]),
            task(2, Status::Pending, &[3], &[]),
            task(3, Status::Pending, &[], &[1, 2]),
            task(4, Status::Pending, &[], &[99]),
        ]);
        assert!(g.is_acyclic());
        // 4's blocker does not exist, which does not block (SPEC §3).
        assert_eq!(g.ready(), ids(&[2, 4]).into_iter().collect());
        assert_eq!(g.unfinished_blockers(TaskId(3)), ids(&[2]));
        assert_eq!(
            g.dangling(),
            vec![Dangling {
                task: TaskId(4),
                missing: TaskId(99),
                in_blocked_by: true
            }]
        );
        assert!(g.deadlocked().is_empty());
    }

    #[test]
    fn completed_tasks_with_open_blockers_are_found() {
        let g = Graph::new(&[
            task(1, Status::InProgress, &[2], &[]),
            task(2, Status::Completed, &[], &[1]),
        ]);
        assert_eq!(
            g.completed_with_unfinished_blockers(),
            vec![(TaskId(2), ids(&[1]))]
        );
    }

    #[test]
    fn duplicates_are_reported() {
        let g = Graph::new(&[
            task(1, Status::Pending, &[], &[]),
            task(1, Status::Completed, &[], &[]),
        ]);
        assert_eq!(g.duplicate_ids(), &ids(&[1]).into_iter().collect());
    }

    #[test]
    fn a_long_chain_does_not_overflow_the_stack() {
        let n = 50_000u64;
        let tasks: Vec<Task> = (1..=n)
            .map(|i| {
                let blocks: Vec<u64> = if i < n { vec![i + 1] } else { vec![] };
                let by: Vec<u64> = if i > 1 { vec![i - 1] } else { vec![] };
                task(i, Status::Pending, &blocks, &by)
            })
            .collect();
        let g = Graph::new(&tasks);
        assert!(g.is_acyclic());
        assert_eq!(g.ready(), ids(&[1]).into_iter().collect());
    }

    #[test]
    fn violations_have_one_wording() {
        let h = HalfEdge {
            blocker: TaskId(3),
            blocked: TaskId(4),
            missing: MissingSide::Blocks,
        };
        assert_eq!(
            h.words(task_name),
            "task 4 names 3 in blockedBy, but blocks of task 3 lacks 4"
        );
        let h = HalfEdge {
            missing: MissingSide::BlockedBy,
            ..h
        };
        assert_eq!(
            h.words(|id| format!("{id}.json")),
            "3.json names 4 in blocks, but blockedBy of 4.json lacks 3"
        );
        assert_eq!(cycle_words(&[TaskId(2), TaskId(2)]), "task 2 blocks itself");
        assert_eq!(
            cycle_words(&[TaskId(3), TaskId(4), TaskId(3)]),
            "dependency cycle 3 -> 4 -> 3 (each blocks the next)"
        );
        assert_eq!(
            completed_words(TaskId(2), &[TaskId(1), TaskId(3)]),
            "task 2 is completed, but its blockers 1, 3 are not"
        );
        let d = Dangling {
            task: TaskId(2),
            missing: TaskId(9),
            in_blocked_by: true,
        };
        assert_eq!(d.words(), "task 2's blockedBy names missing task 9");
    }
}
