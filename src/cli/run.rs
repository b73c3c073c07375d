//! `taskproof run`: load scenarios (the built-in suite unless paths are given), pick the ones
//! to run, run them against a target and report. Exit status ([`super::exit`]): 0 when
//! nothing failed or errored, 1 when a scenario failed, 3 when the target could not start or
//! broke the protocol with no failure found, 2 when the command could not run as asked (a
//! bad flag, a malformed scenario or skip file, a report that cannot be written).

use std::path::PathBuf;
use std::str::FromStr;

use super::verdict::{Reporters, Verdict, conclude};
use taskproof_profile::{Choice, Mode, Profile};
use taskproof_report::Event;
use taskproof_report::output::Output;
use taskproof_reporters::terminal::TerminalReporter;
use taskproof_scenario::{RunConfig, Scenario, SkipList, load_builtin, load_paths, run_suite};
use taskproof_targets::TargetSpec;

#[derive(Debug, clap::Args)]
#[command(after_long_help = "\
Examples:
  taskproof run
  taskproof run --target naive --keep-going
  taskproof run my-scenarios/ --target 'cmd:node adapter.js' --start-timeout 120
  taskproof run --target 'cmd:python3 examples/adapters/python/s07_adapter.py' --profile s07
  taskproof run --target naive --report junit:out/junit.xml --report md:out/summary.md
  taskproof run --filter 'rt*' --partition 1/4 --skip-file known-failures.txt
  taskproof run --target 'mcp:my-server' --mapping my-server.toml --export failures/
  taskproof scenarios export my-scenarios/
  taskproof run --suite background
  taskproof run --suite background --target mutant:double-notify --report md:out/bg.md
  taskproof run --suite background --target 'bg-cmd:python3 examples/adapters/background/runner.py --output-cap 1048576'

Without PATHS the built-in suite runs (`taskproof scenarios list` shows it). With --suite
background, the background-task suite runs instead (docs/background.md): its scenarios
(background/scenarios/, or PATHS in that format) against a background-task target:
reference (the reference runner, served by this binary), mutant:NAME (one of its rules
broken: double-notify, drop-concurrent, kill-no-cleanup, no-death-cleanup, status-not-final,
failure-notified-as-success, offset-ignored, evict-early, counter-ids, no-output-cap),
in-process:reference, or bg-cmd:COMMAND (a runner speaking the background protocol).
Background scenarios run one at a time (they time kills against completions).

Exit status: 0 when nothing failed or errored (skips are fine), 1 when a scenario failed,
2 on a usage error or a malformed scenario or skip file, 3 when the target could not start,
or broke the protocol (hung, crashed, garbage) and no scenario failed.")]
pub struct Args {
    /// Scenario files or folders (searched recursively for *.json) [default: the built-in
    /// suite].
    pub paths: Vec<PathBuf>,
    // The store kinds come from the registry (`taskproof_targets::KINDS`).
    #[arg(long, short, default_value = "reference", help = format!(
        "{}. With --suite background, a background-task target: reference, mutant:NAME, \
         in-process:reference or bg-cmd:COMMAND",
        taskproof_targets::target_help()
    ))]
    pub target: String,
    /// Which suite: store (agent task stores, the default) or background (background-task
    /// runners: docs/background.md).
    #[arg(long, default_value = "store", value_parser = ["store", "background"])]
    pub suite: String,
    #[command(flatten)]
    pub mapping: super::common::MappingOpt,
    /// The profile the target is held to: strict, a recorded profile built in (see
    /// `taskproof profile list`), a recorded profile file's path (*.json, written by
    /// `taskproof profile record`), or written:cc-2.1.17 / written:s07 (the expectations written
    /// into the scenario files under those names, as fuzz's replay lines use them)
    /// [default: strict; hand-written-files for naive].
    #[arg(long, short, value_parser = parse_profile)]
    pub profile: Option<Choice>,
    /// Scenarios run at once [default: the number of CPUs; for cmd: targets twice that, at
    /// least 4].
    #[arg(long, short, default_value_t = 0, hide_default_value = true)]
    pub jobs: usize,
    /// Run only scenarios whose id matches this glob (repeatable: any match).
    #[arg(long, value_name = "GLOB")]
    pub filter: Vec<String>,
    /// Run shard K of N: the K-th of every N scenarios in id order (round-robin).
    #[arg(long, value_name = "K/N")]
    pub partition: Option<Partition>,
    /// Scenarios expected to fail, one id and reason per line (see docs/reports.md).
    #[arg(long, value_name = "FILE")]
    pub skip_file: Vec<PathBuf>,
    #[command(flatten)]
    pub limits: super::common::Limits,
    /// Run every step of a failing scenario and report every difference, instead of
    /// stopping at its first failing step.
    #[arg(long)]
    pub keep_going: bool,
    /// Scenarios prepared ahead, each on a fresh empty root with its first sessions already
    /// started, while earlier ones run; concurrent lanes also start together (0: start each
    /// session alone, where it is first used).
    #[arg(long, value_name = "N", default_value_t = taskproof_scenario::DEFAULT_START_AHEAD)]
    pub start_ahead: usize,
    /// With a target driven by a scripted model (claude-code@VERSION), keep the model's own
    /// log in DIR: every request the CLI sent and every answer, one JSON line each, a file
    /// per scenario (docs/claude-code.md, "The model's log"), so a verdict can be checked
    /// against what the CLI really sent.
    #[arg(long, value_name = "DIR")]
    pub model_log: Option<PathBuf>,
    /// Write each failing scenario into DIR/ID/ for the store's maintainer: README.md (what
    /// failed, the rules, the versions, expected and got, the command), and for a cmd: or
    /// mcp: target the lines each process was sent and answered (process-N.in.jsonl,
    /// process-N.out.jsonl, wire.jsonl) and replay.sh, which reproduces the run with only
    /// the store and a shell (docs/reports.md, "Exporting failures").
    #[arg(long, value_name = "DIR")]
    pub export: Option<PathBuf>,
    #[command(flatten)]
    pub output: super::common::OutputOpts,
}

/// `--partition K/N`, 1 <= K <= N.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Partition {
    pub k: usize,
    pub n: usize,
}

impl FromStr for Partition {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let parsed = s
            .split_once('/')
            .and_then(|(k, n)| Some((k.parse::<usize>().ok()?, n.parse::<usize>().ok()?)));
        match parsed {
            Some((k, n)) if k >= 1 && k <= n => Ok(Partition { k, n }),
            _ => Err(format!("expected K/N with 1 <= K <= N, got {s:?}")),
        }
    }
}

impl Partition {
    /// Keeps shard K of the scenarios (store or background), which must be sorted by id:
    /// scenario i (from 0) belongs to shard i mod N + 1.
    pub fn apply<S>(self, scenarios: Vec<S>) -> Vec<S> {
        scenarios
            .into_iter()
            .enumerate()
            .filter(|(i, _)| i % self.n + 1 == self.k)
            .map(|(_, s)| s)
            .collect()
    }
}

/// `--report KIND:PATH`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReportSpec {
    Json(PathBuf),
    Junit(PathBuf),
    Markdown(PathBuf),
}

impl FromStr for ReportSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (kind, path) = s
            .split_once(':')
            .filter(|(_, p)| !p.is_empty())
            .ok_or_else(|| format!("expected json:PATH, junit:PATH or md:PATH, got {s:?}"))?;
        let path = PathBuf::from(path);
        match kind {
            "json" => Ok(ReportSpec::Json(path)),
            "junit" => Ok(ReportSpec::Junit(path)),
            "md" => Ok(ReportSpec::Markdown(path)),
            other => Err(format!(
                "unknown report kind {other:?}; expected json, junit or md"
            )),
        }
    }
}

/// The scenarios of `paths` (the built-in suite when none is given), or `None` after
/// printing every scenario file error as `taskproof COMMAND: …` and the count, ending with
/// what the command did not do.
pub(super) fn scenarios_or_errors(
    paths: &[PathBuf],
    command: &str,
    not_done: &str,
) -> Option<Vec<Scenario>> {
    let loaded = if paths.is_empty() {
        load_builtin()
    } else {
        load_paths(paths)
    };
    match loaded {
        Ok(s) => Some(s),
        Err(errors) => {
            for e in &errors {
                eprintln!("taskproof {command}: {e}");
            }
            eprintln!(
                "taskproof {command}: {} scenario file error(s); {not_done}",
                errors.len()
            );
            None
        }
    }
}

pub fn run(args: Args) -> anyhow::Result<Verdict> {
    if args.suite == "background" {
        return run_background(args);
    }
    let target: TargetSpec = match args.target.parse() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("taskproof run: invalid --target {:?}: {e}", args.target);
            return Ok(Verdict::Usage);
        }
    };
    let target = target
        .with_mapping(args.mapping.mapping.as_deref())
        .map_err(anyhow::Error::msg)?;
    let usage = |msg: String| {
        eprintln!("taskproof run: {msg}");
        Ok(Verdict::Usage)
    };
    let Some(scenarios) = scenarios_or_errors(&args.paths, "run", "nothing was run") else {
        return Ok(Verdict::Usage);
    };
    let mut skips = SkipList::default();
    for f in &args.skip_file {
        if let Err(e) = skips.add_file(f) {
            return usage(e.to_string());
        }
    }
    if let Err(e) = skips.check_known(scenarios.iter().map(|s| s.id.as_str())) {
        return usage(e.to_string());
    }
    let selected = match select(scenarios, |s| &s.id, &args, "scenario") {
        Ok(s) => s,
        Err(e) => return usage(e),
    };
    if let Some(dir) = &args.export
        && let Err(e) = export_dir_ok(dir)
    {
        return usage(e);
    }
    if let Some(code) = super::prepare_target(&target) {
        return Ok(code);
    }
    let choice = match args.profile.clone() {
        Some(c) => c,
        None => default_choice(&target)?,
    };
    if let Choice::Recorded(r) = &choice {
        println!(
            "holding the target to the recorded profile {} ({}): strict's steps, each as the recording saw it",
            r.name, r.file
        );
    }
    let (profile, mode) = match choice {
        Choice::Written(p) => (p, Mode::Expectations),
        // A recorded profile is strict's steps, each held to what the recording saw.
        Choice::Recorded(r) => (Profile::Strict, Mode::Hold(r)),
    };
    let config = RunConfig {
        profile,
        mode,
        target,
        timeout: args.limits.timeout.0,
        start_timeout: args.limits.start_timeout.0,
        keep_going: args.keep_going,
        start_ahead: args.start_ahead,
        jobs: args.jobs,
        durable: false,
        skips,
        delays: Default::default(),
        model_log: args.model_log.clone(),
        export: args.export.clone(),
    };
    let mut reporters = reporters_of(&args);
    let suite = run_suite(&selected, &config, &mut |e: &Event<'_>| reporters.emit(e));
    Ok(conclude("run", reporters, Verdict::of_suite(&suite)))
}

/// The reporters `--report` asks for, then the terminal's.
fn reporters_of(args: &Args) -> Reporters {
    Reporters::new(
        &args.output.report,
        Box::new(TerminalReporter::new(
            std::io::stdout().lock(),
            Output::from_env(),
            args.output.color.color.into(),
        )),
    )
}

/// `taskproof run --suite background`: the background scenarios against a background-task
/// target (crates/background/src/suite.rs), reported like the store suite.
fn run_background(args: Args) -> anyhow::Result<Verdict> {
    use taskproof_background::scenario::{load_builtin as bg_builtin, load_paths as bg_paths};
    use taskproof_background::suite::{BgConfig, run_suite as bg_run_suite};
    use taskproof_background::{BgOpen, BgTarget};
    let usage = |msg: String| {
        eprintln!("taskproof run: {msg}");
        Ok(Verdict::Usage)
    };
    let target: BgTarget = match args.target.parse() {
        Ok(t) => t,
        Err(e) => return usage(format!("invalid --target {:?}: {e}", args.target)),
    };
    if args.profile.is_some() || args.mapping.mapping.is_some() || !args.skip_file.is_empty() {
        return usage(
            "--profile, --mapping and --skip-file are for the store suite; the background suite holds every target to docs/background.md".into(),
        );
    }
    if args.export.is_some() {
        return usage(
            "--export is for the store suite: a background scenario's runner is not replayed by pipe".into(),
        );
    }
    if args.keep_going {
        return usage(
            "--keep-going is for the store suite: a background scenario always runs every step and judges everything it saw".into(),
        );
    }
    let loaded = if args.paths.is_empty() {
        bg_builtin()
    } else {
        bg_paths(&args.paths)
    };
    let selected = match loaded {
        Ok(s) => s,
        Err(errors) => {
            for e in &errors {
                eprintln!("taskproof run: {e}");
            }
            return usage(format!(
                "{} background scenario file error(s); nothing was run",
                errors.len()
            ));
        }
    };
    let selected = match select(selected, |s| &s.id, &args, "background scenario") {
        Ok(s) => s,
        Err(e) => return usage(e),
    };
    // A published version is installed before any session opens, so a download is never
    // charged to a session's start-up.
    if let BgTarget::ClaudeCode(cc) = &target
        && let Some(code) = super::prepare_target(&TargetSpec::from(cc.clone()))
    {
        return Ok(code);
    }
    let config = BgConfig {
        target,
        open: BgOpen {
            limits: taskproof_background::protocol::Limits {
                timeout: args.limits.timeout.0,
                start_timeout: args.limits.start_timeout.0,
            },
            output_cap: None,
            model_log: None,
        },
        model_log: args.model_log.clone(),
    };
    let mut reporters = reporters_of(&args);
    let suite = bg_run_suite(&selected, &config, &mut |e: &Event<'_>| reporters.emit(e));
    Ok(conclude("run", reporters, Verdict::of_suite(&suite)))
}

/// Whether `--export DIR` can be written: a folder (made if missing) in which a file can be
/// created; the error names the folder and why not.
fn export_dir_ok(dir: &std::path::Path) -> Result<(), String> {
    let named = |why: String| format!("--export {}: {why}", dir.display());
    if dir.exists() && !dir.is_dir() {
        return Err(named("not a folder".into()));
    }
    std::fs::create_dir_all(dir).map_err(|e| named(format!("cannot make the folder: {e}")))?;
    tempfile::Builder::new()
        .prefix(".taskproof-export-")
        .tempfile_in(dir)
        .map(drop)
        .map_err(|e| named(format!("cannot write in it: {e}")))
}

fn parse_profile(s: &str) -> Result<Choice, String> {
    Choice::resolve(s)
}

/// The profile a run holds a target to when `--profile` is not given: the target's
/// [`TargetSpec::run_profile`] (the recording of the naive store for `naive`, which was made
/// to behave that way; `strict` for every other).
pub fn default_choice(target: &TargetSpec) -> anyhow::Result<Choice> {
    Choice::resolve(target.run_profile()).map_err(anyhow::Error::msg)
}

/// The scenarios `--filter` and `--partition` leave, in order; an error when a filter
/// leaves none (`what` names them in it).
fn select<S>(
    mut items: Vec<S>,
    id: impl Fn(&S) -> &str,
    args: &Args,
    what: &str,
) -> Result<Vec<S>, String> {
    if !args.filter.is_empty() {
        let filter = Filter::new(&args.filter)?;
        items.retain(|s| filter.matches(id(s)));
        if items.is_empty() {
            return Err(format!(
                "no {what} id matches --filter {}",
                args.filter.join(", ")
            ));
        }
    }
    Ok(match args.partition {
        Some(p) => p.apply(items),
        None => items,
    })
}

/// The `--filter` globs: an id is kept when any of them matches it.
struct Filter(Vec<glob::Pattern>);

impl Filter {
    /// The globs, or the usage error naming the first that is not one.
    fn new(filters: &[String]) -> Result<Filter, String> {
        filters
            .iter()
            .map(|f| glob::Pattern::new(f).map_err(|e| format!("--filter {f:?}: {e}")))
            .collect::<Result<_, _>>()
            .map(Filter)
    }

    fn matches(&self, id: &str) -> bool {
        self.0.iter().any(|g| g.matches(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Seconds;

    #[test]
    fn filters_are_shell_globs_and_a_bad_one_is_named() {
        let ids = [
            "rt01-create",
            "rt02-list",
            "rt03-get",
            "s4-ids",
            "s4-ids-x",
            "rt0{1,3}",
        ];
        let kept = |filters: &[&str]| -> Vec<&str> {
            let f = Filter::new(&filters.iter().map(|s| s.to_string()).collect::<Vec<_>>());
            let f = f.unwrap();
            ids.into_iter().filter(|id| f.matches(id)).collect()
        };
        // Any of the globs: a class, a star, a whole id.
        assert_eq!(
            kept(&["rt0[13]*", "*-ids"]),
            ["rt01-create", "rt03-get", "s4-ids"]
        );
        assert_eq!(kept(&["rt0?-list"]), ["rt02-list"]);
        // Braces are not alternation (docs/reports.md): `{1,3}` is the text itself.
        assert_eq!(kept(&["rt0{1,3}*"]), ["rt0{1,3}"]);
        let Err(e) = Filter::new(&["ok*".into(), "rt0[".into()]) else {
            panic!("rt0[ is not a glob")
        };
        assert!(e.starts_with("--filter \"rt0[\": "), "{e}");
    }

    #[test]
    fn partitions_are_round_robin_and_cover_everything() {
        assert!("0/3".parse::<Partition>().is_err());
        assert!("4/3".parse::<Partition>().is_err());
        assert!("1-3".parse::<Partition>().is_err());
        let ids: Vec<usize> = (0..7).collect();
        let mut seen = Vec::new();
        for k in 1..=3 {
            let p = Partition { k, n: 3 };
            let shard: Vec<usize> = ids.iter().copied().filter(|i| i % p.n + 1 == p.k).collect();
            seen.extend(shard);
        }
        seen.sort();
        assert_eq!(seen, ids);
    }

    #[test]
    fn report_specs_parse() {
        assert_eq!(
            "json:out/r.json".parse(),
            Ok(ReportSpec::Json("out/r.json".into()))
        );
        assert_eq!("md:s.md".parse(), Ok(ReportSpec::Markdown("s.md".into())));
        assert!("xml:a".parse::<ReportSpec>().is_err());
        assert!("json:".parse::<ReportSpec>().is_err());
        assert!("1.5".parse::<Seconds>().is_ok());
        assert!("0".parse::<Seconds>().is_err());
    }
}
