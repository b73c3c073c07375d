//! `[status]`: the server's word for each wire status, whether it reads them without case,
//! and the words it refuses.

use std::collections::BTreeMap;

use serde_json::Value;

use super::error::{MakeError, MappingError};
use super::values::{STATUSES, nulls, toml_to_json};
use crate::mapping::StatusWords;

/// The server's words by wire status, and how it reads them.
#[allow(clippy::type_complexity)]
pub(super) fn statuses(
    raw: &BTreeMap<String, toml::Value>,
    err: &MakeError,
) -> Result<(BTreeMap<String, Value>, StatusWords), MappingError> {
    let mut status = BTreeMap::new();
    let mut status_words = StatusWords::default();
    for (k, v) in raw {
        match k.as_str() {
            "ignore_case" => {
                status_words.ignore_case = v.as_bool().ok_or_else(|| {
                    err(
                        "status.ignore_case",
                        format!("expected true or false, got {v}"),
                    )
                })?;
                continue;
            }
            "refuse" => {
                status_words.refuse = refused_words(v, &err)?;
                continue;
            }
            _ => {}
        }
        if !STATUSES.contains(&k.as_str()) {
            return Err(err(
                &format!("status.{k}"),
                "not a wire status; the keys are pending, in_progress and completed (the \
                 server's word for each), ignore_case and refuse"
                    .into(),
            ));
        }
        let v = nulls(toml_to_json(v));
        if !(v.is_string() || v.is_object()) {
            return Err(err(
                &format!("status.{k}"),
                format!("expected the server's word (a string) or a table of arguments, got {v}"),
            ));
        }
        status.insert(k.clone(), v);
    }
    for (i, w) in status_words.refuse.iter().enumerate() {
        if STATUSES.iter().any(|s| status_words.same(s, w)) {
            return Err(err(
                &format!("status.refuse[{i}]"),
                format!(
                    "{w:?} is a wire status: the client answers the three wire words as the \
                     mapping says, so it cannot refuse one"
                ),
            ));
        }
    }
    Ok((status, status_words))
}

/// `status.refuse`: a list of the server's words, each a non-empty string.
fn refused_words(
    v: &toml::Value,
    err: &dyn Fn(&str, String) -> MappingError,
) -> Result<Vec<String>, MappingError> {
    let Some(items) = v.as_array() else {
        return Err(err(
            "status.refuse",
            format!("expected a list of the server's status words, got {v}"),
        ));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, w)| match w.as_str() {
            Some(s) if !s.is_empty() => Ok(s.to_string()),
            _ => Err(err(
                &format!("status.refuse[{i}]"),
                format!("expected one of the server's words (a non-empty string), got {w}"),
            )),
        })
        .collect()
}
