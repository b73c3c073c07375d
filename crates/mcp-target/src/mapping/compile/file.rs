//! The compiler's entry: the TOML read, each part handed to its pass, the model put together.

use std::path::Path;

use super::cross;
use super::error::{MappingError, Scope};
use super::errors::error_rules;
use super::ops::{container, ops};
use super::server::server;
use super::status::statuses;
use super::task::task_shape;
use crate::mapping::raw::RawMapping;
use crate::mapping::{Launch, Mapping};

impl Mapping {
    /// Reads and checks a mapping file.
    pub fn load(path: &Path) -> Result<Mapping, MappingError> {
        let text = std::fs::read_to_string(path).map_err(|e| MappingError {
            file: path.display().to_string(),
            key: "(file)".into(),
            message: format!("cannot read it: {e}"),
        })?;
        Mapping::parse(&text, path)
    }

    /// Checks a mapping given as text; `path` names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Mapping, MappingError> {
        mapping(text, path)
    }
}

/// Reads and checks a mapping given as text ([`Mapping::parse`]); `path` names it in errors.
fn mapping(text: &str, path: &Path) -> Result<Mapping, MappingError> {
    let file = path.display().to_string();
    let err = |key: &str, message: String| MappingError {
        file: file.clone(),
        key: key.to_string(),
        message,
    };
    let raw: RawMapping = toml::from_str(text).map_err(|e| {
        // toml's message says the line, the column and the key's problem; the key path
        // is in its message too ("unknown field `x`", "invalid type ... for key `y`").
        err(
            "(toml)",
            e.to_string()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" "),
        )
    })?;
    let (layout, features) = server(&raw.server, &err)?;
    let (status, status_words) = statuses(&raw.status, &err)?;
    let scope = Scope {
        container: raw.lists.create.is_some(),
        err: &err,
    };
    let (task, derived_blocks) = task_shape(raw.task, &err)?;
    let errors = error_rules(&raw.errors, &err)?;
    let container = container(&raw.lists, &scope)?;
    let (unsupported, ops) = ops(&raw.unsupported, &raw.ops, &scope)?;
    cross::declared_are_mapped(&raw.unsupported, &ops, &features, &err)?;
    cross::reads_have_a_reader(&ops, derived_blocks, &err)?;
    Ok(Mapping {
        path: path.to_path_buf(),
        launch: Launch {
            args: raw.server.args,
            cwd: raw.server.cwd,
            env: raw.server.env,
            per_list: raw.server.per_list,
            reuse: raw.server.reuse.unwrap_or(true),
        },
        layout,
        features,
        check_form: raw.server.check_form,
        skip_stdout_noise: raw.server.skip_stdout_noise,
        status,
        status_words,
        task,
        errors,
        container,
        unsupported,
        ops,
    })
}
