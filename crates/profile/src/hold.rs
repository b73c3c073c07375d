//! Holding a target to a profile: which profile a name means ([`Choice`], the built-in
//! recordings), how the runner treats a run's steps ([`Mode`]), and the verdict on one
//! step's observation against what a recorded profile says of it ([`Recorded::judge`]).

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::format::{Recorded, Seen, State, StepKey, StepRecord};
use crate::merge::Observer;
use crate::{Profile, observe};

/// The recorded profiles built into the binary: name, other names it answers to, and the
/// file's text (compiled from `profiles/`).
pub const BUILTIN: &[(&str, &[&str], &str)] = &[
    (
        "hand-written-files",
        &[],
        include_str!("../../../profiles/hand-written-files.json"),
    ),
    // `cc-2.1.17` is what the scenario files' hand-written expectations (the naive model's)
    // are called; as a profile to hold a target to, the name means what the real 2.1.17 does.
    (
        "claude-code-2.1.17",
        &["cc-2.1.17"],
        include_str!("../../../profiles/claude-code-2.1.17.json"),
    ),
    (
        "claude-code-2.1.20",
        &[],
        include_str!("../../../profiles/claude-code-2.1.20.json"),
    ),
    (
        "claude-code-2.1.21",
        &[],
        include_str!("../../../profiles/claude-code-2.1.21.json"),
    ),
    (
        "claude-code-2.1.112",
        &[],
        include_str!("../../../profiles/claude-code-2.1.112.json"),
    ),
    (
        "claude-code-2.1.330",
        &[],
        include_str!("../../../profiles/claude-code-2.1.330.json"),
    ),
    // `s07` is what the scenario files' hand-written expectations were called; the name now
    // means what the real lesson does.
    (
        "learn-claude-code-s07",
        &["s07"],
        include_str!("../../../profiles/learn-claude-code-s07.json"),
    ),
    (
        "task-master-0.43.1",
        &[],
        include_str!("../../../profiles/task-master-0.43.1.json"),
    ),
    (
        "taskproof-mcp",
        &[],
        include_str!("../../../profiles/taskproof-mcp.json"),
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
        // The expectation sets written into the scenario files under a name a recording
        // now answers to (`cc-2.1.17`, `s07`): what a fuzz finding made under
        // `hand-written-files` or `hand-written-s07` is judged by, so its replay line names
        // them this way.
        if let Some(written) = s.strip_prefix("written:") {
            return written.parse::<Profile>().map(Choice::Written);
        }
        let names: Vec<&str> = std::iter::once("strict")
            .chain(
                BUILTIN
                    .iter()
                    .flat_map(|(n, a, _)| std::iter::once(*n).chain(a.iter().copied())),
            )
            .collect();
        Err(format!(
            "unknown profile {s:?}; expected {}, written:cc-2.1.17 or written:s07 (the scenario files' own expectations), or a profile file's path (ending in .json)",
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

impl Recorded {
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

    /// Whether the profile records step `key` of scenario `id` as time-dependent.
    pub fn is_time_dependent(&self, id: &str, key: StepKey) -> bool {
        self.scenarios
            .get(id)
            .and_then(|s| s.steps.get(&key))
            .is_some_and(|r| matches!(r.seen, Seen::Timed { .. }))
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
                seen: seen @ Seen::Timed { soon, late, after },
                ..
            }) => {
                let answers = seen.answers();
                let this = obs.cloned().unwrap_or(Value::Null);
                let words = format!(
                    "{} is time-dependent in the profile {} (it answers {} after {after} s idle, {} sooner)",
                    key.label(),
                    self.name,
                    Seen::words(late),
                    soon.iter()
                        .map(Seen::words)
                        .collect::<Vec<_>>()
                        .join(" or ")
                );
                if answers.contains(&this) {
                    Judged::NotJudged(format!("{words}; this run saw {}", saw()))
                } else {
                    Judged::Differs {
                        recorded: seen.to_json().1,
                        reason: format!("{words}; this run saw {}, neither", saw()),
                    }
                }
            }
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
}

/// The verdict on one step held to a recorded profile.
#[derive(Debug, Clone, PartialEq)]
pub enum Judged {
    Holds,
    Differs { recorded: Value, reason: String },
    NotJudged(String),
}
