//! The scenario file model (docs/scenario-format.md): what the loader produces and the runner
//! replays. Request bodies, task expectations and file contents stay JSON values with their
//! `${name}` placeholders; they are filled in when the step runs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde_json::Value;

use crate::expect::Expect;
use taskproof_core::protocol::Feature;
use taskproof_core::protocol::{MEMBER, request_features};
use taskproof_core::rule::Rule;
use taskproof_profile::Profile;
use taskproof_session::SessionEvent;

/// One scenario file.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub id: String,
    pub title: String,
    pub source: Option<String>,
    /// The SPEC rule ids the scenario checks.
    pub rules: Vec<Rule>,
    /// Features named in the file; [`Scenario::needs_for`] adds what the steps use.
    pub needs: BTreeSet<Feature>,
    /// The profiles the scenario has expectations for.
    pub profiles: Vec<Profile>,
    pub steps: Vec<Step>,
    /// Where it was loaded from.
    pub file: PathBuf,
}

impl Scenario {
    /// The steps that run under `profile`.
    pub fn steps_for(&self, profile: Profile) -> impl Iterator<Item = &Step> {
        self.steps.iter().filter(move |s| s.runs_under(profile))
    }

    /// Every feature the scenario needs under `profile`, each with the first step that
    /// needs it (`None` when the file's `needs` names it).
    pub fn needs_for(&self, profile: Profile) -> BTreeMap<Feature, Option<usize>> {
        let mut out: BTreeMap<Feature, Option<usize>> =
            self.needs.iter().map(|f| (*f, None)).collect();
        for step in self.steps_for(profile) {
            for f in step.features(profile) {
                out.entry(f).or_insert(Some(step.index));
            }
        }
        // A second list is where separate lists begin to matter.
        if let Some((_, at)) = super::gate::scenario_lists(self, profile).get(1) {
            out.entry(Feature::Lists).or_insert(Some(*at));
        }
        out
    }

    /// Whether the scenario plays a user at a terminal: it waits, or it clears, compacts,
    /// exits or resumes a session. Agent targets then run its sessions the way a person
    /// uses them (Claude Code: its terminal UI rather than print mode). A `kill` alone does
    /// not: SIGKILL ends a process the same way however it was driven, and the scenarios
    /// that kill (S14) were recorded in print mode. A request a team member sends (with a
    /// `member`) does: Claude Code runs teammates in its terminal UI only.
    pub fn plays_a_user(&self, profile: Profile) -> bool {
        self.steps_for(profile).any(|s| match &s.action {
            Action::Wait(_) | Action::Event { .. } => true,
            Action::Send { request, .. } => request.get(MEMBER).is_some(),
            _ => false,
        })
    }
}

/// One step: an action and the keys every step may have.
#[derive(Debug, Clone)]
pub struct Step {
    /// Position in the file's `steps` array, from 0 (`steps[3]` in messages).
    pub index: usize,
    /// The session it runs in (`main` unless given).
    pub session: String,
    /// The profiles it runs under; `None` for all.
    pub only: Option<Vec<Profile>>,
    /// Rule ids for this step's failures; `None` for the scenario's.
    pub rules: Option<Vec<Rule>>,
    pub note: Option<String>,
    /// Set on a setup step that assumes something of the target (that it keeps a file of
    /// its own, say): what it assumes. When the step fails, the target does not meet the
    /// scenario's precondition, and the scenario is skipped with this reason, never failed.
    pub precondition: Option<String>,
    pub action: Action,
    /// The step as written, for failure reports.
    pub raw: Value,
}

impl Step {
    pub fn runs_under(&self, profile: Profile) -> bool {
        self.only.as_ref().is_none_or(|o| o.contains(&profile))
    }

    /// The optional target features this step uses under `profile`. A request whose
    /// expectation under the profile is exactly `unsupported` needs nothing: it checks that
    /// the target refuses the operation.
    pub fn features(&self, profile: Profile) -> BTreeSet<Feature> {
        let mut out = BTreeSet::new();
        match &self.action {
            Action::Send {
                request, expect, ..
            } => {
                let refuses = matches!(
                    expect.get(profile),
                    Some(Expect::Error(
                        taskproof_core::protocol::ErrorKind::Unsupported
                    ))
                );
                if !refuses {
                    out.extend(request_features(request));
                }
            }
            Action::Concurrent(c) => {
                for request in c.requests() {
                    out.extend(request_features(request));
                }
            }
            _ => {}
        }
        out
    }
}

/// A value given per profile, with `"*"` as the default.
#[derive(Debug, Clone, PartialEq)]
pub struct PerProfile<T> {
    pub by_profile: BTreeMap<Profile, T>,
    pub default: Option<T>,
}

impl<T> PerProfile<T> {
    pub fn same(v: T) -> PerProfile<T> {
        PerProfile {
            by_profile: BTreeMap::new(),
            default: Some(v),
        }
    }

    pub fn get(&self, p: Profile) -> Option<&T> {
        self.by_profile.get(&p).or(self.default.as_ref())
    }
}

/// What a step does.
#[derive(Debug, Clone)]
pub enum Action {
    /// Send a request (as written, after placeholders) and judge the answer.
    Send {
        request: Value,
        expect: PerProfile<Expect>,
        /// Variable name -> dotted path into a successful answer.
        bind: Vec<(String, String)>,
    },
    Open(String),
    Restart(String),
    Kill(String),
    Close(String),
    /// Real time passes with nothing sent (docs/scenario-format.md, "Session events").
    Wait(std::time::Duration),
    /// Something a user does to an agent session between requests: `clear`, `compact`,
    /// `exit`, `resume` (a `kill` is [`Action::Kill`]).
    Event {
        event: SessionEvent,
        session: String,
    },
    WriteTask {
        list: String,
        id: String,
        task: Value,
    },
    WriteFile {
        path: String,
        contents: Contents,
    },
    OutsideFile {
        name: String,
        contents: Contents,
    },
    Symlink {
        path: String,
        to: LinkTarget,
    },
    Mkdir(String),
    RemoveFile(String),
    AssertFile {
        path: String,
        check: FileCheck,
    },
    AssertOutside {
        name: String,
        text: String,
    },
    Check {
        list: String,
        invariants: Vec<Invariant>,
        /// Ids (placeholders allowed) of exactly the ready tasks.
        ready: Option<Vec<Value>>,
    },
    Concurrent(Concurrent),
}

impl Action {
    /// Whether the step writes to the root directly (so state seen through the store may
    /// differ afterwards when the step cannot run).
    pub fn writes_files(&self) -> bool {
        self.is_file_step() && !matches!(self, Action::AssertFile { .. })
    }

    /// Whether the step judges something (an answer, a listing, a file): a scenario whose
    /// judging steps are all skipped has nothing left to say.
    pub fn judges(&self) -> bool {
        matches!(
            self,
            Action::Send { .. }
                | Action::Check { .. }
                | Action::Concurrent(_)
                | Action::AssertFile { .. }
                | Action::AssertOutside { .. }
        )
    }

    /// Whether the step reads or writes the target's files directly (needs a known layout).
    pub fn is_file_step(&self) -> bool {
        matches!(
            self,
            Action::WriteTask { .. }
                | Action::WriteFile { .. }
                | Action::Symlink { .. }
                | Action::Mkdir(_)
                | Action::RemoveFile(_)
                | Action::AssertFile { .. }
        )
    }
}

/// The contents of a file a step writes.
#[derive(Debug, Clone, PartialEq)]
pub enum Contents {
    /// Text, with placeholders.
    Text(String),
    /// Bytes, decoded from base64 when loaded.
    Bytes(Vec<u8>),
}

/// Where a symbolic link points.
#[derive(Debug, Clone, PartialEq)]
pub enum LinkTarget {
    /// A file under `SANDBOX/outside`.
    Outside(String),
    /// A path inside the root.
    Inside(String),
}

/// What `assert_file` demands.
#[derive(Debug, Clone, PartialEq)]
pub enum FileCheck {
    Exists(bool),
    Text(String),
    /// The file parses as JSON and, decoded from the layout, matches this task expectation.
    Task(Value),
}

/// An invariant over a listing (docs/scenario-format.md, "Invariants").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Invariant {
    Acyclic,
    Mirrored,
    NoDangling,
    CompletedBlockers,
    UniqueIds,
}

impl Invariant {
    pub const ALL: [Invariant; 5] = [
        Invariant::Acyclic,
        Invariant::Mirrored,
        Invariant::NoDangling,
        Invariant::CompletedBlockers,
        Invariant::UniqueIds,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Invariant::Acyclic => "acyclic",
            Invariant::Mirrored => "mirrored",
            Invariant::NoDangling => "no_dangling",
            Invariant::CompletedBlockers => "completed_blockers",
            Invariant::UniqueIds => "unique_ids",
        }
    }
}

/// Several sessions sending at once, judged as a whole afterwards.
#[derive(Debug, Clone)]
pub struct Concurrent {
    pub lanes: Vec<Lane>,
    /// Lanes meet before every repetition, not only at the start, so that the n-th requests
    /// of all lanes really race (lanes that only start together drift apart, and then a
    /// race on the same task is rare).
    pub lockstep: bool,
    pub verify: Verify,
    /// The list the verification reads (empty for `linearizable`, which reads none).
    pub list: String,
    pub expect: PerProfile<VerifyExpect>,
    /// Requests sent one after another once every lane is done (`linearizable` only: they
    /// are judged with the lanes' as one history, the final listings of a fuzz finding).
    pub then: Vec<ThenSend>,
}

impl Concurrent {
    /// Every request the block sends, as written (`${…}` not filled in).
    pub fn requests(&self) -> impl Iterator<Item = &Value> {
        self.lanes
            .iter()
            .flat_map(|l| l.requests())
            .chain(self.then.iter().map(|t| &t.send))
    }
}

/// One thread of a concurrent block.
#[derive(Debug, Clone)]
pub struct Lane {
    pub session: String,
    pub repeat: usize,
    /// The request, with `${i}` the repetition number (`Null` when the lane has `sends`).
    pub send: Value,
    /// Requests sent one after another, each once, instead of `send` repeated (a fuzz
    /// finding's lanes: each session's own requests).
    pub sends: Vec<Value>,
}

impl Lane {
    /// The lane's requests as written: `send` (once, before `${i}` is filled in) or each of
    /// `sends`.
    pub fn requests(&self) -> impl Iterator<Item = &Value> {
        let one = if self.sends.is_empty() {
            Some(&self.send)
        } else {
            None
        };
        one.into_iter().chain(self.sends.iter())
    }
}

/// A request a concurrent block sends after its lanes.
#[derive(Debug, Clone)]
pub struct ThenSend {
    pub session: String,
    pub send: Value,
}

/// How a concurrent block is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verify {
    MetadataKept,
    UniqueIds,
    OneClaim,
    Acyclic,
    /// Some order of the block's requests (the lanes', then `then`'s) respecting real time
    /// has the profile's model, given every request the scenario sent before the block,
    /// answer each as the target did (S19, against the model of the whole store).
    Linearizable,
    /// No task deleted with an acknowledged delete comes back.
    DeletedStayDeleted,
}

impl Verify {
    pub const ALL: [Verify; 6] = [
        Verify::MetadataKept,
        Verify::UniqueIds,
        Verify::OneClaim,
        Verify::Acyclic,
        Verify::Linearizable,
        Verify::DeletedStayDeleted,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Verify::MetadataKept => "metadata_kept",
            Verify::UniqueIds => "unique_ids",
            Verify::OneClaim => "one_claim",
            Verify::Acyclic => "acyclic",
            Verify::Linearizable => "linearizable",
            Verify::DeletedStayDeleted => "deleted_stay_deleted",
        }
    }
}

/// Whether a profile promises the verification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VerifyExpect {
    /// It must hold.
    Holds,
    /// Not promised: the result is reported, never failed.
    Any,
}
