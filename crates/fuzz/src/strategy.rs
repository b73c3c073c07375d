//! The proptest strategies of `taskproof fuzz`: random operation sequences, biased toward
//! what breaks stores: edges (and so cycles), deletes, claims, status changes, bad input,
//! several sessions on one root, restarts, and files written by another program; and, when
//! asked ([`BetweenRequests`]), time passing and what a user does to a session between
//! requests (`/clear`, `/compact`, `/exit` then `--resume`).
//!
//! A generated [`Step`] names tasks by [`Ref`] (the n-th task created so far, the task the
//! sequence named last, or a missing id), not by id, so that any subsequence of a sequence is
//! still meaningful: that is what lets proptest shrink a failing sequence to the few steps
//! that matter.
//!
//! Sequences are drawn from what the target offers ([`Offer`], read from its `hello`): a part
//! it does not declare (claim, delete, owner, metadata, edges at creation, a second list, the
//! `in_progress` status, files it can be given) is never generated, so the steps a target
//! can take get the whole budget instead of being generated and then dropped.

use std::collections::BTreeSet;

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::strategy::Union;

use taskproof_core::protocol::{Feature, Hello, Layout};

/// The lists a sequence uses: mostly one, sometimes a second (isolation, S13).
pub const LISTS: [&str; 2] = ["l", "m"];
/// The sessions a case uses: a sequence mostly `main`, `b` and `c` other processes on the
/// root; the lanes of a parallel part the first two to four, one each.
pub const SESSIONS: [&str; 4] = ["main", "b", "c", "d"];

/// A task named by position: `Created(n)` is the n-th live-or-deleted task created in the
/// list (modulo how many there are), `Last` the task the sequence last named or created in
/// the list (so that a task is moved through several states one step after another: created,
/// completed, reopened), `Missing(n)` an id past every id handed out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ref {
    Created(u8),
    Last,
    Missing(u8),
}

/// A subject: normal, one that real stores choke on though S2 allows it, or one that breaks
/// S2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subject {
    Plain(u8),
    Unicode,
    /// Text with a NUL character in it (valid: a subject is any string).
    Nul,
    /// 200 characters that are each two UTF-16 units (valid: S2 counts characters, Unicode
    /// scalar values; a store counting UTF-16 units sees 400).
    LongAstral,
    /// 200 two-byte characters (valid: 400 bytes of UTF-8, more than a file name may have).
    LongAccented,
    /// A subject that cannot be a file name as it is (`/`, `..`, reserved characters).
    NotAFileName(u8),
    Empty,
    TooLong,
    /// 201 astral characters (invalid, however its length is counted).
    TooLongAstral,
}

/// A small metadata object: keys from a few names so merges overlap; `None` values remove.
pub type Meta = Vec<(u8, Option<MetaValue>)>;

#[derive(Debug, Clone, PartialEq)]
pub enum MetaValue {
    Int(i64),
    Text(String),
    Nested(u8),
    Float(f64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusGen {
    Pending,
    InProgress,
    Completed,
    /// Not one of the three (S3).
    Bogus,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct PatchGen {
    pub subject: Option<Subject>,
    pub description: Option<u8>,
    pub status: Option<StatusGen>,
    /// `Some(None)` removes the owner.
    pub owner: Option<Option<u8>>,
    pub active_form: Option<Option<u8>>,
    /// `Some(None)` removes the whole object.
    pub metadata: Option<Option<Meta>>,
    pub add_blocked_by: Vec<Ref>,
    pub add_blocks: Vec<Ref>,
    pub remove_blocked_by: Vec<Ref>,
    pub remove_blocks: Vec<Ref>,
}

/// Requests that break the form: each must be `invalid` under every profile, and no
/// request may reach outside the root (S13).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bad {
    /// A list name that would leave the root or hide a file if used as a path.
    ListName(u8),
    /// An id that is not canonical decimal, some of them looking like one (`01`, `1.0`,
    /// `+1`, ` 1`, a full-width digit).
    Id(u8),
    /// A field no request has.
    UnknownField,
    /// A subject of the wrong type.
    SubjectType,
    /// `null` for a field that cannot be removed.
    NullStatus,
    /// An edge list that is not an array of ids.
    EdgeType,
}

/// What another program does to the files (S15, S16, S17).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Foreign {
    /// Garbage where a deleted task's file was.
    Garbage,
    /// A symbolic link, where a deleted task's file was, to a valid task outside the root.
    Symlink,
    /// The task's file rewritten with an extra top-level field.
    ExtraField,
}

/// One generated step. `s` is a session index into [`SESSIONS`], `list` into [`LISTS`].
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Create {
        s: u8,
        list: u8,
        subject: Subject,
        blocked_by: Vec<Ref>,
        blocks: Vec<Ref>,
        owner: Option<u8>,
        metadata: Option<Meta>,
    },
    Get {
        s: u8,
        list: u8,
        task: Ref,
    },
    Update {
        s: u8,
        list: u8,
        task: Ref,
        patch: PatchGen,
    },
    Delete {
        s: u8,
        list: u8,
        task: Ref,
    },
    List {
        s: u8,
        list: u8,
    },
    Claim {
        s: u8,
        list: u8,
        task: Ref,
        owner: u8,
    },
    Bad {
        s: u8,
        bad: Bad,
    },
    /// SIGKILL the session and start it again.
    Restart {
        s: u8,
    },
    Foreign {
        list: u8,
        task: Ref,
        what: Foreign,
    },
    /// Nothing is sent for `tenths` tenths of a second (a scenario's `wait`).
    Wait {
        tenths: u16,
    },
    /// A user's event on session `s` (a scenario's `clear`, `compact`, or `exit` then
    /// `resume`).
    Event {
        s: u8,
        event: EventGen,
    },
}

/// A session event the fuzzer does between requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventGen {
    Clear,
    Compact,
    /// The session ends normally and the same conversation is resumed.
    ExitResume,
}

/// What happens between requests in generated sequences: waits of up to `wait_max_tenths`
/// tenths of a second (none at 0), and session events when `events`. Both are off by
/// default, so that a seed gives the sequences it always gave.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BetweenRequests {
    pub wait_max_tenths: u16,
    pub events: bool,
}

impl EventGen {
    /// How a history and a report name it.
    pub fn name(self) -> &'static str {
        match self {
            EventGen::Clear => "clear",
            EventGen::Compact => "compact",
            EventGen::ExitResume => "exit and resume",
        }
    }
}

impl BetweenRequests {
    /// True when sequences may wait or carry session events, which a target that is an
    /// agent session does as its user would (Claude Code: in its terminal UI).
    pub fn plays_a_user(self) -> bool {
        self.wait_max_tenths > 0 || self.events
    }
}

/// The fields of `op`'s request body (under `prefix`) that `hello` says are carried out in
/// calls of their own.
fn apart(hello: &Hello, op: taskproof_core::protocol::Op, prefix: &str) -> BTreeSet<String> {
    hello
        .calls_apart()
        .into_iter()
        .filter(|a| a.op == op)
        .filter_map(|a| a.paths.first()?.strip_prefix(prefix).map(str::to_string))
        .collect()
}

/// What a target offers the generator: the optional parts its `hello` declares (with
/// [`Hello::has`]'s reading of the two parts a hello names by leaving out: `atomic` and
/// `in_progress`), and whether the harness may write task files into its layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offer {
    parts: BTreeSet<Feature>,
    /// The `update` patch fields the target carries out in calls of their own
    /// ([`Hello::calls_apart`]): sent one request each.
    pub apart: BTreeSet<String>,
    /// The `create` task fields the target carries out in calls after the create (an edge
    /// per item written by an update, say): another session can see the task before them,
    /// so a parallel part's creates go without them.
    pub create_apart: BTreeSet<String>,
    /// The fields the target can set but not remove ([`Hello::cannot_remove`]): a patch does
    /// not set them to null.
    pub cannot_remove: BTreeSet<String>,
    /// Files written by another program (S15–S17): a `claude-code` layout, and a profile
    /// whose model predicts them.
    pub files: bool,
}

impl Offer {
    /// Every part a store can have, and files when `files`: what the reference offers.
    pub fn everything(files: bool) -> Offer {
        Offer {
            parts: Feature::ALL.into_iter().collect(),
            apart: BTreeSet::new(),
            create_apart: BTreeSet::new(),
            cannot_remove: BTreeSet::new(),
            files,
        }
    }

    /// What `hello` declares; files only when `files` (the profile predicts them) and the
    /// layout is Claude Code's, which the harness knows how to write into.
    pub fn from_hello(hello: &Hello, files: bool) -> Offer {
        // Edges a target accepts but never shows cannot be compared with the model's: the
        // fuzzer leaves edges out for such a target (the suite judges them on the answers).
        let hidden = hello.has(Feature::HiddenEdges);
        let edge_part = |f: &Feature| {
            matches!(
                f,
                Feature::Edges
                    | Feature::EdgeRemoval
                    | Feature::EdgesAtCreate
                    | Feature::HiddenEdges
            )
        };
        Offer {
            parts: Feature::ALL
                .into_iter()
                .filter(|f| hello.has(*f))
                .filter(|f| !(hidden && edge_part(f)))
                .collect(),
            apart: apart(hello, taskproof_core::protocol::Op::Update, "patch."),
            create_apart: apart(hello, taskproof_core::protocol::Op::Create, "task."),
            cannot_remove: hello.cannot_remove(),
            files: files && hello.layout == Layout::ClaudeCode,
        }
    }

    pub fn has(&self, f: Feature) -> bool {
        self.parts.contains(&f)
    }

    /// The declared parts, in order.
    pub fn parts(&self) -> impl Iterator<Item = Feature> + '_ {
        self.parts.iter().copied()
    }
}

/// `Some` with probability `p` when `offered`; never otherwise.
fn maybe<T: std::fmt::Debug + Clone + 'static>(
    offered: bool,
    p: f64,
    s: impl Strategy<Value = T> + 'static,
) -> BoxedStrategy<Option<T>> {
    if offered {
        prop::option::weighted(p, s).boxed()
    } else {
        Just(None).boxed()
    }
}

fn session() -> impl Strategy<Value = u8> {
    prop_oneof![6 => Just(0u8), 1 => Just(1u8), 1 => Just(2u8)]
}

fn list(offer: &Offer) -> BoxedStrategy<u8> {
    if offer.has(Feature::Lists) {
        prop_oneof![6 => Just(0u8), 1 => Just(1u8)].boxed()
    } else {
        Just(0u8).boxed()
    }
}

fn task_ref() -> impl Strategy<Value = Ref> {
    prop_oneof![
        5 => any::<u8>().prop_map(Ref::Created),
        4 => Just(Ref::Last),
        1 => (0u8..3).prop_map(Ref::Missing)
    ]
}

/// The other task of an edge: never [`Ref::Last`], which is mostly the task the step changes
/// (a self-edge, a cycle every time).
fn edge_ref() -> impl Strategy<Value = Ref> {
    prop_oneof![9 => any::<u8>().prop_map(Ref::Created), 1 => (0u8..3).prop_map(Ref::Missing)]
}

/// Edges: none, or one or two tasks, the latter `weight` times in 5.
fn refs(offered: bool, weight: u32) -> BoxedStrategy<Vec<Ref>> {
    if offered {
        prop_oneof![5 - weight => Just(Vec::new()), weight => vec(edge_ref(), 1..=2)].boxed()
    } else {
        Just(Vec::new()).boxed()
    }
}

fn subject() -> impl Strategy<Value = Subject> {
    prop_oneof![
        24 => any::<u8>().prop_map(Subject::Plain),
        2 => Just(Subject::Unicode),
        1 => Just(Subject::Nul),
        1 => Just(Subject::LongAstral),
        1 => Just(Subject::LongAccented),
        1 => (0u8..4).prop_map(Subject::NotAFileName),
        2 => Just(Subject::Empty),
        1 => Just(Subject::TooLong),
        1 => Just(Subject::TooLongAstral),
    ]
}

fn meta_value() -> impl Strategy<Value = MetaValue> {
    prop_oneof![
        // S12 promises integers up to 2^53 kept exactly, what a JSON number of JavaScript (a
        // double) holds; a larger one may come back rounded, and that is no divergence.
        (-(1i64 << 53)..=(1i64 << 53)).prop_map(MetaValue::Int),
        "[a-zé😀\u{0}]{0,6}".prop_map(MetaValue::Text),
        (0u8..4).prop_map(MetaValue::Nested),
        (-1e6f64..1e6).prop_map(MetaValue::Float),
    ]
}

fn meta() -> impl Strategy<Value = Meta> {
    vec((0u8..4, prop::option::weighted(0.8, meta_value())), 1..=3)
}

fn status(offer: &Offer) -> BoxedStrategy<StatusGen> {
    if offer.has(Feature::InProgress) {
        prop_oneof![
            3 => Just(StatusGen::InProgress),
            3 => Just(StatusGen::Completed),
            3 => Just(StatusGen::Pending),
            1 => Just(StatusGen::Bogus),
        ]
        .boxed()
    } else {
        prop_oneof![
            3 => Just(StatusGen::Completed),
            3 => Just(StatusGen::Pending),
            1 => Just(StatusGen::Bogus),
        ]
        .boxed()
    }
}

fn patch(offer: &Offer) -> impl Strategy<Value = PatchGen> + use<> {
    let edges = offer.has(Feature::Edges);
    let removal = edges && offer.has(Feature::EdgeRemoval);
    (
        prop::option::weighted(0.1, subject()),
        prop::option::weighted(0.1, any::<u8>()),
        prop::option::weighted(0.5, status(offer)),
        maybe(offer.has(Feature::Owner), 0.15, prop::option::of(0u8..3)),
        maybe(
            offer.has(Feature::ActiveForm),
            0.05,
            prop::option::of(any::<u8>()),
        ),
        maybe(
            offer.has(Feature::Metadata),
            0.2,
            prop::option::weighted(0.85, meta()),
        ),
        refs(edges, 1),
        refs(edges, 1),
        maybe(removal, 0.2, vec(edge_ref(), 1..=2)),
        maybe(removal, 0.2, vec(edge_ref(), 1..=2)),
    )
        .prop_map(
            |(subject, description, status, owner, active_form, metadata, ab, ak, rb, rk)| {
                PatchGen {
                    subject,
                    description,
                    status,
                    owner,
                    active_form,
                    metadata,
                    add_blocked_by: ab,
                    add_blocks: ak,
                    remove_blocked_by: rb.unwrap_or_default(),
                    remove_blocks: rk.unwrap_or_default(),
                }
            },
        )
}

fn bad(offer: &Offer) -> BoxedStrategy<Bad> {
    let mut arms: Vec<(u32, BoxedStrategy<Bad>)> = vec![
        (3, (0u8..4).prop_map(Bad::ListName).boxed()),
        (2, (0u8..8).prop_map(Bad::Id).boxed()),
        (1, Just(Bad::UnknownField).boxed()),
        (1, Just(Bad::SubjectType).boxed()),
        (1, Just(Bad::NullStatus).boxed()),
    ];
    if offer.has(Feature::EdgesAtCreate) {
        arms.push((1, Just(Bad::EdgeType).boxed()));
    }
    Union::new_weighted(arms).boxed()
}

/// Steps for a target that offers `offer`: `sessions` when several sessions and restarts are
/// wanted, and what may happen `between` requests.
pub fn step(offer: &Offer, sessions: bool, between: BetweenRequests) -> BoxedStrategy<Step> {
    steps_of(offer, sessions, between, false)
}

/// The steps of a parallel part's lane, and of what follows it: requests only (a lane is one
/// session sending one request after another; no restarts, files, waits or malformed
/// requests), weighted toward what races: deletes, claims and updates of the few tasks the
/// case made before it. The session is the lane's, whatever the step says.
pub fn lane_step(offer: &Offer) -> BoxedStrategy<Step> {
    steps_of(offer, false, BetweenRequests::default(), true)
}

fn steps_of(
    offer: &Offer,
    sessions: bool,
    between: BetweenRequests,
    lane: bool,
) -> BoxedStrategy<Step> {
    let sess = move || -> BoxedStrategy<u8> {
        if sessions {
            session().boxed()
        } else {
            Just(0u8).boxed()
        }
    };
    let at_create = offer.has(Feature::Edges) && offer.has(Feature::EdgesAtCreate);
    let create = (
        sess(),
        list(offer),
        subject(),
        refs(at_create, 1),
        refs(at_create, 1),
        maybe(offer.has(Feature::Owner), 0.15, 0u8..3),
        maybe(offer.has(Feature::Metadata), 0.2, meta()),
    )
        .prop_map(
            |(s, list, subject, blocked_by, blocks, owner, metadata)| Step::Create {
                s,
                list,
                subject,
                blocked_by,
                blocks,
                owner,
                metadata,
            },
        );
    let get =
        (sess(), list(offer), task_ref()).prop_map(|(s, list, task)| Step::Get { s, list, task });
    let update =
        (sess(), list(offer), task_ref(), patch(offer)).prop_map(|(s, list, task, patch)| {
            Step::Update {
                s,
                list,
                task,
                patch,
            }
        });
    // A status change alone, mostly of the task named last: a task walked through its states
    // one step after another (started, completed, reopened), which a patch that also adds an
    // edge seldom does, since the edge is refused and the status with it.
    let status_walk =
        (sess(), list(offer), task_ref(), status(offer)).prop_map(|(s, list, task, st)| {
            Step::Update {
                s,
                list,
                task,
                patch: PatchGen {
                    status: Some(st),
                    ..PatchGen::default()
                },
            }
        });
    let delete = (sess(), list(offer), task_ref()).prop_map(|(s, list, task)| Step::Delete {
        s,
        list,
        task,
    });
    let listing = (sess(), list(offer)).prop_map(|(s, list)| Step::List { s, list });
    let claim =
        (sess(), list(offer), task_ref(), 0u8..3).prop_map(|(s, list, task, owner)| Step::Claim {
            s,
            list,
            task,
            owner,
        });
    let bad = (sess(), bad(offer)).prop_map(|(s, bad)| Step::Bad { s, bad });
    let restart = sess().prop_map(|s| Step::Restart { s });
    let foreign = (
        list(offer),
        task_ref(),
        prop_oneof![
            Just(Foreign::Garbage),
            Just(Foreign::Symlink),
            Just(Foreign::ExtraField)
        ],
    )
        .prop_map(|(list, task, what)| Step::Foreign { list, task, what });
    // A wait shrinks toward no wait, like any number proptest generates.
    let wait = (0..=between.wait_max_tenths).prop_map(|tenths| Step::Wait { tenths });
    let event = (
        sess(),
        prop_oneof![
            Just(EventGen::Clear),
            Just(EventGen::Compact),
            Just(EventGen::ExitResume)
        ],
    )
        .prop_map(|(s, event)| Step::Event { s, event });
    let weight = |offered: bool, w: u32| if offered { w } else { 0 };
    if lane {
        let arms: Vec<(u32, BoxedStrategy<Step>)> = vec![
            (4, create.boxed()),
            (3, get.boxed()),
            (6, update.boxed()),
            (5, status_walk.boxed()),
            (weight(offer.has(Feature::Delete), 5), delete.boxed()),
            (2, listing.boxed()),
            (weight(offer.has(Feature::Claim), 5), claim.boxed()),
        ];
        return Union::new_weighted(arms.into_iter().filter(|(w, _)| *w > 0).collect()).boxed();
    }
    // proptest refuses an arm of weight 0, so the arms a target cannot have are left out.
    let arms: Vec<(u32, BoxedStrategy<Step>)> = vec![
        (10, create.boxed()),
        (4, get.boxed()),
        (12, update.boxed()),
        (5, status_walk.boxed()),
        (weight(offer.has(Feature::Delete), 3), delete.boxed()),
        (3, listing.boxed()),
        (weight(offer.has(Feature::Claim), 3), claim.boxed()),
        (2, bad.boxed()),
        (u32::from(sessions), restart.boxed()),
        (weight(offer.files, 2), foreign.boxed()),
        (weight(between.wait_max_tenths > 0, 2), wait.boxed()),
        (weight(between.events, 2), event.boxed()),
    ];
    Union::new_weighted(arms.into_iter().filter(|(w, _)| *w > 0).collect()).boxed()
}

/// A plain create in the first list, by the first session.
fn plain_create() -> impl Strategy<Value = Step> {
    any::<u8>().prop_map(|n| Step::Create {
        s: 0,
        list: 0,
        subject: Subject::Plain(n),
        blocked_by: Vec::new(),
        blocks: Vec::new(),
        owner: None,
        metadata: None,
    })
}

/// A sequence of 1 to `max` steps: one or two plain creates, then the rest drawn from
/// everything. Without a create first, most steps of a short sequence named tasks that did
/// not exist yet (before this, three in five updates against the reference answered
/// `not_found`); shrinking still removes them when they do not matter.
pub fn steps(
    max: usize,
    offer: &Offer,
    sessions: bool,
    between: BetweenRequests,
) -> BoxedStrategy<Vec<Step>> {
    let max = max.max(1);
    (
        vec(plain_create(), 1..=2.min(max)),
        vec(step(offer, sessions, between), 0..=max.saturating_sub(1)),
    )
        .prop_map(move |(mut first, rest)| {
            first.extend(rest);
            first.truncate(max);
            first
        })
        .boxed()
}

/// How big a case's parallel part may be: `lanes` sessions at most (two at least; below two
/// there is no parallel part, and every case is a sequence), each sending up to `steps`
/// requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parallel {
    pub lanes: u8,
    pub steps: u8,
}

impl Parallel {
    /// No parallel part: every case is one sequence, as before issue 53.
    pub const OFF: Parallel = Parallel { lanes: 0, steps: 0 };

    pub fn is_on(self) -> bool {
        self.lanes >= 2 && self.steps >= 1
    }
}

impl Default for Parallel {
    /// Two or three sessions of up to three requests each: enough for a delete to meet an
    /// update or a claim of the same task, small enough that the history of the whole list
    /// is searched in milliseconds.
    fn default() -> Parallel {
        Parallel { lanes: 3, steps: 3 }
    }
}

/// One case: a sequence (`steps`), and in a concurrent case then a parallel part (`lanes`,
/// each one session's requests, sent at the same time as the other lanes') and the
/// requests after it (`then`, by `main`). A case without lanes is a sequence.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    pub steps: Vec<Step>,
    pub lanes: Vec<Vec<Step>>,
    pub then: Vec<Step>,
    /// Send the lanes' requests one after another (round by round: each lane's first, then
    /// each lane's second, each by the lane's session) instead of at once:
    /// [`Case::serialized`].
    pub serial: bool,
    /// The lanes meet before each round of requests, so the n-th requests of all lanes
    /// start together; otherwise they only start together and then drift, so a lane's later
    /// request meets another's earlier one. Half the concurrent cases each way: which one
    /// meets a store's race depends on how long its requests take.
    pub lockstep: bool,
}

impl Case {
    /// A case that is one sequence.
    pub fn sequence(steps: Vec<Step>) -> Case {
        Case {
            steps,
            lanes: Vec::new(),
            then: Vec::new(),
            serial: false,
            lockstep: false,
        }
    }

    pub fn is_concurrent(&self) -> bool {
        !self.lanes.is_empty()
    }

    /// Every step of the case, lanes and what follows them included.
    pub fn len(&self) -> usize {
        self.steps.len() + self.lanes.iter().map(Vec::len).sum::<usize>() + self.then.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The same requests, the lanes' sent one after another (round by round) instead of at
    /// once, and each answer compared with the model's as a sequence's is. A concurrent case
    /// whose divergence this shows too found no race but a sequence's bug, which is reported
    /// as the sequence's.
    pub fn serialized(&self) -> Case {
        Case {
            serial: true,
            ..self.clone()
        }
    }
}

/// The cases of a run. With the parallel part off they are exactly the sequences of
/// [`steps`] (the same seed gives the sequences it gave before issue 53); with it on, half
/// of the cases are such sequences and half are concurrent: one to three plain creates and
/// up to four more requests by `main` (no files or malformed requests: the replay's model
/// knows neither), then the lanes, then up to two requests by `main`
/// before the final listings. Shrinking makes each part shorter and the lanes fewer (two at
/// least: a case of one lane is a sequence, another finding).
pub fn cases(
    max: usize,
    offer: &Offer,
    sessions: bool,
    between: BetweenRequests,
    parallel: Parallel,
) -> BoxedStrategy<Case> {
    let sequences = steps(max, offer, sessions, between).prop_map(Case::sequence);
    if !parallel.is_on() {
        return sequences.boxed();
    }
    let lane_steps = usize::from(parallel.steps);
    let concurrent = (
        vec(plain_create(), 1..=3),
        vec(lane_step(offer), 0..=4),
        vec(
            vec(lane_step(offer), 1..=lane_steps),
            2..=usize::from(parallel.lanes).min(SESSIONS.len()),
        ),
        vec(lane_step(offer), 0..=2),
        any::<bool>(),
    )
        .prop_map(|(mut first, rest, lanes, then, lockstep)| {
            first.extend(rest);
            Case {
                steps: first,
                lanes,
                then,
                serial: false,
                lockstep,
            }
        });
    prop_oneof![1 => sequences, 1 => concurrent].boxed()
}
