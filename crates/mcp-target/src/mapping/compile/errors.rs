//! `[errors]`: how an error result is told and which kind it is.

use regex_lite::Regex;
use serde_json::Value;
use taskproof_core::protocol::ErrorKind;

use super::error::{MakeError, MappingError};
use super::values::{nulls, pointer, toml_to_json};
use crate::mapping::raw::RawErrors;
use crate::mapping::{Detect, DetectHow, ErrorRules};

/// The error rules.
pub(super) fn error_rules(raw: &RawErrors, err: &MakeError) -> Result<ErrorRules, MappingError> {
    let kind = |key: &str, s: &str| s.parse::<ErrorKind>().map_err(|e| err(key, e));
    let mut errors = ErrorRules {
        kind: match &raw.kind {
            Some(p) => Some(pointer(p).map_err(|e| err("errors.kind", e))?),
            None => None,
        },
        default: match &raw.default {
            Some(s) => Some(kind("errors.default", s)?),
            None => None,
        },
        ..ErrorRules::default()
    };
    for (i, rule) in raw.text.iter().enumerate() {
        let key = format!("errors.text[{i}]");
        let re = Regex::new(&rule.pattern)
            .map_err(|e| err(&format!("{key}.pattern"), format!("does not compile: {e}")))?;
        errors
            .text
            .push((re, kind(&format!("{key}.kind"), &rule.kind)?));
    }
    for (code, k) in &raw.rpc {
        let key = format!("errors.rpc.{code}");
        let n = code
            .parse::<i32>()
            .map_err(|_| err(&key, "the key must be a JSON-RPC error code".into()))?;
        errors.rpc.insert(n, kind(&key, k)?);
    }
    for (i, d) in raw.detect.iter().enumerate() {
        let key = format!("errors.detect[{i}]");
        let how = match (&d.at, &d.pattern) {
            (Some(p), None) => DetectHow::At(
                pointer(p).map_err(|e| err(&format!("{key}.at"), e))?,
                d.is.as_ref().map(|v| match nulls(toml_to_json(v)) {
                    Value::Array(a) => a,
                    one => vec![one],
                }),
            ),
            (None, Some(p)) => {
                if d.is.is_some() {
                    return Err(err(
                        &format!("{key}.is"),
                        "`is` compares the value `at` a pointer; a pattern has none".into(),
                    ));
                }
                DetectHow::Pattern(Regex::new(p).map_err(|e| {
                    err(&format!("{key}.pattern"), format!("does not compile: {e}"))
                })?)
            }
            _ => {
                return Err(err(
                    &key,
                    "needs either `at` (a JSON pointer) or `pattern` (over the text)".into(),
                ));
            }
        };
        errors.detect.push(Detect {
            how,
            kind: d
                .kind
                .as_deref()
                .map(|k| kind(&format!("{key}.kind"), k))
                .transpose()?,
        });
    }
    Ok(errors)
}
