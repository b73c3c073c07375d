//! `taskproof fuzz`: the generative differential fuzzer (see `docs/fuzzing.md`).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;

use super::exit;
use crate::fuzz::driver::Setup;
use crate::fuzz::known::KnownFindings;
use crate::fuzz::run::{Event, Plan, Report, RunError, ShrinkLimit, ShrinkStop, Written, fuzz};
use crate::profile::Profile;
use crate::report::output::{Output, progress_bar};
use crate::target::{SessionOptions, TargetSpec};

#[derive(Debug, clap::Args)]
#[command(after_long_help = "\
Examples:
  taskproof fuzz --cases 1000
  taskproof fuzz --target mutant:no-mirror --seed 7 --out findings
  taskproof fuzz --target 'cmd:node adapter.js' --cases 300 --known known-findings.txt
  taskproof fuzz --target naive --profile cc-2.1.17 --shrink-time 10

The run goes on after a divergence and reports every distinct finding (deduplicated by
fingerprint: the op, the expected and actual answer, the differing fields, the rules). Each
is shrunk within --shrink-runs and --shrink-time, replayed as a scenario, and only then
written to --out as fuzz-FINGERPRINT.json; one whose scenario passes when replayed is
reported as not confirmed and not written.

A --known file lists findings to leave out, one per line: the fingerprint (or the
fuzz-FINGERPRINT.json name), whitespace, and why it is known; `#` starts a comment.

Exit status: 0 when no case diverged but for known or unconfirmed findings, 1 when a
finding was confirmed, 2 on bad arguments or a bad --known file, 3 when the target could
not be started.")]
pub struct Args {
    /// The store under test: reference, naive, mutant:NAME, cmd:COMMAND, or
    /// claude-code@VERSION (claude-code@latest) for the real, unmodified Claude Code CLI.
    #[arg(long, default_value = "reference")]
    pub target: TargetSpec,
    /// The profile whose model the target is compared with (default: the target's own;
    /// `strict` and `cc-2.1.17` have models).
    #[arg(long)]
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
    /// Seconds a target may take to answer one request.
    #[arg(long, default_value_t = 10)]
    pub timeout: u64,
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    if let Some(code) = super::prepare_target(&args.target) {
        return Ok(code);
    }
    let profile = args
        .profile
        .unwrap_or_else(|| args.target.default_profile());
    if crate::model::Model::new(profile).is_none() {
        eprintln!(
            "taskproof fuzz: profile {profile} has no model to compare with; use strict or cc-2.1.17"
        );
        return Ok(exit::USAGE);
    }
    let mut known = KnownFindings::default();
    for file in &args.known {
        if let Err(e) = known.add_file(file) {
            eprintln!("taskproof fuzz: {e}");
            return Ok(exit::USAGE);
        }
    }
    let seed = args.seed.unwrap_or_else(rand::random);
    let scratch = tempfile::Builder::new()
        .prefix("taskproof-fuzz-")
        .tempdir()
        .context("failed to make a scratch folder")?;
    let plan = Plan {
        setup: Setup {
            target: args.target.clone(),
            profile,
            session_options: SessionOptions {
                timeout: Duration::from_secs(args.timeout.max(1)),
                // fsync buys nothing here: a kill between requests loses no written file.
                durable: false,
                ..SessionOptions::default()
            },
            scratch: scratch.path().to_path_buf(),
        },
        cases: args.cases,
        steps: args.steps.max(1),
        seed,
        files: profile == Profile::Strict,
        shrink: ShrinkLimit {
            runs: args.shrink_runs,
            time: Duration::from_secs(args.shrink_time),
        },
        known,
        max_findings: args.max_findings,
        out: args.out.clone(),
    };
    eprintln!(
        "fuzzing {} against the {profile} model: {} cases of up to {} steps, seed {seed}",
        args.target, args.cases, plan.steps
    );
    if !plan.known.is_empty() {
        eprintln!("leaving out {} known findings", plan.known.len());
    }
    let bar = progress_bar(
        &Output::from_env(),
        u64::from(args.cases),
        "{bar:40} {pos}/{len} cases {per_sec} {eta} {msg}",
    );
    let replay_tail = format!(
        "--target {} --profile {profile}",
        shell_word(&args.target.to_string())
    );
    // Findings are printed as they come, above the progress bar.
    let say = |line: String| match &bar {
        Some(b) => b.println(line),
        None => println!("{line}"),
    };
    let started = std::time::Instant::now();
    let result = fuzz(&plan, &mut |event| match event {
        Event::Case(n) => {
            if let Some(b) = &bar {
                b.set_position(u64::from(*n));
            }
        }
        Event::Diverged { case, fingerprint } => {
            if let Some(b) = &bar {
                b.set_message(format!("shrinking {fingerprint} (case {case})"));
            }
        }
        Event::Found(f) => {
            if let Some(b) = &bar {
                b.set_message("");
            }
            say(format!(
                "divergence after {} cases (seed {seed}): {}",
                f.case, f.finding.summary
            ));
            say(format!(
                "rules: {} (op {}, fingerprint {})",
                crate::rule::join(&f.finding.rules, ", "),
                f.finding.op,
                f.finding.fingerprint
            ));
            let s = &f.shrink;
            let bound = match s.stopped {
                None => String::new(),
                Some(ShrinkStop::Runs) => format!(
                    "; stopped at the --shrink-runs limit ({}), it may not be minimal",
                    plan.shrink.runs
                ),
                Some(ShrinkStop::Time) => format!(
                    "; stopped at the --shrink-time limit ({} s), it may not be minimal",
                    plan.shrink.time.as_secs()
                ),
            };
            say(format!(
                "shrunk from {} to {} steps in {} runs ({:.1} s){bound}",
                s.from_steps,
                s.to_steps,
                s.runs,
                s.elapsed.as_secs_f64()
            ));
            match &f.written {
                Written::New(p) => say(format!("wrote {}", p.display())),
                Written::Existing(p) => {
                    say(format!("known finding: {} already exists", p.display()))
                }
            }
            say(format!(
                "replay: taskproof run {} {replay_tail}",
                f.written.path().display()
            ));
        }
        Event::Unconfirmed(u) => {
            if let Some(b) = &bar {
                b.set_message("");
            }
            say(format!(
                "not confirmed (flaky?): case {} diverged ({}; fingerprint {}), but {}; not written",
                u.case, u.summary, u.fingerprint, u.why
            ))
        }
        Event::Known {
            case,
            fingerprint,
            entry,
        } => say(format!(
            "known finding {fingerprint} in case {case}, left out ({}:{}: {})",
            entry.file.display(),
            entry.line,
            entry.reason
        )),
    });
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let report = match result {
        Ok(r) => r,
        Err(RunError::Target(e)) => {
            eprintln!("taskproof fuzz: {e}");
            return Ok(exit::TARGET);
        }
        Err(RunError::Harness(e)) => return Err(anyhow::anyhow!("{e}")),
    };
    let secs = started.elapsed().as_secs_f64();
    println!("{}", summary(&report, profile, seed, secs));
    Ok(if report.found.is_empty() {
        exit::OK
    } else {
        exit::FOUND
    })
}

/// The last line of a run.
fn summary(r: &Report, profile: Profile, seed: u64, secs: f64) -> String {
    let rate = f64::from(r.cases) / secs.max(1e-9);
    if r.found.is_empty() && r.unconfirmed.is_empty() && r.known.is_empty() {
        return format!(
            "{} cases agreed with the {profile} model ({rate:.0} cases/s), seed {seed}",
            r.cases
        );
    }
    let new = r
        .found
        .iter()
        .filter(|f| matches!(f.written, Written::New(_)))
        .count();
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
    } else {
        ""
    };
    format!(
        "{} cases{stopped}: {} ({rate:.0} cases/s), seed {seed}",
        r.cases,
        parts.join(", ")
    )
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
