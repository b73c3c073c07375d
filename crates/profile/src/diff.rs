//! Comparing two recorded profiles without any target: what changed, per rule and per
//! scenario, in plain words. Counts of a concurrent block (how many runs held, how many
//! violations) are the recording's weather and never a change; whether it always, never
//! or only sometimes held is. Two racy records of a step are the same (both say "racy"), and
//! a racy record is the same as a record of one of the answers it lists.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::observe;
use crate::recorded::{Recorded, ScenarioRecord, Seen, State, StepKey, StepRecord};
use taskproof_core::rule::Rule;

/// One changed scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub id: String,
    pub title: String,
    /// The rules the change is about: the changed steps' rules, or the scenario's.
    pub rules: BTreeSet<Rule>,
    /// One line: what happened to the scenario as a whole.
    pub summary: String,
    /// One line per changed step.
    pub steps: Vec<String>,
}

/// Every scenario whose record differs between `a` and `b`, by id.
pub fn diff(a: &Recorded, b: &Recorded) -> Vec<Change> {
    let ids: BTreeSet<&String> = a.scenarios.keys().chain(b.scenarios.keys()).collect();
    let mut out = Vec::new();
    for id in ids {
        match (a.scenarios.get(id), b.scenarios.get(id)) {
            (Some(x), None) => out.push(Change {
                id: id.clone(),
                title: x.title.clone(),
                rules: x.rules.iter().cloned().collect(),
                summary: format!("recorded only in {} (not in {})", a.name, b.name),
                steps: Vec::new(),
            }),
            (None, Some(y)) => out.push(Change {
                id: id.clone(),
                title: y.title.clone(),
                rules: y.rules.iter().cloned().collect(),
                summary: format!("recorded only in {} (not in {})", b.name, a.name),
                steps: Vec::new(),
            }),
            (Some(x), Some(y)) => {
                if let Some(c) = scenario_change(id, x, y, &a.name, &b.name) {
                    out.push(c);
                }
            }
            (None, None) => unreachable!("the id came from one of them"),
        }
    }
    out
}

fn state_words(s: &State) -> String {
    match s {
        State::Ran => "ran".into(),
        State::Skipped(r) => format!("skipped ({r})"),
        State::Error(e) => format!("a target error ({e})"),
    }
}

fn same_state(x: &State, y: &State) -> bool {
    matches!(
        (x, y),
        (State::Ran, State::Ran)
            | (State::Skipped(_), State::Skipped(_))
            | (State::Error(_), State::Error(_))
    )
}

fn scenario_change(
    id: &str,
    x: &ScenarioRecord,
    y: &ScenarioRecord,
    an: &str,
    bn: &str,
) -> Option<Change> {
    let title = y.title.clone();
    if !same_state(&x.state, &y.state) || x.state != State::Ran {
        if same_state(&x.state, &y.state) {
            return None;
        }
        return Some(Change {
            id: id.to_string(),
            title,
            rules: y.rules.iter().cloned().collect(),
            summary: format!(
                "{}: was {} in {an}, is {} in {bn}",
                y.title,
                state_words(&x.state),
                state_words(&y.state)
            ),
            steps: Vec::new(),
        });
    }
    let keys: BTreeSet<StepKey> = x.steps.keys().chain(y.steps.keys()).copied().collect();
    let mut rules = BTreeSet::new();
    let mut steps = Vec::new();
    for k in keys {
        let (rx, ry) = (x.steps.get(&k), y.steps.get(&k));
        if same_step(rx, ry) {
            continue;
        }
        let r = ry.or(rx).expect("one of them has the key");
        match &r.rules {
            Some(rs) => rules.extend(rs.iter().cloned()),
            None => rules.extend(y.rules.iter().cloned()),
        }
        steps.push(format!(
            "{}: {an} {}; {bn} {}",
            k.label(),
            step_words(rx),
            step_words(ry)
        ));
    }
    if steps.is_empty() {
        return None;
    }
    let verdict = match (x.as_strict(), y.as_strict()) {
        (true, false) => format!("no longer as strict expects in {bn}"),
        (false, true) => format!("now as strict expects in {bn} (was not in {an})"),
        _ => format!("differs from strict in both, differently in {bn}"),
    };
    Some(Change {
        id: id.to_string(),
        title: y.title.clone(),
        rules,
        summary: format!("{}: {verdict}", y.title),
        steps,
    })
}

/// The part of a step record that a comparison looks at.
fn key_of(r: Option<&StepRecord>) -> Value {
    match r.map(|r| &r.seen) {
        None => Value::Null,
        Some(s) if s.as_strict() => Value::Null,
        Some(Seen::Racy(_)) => Value::String("racy".into()),
        Some(Seen::Timed { .. }) => Value::String("timed".into()),
        Some(Seen::Same(v)) if observe::is_concurrent(v) => {
            serde_json::json!({"verify": v.get("verify"), "held": v.get("held")})
        }
        Some(Seen::Same(v)) => v.clone(),
    }
}

/// Whether two records of a step say the same behaviour. A racy record says the step may
/// answer any of the ways it was seen, so it agrees with a record of one of those ways (as
/// a run held to it would pass there); two racy records agree.
fn same_step(x: Option<&StepRecord>, y: Option<&StepRecord>) -> bool {
    // A time-dependent record, like a racy one, allows each answer it lists.
    let racy = |r: Option<&StepRecord>| match r.map(|r| &r.seen) {
        Some(s @ (Seen::Racy(_) | Seen::Timed { .. })) => Some(s.answers()),
        _ => None,
    };
    // What a record that is not racy says was seen (`null`: as strict).
    let seen = |r: Option<&StepRecord>| match r.map(|r| &r.seen) {
        Some(Seen::Same(v)) if !observe::is_concurrent(v) => v.clone(),
        _ => Value::Null,
    };
    match (racy(x), racy(y)) {
        (Some(_), Some(_)) => true,
        (Some(vs), None) => vs.contains(&seen(y)),
        (None, Some(vs)) => vs.contains(&seen(x)),
        (None, None) => key_of(x) == key_of(y),
    }
}

fn step_words(r: Option<&StepRecord>) -> String {
    match r {
        None => "behaves as strict expects".into(),
        Some(r) => match &r.seen {
            s if s.as_strict() => "behaves as strict expects (the block always held)".into(),
            Seen::Racy(vs) => format!(
                "is racy (seen {})",
                vs.iter()
                    .map(Value::to_string)
                    .collect::<Vec<_>>()
                    .join(" and ")
            ),
            Seen::Timed { soon, late, after } => format!(
                "is time-dependent (answers {} after {after} s idle, {} sooner)",
                Seen::words(late),
                soon.iter()
                    .map(Seen::words)
                    .collect::<Vec<_>>()
                    .join(" or ")
            ),
            Seen::Same(v) if observe::is_concurrent(v) => {
                let held = v.get("held").and_then(Value::as_str).unwrap_or("?");
                let runs = v.get("runs").map_or("?".into(), Value::to_string);
                let n = v.get("held_in").map_or("?".into(), Value::to_string);
                format!("{held} held ({n} of {runs} runs; strict expects it to hold)")
            }
            Seen::Same(v) => format!("answers {v} where strict expects {}", r.strict),
        },
    }
}

/// The diff as text: a line per rule, then a block per changed scenario.
pub fn render(a: &Recorded, b: &Recorded, changes: &[Change]) -> String {
    let mut out = format!("{} -> {}\n", describe(a), describe(b));
    if changes.is_empty() {
        out.push_str("no change: every scenario is recorded the same\n");
        return out;
    }
    let mut by_rule: BTreeMap<Rule, Vec<&str>> = BTreeMap::new();
    for c in changes {
        for r in &c.rules {
            by_rule.entry(*r).or_default().push(&c.id);
        }
    }
    out.push_str(&format!(
        "{} scenario(s) changed, under {} rule(s):\n",
        changes.len(),
        by_rule.len()
    ));
    for (r, ids) in by_rule {
        out.push_str(&format!("  {r}: {}\n", ids.join(", ")));
    }
    for c in changes {
        let rules: Vec<String> = c.rules.iter().map(Rule::to_string).collect();
        out.push_str(&format!(
            "\n{}: {} [{}]\n",
            c.id,
            c.summary,
            rules.join(", ")
        ));
        for s in &c.steps {
            out.push_str(&format!("  {s}\n"));
        }
    }
    out
}

fn describe(p: &Recorded) -> String {
    let target = p
        .recorded
        .get("target")
        .and_then(Value::as_str)
        .unwrap_or("?");
    let date = p
        .recorded
        .get("date")
        .and_then(Value::as_str)
        .unwrap_or("?");
    format!("{} ({target}, recorded {date})", p.name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorded::State;
    use serde_json::json;

    fn profile(name: &str, seen: Option<Seen>) -> Recorded {
        let steps = seen
            .into_iter()
            .map(|seen| {
                (
                    StepKey::Step(6),
                    StepRecord {
                        rules: None,
                        strict: json!({"ok": true}),
                        seen,
                    },
                )
            })
            .collect();
        let s = ScenarioRecord {
            title: "t".into(),
            rules: vec![Rule::S16],
            state: State::Ran,
            steps,
        };
        Recorded {
            name: name.into(),
            recorded: json!({}),
            scenarios: [("s".to_string(), s)].into_iter().collect(),
            file: name.into(),
        }
    }

    #[test]
    fn a_racy_step_agrees_with_a_record_of_one_of_its_answers() {
        let racy = profile(
            "racy",
            Some(Seen::Racy(vec![Value::Null, json!({"error": "not_found"})])),
        );
        let gone = profile("gone", Some(Seen::Same(json!({"error": "not_found"}))));
        let strict = profile("strict", None);
        let other = profile("other", Some(Seen::Same(json!({"error": "io"}))));
        for (a, b) in [
            (&racy, &gone),
            (&gone, &racy),
            (&strict, &racy),
            (&racy, &racy),
        ] {
            assert_eq!(diff(a, b), Vec::new(), "{} -> {}", a.name, b.name);
        }
        let changes = diff(&racy, &other);
        assert_eq!(changes.len(), 1);
        assert!(
            changes[0].steps[0].contains("is racy (seen null and {\"error\":\"not_found\"})"),
            "{changes:?}"
        );
        assert_eq!(diff(&gone, &strict).len(), 1);
    }
}
