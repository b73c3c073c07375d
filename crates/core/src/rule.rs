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

    /// What breaking the rule costs the store's user (SPEC §3, "Consequence classes").
    pub fn class(self) -> Class {
        CLASSES[usize::from(self.0) - 1]
    }
}

/// Each rule's consequence class, in the order of [`IDS`] (SPEC §3, "Consequence classes").
const CLASSES: [Class; 28] = {
    use Class::*;
    [
        DataLoss,       // S1 ids: a reused id takes an acknowledged task's place
        Input,          // S2 create input
        Input,          // S3 status values
        AcceptsRefused, // S4 transitions: a finished task reopened
        AcceptsRefused, // S5 AND-blocking
        AcceptsRefused, // S6 references
        AcceptsRefused, // S7 no cycles
        Inconsistent,   // S8 mirrored edges
        Inconsistent,   // S9 completion keeps edges
        Inconsistent,   // S10 delete
        AcceptsRefused, // S11 update: a refused patch half applied
        DataLoss,       // S12 metadata not kept exactly
        Inconsistent,   // S13 lists: one list seen in another, a file outside the root
        DataLoss,       // S14 persistence, nothing vanishes
        Inconsistent,   // S15 reading: a bad or stray file hides or poses as tasks
        DataLoss,       // S16 other writers' tasks and fields dropped
        DataLoss,       // S17 a link's target written through
        DataLoss,       // S18 torn files
        DataLoss,       // S19 lost updates, duplicate ids
        AcceptsRefused, // S20 claim: two owners of one task
        AcceptsRefused, // B1 background statuses
        DataLoss,       // B2 one notification: a result never told
        Inconsistent,   // B3 notification content
        DataLoss,       // B4 background output
        DataLoss,       // B5 eviction before the result is told
        Input,          // B6 background ids
        Inconsistent,   // B7 orphan cleanup
        Inconsistent,   // B8 background faults
    ]
};

/// A consequence class: what a failure of a rule costs the store's user, so that a report
/// can lead with the failures that cost most (SPEC §3, "Consequence classes"). The order
/// of the variants is the order of severity, most severe first: `Ord` sorts that way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Class {
    /// Loses or corrupts acknowledged data: a task, a change, a field or a file the store
    /// acknowledged is gone, torn, altered or overwritten.
    DataLoss,
    /// Leaves the store inconsistent: what the tasks say of each other, of their list or of
    /// the files around them contradicts itself, though no acknowledged datum is lost.
    Inconsistent,
    /// Accepts what the contract refuses: a change the contract forbids is acknowledged
    /// and done.
    AcceptsRefused,
    /// Input checking: a malformed value is taken, or refused with another error.
    Input,
}

impl Class {
    /// Every class, most severe first.
    pub const ALL: [Class; 4] = [
        Class::DataLoss,
        Class::Inconsistent,
        Class::AcceptsRefused,
        Class::Input,
    ];

    /// `data-loss`, `inconsistent`, `accepts-refused`, `input`: as reports write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Class::DataLoss => "data-loss",
            Class::Inconsistent => "inconsistent",
            Class::AcceptsRefused => "accepts-refused",
            Class::Input => "input",
        }
    }

    /// The class in words, as headings and summaries give it.
    pub fn title(self) -> &'static str {
        match self {
            Class::DataLoss => "loses or corrupts acknowledged data",
            Class::Inconsistent => "leaves the store inconsistent",
            Class::AcceptsRefused => "accepts what the contract refuses",
            Class::Input => "input checking",
        }
    }

    /// The rules of SPEC §3 in this class, S1 first.
    pub fn rules(self) -> Vec<Rule> {
        Rule::ALL
            .into_iter()
            .filter(|r| r.class() == self)
            .collect()
    }

    /// The class of a failure that counts against `rules`: its first rule's, the one its
    /// step or scenario tests (the others are named for context: concurrent edge additions
    /// that leave a cycle count against S7 and S19, and accept what the contract refuses,
    /// though S19 also guards against lost updates). `None` when there are none.
    pub fn of(rules: &[Rule]) -> Option<Class> {
        rules.first().map(|r| r.class())
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Class {
    type Err = String;
    fn from_str(s: &str) -> Result<Class, String> {
        Class::ALL
            .into_iter()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "unknown consequence class {s:?}; expected one of {}",
                    Class::ALL.map(Class::as_str).join(", ")
                )
            })
    }
}

impl serde::Serialize for Class {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for Class {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Class, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
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

    #[test]
    fn every_rule_has_the_class_spec_gives_it_and_classes_sort_most_severe_first() {
        let of = |c: Class| join(&c.rules(), " ");
        assert_eq!(of(Class::DataLoss), "S1 S12 S14 S16 S17 S18 S19");
        assert_eq!(of(Class::Inconsistent), "S8 S9 S10 S13 S15");
        assert_eq!(of(Class::AcceptsRefused), "S4 S5 S6 S7 S11 S20");
        assert_eq!(of(Class::Input), "S2 S3");
        let mut sorted = Class::ALL;
        sorted.sort();
        assert_eq!(sorted, Class::ALL);
        assert_eq!(
            Class::of(&[Rule::S7, Rule::S19]),
            Some(Class::AcceptsRefused)
        );
        assert_eq!(Class::of(&[Rule::S1, Rule::S19]), Some(Class::DataLoss));
        assert_eq!(Class::of(&[]), None);
        for c in Class::ALL {
            assert_eq!(c.as_str().parse::<Class>(), Ok(c));
            assert_eq!(serde_json::to_value(c).unwrap(), c.as_str());
        }
        assert!("lost".parse::<Class>().is_err());
        assert_eq!(Rule::BACKGROUND[3].class(), Class::DataLoss);
    }
}

#[cfg(test)]
mod spec {
    use super::*;

    /// docs/spec.md's table of classes names, on each class's row, the rules `Rule::class`
    /// puts in it.
    #[test]
    fn the_spec_table_of_classes_is_the_code() {
        let spec = include_str!("../../../docs/spec.md");
        for c in Class::ALL {
            let row = spec
                .lines()
                .find(|l| l.starts_with(&format!("| `{}` |", c.as_str())))
                .unwrap_or_else(|| panic!("docs/spec.md has no row for class {c}"));
            let listed = row.trim_end_matches('|').rsplit('|').next().unwrap().trim();
            assert_eq!(listed, join(&c.rules(), ", "), "{row}");
            assert!(row.contains(&format!("**{}**", c.title())), "{row}");
        }
    }
}
