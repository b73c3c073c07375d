//! The race workloads: what the setup session puts in the list before the writers start,
//! and the requests each writer sends. Every request is planned before the run (from the
//! seed), so a run is reproducible up to timing, and every metadata key is known, and
//! interned, before the first answer arrives.

use std::fmt;
use std::str::FromStr;

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use serde_json::{Map, Value, json};

use taskproof_core::protocol::{Feature, Request};
use taskproof_core::task::{Change, ListName, NewTask, Patch, Status, TaskId};

/// The list every workload runs in.
pub const LIST: &str = "race";

/// How many blocker/dependent pairs the `complete` workload seeds at most.
const COMPLETE_PAIRS: usize = 100;
/// How many metadata keys of its own each writer cycles through. Bounded, so the shared
/// task stays small and a run costs the store linear, not quadratic, work; each write has
/// a value of its own (the request number), so every acknowledged value is still checked.
pub const KEYS_PER_WRITER: usize = 8;
/// How many requests in a row every writer sends to one task in `delete-update` and
/// `claim-delete`.
const BURST: usize = 4;
/// How many tasks of its own each writer toggles as a blocker of the hub in `edges`.
const EDGES_OWN: usize = 4;

/// A race workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Workload {
    /// Every writer sets metadata keys of its own on one shared task (runtime test 10).
    Metadata,
    /// Writers change different fields of one task: status, owner, subject, activeForm.
    Fields,
    /// Every writer creates tasks: duplicate ids, overwritten tasks.
    Create,
    /// Writers add and remove blockers of one hub task; pairs add opposite edges at once.
    Edges,
    /// Writers race to claim the same pending tasks (S20).
    Claim,
    /// Writers complete blockers while others edit the dependents.
    Complete,
    /// Writers update tasks while another writer deletes each of them: a task deleted with
    /// an acknowledged delete never comes back (an update that read it before the delete
    /// must not write it back after), and no update linearized after the delete succeeds.
    DeleteUpdate,
    /// Writers race to claim tasks while another writer deletes each of them: no claim
    /// succeeds on a deleted task, and no deleted task comes back owned.
    ClaimDelete,
    /// Writers complete every task of the list, each its own share, so that the list ends
    /// finished, as a team's list does when the work is done. With a settle phase it shows
    /// a store that removes a finished list on its own (Claude Code's reset,
    /// anthropics/claude-code#38075). Not part of `all`: it is for the settle phase.
    Finish,
}

impl Workload {
    pub const ALL: [Workload; 8] = [
        Workload::Metadata,
        Workload::Fields,
        Workload::Create,
        Workload::Edges,
        Workload::Claim,
        Workload::Complete,
        Workload::DeleteUpdate,
        Workload::ClaimDelete,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Workload::Metadata => "metadata",
            Workload::Fields => "fields",
            Workload::Create => "create",
            Workload::Edges => "edges",
            Workload::Claim => "claim",
            Workload::Complete => "complete",
            Workload::DeleteUpdate => "delete-update",
            Workload::ClaimDelete => "claim-delete",
            Workload::Finish => "finish",
        }
    }

    /// The optional target features the workload needs.
    pub fn needs(self) -> &'static [Feature] {
        match self {
            Workload::Edges | Workload::Complete => &[Feature::Edges],
            Workload::Claim => &[Feature::Claim],
            Workload::DeleteUpdate => &[Feature::Delete, Feature::Metadata],
            Workload::ClaimDelete => &[Feature::Delete, Feature::Claim],
            _ => &[],
        }
    }
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Workload {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Workload::ALL
            .into_iter()
            .chain([Workload::Finish])
            .find(|w| w.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown workload {s:?}; expected metadata, fields, create, edges, claim, complete, delete-update, claim-delete, finish or all"
                )
            })
    }
}

/// One task the setup session creates. `blocked_by` names earlier seeds by position.
#[derive(Debug, Clone)]
pub struct Seed {
    pub subject: String,
    pub blocked_by: Vec<usize>,
}

/// The seeds of a workload.
pub fn seeds(w: Workload, writers: usize, ops: usize) -> Vec<Seed> {
    let plain = |subject: String| Seed {
        subject,
        blocked_by: Vec::new(),
    };
    match w {
        Workload::Metadata => vec![plain("shared task".into())],
        Workload::Fields => vec![plain("shared task".into())],
        Workload::Create => Vec::new(),
        Workload::Edges => {
            let mut s = vec![plain("hub".into())];
            for w in 0..writers {
                for j in 0..EDGES_OWN {
                    s.push(plain(format!("blocker {j} of writer {w}")));
                }
            }
            for p in 0..writers / 2 {
                s.push(plain(format!("pair {p} a")));
                s.push(plain(format!("pair {p} b")));
            }
            s
        }
        Workload::Claim => (0..ops.max(1))
            .map(|i| plain(format!("claimable {i}")))
            .collect(),
        Workload::DeleteUpdate | Workload::ClaimDelete => (0..ops.div_ceil(BURST).max(1))
            .map(|i| plain(format!("doomed {i}")))
            .collect(),
        Workload::Finish => (0..writers * ops)
            .map(|i| plain(format!("task {i}")))
            .collect(),
        Workload::Complete => {
            let mut s = Vec::new();
            for j in 0..ops.clamp(1, COMPLETE_PAIRS) {
                s.push(plain(format!("blocker {j}")));
                s.push(Seed {
                    subject: format!("dependent {j}"),
                    blocked_by: vec![2 * j],
                });
            }
            s
        }
    }
}

fn list() -> ListName {
    LIST.parse().expect("a valid list name")
}

fn update(id: TaskId, patch: Patch) -> Request {
    Request::Update {
        list: list(),
        id,
        patch,
    }
}

fn metadata(key: String, value: Value) -> Patch {
    let mut m = Map::new();
    m.insert(key, value);
    Patch {
        metadata: Change::Set(m),
        ..Patch::default()
    }
}

/// The requests writer `w` sends, in order, given the ids the seeds got.
pub fn plan(
    w: Workload,
    writer: usize,
    writers: usize,
    ops: usize,
    ids: &[TaskId],
    seed: u64,
) -> Vec<Request> {
    let mut rng = StdRng::seed_from_u64(seed ^ (writer as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let key = |k: usize| format!("w{writer}_{}", k % KEYS_PER_WRITER);
    match w {
        Workload::Metadata => (0..ops)
            .map(|k| update(ids[0], metadata(key(k), json!(k))))
            .collect(),
        Workload::Fields => (0..ops)
            .map(|k| {
                let patch = match writer % 4 {
                    0 => Patch {
                        status: Some(if k % 2 == 0 {
                            Status::InProgress
                        } else {
                            Status::Pending
                        }),
                        ..Patch::default()
                    },
                    1 => Patch {
                        owner: Change::Set(format!("w{writer}-{k}")),
                        ..Patch::default()
                    },
                    2 => Patch {
                        subject: Some(format!("subject w{writer}-{k}")),
                        ..Patch::default()
                    },
                    _ => Patch {
                        active_form: Change::Set(format!("working w{writer}-{k}")),
                        ..Patch::default()
                    },
                };
                update(ids[0], patch)
            })
            .collect(),
        Workload::Finish => (0..ops)
            .map(|k| {
                update(
                    ids[writer * ops + k],
                    Patch {
                        status: Some(Status::Completed),
                        ..Patch::default()
                    },
                )
            })
            .collect(),
        Workload::Create => (0..ops)
            .map(|k| Request::Create {
                list: list(),
                task: NewTask::new(format!("w{writer}-{k}")),
            })
            .collect(),
        Workload::Edges => {
            let hub = ids[0];
            let own = |j: usize| ids[1 + writer * EDGES_OWN + j];
            let pairs_at = 1 + writers * EDGES_OWN;
            let pair = writer / 2;
            let partner = writer / 2 < writers / 2;
            (0..ops)
                .map(|k| {
                    let round = k / 2;
                    if k % 2 == 0 || !partner {
                        // Own blockers of the hub: added from the hub's side, removed from the
                        // blocker's side, so both halves of S8 are exercised.
                        let step = if partner { round } else { k };
                        let j = step % EDGES_OWN;
                        let x = own(j);
                        if (step / EDGES_OWN).is_multiple_of(2) {
                            update(
                                hub,
                                Patch {
                                    add_blocked_by: vec![x],
                                    ..Patch::default()
                                },
                            )
                        } else {
                            update(
                                x,
                                Patch {
                                    remove_blocks: vec![hub],
                                    ..Patch::default()
                                },
                            )
                        }
                    } else {
                        // The pair: the even writer wants a->b, the odd one b->a; at most one
                        // may hold at a time (S7, S19).
                        let (a, b) = (ids[pairs_at + 2 * pair], ids[pairs_at + 2 * pair + 1]);
                        let (blocker, blocked) = if writer.is_multiple_of(2) {
                            (a, b)
                        } else {
                            (b, a)
                        };
                        let patch = if round % 2 == 0 {
                            Patch {
                                add_blocked_by: vec![blocker],
                                ..Patch::default()
                            }
                        } else {
                            Patch {
                                remove_blocked_by: vec![blocker],
                                ..Patch::default()
                            }
                        };
                        update(blocked, patch)
                    }
                })
                .collect()
        }
        Workload::Claim => {
            // Everyone walks the same tasks, each writer from its own shuffled start within
            // small windows, so claims collide on every task without lockstep.
            let n = ids.len();
            let mut order: Vec<usize> = (0..ops).map(|k| k % n).collect();
            for chunk in order.chunks_mut(4) {
                chunk.shuffle(&mut rng);
            }
            order
                .into_iter()
                .map(|i| Request::Claim {
                    list: list(),
                    id: ids[i],
                    owner: format!("w{writer}"),
                })
                .collect()
        }
        Workload::DeleteUpdate | Workload::ClaimDelete => {
            // Everyone works on the same task at the same time: `BURST` requests on task 0,
            // then `BURST` on task 1, and so on. Task `i` is deleted by writer
            // `i mod writers`, in the middle of its burst (for claims, at its start, where
            // the one claim that can win is); every other request is an update (or a claim)
            // of it. Requests on a task already deleted are refused at once, so the writers
            // leave a task together and meet again on the next one: a delete races the
            // requests of the same task instead of running ahead of them. A lone writer
            // deletes every other task and works on the rest.
            let n = ids.len();
            let at = if w == Workload::ClaimDelete {
                0
            } else {
                BURST / 2
            };
            (0..ops)
                .map(|k| {
                    let i = (k / BURST) % n;
                    let deleter = if writers == 1 {
                        i.is_multiple_of(2)
                    } else {
                        i % writers == writer
                    };
                    if deleter && k % BURST == at {
                        Request::Delete {
                            list: list(),
                            id: ids[i],
                        }
                    } else if w == Workload::ClaimDelete {
                        Request::Claim {
                            list: list(),
                            id: ids[i],
                            owner: format!("w{writer}"),
                        }
                    } else {
                        update(ids[i], metadata(key(k), json!(k)))
                    }
                })
                .collect()
        }
        Workload::Complete => {
            let pairs = ids.len() / 2;
            let completer = writers == 1 || writer.is_multiple_of(2);
            let offset = rng.random_range(0..pairs);
            (0..ops)
                .map(|k| {
                    let j = (k + offset) % pairs;
                    let (blocker, dependent) = (ids[2 * j], ids[2 * j + 1]);
                    if completer && (writers > 1 || k % 2 == 0) {
                        update(
                            blocker,
                            Patch {
                                status: Some(Status::Completed),
                                ..Patch::default()
                            },
                        )
                    } else if k % 4 == 3 {
                        update(
                            dependent,
                            Patch {
                                status: Some(Status::InProgress),
                                ..Patch::default()
                            },
                        )
                    } else {
                        update(dependent, metadata(key(k), json!(k)))
                    }
                })
                .collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workload_names_round_trip() {
        for w in Workload::ALL {
            assert_eq!(w.name().parse::<Workload>(), Ok(w));
        }
        assert!("nope".parse::<Workload>().is_err());
    }

    #[test]
    fn plans_are_reproducible_and_sized() {
        for w in Workload::ALL {
            let ids: Vec<TaskId> = (1..=seeds(w, 4, 20).len() as u64).map(TaskId).collect();
            let a = plan(w, 1, 4, 20, &ids, 7);
            assert_eq!(a.len(), 20, "{w}");
            assert_eq!(a, plan(w, 1, 4, 20, &ids, 7), "{w}");
        }
    }

    #[test]
    fn each_doomed_task_is_deleted_once_in_a_burst_of_every_writers_requests() {
        for w in [Workload::DeleteUpdate, Workload::ClaimDelete] {
            let ids: Vec<TaskId> = (1..=seeds(w, 4, 12).len() as u64).map(TaskId).collect();
            assert_eq!(ids.len(), 12 / BURST);
            let plans: Vec<Vec<Request>> = (0..4).map(|i| plan(w, i, 4, 12, &ids, 3)).collect();
            for id in &ids {
                let (mut deletes, mut others) = (0, 0);
                for p in &plans {
                    for r in p {
                        match r {
                            Request::Delete { id: d, .. } if d == id => deletes += 1,
                            Request::Update { id: u, .. }
                                if u == id && w == Workload::DeleteUpdate =>
                            {
                                others += 1
                            }
                            Request::Claim { id: c, .. }
                                if c == id && w == Workload::ClaimDelete =>
                            {
                                others += 1
                            }
                            _ => {}
                        }
                    }
                }
                assert_eq!((deletes, others), (1, 4 * BURST - 1), "{w} task {id}");
            }
        }
    }

    #[test]
    fn metadata_keys_are_the_writers_own() {
        let reqs = plan(Workload::Metadata, 3, 4, 10, &[TaskId(1)], 0);
        let Request::Update { patch, .. } = &reqs[9] else {
            panic!()
        };
        assert_eq!(
            patch.metadata,
            Change::Set(json!({"w3_1": 9}).as_object().unwrap().clone())
        );
    }
}
