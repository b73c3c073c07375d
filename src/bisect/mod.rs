//! `taskproof versions bisect`: which published version changed a behaviour. Given a version range
//! of a target ([`versions`]), a scenario (or one step of it, or a race and an anomaly) and
//! what counts as the change ([`judge::Change`]), it runs only the versions it needs
//! ([`search`]) and names the last version before the change and the first after, each
//! with its witness. docs/bisect.md says how to use it and what it assumes.

pub mod judge;
pub mod search;
pub mod versions;

pub use judge::{BackgroundProbe, Change, Limits, RaceProbe, ScenarioProbe, parse_anomaly};
pub use search::{Bisection, Found, Judged, Seen, Trial, bisect, max_runs, repeated};
pub use versions::{Family, Order, Published, Range, Release};

/// One line per version run, as it finishes: `[3] 2.1.62  pass  (31.0 s)`.
pub fn trial_line(number: usize, t: &Trial) -> String {
    format!(
        "  [{number}] {:<10} {}  ({:.1} s)",
        t.version,
        t.judged.line(),
        t.seconds
    )
}

fn indent(text: &str, by: &str) -> String {
    text.lines()
        .map(|l| format!("{by}{l}\n"))
        .collect::<String>()
}

/// Two blocks of lines, either maybe empty.
fn joined(a: &str, b: &str) -> String {
    [a.trim_end(), b.trim_end()]
        .into_iter()
        .filter(|x| !x.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The answer of the new side at the steps where the old side failed (and the other way
/// round): the passing version's answer beside the failing one's witness.
fn answers_at(seen: &Seen, other: &Seen) -> String {
    let mut out = String::new();
    for step in &other.failed_steps {
        match seen.answers.get(step) {
            Some(a) => out.push_str(&format!("steps[{step}] answered {a}\n")),
            None => out.push_str(&format!("steps[{step}]: no answer (not reached)\n")),
        }
    }
    out
}

/// What the search found, in words: the change with both witnesses, what was left out, and
/// what the result assumes.
pub fn render(b: &Bisection) -> String {
    let mut out = String::new();
    let first = &b.versions[0];
    let last = &b.versions[b.versions.len() - 1];
    match &b.found {
        Found::Change { before, after } => {
            // The search names a change only between two versions it judged.
            let sides = b.trial(*before).zip(b.trial(*after));
            let Some(((old, o), (new, n))) = sides.and_then(|(old, new)| {
                Some(((old, old.judged.seen()?), (new, new.judged.seen()?)))
            }) else {
                out.push_str(&format!(
                    "\nThe change: {} -> {} (a side was not judged)\n",
                    b.versions[*before], b.versions[*after]
                ));
                return out;
            };
            out.push_str(&format!(
                "\nThe change: {} -> {}\n",
                old.version, new.version
            ));
            out.push_str(&format!(
                "  last before: {}: {}\n",
                old.version, o.summary
            ));
            let w = joined(&o.witness, &answers_at(o, n));
            out.push_str(&indent(w.trim_end(), "    "));
            out.push_str(&format!(
                "  first after: {}: {}\n",
                new.version, n.summary
            ));
            let w = joined(&n.witness, &answers_at(n, o));
            out.push_str(&indent(w.trim_end(), "    "));
            let between: Vec<&Trial> = b
                .left_out()
                .into_iter()
                .filter(|t| t.index > *before && t.index < *after)
                .collect();
            if after - before > 1 {
                out.push_str(&format!(
                    "  between them, {} version(s) could not be judged, so the change is in one of them or at {}:\n",
                    after - before - 1,
                    new.version
                ));
                for t in between {
                    out.push_str(&format!("    {}: {}\n", t.version, t.judged.line()));
                }
            }
            // An earlier version run that differs from the last one before the change
            // shows a second change (old is "not as the last version", not one behaviour).
            let earlier = b
                .trials
                .iter()
                .filter(|t| t.index < *before)
                .filter_map(|t| t.judged.seen().map(|s| (t, s)))
                .filter(|(_, s)| s.key != o.key)
                .max_by_key(|(t, _)| t.index);
            match earlier {
                Some((t, s)) => out.push_str(&format!(
                    "  note: {} behaves otherwise again ({}): there is another change between {} and {}; bisect {}..{} for it, or build a timeline\n",
                    t.version, s.summary, t.version, old.version, t.version, old.version
                )),
                None if b.trial(0).is_none() => out.push_str(&format!(
                    "  the first version, {first}, was not run: a version after it already behaved otherwise than {last}\n"
                )),
                None => {}
            }
        }
        Found::NoChange => out.push_str(&format!(
            "\nNo change: {first} behaves as {last} ({}), and so did every version run between them\n",
            b.trial(0)
                .map(|t| t.judged.line())
                .unwrap_or_default()
        )),
        Found::Inconclusive(why) => out.push_str(&format!("\nNo answer: {why}\n")),
    }
    let left: Vec<&Trial> = b.left_out();
    if !left.is_empty() {
        out.push_str("  left out (not judged as either side):\n");
        for t in left {
            out.push_str(&format!("    {}: {}\n", t.version, t.judged.line()));
        }
    }
    let seconds: f64 = b.trials.iter().map(|t| t.seconds).sum();
    out.push_str(&format!(
        "{} version(s) run of {} in the range (at most {} when none is left out), {:.0} s\n",
        b.runs(),
        b.versions.len(),
        max_runs(b.versions.len()),
        seconds
    ));
    out
}
