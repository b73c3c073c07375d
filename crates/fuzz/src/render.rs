//! How a fuzz run reads: the lines the terminal prints as the run goes and its last line,
//! and the JSON and Markdown reports of a finished run (docs/fuzzing.md). The reporters of
//! [`taskproof_report`] call these on the fuzz events; nothing here writes anywhere.

use std::fmt::Write as _;

use serde_json::Value;

use crate::coverage::Coverage;
use crate::run::{Found, FuzzEvent, FuzzFinding, Plan, Report, ShrinkStop, Written};
use crate::strategy::Offer;
use taskproof_core::protocol::Feature;
use taskproof_profile::Profile;
use taskproof_report::Document;
use taskproof_report::output::{bullets, cell, paint, style};
use taskproof_report::schema::{
    self, FuzzCoverage, FuzzFound, FuzzKnown, FuzzReport, FuzzShrink, FuzzUnconfirmed,
};

/// The version of the JSON report's shape; bumped on any incompatible change.
pub const FORMAT_VERSION: u64 = schema::FUZZ_FORMAT;

/// A fuzz event as the reporters take it: the first lines ([`started`]), a finding's lines
/// ([`finding`]), and at the end the last line ([`summary`], green when nothing was found)
/// with the JSON report ([`json`]) and the Markdown summary ([`markdown`]).
impl Document for FuzzEvent<'_> {
    fn terminal(&self, color: bool) -> String {
        match *self {
            FuzzEvent::Started { plan, offer } => started(plan, offer),
            FuzzEvent::Progress { .. } => String::new(),
            FuzzEvent::Finding { plan, finding: f } => finding(plan, &f, color),
            FuzzEvent::Finished { plan, report } => {
                let style = if report.found.is_empty() {
                    style::GREEN
                } else {
                    style::FAIL
                };
                format!(
                    "{}{}\n",
                    coverage(&report.coverage),
                    paint(color, style, &summary(plan, report))
                )
            }
        }
    }

    fn json(&self) -> Option<Value> {
        match *self {
            FuzzEvent::Finished { plan, report } => Some(json(plan, report)),
            _ => None,
        }
    }

    fn markdown(&self) -> Option<String> {
        match *self {
            FuzzEvent::Finished { plan, report } => Some(markdown(plan, report)),
            _ => None,
        }
    }
}

/// What the run is about to do (the first lines of the terminal output).
pub fn started(plan: &Plan, offer: &Offer) -> String {
    let limit = plan
        .time_limit
        .map(|t| format!(" (or {} s, whichever ends first)", t.as_secs_f64()))
        .unwrap_or_default();
    let mut out = format!(
        "fuzzing {} against the {} model: {} cases of up to {} steps{limit}, seed {}\n",
        plan.setup.target, plan.setup.profile, plan.cases, plan.steps, plan.seed
    );
    let lacks: Vec<&str> = Feature::OF_A_STORE
        .into_iter()
        .chain([Feature::InProgress])
        .filter(|f| !offer.has(*f))
        .map(Feature::as_str)
        .collect();
    if !lacks.is_empty() {
        let _ = writeln!(
            out,
            "the target does not declare {}: steps are generated without them",
            lacks.join(", ")
        );
    }
    if plan.files && !offer.files {
        let _ = writeln!(
            out,
            "no files are written as another program would: the target's layout is not claude-code"
        );
    }
    let between = plan.between;
    if between.wait_max_tenths > 0 || between.events {
        let mut what = Vec::new();
        if between.wait_max_tenths > 0 {
            what.push(format!(
                "waits of up to {} s",
                f64::from(between.wait_max_tenths) / 10.0
            ));
        }
        if between.events {
            what.push("clear, compact, and exit then resume".to_string());
        }
        let _ = writeln!(out, "between requests: {}", what.join("; "));
    }
    if !plan.setup.settle.is_zero() {
        let _ = writeln!(
            out,
            "each case then leaves the store alone for {} s before its final listings (--settle)",
            plan.setup.settle.as_secs_f64()
        );
    }
    if plan.parallel().is_on()
        && let Some(why) = plan.setup.target.not_atomic()
    {
        let _ = writeln!(
            out,
            "in parallel parts an answer is judged by its kind only (a listing whole), as {why}"
        );
    }
    if plan.parallel.is_on() && !plan.parallel().is_on() {
        let _ = writeln!(
            out,
            "no parallel parts: the {} model promises nothing of concurrent sessions",
            plan.setup.profile
        );
    }
    if !plan.known.is_empty() {
        let _ = writeln!(out, "leaving out {} known findings", plan.known.len());
    }
    out
}

/// The progress bar's message while a divergence is shrunk and replayed.
pub fn shrinking(fingerprint: &str, case: u32) -> String {
    format!("shrinking {fingerprint} (case {case})")
}

/// The lines a distinct divergence is reported with, each ending in a newline; `color`
/// paints the word that says what came of it.
pub fn finding(plan: &Plan, f: &FuzzFinding<'_>, color: bool) -> String {
    match f {
        FuzzFinding::Found(f) => found(plan, f, color),
        FuzzFinding::Unconfirmed(u) => format!(
            "{} (flaky?): case {} diverged ({}; fingerprint {}), but {}; not written\n",
            paint(color, style::YELLOW, "not confirmed"),
            u.case,
            u.summary,
            u.fingerprint,
            u.why
        ),
        FuzzFinding::Known {
            case,
            fingerprint,
            entry,
        } => format!(
            "{} {fingerprint} in case {case}, left out ({}:{}: {})\n",
            paint(color, style::CYAN, "known finding"),
            entry.file.display(),
            entry.line,
            entry.reason
        ),
    }
}

fn found(plan: &Plan, f: &Found, color: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} after {} cases ({:.1} s, seed {}): {}",
        paint(color, style::FAIL, "divergence"),
        f.case,
        f.after.as_secs_f64(),
        plan.seed,
        f.finding.summary
    );
    let _ = writeln!(
        out,
        "rules: {} (op {}, fingerprint {})",
        taskproof_core::rule::join(&f.finding.rules, ", "),
        f.finding.op,
        f.finding.fingerprint
    );
    let s = &f.shrink;
    let _ = writeln!(
        out,
        "shrunk from {} to {} steps in {} runs ({:.1} s){}",
        s.from_steps,
        s.to_steps,
        s.runs,
        s.elapsed.as_secs_f64(),
        shrink_bound(plan, s.stopped)
    );
    if let Some((failed, of)) = f.replays {
        let _ = writeln!(
            out,
            "a race: its scenario failed in {failed} of {of} replays (--replays), so a replay that passes proves nothing"
        );
    }
    match &f.written {
        Written::New(p) => {
            let _ = writeln!(out, "wrote {}", p.display());
        }
        Written::Existing(p) => {
            let _ = writeln!(out, "known finding: {} already exists", p.display());
        }
    }
    let _ = writeln!(out, "replay: {}", replay(plan, f));
    out
}

/// Why shrinking may not have reached a minimal sequence, in the flags' words.
fn shrink_bound(plan: &Plan, stopped: Option<ShrinkStop>) -> String {
    match stopped {
        None => String::new(),
        Some(ShrinkStop::Runs) => format!(
            "; stopped at the --shrink-runs limit ({}), it may not be minimal",
            plan.shrink.runs
        ),
        Some(ShrinkStop::Time) => format!(
            "; stopped at the --shrink-time limit ({} s), it may not be minimal",
            plan.shrink.time.as_secs()
        ),
    }
}

/// The command that replays a finding's scenario against the same target and profile. The
/// scenario's expectations are written under the profile's name in the scenario files
/// (`cc-2.1.17` for `hand-written-files`), which `run` reads as a recording unless it is
/// asked for the written set (`written:cc-2.1.17`).
pub fn replay(plan: &Plan, f: &Found) -> String {
    let profile = match plan.setup.profile {
        Profile::Strict => Profile::Strict.to_string(),
        other => format!("written:{other}"),
    };
    let mut line = format!(
        "taskproof run {} --target {} --profile {profile}",
        shell_word(&f.written.path().display().to_string()),
        shell_word(&plan.setup.target.to_string()),
    );
    if let Some(m) = &plan.mapping {
        let _ = write!(line, " --mapping {}", shell_word(&m.display().to_string()));
    }
    line
}

/// The last line of a run.
pub fn summary(plan: &Plan, r: &Report) -> String {
    let rate = f64::from(r.cases) / r.elapsed.as_secs_f64().max(1e-9);
    let (profile, seed) = (plan.setup.profile, plan.seed);
    let undecided = if r.unknown > 0 {
        format!(
            "; {} concurrent cases undecided (the search ran out of budget), counted as neither",
            r.unknown
        )
    } else {
        String::new()
    };
    if r.found.is_empty() && r.unconfirmed.is_empty() && r.known.is_empty() {
        let stopped = if r.out_of_time {
            " (stopped at --time-limit)"
        } else {
            ""
        };
        return format!(
            "{} cases{stopped} agreed with the {profile} model ({}), seed {seed}{undecided}",
            r.cases.saturating_sub(r.unknown),
            rate_words(rate)
        );
    }
    let new = new_findings(r);
    let mut parts = vec![format!(
        "{} distinct findings ({new} new, {} already written)",
        r.found.len(),
        r.found.len() - new
    )];
    if r.repeated_cases() > 0 {
        parts.push(format!("{} more cases met them again", r.repeated_cases()));
    }
    if !r.unconfirmed.is_empty() {
        parts.push(format!(
            "{} not confirmed when replayed",
            r.unconfirmed.len()
        ));
    }
    if !r.known.is_empty() {
        parts.push(format!(
            "{} known left out ({} cases)",
            r.known.len(),
            r.known_cases()
        ));
    }
    let stopped = if r.stopped_early {
        " (stopped at --max-findings)"
    } else if r.out_of_time {
        " (stopped at --time-limit)"
    } else {
        ""
    };
    format!(
        "{} cases{stopped}: {} ({}), seed {seed}{undecided}",
        r.cases,
        parts.join(", "),
        rate_words(rate)
    )
}

/// Cases a second, with a digit after the point below 10, and seconds a case below one a
/// second (a real store's 0.04 cases/s is not 0).
fn rate_words(rate: f64) -> String {
    if rate < 1.0 {
        format!("{:.1} s a case", 1.0 / rate.max(1e-9))
    } else if rate < 10.0 {
        format!("{rate:.1} cases/s")
    } else {
        format!("{rate:.0} cases/s")
    }
}

/// `a 3, b 1` from counts.
fn counts(m: &std::collections::BTreeMap<String, u64>) -> String {
    m.iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What the cases sent and left out, a few lines ending in a newline (docs/fuzzing.md,
/// "What a run sent").
pub fn coverage(c: &Coverage) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "sent {} requests for {} generated steps: {}",
        c.sent,
        c.generated,
        if c.ops.is_empty() {
            "none".to_string()
        } else {
            counts(&c.ops)
        }
    );
    if !c.statuses.is_empty() {
        let _ = write!(out, "; status changes {}", counts(&c.statuses));
    } else {
        out.push_str("; no status change");
    }
    out.push('\n');
    if !c.answers.is_empty() {
        let per_op: Vec<String> = c
            .answers
            .iter()
            .map(|(op, kinds)| format!("{op} {}", counts(kinds)))
            .collect();
        let _ = writeln!(out, "answers: {}", per_op.join("; "));
    }
    if c.left_out_steps() > 0 {
        let _ = writeln!(
            out,
            "left out {} generated steps: {}",
            c.left_out_steps(),
            counts(&c.left_out)
        );
    }
    if !c.dropped.is_empty() {
        let _ = writeln!(
            out,
            "fields taken out of requests still sent, by part: {}",
            counts(&c.dropped)
        );
    }
    if !c.other.is_empty() {
        let _ = writeln!(out, "also done: {}", counts(&c.other));
    }
    if c.concurrent > 0 {
        let _ = writeln!(
            out,
            "concurrent: {} requests in parallel parts, {} pairs of them in flight at once, {} distinct interleavings",
            c.concurrent,
            c.overlapping,
            c.interleavings.len()
        );
    }
    if !c.cases.is_zero() {
        let _ = writeln!(
            out,
            "time: {:.1} s starting the target in fresh roots, {:.1} s running cases, of which {:.1} s waiting for answers",
            c.start.as_secs_f64(),
            c.cases.as_secs_f64(),
            c.requests.as_secs_f64()
        );
    }
    out
}

fn new_findings(r: &Report) -> usize {
    r.found
        .iter()
        .filter(|f| matches!(f.written, Written::New(_)))
        .count()
}

/// The JSON report of a finished run (format version [`FORMAT_VERSION`], docs/fuzzing.md).
pub fn json(plan: &Plan, r: &Report) -> Value {
    schema::to_value(&report(plan, r))
}

/// The report of a finished run, in the schema's types.
pub fn report(plan: &Plan, r: &Report) -> FuzzReport {
    FuzzReport {
        format_version: FORMAT_VERSION,
        command: "fuzz".into(),
        target: plan.setup.target.to_string(),
        profile: plan.setup.profile.as_str().to_string(),
        seed: plan.seed,
        cases: r.cases,
        planned_cases: plan.cases,
        max_steps: plan.steps,
        wait_max_seconds: f64::from(plan.between.wait_max_tenths) / 10.0,
        session_steps: plan.between.events,
        settle_seconds: plan.setup.settle.as_secs_f64(),
        stopped_early: r.stopped_early,
        time_limit_seconds: plan.time_limit.map(|t| t.as_secs_f64()),
        out_of_time: r.out_of_time,
        duration_ms: r.elapsed.as_millis() as u64,
        offered: r
            .offer
            .as_ref()
            .map(|o| o.parts().map(|f| f.as_str().to_string()).collect())
            .unwrap_or_default(),
        files: r.offer.as_ref().is_some_and(|o| o.files),
        coverage: FuzzCoverage {
            generated: r.coverage.generated,
            sent: r.coverage.sent,
            ops: r.coverage.ops.clone(),
            statuses: r.coverage.statuses.clone(),
            answers: r.coverage.answers.clone(),
            left_out: r.coverage.left_out.clone(),
            dropped: r.coverage.dropped.clone(),
            other: r.coverage.other.clone(),
            final_listings: r.coverage.final_listings,
            start_ms: r.coverage.start.as_millis() as u64,
            requests_ms: r.coverage.requests.as_millis() as u64,
            cases_ms: r.coverage.cases.as_millis() as u64,
            concurrent: r.coverage.concurrent,
            overlapping: r.coverage.overlapping,
            interleavings: r.coverage.interleavings.len() as u64,
        },
        parallel_lanes: if plan.parallel().is_on() {
            plan.parallel.lanes
        } else {
            0
        },
        parallel_steps: plan.parallel.steps,
        concurrent_cases: r.concurrent_cases,
        unknown_cases: r.unknown,
        reused_root: r.reused_root,
        found: r
            .found
            .iter()
            .map(|f| FuzzFound {
                fingerprint: f.finding.fingerprint.clone(),
                op: f.finding.op.clone(),
                rules: f.finding.rules.iter().map(|r| r.as_str().into()).collect(),
                summary: f.finding.summary.clone(),
                case: f.case,
                file: f.written.path().display().to_string(),
                new: matches!(f.written, Written::New(_)),
                replay: replay(plan, f),
                repeated_cases: r.repeats.get(&f.finding.fingerprint).copied().unwrap_or(0),
                after_ms: f.after.as_millis() as u64,
                shrink: FuzzShrink {
                    runs: f.shrink.runs,
                    from_steps: f.shrink.from_steps,
                    to_steps: f.shrink.to_steps,
                    stopped_by: f.shrink.stopped.map(|s| {
                        match s {
                            ShrinkStop::Runs => "shrink-runs",
                            ShrinkStop::Time => "shrink-time",
                        }
                        .into()
                    }),
                },
                replays: f.replays.map(|(_, of)| of),
                failed_replays: f.replays.map(|(failed, _)| failed),
            })
            .collect(),
        unconfirmed: r
            .unconfirmed
            .iter()
            .map(|u| FuzzUnconfirmed {
                fingerprint: u.fingerprint.clone(),
                summary: u.summary.clone(),
                case: u.case,
                why: u.why.clone(),
            })
            .collect(),
        known: r
            .known
            .iter()
            .map(|(fp, cases)| {
                let entry = plan.known.get(fp);
                FuzzKnown {
                    fingerprint: fp.clone(),
                    cases: *cases,
                    reason: entry.map(|e| e.reason.clone()),
                    listed_in: entry.map(|e| format!("{}:{}", e.file.display(), e.line)),
                }
            })
            .collect(),
    }
}

/// The Markdown summary of a finished run: the last line, then a table of the findings,
/// the ones not confirmed and the known ones left out.
pub fn markdown(plan: &Plan, r: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# taskproof fuzz\n");
    let _ = writeln!(
        out,
        "Target `{}` against the `{}` model, seed {}.\n",
        plan.setup.target, plan.setup.profile, plan.seed
    );
    let _ = writeln!(out, "**{}**\n", summary(plan, r));
    let _ = writeln!(out, "What the cases sent:\n");
    for line in coverage(&r.coverage).lines() {
        let _ = writeln!(out, "- {}", cell(line));
    }
    out.push('\n');
    if !r.found.is_empty() {
        let _ = writeln!(out, "| finding | rules | op | summary | scenario |");
        let _ = writeln!(out, "|---|---|---|---|---|");
        for f in &r.found {
            let _ = writeln!(
                out,
                "| `{}` | {} | {} | {} | `{}` |",
                f.finding.fingerprint,
                taskproof_core::rule::join(&f.finding.rules, ", "),
                f.finding.op,
                cell(&f.finding.summary),
                f.written.path().display()
            );
        }
        out.push('\n');
    }
    let unconfirmed: Vec<String> = r
        .unconfirmed
        .iter()
        .map(|u| {
            format!(
                "- `{}` (case {}): {}; {}",
                u.fingerprint,
                u.case,
                cell(&u.summary),
                cell(&u.why)
            )
        })
        .collect();
    bullets(
        &mut out,
        "Not confirmed when replayed (not written):",
        &unconfirmed,
    );
    let known: Vec<String> = r
        .known
        .iter()
        .map(|(fp, cases)| {
            let why = plan.known.get(fp).map(|e| e.reason.as_str()).unwrap_or("");
            format!("- `{fp}` ({cases} cases): {}", cell(why))
        })
        .collect();
    bullets(&mut out, "Known findings left out:", &known);
    out
}

/// Quotes a word for a POSIX shell when it needs it.
fn shell_word(s: &str) -> String {
    if s.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-_:./=".contains(&b))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}
