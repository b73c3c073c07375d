//! The search itself, generic over "run version v and say what it did": which versions to
//! run, in what order, and what the runs say about where the behaviour changed.
//!
//! The last version of the range is run first: its behaviour is the *new* one. Every other
//! version is old (it behaves otherwise) or new (alike). The search assumes one change from
//! old to new in the range (old ... old new ... new) and halves the versions between the
//! last known old and the first known new until they are adjacent. The first version is
//! run only when no version between was old: then it decides between "the change is right
//! after the first version" and "no change between the ends". So at most
//! `⌈log2(n-1)⌉ + 2` versions are run for `n` versions, when none has to be skipped.
//!
//! A version that cannot be run (not installed, not started, broke the protocol) or whose
//! repeated runs disagree (flaky) is neither old nor new: it is left out, named, and the
//! search takes the next version nearest the middle. When the versions left between the
//! two sides are all left out, the change is somewhere among them, and the result says so.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

/// What one version did, as far as the change being looked for goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// What is compared between versions: two versions behave alike when their keys are
    /// equal (`pass`, `fail`, the answers' JSON, `torn_writes: none`).
    pub key: String,
    /// The key in words, one line.
    pub summary: String,
    /// The witness: what the run showed (a failing step with its expected and actual
    /// answer, the first anomaly's witness).
    pub witness: String,
    /// The steps that failed (scenario runs), so that the other side's answers at those
    /// steps can be shown beside them.
    pub failed_steps: Vec<usize>,
    /// Each judged request's answer by step (scenario runs), as JSON text.
    pub answers: BTreeMap<usize, String>,
}

/// The judgement of one version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judged {
    Seen(Seen),
    /// Its runs disagreed: every distinct answer, in the order first seen.
    Flaky(Vec<Seen>),
    /// It could not be run, and why.
    Unusable(String),
}

impl Judged {
    pub fn seen(&self) -> Option<&Seen> {
        match self {
            Judged::Seen(s) => Some(s),
            _ => None,
        }
    }

    /// One line: the summary, `flaky: A | B`, or `skipped: why`.
    pub fn line(&self) -> String {
        match self {
            Judged::Seen(s) => s.summary.clone(),
            Judged::Flaky(v) => format!(
                "flaky: {}",
                v.iter()
                    .map(|s| s.summary.as_str())
                    .collect::<Vec<_>>()
                    .join(" | ")
            ),
            Judged::Unusable(why) => format!("skipped: {why}"),
        }
    }
}

/// Runs `once` up to `k` times (at least once) and judges the version by all the runs: one
/// answer is the version's; several are [`Judged::Flaky`] with each; a run that could not
/// be done makes the version unusable (no further run is tried).
pub fn repeated(k: usize, mut once: impl FnMut() -> Judged) -> Judged {
    let mut seen: Vec<Seen> = Vec::new();
    for _ in 0..k.max(1) {
        let add = |seen: &mut Vec<Seen>, s: Seen| {
            if !seen.iter().any(|x| x.key == s.key) {
                seen.push(s);
            }
        };
        match once() {
            Judged::Seen(s) => add(&mut seen, s),
            Judged::Flaky(v) => v.into_iter().for_each(|s| add(&mut seen, s)),
            Judged::Unusable(why) => return Judged::Unusable(why),
        }
    }
    if seen.len() == 1 {
        Judged::Seen(seen.remove(0))
    } else {
        Judged::Flaky(seen)
    }
}

/// One version run (with its repeats).
#[derive(Debug, Clone)]
pub struct Trial {
    /// Its place in the range.
    pub index: usize,
    pub version: String,
    pub judged: Judged,
    pub seconds: f64,
}

/// What the search found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// `versions[before]` behaves otherwise than the last version, `versions[after]` (and
    /// every version run after it) as it does; the versions between, if any, were left out.
    Change { before: usize, after: usize },
    /// The first version behaves as the last, and no version run behaved otherwise.
    NoChange,
    /// Nothing can be said, and why (an end could not be run, or was flaky).
    Inconclusive(String),
}

/// A finished search: the range, every version run in the order run, and what they say.
#[derive(Debug, Clone)]
pub struct Bisection {
    pub versions: Vec<String>,
    pub trials: Vec<Trial>,
    pub found: Found,
}

impl Bisection {
    /// The run of `versions[index]`, when it was run.
    pub fn trial(&self, index: usize) -> Option<&Trial> {
        self.trials.iter().find(|t| t.index == index)
    }

    /// The versions run that were left out (could not be run, or flaky), in range order.
    pub fn left_out(&self) -> Vec<&Trial> {
        let mut v: Vec<&Trial> = self
            .trials
            .iter()
            .filter(|t| t.judged.seen().is_none())
            .collect();
        v.sort_by_key(|t| t.index);
        v
    }

    /// How many versions were run.
    pub fn runs(&self) -> usize {
        self.trials.len()
    }
}

/// The most versions [`bisect`] runs for a range of `n` versions when none is left out:
/// `⌈log2(n-1)⌉ + 2` (the two ends, and halving the `n-1` gaps between them).
pub fn max_runs(n: usize) -> usize {
    let gaps = n.saturating_sub(1).max(1);
    (usize::BITS - (gaps - 1).leading_zeros()) as usize + 2
}

/// Finds where the behaviour of `versions` (at least two, in order) changes to that of the
/// last one, running versions through `judge` (see the module docs for the search and what
/// it assumes). `progress` is told of each run as it finishes.
pub fn bisect(
    versions: &[String],
    judge: &mut dyn FnMut(&str) -> Judged,
    progress: &mut dyn FnMut(&Trial),
) -> Bisection {
    assert!(versions.len() >= 2, "a range has two ends");
    let mut trials: Vec<Trial> = Vec::new();
    let mut run = |index: usize, trials: &mut Vec<Trial>| -> Judged {
        let started = Instant::now();
        let judged = judge(&versions[index]);
        let t = Trial {
            index,
            version: versions[index].clone(),
            judged: judged.clone(),
            seconds: started.elapsed().as_secs_f64(),
        };
        progress(&t);
        trials.push(t);
        judged
    };
    let last = versions.len() - 1;
    let done = |trials: Vec<Trial>, found: Found| Bisection {
        versions: versions.to_vec(),
        trials,
        found,
    };
    let new_key = match run(last, &mut trials) {
        Judged::Seen(s) => s.key,
        other => {
            let why = format!(
                "the last version, {}, decides what the new behaviour is and could not be judged ({}); end the range at another version",
                versions[last],
                other.line()
            );
            return done(trials, Found::Inconclusive(why));
        }
    };
    let (mut lo, mut hi) = (0, last);
    let mut lo_judged = false;
    let mut left_out: BTreeSet<usize> = BTreeSet::new();
    loop {
        let middle = (lo + hi) / 2;
        // The version nearest the middle that is not left out (the lower one on a tie).
        let Some(mid) = (lo + 1..hi)
            .filter(|i| !left_out.contains(i))
            .min_by_key(|&i| (i.abs_diff(middle), i))
        else {
            break;
        };
        match run(mid, &mut trials) {
            Judged::Seen(s) if s.key == new_key => hi = mid,
            Judged::Seen(_) => {
                lo = mid;
                lo_judged = true;
            }
            _ => {
                left_out.insert(mid);
            }
        }
    }
    if !lo_judged {
        match run(0, &mut trials) {
            Judged::Seen(s) if s.key == new_key => return done(trials, Found::NoChange),
            Judged::Seen(_) => {}
            other => {
                let why = format!(
                    "every version run from {} on behaves as {}, and the first version, {}, could not be judged ({}): the change, if any, is at or before {}",
                    versions[hi],
                    versions[last],
                    versions[0],
                    other.line(),
                    versions[hi]
                );
                return done(trials, Found::Inconclusive(why));
            }
        }
    }
    done(
        trials,
        Found::Change {
            before: lo,
            after: hi,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(key: &str) -> Judged {
        Judged::Seen(Seen {
            key: key.into(),
            summary: key.into(),
            witness: String::new(),
            failed_steps: Vec::new(),
            answers: BTreeMap::new(),
        })
    }

    #[test]
    fn the_bound_is_log2_of_the_gaps_plus_the_two_ends() {
        assert_eq!(max_runs(2), 2);
        assert_eq!(max_runs(3), 3);
        assert_eq!(max_runs(5), 4);
        assert_eq!(max_runs(81), 9);
        assert_eq!(max_runs(65), 8);
    }

    #[test]
    fn every_change_point_is_found_within_the_bound() {
        for n in 2..40usize {
            let versions: Vec<String> = (0..n).map(|i| format!("1.0.{i}")).collect();
            for change in 1..n {
                let mut judge = |v: &str| {
                    let i: usize = v.rsplit('.').next().unwrap().parse().unwrap();
                    seen(if i >= change { "new" } else { "old" })
                };
                let b = bisect(&versions, &mut judge, &mut |_| {});
                assert_eq!(
                    b.found,
                    Found::Change {
                        before: change - 1,
                        after: change
                    },
                    "n={n} change={change}"
                );
                assert!(
                    b.runs() <= max_runs(n),
                    "n={n} change={change}: {}",
                    b.runs()
                );
                // The first version is run only when the change is right after it.
                assert_eq!(b.trial(0).is_some(), change == 1, "n={n} change={change}");
            }
        }
    }
}
