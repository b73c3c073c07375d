//! The model checked against the tools a server lists.

use std::collections::BTreeMap;

use serde_json::Value;

use super::error::MappingError;
use crate::mapping::{Call, Mapping, Template};

impl Mapping {
    /// Every call of the mapping, the container's first.
    pub(crate) fn calls(&self) -> impl Iterator<Item = &Call> {
        self.container.iter().chain(
            self.ops
                .values()
                .flat_map(|m| m.calls.iter().chain(m.undo.iter())),
        )
    }

    /// Checks the tools and arguments named against the server's tool list: every tool must
    /// exist, and every argument named must be a property of its input schema when the schema
    /// lists them. The error names the file, the key and the tool.
    pub fn check_tools(&self, tools: &BTreeMap<String, Value>) -> Result<(), MappingError> {
        for call in self.calls().filter(|c| !c.tool.is_empty()) {
            let Some(schema) = tools.get(&call.tool) else {
                return Err(MappingError {
                    file: self.path.display().to_string(),
                    key: format!("{}.tool", call.key),
                    message: format!(
                        "the server has no tool {:?}; its tools are {}",
                        call.tool,
                        tools.keys().cloned().collect::<Vec<_>>().join(", ")
                    ),
                });
            };
            let (Template::Object(keys, _), Some(props)) = (
                &call.args,
                schema.get("properties").and_then(Value::as_object),
            ) else {
                continue;
            };
            for (k, _) in keys {
                if !props.contains_key(k) {
                    return Err(MappingError {
                        file: self.path.display().to_string(),
                        key: format!("{}.args.{k}", call.key),
                        message: format!(
                            "tool {:?} has no argument {k:?}; its arguments are {}",
                            call.tool,
                            props.keys().cloned().collect::<Vec<_>>().join(", ")
                        ),
                    });
                }
            }
        }
        Ok(())
    }
}
