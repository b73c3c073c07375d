//! The results of a run, as the events carry them to the reporters: a scenario's judged
//! [`Outcome`] or the [`TargetFailure`] that kept it from being judged, each broken
//! expectation ([`StepFailure`]), the suite's [`SuiteResult`] and its [`Summary`].
//!
//! A scenario ends in one of four outcomes, [`Outcome::Pass`], [`Outcome::Fail`] (an answer
//! broke an expectation: a conformance result), [`Outcome::NotJudged`] (it needs an optional
//! part of the contract the target does not declare) or [`Outcome::Skip`] (the profile has
//! no expectations for it, a skip list names it, a precondition was not met), or in a
//! [`TargetFailure`]: the target crashed, hung, or broke the protocol, so nothing could be
//! judged. The two are kept apart as proptest keeps a rejected
//! case apart from a failed one.
//!
//! These types are the reporters' vocabulary; the scenario runner produces them, so its
//! imports point here and never the other way.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::Value;

use taskproof_core::protocol::{Answer, Feature, Hello};
use taskproof_core::rule::{Class, Rule};
use taskproof_profile::RunProfile;

/// The judged outcome of a scenario that the target did not break.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Pass,
    Fail(Vec<StepFailure>),
    Skip(String),
    /// The optional parts the scenario needs and the target does not declare, each with
    /// the first step that needs it (`None`: the scenario's `needs` names it). Never a
    /// failure; the report says what was not judged.
    NotJudged(Vec<(Feature, Option<usize>)>),
}

/// `metadata (steps[3]) and lists (named in needs)`.
pub fn needs_text(parts: &[(Feature, Option<usize>)]) -> String {
    parts
        .iter()
        .map(|(f, at)| match at {
            Some(i) => format!("{f} (steps[{i}])"),
            None => format!("{f} (named in needs)"),
        })
        .collect::<Vec<_>>()
        .join(" and ")
}

/// One broken expectation, with everything a person needs to act on it.
#[derive(Debug, Clone, PartialEq)]
pub struct StepFailure {
    /// Index in the file's `steps` (`None` for checks after the last step).
    pub step: Option<usize>,
    pub session: Option<String>,
    /// The request as sent (placeholders filled), when the step sent one.
    pub request: Option<Value>,
    pub expected: Value,
    pub actual: Value,
    /// What differs, in words.
    pub reason: String,
    pub rules: Vec<Rule>,
    pub note: Option<String>,
    /// The step as written in the file.
    pub step_json: Option<Value>,
    /// Set when a session step (a `wait`, `clear`, `compact`, `exit`, `kill`, `resume`)
    /// came before the failing step: what happened between the requests.
    pub witness: Option<EventWitness>,
}

impl StepFailure {
    /// The failure's consequence class (docs/spec.md, "Consequence classes"): see
    /// [`failure_class`].
    pub fn class(&self) -> Option<Class> {
        failure_class(&self.rules, &self.expected, &self.actual)
    }
}

/// How a refusal failed: the kind the answer gave, and the kind the step expected (`None`
/// when it expected a success). `None` when the answer is no refusal, the refusal the step
/// expected, or, where a success was expected, a refusal that says the data is gone or
/// unreadable (`not_found`, `corrupt`, `io`), which is the rules' own.
pub fn refused_instead(expected: &Value, actual: &Value) -> Option<(String, Option<String>)> {
    if actual.get("ok") != Some(&Value::Bool(false)) {
        return None;
    }
    let got = actual.pointer("/error/kind").and_then(Value::as_str)?;
    let wanted = expected
        .get("error")
        .and_then(Value::as_str)
        .map(str::to_string);
    if wanted.is_none() && matches!(got, "not_found" | "corrupt" | "io") {
        return None;
    }
    (wanted.as_deref() != Some(got)).then(|| (got.to_string(), wanted))
}

/// A failure's consequence class: its first rule's, except for a refusal of the wrong kind
/// (a self-edge refused as `cycle` where the contract says `dangling`) or of a request the
/// contract accepts (an `unsupported` patch field): nothing was accepted, so it is no
/// `accepts-refused` failure, and no data was lost; it is `input` (refused with another
/// error). A refusal that says the task is gone (`not_found`, `corrupt`, `io`) keeps its
/// rules' class: an acknowledged task that cannot be read back is lost data.
pub fn failure_class(rules: &[Rule], expected: &Value, actual: &Value) -> Option<Class> {
    if refused_instead(expected, actual).is_some() {
        return Some(Class::Input);
    }
    Class::of(rules)
}

/// What happened between requests before a failing step: the last session step before it,
/// the files of the root just before that step and when the failing step was judged, and
/// the seconds in between. It shows a task that vanished without a `delete`: its file is in
/// `before` and not in `after`.
#[derive(Debug, Clone, PartialEq)]
pub struct EventWitness {
    /// The session step, in words: `steps[4] wait 7 s`, `steps[3] clear (session main)`.
    pub event: String,
    /// Seconds from just before the session step to the failing step's judgement.
    pub seconds: f64,
    /// Files under the root (relative paths, with their sizes) just before the session step;
    /// `None` when the target's layout is opaque (its files say nothing).
    pub before: Option<Vec<String>>,
    /// The same, when the failing step was judged.
    pub after: Option<Vec<String>>,
    /// Each task file that was seen after an earlier step and is gone now, with the steps
    /// between which it went: `shared-plan/1.json: last seen after steps[3] (at 4.2 s), gone
    /// after steps[4] (at 11.3 s)`. Times count from the scenario's first step.
    pub vanished: Vec<String>,
    /// For a failing request: what became of the tasks it is about that its list held just
    /// before the session step (their files deleted, or kept while the answer no longer
    /// shows them); `None` when neither explains the failure, or the layout is opaque.
    pub finding: Option<Finding>,
}

/// What a failing request after a session step shows of the tasks its list held just before
/// that step. The two kinds are different findings: a store that deletes the files loses the
/// tasks (S14, nothing vanishes); one that keeps them where the session no longer looks has
/// the tasks still on disk, out of the agent's reach (for the session's own list after
/// `/clear`, a new session id names a new, empty list).
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub kind: FindingKind,
    /// The task files concerned, relative to the root, as they were named just before the
    /// session step: the deleted ones, or the kept ones the answer does not show.
    pub files: Vec<String>,
    /// Of the kept files, those whose bytes differ from what they held just before the step.
    pub changed: Vec<String>,
    /// The folder of the list the request named, just before the session step.
    pub list_before: String,
    /// The same folder when the failing step was judged, when the target says (it differs
    /// when the session's own list is now another: a new session id).
    pub list_now: Option<String>,
}

/// The kind of a [`Finding`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FindingKind {
    /// The task files are gone.
    Deleted,
    /// The task files are still on disk, and the answer does not show their tasks.
    KeptUnseen,
}

impl FindingKind {
    /// How the JSON report names it.
    pub fn as_str(self) -> &'static str {
        match self {
            FindingKind::Deleted => "deleted",
            FindingKind::KeptUnseen => "kept_unseen",
        }
    }
}

impl Finding {
    /// The finding in words, as the terminal and Markdown reports give it.
    pub fn words(&self) -> String {
        let files = self.files.join(", ");
        let lists = match &self.list_now {
            Some(now) if *now != self.list_before => format!(
                "; the list it reads is {now} now, was {} before it",
                self.list_before
            ),
            _ => String::new(),
        };
        match self.kind {
            FindingKind::Deleted => format!("files deleted: {files} gone from disk{lists}"),
            FindingKind::KeptUnseen => {
                let state = if self.changed.is_empty() {
                    "unchanged".to_string()
                } else if self.changed.len() == self.files.len() {
                    "changed".to_string()
                } else {
                    format!("changed: {}", self.changed.join(", "))
                };
                format!(
                    "files kept, the agent no longer sees them: {files} still on disk ({state}), not in the answer{lists}"
                )
            }
        }
    }
}

impl EventWitness {
    /// The files present before and gone after.
    pub fn gone(&self) -> Vec<&str> {
        match (&self.before, &self.after) {
            (Some(b), Some(a)) => {
                let names = |v: &Vec<String>| -> BTreeSet<String> {
                    v.iter().map(|f| file_name_of(f).to_string()).collect()
                };
                let now = names(a);
                b.iter()
                    .map(|f| file_name_of(f))
                    .filter(|f| !now.contains(*f))
                    .collect()
            }
            _ => Vec::new(),
        }
    }
}

/// `l/1.json` of `l/1.json (312 B)`.
fn file_name_of(entry: &str) -> &str {
    entry.split(" (").next().unwrap_or(entry)
}

/// A step that did not run, and why (its file steps, against a target whose layout is
/// opaque, and the steps that depend on them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepSkip {
    pub step: usize,
    pub reason: String,
}

/// The target crashed, hung or broke the protocol: nothing could be judged.
#[derive(Debug, Clone, PartialEq)]
pub struct TargetFailure {
    pub step: Option<usize>,
    pub request: Option<Value>,
    pub message: String,
}

/// One judged request of a scenario (a `send` step): what was sent, what came back, what
/// the scenario expected, and the verdict. Every `send` step whose answer arrived and was
/// protocol-valid gets one, in step order, whether it passed or not; a step whose request
/// never got a valid answer is the scenario's [`TargetFailure`] instead.
#[derive(Debug, Clone, PartialEq)]
pub struct StepRecord {
    /// Index in the file's `steps`.
    pub step: usize,
    pub session: String,
    /// The request as sent (placeholders filled).
    pub request: Value,
    /// The answer as received, and decoded.
    pub answer: Answer,
    /// The expectation as judged (placeholders filled), in the scenario file's form.
    pub expected: Value,
    pub verdict: StepVerdict,
}

/// Whether an answer met its expectation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepVerdict {
    Pass,
    /// It did not; what differs, in words.
    Fail(String),
}

/// The result of one scenario.
#[derive(Debug, Clone)]
pub struct ScenarioResult {
    pub id: String,
    pub title: String,
    pub file: std::path::PathBuf,
    pub source: Option<String>,
    pub rules: Vec<Rule>,
    pub result: Result<Outcome, TargetFailure>,
    /// What the target's sessions wrote to stderr (the tail, labelled by session).
    pub stderr: String,
    /// Observations that do not fail the scenario (a concurrent block the profile does not
    /// promise, say).
    pub notes: Vec<String>,
    /// Notes about the target that any scenario with such a step would get (`steps[6] wait:
    /// reference runs in this process and does nothing between requests, …`): the terminal
    /// says each once per run, after the scenarios; the JSON and Markdown reports keep them
    /// with the scenario's notes ([`ScenarioResult::all_notes`]).
    pub target_notes: Vec<String>,
    /// Steps that did not run while the rest of the scenario did.
    pub skipped_steps: Vec<StepSkip>,
    /// The steps the scenario has under the run's profile, judged or not.
    pub step_count: usize,
    /// [recorded profiles] Steps the profile the run held the target to records as
    /// time-dependent (`record`'s time probe): accepted either way, shown as such.
    pub time_dependent: Vec<usize>,
    /// Every judged request, in order (reported as [`super::events::Event::StepFinished`]).
    pub steps: Vec<StepRecord>,
    pub elapsed: Duration,
}

/// The four ways a scenario can end, flattened for reports and counts: the schema's
/// [`super::schema::OutcomeKind`].
pub use crate::schema::OutcomeKind;

impl ScenarioResult {
    pub fn kind(&self) -> OutcomeKind {
        match &self.result {
            Ok(Outcome::Pass) => OutcomeKind::Pass,
            Ok(Outcome::Fail(_)) => OutcomeKind::Fail,
            Ok(Outcome::Skip(_)) => OutcomeKind::Skip,
            Ok(Outcome::NotJudged(_)) => OutcomeKind::NotJudged,
            Err(_) => OutcomeKind::Error,
        }
    }

    /// For a pass with steps that were not judged (file steps against an opaque layout, and
    /// the steps that depend on them): how many steps were judged, of how many. A partial
    /// pass is a pass, reported apart from a full one.
    pub fn partial(&self) -> Option<(usize, usize)> {
        if self.kind() != OutcomeKind::Pass || self.skipped_steps.is_empty() {
            return None;
        }
        let of = self.step_count.max(self.skipped_steps.len());
        Some((of - self.skipped_steps.len(), of))
    }

    /// The scenario's notes and then its notes about the target.
    pub fn all_notes(&self) -> Vec<String> {
        self.notes
            .iter()
            .chain(&self.target_notes)
            .cloned()
            .collect()
    }

    pub fn failures(&self) -> &[StepFailure] {
        match &self.result {
            Ok(Outcome::Fail(f)) => f,
            _ => &[],
        }
    }

    /// Why it was skipped or errored, or a one-line summary of the first failure.
    pub fn reason(&self) -> Option<String> {
        match &self.result {
            Ok(Outcome::Pass) => None,
            Ok(Outcome::Skip(r)) => Some(r.clone()),
            Ok(Outcome::NotJudged(parts)) => {
                Some(match parts.iter().filter_map(|(_, at)| *at).min() {
                    Some(from) if parts.iter().all(|(_, at)| at.is_some()) => format!(
                        "not judged from steps[{from}] on: it needs {}, which the target does not declare; every step before passed",
                        needs_text(parts)
                    ),
                    _ => format!(
                        "not judged: it needs {}, which the target does not declare",
                        needs_text(parts)
                    ),
                })
            }
            Ok(Outcome::Fail(f)) => f.first().map(|f| match f.step {
                Some(i) => format!("steps[{i}]: {}", f.reason),
                None => f.reason.clone(),
            }),
            Err(e) => Some(match e.step {
                Some(i) => format!("steps[{i}]: {}", e.message),
                None => e.message.clone(),
            }),
        }
    }

    /// The consequence class of a failed scenario (docs/spec.md, "Consequence classes"):
    /// the most severe class of its failures, each of which has its first rule's, or its
    /// own first rule's when no failure names a rule; `None` unless it failed.
    pub fn class(&self) -> Option<Class> {
        if self.kind() != OutcomeKind::Fail {
            return None;
        }
        self.failures()
            .iter()
            .filter_map(StepFailure::class)
            .min()
            .or_else(|| Class::of(&self.rules))
    }

    /// The class line of a failed scenario: the class and its title, and for a refusal
    /// the class was given for, why it is no `accepts-refused` failure.
    pub fn class_words(&self) -> Option<String> {
        let c = self.class()?;
        let why = self
            .failures()
            .iter()
            .filter(|f| f.class() == Some(c))
            .find_map(|f| refused_instead(&f.expected, &f.actual))
            .map(|(got, wanted)| match wanted {
                Some(w) => {
                    format!(": refused as {got} where the contract says {w}; nothing was accepted")
                }
                None => format!(
                    ": a request the contract accepts was refused ({got}); nothing was accepted"
                ),
            })
            .unwrap_or_default();
        Some(format!("{} ({}){why}", c.as_str(), c.title()))
    }

    /// The rule ids a failure is attributed to (the failing steps' rules), empty unless the
    /// scenario failed.
    pub fn failed_rules(&self) -> BTreeSet<Rule> {
        self.failures()
            .iter()
            .flat_map(|f| f.rules.iter().copied())
            .collect()
    }
}

/// What is known about the target before any scenario runs: its `hello`, asked once on a
/// scratch root.
#[derive(Debug, Clone)]
pub struct TargetInfo {
    pub spec: String,
    /// The named configuration the target ran in (Claude Code: `teams-off`, `teams-env`,
    /// ...), for kinds that have them: every verdict of the run holds for it only.
    pub configuration: Option<String>,
    pub hello: Result<Hello, String>,
    /// The adapter's stderr when the hello failed.
    pub stderr: String,
}

/// Counts over a suite; `failed` and `errors` are kept apart here, added up on the
/// summary line (the schema's type, as the JSON report writes it).
pub use crate::schema::Summary;

/// The results of a suite, sorted by scenario id.
#[derive(Debug, Clone)]
pub struct SuiteResult {
    pub target: TargetInfo,
    pub profile: RunProfile,
    pub scenarios: Vec<ScenarioResult>,
    pub elapsed: Duration,
    /// How long the target's processes took to start, for kinds that start processes.
    pub starts: Option<StartTimes>,
}

pub use crate::schema::StartTimes;

/// A start is slow from 1 s, or from a quarter of its limit (the words of an `mcp:`
/// target's hello note, `start`, use the same bound).
fn slow(took: Duration, limit: Duration) -> bool {
    took >= Duration::from_secs(1) || took * 4 > limit
}

impl StartTimes {
    /// The starts of a run (each `(took, timed_out)`), with the flags that shaped them and
    /// the run's length; `None` when there was none. `default_ahead` is `--start-ahead`'s
    /// default, offered to a run that turned it off.
    pub fn of(
        greeting: &str,
        starts: &[(Duration, bool)],
        limit: Duration,
        start_ahead: usize,
        jobs: usize,
        elapsed: Duration,
        default_ahead: usize,
    ) -> Option<StartTimes> {
        if starts.is_empty() {
            return None;
        }
        let mut took: Vec<Duration> = starts.iter().map(|(t, _)| *t).collect();
        took.sort_unstable();
        let slowest = took[took.len() - 1];
        let total: Duration = took.iter().sum();
        let timed_out = starts.iter().filter(|(_, t)| *t).count();
        let secs = |d: Duration| d.as_secs_f64();
        let advice = if timed_out > 0 || slowest * 2 > limit {
            // Room for three times the slowest, in tens of seconds.
            let room = (slowest * 3).max(limit * 2).as_secs().div_ceil(10) * 10;
            Some(format!(
                "--start-timeout {room} would give each start room (the slowest took {:.1} s of its {} s{}); fewer --jobs (this run: {jobs}) start fewer at once on a loaded machine",
                secs(slowest),
                limit.as_secs(),
                if timed_out > 0 {
                    format!(", {timed_out} got no answer within it")
                } else {
                    String::new()
                }
            ))
        } else if !slow(slowest, limit) {
            None
        } else if start_ahead == 0 {
            Some(format!(
                "--start-ahead {default_ahead} would start the next scenarios' sessions while earlier ones run (this run, with --start-ahead 0, started each where it was first used, and waited for it)"
            ))
        } else if total.div_f64(start_ahead as f64) * 2 >= elapsed {
            // Starts in flight for the whole run, on average half as many as the starters
            // or more: the run mostly waited on them.
            Some(format!(
                "--start-ahead {} would start more at once where cores are free: the run's {} starts ({:.0} s in all) were {:.1} at a time on average over its {:.0} s",
                start_ahead * 2,
                starts.len(),
                secs(total),
                secs(total) / secs(elapsed).max(0.001),
                secs(elapsed)
            ))
        } else {
            // Made ahead while earlier scenarios ran: no flag would save much, and a line
            // that names none is noise.
            None
        };
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        Some(StartTimes {
            greeting: greeting.to_string(),
            count: starts.len(),
            timed_out,
            slowest_ms: ms(slowest),
            median_ms: ms(took[took.len() / 2]),
            total_ms: ms(total),
            limit_ms: ms(limit),
            start_ahead,
            jobs,
            advice,
        })
    }

    /// The run's one line about slow starts (`spec` names the target), when they were slow.
    pub fn line(&self, spec: &str) -> Option<String> {
        let advice = self.advice.as_ref()?;
        let s = |ms: u64| ms as f64 / 1000.0;
        let waited = if self.timed_out > 0 {
            format!("waited up to {:.1} s for", s(self.slowest_ms))
        } else {
            format!("took up to {:.1} s to answer", s(self.slowest_ms))
        };
        Some(format!(
            "slow starts: {spec} {waited} {} ({} start{}, median {:.1} s{}; --start-timeout {} s): {advice}",
            self.greeting,
            self.count,
            if self.count == 1 { "" } else { "s" },
            s(self.median_ms),
            if self.timed_out > 0 {
                format!(", {} timed out", self.timed_out)
            } else {
                String::new()
            },
            self.limit_ms / 1000
        ))
    }
}

impl SuiteResult {
    pub fn summary(&self) -> Summary {
        let mut s = Summary::default();
        for r in &self.scenarios {
            s.add(r.kind());
            if r.partial().is_some() {
                s.partial += 1;
            }
        }
        s
    }

    /// The failed scenarios by consequence class, most severe first, each class that has
    /// one (docs/spec.md, "Consequence classes").
    pub fn by_class(&self) -> Vec<(Class, Vec<&ScenarioResult>)> {
        Class::ALL
            .into_iter()
            .map(|c| {
                let of: Vec<&ScenarioResult> = self
                    .scenarios
                    .iter()
                    .filter(|r| r.class() == Some(c))
                    .collect();
                (c, of)
            })
            .filter(|(_, of)| !of.is_empty())
            .collect()
    }
}

/// The notes about the target of a run (`ScenarioResult::target_notes`), each said once:
/// its words, then where it was met (`steps[6] wait: reference runs in this process …` of
/// three scenarios is one line, `reference runs in this process … (3 scenarios:
/// a steps[6] wait, …)`). In the order first met.
pub fn target_notes_once(suite: &SuiteResult) -> Vec<String> {
    let mut said: Vec<(String, Vec<String>)> = Vec::new();
    for r in &suite.scenarios {
        for n in &r.target_notes {
            // `steps[6] wait: WORDS`: where, then the words.
            let (at, words) = n.split_once(": ").unwrap_or(("", n));
            let place = if at.is_empty() {
                r.id.clone()
            } else {
                format!("{} {at}", r.id)
            };
            match said.iter_mut().find(|(w, _)| w == words) {
                Some((_, places)) => places.push(place),
                None => said.push((words.to_string(), vec![place])),
            }
        }
    }
    said.into_iter()
        .map(|(words, places)| {
            let n = places.len();
            format!(
                "{words} ({n} scenario{}: {})",
                if n == 1 { "" } else { "s" },
                places.join(", ")
            )
        })
        .collect()
}

/// Whether a scenario was not judged only for parts a store never has (`session_list`: an
/// agent session's own list; `team`: an agent team's members), so that the run says so once rather than per scenario.
pub fn not_judged_for_agents_only(r: &ScenarioResult) -> Option<Vec<Feature>> {
    let Ok(Outcome::NotJudged(parts)) = &r.result else {
        return None;
    };
    // Only session_list and team: `atomic` and `in_progress` are never named in a hello, but a store
    // can lack them, and the scenario then says so itself.
    let agent: Vec<Feature> = parts
        .iter()
        .map(|(f, _)| *f)
        .filter(|f| matches!(f, Feature::SessionList | Feature::Team))
        .collect();
    (!agent.is_empty() && agent.len() == parts.len()).then_some(agent)
}

/// The lines that lead a run's summary with its worst failures: one per consequence class
/// with a failure, most severe first (`data-loss (loses or corrupts acknowledged data), 2
/// failed on S14, S19: ID, ID`); empty when nothing failed.
pub fn by_class_lines(suite: &SuiteResult) -> Vec<(Class, String)> {
    suite
        .by_class()
        .into_iter()
        .map(|(c, of)| {
            // The rules that gave the class: the first of each failure of that class.
            let rules: BTreeSet<Rule> = of
                .iter()
                .flat_map(|r| r.failures().iter())
                .filter(|f| f.class() == Some(c))
                .filter_map(|f| f.rules.first().copied())
                .collect();
            let rules: Vec<Rule> = rules.into_iter().collect();
            let ids: Vec<&str> = of.iter().map(|r| r.id.as_str()).collect();
            let line = format!(
                "{} ({}), {} failed on {}: {}",
                c.as_str(),
                c.title(),
                of.len(),
                join_rules(&rules),
                ids.join(", ")
            );
            (c, line)
        })
        .collect()
}

fn join_rules(rules: &[Rule]) -> String {
    taskproof_core::rule::join(rules, ", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The advice of a run's starts (each in ms, true when timed out), with a 60 s limit,
    /// `ahead` starters, 4 jobs and a run of `run_s` seconds.
    fn advice(starts: &[(u64, bool)], ahead: usize, run_s: u64) -> Option<String> {
        let starts: Vec<(Duration, bool)> = starts
            .iter()
            .map(|&(ms, t)| (Duration::from_millis(ms), t))
            .collect();
        StartTimes::of(
            "initialize",
            &starts,
            Duration::from_secs(60),
            ahead,
            4,
            Duration::from_secs(run_s),
            8,
        )
        .and_then(|s| s.advice)
    }

    #[test]
    fn slow_starts_name_the_flag_that_would_have_helped() {
        assert_eq!(advice(&[], 8, 10), None);
        // Fast starts: nothing to say.
        assert_eq!(advice(&[(200, false), (300, false)], 8, 10), None);
        // Near the limit, or past it: a larger limit, fewer jobs.
        let near = advice(&[(35_000, false)], 8, 100).unwrap();
        assert!(near.starts_with("--start-timeout 120 "), "{near}");
        assert!(near.contains("fewer --jobs (this run: 4)"), "{near}");
        let past = advice(&[(1_000, false), (60_000, true)], 8, 100).unwrap();
        assert!(past.contains("1 got no answer within it"), "{past}");
        // Slow, each waited for: start them ahead.
        let waited = advice(&[(5_000, false)], 0, 100).unwrap();
        assert!(waited.starts_with("--start-ahead 8 "), "{waited}");
        // Slow, made ahead, but the starters were busy for most of the run: more of them.
        let busy = advice(&[(5_000, false); 40], 2, 150).unwrap();
        assert!(busy.starts_with("--start-ahead 4 "), "{busy}");
        // Slow, made ahead while the run went on: no flag saves much, and nothing is said.
        assert_eq!(advice(&[(5_000, false); 4], 8, 150), None);
    }

    #[test]
    fn the_line_names_the_target_the_slowest_start_and_the_limit() {
        let starts = [(Duration::from_millis(5_200), false); 3];
        let t = StartTimes::of(
            "initialize",
            &starts,
            Duration::from_secs(60),
            0,
            4,
            Duration::from_secs(30),
            8,
        )
        .unwrap();
        assert_eq!(
            t.line("mcp:srv").unwrap(),
            "slow starts: mcp:srv took up to 5.2 s to answer initialize (3 starts, median 5.2 s; --start-timeout 60 s): --start-ahead 8 would start the next scenarios' sessions while earlier ones run (this run, with --start-ahead 0, started each where it was first used, and waited for it)"
        );
    }

    fn failing(rules: &[Rule], failures: &[&[Rule]]) -> ScenarioResult {
        let failure = |rules: &[Rule]| StepFailure {
            step: Some(1),
            session: None,
            request: None,
            expected: Value::Null,
            actual: Value::Null,
            reason: "r".into(),
            rules: rules.to_vec(),
            note: None,
            step_json: None,
            witness: None,
        };
        ScenarioResult {
            id: "s".into(),
            title: "t".into(),
            file: "scenarios/s.json".into(),
            source: None,
            rules: rules.to_vec(),
            result: Ok(Outcome::Fail(failures.iter().map(|r| failure(r)).collect())),
            stderr: String::new(),
            notes: Vec::new(),
            target_notes: Vec::new(),
            skipped_steps: Vec::new(),
            step_count: 2,
            time_dependent: Vec::new(),
            steps: Vec::new(),
            elapsed: Duration::ZERO,
        }
    }

    #[test]
    fn a_failure_has_its_first_rules_class_and_a_scenario_its_worst_failures() {
        // A cycle left by concurrent edge additions counts against S7 and S19: it accepts
        // what the contract refuses, not lost data, though S19 guards against that too.
        let cycle = failing(&[Rule::S7, Rule::S19], &[&[Rule::S7, Rule::S19]]);
        assert_eq!(cycle.class(), Some(Class::AcceptsRefused));
        // With --keep-going, a reopened task and then a vanished one: the worst is lost data.
        let both = failing(&[Rule::S4], &[&[Rule::S4], &[Rule::S14]]);
        assert_eq!(both.class(), Some(Class::DataLoss));
        // A failure naming no rule takes the scenario's first.
        let bare = failing(&[Rule::S2, Rule::S19], &[&[]]);
        assert_eq!(bare.class(), Some(Class::Input));
        let mut passed = bare.clone();
        passed.result = Ok(Outcome::Pass);
        assert_eq!(passed.class(), None);
    }

    #[test]
    fn a_refusal_is_no_accepted_change_unless_it_says_the_task_is_gone() {
        use serde_json::json;
        let refused = |kind: &str| json!({"ok": false, "error": {"kind": kind, "message": "m"}});
        // A self-edge at create refused as a cycle where the contract says dangling: the
        // refusal is right, its reason wrong; nothing was accepted.
        let wrong_kind = StepFailure {
            expected: json!({"error": "dangling"}),
            actual: refused("cycle"),
            ..failing(&[Rule::S6], &[&[Rule::S6]]).failures()[0].clone()
        };
        assert_eq!(wrong_kind.class(), Some(Class::Input));
        let mut scenario = failing(&[Rule::S7], &[&[Rule::S6]]);
        scenario.result = Ok(Outcome::Fail(vec![wrong_kind.clone()]));
        let words = scenario.class_words().unwrap();
        assert!(
            words.starts_with(
                "input (input checking): refused as cycle where the contract says dangling"
            ),
            "{words}"
        );
        // A valid update refused as unsupported is no accepts-refused failure either.
        let unsupported = StepFailure {
            expected: json!({"ok": true}),
            actual: refused("unsupported"),
            ..wrong_kind.clone()
        };
        assert_eq!(unsupported.class(), Some(Class::Input));
        // An acknowledged task answered as not found is lost: the rule's class stands.
        let gone = StepFailure {
            expected: json!({"ok": true}),
            actual: refused("not_found"),
            rules: vec![Rule::S14],
            ..wrong_kind.clone()
        };
        assert_eq!(gone.class(), Some(Class::DataLoss));
        // A refusal the contract asks for, accepted: the rule's class.
        let accepted = StepFailure {
            expected: json!({"error": "cycle"}),
            actual: json!({"ok": true}),
            rules: vec![Rule::S7],
            ..wrong_kind
        };
        assert_eq!(accepted.class(), Some(Class::AcceptsRefused));
    }

    #[test]
    fn the_summary_line_counts_errors_apart_from_failures() {
        let s = Summary {
            passed: 3,
            failed: 1,
            skipped: 2,
            errors: 1,
            not_judged: 0,
            partial: 0,
        };
        assert_eq!(s.line(), "3 passed, 1 failed, 1 errors, 2 skipped");
        assert!(!s.ok());
        let scoped = Summary {
            failed: 0,
            errors: 0,
            not_judged: 4,
            ..s
        };
        assert_eq!(
            scoped.line(),
            "3 passed, 0 failed, 0 errors, 2 skipped, 4 not judged"
        );
        let partly = Summary {
            partial: 2,
            ..scoped
        };
        assert_eq!(
            partly.line(),
            "3 passed, 0 failed, 0 errors, 2 skipped, 4 not judged, 2 of the passes partial (part of their steps not judged)"
        );
        assert!(scoped.ok(), "not judged is no failure");
    }
}
