//! `taskproof fuzz`: the generative differential fuzzer (see `docs/fuzzing.md`).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;

use super::Seconds;
use super::run::ReportSpec;
use super::verdict::{Reporters, Verdict, conclude};
use taskproof_fuzz::driver::Setup;
use taskproof_fuzz::known::KnownFindings;
use taskproof_fuzz::run::{Plan, RunError, ShrinkLimit, fuzz};
use taskproof_fuzz::strategy::{BetweenRequests, Parallel};
use taskproof_profile::Profile;
use taskproof_report::Event;
use taskproof_report::output::Output;
use taskproof_reporters::terminal::TerminalReporter;
use taskproof_session::SessionOptions;

#[derive(Debug, clap::Args)]
#[command(mut_arg("report", |a| a.help("Also write a report of the run: json:PATH or md:PATH (repeatable)")))]
#[command(after_long_help = "\
Examples:
  taskproof fuzz --cases 1000
  taskproof fuzz --target mutant:no-mirror --seed 7 --out findings
  taskproof fuzz --target 'cmd:node adapter.js' --cases 300 --known known-findings.txt
  taskproof fuzz --target naive --profile hand-written-files --shrink-time 10

The run goes on after a divergence and reports every distinct finding (deduplicated by
fingerprint: the op, the expected and actual answer, the differing fields, the rules). Each
is shrunk within --shrink-runs and --shrink-time, replayed as a scenario, and only then
written to --out as fuzz-FINGERPRINT.json; one whose scenario passes when replayed is
reported as not confirmed and not written.

A --known file lists findings to leave out, one per line: the fingerprint (or the
fuzz-FINGERPRINT.json name), whitespace, and why it is known; `#` starts a comment.

Half of the cases are concurrent (with --parallel above 1): a sequence by one session, then a
parallel part in which two to --parallel sessions each send up to --parallel-steps requests
at once on the same lists, then a few more requests and the final listings. Their answers are
judged together: the history from the parallel part on must be explained by some order of its
requests in which the model answers as the target did (S19; a claim too: S20). A concurrent
finding's scenario has a `concurrent` block with `verify: linearizable`, and is replayed
--replays times: the finding says in how many it failed.

For a target that declares lists the cases share one root and its open sessions, each case
on lists of its own (c0-l, c1-l, ...), so a case costs requests, not process starts;
--fresh-root-per-case gives each case a fresh root and fresh sessions instead.

Sequences are generated from what the target's hello declares: a part it lacks (claim,
delete, owner, metadata, edges at creation, a second list, the in_progress status) is never
generated, and a field of such a part is taken out of a request rather than the request left
out. The last lines say what was sent: requests per op, status changes, answers per op, and
the steps left out and fields taken out, by the part that was missing.

--report json:PATH writes the run as JSON (format version 2: the target, profile, seed,
cases, the parts offered, what was sent and left out, and every finding with its
fingerprint, rules, file, replay command and the time it took to meet); md:PATH a Markdown
summary for a pull request or CI job.

Exit status: 0 when no case diverged but for known or unconfirmed findings, 1 when a
finding was confirmed, 2 on bad arguments or a bad --known file, 3 when the target could
not be started.")]
pub struct Args {
    #[command(flatten)]
    pub on: super::common::TargetOpts,
    /// The profile whose model the target is compared with (default: the target's own;
    /// `strict` and `hand-written-files`, the scenario files' cc-2.1.17, have models).
    #[arg(long, value_parser = taskproof_profile::parse_promises)]
    pub profile: Option<Profile>,
    /// How many random sequences to run.
    #[arg(long, default_value_t = 256)]
    pub cases: u32,
    /// The most steps in one sequence.
    #[arg(long, default_value_t = 24)]
    pub steps: usize,
    /// The seed of the generator (default: random, and printed).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Where findings' scenario files are written.
    #[arg(long, default_value = "fuzz-findings")]
    pub out: PathBuf,
    /// A file of known findings to leave out (repeatable).
    #[arg(long, value_name = "FILE")]
    pub known: Vec<PathBuf>,
    /// The most sequences run to shrink one finding (0: no shrinking).
    #[arg(long, default_value_t = ShrinkLimit::default().runs, value_name = "N")]
    pub shrink_runs: u32,
    /// The most seconds spent shrinking one finding (0: no shrinking).
    #[arg(long, default_value_t = ShrinkLimit::default().time.as_secs(), value_name = "SECS")]
    pub shrink_time: u64,
    /// Stop after this many confirmed findings (default: run every case).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_findings: Option<u32>,
    /// Start no case after SECS seconds of the run (shrinking and replays count): a budget
    /// of time instead of cases, the same for a fast store and a slow one. The run ends at
    /// whichever of --cases and --time-limit comes first.
    #[arg(long, value_name = "SECS")]
    pub time_limit: Option<Seconds>,
    /// Start each case's target only when the case starts. By default the next case's fresh
    /// root and first session are made while a case runs (still one fresh root and process
    /// per case); this turns that off, for measuring what it saves or for a target that
    /// cannot have two of its processes at once.
    #[arg(long)]
    pub no_prestart: bool,
    /// The most sessions in a concurrent case's parallel part (2 to 4); 0 or 1: no parallel
    /// part, every case one sequence.
    #[arg(long, value_name = "N", default_value_t = Parallel::default().lanes,
          value_parser = clap::value_parser!(u8).range(0..=4))]
    pub parallel: u8,
    /// The most requests each session of a parallel part sends (1 to 8).
    #[arg(long, value_name = "N", default_value_t = Parallel::default().steps,
          value_parser = clap::value_parser!(u8).range(1..=8))]
    pub parallel_steps: u8,
    /// How many times a concurrent finding's scenario is replayed before it is written; the
    /// finding says in how many of them it failed (at least one confirms it).
    #[arg(long, value_name = "N", default_value_t = 20,
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub replays: u32,
    /// Give each case a fresh root and fresh sessions even when the target declares lists
    /// (by default such a target's cases share one root and its sessions, each on lists of
    /// its own): to measure what sharing saves, or for a target whose lists are not really
    /// kept apart.
    #[arg(long)]
    pub fresh_root_per_case: bool,
    /// Seconds a target may take to answer one request.
    #[arg(long, value_name = "SECS", default_value = "10")]
    pub timeout: Seconds,
    #[command(flatten)]
    pub output: super::common::OutputOpts,
    /// Generate `wait` steps of up to SECS seconds (0 to 600, in tenths; default 0: none).
    /// A wait shrinks toward no wait.
    #[arg(long, value_name = "SECS", default_value = "0", value_parser = super::race::settle_seconds)]
    pub wait_max: f64,
    /// Generate session events between requests: `clear`, `compact`, and `exit` then
    /// `resume` (Claude Code does each in its terminal UI; a store connection has no
    /// conversation to clear, and its exit and resume close it and open another).
    #[arg(long)]
    pub session_steps: bool,
    /// Seconds each case leaves the store alone after its last step, before the final
    /// listings (0 to 600; default 7 for claude-code targets, whose finished lists are reset
    /// 5 s after their last task is completed, and 0 for others). What vanishes then is a
    /// finding under S14.
    #[arg(long, value_name = "SECS", value_parser = super::race::settle_seconds)]
    pub settle: Option<f64>,
}

pub fn run(args: Args) -> anyhow::Result<Verdict> {
    let target = args
        .on
        .target
        .clone()
        .with_mapping(args.on.mapping())
        .map_err(anyhow::Error::msg)?;
    if args
        .output
        .report
        .iter()
        .any(|r| matches!(r, ReportSpec::Junit(_)))
    {
        eprintln!(
            "taskproof fuzz: --report junit:PATH is for scenario runs; fuzz writes json:PATH or md:PATH"
        );
        return Ok(Verdict::Usage);
    }
    if let Some(code) = super::prepare_target(&target) {
        return Ok(code);
    }
    let profile = args.profile.unwrap_or_else(|| target.default_profile());
    if taskproof_profile::oracle::Oracle::new(profile).is_none() {
        eprintln!(
            "taskproof fuzz: profile {profile} has no model to compare with; use strict or hand-written-files"
        );
        return Ok(Verdict::Usage);
    }
    let mut known = KnownFindings::default();
    for file in &args.known {
        if let Err(e) = known.add_file(file) {
            eprintln!("taskproof fuzz: {e}");
            return Ok(Verdict::Usage);
        }
    }
    let seed = args.seed.unwrap_or_else(rand::random);
    let scratch = tempfile::Builder::new()
        .prefix("taskproof-fuzz-")
        .tempdir()
        .context("failed to make a scratch folder")?;
    let between = BetweenRequests {
        wait_max_tenths: (args.wait_max * 10.0).round() as u16,
        events: args.session_steps,
    };
    let settle = match args.settle {
        Some(s) => Duration::from_secs_f64(s),
        None if target.acts_after_answering() => taskproof_race::driver::DEFAULT_SETTLE,
        None => Duration::ZERO,
    };
    let plan = Plan {
        setup: Setup {
            target: target.clone(),
            profile,
            session_options: SessionOptions {
                timeout: args.timeout.0,
                // fsync buys nothing here: a kill between requests loses no written file.
                durable: false,
                // Waits and user events are what a person does to an agent's session: an
                // agent session is driven as a person drives it (Claude Code: its terminal
                // UI), as a scenario with such steps is (docs/scenario-format.md).
                interactive: between.plays_a_user() || !settle.is_zero(),
                ..SessionOptions::default()
            },
            scratch: scratch.path().to_path_buf(),
            settle,
            reuse: !args.fresh_root_per_case,
        },
        cases: args.cases,
        steps: args.steps.max(1),
        seed,
        files: profile == Profile::Strict,
        between,
        parallel: if args.parallel >= 2 {
            Parallel {
                lanes: args.parallel,
                steps: args.parallel_steps,
            }
        } else {
            Parallel::OFF
        },
        replays: args.replays,
        shrink: ShrinkLimit {
            runs: args.shrink_runs,
            time: Duration::from_secs(args.shrink_time),
        },
        known,
        max_findings: args.max_findings,
        time_limit: args.time_limit.map(|s| s.0),
        prestart: !args.no_prestart,
        out: args.out.clone(),
        mapping: args.on.mapping.mapping.clone(),
    };
    let mut reporters = Reporters::new(
        &args.output.report,
        Box::new(TerminalReporter::new(
            std::io::stdout().lock(),
            Output::from_env(),
            args.output.color.color.into(),
        )),
    );
    let result = fuzz(&plan, &mut |e| {
        e.report(&mut |e: &Event<'_>| reporters.emit(e))
    });
    let report = match result {
        Ok(r) => r,
        Err(RunError::Target(e)) => {
            eprintln!("taskproof fuzz: {e}");
            // The target broke: that is the status; a report error met on the way is still
            // said.
            if let Err(e) = reporters.finish() {
                eprintln!("taskproof fuzz: {e}");
            }
            return Ok(Verdict::TargetBroke);
        }
        Err(RunError::Harness(e)) => return Err(anyhow::anyhow!("{e}")),
    };
    Ok(conclude("fuzz", reporters, Verdict::of_fuzz(&report)))
}
