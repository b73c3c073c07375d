//! The matrix as Markdown: the grid with symbols, the race counts, and every failure and
//! error with its step, expected and actual answer. Report strings are escaped so that none
//! becomes markup (or breaks a table).

use std::fmt::Write as _;

use crate::build::{Matrix, RaceColumn, State, anomaly_label};
use crate::html::cut;
use crate::input::Column;

/// Characters of an expected or actual answer shown per failure.
const MAX_JSON: usize = 400;

fn json_line(v: &serde_json::Value) -> String {
    cut(&v.to_string(), MAX_JSON)
}

/// Escapes text for Markdown (GitHub's flavour): inline markup, HTML and table pipes.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '#' | '~' | '!' => {
                out.push('\\');
                out.push(ch);
            }
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// Inline code holding `s` verbatim: fenced by more backticks than any run inside it, with
/// pipes escaped (a table would split on them) and line breaks turned into spaces.
pub fn code(s: &str) -> String {
    let s = s.replace(['\n', '\r'], " ").replace('|', "\\|");
    let mut longest = 0;
    let mut run = 0;
    for ch in s.chars() {
        if ch == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    let fence = "`".repeat(longest + 1);
    let pad = if s.starts_with('`') || s.ends_with('`') || longest > 0 {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{s}{pad}{fence}")
}

/// Renders the Markdown. `title` heads it; `note` is a line under the heading.
pub fn render(m: &Matrix<'_>, title: &str, note: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# {}\n", esc(title));
    let profiles = m.profiles();
    let _ = writeln!(
        s,
        "{} scenarios (rows, grouped by the first rule each one tests, the rules whose failure loses data first) against {} targets (columns), judged by the profile {}. {}\n",
        m.rows().count(),
        m.columns.len(),
        if profiles.is_empty() {
            "(none recorded)".to_string()
        } else {
            profiles
                .iter()
                .map(|p| code(p))
                .collect::<Vec<_>>()
                .join(", ")
        },
        esc(note)
    );
    let legend: Vec<String> = State::ALL
        .iter()
        .map(|st| format!("{} {}", st.symbol(), st.as_str()))
        .collect();
    let _ = writeln!(s, "Legend: {}.\n", legend.join(", "));

    s.push_str("## Failures by consequence\n\nFailed scenarios per target by the consequence class of their failure (docs/spec.md, \"Consequence classes\"), most severe first.\n\n");
    table_head(&mut s, "class", m.columns, "--:");
    for (k, class) in taskproof_core::rule::Class::ALL.into_iter().enumerate() {
        let _ = write!(s, "| {} ({}) |", code(class.as_str()), esc(class.title()));
        for i in 0..m.columns.len() {
            let n = m.failed_by_class(i)[k].1;
            if n > 0 && class == taskproof_core::rule::Class::DataLoss {
                let _ = write!(s, " **{n}** |");
            } else {
                let _ = write!(s, " {n} |");
            }
        }
        s.push('\n');
    }
    s.push('\n');

    s.push_str("## Targets\n\n| column | target | hello | profile | ✓ | ◐ | ◷ | ✗ | ⌛ | – | ∅ | ! | · |\n|---|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    for (i, c) in m.columns.iter().enumerate() {
        let hello = cut(&c.hello(), 200);
        let counts = m.counts(i);
        let n = |st: State| counts.get(&st).copied().unwrap_or(0);
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            esc(&c.label),
            code(&c.spec),
            esc(&hello),
            esc(c.profile().unwrap_or("")),
            n(State::Pass),
            n(State::Partial),
            n(State::Timed),
            n(State::Fail),
            n(State::Vanished),
            n(State::Skip),
            n(State::NotJudged),
            n(State::Error),
            n(State::Missing)
        );
    }

    for c in m.columns {
        if let Some(n) = c.run.as_ref().map(|r| r.cut_scenarios).filter(|&n| n > 0) {
            let _ = writeln!(
                s,
                "\n{}: the saved run report is a trimmed copy that left out {n} scenarios; they show as not run.",
                esc(&c.label)
            );
        }
    }

    s.push_str("\n## Scenarios\n\n");
    table_head(&mut s, "scenario", m.columns, ":-:");
    for g in &m.groups {
        let name = g.name.map(|n| format!(" {}", esc(n))).unwrap_or_default();
        let class = g
            .class
            .map(|c| format!(" ({})", esc(c.as_str())))
            .unwrap_or_default();
        let _ = write!(s, "| **{}{name}**{class} |", esc(&g.rule));
        for _ in m.columns {
            s.push_str(" |");
        }
        s.push('\n');
        for row in &g.rows {
            let _ = write!(s, "| {} |", esc(&row.id));
            for cell in &row.cells {
                let _ = write!(s, " {} |", cell.state.symbol());
            }
            s.push('\n');
        }
    }

    s.push_str("\n## Races\n\n");
    if m.races
        .iter()
        .all(|r| r.workloads.is_empty() && r.error.is_none())
    {
        s.push_str("No race report was given for any target.\n");
    } else {
        s.push_str("Counts summed over the workloads of a short race per workload; `°` marks a count the profile does not promise against (an observation), `!` a race that could not run, `·` no report.\n\n");
        table_head(&mut s, "anomaly", m.columns, "--:");
        let mut rows: Vec<(String, Vec<String>)> = Vec::new();
        for kind in &m.anomaly_kinds {
            let cells = race_cells(m, |rc| match rc.counts.get(kind).copied() {
                None => "·".into(),
                Some((a, o)) if a == 0 && o > 0 => format!("{o}°"),
                Some((a, o)) if o > 0 => format!("{a} (+{o}°)"),
                Some((a, _)) => a.to_string(),
            });
            rows.push((anomaly_label(kind), cells));
        }
        let names = RaceColumn::default().context().map(|(n, _)| n);
        for (k, name) in names.into_iter().enumerate() {
            let cells = race_cells(m, |rc| rc.context()[k].1.to_string());
            rows.push((name.to_string(), cells));
        }
        for (name, cells) in rows {
            let _ = writeln!(s, "| {} | {} |", esc(&name), cells.join(" | "));
        }
        for (rc, c) in m.races.iter().zip(m.columns) {
            if let Some(e) = &rc.error {
                let _ = writeln!(
                    s,
                    "\n{}: the race could not run: {}",
                    esc(&c.label),
                    esc(&cut(e, 600))
                );
            }
        }
    }

    s.push_str("\n## Failures and errors\n");
    let mut any = false;
    for (i, c) in m.columns.iter().enumerate() {
        let bad: Vec<_> = m
            .rows()
            .filter(|r| {
                matches!(
                    r.cells[i].state,
                    State::Fail | State::Vanished | State::Error
                )
            })
            .collect();
        if bad.is_empty() {
            continue;
        }
        any = true;
        let _ = writeln!(s, "\n### {} ({})\n", esc(&c.label), code(&c.spec));
        // A column that never started: one line, not one per scenario.
        if let Some(reason) = super::build::column_error(c) {
            let _ = writeln!(s, "Every scenario is an error: {}", esc(&cut(&reason, 800)));
            continue;
        }
        for row in bad {
            let cell = &row.cells[i];
            let _ = write!(
                s,
                "- {} {} {}",
                cell.state.symbol(),
                code(&row.id),
                cell.state.as_str()
            );
            if let Some(c) = cell.scenario.and_then(|sc| sc.consequence()) {
                let _ = write!(s, ", {}", c.as_str());
            }
            match cell.scenario {
                Some(sc) if !sc.failures.is_empty() => {
                    s.push('\n');
                    for f in &sc.failures {
                        let step = f
                            .step
                            .map(|n| format!("steps[{n}]"))
                            .unwrap_or_else(|| "after the last step".into());
                        let _ = writeln!(s, "  - {}: {}", step, esc(&f.reason));
                        let _ = writeln!(s, "    expected {}", code(&json_line(&f.expected)));
                        let _ = writeln!(s, "    actual {}", code(&json_line(&f.actual)));
                        if let Some(w) = &f.witness {
                            let _ = writeln!(
                                s,
                                "    between requests: {}, {:.1} s before this step",
                                esc(&w.event),
                                w.seconds
                            );
                            for v in &w.vanished {
                                let _ = writeln!(s, "    vanished: {}", esc(v));
                            }
                        }
                    }
                }
                Some(sc) if sc.error.is_some() => {
                    let e = sc.error.as_ref().expect("checked");
                    let step = e.step.map(|n| format!("steps[{n}]: ")).unwrap_or_default();
                    let _ = writeln!(s, ": {}{}", step, esc(&cut(&e.message, 600)));
                }
                _ => {
                    let _ = writeln!(
                        s,
                        ": {}",
                        esc(&cut(cell.reason.as_deref().unwrap_or(""), 600))
                    );
                }
            }
        }
    }
    if !any {
        s.push_str("\nNone.\n");
    }
    s
}

/// A table's heading row, `| FIRST | column… |`, and its rule, each column aligned by
/// `align` (`:-:` centred, `--:` right).
fn table_head(s: &mut String, first: &str, columns: &[Column], align: &str) {
    let _ = write!(s, "| {first} |");
    for c in columns {
        let _ = write!(s, " {} |", esc(&c.label));
    }
    s.push_str("\n|---|");
    for _ in columns {
        let _ = write!(s, "{align}|");
    }
    s.push('\n');
}

/// One row of the race table: per target `!` when its race could not run, `·` when there
/// is no report, else `cell` of its counts.
fn race_cells(m: &Matrix<'_>, cell: impl Fn(&RaceColumn) -> String) -> Vec<String> {
    m.races
        .iter()
        .map(|rc| {
            if rc.error.is_some() {
                "!".into()
            } else if rc.absent {
                "·".into()
            } else {
                cell(rc)
            }
        })
        .collect()
}
