//! Recorded profiles: what a real store did, step by step, written by `taskproof record`
//! and checked in under `profiles/` (docs/profiles.md describes the file).
//!
//! A recorded profile is `strict` plus the differences: for every scenario, the steps whose
//! observation ([`super::observe`]) was not what `strict` expects, and every concurrent
//! block with how often it held. A step left out behaved as `strict` expects. A step whose
//! observation differed between runs of the same target is `racy` and never judged.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::rule::Rule;
use serde_json::{Map, Value, json};

use super::Profile;
use super::observe;

/// The profile file format this build writes and reads.
pub const FORMAT: u64 = 1;

/// The recorded profiles built into the binary: name, other names it answers to, and the
/// file's text (compiled from `profiles/`).
pub const BUILTIN: &[(&str, &[&str], &str)] = &[
    (
        "hand-written-files",
        &[],
        include_str!("../../profiles/hand-written-files.json"),
    ),
    // `cc-2.1.17` is what the scenario files' hand-written expectations (the naive model's)
    // are called; as a profile to hold a target to, the name means what the real 2.1.17 does.
    (
        "claude-code-2.1.17",
        &["cc-2.1.17"],
        include_str!("../../profiles/claude-code-2.1.17.json"),
    ),
    (
        "claude-code-2.1.20",
        &[],
        include_str!("../../profiles/claude-code-2.1.20.json"),
    ),
    (
        "claude-code-2.1.21",
        &[],
        include_str!("../../profiles/claude-code-2.1.21.json"),
    ),
    (
        "claude-code-2.1.112",
        &[],
        include_str!("../../profiles/claude-code-2.1.112.json"),
    ),
    (
        "claude-code-2.1.330",
        &[],
        include_str!("../../profiles/claude-code-2.1.330.json"),
    ),
    // `s07` is what the scenario files' hand-written expectations were called; the name now
    // means what the real lesson does.
    (
        "learn-claude-code-s07",
        &["s07"],
        include_str!("../../profiles/learn-claude-code-s07.json"),
    ),
    (
        "task-master-0.43.1",
        &[],
        include_str!("../../profiles/task-master-0.43.1.json"),
    ),
];

/// What a run holds a target to: the expectations written into the scenario files under
/// one of their profiles, or a recorded profile.
#[derive(Debug, Clone)]
pub enum Choice {
    Written(Profile),
    Recorded(Arc<Recorded>),
}

impl Choice {
    /// `strict` (or another profile written into the scenario files, when no recording
    /// has that name), a built-in recorded profile by name or alias, or a profile file's
    /// path (one that contains `/` or ends in `.json`).
    pub fn resolve(s: &str) -> Result<Choice, String> {
        if s == "strict" {
            return Ok(Choice::Written(Profile::Strict));
        }
        if let Some((name, _, text)) = BUILTIN
            .iter()
            .find(|(name, aliases, _)| *name == s || aliases.contains(&s))
        {
            let file = format!("profiles/{name}.json (built in)");
            return Recorded::parse_text(text, &file)
                .map(|r| Choice::Recorded(Arc::new(r)))
                .map_err(|e| e.to_string());
        }
        if s.contains('/') || s.ends_with(".json") {
            return Recorded::load(Path::new(s))
                .map(|r| Choice::Recorded(Arc::new(r)))
                .map_err(|e| e.to_string());
        }
        if let Ok(p) = s.parse::<Profile>() {
            return Ok(Choice::Written(p));
        }
        let names: Vec<&str> = std::iter::once("strict")
            .chain(
                BUILTIN
                    .iter()
                    .flat_map(|(n, a, _)| std::iter::once(*n).chain(a.iter().copied())),
            )
            .collect();
        Err(format!(
            "unknown profile {s:?}; expected {}, or a profile file's path (ending in .json)",
            names.join(", ")
        ))
    }

    pub fn name(&self) -> String {
        match self {
            Choice::Written(p) => p.to_string(),
            Choice::Recorded(r) => r.name.clone(),
        }
    }
}

/// How the runner treats a run's steps.
#[derive(Debug, Clone, Default)]
pub enum Mode {
    /// Judge every step by the scenario file's expectations under the run's profile.
    #[default]
    Expectations,
    /// Judge nothing: observe every step (under `strict`'s steps), never stopping at a
    /// difference, and hand each scenario's observations to the observer.
    Record(Arc<Observer>),
    /// Observe every step and judge the observation against a recorded profile.
    Hold(Arc<Recorded>),
}

/// Where a step's record is kept: its index in the file's `steps`, or `end`, the check
/// after the last step that nothing escaped the root.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum StepKey {
    Step(usize),
    End,
}

impl fmt::Display for StepKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StepKey::Step(i) => write!(f, "{i}"),
            StepKey::End => f.write_str("end"),
        }
    }
}

impl StepKey {
    fn parse(s: &str) -> Option<StepKey> {
        match s {
            "end" => Some(StepKey::End),
            _ if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
                s.parse().ok().map(StepKey::Step)
            }
            _ => None,
        }
    }

    /// `steps[3]`, or `the end of the scenario`.
    pub fn label(&self) -> String {
        match self {
            StepKey::Step(i) => format!("steps[{i}]"),
            StepKey::End => "the end of the scenario".into(),
        }
    }
}

/// How one run of a scenario ended, as far as a recording cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// Every step ran (differences are in the steps).
    Ran,
    /// Not run, or stopped at an unmet precondition: why.
    Skipped(String),
    /// The target broke the protocol: where and how.
    Error(String),
}

/// One run of one scenario, observed.
#[derive(Debug, Clone)]
pub struct RunRecord {
    pub id: String,
    pub title: String,
    pub rules: Vec<Rule>,
    pub state: State,
    /// Per step: its rules when they are not the scenario's, what strict expects (as
    /// written), and what was seen (`None`: as strict).
    pub steps: BTreeMap<StepKey, Observed>,
}

/// One step observed: its rules when they are not the scenario's, what strict expects (as
/// written) and what was seen (`None`: as strict).
pub type Observed = (Option<Vec<Rule>>, Value, Option<Value>);

/// Collects the observations of a recording run from the runner's threads.
#[derive(Debug, Default)]
pub struct Observer {
    runs: Mutex<Vec<RunRecord>>,
}

impl Observer {
    pub fn push(&self, r: RunRecord) {
        self.runs.lock().unwrap_or_else(|p| p.into_inner()).push(r);
    }

    pub fn take(&self) -> Vec<RunRecord> {
        std::mem::take(&mut *self.runs.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// What a recorded profile says of one step.
#[derive(Debug, Clone, PartialEq)]
pub struct StepRecord {
    /// The step's rules when they are not the scenario's.
    pub rules: Option<Vec<Rule>>,
    /// What `strict` expects, as the scenario file writes it (for the reader).
    pub strict: Value,
    pub seen: Seen,
}

/// What was seen at a step over the recording's runs.
#[derive(Debug, Clone, PartialEq)]
pub enum Seen {
    /// The same every run (a concurrent block: how often it held, in `held`).
    Same(Value),
    /// Different between runs: every distinct observation (`null` for as strict).
    Racy(Vec<Value>),
}

/// One scenario in a recorded profile.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioRecord {
    pub title: String,
    pub rules: Vec<Rule>,
    pub state: State,
    pub steps: BTreeMap<StepKey, StepRecord>,
}

impl ScenarioRecord {
    /// Whether every step behaved as `strict` expects.
    pub fn as_strict(&self) -> bool {
        self.state == State::Ran && self.steps.values().all(|s| s.seen.as_strict())
    }
}

impl Seen {
    /// Whether this is what `strict` expects: a concurrent block that always held.
    pub fn as_strict(&self) -> bool {
        match self {
            Seen::Same(v) => observe::is_concurrent(v) && v.get("held") == Some(&json!("always")),
            Seen::Racy(_) => false,
        }
    }

    pub fn to_json(&self) -> (&'static str, Value) {
        match self {
            Seen::Same(v) => ("seen", v.clone()),
            Seen::Racy(vs) => ("racy", Value::Array(vs.clone())),
        }
    }
}

/// A recorded profile.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    pub name: String,
    /// Who recorded what, when: `target`, `hello`, `taskproof`, `date`, `runs`.
    pub recorded: Value,
    pub scenarios: BTreeMap<String, ScenarioRecord>,
    /// Where it was read from, for messages.
    pub file: String,
}

/// A profile file that cannot be used: the file, the field and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {field}: {message}")]
pub struct ProfileError {
    pub file: String,
    pub field: String,
    pub message: String,
}

impl Recorded {
    /// Builds a profile from the runs of a recording: the runs of each scenario are merged,
    /// a step that differed between runs becoming racy.
    pub fn from_runs(name: &str, recorded: Value, runs: Vec<RunRecord>) -> Recorded {
        let mut by_id: BTreeMap<String, Vec<RunRecord>> = BTreeMap::new();
        for r in runs {
            by_id.entry(r.id.clone()).or_default().push(r);
        }
        let scenarios = by_id
            .into_iter()
            .map(|(id, runs)| (id, merge(runs)))
            .collect();
        Recorded {
            name: name.to_string(),
            recorded,
            scenarios,
            file: format!("profiles/{name}.json"),
        }
    }

    /// Reads a profile file.
    pub fn load(path: &Path) -> Result<Recorded, ProfileError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ProfileError {
            file: file.clone(),
            field: "(file)".into(),
            message: format!("cannot be read: {e}"),
        })?;
        Recorded::parse_text(&text, &file)
    }

    /// Parses a profile file's text; `file` names it in errors.
    pub fn parse_text(text: &str, file: &str) -> Result<Recorded, ProfileError> {
        let bad = |field: &str, message: String| ProfileError {
            file: file.to_string(),
            field: field.to_string(),
            message,
        };
        let v: Value = serde_json::from_str(text)
            .map_err(|e| bad(&format!("line {}", e.line()), format!("not JSON: {e}")))?;
        let top = obj(&v, "(file)", &bad)?;
        deny(
            top,
            "",
            &["profile", "format", "recorded", "scenarios"],
            &bad,
        )?;
        let name = req_str(top, "", "profile", &bad)?;
        match top.get("format") {
            Some(Value::Number(n)) if n.as_u64() == Some(FORMAT) => {}
            Some(other) => {
                return Err(bad(
                    "format",
                    format!(
                        "expected {FORMAT}, got {other}; record the profile again with this taskproof"
                    ),
                ));
            }
            None => return Err(bad("format", "missing".into())),
        }
        let recorded = top
            .get("recorded")
            .cloned()
            .ok_or_else(|| bad("recorded", "missing".into()))?;
        obj(&recorded, "recorded", &bad)?;
        let scenarios_v = obj(
            top.get("scenarios")
                .ok_or_else(|| bad("scenarios", "missing".into()))?,
            "scenarios",
            &bad,
        )?;
        let mut scenarios = BTreeMap::new();
        for (id, sv) in scenarios_v {
            let here = format!("scenarios.{id}");
            let s = obj(sv, &here, &bad)?;
            deny(
                s,
                &here,
                &["title", "rules", "skipped", "error", "steps"],
                &bad,
            )?;
            let title = req_str(s, &here, "title", &bad)?;
            let rules = rule_list(s.get("rules"), &format!("{here}.rules"), &bad)?
                .ok_or_else(|| bad(&format!("{here}.rules"), "missing".into()))?;
            let state = match (s.get("skipped"), s.get("error")) {
                (None, None) => State::Ran,
                (Some(_), None) => State::Skipped(req_str(s, &here, "skipped", &bad)?),
                (None, Some(_)) => State::Error(req_str(s, &here, "error", &bad)?),
                (Some(_), Some(_)) => {
                    return Err(bad(&here, "has both skipped and error".into()));
                }
            };
            let mut steps = BTreeMap::new();
            if let Some(stv) = s.get("steps") {
                for (k, rv) in obj(stv, &format!("{here}.steps"), &bad)? {
                    let at = format!("{here}.steps.{k}");
                    let key = StepKey::parse(k)
                        .ok_or_else(|| bad(&at, "expected a step index or \"end\"".into()))?;
                    let r = obj(rv, &at, &bad)?;
                    deny(r, &at, &["strict", "rules", "seen", "racy"], &bad)?;
                    let strict = r
                        .get("strict")
                        .cloned()
                        .ok_or_else(|| bad(&format!("{at}.strict"), "missing".into()))?;
                    let rules = rule_list(r.get("rules"), &format!("{at}.rules"), &bad)?;
                    let seen = match (r.get("seen"), r.get("racy")) {
                        (Some(v), None) => {
                            check_seen(v, &format!("{at}.seen"), &bad)?;
                            Seen::Same(v.clone())
                        }
                        (None, Some(Value::Array(vs))) if vs.len() >= 2 => Seen::Racy(vs.clone()),
                        (None, Some(_)) => {
                            return Err(bad(
                                &format!("{at}.racy"),
                                "expected an array of at least two observations".into(),
                            ));
                        }
                        _ => {
                            return Err(bad(&at, "expected exactly one of seen and racy".into()));
                        }
                    };
                    steps.insert(
                        key,
                        StepRecord {
                            rules,
                            strict,
                            seen,
                        },
                    );
                }
            }
            scenarios.insert(
                id.clone(),
                ScenarioRecord {
                    title,
                    rules,
                    state,
                    steps,
                },
            );
        }
        Ok(Recorded {
            name,
            recorded,
            scenarios,
            file: file.to_string(),
        })
    }

    /// The file's JSON: keys in a fixed order, scenarios by id, steps by index.
    pub fn to_json(&self) -> Value {
        let mut scenarios = Map::new();
        for (id, s) in &self.scenarios {
            let mut o = Map::new();
            o.insert("title".into(), json!(s.title));
            o.insert("rules".into(), json!(s.rules));
            match &s.state {
                State::Ran => {}
                State::Skipped(r) => {
                    o.insert("skipped".into(), json!(r));
                }
                State::Error(e) => {
                    o.insert("error".into(), json!(e));
                }
            }
            if !s.steps.is_empty() {
                let mut steps = Map::new();
                for (k, r) in &s.steps {
                    let mut so = Map::new();
                    if let Some(rules) = &r.rules {
                        so.insert("rules".into(), json!(rules));
                    }
                    so.insert("strict".into(), r.strict.clone());
                    let (key, v) = r.seen.to_json();
                    so.insert(key.into(), v);
                    steps.insert(k.to_string(), Value::Object(so));
                }
                o.insert("steps".into(), Value::Object(steps));
            }
            scenarios.insert(id.clone(), Value::Object(o));
        }
        json!({
            "profile": self.name,
            "format": FORMAT,
            "recorded": self.recorded,
            "scenarios": scenarios,
        })
    }

    /// The file's text.
    pub fn to_text(&self) -> String {
        let mut s = serde_json::to_string_pretty(&self.to_json()).expect("JSON values serialize");
        s.push('\n');
        s
    }

    /// Why a scenario is not run when a target is held to this profile, if it is not.
    pub fn skip_reason(&self, id: &str) -> Option<String> {
        match self.scenarios.get(id).map(|s| &s.state) {
            None => Some(format!(
                "the profile {} has no record of this scenario (recorded with another suite?)",
                self.name
            )),
            Some(State::Ran) => None,
            Some(State::Skipped(r)) => Some(format!(
                "the profile {} recorded it as skipped: {r}",
                self.name
            )),
            Some(State::Error(e)) => Some(format!(
                "the profile {} recorded a target error, so it holds nothing here: {e}",
                self.name
            )),
        }
    }

    /// Judges one step's observation (`None`: as strict) against the record. The error
    /// says what the profile recorded and what this run saw; the second value is a note
    /// for a step that is not judged (racy, or a block not promised).
    pub fn judge(&self, id: &str, key: StepKey, obs: Option<&Value>) -> Judged {
        let rec = self.scenarios.get(id).and_then(|s| s.steps.get(&key));
        let saw = || match obs {
            None => "what strict expects".to_string(),
            Some(v) => v.to_string(),
        };
        match rec {
            None if observe::as_strict(obs) => Judged::Holds,
            None => Judged::Differs {
                recorded: Value::Null,
                reason: format!(
                    "the profile {} recorded that {} behaves as strict expects; this run saw {}",
                    self.name,
                    key.label(),
                    saw()
                ),
            },
            Some(StepRecord {
                seen: Seen::Racy(vs),
                ..
            }) => Judged::NotJudged(format!(
                "{} is racy in the profile {} (seen {}); this run saw {}",
                key.label(),
                self.name,
                vs.iter()
                    .map(Value::to_string)
                    .collect::<Vec<_>>()
                    .join(" and "),
                saw()
            )),
            Some(StepRecord {
                seen: Seen::Same(v),
                ..
            }) if observe::is_concurrent(v) => {
                let always = v.get("held") == Some(&json!("always"));
                let held = observe::as_strict(obs);
                if always && !held {
                    Judged::Differs {
                        recorded: v.clone(),
                        reason: format!(
                            "the profile {} recorded that this block held in every run ({}); this run saw {}",
                            self.name,
                            v,
                            saw()
                        ),
                    }
                } else if always {
                    Judged::Holds
                } else {
                    Judged::NotJudged(format!(
                        "{} is a block the profile {} recorded as not always holding ({v}); this run saw {}",
                        key.label(),
                        self.name,
                        saw()
                    ))
                }
            }
            Some(StepRecord {
                seen: Seen::Same(v),
                ..
            }) => {
                if obs == Some(v) {
                    Judged::Holds
                } else {
                    Judged::Differs {
                        recorded: v.clone(),
                        reason: format!(
                            "the profile {} recorded {v} at {}; this run saw {}",
                            self.name,
                            key.label(),
                            saw()
                        ),
                    }
                }
            }
        }
    }

    /// The scenarios (with their differing steps) where this profile is not `strict`.
    pub fn differences_from_strict(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (id, s) in &self.scenarios {
            match &s.state {
                State::Ran => {}
                State::Skipped(r) => out.push(format!("{id}: skipped ({r})")),
                State::Error(e) => out.push(format!("{id}: error ({e})")),
            }
            for (k, r) in &s.steps {
                if !r.seen.as_strict() {
                    let (what, v) = r.seen.to_json();
                    out.push(format!("{id} {}: {what} {v}", k.label()));
                }
            }
        }
        out
    }
}

/// The verdict on one step held to a recorded profile.
#[derive(Debug, Clone, PartialEq)]
pub enum Judged {
    Holds,
    Differs { recorded: Value, reason: String },
    NotJudged(String),
}

/// Merges the runs of one scenario.
fn merge(runs: Vec<RunRecord>) -> ScenarioRecord {
    let first = &runs[0];
    let title = first.title.clone();
    let rules = first.rules.clone();
    // A run that ran decides; only when none did, the first run's skip or error does.
    let ran: Vec<&RunRecord> = runs.iter().filter(|r| r.state == State::Ran).collect();
    if ran.is_empty() {
        return ScenarioRecord {
            title,
            rules,
            state: first.state.clone(),
            steps: BTreeMap::new(),
        };
    }
    let mut keys: Vec<StepKey> = ran.iter().flat_map(|r| r.steps.keys().copied()).collect();
    keys.sort();
    keys.dedup();
    let mut steps = BTreeMap::new();
    for k in keys {
        let (step_rules, strict) = ran
            .iter()
            .find_map(|r| r.steps.get(&k).map(|(ru, st, _)| (ru.clone(), st.clone())))
            .expect("the key came from a run");
        let seen: Vec<Option<&Value>> = ran
            .iter()
            .map(|r| r.steps.get(&k).and_then(|(_, _, o)| o.as_ref()))
            .collect();
        let rec = if let Some(c) = seen.iter().flatten().find(|v| observe::is_concurrent(v)) {
            let held_in = seen
                .iter()
                .filter(|o| observe::as_strict(o.as_deref()))
                .count();
            let runs = seen.len();
            let violations: Vec<u64> = seen
                .iter()
                .flatten()
                .filter_map(|v| v.get("violations").and_then(Value::as_u64))
                .collect();
            let (lo, hi) = (
                violations.iter().min().copied().unwrap_or(0),
                violations.iter().max().copied().unwrap_or(0),
            );
            let held = match held_in {
                n if n == runs => "always",
                0 => "never",
                _ => "sometimes",
            };
            Some(Seen::Same(json!({
                "verify": c.get("verify").cloned().unwrap_or(Value::Null),
                "held": held,
                "held_in": held_in,
                "runs": runs,
                "violations": if lo == hi { json!(lo) } else { json!(format!("{lo} to {hi}")) },
            })))
        } else {
            let mut distinct: Vec<Value> = Vec::new();
            for o in &seen {
                let v = o.cloned().unwrap_or(Value::Null);
                if !distinct.contains(&v) {
                    distinct.push(v);
                }
            }
            match distinct.len() {
                1 if distinct[0].is_null() => None,
                1 => Some(Seen::Same(distinct.remove(0))),
                _ => Some(Seen::Racy(distinct)),
            }
        };
        if let Some(seen) = rec {
            steps.insert(
                k,
                StepRecord {
                    rules: step_rules,
                    strict,
                    seen,
                },
            );
        }
    }
    ScenarioRecord {
        title,
        rules,
        state: State::Ran,
        steps,
    }
}

type Bad<'a> = dyn Fn(&str, String) -> ProfileError + 'a;

fn obj<'v>(v: &'v Value, at: &str, bad: &Bad<'_>) -> Result<&'v Map<String, Value>, ProfileError> {
    v.as_object().ok_or_else(|| {
        bad(
            at,
            format!("expected an object, got {}", crate::task::type_name(v)),
        )
    })
}

fn deny(
    m: &Map<String, Value>,
    at: &str,
    allowed: &[&str],
    bad: &Bad<'_>,
) -> Result<(), ProfileError> {
    for k in m.keys() {
        if !allowed.contains(&k.as_str()) {
            let field = if at.is_empty() {
                k.clone()
            } else {
                format!("{at}.{k}")
            };
            return Err(bad(
                &field,
                format!("unknown field; expected one of {}", allowed.join(", ")),
            ));
        }
    }
    Ok(())
}

fn req_str(
    m: &Map<String, Value>,
    at: &str,
    key: &str,
    bad: &Bad<'_>,
) -> Result<String, ProfileError> {
    let field = if at.is_empty() {
        key.to_string()
    } else {
        format!("{at}.{key}")
    };
    match m.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(bad(
            &field,
            format!("expected a string, got {}", crate::task::type_name(other)),
        )),
        None => Err(bad(&field, "missing".into())),
    }
}

fn str_list(
    v: Option<&Value>,
    at: &str,
    bad: &Bad<'_>,
) -> Result<Option<Vec<String>>, ProfileError> {
    match v {
        None => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, x)| {
                x.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| bad(&format!("{at}[{i}]"), "expected a string".into()))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(other) => Err(bad(
            at,
            format!(
                "expected an array of strings, got {}",
                crate::task::type_name(other)
            ),
        )),
    }
}

/// A list of rules (`S1` … `S20`), each checked.
fn rule_list(
    v: Option<&Value>,
    at: &str,
    bad: &Bad<'_>,
) -> Result<Option<Vec<Rule>>, ProfileError> {
    let Some(names) = str_list(v, at, bad)? else {
        return Ok(None);
    };
    names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            n.parse::<Rule>()
                .map_err(|e| bad(&format!("{at}[{i}]"), e.to_string()))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// An observation must be one of the shapes [`observe`] writes.
fn check_seen(v: &Value, at: &str, bad: &Bad<'_>) -> Result<(), ProfileError> {
    let m = obj(v, at, bad)?;
    let shape_ok = if m.contains_key("error") {
        m.get("error").is_some_and(Value::is_string)
    } else if m.contains_key("ok") {
        m.get("ok") == Some(&Value::Bool(true))
    } else if m.contains_key("verify") {
        matches!(
            m.get("held").and_then(Value::as_str),
            Some("always" | "never" | "sometimes")
        )
    } else {
        m.contains_key("broken") || m.get("held") == Some(&Value::Bool(false))
    };
    if shape_ok {
        Ok(())
    } else {
        Err(bad(
            at,
            "expected {\"error\": KIND}, {\"ok\": true, ...}, {\"broken\": {...}}, {\"verify\": V, \"held\": \"always\"|\"never\"|\"sometimes\", ...} or {\"held\": false, \"seen\": ...}".into(),
        ))
    }
}

/// The profile's file name under `profiles/`.
pub fn default_path(name: &str) -> PathBuf {
    PathBuf::from("profiles").join(format!("{name}.json"))
}

/// Today's date (UTC), `YYYY-MM-DD`.
pub fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let days = (secs / 86_400) as i64;
    // Howard Hinnant's civil-from-days algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}
