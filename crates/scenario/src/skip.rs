//! Skip files: the scenarios a target is known to fail, each with the reason.
//!
//! Format (docs/reports.md): one scenario id per line, then whitespace, then the reason,
//! which is required; `#` starts a comment; blank lines are ignored. A listed scenario that
//! fails is reported as skipped with its reason; one that passes is an "unexpected pass" and
//! fails the run, so a skip list cannot rot once the target is fixed. An id written with a
//! trailing `?` is a racy entry: a failure that depends on timing (a lost update between
//! concurrent writers), so a pass is reported but is not an error.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A list file (a skip file, or `taskproof fuzz`'s known-findings file) that cannot be read,
/// has a malformed line, or names scenarios that do not exist.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ListFileError {
    #[error("{file}: failed to read: {message}")]
    Io { file: PathBuf, message: String },
    #[error("{file}:{line}: {message}")]
    Line {
        file: PathBuf,
        line: usize,
        message: String,
    },
}

/// A malformed skip file, or one naming scenarios that do not exist.
pub type SkipError = ListFileError;

/// Scenario id -> why it is expected to fail, with where it was listed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SkipList {
    entries: BTreeMap<String, (String, PathBuf, usize)>,
    /// Ids listed with a trailing `?`: expected to fail, allowed to pass.
    racy: std::collections::BTreeSet<String>,
}

/// The lines of a list file in the form skip files and known-findings files share: one entry
/// a line, `WORD REASON…`, with `#` starting a comment and blank lines ignored. Yields the
/// 1-based line number, the word, and the reason (trimmed; empty when none was given).
pub fn entry_lines(text: &str) -> impl Iterator<Item = (usize, &str, &str)> {
    text.lines().enumerate().filter_map(|(n, raw)| {
        let content = raw.split('#').next().unwrap_or("").trim();
        if content.is_empty() {
            return None;
        }
        let (word, reason) = match content.split_once(char::is_whitespace) {
            Some((w, r)) => (w, r.trim()),
            None => (content, ""),
        };
        Some((n + 1, word, reason))
    })
}

/// The text of a list file, or the error that names it.
pub fn read_list_file(file: &Path) -> Result<String, ListFileError> {
    std::fs::read_to_string(file).map_err(|e| ListFileError::Io {
        file: file.to_path_buf(),
        message: e.to_string(),
    })
}

/// The error for line `line` of `file`.
pub fn line_error(file: &Path, line: usize, message: String) -> ListFileError {
    ListFileError::Line {
        file: file.to_path_buf(),
        line,
        message,
    }
}

impl SkipList {
    /// Reads a skip file; entries from several files add up.
    pub fn add_file(&mut self, file: &Path) -> Result<(), SkipError> {
        self.add_text(&read_list_file(file)?, file)
    }

    /// Reads skip-file text; `file` names it in errors.
    pub fn add_text(&mut self, text: &str, file: &Path) -> Result<(), SkipError> {
        for (line, id, reason) in entry_lines(text) {
            let err = |message: String| line_error(file, line, message);
            let (id, racy) = match id.strip_suffix('?') {
                Some(id) => (id, true),
                None => (id, false),
            };
            if reason.is_empty() {
                return Err(err(format!(
                    "{id}: a reason is required after the scenario id"
                )));
            }
            if let Some((_, f, l)) = self.entries.get(id) {
                return Err(err(format!(
                    "{id} is already listed at {}:{l}",
                    f.display()
                )));
            }
            self.entries.insert(
                id.to_string(),
                (reason.to_string(), file.to_path_buf(), line),
            );
            if racy {
                self.racy.insert(id.to_string());
            }
        }
        Ok(())
    }

    /// Why `id` is expected to fail, if it is listed.
    pub fn reason(&self, id: &str) -> Option<&str> {
        self.entries.get(id).map(|(r, _, _)| r.as_str())
    }

    /// Whether `id` was listed as racy (`ID?`): its failure depends on timing.
    pub fn is_racy(&self, id: &str) -> bool {
        self.racy.contains(id)
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// How many scenarios are listed.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Checks that every listed id names a known scenario.
    pub fn check_known<'a>(
        &self,
        known: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), SkipError> {
        let known: std::collections::BTreeSet<&str> = known.into_iter().collect();
        for (id, (_, file, line)) in &self.entries {
            if !known.contains(id.as_str()) {
                return Err(SkipError::Line {
                    file: file.clone(),
                    line: *line,
                    message: format!("{id} matches no scenario"),
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A skip list read from `text`, as if from the file `file`.
    fn read(text: &str, file: &str) -> SkipList {
        let mut l = SkipList::default();
        l.add_text(text, Path::new(file)).unwrap();
        l
    }

    #[test]
    fn a_trailing_question_mark_marks_a_racy_entry() {
        let l = read(
            "lost-update?  needs two writers to overlap\nrt04  no cycle check\n",
            "f",
        );
        assert_eq!(
            l.reason("lost-update"),
            Some("needs two writers to overlap")
        );
        assert!(l.is_racy("lost-update"));
        assert!(!l.is_racy("rt04"));
        assert_eq!(l.len(), 2);
    }

    #[test]
    fn ids_reasons_and_comments() {
        let s = read(
            "# known failures\n\nrt04-cycle   cycles are accepted (issue 12)  # upstream\n",
            "skip.txt",
        );
        assert_eq!(
            s.reason("rt04-cycle"),
            Some("cycles are accepted (issue 12)")
        );
        assert!(s.check_known(["rt04-cycle"]).is_ok());
        let e = s.check_known(["other"]).unwrap_err();
        assert_eq!(e.to_string(), "skip.txt:3: rt04-cycle matches no scenario");
    }

    #[test]
    fn a_reason_is_required_and_ids_are_listed_once() {
        let e = SkipList::default()
            .add_text("a\n", Path::new("s"))
            .unwrap_err();
        assert!(
            e.to_string().starts_with("s:1: a: a reason is required"),
            "{e}"
        );
        let e = SkipList::default()
            .add_text("a x\na y\n", Path::new("s"))
            .unwrap_err();
        assert_eq!(e.to_string(), "s:2: a is already listed at s:1");
    }
}
