//! The matrix as one self-contained HTML page: inline CSS, a few lines of inline script
//! that only close one detail box when another opens, nothing fetched. Every cell is a
//! `<details>`, so the page works with scripts off. Every string from a report is escaped.

use std::fmt::Write as _;

use serde_json::Value;

use crate::build::{Cell, Matrix, RaceColumn, State, anomaly_label};
use crate::input::Column;

/// Characters of a request, an expectation or an answer shown in a cell before it is cut.
const MAX_JSON: usize = 1500;
/// Characters of an adapter's stderr shown (its end).
const MAX_STDERR: usize = 1200;

/// Escapes text for HTML content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `s` cut to at most `max` characters, saying how much was left out.
pub fn cut(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        s.to_string()
    } else {
        let head: String = s.chars().take(max).collect();
        format!("{head}… ({} more characters in the JSON report)", n - max)
    }
}

/// `s` cut to `max` characters with an ellipsis, for headings.
fn cut_plain(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(max).collect::<String>())
    }
}

/// The last `max` characters of `s`.
fn tail(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        s.to_string()
    } else {
        let t: String = s.chars().skip(n - max).collect();
        format!("…{t}")
    }
}

/// A JSON value on one line, cut.
pub fn json_line(v: &Value) -> String {
    cut(&v.to_string(), MAX_JSON)
}

const STYLE: &str = r#"
:root{--pass:#0072b2;--timed:#56b4e9;--fail:#d55e00;--vanished:#8c1c4a;--skip:#c8c8c8;--error:#3b2a4d;--none:#fff;--line:#d0d0d0}
*{box-sizing:border-box}
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:#1a1a1a;margin:1.5em 2em;background:#fff}
h1{font-size:1.5em;margin:0 0 .2em}h2{font-size:1.2em;margin:1.6em 0 .4em}
p.sub{margin:.2em 0 .8em;color:#444;max-width:75em}
.legend{display:flex;flex-wrap:wrap;gap:.4em 1.2em;margin:.6em 0 1em;align-items:center}
.legend span.k{display:inline-block;width:1.8em;height:1.5em;line-height:1.5em;text-align:center;border:1px solid var(--line);margin-right:.3em;font-weight:700}
table.grid{border-collapse:separate;border-spacing:0}
table.grid th,table.grid td{border-right:1px solid #fff;border-bottom:1px solid #fff}
thead th{position:sticky;top:0;background:#fff;z-index:3;vertical-align:bottom;font-weight:600}
thead th.t{padding:.3em .1em;min-width:3.4em;max-width:3.4em}
thead th.t div.hd{display:flex;flex-direction:row-reverse;justify-content:center;align-items:flex-end;gap:.15em}
thead th.t div.lab,thead th.t div.ver{writing-mode:vertical-rl;transform:rotate(180deg);white-space:nowrap;font-size:.95em}
thead th.t div.ver{font-weight:400;color:#555;font-size:.78em}
thead th.hr{text-align:left;font-size:.85em;padding:0 .6em}
th.sc{position:sticky;left:0;background:#fff;z-index:2;text-align:left;font-weight:400;padding:0 .6em 0 0;white-space:nowrap;font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:.85em}
thead th.sc{z-index:4}
td.ru{color:#555;font-size:.8em;padding:0 .6em;white-space:nowrap}
tr.g th{text-align:left;background:#f1f1f1;padding:.35em .4em;font-size:.9em;border-top:1px solid #bbb;position:sticky;left:0}
tr.tally td{font-size:.75em;text-align:center;color:#333;padding:.2em 0;line-height:1.25}
tr.tally td span{display:block}
td.c{position:relative;text-align:center;padding:0;height:1.75em;min-width:3.4em;font-weight:700;font-size:1em}
td.c>details>summary,td.c>span{display:block;line-height:1.75em;cursor:pointer;list-style:none}
td.c>span{cursor:default}
td.c summary::-webkit-details-marker{display:none}
td.pass{background:var(--pass);color:#fff}
td.fail{background:var(--fail);color:#fff}
td.timed{background:var(--timed);color:#000}
td.partial{background:repeating-linear-gradient(135deg,#fff 0 4px,var(--pass) 4px 8px);color:#000}
td.vanished{background:var(--vanished);color:#fff}
td.skip{background:var(--skip);color:#222}
td.notjudged{background:repeating-linear-gradient(135deg,#fff 0 4px,var(--skip) 4px 8px);color:#222}
td.error{background:var(--error);color:#fff}
td.none{background:var(--none);color:#777;box-shadow:inset 0 0 0 1px var(--line)}
td.raceonly{background:#f7f7f7}
table.classes{border-collapse:collapse;margin:.4em 0 1em}
table.classes th,table.classes td{border:1px solid var(--line);padding:.2em .5em;font-size:.85em;text-align:right}
table.classes th{text-align:left;font-weight:600}
table.classes th.cl{font-weight:400}
table.classes td.loss{background:var(--vanished);color:#fff;font-weight:700}
table.classes td.some{background:var(--fail);color:#fff}
table.classes td.zero{color:#999}
.legend .pass{background:var(--pass);color:#fff}.legend .fail{background:var(--fail);color:#fff}
.legend .timed{background:var(--timed)}.legend .partial{background:repeating-linear-gradient(135deg,#fff 0 4px,var(--pass) 4px 8px)}.legend .vanished{background:var(--vanished);color:#fff}
.legend .skip{background:var(--skip)}.legend .notjudged{background:repeating-linear-gradient(135deg,#fff 0 4px,var(--skip) 4px 8px)}.legend .error{background:var(--error);color:#fff}.legend .none{background:#fff;color:#777}
td.c summary:hover,td.c summary:focus{outline:2px solid #000;outline-offset:-2px}
details[open]>summary{outline:3px solid #000;outline-offset:-3px}
.pop{position:absolute;top:100%;left:0;z-index:10;width:38em;max-width:80vw;background:#fff;color:#1a1a1a;border:1px solid #777;box-shadow:0 4px 14px rgba(0,0,0,.25);padding:.6em .8em;text-align:left;font-weight:400;font-size:.85rem;white-space:normal;max-height:34em;overflow:auto}
tr>td:nth-last-child(-n+4) .pop{left:auto;right:0}
.pop .st{display:inline-block;padding:0 .4em;font-weight:700}
.pop .st.pass{background:var(--pass);color:#fff}.pop .st.fail{background:var(--fail);color:#fff}.pop .st.timed{background:var(--timed)}.pop .st.partial{background:var(--pass);color:#fff}.pop .st.vanished{background:var(--vanished);color:#fff}.pop .st.skip{background:var(--skip)}.pop .st.notjudged{background:var(--skip)}.pop .st.error{background:var(--error);color:#fff}.pop .st.none{border:1px solid var(--line)}
.pop dl{margin:.4em 0;display:grid;grid-template-columns:max-content 1fr;gap:.15em .6em}
.pop dt{color:#555}.pop dd{margin:0}
.pop pre{margin:0;white-space:pre-wrap;word-break:break-all;font:12px/1.35 ui-monospace,"DejaVu Sans Mono",monospace;background:#f6f6f6;padding:.15em .3em}
.pop .f{border-top:1px solid #ddd;margin-top:.4em;padding-top:.3em}
.pop ul{margin:.3em 0;padding-left:1.2em}
td.n{text-align:center;font-size:.85em;min-width:3.4em;height:1.75em;padding:0;position:relative;font-weight:700}
td.n.zero{background:#eef3f7;color:#4a6a80;font-weight:400}
td.n.some{background:var(--fail);color:#fff}
td.n.obs{background:#f3c79f;color:#222}
td.n.err{background:var(--error);color:#fff}
td.n.na{background:#fff;color:#777;box-shadow:inset 0 0 0 1px var(--line);font-weight:400}
td.n>details>summary{display:block;line-height:1.75em;cursor:pointer;list-style:none}
td.n summary::-webkit-details-marker{display:none}
table.targets{border-collapse:collapse;margin-top:.4em}
table.targets th,table.targets td{border:1px solid var(--line);padding:.25em .5em;text-align:left;vertical-align:top;font-size:.9em}
code{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:.92em}
"#;

const SCRIPT: &str = r#"
document.addEventListener('toggle',function(e){var d=e.target;if(d.tagName!=='DETAILS'||!d.open)return;document.querySelectorAll('details[open]').forEach(function(o){if(o!==d)o.open=false;});},true);
document.addEventListener('keydown',function(e){if(e.key==='Escape')document.querySelectorAll('details[open]').forEach(function(o){o.open=false;});});
"#;

/// Renders the page. `title` heads it; `note` is a line under the heading (plain text).
pub fn render(m: &Matrix<'_>, title: &str, note: &str) -> String {
    let mut h = String::new();
    let ncols = m.columns.len();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{}</h1>\n",
        esc(title),
        esc(title)
    );
    let nrows = m.rows().count();
    let profiles = m.profiles();
    let _ = writeln!(
        h,
        "<p class=\"sub\">{nrows} scenarios (rows, grouped by the first rule each one tests, the rules whose failure loses data first) against {ncols} targets (columns), judged by the profile {}. Open a cell for the step, the expected and the actual answer. {}</p>",
        if profiles.is_empty() {
            "(none recorded)".to_string()
        } else {
            profiles
                .iter()
                .map(|p| format!("<code>{}</code>", esc(p)))
                .collect::<Vec<_>>()
                .join(", ")
        },
        esc(note)
    );
    h.push_str("<div class=\"legend\">");
    for s in State::ALL {
        let meaning = match s {
            State::Pass => "pass: every answer met the contract",
            State::Partial => {
                "partial: passed, but part of its steps were not judged (file steps against an opaque layout)"
            }
            State::Timed => {
                "timed: passed; the recorded profile says a step's answer depends on time"
            }
            State::Fail => "fail: an answer broke an expectation",
            State::Vanished => {
                "vanished: failed because acknowledged tasks vanished between requests"
            }
            State::Skip => {
                "skip: no expectations under this profile, or a skip list or unmet precondition"
            }
            State::NotJudged => {
                "not judged: it needs an optional part of the contract the target does not declare"
            }
            State::Error => "error: the target broke (hung, crashed, could not start)",
            State::Missing => "not run: not in this target's report",
            State::RaceOnly => "race only: a column of races, which runs no scenarios",
        };
        let _ = write!(
            h,
            "<span><span class=\"k {}\">{}</span>{}</span>",
            s.class(),
            s.symbol(),
            esc(meaning)
        );
    }
    h.push_str("</div>\n");

    classes_section(&mut h, m);

    // The scenario grid.
    h.push_str("<table class=\"grid\" id=\"scenarios\">\n<thead>\n<tr><th class=\"sc\">scenario</th><th class=\"hr\">rules</th>");
    for c in m.columns {
        column_heading(&mut h, c);
    }
    h.push_str("</tr>\n<tr class=\"tally\"><th class=\"sc\"></th><td class=\"ru\">tally</td>");
    for i in 0..ncols {
        let counts = m.counts(i);
        h.push_str("<td>");
        for s in State::ALL {
            let n = counts.get(&s).copied().unwrap_or(0);
            if n > 0 || s != State::Missing {
                let _ = write!(
                    h,
                    "<span title=\"{n} {}\">{}&#8239;{n}</span>",
                    s.as_str(),
                    s.symbol()
                );
            }
        }
        h.push_str("</td>");
    }
    h.push_str("</tr>\n</thead>\n<tbody>\n");
    for g in &m.groups {
        let name = g.name.map(|n| format!(" {}", esc(n))).unwrap_or_default();
        let class = g
            .class
            .map(|c| format!(" · <i>{}: {}</i>", esc(c.as_str()), esc(c.title())))
            .unwrap_or_default();
        let _ = writeln!(
            h,
            "<tr class=\"g\"><th colspan=\"{}\">{}{name}{class}</th></tr>",
            ncols + 2,
            esc(&g.rule)
        );
        for row in &g.rows {
            let _ = write!(
                h,
                "<tr><th class=\"sc\" title=\"{}\">{}</th><td class=\"ru\">{}</td>",
                esc(&row.title),
                esc(&row.id),
                esc(&row.rules.join(" "))
            );
            for (cell, col) in row.cells.iter().zip(m.columns) {
                scenario_cell(&mut h, &row.id, &row.title, cell, col);
            }
            h.push_str("</tr>\n");
        }
    }
    h.push_str("</tbody>\n</table>\n");

    race_section(&mut h, m);
    targets_section(&mut h, m);
    let _ = write!(h, "<script>{SCRIPT}</script>\n</body>\n</html>\n");
    h
}

/// The failed scenarios per target by consequence class, most severe first: the first
/// table of the page, so that it leads with lost data.
fn classes_section(h: &mut String, m: &Matrix<'_>) {
    use taskproof_core::rule::Class;
    h.push_str("<h2 id=\"classes\">Failures by consequence</h2>\n<p class=\"sub\">Failed scenarios per target by the consequence class of their failure (docs/spec.md, \u{201c}Consequence classes\u{201d}), most severe first.</p>\n<table class=\"classes\">\n<tr><th>class</th>");
    for c in m.columns {
        let _ = write!(h, "<th>{}</th>", esc(&c.label));
    }
    h.push_str("</tr>\n");
    let all: Vec<Vec<(Class, usize)>> =
        (0..m.columns.len()).map(|i| m.failed_by_class(i)).collect();
    for (k, class) in Class::ALL.into_iter().enumerate() {
        let _ = write!(
            h,
            "<tr><th class=\"cl\"><b>{}</b> {}</th>",
            esc(class.as_str()),
            esc(class.title())
        );
        for col in &all {
            let n = col[k].1;
            let css = match (n, class) {
                (0, _) => "zero",
                (_, Class::DataLoss) => "loss",
                _ => "some",
            };
            let _ = write!(h, "<td class=\"{css}\">{n}</td>");
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
}

fn column_heading(h: &mut String, c: &Column) {
    let version = c
        .run
        .as_ref()
        .and_then(|r| {
            let t = &r.target;
            t.name.as_ref().map(|n| match &t.version {
                // A version such as git:<40 hex digits> would make the heading tall: the
                // whole one is in the targets table.
                Some(v) => format!("{n} {}", cut_plain(v, 16)),
                None => n.clone(),
            })
        })
        .unwrap_or_default();
    let _ = write!(
        h,
        "<th class=\"t\" title=\"{}\"><div class=\"hd\"><div class=\"lab\">{}</div>",
        esc(&format!("{} ({})", c.label, c.spec)),
        esc(&c.label)
    );
    if !version.is_empty() {
        let _ = write!(h, "<div class=\"ver\">{}</div>", esc(&version));
    }
    h.push_str("</div></th>");
}

fn scenario_cell(h: &mut String, id: &str, title: &str, cell: &Cell<'_>, col: &Column) {
    let state = cell.state;
    let hover = match &cell.reason {
        Some(r) => format!("{id} on {}: {}: {}", col.label, state.as_str(), cut(r, 300)),
        None => format!("{id} on {}: {}", col.label, state.as_str()),
    };
    let has_detail = match (state, cell.scenario) {
        (State::Missing | State::RaceOnly, _) => false,
        (State::Pass | State::Partial, Some(s)) => {
            !s.notes.is_empty() || !s.skipped_steps.is_empty()
        }
        (State::Pass, None) => false,
        _ => true,
    };
    if !has_detail {
        let _ = write!(
            h,
            "<td class=\"c {}\"><span title=\"{}\">{}</span></td>",
            state.class(),
            esc(&hover),
            state.symbol()
        );
        return;
    }
    let _ = write!(
        h,
        "<td class=\"c {}\"><details><summary title=\"{}\">{}</summary><div class=\"pop\">",
        state.class(),
        esc(&hover),
        state.symbol()
    );
    let _ = write!(
        h,
        "<div><span class=\"st {}\">{} {}</span> <b>{}</b> on <b>{}</b></div><div><i>{}</i></div>",
        state.class(),
        state.symbol(),
        state.as_str(),
        esc(id),
        esc(&col.label),
        esc(title)
    );
    if let Some(c) = cell.scenario.and_then(|s| s.consequence()) {
        let _ = write!(
            h,
            "<div>class: <b>{}</b> ({})</div>",
            esc(c.as_str()),
            esc(c.title())
        );
    }
    if let Some(r) = &cell.reason {
        let _ = write!(h, "<p>{}</p>", esc(&cut(r, MAX_JSON)));
    }
    if let Some(s) = cell.scenario {
        for f in &s.failures {
            let step = f
                .step
                .map(|n| format!("steps[{n}]"))
                .unwrap_or_else(|| "after the last step".into());
            let mut head = step;
            if let Some(sess) = &f.session {
                let _ = write!(head, " · session {sess}");
            }
            if !f.rules.is_empty() {
                let _ = write!(head, " · {}", f.rules.join(" "));
            }
            let _ = write!(h, "<div class=\"f\"><b>{}</b><dl>", esc(&head));
            if let Some(request) = &f.request {
                dl_pre(h, "request", &json_line(request));
            }
            dl_pre(h, "expected", &json_line(&f.expected));
            dl_pre(h, "actual", &json_line(&f.actual));
            let _ = write!(h, "<dt>why</dt><dd>{}</dd>", esc(&f.reason));
            if let Some(n) = &f.note {
                let _ = write!(h, "<dt>note</dt><dd>{}</dd>", esc(n));
            }
            if let Some(w) = &f.witness {
                let _ = write!(
                    h,
                    "<dt>between</dt><dd>{}, {:.1} s before this step</dd>",
                    esc(&w.event),
                    w.seconds
                );
                for v in &w.vanished {
                    let _ = write!(h, "<dt>vanished</dt><dd>{}</dd>", esc(v));
                }
            }
            h.push_str("</dl></div>");
        }
        if let Some(e) = &s.error {
            h.push_str("<div class=\"f\"><dl>");
            let step = e
                .step
                .map(|n| format!("steps[{n}]"))
                .unwrap_or_else(|| "before the first step".into());
            let _ = write!(h, "<dt>step</dt><dd>{}</dd>", esc(&step));
            if let Some(request) = &e.request {
                dl_pre(h, "request", &json_line(request));
            }
            let _ = write!(h, "<dt>error</dt><dd>{}</dd></dl></div>", esc(&e.message));
        }
        if !s.skipped_steps.is_empty() {
            h.push_str("<div class=\"f\">steps skipped while the rest ran:<ul>");
            for k in &s.skipped_steps {
                let step = format!("steps[{}]: ", k.step);
                let _ = write!(h, "<li>{}{}</li>", esc(&step), esc(&k.reason));
            }
            h.push_str("</ul></div>");
        }
        if !s.notes.is_empty() {
            h.push_str("<div class=\"f\">notes:<ul>");
            for n in &s.notes {
                let _ = write!(h, "<li>{}</li>", esc(n));
            }
            h.push_str("</ul></div>");
        }
        if state == State::Error && !s.stderr.trim().is_empty() {
            let _ = write!(
                h,
                "<div class=\"f\">adapter stderr (end):<pre>{}</pre></div>",
                esc(&tail(&s.stderr, MAX_STDERR))
            );
        }
        if !s.file.is_empty() {
            let _ = write!(
                h,
                "<div class=\"f\">file: <code>{}</code></div>",
                esc(&s.file)
            );
        }
    }
    h.push_str("</div></details></td>");
}

fn dl_pre(h: &mut String, term: &str, text: &str) {
    let _ = write!(h, "<dt>{}</dt><dd><pre>{}</pre></dd>", esc(term), esc(text));
}

fn race_section(h: &mut String, m: &Matrix<'_>) {
    h.push_str("<h2 id=\"races\">Races</h2>\n");
    let mut shapes: Vec<String> = m
        .races
        .iter()
        .flat_map(|r| &r.shapes)
        .map(|(w, o)| format!("{w} writers × {o} requests"))
        .collect();
    shapes.sort();
    shapes.dedup();
    let _ = writeln!(
        h,
        "<p class=\"sub\">What a short race per workload (<code>taskproof race</code>; {}) left behind, summed over the workloads. A count the profile promises against is an anomaly (orange, bold); a count it does not promise against is an observation (light, marked °). Open a count for each workload's share and the first witness.</p>",
        if shapes.is_empty() {
            "none ran".to_string()
        } else {
            esc(&shapes.join(", "))
        }
    );
    if m.races
        .iter()
        .all(|r| r.workloads.is_empty() && r.error.is_none())
    {
        h.push_str("<p>No race report was given for any target.</p>\n");
        return;
    }
    h.push_str("<table class=\"grid\" id=\"race\">\n<thead><tr><th class=\"sc\">anomaly</th><th class=\"hr\"></th>");
    for c in m.columns {
        column_heading(h, c);
    }
    h.push_str("</tr></thead>\n<tbody>\n");
    for kind in &m.anomaly_kinds {
        let _ = write!(
            h,
            "<tr><th class=\"sc\">{}</th><td class=\"ru\"></td>",
            esc(&anomaly_label(kind))
        );
        for (rc, col) in m.races.iter().zip(m.columns) {
            race_cell(h, kind, rc, col);
        }
        h.push_str("</tr>\n");
    }
    // Context rows: how much ran, and what broke.
    let names = RaceColumn::default().context().map(|(n, _)| n);
    for (k, name) in names.into_iter().enumerate() {
        let _ = write!(
            h,
            "<tr><th class=\"sc\">{}</th><td class=\"ru\"></td>",
            esc(name)
        );
        for rc in &m.races {
            if let Some(e) = &rc.error {
                let _ = write!(h, "<td class=\"n err\" title=\"{}\">!</td>", esc(e));
            } else if rc.absent {
                h.push_str("<td class=\"n na\" title=\"no race report\">·</td>");
            } else {
                let n = rc.context()[k].1;
                let bad = n > 0 && (name == "target errors" || name == "linearizability unknown");
                let _ = write!(
                    h,
                    "<td class=\"n {}\">{n}</td>",
                    if bad { "err" } else { "zero" }
                );
            }
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody>\n</table>\n");
}

fn race_cell(h: &mut String, kind: &str, rc: &RaceColumn<'_>, col: &Column) {
    if let Some(e) = &rc.error {
        let _ = write!(
            h,
            "<td class=\"n err\"><details><summary title=\"{}\">!</summary><div class=\"pop\"><b>{}</b>: the race could not run<p>{}</p></div></details></td>",
            esc(&cut(e, 300)),
            esc(&col.label),
            esc(&cut(e, MAX_JSON))
        );
        return;
    }
    if rc.absent {
        h.push_str("<td class=\"n na\" title=\"no race report for this target\">·</td>");
        return;
    }
    let (promised, observed) = rc.counts.get(kind).copied().unwrap_or((0, 0));
    let (class, text) = if promised > 0 {
        ("some", promised.to_string())
    } else if observed > 0 {
        ("obs", format!("{observed}°"))
    } else if rc
        .workloads
        .iter()
        .any(|w| w.anomalies.contains_key(kind) || w.observations.contains_key(kind))
    {
        ("zero", "0".to_string())
    } else {
        ("na", "·".to_string())
    };
    if promised + observed == 0 {
        let _ = write!(
            h,
            "<td class=\"n {class}\" title=\"{}: {}: {text}\">{text}</td>",
            esc(&col.label),
            esc(&anomaly_label(kind))
        );
        return;
    }
    let _ = write!(
        h,
        "<td class=\"n {class}\"><details><summary title=\"{}: {}: {promised} anomalies, {observed} observations\">{text}</summary><div class=\"pop\"><b>{}</b> on <b>{}</b>: {promised} promised against by {}, {observed} observed only<ul>",
        esc(&col.label),
        esc(&anomaly_label(kind)),
        esc(&anomaly_label(kind)),
        esc(&col.label),
        esc(&rc.profiles.join(", "))
    );
    for w in &rc.workloads {
        let a = w.anomalies.get(kind).copied().unwrap_or(0);
        let o = w.observations.get(kind).copied().unwrap_or(0);
        if a + o == 0 {
            continue;
        }
        let _ = write!(
            h,
            "<li><b>{}</b>: {}{} of {} acknowledged requests",
            esc(&w.workload),
            a + o,
            if o > 0 && a == 0 { " (observed)" } else { "" },
            w.acknowledged
        );
        if let Some(wit) = w.witnesses.iter().find(|x| x.kind.name() == kind) {
            let _ = write!(h, "<br>e.g. {}", esc(&cut(&wit.text, 600)));
        }
        h.push_str("</li>");
    }
    h.push_str("</ul></div></details></td>");
}

fn targets_section(h: &mut String, m: &Matrix<'_>) {
    h.push_str("<h2 id=\"targets\">Targets</h2>\n<table class=\"targets\"><thead><tr><th>column</th><th>target</th><th>hello</th><th>profile</th><th>scenarios</th><th>race</th></tr></thead><tbody>\n");
    for (i, (c, rc)) in m.columns.iter().zip(&m.races).enumerate() {
        let mut hello = c.hello();
        if let Some(r) = c.run.as_ref().filter(|r| r.target.error.is_none()) {
            let t = &r.target;
            if let Some(l) = &t.layout {
                let _ = write!(hello, "; layout {l}");
            }
            if let Some(features) = t.features.as_ref().filter(|f| !f.is_empty()) {
                let _ = write!(hello, "; features {}", features.join(", "));
            }
            if r.cut_scenarios > 0 {
                let _ = write!(
                    hello,
                    "; the saved report is a trimmed copy that left out {} scenarios",
                    r.cut_scenarios
                );
            }
        }
        let counts = m.counts(i);
        let scen = State::ALL
            .iter()
            .filter_map(|s| counts.get(s).map(|n| format!("{n} {}", s.as_str())))
            .collect::<Vec<_>>()
            .join(", ");
        let race = if let Some(e) = &rc.error {
            format!("could not run: {}", cut(e, 400))
        } else if rc.absent {
            if c.race_not_run {
                "not run (--no-race)".into()
            } else {
                "no race report".into()
            }
        } else {
            format!(
                "{} workload runs, {} skipped",
                rc.ran(),
                rc.workloads.len() - rc.ran()
            )
        };
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&c.label),
            esc(&c.spec),
            esc(&hello),
            esc(c.profile().unwrap_or("")),
            esc(&scen),
            esc(&race)
        );
    }
    h.push_str("</tbody></table>\n");
}
