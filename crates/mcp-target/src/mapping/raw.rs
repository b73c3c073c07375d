//! The mapping file as written: serde's shapes of its TOML, every table strict
//! (`deny_unknown_fields`), so that an unknown or ill-typed key is an error of toml's before
//! anything is checked (check.rs turns these into the model).

use std::collections::BTreeMap;

use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMapping {
    #[serde(default)]
    pub(super) server: RawServer,
    #[serde(default)]
    pub(super) status: BTreeMap<String, toml::Value>,
    #[serde(default)]
    pub(super) task: RawTask,
    #[serde(default)]
    pub(super) errors: RawErrors,
    #[serde(default)]
    pub(super) lists: RawLists,
    #[serde(default)]
    pub(super) unsupported: Vec<String>,
    #[serde(default)]
    pub(super) ops: BTreeMap<String, RawOp>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawServer {
    #[serde(default)]
    pub(super) args: Vec<String>,
    pub(super) cwd: Option<String>,
    #[serde(default)]
    pub(super) env: BTreeMap<String, String>,
    pub(super) layout: Option<String>,
    #[serde(default)]
    pub(super) features: Vec<String>,
    #[serde(default)]
    pub(super) check_form: bool,
    #[serde(default)]
    pub(super) skip_stdout_noise: bool,
    #[serde(default)]
    pub(super) per_list: bool,
    pub(super) reuse: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTask {
    #[serde(default)]
    pub(super) fields: BTreeMap<String, String>,
    pub(super) blocks: Option<String>,
    #[serde(default)]
    pub(super) values: BTreeMap<String, BTreeMap<String, String>>,
    #[serde(default)]
    pub(super) sort: bool,
    pub(super) ids: Option<String>,
    #[serde(default)]
    pub(super) status_from: Vec<RawStatusRule>,
    #[serde(default)]
    pub(super) parse: BTreeMap<String, RawParse>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawStatusRule {
    pub(super) field: Option<String>,
    pub(super) equals: Option<toml::Value>,
    pub(super) status: String,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum RawParse {
    Word(String),
    Each { each: String },
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawErrors {
    pub(super) kind: Option<String>,
    #[serde(default)]
    pub(super) text: Vec<RawErrorRule>,
    pub(super) default: Option<String>,
    #[serde(default)]
    pub(super) rpc: BTreeMap<String, String>,
    #[serde(default)]
    pub(super) detect: Vec<RawDetect>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawErrorRule {
    pub(super) pattern: String,
    pub(super) kind: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawDetect {
    pub(super) at: Option<String>,
    pub(super) is: Option<toml::Value>,
    pub(super) pattern: Option<String>,
    pub(super) kind: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLists {
    pub(super) create: Option<RawCall>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawOp {
    pub(super) calls: Vec<RawCall>,
    #[serde(default)]
    pub(super) answer: RawRead,
    #[serde(default)]
    pub(super) unsupported_when: Vec<RawWhen>,
    #[serde(default)]
    pub(super) unsupported_after: usize,
    pub(super) undo: Option<RawCall>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum RawWhen {
    Path(String),
    Values(toml::Table),
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum RawPatterns {
    One(String),
    Many(Vec<String>),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCall {
    pub(super) tool: Option<String>,
    #[serde(default)]
    pub(super) args: toml::Table,
    pub(super) when: Option<RawWhen>,
    pub(super) unless: Option<RawWhen>,
    pub(super) for_each: Option<String>,
    pub(super) read: Option<String>,
    pub(super) id: Option<String>,
    #[serde(default)]
    pub(super) error_kinds: BTreeMap<String, String>,
    pub(super) from: Option<String>,
    pub(super) pattern: Option<RawPatterns>,
    pub(super) each: Option<String>,
    pub(super) section: Option<String>,
    pub(super) section_end: Option<String>,
    pub(super) text_at: Option<String>,
}

/// Where a result's document comes from: the keys shared by calls and answers.
#[derive(Debug, Default)]
pub(super) struct RawDoc<'a> {
    pub(super) from: Option<&'a str>,
    pub(super) pattern: Option<&'a RawPatterns>,
    pub(super) each: Option<&'a str>,
    pub(super) section: Option<&'a str>,
    pub(super) section_end: Option<&'a str>,
    pub(super) text_at: Option<&'a str>,
}

macro_rules! raw_doc {
    ($r:expr) => {
        RawDoc {
            from: $r.from.as_deref(),
            pattern: $r.pattern.as_ref(),
            each: $r.each.as_deref(),
            section: $r.section.as_deref(),
            section_end: $r.section_end.as_deref(),
            text_at: $r.text_at.as_deref(),
        }
    };
}
pub(super) use raw_doc;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRead {
    pub(super) call: Option<usize>,
    pub(super) task: Option<String>,
    pub(super) tasks: Option<String>,
    pub(super) corrupt: Option<String>,
    pub(super) id: Option<String>,
    #[serde(default)]
    pub(super) fetch: bool,
    #[serde(default)]
    pub(super) also: BTreeMap<String, RawAlso>,
    pub(super) from: Option<String>,
    pub(super) pattern: Option<RawPatterns>,
    pub(super) each: Option<String>,
    pub(super) section: Option<String>,
    pub(super) section_end: Option<String>,
    pub(super) text_at: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAlso {
    pub(super) call: Option<usize>,
    pub(super) at: String,
}
