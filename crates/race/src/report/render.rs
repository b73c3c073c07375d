//! The race report's views: the Markdown summary (`--report md:PATH`) and the terminal
//! summary, both rendered from the [`RaceReport`] model in report.rs, which the JSON
//! report serializes as it is.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::{MAX_WITNESSES_PER_KIND, PartReport, RaceReport};
use crate::check::AnomalyKind;
use crate::files::FilesReport;
use crate::mix::{self, Charge};

/// Witnesses shown per run on the terminal.
const SHOWN_WITNESSES: usize = 5;

impl RaceReport {
    /// The Markdown summary (`--report md:PATH`): per run of a mixed race, the losses
    /// charged to each target as a table and, when each target kept its own tasks, what
    /// each did to the other's files as a list; then the terminal summary as it printed.
    pub fn to_markdown(&self) -> String {
        use taskproof_report::output::cell;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "# taskproof race
"
        );
        let _ = writeln!(
            s,
            "Target `{}`, profile `{}`, {} writers{}{} x {} ops, seed {}.\n",
            self.target,
            self.profile,
            self.writers,
            if self.target.contains(" + ") {
                " of each"
            } else {
                ""
            },
            match self.teammates {
                0 => String::new(),
                n => format!(
                    " (each of a team target's a lead with {n} in-process teammate(s), each a writer)"
                ),
            },
            self.ops,
            self.seed
        );
        for w in self.workloads.iter().filter(|w| w.skipped.is_none()) {
            if w.targets.is_empty() {
                continue;
            }
            let _ = writeln!(
                s,
                "## {} (run {}, seed {})\n",
                w.workload,
                w.run + 1,
                w.seed
            );
            let _ = writeln!(
                s,
                "| target | layout | requests | acknowledged | lost (charged) | its own | others' it dropped |\n|---|---|---|---|---|---|---|"
            );
            for t in &w.targets {
                let layout = w
                    .parts
                    .iter()
                    .find(|p| p.target == t.target)
                    .map_or("shared tasks", |p| p.layout.as_str());
                let _ = writeln!(
                    s,
                    "| `{}` | {layout} | {} | {} | {} | {} | {} |",
                    cell(&t.target),
                    t.requests,
                    t.acknowledged,
                    t.lost,
                    t.lost_own,
                    t.lost_of_others
                );
            }
            let _ = writeln!(s);
            if !w.by_writer.is_empty() {
                let _ = writeln!(
                    s,
                    "| writer | target | requests | acknowledged | overlapping another writer's of its target | lost (charged: its write dropped them) | of its own changes, lost |\n|---|---|---|---|---|---|---|"
                );
                for b in &w.by_writer {
                    let _ = writeln!(
                        s,
                        "| {} | `{}` | {} | {} | {} | {} | {} |",
                        cell(&b.writer),
                        cell(&b.target),
                        b.requests,
                        b.acknowledged,
                        b.overlapping,
                        b.lost,
                        b.lost_of_its_own
                    );
                }
                let _ = writeln!(s);
            }
            if let Some(files) = &w.files {
                let mut text = String::new();
                render_files(&mut text, files, &w.parts, &w.charges);
                for line in text.lines().skip(1) {
                    let line = line.trim_start();
                    if !line.is_empty() {
                        let _ = writeln!(s, "- {}", cell(line));
                    }
                }
                let _ = writeln!(s);
            }
        }
        let _ = writeln!(s, "```text\n{}```", self.render());
        s
    }

    /// The terminal summary.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let fsync = match self.fsync {
            Some(true) => ", fsync on",
            Some(false) => ", fsync off",
            None => "",
        };
        let kill = if self.kill {
            format!(", --kill ({})", self.kill_mode)
        } else {
            String::new()
        };
        let each = if self.target.contains(" + ") {
            " of each"
        } else {
            ""
        };
        let think = self
            .think_s
            .map(|t| format!(", {:.0} ms between a writer's requests", t * 1000.0))
            .unwrap_or_default();
        let team = match self.teammates {
            0 => String::new(),
            n => format!(
                " (each of a team target's a lead with {n} in-process teammate(s), each a writer)"
            ),
        };
        let _ = writeln!(
            s,
            "race on {} (profile {}): {} writers{each}{team} x {} ops, seed {}{fsync}{think}{kill}",
            self.target, self.profile, self.writers, self.ops, self.seed
        );
        for why in &self.not_atomic {
            let _ = writeln!(s, "NOTE not atomic: {why}");
        }
        if !self.targets.is_empty() {
            let ranges: Vec<String> = self
                .targets
                .iter()
                .enumerate()
                .scan(0, |first, (i, t)| {
                    // Each target's writers, counted from its history (a target with agent
                    // teams has its teammates' too).
                    let count = if t.writers == 0 {
                        self.writers
                    } else {
                        t.writers
                    };
                    let a = *first;
                    *first += count;
                    Some((i, t, a, a + count.max(1) - 1))
                })
                .map(|(i, t, a, b)| {
                    let letter = if self.own_tasks {
                        format!("{} = ", crate::files::letter(i))
                    } else {
                        String::new()
                    };
                    if a == b {
                        format!("{letter}writer {a}: {}", t.target)
                    } else {
                        format!("{letter}writers {a}-{b}: {}", t.target)
                    }
                })
                .collect();
            let _ = writeln!(s, "{}", ranges.join(", "));
            if self.own_tasks {
                let _ = writeln!(
                    s,
                    "each target on its own tasks (its own setup, writers and final listing; subjects tagged \"A: \", \"B: \", ...), all in one list folder"
                );
            }
        }
        for w in &self.workloads {
            let label = if self.runs > 1 {
                format!("{} run {} (seed {})", w.workload, w.run + 1, w.seed)
            } else {
                w.workload.clone()
            };
            if let Some(why) = &w.skipped {
                let _ = writeln!(s, "\n{label}: skipped: {why}");
                continue;
            }
            let anomalies = nonzero(&w.anomalies);
            let observed = nonzero(&w.observations);
            let mut verdict = if anomalies.is_empty() {
                "no anomalies".to_string()
            } else {
                anomalies.join(", ")
            };
            if !observed.is_empty() {
                verdict += &format!(
                    "; observed, not promised by {}: {}",
                    self.profile,
                    observed.join(", ")
                );
            }
            if !w.targets.is_empty() {
                verdict += &format!("; lost by target: {}", mix::summary(&w.targets));
            }
            if !w.by_writer.is_empty() {
                verdict += &format!("; lost by writer: {}", mix::writers_summary(&w.by_writer));
            }
            if self.runs > 1 {
                let _ = writeln!(
                    s,
                    "{label}: {} acknowledged in {:.2} s: {verdict}",
                    w.acknowledged, w.seconds
                );
                continue;
            }
            let _ = writeln!(s, "\n{label}: {verdict}");
            if let Some(st) = &w.settle {
                let _ = writeln!(
                    s,
                    "  settle: the writers' sessions stayed open and idle {:.1} s after the last acknowledgement; {}",
                    st.seconds,
                    if st.vanished.is_empty() {
                        "no task file vanished".to_string()
                    } else {
                        format!(
                            "{} task files vanished without a delete (their tasks are counted as lost):",
                            st.vanished.len()
                        )
                    }
                );
                for v in &st.vanished {
                    let _ = writeln!(
                        s,
                        "    {} at +{:.2} s, charged to {}: {}",
                        v.file, v.after_s, v.charged_to, v.evidence
                    );
                }
            }
            let _ = writeln!(
                s,
                "  {} requests in {:.2} s (from {:.3} s on the clock of the times below): {} acknowledged, {} refused, {} unknown; {} kills, {} sessions, {} raw reads ({} torn)",
                w.requests,
                w.seconds,
                w.released_s,
                w.acknowledged,
                w.refused,
                w.unknown,
                w.kills,
                w.sessions,
                w.raw_reads,
                w.torn_reads
            );
            if !w.refusals.is_empty() {
                let kinds: Vec<String> = w
                    .refusals
                    .iter()
                    .map(|(k, r)| format!("{k} {} (e.g. {})", r.count, r.example))
                    .collect();
                let _ = writeln!(s, "  refused: {}", kinds.join("; "));
            }
            let l = &w.linearizability;
            let _ = writeln!(
                s,
                "  linearizability: {} tasks: {} linearizable, {} not, {} unknown{}",
                l.tasks,
                l.linearizable,
                l.nonlinearizable,
                l.unknown,
                if l.unknown > 0 {
                    " (search budget exhausted: not a pass)"
                } else {
                    ""
                }
            );
            for p in &w.parts {
                let found = nonzero(&p.anomalies);
                let observed = nonzero(&p.observations);
                let mut verdict = if found.is_empty() {
                    "no anomalies".to_string()
                } else {
                    found.join(", ")
                };
                if !observed.is_empty() {
                    verdict += &format!("; observed {}", observed.join(", "));
                }
                let _ = writeln!(
                    s,
                    "  {} {} ({}): {} requests, {} acknowledged, {} tasks in its final listing; linearizability {} of {} tasks; {verdict}",
                    p.letter,
                    p.target,
                    p.layout,
                    p.requests,
                    p.acknowledged,
                    p.listed,
                    p.linearizability.linearizable,
                    p.linearizability.tasks
                );
            }
            if let Some(files) = &w.files {
                render_files(&mut s, files, &w.parts, &w.charges);
            }
            for e in w.errors.iter().take(SHOWN_WITNESSES) {
                let _ = writeln!(s, "  error: {e}");
            }
            for wit in w.witnesses.iter().take(SHOWN_WITNESSES) {
                let seen = if wit.observation { "observed " } else { "" };
                let whose = match &wit.target {
                    Some(t) => {
                        let l = w
                            .parts
                            .iter()
                            .find(|p| p.target == *t)
                            .map_or(t.as_str(), |p| p.letter.as_str());
                        format!(" ({l}'s tasks)")
                    }
                    None => String::new(),
                };
                let _ = writeln!(s, "  {seen}{}{whose}: {}", wit.kind.label(), wit.text);
            }
            let more =
                (w.total() + w.observed()).saturating_sub(SHOWN_WITNESSES.min(w.witnesses.len()));
            if more > 0 {
                let _ = writeln!(
                    s,
                    "  ... and {more} more not shown here (a report written with --report json:PATH keeps up to {MAX_WITNESSES_PER_KIND} of each kind)"
                );
            }
        }
        for r in &self.repeats {
            let median = r
                .median_first_loss_s
                .map(|m| format!(", median time to the first loss {:.2} ms", m * 1000.0))
                .unwrap_or_default();
            let (n, w) = (r.runs, &r.workload);
            let (anomalies, observed, lost) = (
                r.runs_with_anomalies,
                r.runs_with_observations,
                r.runs_with_loss,
            );
            let _ = writeln!(
                s,
                "\n{w}: anomalies in {anomalies} of {n} runs, observations in {observed} of {n}, loss in {lost} of {n}{median}"
            );
        }
        if !self.targets.is_empty() {
            let acked: Vec<String> = self
                .targets
                .iter()
                .map(|t| format!("{} {} of {}", t.target, t.acknowledged, t.requests))
                .collect();
            let _ = writeln!(
                s,
                "\nlost acknowledged changes by target (acknowledged: {}): {}",
                acked.join(", "),
                mix::summary(&self.targets)
            );
        }
        if !self.by_writer.is_empty() {
            let _ = writeln!(
                s,
                "lost acknowledged changes by writer (charged to the writer whose write dropped them): {}",
                mix::writers_summary(&self.by_writer)
            );
        }
        let total: usize = self.anomalies.values().sum();
        let observed: usize = self.observations.values().sum();
        let ran = self
            .workloads
            .iter()
            .filter(|w| w.skipped.is_none())
            .count();
        let dirty = self.workloads.iter().filter(|w| !w.clean()).count();
        let _ = writeln!(
            s,
            "\n{total} anomalies and {observed} observations in {ran} runs ({dirty} not clean), {} linearizability unknown, {} target errors",
            self.unknown_linearizability, self.errors
        );
        s
    }
}

/// The shared folder's part of a run's summary: the special files, what each target did
/// to the other's files, what each listing hides, the check.
fn render_files(s: &mut String, files: &FilesReport, parts: &[PartReport], charges: &[Charge]) {
    let letter = |name: &str| -> String {
        parts
            .iter()
            .find(|p| p.target == name)
            .map_or_else(|| name.to_string(), |p| p.letter.clone())
    };
    let _ = writeln!(
        s,
        "  the shared folder {}/ ({}):",
        crate::workload::LIST,
        files.targets.join(", ")
    );
    for f in &files.special {
        let states: Vec<String> = f
            .states
            .iter()
            .map(|st| match &st.content {
                Some(c) if st.kind == crate::files::FileKind::Json => {
                    format!("{} {} ({c})", st.kind.words(), st.when)
                }
                _ => format!("{} {}", st.kind.words(), st.when),
            })
            .collect();
        let _ = writeln!(s, "    {}: {}", f.file, states.join(", "));
        let race: Vec<String> = f
            .changes
            .iter()
            .filter(|c| c.during == "during the race")
            .map(|c| format!("{} -> {} {}", c.from.words(), c.to.words(), c.seen))
            .collect();
        if !race.is_empty() {
            let _ = writeln!(
                s,
                "      changes seen during the race (every {} ms): {}",
                crate::files::POLL.as_millis(),
                race.join(", ")
            );
        }
    }
    for e in &files.effects {
        let by =
            e.by.as_deref()
                .map_or_else(|| "someone".to_string(), letter);
        let on = letter(&e.on);
        let what = if e.file == "task files" {
            let examples = if e.examples.is_empty() {
                String::new()
            } else {
                format!(" ({})", e.examples.join(", "))
            };
            format!("{} {} of {on}'s task files{examples}", e.what, e.count)
        } else {
            format!("{} {on}'s `{}`", e.what, e.file)
        };
        let by = if e.by.is_none() {
            format!("{on} or another target")
        } else {
            by
        };
        let _ = writeln!(s, "    {by} {what} {}: {}", e.when, e.evidence);
    }
    for h in &files.hidden {
        let whose = match h.owner.as_deref() {
            Some(o) if o == h.listing => "its own".to_string(),
            Some(o) => format!("{}'s", letter(o)),
            None => "nobody's known".to_string(),
        };
        let _ = writeln!(
            s,
            "    {}'s listing hides {whose} {} task file{} ({})",
            letter(&h.listing),
            h.files,
            if h.files == 1 { "" } else { "s" },
            h.examples.join(", ")
        );
    }
    for sh in &files.shown {
        let _ = writeln!(
            s,
            "    {}'s listing shows {} of {}'s tasks (as ids {}); they are left out of {}'s check",
            letter(&sh.listing),
            sh.tasks,
            letter(&sh.owner),
            sh.ids.join(", "),
            letter(&sh.listing)
        );
    }
    if files.hidden.is_empty() {
        let _ = writeln!(s, "    every listing shows every task file");
    }
    // The lost changes by who acknowledged them and who is charged, with the first reason.
    let mut groups: Vec<((&str, &str), usize, Option<&str>)> = Vec::new();
    for c in charges {
        let key = (c.acknowledged_by.as_str(), c.charged_to.as_str());
        match groups.iter_mut().find(|g| g.0 == key) {
            Some(g) => {
                g.1 += 1;
                g.2 = g.2.or(c.why.as_deref());
            }
            None => groups.push((key, 1, c.why.as_deref())),
        }
    }
    for ((acked, charged), count, why) in groups {
        let whose = if acked == charged {
            format!("charged to {} itself", letter(charged))
        } else {
            format!("charged to {}", letter(charged))
        };
        // With writers named one by one (a team's members): whose changes, on whom.
        let mut pairs: Vec<(&str, &str, usize)> = Vec::new();
        for c in charges
            .iter()
            .filter(|c| (c.acknowledged_by.as_str(), c.charged_to.as_str()) == (acked, charged))
        {
            let (Some(made), by) = (c.acknowledged_by_writer.as_deref(), &c.charged_to_writer)
            else {
                continue;
            };
            let by = by.as_deref().unwrap_or("none of its writers by name");
            match pairs.iter_mut().find(|p| (p.0, p.1) == (made, by)) {
                Some(p) => p.2 += 1,
                None => pairs.push((made, by, 1)),
            }
        }
        let per_writer = if pairs.is_empty() {
            String::new()
        } else {
            let each: Vec<String> = pairs
                .iter()
                .map(|(made, by, n)| format!("{n} of {made}'s on {by}"))
                .collect();
            format!(" ({})", each.join(", "))
        };
        let _ = writeln!(
            s,
            "    {count} lost change{} of {}'s {whose}{per_writer}{}",
            if count == 1 { "" } else { "s" },
            letter(acked),
            why.map(|w| format!(": {w}")).unwrap_or_default()
        );
    }
    if let Some(c) = &files.check {
        match &c.error {
            Some(e) => {
                let _ = writeln!(s, "    check of {}: could not run: {e}", c.folder);
            }
            None => {
                let _ = writeln!(
                    s,
                    "    check of {} (layout {}, {} tasks): {}",
                    c.folder,
                    c.layout.as_deref().unwrap_or("none"),
                    c.tasks,
                    if c.findings.is_empty() {
                        "no findings".to_string()
                    } else {
                        format!("{} findings", c.findings.len())
                    }
                );
                for f in c.findings.iter().take(SHOWN_WITNESSES) {
                    let _ = writeln!(s, "      {} {}: {}", f.kind, f.file, f.message);
                }
                if c.findings.len() > SHOWN_WITNESSES {
                    let _ = writeln!(
                        s,
                        "      ... and {} more not shown here (a report written with --report json:PATH has them all)",
                        c.findings.len() - SHOWN_WITNESSES
                    );
                }
            }
        }
    }
}

/// The kinds with a count above zero, as "label count", in the order of [`AnomalyKind::ALL`].
fn nonzero(counts: &BTreeMap<String, usize>) -> Vec<String> {
    AnomalyKind::ALL
        .iter()
        .filter(|k| counts[k.name()] > 0)
        .map(|k| format!("{} {}", k.label(), counts[k.name()]))
        .collect()
}
