//! `taskproof fuzz`: the generative differential fuzzer (see `docs/fuzzing.md`).

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::Context;

use super::exit;
use crate::fuzz::driver::Setup;
use crate::fuzz::run::{Outcome, Plan, finding_path, fuzz, write_finding};
use crate::profile::Profile;
use crate::target::{SessionOptions, TargetSpec};

#[derive(Debug, clap::Args)]
#[command(after_long_help = "\
Examples:
  taskproof fuzz --cases 1000
  taskproof fuzz --target mutant:no-mirror --seed 7 --out findings
  taskproof fuzz --target 'cmd:python3 adapter.py' --cases 200 --steps 30
  taskproof fuzz --target naive --profile cc-2.1.17

Exit status: 0 when every case agreed with the model, 1 on a divergence (written to
--out as a scenario file), 2 when the fuzzer could not run.")]
pub struct Args {
    /// The store under test: reference, naive, mutant:NAME or cmd:COMMAND.
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
    /// Where a finding's scenario file is written.
    #[arg(long, default_value = "fuzz-findings")]
    pub out: PathBuf,
    /// Seconds a target may take to answer one request.
    #[arg(long, default_value_t = 10)]
    pub timeout: u64,
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    let profile = args
        .profile
        .unwrap_or_else(|| args.target.default_profile());
    if crate::model::Model::new(profile).is_none() {
        eprintln!(
            "taskproof fuzz: profile {profile} has no model to compare with; use strict or cc-2.1.17"
        );
        return Ok(exit::USAGE);
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
                timeout: std::time::Duration::from_secs(args.timeout.max(1)),
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
    };
    let show_bar = std::io::stderr().is_terminal() && std::env::var_os("CI").is_none();
    eprintln!(
        "fuzzing {} against the {profile} model: {} cases of up to {} steps, seed {seed}",
        args.target, args.cases, plan.steps
    );
    let bar = show_bar.then(|| {
        let b = indicatif::ProgressBar::new(u64::from(args.cases));
        b.set_style(
            indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} cases {per_sec} {eta}")
                .expect("a valid template"),
        );
        b
    });
    let started = std::time::Instant::now();
    let outcome = fuzz(&plan, &|n| {
        if let Some(b) = &bar {
            b.set_position(u64::from(n));
        }
    });
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let outcome = outcome.map_err(|e| anyhow::anyhow!("{e}"))?;
    let secs = started.elapsed().as_secs_f64();
    match outcome {
        Outcome::Clean { cases } => {
            println!(
                "{cases} cases agreed with the {profile} model ({:.0} cases/s), seed {seed}",
                f64::from(cases) / secs.max(1e-9)
            );
            Ok(exit::OK)
        }
        Outcome::Found { finding, cases, .. } => {
            let path = finding_path(&args.out, &finding);
            let new = write_finding(&args.out, &finding)
                .with_context(|| format!("failed to write {}", path.display()))?;
            println!(
                "divergence after {cases} cases (seed {seed}): {}",
                finding.summary
            );
            println!("rules: {}", finding.rules.join(", "));
            if new {
                println!("wrote {}", path.display());
            } else {
                println!("known finding: {} already exists", path.display());
            }
            println!(
                "replay: taskproof run {} --target {} --profile {profile}",
                path.display(),
                shell_word(&args.target.to_string())
            );
            Ok(exit::FOUND)
        }
    }
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
