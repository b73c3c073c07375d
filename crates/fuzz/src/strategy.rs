//! The proptest strategies of `taskproof fuzz`: random operation sequences, biased toward
//! what breaks stores: edges (and so cycles), deletes, claims, status changes, bad input,
//! several sessions on one root, restarts, and files written by another program; and, when
//! asked ([`BetweenRequests`]), time passing and what a user does to a session between
//! requests (`/clear`, `/compact`, `/exit` then `--resume`).
//!
//! A generated [`Step`] names tasks by [`Ref`] (the n-th task created so far, or a missing
//! id), not by id, so that any subsequence of a sequence is still meaningful: that is what
//! lets proptest shrink a failing sequence to the few steps that matter.

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::strategy::Union;

/// The lists a sequence uses: mostly one, sometimes a second (isolation, S13).
pub const LISTS: [&str; 2] = ["l", "m"];
/// The sessions a sequence uses: mostly `main`; `b` and `c` are other processes on the root.
pub const SESSIONS: [&str; 3] = ["main", "b", "c"];

/// A task named by position: `Created(n)` is the n-th live-or-deleted task created in the
/// list (modulo how many there are), `Missing(n)` an id past every id handed out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ref {
    Created(u8),
    Missing(u8),
}

/// A subject: normal, or one that breaks S2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subject {
    Plain(u8),
    Unicode,
    Empty,
    TooLong,
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
    /// An id that is not canonical decimal.
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

fn session() -> impl Strategy<Value = u8> {
    prop_oneof![6 => Just(0u8), 1 => Just(1u8), 1 => Just(2u8)]
}

fn list() -> impl Strategy<Value = u8> {
    prop_oneof![6 => Just(0u8), 1 => Just(1u8)]
}

fn task_ref() -> impl Strategy<Value = Ref> {
    prop_oneof![9 => any::<u8>().prop_map(Ref::Created), 1 => (0u8..3).prop_map(Ref::Missing)]
}

fn refs() -> impl Strategy<Value = Vec<Ref>> {
    prop_oneof![3 => Just(Vec::new()), 2 => vec(task_ref(), 1..=2)]
}

fn subject() -> impl Strategy<Value = Subject> {
    prop_oneof![
        12 => any::<u8>().prop_map(Subject::Plain),
        1 => Just(Subject::Unicode),
        1 => Just(Subject::Empty),
        1 => Just(Subject::TooLong),
    ]
}

fn meta_value() -> impl Strategy<Value = MetaValue> {
    prop_oneof![
        any::<i64>().prop_map(MetaValue::Int),
        "[a-zé😀]{0,6}".prop_map(MetaValue::Text),
        (0u8..4).prop_map(MetaValue::Nested),
        (-1e6f64..1e6).prop_map(MetaValue::Float),
    ]
}

fn meta() -> impl Strategy<Value = Meta> {
    vec((0u8..4, prop::option::weighted(0.8, meta_value())), 1..=3)
}

fn status() -> impl Strategy<Value = StatusGen> {
    prop_oneof![
        3 => Just(StatusGen::InProgress),
        3 => Just(StatusGen::Completed),
        3 => Just(StatusGen::Pending),
        1 => Just(StatusGen::Bogus),
    ]
}

fn patch() -> impl Strategy<Value = PatchGen> {
    (
        prop::option::weighted(0.1, subject()),
        prop::option::weighted(0.1, any::<u8>()),
        prop::option::weighted(0.4, status()),
        prop::option::weighted(0.15, prop::option::of(0u8..3)),
        prop::option::weighted(0.05, prop::option::of(any::<u8>())),
        prop::option::weighted(0.2, prop::option::weighted(0.85, meta())),
        refs(),
        refs(),
        prop::option::weighted(0.2, vec(task_ref(), 1..=2)),
        prop::option::weighted(0.2, vec(task_ref(), 1..=2)),
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

fn bad() -> impl Strategy<Value = Bad> {
    prop_oneof![
        3 => (0u8..4).prop_map(Bad::ListName),
        1 => (0u8..3).prop_map(Bad::Id),
        1 => Just(Bad::UnknownField),
        1 => Just(Bad::SubjectType),
        1 => Just(Bad::NullStatus),
        1 => Just(Bad::EdgeType),
    ]
}

/// Steps for a target with the given abilities: `files` when the harness may write into
/// the target's layout (not `opaque`), `sessions` when several sessions and restarts are
/// wanted, and what may happen `between` requests.
pub fn step(files: bool, sessions: bool, between: BetweenRequests) -> BoxedStrategy<Step> {
    let sess = move || -> BoxedStrategy<u8> {
        if sessions {
            session().boxed()
        } else {
            Just(0u8).boxed()
        }
    };
    let create = (
        sess(),
        list(),
        subject(),
        refs(),
        refs(),
        prop::option::weighted(0.15, 0u8..3),
        prop::option::weighted(0.2, meta()),
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
    let get = (sess(), list(), task_ref()).prop_map(|(s, list, task)| Step::Get { s, list, task });
    let update =
        (sess(), list(), task_ref(), patch()).prop_map(|(s, list, task, patch)| Step::Update {
            s,
            list,
            task,
            patch,
        });
    let delete =
        (sess(), list(), task_ref()).prop_map(|(s, list, task)| Step::Delete { s, list, task });
    let listing = (sess(), list()).prop_map(|(s, list)| Step::List { s, list });
    let claim =
        (sess(), list(), task_ref(), 0u8..3).prop_map(|(s, list, task, owner)| Step::Claim {
            s,
            list,
            task,
            owner,
        });
    let bad = (sess(), bad()).prop_map(|(s, bad)| Step::Bad { s, bad });
    let restart = sess().prop_map(|s| Step::Restart { s });
    let foreign = (
        list(),
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
    // proptest refuses an arm of weight 0, so the arms a target cannot have are left out.
    let arms: Vec<(u32, BoxedStrategy<Step>)> = vec![
        (10, create.boxed()),
        (4, get.boxed()),
        (12, update.boxed()),
        (3, delete.boxed()),
        (3, listing.boxed()),
        (3, claim.boxed()),
        (2, bad.boxed()),
        (u32::from(sessions), restart.boxed()),
        (if files { 2 } else { 0 }, foreign.boxed()),
        (
            if between.wait_max_tenths > 0 { 2 } else { 0 },
            wait.boxed(),
        ),
        (if between.events { 2 } else { 0 }, event.boxed()),
    ];
    Union::new_weighted(arms.into_iter().filter(|(w, _)| *w > 0).collect()).boxed()
}

/// A sequence of 1 to `max` steps.
pub fn steps(
    max: usize,
    files: bool,
    sessions: bool,
    between: BetweenRequests,
) -> BoxedStrategy<Vec<Step>> {
    vec(step(files, sessions, between), 1..=max.max(1)).boxed()
}
