//! `taskproof versions timeline`: the version ranges over which each behaviour held
//! (docs/bisect.md, "Timeline").

use super::verdict::Verdict;
use std::io::Write;
use std::path::PathBuf;

use crate::bisect::{self, BackgroundProbe, Change, Judged, RaceProbe, Range, ScenarioProbe};
use crate::timeline::{self, Cache, RowProbe, Timeline, build_row};

#[derive(Debug, clap::Args)]
#[command(after_long_help = "\
Each row (a behaviour: a scenario's verdict under strict, or whether a race finds an
anomaly) is judged at both ends of the range, at every version already measured (the run
and race reports under reports/claude-code/ and the recorded profiles under profiles/), at
--samples versions spread evenly over the range, and wherever bisect needs between two
judged versions that differ. Between two judged versions that agree nothing is assumed to
change: a change undone before the next judged version is missed, unless it spans one of
the samples.

Every judgement is kept in the cache file (--cache), so a rerun runs only what is new, and
--no-run rebuilds the pages from the cache alone.

Rows: delete, ids-reused, duplicate-ids, torn-writes, edges-mirrored,
finished-list-deleted, and the background-task rows bg-notified, bg-ids,
bg-session-end (scenarios of `run --suite background`, judged from
reports/claude-code/VERSION/background-suite.json where a version has one).

Examples:
  taskproof versions timeline
  taskproof versions timeline --row ids-reused --row delete --samples 1
  taskproof versions timeline --no-run
  taskproof versions timeline --no-run --reports shards/ --cache out/timeline.json --out out")]
pub struct Args {
    /// The versions: claude-code@A..B (B may be `latest`).
    #[arg(
        long,
        short,
        value_name = "KIND@A..B",
        default_value = "claude-code@2.1.17..latest"
    )]
    pub target: Range,
    /// Only these rows (repeatable) [default: all].
    #[arg(long, value_name = "ID")]
    pub row: Vec<String>,
    /// Versions judged per row besides the ends and the known ones, spread evenly.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub samples: usize,
    /// The cache of judgements (read, then written after each run).
    #[arg(
        long,
        value_name = "FILE",
        default_value = "reports/claude-code/timeline.json"
    )]
    pub cache: PathBuf,
    /// Where timeline.md and timeline.html are written.
    #[arg(long, value_name = "DIR", default_value = "reports/claude-code")]
    pub out: PathBuf,
    /// Run nothing: build the pages from the cache and the checked-in reports alone.
    #[arg(long)]
    pub no_run: bool,
    /// More known points: every `taskproof run --report json:FILE` report of a Claude Code
    /// version under DIR (searched recursively), such as the shards of a sharded run
    /// (repeatable).
    #[arg(long, value_name = "DIR")]
    pub reports: Vec<PathBuf>,
    /// The repository whose reports/ and profiles/ give the known points.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub repo: PathBuf,
    #[command(flatten)]
    pub each: super::bisect::EachVersion,
}

/// What the register of claims (`REPO/repro/claims.toml`, when there is one) says of the
/// timeline's change points and rows.
fn vouches(repo: &std::path::Path) -> Result<Vec<timeline::Vouch>, String> {
    let path = repo.join(crate::claims::DEFAULT_REGISTER);
    if !path.exists() {
        return Ok(Vec::new());
    }
    let register = crate::claims::Register::load(&path)?;
    Ok(register
        .claims
        .iter()
        .flat_map(|c| {
            c.timeline.iter().map(|anchor| timeline::Vouch {
                anchor: anchor.clone(),
                claim: c.id.clone(),
                status: c.status,
                why: c.why.clone(),
            })
        })
        .collect())
}

/// The witness of a run for the cache: the run report's, without the adapter's stderr.
fn without_stderr(j: Judged) -> Judged {
    let cut = |mut s: bisect::Seen| {
        if let Some(i) = s.witness.find("\n  adapter stderr:") {
            s.witness.truncate(i);
        }
        s
    };
    match j {
        Judged::Seen(s) => Judged::Seen(cut(s)),
        Judged::Flaky(v) => Judged::Flaky(v.into_iter().map(cut).collect()),
        other => other,
    }
}

pub fn run(args: Args) -> anyhow::Result<Verdict> {
    let usage = |msg: String| {
        eprintln!("taskproof versions timeline: {msg}");
        Ok(Verdict::Usage)
    };
    let mut rows = timeline::rows::claude_code();
    if let Some(bad) = args
        .row
        .iter()
        .find(|r| !rows.iter().any(|x| x.id == r.as_str()))
    {
        return usage(format!(
            "--row {bad}: no such row; the rows are {}",
            rows.iter().map(|r| r.id).collect::<Vec<_>>().join(", ")
        ));
    }
    if !args.row.is_empty() {
        rows.retain(|r| args.row.iter().any(|x| x == r.id));
    }
    let Some(all) = super::run::scenarios_or_errors(&[], "timeline", "nothing was run") else {
        return Ok(Verdict::Usage);
    };
    let limits = args.each.limits();
    let background = match taskproof_background::scenario::load_builtin() {
        Ok(b) => b,
        Err(errors) => {
            return usage(
                errors
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("\n"),
            );
        }
    };
    let mut bg_probes: Vec<Option<BackgroundProbe>> = Vec::new();
    for r in &rows {
        bg_probes.push(match &r.probe {
            RowProbe::Background(id, rule) => {
                let Some(s) = background.iter().find(|s| &s.id == id) else {
                    return usage(format!("row {}: no background scenario {id}", r.id));
                };
                Some(BackgroundProbe {
                    scenario: s.clone(),
                    rule: rule.parse().map_err(anyhow::Error::msg)?,
                    limits,
                })
            }
            _ => None,
        });
    }
    let mut probes: Vec<Option<ScenarioProbe>> = Vec::new();
    for r in &rows {
        probes.push(match &r.probe {
            RowProbe::Scenario(id) | RowProbe::Step(id, _) => {
                let Some(s) = all.iter().find(|s| &s.id == id) else {
                    return usage(format!("row {}: no scenario {id}", r.id));
                };
                let step = match &r.probe {
                    RowProbe::Step(_, n) => Some(*n),
                    _ => None,
                };
                Some(
                    ScenarioProbe::new(s.clone(), step, Change::Verdict, limits)
                        .map_err(anyhow::Error::msg)?,
                )
            }
            _ => None,
        });
    }
    let published = match bisect::versions::published(&args.target, args.each.versions.as_deref()) {
        Ok(p) => p,
        Err(e) => return usage(e),
    };
    let versions: Vec<String> = match published.range(&args.target, args.each.order) {
        Ok(r) => r.into_iter().map(|r| r.version).collect(),
        Err(e) => return usage(e),
    };
    let mut cache = match Cache::load(&args.cache) {
        Ok(c) => c,
        Err(e) => return usage(e),
    };
    if matches!(args.target.family, bisect::Family::ClaudeCode(_)) {
        for dir in &args.reports {
            if !dir.is_dir() {
                return usage(format!("--reports {}: not a folder", dir.display()));
            }
            let n = timeline::seeds::add_reports_dir(dir, &rows, &mut cache);
            println!("{n} run report(s) read under {}", dir.display());
        }
        timeline::seeds::add_known(&args.repo, &rows, &mut cache);
    }
    let range = format!(
        "{}@{}..{}",
        args.target.family.name(),
        versions[0],
        versions[versions.len() - 1]
    );
    println!(
        "taskproof versions timeline {range}: {} rows, {} versions, {} samples per row{}",
        rows.len(),
        versions.len(),
        args.samples,
        if args.no_run { " (--no-run)" } else { "" }
    );
    let mut t = Timeline {
        range,
        versions: versions.clone(),
        rows: Vec::new(),
        samples: args.samples,
        vouches: match vouches(&args.repo) {
            Ok(v) => v,
            Err(e) => return usage(e),
        },
    };
    let family = args.target.family.clone();
    let repeat = args.each.repeat as usize;
    for ((row, probe), bg_probe) in rows.iter().zip(&probes).zip(&bg_probes) {
        let mut run = |v: &str| -> Option<Judged> {
            if args.no_run {
                return None;
            }
            // A Claude Code row runs in its own configuration.
            let target = match match &family {
                bisect::Family::ClaudeCode(_) => bisect::Family::ClaudeCode(row.config).target(v),
                other => other.target(v),
            } {
                Ok(t) => t,
                Err(e) => return Some(Judged::Unusable(e)),
            };
            let judged = bisect::repeated(repeat, || match (&row.probe, probe) {
                (RowProbe::Scenario(_) | RowProbe::Step(..), Some(p)) => p.judge(&target),
                (RowProbe::Race(w, a), _) => RaceProbe {
                    workload: *w,
                    anomaly: *a,
                    writers: 4,
                    ops: 5,
                    seed: 1,
                    limits,
                }
                .judge(&target),
                (RowProbe::Background(..), _) => match bg_probe {
                    Some(p) => p.judge(&target),
                    None => Judged::Unusable("a background row without its scenario".into()),
                },
                (RowProbe::Scenario(_) | RowProbe::Step(..), None) => {
                    Judged::Unusable("a scenario row without its scenario".into())
                }
            });
            Some(without_stderr(judged))
        };
        let mut progress = |line: &str| {
            println!("{line}");
            let _ = std::io::stdout().flush();
        };
        let built = build_row(
            row,
            &versions,
            args.samples,
            &mut cache,
            &mut run,
            &mut progress,
        );
        println!(
            "{}: {} change(s){}; {} version(s) run",
            row.id,
            built.changes.len(),
            if built.changes.is_empty() {
                String::new()
            } else {
                format!(
                    " ({})",
                    built
                        .changes
                        .iter()
                        .map(|c| format!("{} -> {}", versions[c.before], versions[c.after]))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            },
            built.runs
        );
        t.rows.push(built);
    }
    if let Err(e) = cache.save() {
        return usage(e);
    }
    // A claim anchored to nothing the pages show would have its word said nowhere.
    for v in t.unmatched(&timeline::rows::claude_code()) {
        eprintln!(
            "taskproof versions timeline: warning: {}: claim {}: its timeline anchor {} matches no row \
             and no change point of this timeline, so the pages say nothing of it",
            args.repo.join(crate::claims::DEFAULT_REGISTER).display(),
            v.claim,
            v.anchor
        );
    }
    std::fs::create_dir_all(&args.out)?;
    let md = args.out.join("timeline.md");
    let html = args.out.join("timeline.html");
    std::fs::write(&md, timeline::page::markdown(&t))
        .map_err(|e| anyhow::anyhow!("write {}: {e}", md.display()))?;
    std::fs::write(&html, timeline::page::html(&t))
        .map_err(|e| anyhow::anyhow!("write {}: {e}", html.display()))?;
    println!(
        "wrote {}, {} and {}",
        md.display(),
        html.display(),
        args.cache.display()
    );
    Ok(Verdict::Clean)
}
