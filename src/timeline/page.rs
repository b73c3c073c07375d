//! The timeline as Markdown and as a self-contained HTML page: one row per behaviour,
//! versions along the axis, each change linked to the witnesses of the two versions around
//! it.

use super::build::{Point, RowTimeline, Timeline, anchor};
use crate::bisect::Judged;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// `pass`, `fail`, `skip`, `torn_writes: seen` → a CSS class.
fn class_of(key: &str) -> &'static str {
    match key {
        "pass" => "pass",
        "fail" => "fail",
        "skip" => "skip",
        k if k.ends_with(": none") => "pass",
        k if k.ends_with(": seen") => "fail",
        _ => "other",
    }
}

fn point_line(t: &Timeline, i: usize, p: &Point) -> String {
    format!("{}: {} [{}]", t.versions[i], p.judged.line(), p.source)
}

/// What a row says, in words: its spans and its changes.
fn spans_text(t: &Timeline, r: &RowTimeline) -> String {
    if r.spans.is_empty() {
        return "not measured".into();
    }
    let n = t.versions.len();
    let mut parts = Vec::new();
    for (k, s) in r.spans.iter().enumerate() {
        let from = if k == 0 { 0 } else { s.from };
        let to = if k + 1 == r.spans.len() { n - 1 } else { s.to };
        parts.push(format!(
            "{}..{} {} ({} judged)",
            t.versions[from], t.versions[to], s.seen.key, s.judged
        ));
    }
    parts.join(" → ")
}

/// The Markdown page.
pub fn markdown(t: &Timeline) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "# Claude Code task-store behaviour, {}\n\n\
         Built by `taskproof versions timeline` from `reports/claude-code/timeline.json` (every judged \
         version, with where its answer comes from). {} versions, in version-number order. \
         Each row was judged at both ends, at every version already measured (the run and race \
         reports under `reports/claude-code/` and the recorded profiles under `profiles/`, \
         marked with their file), and at {} versions spread evenly over the range; between \
         two judged versions that differ, bisect named the change. Between two judged versions \
         that agree nothing is assumed to change: a change undone before the next judged \
         version would be missed (docs/bisect.md).\n\n",
        t.range,
        t.versions.len(),
        t.samples
    ));
    out.push_str("| behaviour | changes | spans |\n|---|---|---|\n");
    for r in &t.rows {
        let changes = if r.changes.is_empty() {
            "none seen".to_string()
        } else {
            r.changes
                .iter()
                .map(|c| {
                    let a = anchor(r.row.id, &t.versions[c.after]);
                    format!(
                        "[{} → {}](#{a}){}",
                        t.versions[c.before],
                        t.versions[c.after],
                        if t.doubted(&a) { " (unconfirmed)" } else { "" }
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        out.push_str(&format!(
            "| {} | {} | {} |\n",
            cell(&r.row.titled()),
            changes,
            cell(&spans_text(t, r))
        ));
    }
    for r in &t.rows {
        out.push_str(&format!("\n## {}\n\n{}\n", r.row.titled(), r.row.reading));
        if let Some(v) = t.vouch_text(r.row.id) {
            out.push_str(&format!("\nThe register: {v}.\n"));
        }
        if let Some(p) = probe_text(r) {
            out.push_str(&format!("\nProbe: {p}.\n"));
        }
        for why in &r.problems {
            out.push_str(&format!("\n- no answer: {why}\n"));
        }
        for c in &r.changes {
            let (b, a) = (&r.points[&c.before], &r.points[&c.after]);
            out.push_str(&format!(
                "\n### <a id=\"{}\"></a>{} → {}\n\n",
                anchor(r.row.id, &t.versions[c.after]),
                t.versions[c.before],
                t.versions[c.after]
            ));
            if let Some(v) = t.vouch_text(&anchor(r.row.id, &t.versions[c.after])) {
                out.push_str(&format!("The register: {v}.\n\n"));
            }
            if c.after - c.before > 1 {
                out.push_str(&format!(
                    "{} version(s) between them could not be judged:\n",
                    c.after - c.before - 1
                ));
                for i in c.before + 1..c.after {
                    if let Some(p) = r.points.get(&i) {
                        out.push_str(&format!("- {}\n", point_line(t, i, p)));
                    } else {
                        out.push_str(&format!("- {}: not run\n", t.versions[i]));
                    }
                }
                out.push('\n');
            }
            for (i, p) in [(c.before, b), (c.after, a)] {
                out.push_str(&format!("- {}\n", point_line(t, i, p)));
                if let Judged::Seen(s) = &p.judged
                    && !s.witness.is_empty()
                {
                    out.push_str("\n```text\n");
                    out.push_str(s.witness.trim_end());
                    out.push_str("\n```\n\n");
                }
            }
        }
        if !r.points.is_empty() {
            out.push_str("\nJudged versions: ");
            out.push_str(
                &r.points
                    .iter()
                    .map(|(i, p)| {
                        let short = match &p.judged {
                            Judged::Seen(s) => s.key.clone(),
                            other => other.line(),
                        };
                        format!("{} {}", t.versions[*i], short)
                    })
                    .collect::<Vec<_>>()
                    .join(", "),
            );
            let ran = r
                .points
                .values()
                .filter(|p| p.source.starts_with("run "))
                .count();
            out.push_str(&format!(
                " ({ran} run by `taskproof versions timeline`, {} read from checked-in reports and profiles).\n",
                r.points.len() - ran
            ));
        }
    }
    out
}

fn probe_text(r: &RowTimeline) -> Option<String> {
    match &r.row.probe {
        super::rows::RowProbe::Scenario(id) => Some(format!("the scenario `{id}` under strict")),
        super::rows::RowProbe::Step(id, n) => Some(format!(
            "steps[{n}] of the scenario `{id}` under strict (every step run)"
        )),
        super::rows::RowProbe::Race(w, a) => Some(format!(
            "`race --workload {w}` (4 writers x 5 ops, seed 1), anomaly `{}`",
            a.name()
        )),
        super::rows::RowProbe::Background(id, rule) => Some(format!(
            "rule {rule} in the background-task scenario `{id}` (`run --suite background`)"
        )),
    }
}

/// The register's word ([`Timeline::vouch_text`], Markdown) as HTML: `**x**` in bold,
/// `` `x` `` as code.
fn register_html(v: &str) -> String {
    let mut out = String::new();
    for (k, bold) in v.split("**").enumerate() {
        let part: String = bold
            .split('`')
            .enumerate()
            .map(|(j, c)| {
                if j % 2 == 1 {
                    format!("<code>{}</code>", esc(c))
                } else {
                    esc(c)
                }
            })
            .collect();
        if k % 2 == 1 {
            out.push_str(&format!("<strong>{part}</strong>"));
        } else {
            out.push_str(&part);
        }
    }
    out
}

/// The HTML page: rows as bars along the version axis, a mark at each change linking to
/// its witnesses below.
pub fn html(t: &Timeline) -> String {
    let n = t.versions.len();
    let pct = |i: usize| i as f64 * 100.0 / n as f64;
    let mut rows = String::new();
    for r in &t.rows {
        let mut bar = String::new();
        if r.spans.is_empty() {
            bar.push_str("<div class=\"slot\">not measured here</div>");
        }
        for (k, s) in r.spans.iter().enumerate() {
            let from = if k == 0 { 0 } else { s.from };
            let to = if k + 1 == r.spans.len() { n - 1 } else { s.to };
            bar.push_str(&format!(
                "<div class=\"span {}\" style=\"left:{:.3}%;width:{:.3}%\" title=\"{}..{}: {}\">{}</div>",
                class_of(&s.seen.key),
                pct(from),
                pct(to + 1) - pct(from),
                esc(&t.versions[from]),
                esc(&t.versions[to]),
                esc(&s.seen.summary),
                esc(&s.seen.key)
            ));
        }
        let mut last_mark: Option<f64> = None;
        let mut raised = false;
        for c in &r.changes {
            // Marks closer than a label's width take turns above the bar, one line apart.
            let at = pct(c.after);
            raised = matches!(last_mark, Some(prev) if at - prev < 4.0) && !raised;
            last_mark = Some(at);
            if c.after - c.before > 1 {
                bar.push_str(&format!(
                    "<div class=\"span gap\" style=\"left:{:.3}%;width:{:.3}%\" title=\"not judged\"></div>",
                    pct(c.before + 1),
                    pct(c.after) - pct(c.before + 1)
                ));
            }
            let a = anchor(r.row.id, &t.versions[c.after]);
            let doubted = t.doubted(&a);
            bar.push_str(&format!(
                "<a class=\"mark{}{}\" style=\"left:{:.3}%\" href=\"#{a}\"{}>{}{}</a>",
                if raised { " up" } else { "" },
                if doubted { " doubted" } else { "" },
                at,
                if doubted {
                    " title=\"unconfirmed by the register (repro/claims.toml)\""
                } else {
                    ""
                },
                esc(&t.versions[c.after]),
                if doubted { "?" } else { "" }
            ));
        }
        for i in r.points.keys() {
            bar.push_str(&format!(
                "<div class=\"dot\" style=\"left:{:.3}%\" title=\"{}\"></div>",
                pct(*i) + 50.0 / n as f64,
                esc(&point_line(t, *i, &r.points[i]))
            ));
        }
        let changes: Vec<String> = r
            .changes
            .iter()
            .map(|c| {
                let a = anchor(r.row.id, &t.versions[c.after]);
                format!(
                    "<a href=\"#{a}\">{} → {}</a>{}",
                    esc(&t.versions[c.before]),
                    esc(&t.versions[c.after]),
                    if t.doubted(&a) {
                        " <span class=\"doubted\">(unconfirmed)</span>"
                    } else {
                        ""
                    }
                )
            })
            .collect();
        let changes = if changes.is_empty() {
            "<small class=\"ch\">no change seen</small>".to_string()
        } else {
            format!(
                "<small class=\"ch\">changes: {}</small>",
                changes.join(", ")
            )
        };
        let register = t
            .vouch_text(r.row.id)
            .map(|v| {
                format!(
                    "<small class=\"register{}\">The register: {}.</small>",
                    if t.doubted(r.row.id) { " doubted" } else { "" },
                    register_html(&v)
                )
            })
            .unwrap_or_default();
        rows.push_str(&format!(
            "<div class=\"row\"><div class=\"label\">{}{changes}{register}<small>{}</small></div><div class=\"bar\">{}</div></div>\n",
            esc(&r.row.titled()),
            esc(&probe_text(r).unwrap_or_else(|| r.row.reading.to_string())),
            bar
        ));
    }
    let mut ticks = String::new();
    let mut shown: Vec<usize> = vec![0, n - 1];
    let step = (n / 8).max(1);
    shown.extend((step..n - 1).step_by(step).filter(|i| n - 1 - i > step / 2));
    shown.sort_unstable();
    shown.dedup();
    for i in shown {
        ticks.push_str(&format!(
            "<span class=\"tick\" style=\"left:{:.3}%\">{}</span>",
            pct(i),
            esc(&t.versions[i])
        ));
    }
    let mut witnesses = String::new();
    for r in &t.rows {
        for c in &r.changes {
            witnesses.push_str(&format!(
                "<section id=\"{}\"><h3>{}: {} → {}</h3>",
                anchor(r.row.id, &t.versions[c.after]),
                esc(r.row.title),
                esc(&t.versions[c.before]),
                esc(&t.versions[c.after])
            ));
            if let Some(v) = t.vouch_text(&anchor(r.row.id, &t.versions[c.after])) {
                witnesses.push_str(&format!(
                    "<p class=\"register\">The register: {}.</p>",
                    register_html(&v)
                ));
            }
            for i in c.before..=c.after {
                let Some(p) = r.points.get(&i) else { continue };
                witnesses.push_str(&format!("<p>{}</p>", esc(&point_line(t, i, p))));
                if let Judged::Seen(s) = &p.judged
                    && !s.witness.is_empty()
                {
                    witnesses.push_str(&format!("<pre>{}</pre>", esc(s.witness.trim_end())));
                }
            }
            witnesses.push_str("</section>\n");
        }
    }
    format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>Claude Code task-store behaviour, {range}</title>
<style>
body {{ font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; }}
h1 {{ font-size: 20px; }}
.row {{ display: flex; align-items: center; margin: 22px 0 10px; }}
.label {{ width: 290px; flex: none; padding-right: 12px; font-weight: 600; }}
.label small {{ display: block; font-weight: 400; color: #666; font-size: 11px; }}
.bar {{ position: relative; flex: 1; height: 30px; background: #f3f3f3; border-radius: 3px; }}
.axis {{ position: relative; margin-left: 302px; height: 22px; }}
.tick {{ position: absolute; font-size: 11px; color: #555; transform: translateX(-50%); white-space: nowrap; }}
.span {{ position: absolute; top: 0; bottom: 0; color: #fff; font-size: 12px; padding-left: 4px; overflow: hidden; white-space: nowrap; box-sizing: border-box; line-height: 30px; }}
.pass {{ background: #2e8b57; }} .fail {{ background: #c0392b; }} .skip {{ background: #95a5a6; }} .other {{ background: #8e6bbf; }}
.gap {{ background: repeating-linear-gradient(45deg, #ddd, #ddd 4px, #fff 4px, #fff 8px); }}
.slot {{ color: #888; font-style: italic; line-height: 30px; padding-left: 8px; }}
.mark {{ position: absolute; top: -16px; font-size: 11px; font-weight: 700; color: #000; transform: translateX(-50%); text-decoration: none; border-bottom: 2px solid #000; }}
.mark.up {{ top: -30px; }}
.mark.up::after {{ top: 16px; height: 44px; }}
.label small.ch {{ color: #000; font-size: 12px; }}
.doubted {{ color: #b35900; }}
.mark.doubted {{ color: #b35900; border-bottom: 2px dashed #b35900; }}
.mark.doubted::after {{ border-left: 2px dashed #b35900; }}
.mark::after {{ content: ""; position: absolute; left: 50%; top: 16px; height: 30px; border-left: 2px solid #000; }}
.dot {{ position: absolute; bottom: 2px; width: 4px; height: 4px; margin-left: -2px; background: #fff; border-radius: 2px; }}
pre {{ background: #f7f7f7; padding: 8px; overflow-x: auto; font-size: 12px; }}
section {{ border-top: 1px solid #ddd; margin-top: 12px; }}
.legend span {{ display: inline-block; padding: 1px 6px; margin-right: 6px; color: #fff; border-radius: 2px; }}
</style></head><body>
<h1>Claude Code task-store behaviour, {range}</h1>
<p>{count} published versions in version-number order along the axis. Each bar is one behaviour; a black mark is a change, linked to the witnesses of the versions around it (an orange, dashed mark with a question mark: a change the register of claims, repro/claims.toml, holds unconfirmed); white dots are the versions judged (hover for the answer and where it comes from: a run, a checked-in report or a recorded profile). Between two judged versions that agree nothing is assumed to change.</p>
<p class="legend"><span class="pass">pass / none</span><span class="fail">fail / seen</span><span class="skip">skip</span><span class="gap" style="color:#333">not judged</span></p>
<div class="axis">{ticks}</div>
{rows}
<h2>Witnesses</h2>
{witnesses}
</body></html>
"#,
        range = esc(&t.range),
        count = n,
        ticks = ticks,
        rows = rows,
        witnesses = witnesses
    )
}
