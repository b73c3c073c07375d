//! [recorded profiles] Observing a step, for `taskproof record` and for `run` against a
//! recorded profile (`taskproof_profile::recorded`): what each step showed, kept by step, and
//! under a recorded profile judged against the record. The only places the runner knows of
//! recorded profiles are this file and the lines marked `[recorded profiles]`.

use serde_json::{Value, json};

use crate::format::*;
use crate::runner::{Observed, Run, Stop};
use taskproof_core::rule::Rule;
use taskproof_profile::recorded::{Judged as Held, StepKey};
use taskproof_profile::{Mode, Profile, observe};
use taskproof_report::result::StepFailure;

impl Run<'_> {
    /// Turns a step's outcome into its observation: a target error or an unmet
    /// precondition passes through; anything else is observed (the step's own observation,
    /// or "it failed, and why") and, under a recorded profile, judged against the record.
    pub(super) fn observe(
        &mut self,
        step: &Step,
        stepped: Result<(), Stop>,
        observed: &mut Observed,
    ) -> Result<(), Stop> {
        let obs = match stepped {
            Err(Stop::Error(e)) => return Err(Stop::Error(e)),
            Err(Stop::Fail(f)) if step.precondition.is_some() => return Err(Stop::Fail(f)),
            Err(Stop::Fail(f)) => Some(
                self.observation
                    .take()
                    .unwrap_or_else(|| observe::failed(&f.reason)),
            ),
            Ok(()) => self.observation.take(),
        };
        let strict = match &step.action {
            Action::Send { expect, .. } => expect
                .get(Profile::Strict)
                .map_or(Value::Null, |e| e.to_json()),
            Action::Concurrent(c) => match c.expect.get(Profile::Strict) {
                Some(VerifyExpect::Any) => json!("any"),
                _ => json!("holds"),
            },
            // The step as written, without the keys every step may have.
            _ => match &step.raw {
                Value::Object(m) => Value::Object(
                    m.iter()
                        .filter(|(k, _)| {
                            !["session", "only", "rules", "note", "precondition"]
                                .contains(&k.as_str())
                        })
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect(),
                ),
                other => other.clone(),
            },
        };
        match self.observed_at(StepKey::Step(step.index), Some(step), strict, obs, observed) {
            Some(f) => Err(Stop::Fail(Box::new(f))),
            None => Ok(()),
        }
    }

    /// Keeps an observation (`None`: as strict) and, under a recorded profile, judges it:
    /// the failure, when the target differs from the record.
    pub(super) fn observed_at(
        &mut self,
        key: StepKey,
        step: Option<&Step>,
        strict: Value,
        obs: Option<Value>,
        observed: &mut Observed,
    ) -> Option<StepFailure> {
        let rules = step.and_then(|s| s.rules.clone());
        let verdict = match &self.config.mode {
            Mode::Hold(p) => p.judge(&self.scenario.id, key, obs.as_ref()),
            _ => Held::Holds,
        };
        let shown = obs.clone().unwrap_or_else(|| json!("as strict expects"));
        observed.insert(key, (rules, strict, obs));
        match verdict {
            Held::Holds => None,
            Held::NotJudged(note) => {
                self.notes.push(note);
                None
            }
            Held::Differs { recorded, reason } => Some(StepFailure {
                step: step.map(|s| s.index),
                session: step.map(|s| s.session.clone()),
                request: None,
                expected: if recorded.is_null() {
                    json!("as strict expects")
                } else {
                    recorded
                },
                actual: shown,
                reason,
                rules: step.map_or_else(|| vec![Rule::S13], |s| self.rules(s)),
                note: step.and_then(|s| s.note.clone()),
                step_json: step.map(|s| s.raw.clone()),
                witness: step.and_then(|_| self.witness()),
            }),
        }
    }
}
