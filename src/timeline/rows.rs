//! The behaviours a timeline follows: each row is a probe (a scenario's verdict, or whether
//! a race finds an anomaly) with a title.

use crate::bisect::Change;
use taskproof_claude_code::Config;
use taskproof_race::{AnomalyKind, Workload};

/// How a row's behaviour is judged at one version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowProbe {
    /// The scenario's verdict under strict (pass, fail, skip).
    Scenario(String),
    /// One step's verdict (pass, fail, skip, not reached), every step of the scenario run.
    Step(String, usize),
    /// Whether the race (4 writers x 5 ops, seed 1) finds the anomaly.
    Race(Workload, AnomalyKind),
    /// One rule of a background-task scenario (`run --suite background`,
    /// docs/background.md): `fail` when a failure of the scenario cites the rule, else the
    /// scenario's `pass` or `skip`. One rule, because a version can break several in one
    /// scenario (2.1.17's seven-character ids fail B6 in every one), and a row follows one.
    Background(String, &'static str),
}

impl RowProbe {
    /// The key the row's points are cached under: `scenario:ID`, `race:W:KIND`.
    pub fn key(&self) -> String {
        match self {
            RowProbe::Scenario(id) => format!("scenario:{id}"),
            RowProbe::Step(id, n) => format!("scenario:{id}:steps[{n}]"),
            RowProbe::Race(w, a) => format!("race:{w}:{}", a.name()),
            RowProbe::Background(id, rule) => format!("background:{id}:{rule}"),
        }
    }

    pub fn change(&self) -> Change {
        match self {
            RowProbe::Race(..) => Change::Anomaly,
            _ => Change::Verdict,
        }
    }
}

/// One row of the timeline.
#[derive(Debug, Clone)]
pub struct Row {
    /// A short id, for `--row` and for anchors.
    pub id: &'static str,
    pub title: &'static str,
    pub probe: RowProbe,
    /// What the row's answers mean (which answer is the behaviour named in the title).
    pub reading: &'static str,
    /// The configuration every version of the row runs in (issue 54): teams off, the
    /// default, unless the behaviour is one of agent teams.
    pub config: Config,
}

impl Row {
    /// The key the row's points are cached under: the probe's ([`RowProbe::key`]), with
    /// `@CONFIG` after it for a configuration other than the default, so that a verdict of
    /// one configuration is never taken for another's.
    pub fn key(&self) -> String {
        match self.config {
            Config::TeamsOff => self.probe.key(),
            c => format!("{}@{c}", self.probe.key()),
        }
    }

    /// The title with the configuration it holds for: `delete arrives (teams-off)`.
    pub fn titled(&self) -> String {
        format!("{} ({})", self.title, self.config)
    }
}

/// The rows of the Claude Code timeline: the behaviours the issues measured by hand.
pub fn claude_code() -> Vec<Row> {
    vec![
        Row {
            id: "delete",
            title: "delete arrives",
            probe: RowProbe::Scenario("rt07-deletion".into()),
            reading: "skip: the version has no delete (TaskUpdate status deleted); pass: it deletes",
            config: Config::TeamsOff,
        },
        Row {
            id: "ids-reused",
            title: "ids stop being reused after delete and restart",
            probe: RowProbe::Scenario("ids-never-reused-after-delete-and-restart".into()),
            reading: "fail: a deleted task's id is handed out again after a restart; pass: never",
            config: Config::TeamsOff,
        },
        Row {
            id: "duplicate-ids",
            title: "duplicate ids from two processes end",
            probe: RowProbe::Scenario("two-processes-creating-get-different-ids".into()),
            reading: "fail: two processes creating at once got the same id; pass: different ids",
            config: Config::TeamsOff,
        },
        Row {
            id: "torn-writes",
            title: "torn writes end",
            probe: RowProbe::Race(Workload::Metadata, AnomalyKind::TornWrites),
            reading: "torn_writes: seen: a raw reader found a task file half written during the race `metadata` (4 writers x 5 ops, seed 1); none: never",
            config: Config::TeamsOff,
        },
        Row {
            id: "edges-mirrored",
            title: "edges mirrored from either side",
            probe: RowProbe::Step("edges-mirrored-from-either-side".into(), 5),
            reading: "pass: addBlocks on the blocker shows in the blocked task's blockedBy; fail: it does not. The step, not the scenario: the scenario fails at steps[7] in every version because removing an edge is unsupported by taskproof's Claude Code mapping (the tools have no way to remove one), an adapter limit, not the store's behaviour",
            config: Config::TeamsOff,
        },
        Row {
            id: "finished-list-deleted",
            title: "finished named lists deleted (left idle 7 s)",
            probe: RowProbe::Scenario("nothing-vanishes-finished-list-left-idle".into()),
            reading: "fail: the terminal UI deletes every task of a list whose tasks are all completed, 5 s after; pass: kept",
            config: Config::TeamsOff,
        },
        Row {
            id: "own-list-resume-teams",
            title: "the session's own list kept on resume with agent teams on",
            probe: RowProbe::Scenario("nothing-vanishes-own-list-after-exit-and-resume".into()),
            reading: "fail: after /exit and --resume <session id> the terminal UI works in a new team folder session-<8 hex of a fresh id> and TaskList answers \"No tasks found\" while the tasks lie in the old one; pass: it lists them (issue 54)",
            config: Config::TeamsEnv,
        },
        Row {
            id: "bg-notified",
            title: "background tasks notified to the model",
            probe: RowProbe::Background("completion".into(), "B2"),
            reading: "B2 in `completion`. fail: a background task that exits 0 is not notified to the model exactly once; pass: it is",
            config: Config::TeamsOff,
        },
        Row {
            id: "bg-session-end",
            title: "background tasks ended with the session",
            probe: RowProbe::Background("session-end-kills-tasks".into(), "B7"),
            reading: "B7 in `session-end-kills-tasks`. fail: a task's processes outlive the end of the session's input (the CLI exits leaving them, or waits for them until it is killed); pass: the CLI ends them",
            config: Config::TeamsOff,
        },
        Row {
            id: "bg-ids",
            title: "background task ids a letter and eight random characters",
            probe: RowProbe::Background("ids".into(), "B6"),
            reading: "B6 in `ids`. fail: a task id is not a type letter and eight of [0-9a-z] (or ids repeat, or an output file lies outside the session's folder); pass: it is",
            config: Config::TeamsOff,
        },
    ]
}
