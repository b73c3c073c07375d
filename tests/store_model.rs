//! Oracle-based test of the strict store: random histories of requests run against the
//! reference model ([`taskproof_profile::oracle::Oracle`]) and against a [`StrictStore`] on a temporary
//! folder, step by step; every answer must agree (ok or the same error kind, and the returned
//! tasks field by field), and so must every list. A `reopen` step drops the store and opens a
//! new one on the same root, so persistence is part of the history (S14).
//!
//! The steps are biased toward what is easy to get wrong: edges (and thereby cycles), deletes
//! of tasks with neighbours, claims, status changes, metadata merges with `null` keys, ids that
//! do not exist, and two lists. Failing seeds are kept in
//! `proptest-regressions/store_model.txt` and replayed first. `PROPTEST_CASES=2000 cargo test
//! store_model` runs a deeper search than the default.

use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence};
use proptest_state_machine::{ReferenceStateMachine, StateMachineTest, prop_state_machine};
use serde_json::{Map, Value, json};

use taskproof_core::graph::Graph;
use taskproof_core::protocol::{Request, Response};
use taskproof_core::task::{Change, ListName, NewTask, Patch, Status, TaskId};
use taskproof_profile::oracle::Oracle;
use taskproof_store::{Options, StrictStore, TaskStore};

const LISTS: [&str; 2] = ["a", "b"];

/// One step of a history.
#[derive(Debug, Clone)]
enum Step {
    /// A request, sent as JSON so both sides decode it the way `serve` does.
    Request(Value),
    /// Drop the store and open a new one on the same root.
    Reopen,
    /// Compare every list in full.
    ListAll,
}

/// The reference state: the model, and its answer to the last step.
#[derive(Debug, Clone)]
struct Reference {
    model: Oracle,
    last: Option<Response>,
}

fn list_name(i: usize) -> ListName {
    LISTS[i].parse().unwrap()
}

fn metadata_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => Just(Value::Null),
        2 => (-(1i64 << 53)..(1i64 << 53)).prop_map(Value::from),
        2 => "[a-zé☃]{0,5}".prop_map(Value::from),
        1 => prop::sample::select(vec![0.5f64, -1.25, 1e-7, 3.0]).prop_map(Value::from),
        1 => Just(json!({"nested": {"deep": [1, "two", {"three": null}]}})),
        1 => Just(json!([])),
    ]
}

fn metadata() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map(
        prop::sample::select(vec!["k", "x", "é", "n"]),
        metadata_value(),
        0..4,
    )
    .prop_map(|m| m.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

fn status() -> impl Strategy<Value = Status> {
    prop_oneof![
        3 => Just(Status::Pending),
        3 => Just(Status::InProgress),
        3 => Just(Status::Completed),
        1 => Just(Status::Other("done".into())),
    ]
}

fn change<T: Clone + std::fmt::Debug + 'static>(
    set: impl Strategy<Value = T> + 'static,
) -> impl Strategy<Value = Change<T>> {
    prop_oneof![4 => Just(Change::Keep), 2 => set.prop_map(Change::Set), 1 => Just(Change::Remove)]
}

fn subject() -> impl Strategy<Value = String> {
    prop_oneof![9 => "[a-z ]{1,8}", 1 => Just("é".repeat(200))]
}

fn patch(ids: BoxedStrategy<TaskId>) -> impl Strategy<Value = Patch> {
    let edge_list = prop::collection::vec(ids, 0..3);
    let edges = prop_oneof![
        2 => Just((vec![], vec![], vec![], vec![])),
        3 => (edge_list.clone(), edge_list.clone(), edge_list.clone(), edge_list),
    ];
    (
        prop::option::weighted(0.2, subject()),
        prop::option::weighted(0.1, "[a-z]{0,6}"),
        change("[a-z]{1,6}".prop_map(String::from)),
        prop::option::weighted(0.4, status()),
        change(prop::sample::select(vec![
            "w1".to_string(),
            "w2".to_string(),
        ])),
        change(metadata()),
        edges,
    )
        .prop_map(
            |(subject, description, active_form, status, owner, metadata, (abb, ab, rbb, rb))| {
                Patch {
                    subject,
                    description,
                    active_form,
                    status,
                    owner,
                    metadata,
                    add_blocked_by: abb,
                    add_blocks: ab,
                    remove_blocked_by: rbb,
                    remove_blocks: rb,
                }
            },
        )
}

fn request(list: usize, ids: BoxedStrategy<TaskId>, tasks: usize) -> BoxedStrategy<Value> {
    let l = list_name(list);
    // Most creates have no edges, so that lists grow; the rest have one to three, in any
    // order and possibly repeated, since the order decides which failing id answers (§3).
    let set = |ids: BoxedStrategy<TaskId>| {
        prop_oneof![
            3 => Just(Default::default()),
            1 => prop::collection::vec(ids, 1..4),
        ]
    };
    let create = (
        subject(),
        prop::option::weighted(0.3, metadata()),
        prop::option::weighted(0.2, "[a-z]{1,5}"),
        set(ids.clone()),
        set(ids.clone()),
    )
        .prop_map({
            let l = l.clone();
            move |(subject, metadata, owner, blocked_by, blocks)| Request::Create {
                list: l.clone(),
                task: NewTask {
                    subject,
                    metadata,
                    owner,
                    blocked_by,
                    blocks,
                    ..NewTask::default()
                },
            }
        });
    let update = (ids.clone(), patch(ids.clone())).prop_map({
        let l = l.clone();
        move |(id, patch)| Request::Update {
            list: l.clone(),
            id,
            patch,
        }
    });
    // Focused updates, so that status changes, edges and merges meet often on few tasks.
    let status_only = (ids.clone(), status()).prop_map({
        let l = l.clone();
        move |(id, status)| Request::Update {
            list: l.clone(),
            id,
            patch: Patch {
                status: Some(status),
                ..Patch::default()
            },
        }
    });
    let edge_only = (ids.clone(), ids.clone(), 0..4u8).prop_map({
        let l = l.clone();
        move |(id, other, which)| {
            let mut patch = Patch::default();
            match which {
                0 => patch.add_blocked_by.push(other),
                1 => patch.add_blocks.push(other),
                2 => patch.remove_blocked_by.push(other),
                _ => patch.remove_blocks.push(other),
            }
            Request::Update {
                list: l.clone(),
                id,
                patch,
            }
        }
    });
    let metadata_only = (ids.clone(), metadata()).prop_map({
        let l = l.clone();
        move |(id, md)| Request::Update {
            list: l.clone(),
            id,
            patch: Patch {
                metadata: Change::Set(md),
                ..Patch::default()
            },
        }
    });
    let delete = ids.clone().prop_map({
        let l = l.clone();
        move |id| Request::Delete {
            list: l.clone(),
            id,
        }
    });
    let claim = (ids.clone(), prop::sample::select(vec!["w1", "w2"])).prop_map({
        let l = l.clone();
        move |(id, owner)| Request::Claim {
            list: l.clone(),
            id,
            owner: owner.into(),
        }
    });
    let get = ids.prop_map({
        let l = l.clone();
        move |id| Request::Get {
            list: l.clone(),
            id,
        }
    });
    let list_req = Just(Request::List { list: l });
    // Lists with few tasks grow first; after that, most steps change what is there.
    let create_weight = if tasks < 3 { 12 } else { 4 };
    prop_oneof![
        create_weight => create,
        3 => update,
        3 => status_only,
        3 => edge_only,
        2 => metadata_only,
        2 => delete,
        2 => claim,
        1 => get,
        1 => list_req,
    ]
    .prop_map(|r| r.to_json())
    .boxed()
}

/// Requests whose form is wrong: each must be `invalid` on both sides and change nothing.
fn malformed() -> impl Strategy<Value = Value> {
    prop::sample::select(vec![
        json!({"op": "get", "list": "a", "id": "01"}),
        json!({"op": "get", "list": "..", "id": "1"}),
        json!({"op": "create", "list": "a", "task": {"subject": ""}}),
        json!({"op": "create", "list": "a", "task": {"subject": "s", "status": "pending"}}),
        json!({"op": "update", "list": "a", "id": "1", "patch": {"status": null}}),
        json!({"op": "update", "list": "a", "id": "1", "patch": {"addBlocks": "2"}}),
        json!({"op": "claim", "list": "a", "id": "1", "owner": ""}),
    ])
}

impl ReferenceStateMachine for Reference {
    type State = Reference;
    type Transition = Step;

    fn init_state() -> BoxedStrategy<Reference> {
        Just(Reference {
            model: Oracle::strict(),
            last: None,
        })
        .boxed()
    }

    fn transitions(state: &Reference) -> BoxedStrategy<Step> {
        // Mostly ids of tasks that exist; some up to two past the highest ever assigned
        // (deleted or never created), and now and then one that cannot exist.
        let ids = |list: usize| -> BoxedStrategy<TaskId> {
            let (hwm, existing) = state
                .model
                .list_state(&list_name(list))
                .map_or((0, vec![]), |s| {
                    (s.highwatermark, s.tasks.keys().copied().collect())
                });
            let any = prop_oneof![9 => (1..=hwm + 2).prop_map(TaskId), 1 => Just(TaskId(0))];
            if existing.is_empty() {
                any.boxed()
            } else {
                prop_oneof![4 => prop::sample::select(existing), 1 => any].boxed()
            }
        };
        let count = |list: usize| {
            state
                .model
                .list_state(&list_name(list))
                .map_or(0, |s| s.tasks.len())
        };
        prop_oneof![
            10 => request(0, ids(0), count(0)).prop_map(Step::Request),
            3 => request(1, ids(1), count(1)).prop_map(Step::Request),
            1 => malformed().prop_map(Step::Request),
            1 => Just(Step::Reopen),
            1 => Just(Step::ListAll),
        ]
        .boxed()
    }

    fn apply(mut state: Reference, step: &Step) -> Reference {
        state.last = match step {
            Step::Request(v) => Some(state.model.handle_value(v)),
            Step::Reopen | Step::ListAll => None,
        };
        state
    }
}

/// The system under test: a strict store on its own folder.
struct Target {
    dir: tempfile::TempDir,
    store: StrictStore,
}

fn open(dir: &tempfile::TempDir) -> StrictStore {
    StrictStore::open(dir.path(), Options { durable: false }).unwrap()
}

/// Equal answers: both ok and equal, or both errors of the same kind (messages may differ).
fn assert_same(step: &Value, expected: &Response, actual: &Response) {
    match (expected, actual) {
        (Response::Error(e), Response::Error(a)) => assert_eq!(
            e.kind, a.kind,
            "{step}: expected {e}, the store answered {a}"
        ),
        _ => assert_eq!(expected, actual, "{step}: answers differ (left: model)"),
    }
}

fn compare_lists(target: &Target, model: &Oracle) {
    for i in 0..LISTS.len() {
        let l = list_name(i);
        let actual = target.store.handle(&Request::List { list: l.clone() });
        let Response::Tasks { tasks, corrupt } = &actual else {
            panic!("list {l}: {actual:?}");
        };
        assert_eq!(tasks, &model.tasks(&l), "list {l} differs (right: model)");
        assert!(corrupt.is_empty(), "list {l}: corrupt files {corrupt:?}");
        let g = Graph::new(tasks);
        assert!(g.half_edges().is_empty(), "list {l}: {:?}", g.half_edges());
        assert!(g.is_acyclic(), "list {l}: {:?}", g.cycles());
        assert!(g.dangling().is_empty(), "list {l}: {:?}", g.dangling());
    }
}

impl StateMachineTest for Target {
    type SystemUnderTest = Target;
    type Reference = Reference;

    fn init_test(_: &Reference) -> Target {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir);
        Target { dir, store }
    }

    fn apply(mut target: Target, reference: &Reference, step: Step) -> Target {
        match &step {
            Step::Request(v) => {
                let actual = target.store.handle_value(v);
                let expected = reference.last.as_ref().expect("the model answered");
                assert_same(v, expected, &actual);
            }
            Step::Reopen => target.store = open(&target.dir),
            Step::ListAll => compare_lists(&target, &reference.model),
        }
        target
    }

    fn teardown(target: Target, reference: Reference) {
        compare_lists(&target, &reference.model);
    }
}

fn config() -> Config {
    Config {
        // Each step writes files, so keep the default run to a few seconds in debug builds.
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(48),
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/store_model.txt",
        ))),
        ..Config::default()
    }
}

prop_state_machine! {
    #![proptest_config(config())]

    /// The strict store answers every step of a random history as the model does.
    #[test]
    fn strict_store_matches_the_model(sequential 1..60 => Target);
}
