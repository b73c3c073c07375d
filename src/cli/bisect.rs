//! `taskproof versions bisect`: which published version of a target changed a behaviour
//! (docs/bisect.md).

use super::verdict::Verdict;
use std::io::Write;
use std::path::PathBuf;

use crate::bisect::{
    self, Change, Found, Judged, Limits, Order, RaceProbe, Range, ScenarioProbe, parse_anomaly,
};
use taskproof_race::Workload;

#[derive(Debug, clap::Args)]
#[command(after_long_help = "\
The range's last version decides what the new behaviour is; bisect looks for the first
version from which every version behaves as it does, assuming one change in the range
(old ... old new ... new), and runs the first version only when it must. It prints each
version as it is judged, then the last version before the change and the first after,
with the failing step's witness and the other version's answer at that step.

Versions are taken in version-number order by default. --order published takes npm's
publication times (`npm view PACKAGE time`) instead; the registry answering here dates
2.1.19 before 2.1.17, so that order reverses ranges that version numbers keep (see
docs/bisect.md). npm's answer is cached for an hour in the Claude Code cache folder
(TASKPROOF_CLAUDE_CODE_CACHE), beside the installed versions.

A version that cannot be installed or started, or whose target breaks the protocol, is
skipped and named; with --repeat K a version whose K runs disagree is flaky, named with
each answer, and skipped too. Neither is guessed to be on one side.

Ranges: claude-code@A..B (B may be `latest`), or any target spec with {version} in it
given its versions with --versions FILE (a JSON array of versions, or npm view's JSON):
  --target 'cmd:sh my-adapter.sh {version}@1.0.0..1.4.2' --versions versions.json

Exit status: 0 when the change was named, 1 when the first and last versions behave
alike, 2 on bad input (nothing installed), 3 when no answer could be had (an end of the
range could not be run or was flaky).

Examples:
  taskproof versions bisect --target 'claude-code@2.1.17..2.1.112' --scenario ids-never-reused-after-delete-and-restart
  taskproof versions bisect --target 'claude-code@2.1.20..latest' --scenario rt07-deletion --step 4 --change answer
  taskproof versions bisect --target 'claude-code@2.1.17..2.1.112' --workload create --anomaly duplicate_ids --repeat 2")]
pub struct Args {
    /// The versions: KIND@A..B, e.g. claude-code@2.1.17..2.1.112 or claude-code@2.1.17..latest.
    #[arg(long, short, value_name = "KIND@A..B")]
    pub target: Range,
    /// The scenario whose behaviour changes (an id of the built-in suite, or of PATHS).
    #[arg(long, value_name = "ID", conflicts_with_all = ["workload", "anomaly"])]
    pub scenario: Option<String>,
    /// Only this step of the scenario (its index in `steps`, a request).
    #[arg(long, value_name = "N", requires = "scenario")]
    pub step: Option<usize>,
    /// A race workload instead of a scenario (with --anomaly).
    #[arg(long, value_name = "W", requires = "anomaly")]
    pub workload: Option<Workload>,
    /// The race anomaly whose presence changes: lost, duplicate_ids, torn_writes,
    /// corrupt_files, double_claims, cycles, half_edges, nonlinearizable.
    #[arg(long, value_name = "KIND", value_parser = parse_anomaly, requires = "workload")]
    pub anomaly: Option<taskproof_race::AnomalyKind>,
    /// What counts as the change [default: verdict for a scenario, anomaly for a race].
    #[arg(long, value_enum)]
    pub change: Option<Change>,
    #[command(flatten)]
    pub each: EachVersion,
    /// Race writers per run.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub writers: u32,
    /// Requests per race writer.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub ops: u32,
    /// Seed of the race's plans.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Scenario files or folders to find --scenario in [default: the built-in suite].
    pub paths: Vec<PathBuf>,
}

/// Which versions of the range are taken, in what order, and how each is judged: the
/// options `bisect` and `timeline` share.
#[derive(clap::Args, Debug)]
#[command(
    mut_arg("timeout", |a| a.default_value("60")),
    mut_arg("start_timeout", |a| a.default_value("120")),
)]
pub struct EachVersion {
    /// Runs of each version before it is judged; runs that disagree make it flaky.
    #[arg(long, value_name = "K", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub repeat: u32,
    /// The order of the versions.
    #[arg(long, value_enum, default_value = "version")]
    pub order: Order,
    /// The published versions, from a file instead of the registry (a JSON array of
    /// versions, or `npm view PACKAGE time versions dist-tags --json`).
    #[arg(long, value_name = "FILE")]
    pub versions: Option<PathBuf>,
    #[command(flatten)]
    pub limits: super::common::Limits,
}

impl EachVersion {
    /// How long a version's requests and sessions may take.
    pub fn limits(&self) -> Limits {
        Limits {
            timeout: self.limits.timeout.0,
            start_timeout: self.limits.start_timeout.0,
        }
    }
}

/// How one version is judged.
enum Probe {
    Scenario(ScenarioProbe),
    Race(RaceProbe),
}

pub fn run(args: Args) -> anyhow::Result<Verdict> {
    let usage = |msg: String| {
        eprintln!("taskproof versions bisect: {msg}");
        Ok(Verdict::Usage)
    };
    let limits = args.each.limits();
    // Everything is checked before anything is installed.
    let (probe, what) = match (&args.scenario, args.workload, args.anomaly) {
        (Some(id), _, _) => {
            let Some(all) =
                super::run::scenarios_or_errors(&args.paths, "bisect", "nothing was run")
            else {
                return Ok(Verdict::Usage);
            };
            let Some(s) = all.iter().find(|s| &s.id == id).cloned() else {
                let near: Vec<&str> = all
                    .iter()
                    .map(|s| s.id.as_str())
                    .filter(|x| x.contains(id.as_str()) || id.contains(*x))
                    .collect();
                let hint = if near.is_empty() {
                    "`taskproof scenarios list` lists them".to_string()
                } else {
                    format!("did you mean {}?", near.join(", "))
                };
                return usage(format!("--scenario {id}: no such scenario; {hint}"));
            };
            let change = args.change.unwrap_or(Change::Verdict);
            let what = match args.step {
                Some(n) => format!("{id} steps[{n}], change: {}", change.as_str()),
                None => format!("{id}, change: {}", change.as_str()),
            };
            match ScenarioProbe::new(s, args.step, change, limits) {
                Ok(p) => (Probe::Scenario(p), what),
                Err(e) => return usage(e),
            }
        }
        (None, Some(w), Some(a)) => {
            if let Some(c) = args.change.filter(|c| *c != Change::Anomaly) {
                return usage(format!(
                    "--change {} is for scenarios; a race's change is its anomaly",
                    c.as_str()
                ));
            }
            let what = format!(
                "race {w} ({} writers x {} ops, seed {}), change: {} found or not",
                args.writers,
                args.ops,
                args.seed,
                a.name()
            );
            (
                Probe::Race(RaceProbe {
                    workload: w,
                    anomaly: a,
                    writers: args.writers as usize,
                    ops: args.ops as usize,
                    seed: args.seed,
                    limits,
                }),
                what,
            )
        }
        _ => return usage("give --scenario ID, or --workload W --anomaly KIND".into()),
    };
    let published = match bisect::versions::published(&args.target, args.each.versions.as_deref()) {
        Ok(p) => p,
        Err(e) => return usage(e),
    };
    let releases = match published.range(&args.target, args.each.order) {
        Ok(r) => r,
        Err(e) => return usage(e),
    };
    let versions: Vec<String> = releases.iter().map(|r| r.version.clone()).collect();
    for v in &versions {
        if let Err(e) = args.target.family.target(v) {
            return usage(format!("{}: {v}: {e}", args.target));
        }
    }
    let first = &versions[0];
    let last = &versions[versions.len() - 1];
    let gone: Vec<&String> = published
        .unpublished
        .iter()
        .filter(|u| {
            bisect::versions::by_version(u, first).is_gt()
                && bisect::versions::by_version(u, last).is_lt()
        })
        .collect();
    println!("taskproof versions bisect {}: {what}", args.target);
    println!(
        "{} versions from {first} to {last}, by {} ({}){}; at most {} to run{}",
        versions.len(),
        match args.each.order {
            Order::Version => "version number",
            Order::Published => "publication time",
        },
        published.source,
        if gone.is_empty() {
            String::new()
        } else {
            format!(
                "; unpublished between them and left out: {}",
                gone.iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        },
        bisect::max_runs(versions.len()),
        if args.each.repeat > 1 {
            format!(", each {} times", args.each.repeat)
        } else {
            String::new()
        }
    );
    let _ = std::io::stdout().flush();
    let family = args.target.family.clone();
    let repeat = args.each.repeat as usize;
    let mut judge = |v: &str| -> Judged {
        let target = match family.target(v) {
            Ok(t) => t,
            Err(e) => return Judged::Unusable(e),
        };
        bisect::repeated(repeat, || match &probe {
            Probe::Scenario(p) => p.judge(&target),
            Probe::Race(p) => p.judge(&target),
        })
    };
    let mut count = 0;
    let mut progress = |t: &bisect::Trial| {
        count += 1;
        println!("{}", bisect::trial_line(count, t));
        let _ = std::io::stdout().flush();
    };
    let b = bisect::bisect(&versions, &mut judge, &mut progress);
    print!("{}", bisect::render(&b));
    Ok(match b.found {
        Found::Change { .. } => Verdict::Clean,
        Found::NoChange => Verdict::Found,
        Found::Inconclusive(_) => Verdict::TargetBroke,
    })
}
