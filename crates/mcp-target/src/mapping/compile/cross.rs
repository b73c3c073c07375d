//! What the parts of a mapping say of each other: a declared part is never answered
//! `unsupported`, and every read of a task has an `[ops.get]` (and a derived `blocks` an
//! `[ops.list]`) to go through.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};
use taskproof_core::protocol::{Feature, Op, request_features};

use super::error::{MakeError, MappingError};
use crate::mapping::{Cond, OpMap};

/// A declared part is judged (docs/spec.md, "Optional parts"): a request that needs only
/// declared parts cannot be answered `unsupported` by the mapping, or the refusal would be the
/// server's failure. A request that needs an undeclared part is not judged anyway.
pub(super) fn declared_are_mapped(
    raw_unsupported: &[String],
    ops: &BTreeMap<Op, OpMap>,
    features: &BTreeSet<Feature>,
    err: &MakeError,
) -> Result<(), MappingError> {
    let declared_but_unsupported = |key: &str, request: Value, what: &str| {
        let needs = request_features(&request);
        if needs.is_empty() || !needs.is_subset(features) {
            return Ok(());
        }
        let parts = needs.iter().map(|f| f.as_str()).collect::<Vec<_>>();
        Err(err(
            key,
            format!(
                "declares {} but answers {what} unsupported: a step that sends it is judged, and \
                 the refusal would be the server's failure; map it, or do not declare {}",
                parts.join(" and "),
                if parts.len() == 1 { "it" } else { "them" }
            ),
        ))
    };
    for (i, s) in raw_unsupported.iter().enumerate() {
        declared_but_unsupported(&format!("unsupported[{i}]"), json!({ "op": s }), s)?;
    }
    for (op, m) in ops {
        for (i, conds) in m.unsupported_when.iter().enumerate() {
            // A plain path: the request that has it.
            let [Cond::Present(path)] = conds.as_slice() else {
                continue;
            };
            let mut request = json!({ "op": op.as_str() });
            let mut at = &mut request;
            for p in path {
                at = &mut at[p.as_str()];
            }
            *at = json!("x");
            declared_but_unsupported(
                &format!("ops.{op}.unsupported_when[{i}]"),
                request,
                &path.join("."),
            )?;
        }
    }
    Ok(())
}

/// Every read of a task inside a request goes through `[ops.get]`, and a derived `blocks`
/// through `[ops.list]`.
pub(super) fn reads_have_a_reader(
    ops: &BTreeMap<Op, OpMap>,
    derived_blocks: bool,
    err: &MakeError,
) -> Result<(), MappingError> {
    if derived_blocks && !ops.contains_key(&Op::List) {
        return Err(err(
            "task.blocks",
            "\"derived\" needs [ops.list] to read every task".into(),
        ));
    }
    if !ops.contains_key(&Op::Get) {
        // Every read of a task inside a request goes through [ops.get]: a call's `read`, and
        // an answer's `fetch` (a list's of each task, another op's of its own).
        let reader = ops.values().find_map(|m| {
            let c = m.calls.iter().find(|c| c.read.is_some())?;
            Some(format!("{}'s read", c.key))
        });
        let fetcher = ops
            .iter()
            .find(|(_, m)| m.answer.fetch)
            .map(|(op, _)| format!("ops.{op}'s fetch"));
        if let Some(which) = reader.or(fetcher) {
            return Err(err(
                "ops.get",
                format!(
                    "missing: {which} reads a task through [ops.get] (a call's `read` and an \
                     answer's `fetch` do)"
                ),
            ));
        }
    }
    Ok(())
}
