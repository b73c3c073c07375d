//! The rules of SPEC §3, `S1` to `S20`, as one type: what a scenario cites, what a mutant
//! breaks, what a finding of `check` or `fuzz` and an anomaly of `race` are attributed to.
//! Written and read as `S1` … `S20` everywhere (scenario files, reports, fingerprints).
//! The background-task contract's rules, `B1` to `B8` (docs/background.md), are values of
//! the same type, so that the background suite's reports cite them the same way; they are
//! not in [`Rule::ALL`], which stays SPEC §3's twenty.

use std::fmt;
use std::str::FromStr;

/// One rule of SPEC §3.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rule(u8);

/// The ids, in order; `IDS[n - 1]` is rule n's (21 to 28 are B1 to B8).
const IDS: [&str; 28] = [
    "S1", "S2", "S3", "S4", "S5", "S6", "S7", "S8", "S9", "S10", "S11", "S12", "S13", "S14", "S15",
    "S16", "S17", "S18", "S19", "S20", "B1", "B2", "B3", "B4", "B5", "B6", "B7", "B8",
];

/// Each rule's title in SPEC §3 (and docs/background.md for B1 to B8).
const TITLES: [&str; 28] = [
    "ids",
    "create input",
    "status values",
    "transitions",
    "AND-blocking",
    "references",
    "no cycles",
    "mirrored edges",
    "completion keeps edges",
    "delete",
    "update",
    "metadata",
    "lists",
    "persistence",
    "reading",
    "other writers",
    "symbolic links",
    "whole files",
    "concurrency",
    "claim",
    "background statuses",
    "one notification",
    "notification content",
    "background output",
    "eviction",
    "background ids",
    "orphan cleanup",
    "background faults",
];

impl Rule {
    pub const S1: Rule = Rule(1);
    pub const S2: Rule = Rule(2);
    pub const S3: Rule = Rule(3);
    pub const S4: Rule = Rule(4);
    pub const S5: Rule = Rule(5);
    pub const S6: Rule = Rule(6);
    pub const S7: Rule = Rule(7);
    pub const S8: Rule = Rule(8);
    pub const S9: Rule = Rule(9);
    pub const S10: Rule = Rule(10);
    pub const S11: Rule = Rule(11);
    pub const S12: Rule = Rule(12);
    pub const S13: Rule = Rule(13);
    pub const S14: Rule = Rule(14);
    pub const S15: Rule = Rule(15);
    pub const S16: Rule = Rule(16);
    pub const S17: Rule = Rule(17);
    pub const S18: Rule = Rule(18);
    pub const S19: Rule = Rule(19);
    pub const S20: Rule = Rule(20);

    /// The background-task contract's rules (docs/background.md), B1 first.
    pub const BACKGROUND: [Rule; 8] = Rule::numbered(21);

    /// Every rule of SPEC §3, S1 first.
    pub const ALL: [Rule; 20] = Rule::numbered(1);

    /// `N` rules with consecutive numbers from `first`.
    const fn numbered<const N: usize>(first: u8) -> [Rule; N] {
        let mut all = [Rule(first); N];
        let mut i = 0;
        while i < N {
            all[i] = Rule(first + i as u8);
            i += 1;
        }
        all
    }

    /// The rule's number, 1 to 20 (21 to 28 for B1 to B8).
    pub fn number(self) -> u8 {
        self.0
    }

    /// `S1` … `S20`, `B1` … `B8`.
    pub fn as_str(self) -> &'static str {
        IDS[usize::from(self.0) - 1]
    }

    /// The rule's title in SPEC §3 (`no cycles` for S7).
    pub fn title(self) -> &'static str {
        TITLES[usize::from(self.0) - 1]
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Rule {
    type Err = String;
    fn from_str(s: &str) -> Result<Rule, String> {
        IDS.iter()
            .position(|id| *id == s)
            .map(|i| Rule(i as u8 + 1))
            .ok_or_else(|| format!("unknown rule id {s:?}; expected S1 to S20 or B1 to B8"))
    }
}

impl serde::Serialize for Rule {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Rules written one after another with `sep` between (`S1, S19`).
pub fn join(rules: &[Rule], sep: &str) -> String {
    rules
        .iter()
        .map(|r| r.as_str())
        .collect::<Vec<_>>()
        .join(sep)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_read_and_write_the_same() {
        for (i, r) in Rule::ALL.iter().enumerate() {
            assert_eq!(usize::from(r.number()), i + 1);
            assert_eq!(r.as_str().parse::<Rule>(), Ok(*r));
            assert_eq!(r.to_string(), format!("S{}", i + 1));
        }
        assert_eq!(Rule::S7.title(), "no cycles");
        for (i, r) in Rule::BACKGROUND.iter().enumerate() {
            assert_eq!(r.to_string(), format!("B{}", i + 1));
            assert_eq!(r.as_str().parse::<Rule>(), Ok(*r));
        }
        assert_eq!(Rule::BACKGROUND[1].title(), "one notification");
        for bad in ["S0", "S21", "s1", "1", "", "S01", "B0", "B9"] {
            assert!(bad.parse::<Rule>().is_err(), "{bad}");
        }
        assert_eq!(join(&[Rule::S1, Rule::S19], ", "), "S1, S19");
        assert_eq!(serde_json::to_value(Rule::S13).unwrap(), "S13");
    }
}
