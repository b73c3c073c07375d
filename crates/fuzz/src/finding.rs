//! Turns a divergence into a finding: an ordinary scenario file (docs/scenario-format.md)
//! that replays it with `taskproof run`, the SPEC rules it involves, and a fingerprint that
//! recognises the same bug when it is found again.
//!
//! Only the diverging step carries the oracle's whole answer as its expectation; the steps
//! before it expect just success or the error kind the oracle gave, so the file reads as
//! "do this, this, this, and then this must come back".

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use crate::driver::{Divergence, History, ResolvedStep};
use crate::strategy::{EventGen, SESSIONS};
use taskproof_core::protocol::{ErrorKind, Response};
use taskproof_core::rule::Rule;
use taskproof_core::task::{Task, TaskId};
use taskproof_profile::Profile;
use taskproof_profile::compare::difference_fields;

/// A written-up divergence.
#[derive(Debug, Clone)]
pub struct Finding {
    pub fingerprint: String,
    /// The op of the diverging step (`restart` for a session that would not reopen).
    pub op: String,
    pub rules: Vec<Rule>,
    pub scenario: Value,
    pub summary: String,
}

/// Which ids are bound to variables so far, per list.
#[derive(Default)]
struct Vars {
    bound: BTreeSet<(String, TaskId)>,
}

impl Vars {
    fn id(&self, list: &str, id: TaskId) -> Value {
        if self.bound.contains(&(list.to_string(), id)) {
            json!(format!("${{{list}{id}}}"))
        } else {
            json!(id.to_string())
        }
    }

    fn ids<'a>(&self, list: &str, ids: impl IntoIterator<Item = &'a TaskId>) -> Value {
        Value::Array(ids.into_iter().map(|i| self.id(list, *i)).collect())
    }

    /// The whole task as an expectation: every field, unset ones as `null` (which demands
    /// that they are unset).
    fn task(&self, list: &str, t: &Task) -> Value {
        let mut m = Map::new();
        m.insert("id".into(), self.id(list, t.id));
        m.insert("subject".into(), json!(t.subject));
        m.insert("description".into(), json!(t.description));
        m.insert("activeForm".into(), json!(t.active_form));
        m.insert("status".into(), json!(t.status.as_str()));
        m.insert("blocks".into(), self.ids(list, &t.blocks));
        m.insert("blockedBy".into(), self.ids(list, &t.blocked_by));
        m.insert("owner".into(), json!(t.owner));
        m.insert(
            "metadata".into(),
            t.metadata.clone().map_or(Value::Null, Value::Object),
        );
        for (k, v) in &t.extra {
            m.insert(k.clone(), v.clone());
        }
        Value::Object(m)
    }

    fn expectation(&self, list: &str, r: &Response, whole: bool) -> Value {
        match (r, whole) {
            (Response::Error(f), _) => json!({"error": f.kind.as_str()}),
            (Response::Task(t), true) => json!({"ok": true, "task": self.task(list, t)}),
            (Response::Tasks { tasks, corrupt }, true) => json!({
                "ok": true,
                "tasks": tasks.iter().map(|t| self.task(list, t)).collect::<Vec<_>>(),
                "corrupt": corrupt,
            }),
            _ => json!({"ok": true}),
        }
    }
}

fn list_of(v: &Value) -> String {
    v.get("list")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn task_file(vars: &Vars, list: &str, id: TaskId) -> String {
    let shown = vars.id(list, id);
    format!("{list}/{{task:{}}}", shown.as_str().unwrap_or_default())
}

/// The rules a divergence involves: from the error the oracle expected, or else from what
/// the request did and which fields differ, with the history for context.
pub fn rules(history: &History, d: &Divergence) -> Vec<Rule> {
    if d.concurrent.is_some() {
        return concurrent_rules(history, d);
    }
    let mut out: BTreeSet<Rule> = BTreeSet::new();
    let ResolvedStep::Send { request, .. } = &history.records[d.at].action else {
        return vec![Rule::S14];
    };
    let op = request.get("op").and_then(Value::as_str).unwrap_or("");
    let patch = request.get("patch").and_then(Value::as_object);
    let has = |k: &str| patch.is_some_and(|p| p.contains_key(k));
    let edges = has("addBlockedBy")
        || has("addBlocks")
        || request["task"].get("blockedBy").is_some()
        || request["task"].get("blocks").is_some();
    let actions = || history.records[..d.at].iter().map(|r| &r.action);
    // A task missing after a restart, another session, time or a user's event between
    // requests breaks what S14 promises (acknowledged state survives; nothing vanishes).
    let restarted = actions().any(|a| {
        matches!(
            a,
            ResolvedStep::Restart { .. } | ResolvedStep::Wait { .. } | ResolvedStep::Event { .. }
        )
    }) || actions()
        .any(|a| matches!(a, ResolvedStep::Send { session, .. } if *session != 0))
        || matches!(&history.records[d.at].action, ResolvedStep::Send { session, .. } if *session != 0);
    let symlink = actions().any(|a| matches!(a, ResolvedStep::Symlink { .. }));
    let foreign_task = actions().any(|a| matches!(a, ResolvedStep::WriteTask { .. }));
    // A delete the model refused (a missing task) deleted nothing.
    let deleted = history.records[..d.at].iter().any(|r| {
        matches!(&r.action, ResolvedStep::Send { request, .. } if request["op"] == "delete")
            && r.expected
                .as_ref()
                .is_some_and(|e| e.error_kind().is_none())
    });
    // The (task, field) pairs an update the model refused would have changed, for the fields
    // a patch sets outright: one of them changed anyway is a patch applied in part (S11).
    // (Edges are left out: a changed edge has more causes than a half-applied patch.)
    // Only updates of the list the diverging step reads: task 1 of another list is another
    // task.
    let here = list_of(request);
    let mut refused: BTreeSet<(String, &str)> = BTreeSet::new();
    for r in &history.records[..d.at] {
        if let ResolvedStep::Send { request, .. } = &r.action
            && request["op"] == "update"
            && list_of(request) == here
            && r.expected
                .as_ref()
                .is_some_and(|e| e.error_kind().is_some())
            && let Some(p) = request.get("patch").and_then(Value::as_object)
            && let Some(id) = request.get("id").and_then(Value::as_str)
        {
            for k in [
                "subject",
                "description",
                "status",
                "owner",
                "activeForm",
                "metadata",
            ] {
                if p.contains_key(k) {
                    refused.insert((id.to_string(), k));
                }
            }
        }
    }
    // The (task, field) pairs that differ ("task 3 field status: …").
    let differing: BTreeSet<(String, String)> = d
        .differences
        .iter()
        .filter_map(|x| {
            let rest = x.strip_prefix("task ")?;
            let (id, rest) = rest.split_once(" field ")?;
            let field = rest.split(':').next()?;
            Some((id.to_string(), field.to_string()))
        })
        .collect();
    let half_applied = differing
        .iter()
        .any(|(id, f)| refused.contains(&(id.clone(), f.as_str())));
    // The id the target gave a create, if this list gave it to a task before.
    let reused_here = match &d.actual {
        Ok(Response::Task(t)) if op == "create" => history.records[..d.at].iter().any(|r| {
            matches!(&r.action, ResolvedStep::Send { request, .. }
                if request["op"] == "create" && list_of(request) == here)
                && matches!(&r.expected, Some(Response::Task(e)) if e.id == t.id)
        }),
        _ => false,
    };
    let lists: BTreeSet<String> = history.records[..=d.at]
        .iter()
        .map(|r| &r.action)
        .filter_map(|a| match a {
            ResolvedStep::Send { request, .. } => Some(list_of(request)),
            _ => None,
        })
        .filter(|l| !l.is_empty())
        .collect();
    let actual_kind = d.actual.as_ref().ok().and_then(Response::error_kind);
    let by_kind = match d.expected.error_kind().or(actual_kind) {
        Some(ErrorKind::Invalid) => {
            let valid_list = request
                .get("list")
                .and_then(Value::as_str)
                .is_some_and(|l| l.parse::<taskproof_core::task::ListName>().is_ok());
            Some(if !valid_list {
                Rule::S13
            } else if patch.and_then(|p| p.get("status")).is_some() {
                Rule::S3
            } else if op == "update" {
                Rule::S11
            } else {
                Rule::S2
            })
        }
        Some(ErrorKind::Cycle) => Some(Rule::S7),
        Some(ErrorKind::Dangling) => Some(Rule::S6),
        Some(ErrorKind::Blocked) => Some(Rule::S5),
        Some(ErrorKind::Transition) => Some(Rule::S4),
        Some(ErrorKind::Conflict) => Some(Rule::S20),
        Some(ErrorKind::Corrupt) => Some(if symlink { Rule::S17 } else { Rule::S15 }),
        Some(ErrorKind::NotFound) if restarted => Some(Rule::S14),
        Some(ErrorKind::NotFound) if lists.len() > 1 => Some(Rule::S13),
        Some(ErrorKind::NotFound) if deleted => Some(Rule::S10),
        _ => None,
    };
    out.extend(by_kind);
    if out.is_empty() {
        let fields = difference_fields(&d.differences);
        if half_applied {
            out.insert(Rule::S11);
        }
        for f in fields.iter().filter(|_| !half_applied) {
            let by_field = match f.as_str() {
                // An id that another list's creates pushed up is isolation, not S1.
                // An id this list handed out before is an id reused (S1), whatever other list
                // the sequence also used; only another id is one list seen in another.
                "id" if op == "create" && lists.len() > 1 && !reused_here => Some(Rule::S13),
                "id" if op == "create" => Some(Rule::S1),
                "blocks" | "blockedBy" => Some(if deleted { Rule::S10 } else { Rule::S8 }),
                "metadata" => Some(Rule::S12),
                "status" => Some(if edges { Rule::S5 } else { Rule::S4 }),
                "corrupt" => Some(if symlink { Rule::S17 } else { Rule::S15 }),
                "ids" if restarted => Some(Rule::S14),
                "ids" if lists.len() > 1 => Some(Rule::S13),
                "ids" if symlink => Some(Rule::S17),
                "ids" => Some(Rule::S1),
                _ if foreign_task => Some(Rule::S16),
                _ => None,
            };
            out.extend(by_field);
        }
    }
    if out.is_empty() {
        out.insert(match op {
            "create" => Rule::S2,
            "update" if edges => Rule::S8,
            "update" => Rule::S11,
            "delete" => Rule::S10,
            "claim" => Rule::S20,
            _ if restarted => Rule::S14,
            _ => Rule::S15,
        });
    }
    // In the order of their ids as text (S10 before S2), as fingerprints were first
    // written: a fingerprint hashes this list, and known findings keep theirs.
    let mut out: Vec<Rule> = out.into_iter().collect();
    out.sort_by_key(|r| r.as_str());
    out
}

/// A stable 64-bit FNV-1a hash, so fingerprints do not change between builds or platforms.
/// The rules a history no order explains involves: S19 (operations from several sessions
/// are linearizable), and S20 when the request that could not be placed is a claim, S1 when
/// it is a create whose id differs (an id handed out twice).
fn concurrent_rules(history: &History, d: &Divergence) -> Vec<Rule> {
    let mut out = vec![Rule::S19];
    if let ResolvedStep::Send { request, .. } = &history.records[d.at].action {
        match request.get("op").and_then(Value::as_str) {
            Some("claim") => out.push(Rule::S20),
            Some("create") if d.differences.iter().any(|x| x.contains("field id")) => {
                out.push(Rule::S1)
            }
            _ => {}
        }
    }
    out.sort_by_key(|r| r.as_str());
    out
}

/// FNV-1a of `text`: the fingerprints' hash, fixed so that a fingerprint is the same in every
/// run and build.
pub(crate) fn fnv1a(text: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The fingerprint of a divergence: a hash of the diverging step with everything
/// incidental taken out (ids, subjects, messages): the op, the expected and actual kind of
/// answer, the differing fields and the rules. The same bug reached by another sequence
/// usually normalizes to the same text.
pub fn fingerprint(history: &History, d: &Divergence, rules: &[Rule]) -> String {
    if d.concurrent.is_some() {
        // What diverged is an order that explains nothing, under these rules; which request
        // the search got stuck on, and how, depends on the order the race took (one store's
        // delete that takes no lock showed as a list, an update and a get answered wrongly,
        // five fingerprints in one run), so those are left out and one race is one finding.
        let text = format!("concurrent|{}", taskproof_core::rule::join(rules, ","));
        return format!("{:012x}", fnv1a(&text) >> 16);
    }
    let op = match &history.records[d.at].action {
        ResolvedStep::Send { request, .. } => request
            .get("op")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string(),
        _ => "restart".into(),
    };
    let kind = |r: &Response| match r {
        Response::Error(f) => f.kind.as_str().to_string(),
        _ => "ok".into(),
    };
    let actual = match &d.actual {
        Ok(r) => kind(r),
        Err(_) => "protocol-error".into(),
    };
    let fields: Vec<String> = difference_fields(&d.differences).into_iter().collect();
    let text = format!(
        "{op}|{}|{actual}|{}|{}",
        kind(&d.expected),
        fields.join(","),
        taskproof_core::rule::join(rules, ",")
    );
    format!("{:012x}", fnv1a(&text) >> 16)
}

/// The fingerprint of a history's divergence, if it diverged: what a run deduplicates its
/// findings by, and what shrinking must keep.
pub fn fingerprint_of(history: &History) -> Option<String> {
    let d = history.divergence.as_ref()?;
    Some(fingerprint(history, d, &rules(history, d)))
}

/// Writes the history up to and including the divergence as a scenario.
pub fn finding(history: &History, seed: u64, profile: Profile) -> Option<Finding> {
    let d = history.divergence.as_ref()?;
    let rules = rules(history, d);
    let fingerprint = fingerprint(history, d, &rules);
    let mut vars = Vars::default();
    let mut steps = Vec::new();
    let sequential = history
        .records
        .iter()
        .position(|r| r.concurrent)
        .unwrap_or(d.at + 1)
        .min(d.at + 1);
    for (i, rec) in history.records[..sequential].iter().enumerate() {
        let diverging = i == d.at;
        match &rec.action {
            ResolvedStep::Send {
                session,
                shown,
                bind,
                request,
                ..
            } => {
                let list = list_of(request);
                let expected = rec.expected.as_ref().expect("sends have expectations");
                let mut step = Map::new();
                if *session != 0 {
                    step.insert("session".into(), json!(SESSIONS[*session]));
                }
                step.insert("send".into(), shown.clone());
                step.insert(
                    "expect".into(),
                    vars.expectation(&list, expected, diverging),
                );
                if let (Some(var), Response::Task(t)) = (bind, expected) {
                    step.insert("bind".into(), json!({ var.as_str(): "task.id" }));
                    vars.bound.insert((list.clone(), t.id));
                }
                if diverging {
                    step.insert("note".into(), json!(format!("found: {}", d.summary())));
                } else if rec.final_check {
                    step.insert("note".into(), json!("the final state"));
                }
                steps.push(Value::Object(step));
            }
            ResolvedStep::Restart { session } => {
                steps.push(json!({ "restart": SESSIONS[*session] }))
            }
            ResolvedStep::Wait { tenths, settle } => {
                let seconds = f64::from(*tenths) / 10.0;
                steps.push(if *settle {
                    json!({"wait": seconds, "note": "the settle phase: nothing is sent while the store is left alone"})
                } else {
                    json!({ "wait": seconds })
                })
            }
            ResolvedStep::Event { session, event } => match event {
                EventGen::Clear => steps.push(json!({ "clear": SESSIONS[*session] })),
                EventGen::Compact => steps.push(json!({ "compact": SESSIONS[*session] })),
                EventGen::ExitResume => {
                    steps.push(json!({ "exit": SESSIONS[*session] }));
                    steps.push(json!({ "resume": SESSIONS[*session] }));
                }
            },
            ResolvedStep::Garbage { list, id } => steps.push(json!({
                "write_file": {"path": task_file(&vars, list, *id), "text": "{\"id\": \""},
                "note": "another program leaves a half-written file where a deleted task was",
            })),
            ResolvedStep::Symlink {
                list,
                id,
                outside,
                content,
            } => {
                steps.push(json!({"outside_file": {"name": outside, "text": content.to_string()}}));
                steps.push(json!({
                    "symlink": {"path": task_file(&vars, list, *id), "to_outside": outside},
                    "note": "a symbolic link where a deleted task's file was",
                }));
            }
            ResolvedStep::WriteTask { list, id, task } => {
                let mut t = task.clone();
                t["id"] = vars.id(list, *id);
                for key in ["blocks", "blockedBy"] {
                    if let Some(Value::Array(b)) = task.get(key) {
                        t[key] = Value::Array(
                            b.iter()
                                .map(|x| {
                                    x.as_str()
                                        .and_then(|s| s.parse().ok())
                                        .map_or(x.clone(), |i| vars.id(list, i))
                                })
                                .collect(),
                        );
                    }
                }
                steps.push(json!({
                    "write_task": {"list": list, "id": vars.id(list, *id), "task": t},
                    "note": "another program rewrites the task with a field of its own",
                }));
            }
        }
    }
    if sequential <= d.at {
        steps.push(concurrent_block(history, d, sequential, history.lockstep));
    }
    let op = match &history.records[d.at].action {
        ResolvedStep::Send { request, .. } => {
            request["op"].as_str().unwrap_or("request").to_string()
        }
        _ => "restart".into(),
    };
    let scenario = json!({
        "id": format!("fuzz-{fingerprint}"),
        "title": format!("{op} answers as the {profile} model does ({})", taskproof_core::rule::join(&rules, ", ")),
        "source": format!("taskproof fuzz --seed {seed}"),
        "rules": rules,
        "profiles": [profile.as_str()],
        "steps": steps,
    });
    Some(Finding {
        fingerprint,
        op,
        rules,
        scenario,
        summary: d.summary(),
    })
}

/// The history from its parallel part on as a scenario's `concurrent` block: each lane's
/// requests in order (`sends`), what `main` sent after them (`then`, the final listings
/// included, up to the last request the case sent), the lanes meeting before each round of
/// requests when the case's did (`lockstep`), judged as one history against the
/// profile's model (`verify: linearizable`): the block fails when no order of its requests
/// explains the answers, whatever order the race takes when it is replayed.
fn concurrent_block(history: &History, d: &Divergence, from: usize, lockstep: bool) -> Value {
    let mut lanes: BTreeMap<usize, Vec<Value>> = BTreeMap::new();
    let mut then = Vec::new();
    for rec in &history.records[from..] {
        let ResolvedStep::Send { session, shown, .. } = &rec.action else {
            continue;
        };
        match rec.lane {
            Some(lane) => lanes.entry(lane).or_default().push(shown.clone()),
            None => {
                let mut step = Map::new();
                if *session != 0 {
                    step.insert("session".into(), json!(SESSIONS[*session]));
                }
                step.insert("send".into(), shown.clone());
                then.push(Value::Object(step));
            }
        }
    }
    let lanes: Vec<Value> = lanes
        .into_iter()
        .map(|(lane, sends)| json!({"session": SESSIONS[lane % SESSIONS.len()], "sends": sends}))
        .collect();
    let mut block = json!({"lanes": lanes, "verify": "linearizable"});
    if lockstep {
        block["lockstep"] = Value::Bool(true);
    }
    if !then.is_empty() {
        block["then"] = Value::Array(then);
    }
    json!({"concurrent": block, "note": format!("found: {}", d.summary())})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::{Setup, run_case};
    use crate::strategy::{Case, Ref, Step, Subject};
    use taskproof_session::SessionOptions;
    use taskproof_store::Mutant;
    use taskproof_targets::TargetSpec;

    fn create(n: u8, blocked_by: Vec<Ref>) -> Step {
        Step::Create {
            s: 0,
            list: 0,
            subject: Subject::Plain(n),
            blocked_by,
            blocks: vec![],
            owner: None,
            metadata: None,
        }
    }

    fn found(steps: &[Step]) -> Finding {
        found_on(Mutant::NoMirror, steps)
    }

    fn found_on(mutant: Mutant, steps: &[Step]) -> Finding {
        let scratch = tempfile::tempdir().unwrap();
        let setup = Setup {
            target: TargetSpec::mutant(mutant),
            profile: Profile::Strict,
            session_options: SessionOptions {
                durable: false,
                ..SessionOptions::default()
            },
            scratch: scratch.path().to_path_buf(),
            settle: std::time::Duration::ZERO,
            reuse: false,
        };
        let history = run_case(&setup, &Case::sequence(steps.to_vec())).unwrap();
        finding(&history, 7, Profile::Strict).expect("the mutant diverges")
    }

    /// Issue 55: an id handed out again after the highest was deleted is S1, though the
    /// sequence also used another list (a store author saw it reported as S13, "one list
    /// seen in another").
    #[test]
    fn an_id_reused_in_its_own_list_is_s1_whatever_other_list_was_used() {
        let delete = |task: Ref| Step::Delete {
            s: 0,
            list: 0,
            task,
        };
        let mut other = create(9, vec![]);
        if let Step::Create { list, .. } = &mut other {
            *list = 1;
        }
        let f = found_on(
            Mutant::ReusedIds,
            &[
                create(1, vec![]),
                create(2, vec![]),
                delete(Ref::Last),
                other,
                create(3, vec![]),
            ],
        );
        assert_eq!(f.rules, [Rule::S1], "{}", f.summary);
    }

    #[test]
    fn a_finding_is_a_loadable_scenario_citing_the_broken_rule() {
        // Task 2 is created blocked by task 1; no-mirror leaves task 1's `blocks` empty,
        // which only the final listing shows.
        let f = found(&[create(1, vec![]), create(2, vec![Ref::Created(0)])]);
        assert_eq!(f.rules, [Rule::S8]);
        let scenario =
            taskproof_scenario::load::parse_scenario(&f.scenario, std::path::Path::new("f.json"))
                .unwrap_or_else(|e| panic!("{e:?}: {:#}", f.scenario));
        assert_eq!(scenario.id, format!("fuzz-{}", f.fingerprint));
        let steps = f.scenario["steps"].as_array().unwrap();
        assert_eq!(steps[0]["bind"], json!({"l1": "task.id"}));
        assert_eq!(steps[1]["send"]["task"]["blockedBy"], json!(["${l1}"]));
        assert_eq!(steps[2]["expect"]["tasks"][0]["blocks"], json!(["${l2}"]));
        assert_eq!(f.scenario["source"], "taskproof fuzz --seed 7");
    }

    #[test]
    fn the_same_bug_reached_another_way_has_the_same_fingerprint() {
        let a = found(&[create(1, vec![]), create(2, vec![Ref::Created(0)])]);
        let b = found(&[
            create(40, vec![]),
            create(41, vec![]),
            create(42, vec![Ref::Created(1)]),
        ]);
        assert_eq!(a.fingerprint, b.fingerprint);
        assert_ne!(a.scenario, b.scenario);
    }

    /// Waits and session events between requests become the scenario's own `wait`,
    /// `clear`, `compact`, `exit` and `resume` steps, so the replay does what the case did.
    #[test]
    fn waits_and_session_events_become_scenario_steps_that_load() {
        use crate::strategy::EventGen;
        let f = found(&[
            create(1, vec![]),
            Step::Event {
                s: 0,
                event: EventGen::Clear,
            },
            Step::Wait { tenths: 3 },
            Step::Event {
                s: 0,
                event: EventGen::ExitResume,
            },
            Step::Event {
                s: 0,
                event: EventGen::Compact,
            },
            create(2, vec![Ref::Created(0)]),
        ]);
        assert_eq!(f.rules, [Rule::S8]);
        let steps = f.scenario["steps"].as_array().unwrap();
        let kinds: Vec<&str> = steps
            .iter()
            .map(|s| {
                ["send", "clear", "wait", "exit", "resume", "compact"]
                    .into_iter()
                    .find(|k| s.get(*k).is_some())
                    .unwrap_or("?")
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "send", "clear", "wait", "exit", "resume", "compact", "send", "send"
            ]
        );
        assert_eq!(steps[2]["wait"], json!(0.3));
        assert_eq!(steps[3]["exit"], "main");
        let scenario =
            taskproof_scenario::load::parse_scenario(&f.scenario, std::path::Path::new("f.json"))
                .unwrap_or_else(|e| panic!("{e:?}: {:#}", f.scenario));
        assert!(scenario.plays_a_user(Profile::Strict));
    }
}
