//! The file steps of a scenario: paths inside the root (with `{task:ID}` in the target's
//! layout), the bytes a step writes, and the checks of what a file holds.

use serde_json::{Value, json};

use crate::expect::match_task;
use crate::format::*;
use crate::runner::{Run, Stop};
use crate::sandbox;

impl Run<'_> {
    /// A path inside the root: placeholders, then `{task:ID}`, then the containment check.
    pub(super) fn root_path(&self, step: &Step, p: &str) -> Result<std::path::PathBuf, Stop> {
        let text = self.fill_text(step, p)?;
        sandbox::task_paths(&text, self.layout)
            .and_then(|t| self.sandbox.in_root(&t))
            .map_err(|m| self.fail(step, None, json!(p), json!(text), m))
    }

    pub(super) fn contents(&self, step: &Step, c: &Contents) -> Result<Vec<u8>, Stop> {
        Ok(match c {
            Contents::Text(t) => self.fill_text(step, t)?.into_bytes(),
            Contents::Bytes(b) => b.clone(),
        })
    }

    pub(super) fn assert_file(
        &self,
        step: &Step,
        written: &str,
        p: &std::path::Path,
        check: &FileCheck,
    ) -> Result<(), Stop> {
        let shown = p
            .strip_prefix(self.sandbox.root())
            .unwrap_or(p)
            .display()
            .to_string();
        let fail = |expected: Value, actual: Value, reason: String| {
            self.fail(step, None, expected, actual, reason)
        };
        match check {
            FileCheck::Exists(want) => {
                let exists = std::fs::symlink_metadata(p).is_ok();
                if exists == *want {
                    Ok(())
                } else {
                    Err(fail(
                        json!({"path": written, "exists": want}),
                        json!({"path": shown, "exists": exists}),
                        format!(
                            "{shown} {}",
                            if exists { "exists" } else { "does not exist" }
                        ),
                    ))
                }
            }
            FileCheck::Text(text) => {
                let want = self.fill_text(step, text)?;
                match std::fs::read(p) {
                    Ok(b) if b == want.as_bytes() => Ok(()),
                    Ok(b) => Err(fail(
                        json!(want),
                        json!(String::from_utf8_lossy(&b)),
                        format!("{shown} holds other text"),
                    )),
                    Err(e) => Err(fail(
                        json!(want),
                        json!(e.to_string()),
                        format!("{shown} cannot be read: {e}"),
                    )),
                }
            }
            FileCheck::Task(t) => {
                let want = self.fill(step, t)?;
                let bytes = std::fs::read(p).map_err(|e| {
                    fail(
                        want.clone(),
                        json!(e.to_string()),
                        format!("{shown} cannot be read: {e}"),
                    )
                })?;
                let parsed: Value = serde_json::from_slice(&bytes).map_err(|e| {
                    fail(
                        want.clone(),
                        json!(String::from_utf8_lossy(&bytes)),
                        format!("{shown} is not JSON: {e}"),
                    )
                })?;
                let decoded = taskproof_core::layout::to_wire(self.layout, &parsed);
                match_task(&want, &decoded)
                    .map_err(|m| fail(want.clone(), parsed.clone(), format!("{shown}: {m}")))
            }
        }
    }
}

/// Writes a file, creating its folders.
pub(super) fn write_creating(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, bytes)
}
