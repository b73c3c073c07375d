//! `[ops.*]`, `unsupported` and `[lists.create]`: every operation mapped or declared
//! unsupported, each mapped one's calls and answer.

use std::collections::{BTreeMap, BTreeSet};

use taskproof_core::protocol::Op;
// The wire fields of a task (SPEC §1): the names an answer's `also` may read.
use taskproof_core::task::TASK_FIELDS;

use super::call::{call, conds, doc_source};
use super::error::{MappingError, Scope};
use super::values::{op_of, pointer};
use crate::mapping::raw::{RawDoc, RawLists, RawOp, raw_doc};
use crate::mapping::{Call, OPS, OpMap, Read};

/// The call that makes a list's container, when the server keeps lists in containers.
pub(super) fn container(raw: &RawLists, scope: &Scope) -> Result<Option<Call>, MappingError> {
    let err = scope.err;
    Ok(match &raw.create {
        None => None,
        Some(c) => {
            let known: BTreeSet<&str> = ["root", "list"].into_iter().collect();
            let call = call(c, "lists.create", &known, scope)?;
            if call.id.is_none() {
                return Err(err(
                    "lists.create.id",
                    "missing: a JSON pointer to the new container's id in the result".into(),
                ));
            }
            if call.for_each.is_some() || call.read.is_some() {
                return Err(err(
                    "lists.create",
                    "makes one container: no for_each or read".into(),
                ));
            }
            Some(call)
        }
    })
}

/// The operations declared unsupported and the mapped ones; every operation is one or the
/// other.
#[allow(clippy::type_complexity)]
pub(super) fn ops(
    raw_unsupported: &[String],
    raw_ops: &BTreeMap<String, RawOp>,
    scope: &Scope,
) -> Result<(BTreeSet<Op>, BTreeMap<Op, OpMap>), MappingError> {
    let err = scope.err;
    let mut unsupported = BTreeSet::new();
    for (i, s) in raw_unsupported.iter().enumerate() {
        let key = format!("unsupported[{i}]");
        let op = op_of(s).map_err(|e| err(&key, e))?;
        if raw_ops.contains_key(s) {
            return Err(err(
                &key,
                format!("{s} is both mapped (ops.{s}) and unsupported"),
            ));
        }
        unsupported.insert(op);
    }
    let mut ops = BTreeMap::new();
    for (name, raw_op) in raw_ops {
        let op = op_of(name).map_err(|e| err(&format!("ops.{name}"), e))?;
        ops.insert(op, op_map(op, raw_op, scope)?);
    }
    for op in OPS {
        if !ops.contains_key(&op) && !unsupported.contains(&op) {
            return Err(err(
                &format!("ops.{op}"),
                format!("missing: map {op} with [ops.{op}] or name it in `unsupported`"),
            ));
        }
    }
    Ok((unsupported, ops))
}

/// The request's parts an operation's templates may name.
fn roots(op: Op) -> &'static [&'static str] {
    match op {
        Op::Create => &["root", "list", "task"],
        Op::Get | Op::Delete => &["root", "list", "id"],
        Op::Update => &["root", "list", "id", "patch"],
        Op::List => &["root", "list"],
        Op::Claim => &["root", "list", "id", "owner"],
        Op::Hello => &["root"],
    }
}

fn op_map(op: Op, raw: &RawOp, scope: &Scope) -> Result<OpMap, MappingError> {
    let err = scope.err;
    let base = format!("ops.{op}");
    if raw.calls.is_empty() {
        return Err(err(
            &format!("{base}.calls"),
            "needs at least one call".into(),
        ));
    }
    let mut known: BTreeSet<&str> = roots(op).iter().copied().collect();
    if scope.container {
        known.insert("container");
    }
    let mut calls = Vec::new();
    for (i, c) in raw.calls.iter().enumerate() {
        let key = format!("{base}.calls[{i}]");
        let checked = call(c, &key, &known, scope)?;
        if checked.id.is_some() {
            known.insert("id");
        }
        // `{current}` stays for the calls after a read.
        if checked.read.is_some() {
            known.insert("current");
        }
        calls.push(checked);
    }
    let a = &raw.answer;
    let akey = format!("{base}.answer");
    let doc = doc_source(&raw_doc!(a)).map_err(|(k, e)| err(&format!("{akey}.{k}"), e))?;
    let ptr = |k: &str, p: &Option<String>| {
        p.as_deref()
            .map(|p| pointer(p).map_err(|e| err(&format!("{akey}.{k}"), e)))
            .transpose()
    };
    let mut also = Vec::new();
    for (field, x) in &a.also {
        let k = format!("{akey}.also.{field}");
        if !TASK_FIELDS.contains(&field.as_str()) {
            return Err(err(
                &k,
                format!(
                    "not a wire task field; expected one of {}",
                    TASK_FIELDS.join(", ")
                ),
            ));
        }
        if let Some(n) = x.call
            && n >= calls.len()
        {
            return Err(err(
                &format!("{k}.call"),
                format!("there are only {} calls", calls.len()),
            ));
        }
        also.push((
            field.clone(),
            x.call,
            pointer(&x.at).map_err(|e| err(&format!("{k}.at"), e))?,
        ));
    }
    let answer = Read {
        call: a.call,
        doc,
        task: ptr("task", &a.task)?,
        tasks: ptr("tasks", &a.tasks)?,
        corrupt: ptr("corrupt", &a.corrupt)?,
        id: ptr("id", &a.id)?,
        fetch: a.fetch,
        also,
    };
    if let Some(n) = answer.call
        && n >= calls.len()
    {
        return Err(err(
            &format!("{akey}.call"),
            format!("there are only {} calls", calls.len()),
        ));
    }
    match op {
        Op::Create | Op::Update | Op::Claim | Op::Get => {
            if op == Op::Get && answer.fetch {
                return Err(err(
                    &format!("{akey}.fetch"),
                    "get cannot fetch itself".into(),
                ));
            }
            if op == Op::Get && answer.task.is_some() && answer.tasks.is_some() {
                return Err(err(
                    &format!("{akey}.tasks"),
                    "get reads one task: `task` (a pointer to it) or `tasks` (a list to pick it \
                     from by id), not both"
                        .into(),
                ));
            }
            if op != Op::Get && answer.tasks.is_some() {
                return Err(err(
                    &format!("{akey}.tasks"),
                    format!("{op} answers one task: `task`, or fetch = true"),
                ));
            }
            if answer.task.is_none() && !answer.fetch && answer.tasks.is_none() {
                return Err(err(
                    &format!("{akey}.task"),
                    "missing: a JSON pointer to the task in the result, or fetch = true".into(),
                ));
            }
            if op == Op::Create && answer.fetch && answer.id.is_none() && !known.contains("id") {
                return Err(err(
                    &format!("{akey}.id"),
                    "missing: create with fetch = true needs the new task's id (answer.id or \
                     a call's id)"
                        .into(),
                ));
            }
        }
        Op::List if answer.tasks.is_none() => {
            return Err(err(
                &format!("{akey}.tasks"),
                "missing: a JSON pointer to the array of tasks".into(),
            ));
        }
        _ => {}
    }
    let unsupported_when = raw
        .unsupported_when
        .iter()
        .enumerate()
        .map(|(i, w)| conds(w, &format!("{base}.unsupported_when[{i}]"), &known, err))
        .collect::<Result<_, _>>()?;
    if raw.unsupported_after > calls.len() {
        return Err(err(
            &format!("{base}.unsupported_after"),
            format!("there are only {} calls", calls.len()),
        ));
    }
    let undo = match &raw.undo {
        None => None,
        Some(u) => {
            if !calls.iter().any(|c| c.id.is_some()) {
                return Err(err(
                    &format!("{base}.undo"),
                    "undoes the task a call made: needs a call with `id`".into(),
                ));
            }
            let u = call(u, &format!("{base}.undo"), &known, scope)?;
            if u.for_each.is_some() || u.read.is_some() {
                return Err(err(
                    &format!("{base}.undo"),
                    "one call: no for_each or read".into(),
                ));
            }
            Some(u)
        }
    };
    Ok(OpMap {
        calls,
        answer,
        unsupported_when,
        unsupported_after: raw.unsupported_after,
        undo,
    })
}
