//! One call of a mapping (`[[ops.*.calls]]`, `[lists.create]`): its tool, argument
//! templates, conditions, the document its result is read as.

use std::collections::{BTreeMap, BTreeSet};

use regex_lite::Regex;
use serde_json::Value;
use taskproof_core::protocol::ErrorKind;

use super::error::{MappingError, Scope};
use super::values::{pointer, toml_to_json};
use crate::mapping::raw::{RawCall, RawDoc, RawPatterns, RawWhen, raw_doc};
use crate::mapping::template::{template, var_path};
use crate::mapping::{Base, Call, Cond, CondValue, DocSource, TextHow, TextRead};

pub(super) fn doc_source(raw: &RawDoc<'_>) -> Result<DocSource, (String, String)> {
    let compile = |k: &str, p: &str| {
        Regex::new(p).map_err(|e| (k.to_string(), format!("does not compile: {e}")))
    };
    let how = match (raw.pattern, raw.each) {
        (Some(_), Some(_)) => {
            return Err((
                "each".into(),
                "a pattern (one match) and each (every match) exclude each other".into(),
            ));
        }
        (Some(RawPatterns::One(p)), None) => Some(TextHow::One(vec![compile("pattern", p)?])),
        (Some(RawPatterns::Many(ps)), None) => {
            if ps.is_empty() {
                return Err(("pattern".into(), "an empty list of patterns".into()));
            }
            Some(TextHow::One(
                ps.iter()
                    .enumerate()
                    .map(|(i, p)| compile(&format!("pattern[{i}]"), p))
                    .collect::<Result<_, _>>()?,
            ))
        }
        (None, Some(e)) => Some(TextHow::Each(compile("each", e)?)),
        (None, None) => None,
    };
    let base = match raw.from {
        None | Some("auto") => Base::Auto,
        Some("structured") => Base::Structured,
        Some("json") => Base::Json,
        Some("pattern") if how.is_some() => Base::Auto,
        Some("pattern") => {
            return Err(("pattern".into(), "missing (from = \"pattern\")".into()));
        }
        Some(f) => {
            return Err((
                "from".into(),
                format!("expected auto, structured, json or pattern, got {f:?}"),
            ));
        }
    };
    if how.is_some() && matches!(raw.from, Some("structured" | "json")) && raw.text_at.is_none() {
        return Err((
            "from".into(),
            format!(
                "from = {:?} and a pattern exclude each other (text_at reads a string of the \
                 JSON document)",
                raw.from.unwrap_or_default()
            ),
        ));
    }
    let section = match raw.section {
        None => {
            if raw.section_end.is_some() {
                return Err(("section_end".into(), "needs a section".into()));
            }
            None
        }
        Some(s) => Some((
            compile("section", s)?,
            raw.section_end
                .map(|e| compile("section_end", e))
                .transpose()?,
        )),
    };
    let text_at = raw
        .text_at
        .map(|p| pointer(p).map_err(|e| ("text_at".to_string(), e)))
        .transpose()?;
    let text = match (how, section) {
        (Some(how), section) => Some(TextRead { section, how }),
        (None, Some(_)) => {
            return Err((
                "section".into(),
                "a section is searched by a pattern or each; neither is given".into(),
            ));
        }
        (None, None) => {
            if text_at.is_some() {
                return Err((
                    "text_at".into(),
                    "the text at the pointer is read by a pattern or each; neither is given".into(),
                ));
            }
            None
        }
    };
    Ok(DocSource {
        base,
        text,
        text_at,
    })
}

/// Checks one call; `known` are the paths its templates may name.
pub(super) fn call(
    c: &RawCall,
    key: &str,
    known: &BTreeSet<&str>,
    scope: &Scope,
) -> Result<Call, MappingError> {
    let err = scope.err;
    let path_in = |k: &str, p: &str, known: &BTreeSet<&str>| {
        var_path(p, known).map_err(|e| err(&format!("{key}.{k}"), e))
    };
    let mut known = known.clone();
    if scope.container {
        known.insert("container");
    }
    let for_each = c
        .for_each
        .as_deref()
        .map(|p| path_in("for_each", p, &known))
        .transpose()?;
    if for_each.is_some() {
        known.insert("item");
    }
    let read = c
        .read
        .as_deref()
        .map(|p| path_in("read", p, &known))
        .transpose()?;
    if read.is_some() {
        known.insert("current");
    }
    let when = match &c.when {
        None => Vec::new(),
        Some(w) => conds(w, &format!("{key}.when"), &known, err)?,
    };
    let unless = match &c.unless {
        None => Vec::new(),
        Some(w) => conds(w, &format!("{key}.unless"), &known, err)?,
    };
    let args = toml_to_json(&toml::Value::Table(c.args.clone()));
    let args = template(&args, &known).map_err(|(at, e)| err(&format!("{key}.args{at}"), e))?;
    let doc = doc_source(&raw_doc!(c)).map_err(|(k, e)| err(&format!("{key}.{k}"), e))?;
    let id =
        c.id.as_deref()
            .map(|p| pointer(p).map_err(|e| err(&format!("{key}.id"), e)))
            .transpose()?;
    let mut error_kinds = BTreeMap::new();
    let mut no_error = BTreeSet::new();
    for (from, to) in &c.error_kinds {
        let k = format!("{key}.error_kinds.{from}");
        let parse = |s: &str| s.parse::<ErrorKind>().map_err(|e| err(&k, e));
        if to == "none" {
            no_error.insert(parse(from)?);
        } else {
            error_kinds.insert(parse(from)?, parse(to)?);
        }
    }
    let tool = match (&c.tool, &read) {
        (Some(t), _) => t.clone(),
        (None, Some(_)) => {
            if !c.args.is_empty() || c.id.is_some() || for_each.is_some() {
                return Err(err(
                    key,
                    "a step without a tool only reads the task (read): no args, id or for_each"
                        .into(),
                ));
            }
            String::new()
        }
        (None, None) => {
            return Err(err(
                &format!("{key}.tool"),
                "missing: the tool to call (or `read` alone, a step that reads the task)".into(),
            ));
        }
    };
    Ok(Call {
        tool,
        args,
        when,
        unless,
        for_each,
        read,
        id,
        error_kinds,
        no_error,
        doc,
        key: key.to_string(),
    })
}

/// The conditions of a `when` (or an `unsupported_when` entry): a path that must be present,
/// or a table of paths and the values (one or a list) each must have.
pub(super) fn conds(
    w: &RawWhen,
    key: &str,
    known: &BTreeSet<&str>,
    err: &dyn Fn(&str, String) -> MappingError,
) -> Result<Vec<Cond>, MappingError> {
    match w {
        RawWhen::Path(p) => Ok(vec![Cond::Present(
            var_path(p, known).map_err(|e| err(key, e))?,
        )]),
        RawWhen::Values(t) => {
            let mut out = Vec::new();
            for (p, v) in t {
                let path = var_path(p, known).map_err(|e| err(&format!("{key}.{p:?}"), e))?;
                let values = match toml_to_json(v) {
                    Value::Array(a) => a,
                    one => vec![one],
                };
                let values = values
                    .into_iter()
                    .map(|v| {
                        if v.as_str() == Some("{null}") {
                            return Ok(CondValue::Null);
                        }
                        match v
                            .as_str()
                            .and_then(|s| s.strip_prefix('{')?.strip_suffix('}'))
                        {
                            Some(q) => var_path(q, known)
                                .map(CondValue::Path)
                                .map_err(|e| err(&format!("{key}.{p:?}"), e)),
                            None => Ok(CondValue::Lit(v)),
                        }
                    })
                    .collect::<Result<_, _>>()?;
                out.push(Cond::Is(path, values));
            }
            Ok(out)
        }
    }
}
