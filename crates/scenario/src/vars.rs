//! Scenario variables: `${name}` placeholders in step JSON, bound from earlier answers.
//!
//! A string that is exactly `"${a}"` becomes the bound value itself, keeping its JSON type;
//! `${a}` inside a longer string is replaced by the value's text (a string's contents, any
//! other value's JSON). The loader uses [`uses`] to prove every placeholder is bound before
//! the step that needs it, so at run time an unbound name means an earlier step's answer had
//! nothing to bind (it failed as the scenario allowed), never a typo.

use std::collections::BTreeMap;

use serde_json::Value;

/// Bound variables of one running scenario.
pub type Vars = BTreeMap<String, Value>;

/// A placeholder or the text around it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece<'a> {
    Text(&'a str),
    Var(&'a str),
}

/// Why a string's placeholders could not be read or filled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VarError {
    #[error("`${{` without a closing `}}` in {0:?}")]
    Unterminated(String),
    #[error("bad variable name {0:?}: use letters, digits and `_`, not starting with a digit")]
    BadName(String),
    #[error("variable `{0}` is not bound (the step that binds it did not answer with a value)")]
    Unbound(String),
}

/// Whether `name` can be a variable: letters, digits and `_`, not starting with a digit.
pub fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn pieces(s: &str) -> Result<Vec<Piece<'_>>, VarError> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(start) = rest.find("${") {
        if start > 0 {
            out.push(Piece::Text(&rest[..start]));
        }
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| VarError::Unterminated(s.to_string()))?;
        let name = &after[..end];
        if !valid_name(name) {
            return Err(VarError::BadName(name.to_string()));
        }
        out.push(Piece::Var(name));
        rest = &after[end + 1..];
    }
    if !rest.is_empty() {
        out.push(Piece::Text(rest));
    }
    Ok(out)
}

/// Every variable used in `v`, with the JSON path (below `path`) where it is used.
pub fn uses(v: &Value, path: &str) -> Result<Vec<(String, String)>, (String, VarError)> {
    let mut out = Vec::new();
    walk(v, path, &mut out)?;
    Ok(out)
}

fn walk(v: &Value, path: &str, out: &mut Vec<(String, String)>) -> Result<(), (String, VarError)> {
    match v {
        Value::String(s) => {
            for p in pieces(s).map_err(|e| (path.to_string(), e))? {
                if let Piece::Var(name) = p {
                    out.push((name.to_string(), path.to_string()));
                }
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                walk(item, &format!("{path}[{i}]"), out)?;
            }
        }
        Value::Object(m) => {
            for (k, item) in m {
                let here = format!("{path}.{k}");
                for p in pieces(k).map_err(|e| (here.clone(), e))? {
                    if let Piece::Var(name) = p {
                        out.push((name.to_string(), here.clone()));
                    }
                }
                walk(item, &here, out)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// Fills every placeholder in `v`. Object keys are filled too (a lane may write the
/// metadata key `"a${i}"`).
pub fn substitute(v: &Value, vars: &Vars) -> Result<Value, VarError> {
    Ok(match v {
        Value::String(s) => substitute_str(s, vars)?,
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|i| substitute(i, vars))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(m) => {
            let mut out = serde_json::Map::new();
            for (k, item) in m {
                out.insert(substitute_text(k, vars)?, substitute(item, vars)?);
            }
            Value::Object(out)
        }
        other => other.clone(),
    })
}

/// Fills a string: a lone placeholder keeps the bound value's type.
pub fn substitute_str(s: &str, vars: &Vars) -> Result<Value, VarError> {
    let parts = pieces(s)?;
    if let [Piece::Var(name)] = parts.as_slice() {
        return vars
            .get(*name)
            .cloned()
            .ok_or_else(|| VarError::Unbound(name.to_string()));
    }
    Ok(Value::String(join(&parts, vars)?))
}

/// Fills a string and returns text, whatever the bound values' types.
pub fn substitute_text(s: &str, vars: &Vars) -> Result<String, VarError> {
    join(&pieces(s)?, vars)
}

fn join(parts: &[Piece<'_>], vars: &Vars) -> Result<String, VarError> {
    let mut out = String::new();
    for p in parts {
        match p {
            Piece::Text(t) => out.push_str(t),
            Piece::Var(name) => match vars.get(*name) {
                Some(Value::String(s)) => out.push_str(s),
                Some(other) => out.push_str(&other.to_string()),
                None => return Err(VarError::Unbound(name.to_string())),
            },
        }
    }
    Ok(out)
}

/// Reads a dotted path with array indices (`task.id`, `tasks.0.id`) out of an answer.
pub fn lookup<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(v, |cur, part| match cur {
        Value::Object(m) => m.get(part),
        Value::Array(items) => part.parse::<usize>().ok().and_then(|i| items.get(i)),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn vars() -> Vars {
        [("a".to_string(), json!("3")), ("n".to_string(), json!(7))]
            .into_iter()
            .collect()
    }

    #[test]
    fn a_lone_placeholder_keeps_the_type() {
        assert_eq!(substitute(&json!("${n}"), &vars()).unwrap(), json!(7));
        assert_eq!(substitute(&json!("${a}"), &vars()).unwrap(), json!("3"));
    }

    #[test]
    fn placeholders_in_text_and_keys_are_filled() {
        let v = json!({"subject": "child of ${a} (${n})", "m": {"k${a}": "${a}x"}});
        assert_eq!(
            substitute(&v, &vars()).unwrap(),
            json!({"subject": "child of 3 (7)", "m": {"k3": "3x"}})
        );
    }

    #[test]
    fn unbound_and_malformed_placeholders_are_errors() {
        assert_eq!(
            substitute(&json!(["${zz}"]), &vars()),
            Err(VarError::Unbound("zz".into()))
        );
        assert!(matches!(
            substitute(&json!("${a"), &vars()),
            Err(VarError::Unterminated(_))
        ));
        assert!(matches!(
            substitute(&json!("${1x}"), &vars()),
            Err(VarError::BadName(_))
        ));
        // A dollar sign alone is text.
        assert_eq!(substitute(&json!("$5"), &vars()).unwrap(), json!("$5"));
    }

    #[test]
    fn uses_names_the_path() {
        let u = uses(
            &json!({"id": "${b}", "patch": {"addBlockedBy": ["${a}"]}}),
            "send",
        )
        .unwrap();
        assert_eq!(
            u,
            vec![
                ("b".to_string(), "send.id".to_string()),
                ("a".to_string(), "send.patch.addBlockedBy[0]".to_string())
            ]
        );
    }

    #[test]
    fn lookup_walks_objects_and_arrays() {
        let v = json!({"tasks": [{"id": "1"}, {"id": "2"}]});
        assert_eq!(lookup(&v, "tasks.1.id"), Some(&json!("2")));
        assert_eq!(lookup(&v, "tasks.2.id"), None);
        assert_eq!(lookup(&v, "task.id"), None);
    }
}
