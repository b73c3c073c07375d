//! `[task]`: the fields renamed, values mapped, how `blocks` and ids are kept, the status
//! read from other fields, fields parsed from text.

use std::collections::BTreeMap;

use regex_lite::Regex;
use taskproof_core::task::TASK_FIELDS;

use super::error::{MakeError, MappingError};
use super::values::{STATUSES, nulls, toml_to_json};
use crate::mapping::raw::{RawParse, RawTask};
use crate::mapping::{Parse, StatusRule, TaskShape};

/// The task's shape, and whether `blocks` is derived.
pub(super) fn task_shape(raw: RawTask, err: &MakeError) -> Result<(TaskShape, bool), MappingError> {
    for (table, k) in raw
        .fields
        .keys()
        .map(|k| ("fields", k))
        .chain(raw.values.keys().map(|k| ("values", k)))
        .chain(raw.parse.keys().map(|k| ("parse", k)))
    {
        if !TASK_FIELDS.contains(&k.as_str()) {
            return Err(err(
                &format!("task.{table}.{k}"),
                format!(
                    "not a wire task field; expected one of {}",
                    TASK_FIELDS.join(", ")
                ),
            ));
        }
    }
    let derived_blocks = match raw.blocks.as_deref() {
        None | Some("stored") => false,
        Some("derived") => true,
        Some(other) => {
            return Err(err(
                "task.blocks",
                format!("expected \"stored\" or \"derived\", got {other:?}"),
            ));
        }
    };
    let id_table = match raw.ids.as_deref() {
        None | Some("server") => false,
        Some("table") => true,
        Some(other) => {
            return Err(err(
                "task.ids",
                format!("expected \"server\" or \"table\", got {other:?}"),
            ));
        }
    };
    let mut status_from = Vec::new();
    for (i, r) in raw.status_from.iter().enumerate() {
        let key = format!("task.status_from[{i}]");
        if !STATUSES.contains(&r.status.as_str()) {
            return Err(err(
                &format!("{key}.status"),
                format!(
                    "{:?} is not a wire status; expected pending, in_progress or completed",
                    r.status
                ),
            ));
        }
        if r.field.is_none() && r.equals.is_some() {
            return Err(err(
                &format!("{key}.equals"),
                "needs a field to compare".into(),
            ));
        }
        if r.field.is_none() && i + 1 != raw.status_from.len() {
            return Err(err(
                &key,
                "a rule without a field always holds: it must be the last".into(),
            ));
        }
        status_from.push(StatusRule {
            field: r.field.clone(),
            equals: r.equals.as_ref().map(|v| nulls(toml_to_json(v))),
            status: r.status.clone(),
        });
    }
    let mut parse = BTreeMap::new();
    for (field, p) in &raw.parse {
        let key = format!("task.parse.{field}");
        let how = match p {
            RawParse::Word(w) if w == "json" => Parse::Json,
            RawParse::Word(w) => {
                return Err(err(
                    &key,
                    format!("expected \"json\" or {{ each = PATTERN }}, got {w:?}"),
                ));
            }
            RawParse::Each { each } => Parse::Each(
                Regex::new(each)
                    .map_err(|e| err(&format!("{key}.each"), format!("does not compile: {e}")))?,
            ),
        };
        parse.insert(field.clone(), how);
    }
    Ok((
        TaskShape {
            fields: raw.fields,
            derived_blocks,
            values: raw.values,
            sort: raw.sort,
            id_table,
            status_from,
            parse,
        },
        derived_blocks,
    ))
}
