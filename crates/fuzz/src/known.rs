//! Known findings: divergences a target is known to have, left out of a `taskproof fuzz`
//! run (`--known FILE`), as toml-test's skip list or `taskproof run --skip-file` leave out
//! known failures.
//!
//! Format (docs/fuzzing.md): one finding per line, its fingerprint (the twelve hex digits of
//! `fuzz-FINGERPRINT.json`; the file name itself, with or without `.json`, is accepted too),
//! then whitespace, then why it is known, which is required; `#` starts a comment; blank
//! lines are ignored. Entries from several files add up; a fingerprint listed twice is an
//! error naming both lines.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use taskproof_scenario::skip::{ListFileError, entry_lines, line_error, read_list_file};

/// A known-findings file that cannot be read or is malformed.
pub type KnownError = ListFileError;

/// Where a known finding was listed, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownEntry {
    pub reason: String,
    pub file: PathBuf,
    pub line: usize,
}

/// Fingerprint -> why it is known.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KnownFindings {
    entries: BTreeMap<String, KnownEntry>,
}

/// The number of hex digits of a fingerprint (`finding::fingerprint`).
const FINGERPRINT_DIGITS: usize = 12;

impl KnownFindings {
    /// Reads a known-findings file; entries from several files add up.
    pub fn add_file(&mut self, file: &Path) -> Result<(), KnownError> {
        self.add_text(&read_list_file(file)?, file)
    }

    /// Reads known-findings text; `file` names it in errors. Nothing is added unless every
    /// line is good.
    pub fn add_text(&mut self, text: &str, file: &Path) -> Result<(), KnownError> {
        let mut added = self.entries.clone();
        for (line, word, reason) in entry_lines(text) {
            let err = |message: String| line_error(file, line, message);
            let fingerprint = parse_fingerprint(word).ok_or_else(|| {
                err(format!(
                    "`{word}` is not a finding's fingerprint (12 hex digits, as in \
                     fuzz-0123456789ab.json)"
                ))
            })?;
            if reason.is_empty() {
                return Err(err(format!(
                    "finding {fingerprint} has no reason; write why it is known after it"
                )));
            }
            if let Some(first) = added.get(&fingerprint) {
                return Err(err(format!(
                    "finding {fingerprint} is listed twice (first at {}:{})",
                    first.file.display(),
                    first.line
                )));
            }
            added.insert(
                fingerprint,
                KnownEntry {
                    reason: reason.to_string(),
                    file: file.to_path_buf(),
                    line,
                },
            );
        }
        self.entries = added;
        Ok(())
    }

    /// Why `fingerprint` is known, if it is.
    pub fn get(&self, fingerprint: &str) -> Option<&KnownEntry> {
        self.entries.get(fingerprint)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// `0123456789ab`, `fuzz-0123456789ab` or `fuzz-0123456789ab.json` (a path's folders
/// allowed) -> `0123456789ab`.
fn parse_fingerprint(word: &str) -> Option<String> {
    let name = word.rsplit('/').next().unwrap_or(word);
    let name = name.strip_suffix(".json").unwrap_or(name);
    let name = name.strip_prefix("fuzz-").unwrap_or(name);
    (name.len() == FINGERPRINT_DIGITS && name.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| name.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<KnownFindings, KnownError> {
        let mut k = KnownFindings::default();
        k.add_text(text, Path::new("known.txt")).map(|()| k)
    }

    #[test]
    fn entries_comments_and_file_names_are_read() {
        let k = parse(
            "# Task Master\n\
             \n\
             c1cf32df208a   blocks not mirrored (tm issue 12)\n\
             fuzz-0123456789AB.json  ids reused  # trailing comment\n\
             findings/fuzz-aaaaaaaaaaaa  owner dropped\n",
        )
        .unwrap();
        assert_eq!(k.len(), 3);
        assert_eq!(
            k.get("c1cf32df208a").unwrap().reason,
            "blocks not mirrored (tm issue 12)"
        );
        assert_eq!(k.get("0123456789ab").unwrap().line, 4);
        assert!(k.get("aaaaaaaaaaaa").is_some());
        assert!(k.get("bbbbbbbbbbbb").is_none());
    }

    #[test]
    fn a_bad_line_is_an_error_naming_file_and_line_and_adds_nothing() {
        let e = parse("c1cf32df208a  fine\nnot-a-print  why\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "known.txt:2: `not-a-print` is not a finding's fingerprint (12 hex digits, as in \
             fuzz-0123456789ab.json)"
        );
        let e = parse("\n\nc1cf32df208a\n").unwrap_err();
        assert!(e.to_string().starts_with("known.txt:3: "), "{e}");
        assert!(e.to_string().contains("no reason"), "{e}");
        let e = parse("c1cf32df208a a\nfuzz-c1cf32df208a b\n").unwrap_err();
        assert!(
            e.to_string()
                .contains("listed twice (first at known.txt:1)"),
            "{e}"
        );
        let mut k = KnownFindings::default();
        assert!(
            k.add_text("c1cf32df208a a\nzz\n", Path::new("known.txt"))
                .is_err()
        );
        assert!(k.is_empty(), "a bad file adds nothing");
    }
}
