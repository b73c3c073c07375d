//! What runs against this target: why a whole scenario does not run ([`gate`]: skipped for a
//! profile it has no expectations for, not judged for an optional part the target does not
//! declare), and, against a target
//! whose layout is opaque, which steps are skipped while the rest of the scenario runs
//! ([`opaque_skips`]: the file steps and the steps that depend on them).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::expect::Expect;
use crate::format::*;
use crate::vars;
use taskproof_core::protocol::{Feature, Hello};
use taskproof_profile::Profile;
use taskproof_report::result::Outcome;

/// Against a target whose layout is opaque: the steps that cannot run, each with why. A
/// file step cannot run; a step that writes files changes its list (the first folder of its
/// path) behind the store's back, so every later step on that list depends on it, and so
/// does every step using a variable bound by a skipped step. A skipped step that would have
/// changed a list taints that list in turn. Steps on other lists, and session steps, run.
pub fn opaque_skips(s: &Scenario, profile: Profile) -> BTreeMap<usize, String> {
    let mut out = BTreeMap::new();
    // List name as written -> the step that first left it in an unknown state.
    let mut lists: BTreeMap<String, usize> = BTreeMap::new();
    // Variable -> the skipped step that would have bound it.
    let mut unbound: BTreeMap<String, usize> = BTreeMap::new();
    // A file step whose list cannot be told (a path built from a variable) taints all.
    let mut everything: Option<usize> = None;
    for step in s.steps_for(profile) {
        let i = step.index;
        if step.action.is_file_step() {
            out.insert(
                i,
                "touches files, but the target's layout is opaque".to_string(),
            );
            if step.action.writes_files() {
                match written_list(&step.action) {
                    Some(l) => {
                        lists.entry(l).or_insert(i);
                    }
                    None => {
                        everything.get_or_insert(i);
                    }
                }
            }
            continue;
        }
        let touched = step_lists(step);
        let used: Vec<String> = super::load::templated(step)
            .iter()
            .filter_map(|(v, p)| vars::uses(v, p).ok())
            .flatten()
            .map(|(name, _)| name)
            .collect();
        let why = if let Some(j) = everything {
            Some(format!(
                "depends on steps[{j}], which changed the root's files (the target's layout is opaque)"
            ))
        } else if let Some((l, j)) = touched
            .iter()
            .find_map(|l| lists.get(l).map(|j| (l.clone(), *j)))
        {
            Some(format!(
                "uses list {l}, which steps[{j}] changed through its files (the target's layout is opaque)"
            ))
        } else {
            used.iter().find_map(|v| {
                unbound
                    .get(v)
                    .map(|j| format!("uses ${{{v}}}, which skipped steps[{j}] would have bound"))
            })
        };
        let Some(why) = why else { continue };
        out.insert(i, why);
        if let Action::Send { bind, .. } = &step.action {
            for (name, _) in bind {
                unbound.entry(name.clone()).or_insert(i);
            }
        }
        for l in touched {
            lists.entry(l).or_insert(i);
        }
    }
    out
}

/// Against a target that declares [`Feature::HiddenEdges`] (it accepts or refuses
/// dependencies but no answer shows them): the scenario as judged on the answers alone, and
/// the steps that cannot be judged, each with why. A request step keeps its expectation of
/// acceptance or refusal and of every other field, without `blocks`/`blockedBy`; a step that
/// only reads (get, list) and expects edges, a step that binds a variable from edges, and a
/// check of invariants or of ready tasks (which edges decide) are not judged, and neither is
/// a step that uses a variable such a step would have bound. A read changes nothing, so the
/// steps after it run as written.
pub fn hidden_edges_view(s: &Scenario, profile: Profile) -> (Scenario, BTreeMap<usize, String>) {
    const WHY: &str = "reads dependencies back, which the target accepts but never shows";
    let mut view = s.clone();
    let mut out = BTreeMap::new();
    let mut unbound: BTreeMap<String, usize> = BTreeMap::new();
    for step in view.steps.iter_mut().filter(|st| st.runs_under(profile)) {
        let i = step.index;
        let used = super::load::templated(step)
            .iter()
            .filter_map(|(v, p)| vars::uses(v, p).ok())
            .flatten()
            .map(|(name, _)| name)
            .find_map(|v| unbound.get(&v).map(|j| (v, *j)));
        if let Some((v, j)) = used {
            out.insert(
                i,
                format!("uses ${{{v}}}, which steps[{j}] would have bound ({WHY})"),
            );
            continue;
        }
        match &mut step.action {
            Action::Send {
                request,
                expect,
                bind,
            } => {
                let reads = matches!(
                    request.get("op").and_then(Value::as_str),
                    Some("get" | "list")
                );
                let names_edges = expect.get(profile).is_some_and(Expect::names_edges);
                if bind.iter().any(|(_, path)| path_names_edges(path)) || (reads && names_edges) {
                    out.insert(i, WHY.to_string());
                    for (name, _) in bind.iter() {
                        unbound.entry(name.clone()).or_insert(i);
                    }
                } else if names_edges && let Some(e) = expect.get(profile) {
                    *expect = PerProfile::same(e.without_edges());
                }
            }
            Action::Check {
                invariants, ready, ..
            } if ready.is_some() || invariants.iter().any(|v| *v != Invariant::UniqueIds) => {
                out.insert(i, WHY.to_string());
            }
            _ => {}
        }
    }
    (view, out)
}

/// Whether a dotted answer path goes through a task's edges.
fn path_names_edges(path: &str) -> bool {
    path.split('.').any(|p| p == "blocks" || p == "blockedBy")
}

/// The list a file-writing step writes in: the first folder of its path, when it is plain.
fn written_list(a: &Action) -> Option<String> {
    let path = match a {
        Action::WriteTask { list, .. } => return plain(list),
        Action::WriteFile { path, .. } | Action::Symlink { path, .. } => path,
        Action::Mkdir(path) | Action::RemoveFile(path) => path,
        _ => return None,
    };
    let first = path.split('/').next()?;
    // A folder at the top of the root is a list itself.
    plain(first)
}

fn plain(s: &str) -> Option<String> {
    (!s.contains("${") && !s.contains('{')).then(|| s.to_string())
}

/// The lists a step reads or changes through the store, as written.
fn step_lists(step: &Step) -> Vec<String> {
    let of = |r: &Value| r.get("list").and_then(Value::as_str).map(str::to_string);
    match &step.action {
        Action::Send { request, .. } => of(request).into_iter().collect(),
        Action::Check { list, .. } => vec![list.clone()],
        Action::Concurrent(c) => {
            let mut out: Vec<String> = c.lanes.iter().filter_map(|l| of(&l.send)).collect();
            out.push(c.list.clone());
            out
        }
        _ => Vec::new(),
    }
}

/// Why a whole scenario does not run against this target under this profile, if it does
/// not: skipped (the profile has no expectations for it), or not judged (its file's `needs`
/// names an optional part the target does not declare). A part that only a step needs is
/// [`undeclared`]'s: the steps before that one still run.
pub fn gate(s: &Scenario, profile: Profile, hello: &Hello) -> Option<Outcome> {
    admit(s, profile, hello).err()
}

/// [`gate`] and [`undeclared`] at once: why the scenario does not run, or the parts it needs
/// that the target does not declare, each with the first step that needs it (the run stops
/// before the first of those steps).
pub fn admit(
    s: &Scenario,
    profile: Profile,
    hello: &Hello,
) -> Result<Vec<(Feature, Option<usize>)>, Outcome> {
    if !s.profiles.contains(&profile) {
        let covered: Vec<&str> = s.profiles.iter().map(|p| p.as_str()).collect();
        return Err(Outcome::Skip(format!(
            "no expectations for profile {profile} (the scenario covers {})",
            covered.join(", ")
        )));
    }
    let missing = undeclared(s, profile, hello);
    if missing.iter().any(|(_, at)| at.is_none()) {
        return Err(Outcome::NotJudged(missing));
    }
    Ok(missing)
}

/// The optional parts the scenario needs and the target does not declare, each with the
/// first step that needs it (`None`: the file's `needs` names it). The runner judges the
/// steps before the first of those steps and stops there: the steps after it depend on
/// what it would have done.
///
/// Besides the parts its requests name, a concurrent block needs [`Feature::Atomic`] on a
/// target that performs one of its lanes' requests by read-modify-write
/// ([`Hello::read_modify_write`]): what the block verifies, and every later step, would
/// judge a state in which a change can have been lost by the way the store is reached.
pub fn undeclared(s: &Scenario, profile: Profile, hello: &Hello) -> Vec<(Feature, Option<usize>)> {
    let mut needs = s.needs_for(profile);
    if let Some(i) = s
        .steps_for(profile)
        .find(|step| !read_modify_write(step, hello).is_empty())
        .map(|step| step.index)
    {
        needs.entry(Feature::Atomic).or_insert(Some(i));
    }
    needs.into_iter().filter(|(f, _)| !hello.has(*f)).collect()
}

/// The requests of a concurrent step's lanes that the target performs by read-modify-write
/// (none for any other step), each named once as the target names them.
pub fn read_modify_write(step: &Step, hello: &Hello) -> Vec<String> {
    let Action::Concurrent(c) = &step.action else {
        return Vec::new();
    };
    let mut out: Vec<String> = Vec::new();
    for r in hello.read_modify_write() {
        if c.lanes.iter().any(|l| r.matches(&l.send)) && !out.contains(&r.to_string()) {
            out.push(r.to_string());
        }
    }
    out
}

/// The lists a scenario names through the store, as written, each with the first step
/// that names it, in order.
pub fn scenario_lists(s: &Scenario, profile: Profile) -> Vec<(String, usize)> {
    let mut out: Vec<(String, usize)> = Vec::new();
    for step in s.steps_for(profile) {
        for l in step_lists(step) {
            if !out.iter().any(|(k, _)| *k == l) {
                out.push((l, step.index));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::load::test_scenario as scenario;

    /// A concurrent block needs `atomic` when the target performs one of its lanes' requests
    /// by read-modify-write; other blocks, other steps and atomic targets need nothing.
    #[test]
    fn a_concurrent_block_the_target_reads_then_writes_needs_atomic() {
        let s = scenario(json!([
            {"concurrent": {"lanes": [
                {"session": "a", "repeat": 3, "send": {"op": "create", "list": "l", "task": {"subject": "t ${i}"}}}],
             "verify": "unique_ids", "list": "l"}},
            {"send": {"op": "update", "list": "l", "id": "1", "patch": {"addBlocks": ["2"]}}},
            {"concurrent": {"lanes": [
                {"session": "a", "repeat": 2, "send": {"op": "update", "list": "l", "id": "1${i}", "patch": {"addBlocks": ["2${i}"]}}},
                {"session": "b", "repeat": 2, "send": {"op": "update", "list": "l", "id": "2${i}", "patch": {"addBlockedBy": ["1${i}"]}}}],
             "verify": "acyclic", "list": "l"}},
        ]));
        let hello = |mapping: serde_json::Value| {
            Hello::from_json(
                &json!({"ok": true, "protocol": 2, "name": "x", "version": "1",
                "layout": "opaque", "features": ["edges"], "mapping": mapping}),
            )
            .unwrap()
        };
        let atomic = hello(json!({}));
        assert_eq!(undeclared(&s, Profile::Strict, &atomic), []);
        let rmw = hello(
            json!({"read_modify_write": "create with task.blocks; update with patch.addBlocks"}),
        );
        assert_eq!(
            undeclared(&s, Profile::Strict, &rmw),
            [(Feature::Atomic, Some(2))]
        );
        let step = s.steps_for(Profile::Strict).nth(2).unwrap();
        assert_eq!(
            read_modify_write(step, &rmw),
            ["update with patch.addBlocks"]
        );
        assert_eq!(
            admit(&s, Profile::Strict, &rmw),
            Ok(vec![(Feature::Atomic, Some(2))])
        );
    }

    /// Against hidden edges: a write keeps its acceptance or refusal and loses only its
    /// edges; a read of edges, a bind from them, what uses that bind, and a check of
    /// invariants or ready tasks are not judged; the rest is as written.
    #[test]
    fn hidden_edges_are_judged_on_answers_and_their_read_backs_left_out() {
        let s = scenario(json!([
            {"send": {"op": "create", "list": "l", "task": {"subject": "a"}}, "expect": {"ok": true, "task": {"id": "1", "blockedBy": []}}},
            {"send": {"op": "update", "list": "l", "id": "1", "patch": {"addBlockedBy": ["2"]}},
             "expect": {"ok": true, "task": {"id": "1", "subject": "a", "blockedBy": ["2"]}}},
            {"send": {"op": "update", "list": "l", "id": "2", "patch": {"addBlockedBy": ["1"]}}, "expect": {"error": "cycle"}},
            {"send": {"op": "get", "list": "l", "id": "2"}, "expect": {"ok": true, "task": {"blockedBy": []}}},
            {"send": {"op": "get", "list": "l", "id": "1"}, "bind": {"b": "task.blockedBy.0"}},
            {"send": {"op": "get", "list": "l", "id": "${b}"}},
            {"send": {"op": "get", "list": "l", "id": "1"}, "expect": {"ok": true, "task": {"subject": "a"}}},
            {"check": {"list": "l", "invariants": ["acyclic"], "ready": ["2"]}},
            {"check": {"list": "l", "invariants": ["unique_ids"]}},
        ]));
        let (view, skips) = hidden_edges_view(&s, Profile::Strict);
        assert_eq!(skips.keys().copied().collect::<Vec<_>>(), [3, 4, 5, 7]);
        assert!(
            skips[&5].starts_with("uses ${b}, which steps[4]"),
            "{}",
            skips[&5]
        );
        let expect = |i: usize| match &view.steps[i].action {
            Action::Send { expect, .. } => expect.get(Profile::Strict).cloned(),
            _ => None,
        };
        assert_eq!(
            expect(1),
            Some(Expect::Ok {
                task: Some(json!({"id": "1", "subject": "a"})),
                tasks: None,
                corrupt: None
            })
        );
        assert_eq!(
            expect(2),
            Some(Expect::Error(taskproof_core::protocol::ErrorKind::Cycle))
        );
        assert_eq!(expect(6), {
            let Action::Send { expect, .. } = &s.steps[6].action else {
                unreachable!()
            };
            expect.get(Profile::Strict).cloned()
        });
    }

    #[test]
    fn opaque_skips_follow_lists_and_variables() {
        let s = scenario(json!([
            {"send": {"op": "create", "list": "l", "task": {"subject": "a"}}, "bind": {"a": "task.id"}},
            {"write_file": {"path": "l/9.json", "text": "{"}},
            {"send": {"op": "list", "list": "l"}, "bind": {"n": "tasks.0.id"}},
            {"send": {"op": "create", "list": "m", "task": {"subject": "${n}"}}},
            {"send": {"op": "get", "list": "k", "id": "${a}"}, "expect": "anything"},
            {"assert_file": {"path": "k/1.json", "exists": false}},
            {"send": {"op": "list", "list": "k"}},
        ]));
        let skips = opaque_skips(&s, Profile::Strict);
        let steps: Vec<usize> = skips.keys().copied().collect();
        // 1 writes list l; 2 lists l; 3 uses ${n} bound by 2 (and so list m is unknown);
        // 4 and 6 use list k, which only an assert_file (5, a read) touched.
        assert_eq!(steps, [1, 2, 3, 5]);
        assert_eq!(
            skips[&3],
            "uses ${n}, which skipped steps[2] would have bound"
        );
    }
}
