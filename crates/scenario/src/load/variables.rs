//! Placeholders in a scenario: which of a step's values may hold them, and the proof, per
//! profile and honouring `only`, that each is bound by an earlier step before it is used.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::format::*;
use crate::vars;
use taskproof_core::field::FieldError;

/// The JSON values of a step that may hold placeholders, with their paths.
pub(crate) fn templated(step: &Step) -> Vec<(Value, String)> {
    let p = format!("steps[{}]", step.index);
    let s = |x: &str| Value::String(x.to_string());
    match &step.action {
        Action::Send {
            request, expect, ..
        } => {
            let mut out = vec![(request.clone(), format!("{p}.send"))];
            for e in expect.by_profile.values().chain(expect.default.iter()) {
                out.push((e.to_json(), format!("{p}.expect")));
            }
            out
        }
        Action::WriteTask { list, id, task } => vec![
            (s(list), format!("{p}.write_task.list")),
            (s(id), format!("{p}.write_task.id")),
            (task.clone(), format!("{p}.write_task.task")),
        ],
        Action::WriteFile { path, contents } => {
            let mut out = vec![(s(path), format!("{p}.write_file.path"))];
            if let Contents::Text(t) = contents {
                out.push((s(t), format!("{p}.write_file.text")));
            }
            out
        }
        Action::OutsideFile { contents, .. } => match contents {
            Contents::Text(t) => vec![(s(t), format!("{p}.outside_file.text"))],
            Contents::Bytes(_) => vec![],
        },
        Action::Symlink { path, to } => {
            let mut out = vec![(s(path), format!("{p}.symlink.path"))];
            if let LinkTarget::Inside(t) = to {
                out.push((s(t), format!("{p}.symlink.to")));
            }
            out
        }
        Action::Mkdir(x) => vec![(s(x), format!("{p}.mkdir"))],
        Action::RemoveFile(x) => vec![(s(x), format!("{p}.remove_file"))],
        Action::AssertFile { path, check } => {
            let mut out = vec![(s(path), format!("{p}.assert_file.path"))];
            match check {
                FileCheck::Text(t) => out.push((s(t), format!("{p}.assert_file.text"))),
                FileCheck::Task(t) => out.push((t.clone(), format!("{p}.assert_file.task"))),
                FileCheck::Exists(_) => {}
            }
            out
        }
        Action::AssertOutside { text, .. } => vec![(s(text), format!("{p}.assert_outside.text"))],
        Action::Check { list, ready, .. } => {
            let mut out = vec![(s(list), format!("{p}.check.list"))];
            if let Some(r) = ready {
                out.push((Value::Array(r.clone()), format!("{p}.check.ready")));
            }
            out
        }
        Action::Concurrent(c) => {
            let mut out = vec![(s(&c.list), format!("{p}.concurrent.list"))];
            for (k, l) in c.lanes.iter().enumerate() {
                if l.sends.is_empty() {
                    out.push((l.send.clone(), format!("{p}.concurrent.lanes[{k}].send")));
                }
                for (j, r) in l.sends.iter().enumerate() {
                    out.push((r.clone(), format!("{p}.concurrent.lanes[{k}].sends[{j}]")));
                }
            }
            for (k, t) in c.then.iter().enumerate() {
                out.push((t.send.clone(), format!("{p}.concurrent.then[{k}].send")));
            }
            out
        }
        Action::Open(_)
        | Action::Restart(_)
        | Action::Kill(_)
        | Action::Close(_)
        | Action::Wait(_)
        | Action::Event { .. } => vec![],
    }
}

/// Proves, for every profile the scenario applies to, that each placeholder is bound by an
/// earlier step that runs under that profile (`${i}` inside concurrent lanes).
pub(super) fn check_variables(s: &Scenario) -> Result<(), FieldError> {
    for &profile in &s.profiles {
        let mut bound: BTreeSet<String> = BTreeSet::new();
        for step in s.steps_for(profile) {
            let lane = matches!(step.action, Action::Concurrent(_));
            for (value, path) in templated(step) {
                let used = vars::uses(&value, &path)
                    .map_err(|(p, e)| FieldError::new(p, e.to_string()))?;
                for (name, at) in used {
                    let ok = bound.contains(&name) || (lane && name == "i");
                    if !ok {
                        let under = if s.profiles.len() > 1 {
                            format!(" (under profile {profile})")
                        } else {
                            String::new()
                        };
                        return Err(FieldError::new(
                            at,
                            format!(
                                "variable `{name}` is not bound by any earlier step{under}; bind it with \"bind\": {{\"{name}\": \"task.id\"}}"
                            ),
                        ));
                    }
                }
            }
            if let Action::Send { bind, .. } = &step.action {
                bound.extend(bind.iter().map(|(n, _)| n.clone()));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::tests::{base, parse};
    use serde_json::json;
    use taskproof_core::field::FieldError;

    #[test]
    fn variables_are_checked_per_profile() {
        // Bound only under strict, used under every profile.
        let v = base(json!([
            {"send": {"op": "create", "list": "l", "task": {"subject": "a"}},
             "bind": {"a": "task.id"}, "only": ["strict"]},
            {"send": {"op": "get", "list": "l", "id": "${a}"}}
        ]));
        let FieldError {
            field: p,
            message: m,
        } = parse(v).unwrap_err();
        assert_eq!(p, "steps[1].send.id");
        assert!(m.contains("cc-2.1.17"), "{m}");
        // `${i}` exists only inside lanes.
        let v = base(json!([{"send": {"op": "get", "list": "l", "id": "${i}"}}]));
        assert!(parse(v).is_err());
        let v = base(json!([{"concurrent": {
            "lanes": [{"session": "a", "repeat": 2, "send": {"op": "create", "list": "l", "task": {"subject": "x${i}"}}}],
            "verify": "unique_ids", "list": "l"}}]));
        assert!(parse(v).is_ok());
    }
}
