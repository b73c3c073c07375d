//! `[server]`: the layout and parts declared, and a launch that names a list only with one
//! server per list.

use std::collections::BTreeSet;

use taskproof_core::protocol::{Feature, Layout};

use super::error::{MakeError, MappingError};
use crate::mapping::raw::RawServer;

/// The layout and the parts the server declares.
pub(super) fn server(
    raw: &RawServer,
    err: &MakeError,
) -> Result<(Layout, BTreeSet<Feature>), MappingError> {
    let layout = match &raw.layout {
        None => Layout::Opaque,
        Some(s) => s.parse().map_err(|e: String| err("server.layout", e))?,
    };
    let features = raw
        .features
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let key = format!("server.features[{i}]");
            match f.parse::<Feature>() {
                Ok(Feature::Atomic) => Err(err(
                    &key,
                    "atomic is not declared: a mapping is atomic unless a call reads a task and \
                     writes with what it read (`read`), and hello then says which requests do"
                        .into(),
                )),
                other => other.map_err(|e| err(&key, e)),
            }
        })
        .collect::<Result<BTreeSet<_>, _>>()?;
    if raw.reuse.is_some() && !raw.per_list {
        return Err(err(
            "server.reuse",
            "says whether a released list's server may serve another list: it needs \
             server.per_list = true (one server per list)"
                .into(),
        ));
    }
    if !raw.per_list {
        let launch = raw
            .args
            .iter()
            .enumerate()
            .map(|(i, a)| (format!("server.args[{i}]"), a))
            .chain(raw.cwd.iter().map(|c| ("server.cwd".to_string(), c)))
            .chain(raw.env.iter().map(|(k, v)| (format!("server.env.{k}"), v)));
        for (key, v) in launch {
            if v.contains("{list}") {
                return Err(err(
                    &key,
                    format!(
                        "{v:?}: {{list}} needs server.per_list = true (one server per list); \
                         without it one server serves every list"
                    ),
                ));
            }
        }
    }
    Ok((layout, features))
}
