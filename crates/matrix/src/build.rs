//! The matrix as data: scenarios grouped by rule as rows, targets as columns, one cell per
//! pair; and per target the race anomaly counts. The renderers ([`super::html`],
//! [`super::markdown`]) only lay it out.

use std::collections::BTreeMap;

use crate::input::Column;
use taskproof_core::rule::{Class, Rule};
use taskproof_race::report::WorkloadReport as RaceWorkload;
use taskproof_report::schema::{OutcomeKind, ScenarioReport};

/// The short names of SPEC §3's rules, as docs/spec.md gives them.
pub const RULE_NAMES: [(&str, &str); 20] = [
    ("S1", "ids"),
    ("S2", "create input"),
    ("S3", "status values"),
    ("S4", "transitions"),
    ("S5", "AND-blocking"),
    ("S6", "references"),
    ("S7", "no cycles"),
    ("S8", "mirrored edges"),
    ("S9", "completion keeps edges"),
    ("S10", "delete"),
    ("S11", "update"),
    ("S12", "metadata"),
    ("S13", "lists"),
    ("S14", "persistence"),
    ("S15", "reading"),
    ("S16", "other writers"),
    ("S17", "symbolic links"),
    ("S18", "whole files"),
    ("S19", "concurrency"),
    ("S20", "claim"),
];

/// The race report's anomaly keys in the order the race checker lists them, with labels.
pub const ANOMALY_NAMES: [(&str, &str); 9] = [
    ("lost", "lost updates"),
    ("duplicate_ids", "duplicate ids"),
    ("torn_writes", "torn writes"),
    ("torn_reads", "torn reads"),
    ("corrupt_files", "corrupt files"),
    ("double_claims", "double claims"),
    ("cycles", "cycles"),
    ("half_edges", "half edges"),
    ("nonlinearizable", "nonlinearizable tasks"),
];

/// The state of one cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum State {
    Pass,
    /// Passed, with part of its steps not judged (file steps against an opaque layout): a
    /// partial pass, told apart from a full one.
    Partial,
    /// Passed, at a step the recorded profile held to records as time-dependent.
    Timed,
    Fail,
    /// Failed because acknowledged task files vanished between requests (the witness of a
    /// failure after a session step names them).
    Vanished,
    Skip,
    /// The scenario needs an optional part the target does not declare: no verdict.
    NotJudged,
    Error,
    /// The target's report has no such scenario (another suite, a filter).
    Missing,
    /// The column is a race only (a mixed race, say): it has no run report and was never
    /// meant to run the scenarios, so no scenario applies to it. Not a state of the legend.
    RaceOnly,
}

impl State {
    pub const ALL: [State; 9] = [
        State::Pass,
        State::Partial,
        State::Timed,
        State::Fail,
        State::Vanished,
        State::Skip,
        State::NotJudged,
        State::Error,
        State::Missing,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            State::Pass => "pass",
            State::Partial => "partial",
            State::Timed => "timed",
            State::Fail => "fail",
            State::Vanished => "vanished",
            State::Skip => "skip",
            State::NotJudged => "not judged",
            State::Error => "error",
            State::Missing => "not run",
            State::RaceOnly => "race only",
        }
    }

    /// The cell's symbol, so that no reader depends on colour.
    pub fn symbol(self) -> &'static str {
        match self {
            State::Pass => "✓",
            State::Partial => "◐",
            State::Timed => "◷",
            State::Fail => "✗",
            State::Vanished => "⌛",
            State::Skip => "–",
            State::NotJudged => "∅",
            State::Error => "!",
            State::Missing => "·",
            State::RaceOnly => "",
        }
    }

    /// The CSS class.
    pub fn class(self) -> &'static str {
        match self {
            State::Missing => "none",
            State::NotJudged => "notjudged",
            State::RaceOnly => "raceonly",
            s => s.as_str(),
        }
    }
}

impl From<OutcomeKind> for State {
    fn from(o: OutcomeKind) -> State {
        match o {
            OutcomeKind::Pass => State::Pass,
            OutcomeKind::Fail => State::Fail,
            OutcomeKind::Skip => State::Skip,
            OutcomeKind::NotJudged => State::NotJudged,
            OutcomeKind::Error => State::Error,
        }
    }
}

/// One cell: a scenario against a target.
#[derive(Debug, Clone)]
pub struct Cell<'a> {
    pub state: State,
    /// The scenario's record in the target's run report, when there is one.
    pub scenario: Option<&'a ScenarioReport>,
    /// One line: the report's reason, or why the whole column is an error.
    pub reason: Option<String>,
}

/// One scenario across the targets.
#[derive(Debug, Clone)]
pub struct Row<'a> {
    pub id: String,
    pub title: String,
    pub rules: Vec<String>,
    pub cells: Vec<Cell<'a>>,
}

/// The scenarios whose first rule is `rule`.
#[derive(Debug, Clone)]
pub struct Group<'a> {
    pub rule: String,
    pub name: Option<&'static str>,
    /// The rule's consequence class (docs/spec.md): the groups are in the order of their
    /// classes, most severe first, so the grid leads with the rules that guard against lost
    /// data.
    pub class: Option<Class>,
    pub rows: Vec<Row<'a>>,
}

/// One target's race counts, summed over its workload runs.
#[derive(Debug, Clone, Default)]
pub struct RaceColumn<'a> {
    /// Why there are no counts (the race could not run), or `None`.
    pub error: Option<String>,
    /// The race was not run on purpose, or no report was given.
    pub absent: bool,
    /// Per anomaly key: (promised against by the profile, observed only).
    pub counts: BTreeMap<String, (u64, u64)>,
    pub workloads: Vec<&'a RaceWorkload>,
    pub profiles: Vec<String>,
    /// Writers x ops of each report.
    pub shapes: Vec<(usize, usize)>,
    pub target_errors: u64,
    pub lin_unknown: u64,
}

impl RaceColumn<'_> {
    /// Runs that ran (not skipped for a missing feature).
    pub fn ran(&self) -> usize {
        self.workloads
            .iter()
            .filter(|w| w.skipped.is_none())
            .count()
    }

    /// The race table's context rows, by name: how much ran, and what broke.
    pub fn context(&self) -> [(&'static str, u64); 4] {
        [
            ("workloads run", self.ran() as u64),
            (
                "requests acknowledged",
                self.workloads.iter().map(|w| w.acknowledged as u64).sum(),
            ),
            ("target errors", self.target_errors),
            ("linearizability unknown", self.lin_unknown),
        ]
    }
}

/// The whole matrix.
#[derive(Debug, Clone)]
pub struct Matrix<'a> {
    pub columns: &'a [Column],
    pub groups: Vec<Group<'a>>,
    pub races: Vec<RaceColumn<'a>>,
    /// Anomaly keys that appear in any race report, in the checker's order.
    pub anomaly_kinds: Vec<String>,
}

impl Matrix<'_> {
    /// Cells of column `i` in each state.
    pub fn counts(&self, i: usize) -> BTreeMap<State, usize> {
        let mut m = BTreeMap::new();
        for row in self.groups.iter().flat_map(|g| &g.rows) {
            *m.entry(row.cells[i].state).or_default() += 1;
        }
        m
    }

    /// Failed cells of column `i` (failed or vanished) by the consequence class of the
    /// scenario's failure there, most severe first, every class (zero when none).
    pub fn failed_by_class(&self, i: usize) -> Vec<(Class, usize)> {
        Class::ALL
            .into_iter()
            .map(|c| {
                let n = self
                    .rows()
                    .filter(|r| {
                        r.cells[i]
                            .scenario
                            .is_some_and(|s| s.consequence() == Some(c))
                    })
                    .count();
                (c, n)
            })
            .collect()
    }

    /// Every scenario row, in display order.
    pub fn rows(&self) -> impl Iterator<Item = &Row<'_>> {
        self.groups.iter().flat_map(|g| &g.rows)
    }

    /// The profiles the columns were judged by, each once.
    pub fn profiles(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.columns.iter().filter_map(Column::profile).collect();
        v.sort();
        v.dedup();
        v
    }
}

/// The label of an anomaly key.
pub fn anomaly_label(key: &str) -> String {
    ANOMALY_NAMES
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, l)| l.to_string())
        .unwrap_or_else(|| key.replace('_', " "))
}

/// A rule id's consequence class (`None` for an id that is not a rule).
pub fn rule_class(rule: &str) -> Option<Class> {
    rule.parse::<Rule>().ok().map(|r| r.class())
}

/// The number in a rule id (`S12` -> 12), for ordering.
fn rule_number(rule: &str) -> Option<u64> {
    rule.strip_prefix('S').and_then(|n| n.parse().ok())
}

/// The name of a rule, for the group headings.
pub fn rule_name(rule: &str) -> Option<&'static str> {
    RULE_NAMES.iter().find(|(r, _)| *r == rule).map(|(_, n)| *n)
}

/// Why a column has no verdicts at all, when that is so.
pub fn column_error(c: &Column) -> Option<String> {
    if let Some(run) = &c.run {
        return run
            .target
            .error
            .as_ref()
            .map(|e| format!("the target failed its hello: {e}"));
    }
    // Without a reason, there is just no run report (a column of race reports only): its
    // cells are race only, not errors.
    c.run_error.clone()
}

/// A scenario's cell state: its outcome, told apart where time decided it (a failure whose
/// witness shows task files gone between requests; a pass at a time-dependent step).
pub(crate) fn state_of(s: &ScenarioReport) -> State {
    match s.outcome {
        OutcomeKind::Fail
            if s.failures
                .iter()
                .any(|f| f.witness.as_ref().is_some_and(|w| !w.vanished.is_empty())) =>
        {
            State::Vanished
        }
        OutcomeKind::Pass if !s.time_dependent_steps.is_empty() => State::Timed,
        OutcomeKind::Pass if s.partial() => State::Partial,
        o => o.into(),
    }
}

/// Builds the matrix from the columns.
pub fn build(columns: &[Column]) -> Matrix<'_> {
    // Every scenario any report holds, with the first title and rules seen.
    let mut scenarios: BTreeMap<&str, (&str, &[String])> = BTreeMap::new();
    for c in columns {
        for s in c.run.iter().flat_map(|r| &r.scenarios) {
            scenarios
                .entry(s.id.as_str())
                .or_insert((s.title.as_str(), s.rules.as_slice()));
        }
    }
    let errors: Vec<Option<String>> = columns.iter().map(column_error).collect();
    let mut groups: BTreeMap<(u64, u64, String), Vec<Row<'_>>> = BTreeMap::new();
    for (id, (title, rules)) in scenarios {
        let cells = columns
            .iter()
            .zip(&errors)
            .map(|(c, err)| {
                let found = c
                    .run
                    .as_ref()
                    .and_then(|r| r.scenarios.iter().find(|s| s.id == id));
                match (found, err) {
                    (Some(s), _) => Cell {
                        state: state_of(s),
                        scenario: Some(s),
                        reason: s
                            .reason
                            .clone()
                            .or_else(|| s.error.as_ref().map(|e| e.message.clone())),
                    },
                    (None, Some(e)) => Cell {
                        state: State::Error,
                        scenario: None,
                        reason: Some(e.clone()),
                    },
                    (None, None) if c.run.is_none() => Cell {
                        state: State::RaceOnly,
                        scenario: None,
                        reason: Some(
                            "a race only: this column runs no scenarios (see the races)".into(),
                        ),
                    },
                    (None, None) => Cell {
                        state: State::Missing,
                        scenario: None,
                        reason: Some(match c.run.as_ref().map_or(0, |r| r.cut_scenarios) {
                            0 => "this target's report has no such scenario".into(),
                            n => format!(
                                "not in this target's saved report, a trimmed copy that left out {n} scenarios"
                            ),
                        }),
                    },
                }
            })
            .collect();
        let first = rules.first().cloned().unwrap_or_default();
        // By class, most severe first (a group without a class last), then by rule.
        let class = rule_class(&first).map_or(u64::MAX, |c| c as u64);
        let key = (class, rule_number(&first).unwrap_or(u64::MAX), first);
        groups.entry(key).or_default().push(Row {
            id: id.to_string(),
            title: title.to_string(),
            rules: rules.to_vec(),
            cells,
        });
    }
    let groups = groups
        .into_iter()
        .map(|((_, _, rule), rows)| Group {
            name: rule_name(&rule),
            class: rule_class(&rule),
            rule: if rule.is_empty() {
                "no rule".into()
            } else {
                rule
            },
            rows,
        })
        .collect();

    let mut seen: Vec<String> = Vec::new();
    let races = columns
        .iter()
        .map(|c| {
            let mut rc = RaceColumn {
                error: c.race_error.clone(),
                absent: c.races.is_empty() && c.race_error.is_none(),
                ..RaceColumn::default()
            };
            for r in &c.races {
                // Format 1 did not record the profile.
                rc.profiles.push(if r.profile.is_empty() {
                    "(not recorded)".into()
                } else {
                    r.profile.clone()
                });
                rc.shapes.push((r.writers, r.ops));
                for w in &r.workloads {
                    rc.workloads.push(w);
                    rc.target_errors += w.errors.len() as u64;
                    rc.lin_unknown += w.linearizability.unknown as u64;
                    for (k, n) in &w.anomalies {
                        rc.counts.entry(k.clone()).or_default().0 += *n as u64;
                        seen.push(k.clone());
                    }
                    for (k, n) in &w.observations {
                        rc.counts.entry(k.clone()).or_default().1 += *n as u64;
                        seen.push(k.clone());
                    }
                }
            }
            rc.profiles.dedup();
            rc
        })
        .collect();
    seen.sort();
    seen.dedup();
    let mut anomaly_kinds: Vec<String> = ANOMALY_NAMES
        .iter()
        .map(|(k, _)| k.to_string())
        .filter(|k| seen.contains(k))
        .collect();
    anomaly_kinds.extend(
        seen.into_iter()
            .filter(|k| !ANOMALY_NAMES.iter().any(|(n, _)| n == k)),
    );
    Matrix {
        columns,
        groups,
        races,
        anomaly_kinds,
    }
}
