//! taskproof's profiles (what a target is held to) and the in-memory oracle of a task store (docs/architecture.md, "Crates").
//!
//! The behaviour profiles: what a target is held to.
//!
//! Two kinds. [`Profile`] names the expectation sets written into the scenario files:
//! `strict` (SPEC §3, every rule) and two hand-written ones (`cc-2.1.17`, `s07`) that the
//! in-process models of the race harness and the fuzzer still use. [`recorded`] profiles are
//! what a real store did, recorded by `taskproof record` into `profiles/NAME.json`: a run
//! holds a target to one with `taskproof run --profile NAME` ([`Choice`]), and
//! `taskproof profile diff` compares two ([`diff`]).

pub mod compare;
pub mod diff;
pub mod format;
pub mod hold;
pub mod merge;
pub mod observe;
pub mod oracle;
pub mod recorded;

pub use recorded::{Choice, Mode, Observer, Recorded};

use std::fmt;
use std::str::FromStr;

/// A profile: the set of rules a run expects a target to follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Profile {
    /// SPEC §3: the reference behaviour, every rule S1–S20.
    Strict,
    /// SPEC §4: what the runtime test observed in Claude Code 2.1.17.
    Cc2117,
    /// SPEC §5: the learn-claude-code lesson s07 task manager.
    S07,
}

impl Profile {
    pub const ALL: [Profile; 3] = [Profile::Strict, Profile::Cc2117, Profile::S07];

    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Strict => "strict",
            Profile::Cc2117 => "cc-2.1.17",
            Profile::S07 => "s07",
        }
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Profile {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Profile::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| format!("unknown profile {s:?}; expected strict, cc-2.1.17 or s07"))
    }
}

/// The promise set `race` and `fuzz` judge by, from the command line. Their profiles are the
/// expectation sets written into the scenario files, not recordings, so the names that mean
/// a recording to `run` (`cc-2.1.17` and `s07` are the recordings of the real Claude Code
/// 2.1.17 and the real lesson s07) are refused with the name to use instead, rather than
/// quietly meaning something else here: `hand-written-files` is the hand-written set the
/// scenario files call `cc-2.1.17` (the naive store's behaviour, which its recording of the
/// same name matches step by step), `hand-written-s07` the one they call `s07`.
pub fn parse_promises(s: &str) -> Result<Profile, String> {
    const EXPECTED: &str = "expected strict, hand-written-files or hand-written-s07";
    match s {
        "strict" => Ok(Profile::Strict),
        "hand-written-files" => Ok(Profile::Cc2117),
        "hand-written-s07" => Ok(Profile::S07),
        "cc-2.1.17" | "s07" => {
            let (recording, written) = if s == "s07" {
                ("learn-claude-code-s07", "hand-written-s07")
            } else {
                ("claude-code-2.1.17", "hand-written-files")
            };
            Err(format!(
                "{s:?} names the recording {recording} (as in `run --profile {s}`), and a recording holds no promises about races or a model to compare with; the hand-written promise set the scenario files call {s} is {written:?}"
            ))
        }
        _ if recorded::BUILTIN
            .iter()
            .any(|(n, a, _)| *n == s || a.contains(&s))
            || s.ends_with(".json") =>
        {
            Err(format!(
                "{s:?} is a recorded profile, which only `run` can hold a target to; {EXPECTED}"
            ))
        }
        _ => Err(format!("unknown profile {s:?}; {EXPECTED}")),
    }
}

/// The profile a run holds its target to, as every report names it: a profile written into
/// the scenario files by its name (`strict`), a recorded profile by its name and where it
/// came from (`claude-code-2.1.21 (recorded)`). The runner judges a recorded profile with
/// `strict`'s steps, so [`Profile`] alone cannot say which one a run used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunProfile {
    label: String,
    recorded: Option<String>,
}

impl RunProfile {
    /// The profile of a run configured with `profile` and `mode`: the recorded profile a
    /// [`Mode::Hold`] holds the target to, else `profile`.
    pub fn of(profile: Profile, mode: &Mode) -> RunProfile {
        match mode {
            Mode::Hold(r) => RunProfile::recorded(&r.name),
            Mode::Expectations | Mode::Record(_) => profile.into(),
        }
    }

    /// A recorded profile named `name`.
    pub fn recorded(name: &str) -> RunProfile {
        RunProfile {
            label: format!("{name} (recorded)"),
            recorded: Some(name.to_string()),
        }
    }

    /// What the reports print: `strict`, or `NAME (recorded)`.
    pub fn as_str(&self) -> &str {
        &self.label
    }
}

impl From<Profile> for RunProfile {
    fn from(p: Profile) -> RunProfile {
        RunProfile {
            label: p.as_str().to_string(),
            recorded: None,
        }
    }
}

impl fmt::Display for RunProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn race_and_fuzz_refuse_the_names_that_mean_a_recording_naming_the_set_to_use() {
        assert_eq!(parse_promises("strict"), Ok(Profile::Strict));
        assert_eq!(parse_promises("hand-written-files"), Ok(Profile::Cc2117));
        assert_eq!(parse_promises("hand-written-s07"), Ok(Profile::S07));
        let e = parse_promises("cc-2.1.17").unwrap_err();
        assert!(
            e.contains("claude-code-2.1.17") && e.contains("\"hand-written-files\""),
            "{e}"
        );
        let e = parse_promises("s07").unwrap_err();
        assert!(
            e.contains("learn-claude-code-s07") && e.contains("\"hand-written-s07\""),
            "{e}"
        );
        let e = parse_promises("claude-code-2.1.21").unwrap_err();
        assert!(e.contains("only `run`"), "{e}");
        assert!(
            parse_promises("bogus")
                .unwrap_err()
                .starts_with("unknown profile")
        );
        // `run` means the recordings by the same names.
        for alias in ["cc-2.1.17", "s07"] {
            assert!(
                matches!(Choice::resolve(alias), Ok(Choice::Recorded(_))),
                "{alias}"
            );
        }
    }
}
