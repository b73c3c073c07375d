//! `taskproof race`: concurrent writers against one root, and the anomalies they leave.

use super::run::ReportSpec;
use super::verdict::{Reporters, Verdict, conclude};
use taskproof_profile::Profile;
use taskproof_race::{Config, DriverError, Workload};
use taskproof_report::Event;
use taskproof_report::output::{ColorChoice, Output, progress_bar};
use taskproof_reporters::terminal::TerminalReporter;
use taskproof_targets::TargetSpec;

#[derive(Debug, clap::Args)]
#[command(after_long_help = "\
Workloads:
  metadata       every writer sets metadata keys of its own on one shared task
  fields         writers change different fields (status, owner, subject, activeForm) of one task
  create         every writer creates tasks (duplicate ids, overwritten tasks)
  edges          writers add and remove blockers of one task; pairs add opposite edges at once
  claim          writers race to claim the same pending tasks
  complete       writers complete blockers while others edit the dependents
  delete-update  writers update tasks while another deletes each (none may come back)
  claim-delete   writers claim tasks while another deletes each (none may come back owned)
  all            each in turn

Mixed races: give --target more than once to have sessions of several targets write one list
at once, --writers sessions of each (`--target reference --target claude-code@2.1.112
--writers 2` runs 2 reference sessions and 2 Claude Code sessions). Writers 0..N-1 run the
first target, N..2N-1 the second, and so on. --think SECS spaces each writer's requests, so
that fast and slow targets overlap. The reference then also takes Claude Code's lock
directories, as `taskproof serve mcp` does.

When every target keeps the same files (the layout its hello names, not opaque), they share
the tasks: the first target creates the workload's tasks and lists the end state, and the
report charges each lost acknowledged change to one target: a change made without a lock
(Claude Code's TaskUpdate, every change of naive) to the target that acknowledged it; one made
under the list's lock (every change of the reference, Claude Code's TaskCreate) to an unlocked
writer of the task in flight then, else to the target whose request the checker names.

When their layouts differ or one is opaque (two products writing one folder, each in its own
file names and id scheme), or with --own-tasks, each target keeps its own tasks: its own setup
session creates its share (A's first, then B's, each alone), its writers change only those,
its own final session lists them its own way, and its subjects carry its letter (`A: `,
`B: `). Each target's history is checked on its own; a lost change is its own target's
unless the driver saw another target replace or remove that task's file. The report adds
what each did to the other's files: `.lock` and `.highwatermark` (missing, empty, JSON)
after each phase and who deleted or replaced whose, task files of one target removed or
replaced by another, task files a target's listing hides, and `taskproof check` of the
shared folder. See docs/race.md.

A team as writers: --teammates N makes each --writers session of a Claude Code target with
agent teams (claude-code@VERSION:teams-env) the lead of one CLI in its terminal UI with N
in-process teammates (w1, w2, ...) as writers of their own; each member keeps one turn under
way, so the lead's and the teammates' tool calls overlap. Each target then keeps its own
tasks, and the report charges each lost change to the writer whose write dropped it (A lead,
A w1, B writer 2). Not with --kill.

Anomalies are judged by the profile (--profile; by default the one `run` uses for the
target: hand-written-files for naive, strict otherwise). strict promises every rule;
hand-written-files and hand-written-s07 (the sets the scenario files call cc-2.1.17 and s07;
reports name them so) promise none of the concurrency rules (S7, S8, S18, S19, S20's single
winner), so what the run finds there is reported as an observation, not a failure. The names
cc-2.1.17 and s07 mean recordings of the real stores (`run --profile`) and are refused here.

Exit status: 0 when no run found an anomaly the profile promises against (observations
alone are fine), 1 when one did or a promised linearizability check ran out of budget, 2 on
usage errors, 3 when the target could not be started or broke the protocol.

Examples:
  taskproof race --workload metadata --writers 16 --ops 1000 --no-fsync
  taskproof race --target naive --workload metadata --runs 100 --seed 1
  taskproof race --target 'cmd:taskproof serve adapter --no-fsync' --kill --report json:race.json
  taskproof race --target reference --target claude-code@2.1.112 --writers 2 --ops 20 \
      --workload metadata --think 0.05
  taskproof race --target reference --target \
      'cmd:python3 tests/fixtures/race/other_product.py counting' --writers 2 --ops 20 \
      --workload create --own-tasks --report md:race.md
  taskproof race --target claude-code@2.1.332:teams-env --target claude-code-controller@0.3.0 \
      --writers 1 --teammates 1 --ops 20 --workload metadata --report json:race.json")]
pub struct Args {
    // The kinds' list comes from the registry (`taskproof_targets::KINDS`).
    #[arg(long, default_value = "reference", help = format!(
        "{}. Give it again for a mixed race: --writers sessions of each target on one list",
        taskproof_targets::target_help()
    ))]
    pub target: Vec<TargetSpec>,
    /// The mapping file of an mcp:COMMAND target (docs/mcp-targets.md; `taskproof
    /// mcp-draft COMMAND` writes a draft).
    #[arg(long, value_name = "FILE")]
    pub mapping: Option<std::path::PathBuf>,
    /// What the target promises (strict, hand-written-files, hand-written-s07); anomalies
    /// outside it are observations. Default: hand-written-files for naive, strict otherwise.
    #[arg(long, value_parser = taskproof_profile::parse_promises)]
    pub profile: Option<Profile>,
    /// After the last acknowledgement, keep every writer's session open and idle this many
    /// seconds (0 to 600), then read the list back: a task or change gone then, with no
    /// request in flight, is lost and charged to the target that removed it. Default: 7
    /// (longer than Claude Code's 5 s reset of a finished list) when a target declares that
    /// it changes its store after answering (Claude Code), 0 otherwise (a cmd: adapter, an
    /// in-process store).
    #[arg(long, value_name = "SECS", value_parser = settle_seconds)]
    pub settle: Option<f64>,
    /// How to drive Claude Code targets: `terminal` (its terminal UI in a pseudo-terminal,
    /// as a person uses it; what happens between requests happens only there) or `print`
    /// (`-p` with stream-json). Default: print mode from 2.1.19 on, the terminal UI before
    /// (TASKPROOF_CLAUDE_CODE_DRIVE says the same).
    #[arg(long, value_enum)]
    pub drive: Option<super::Drive>,
    /// The workload to run, or `all`.
    #[arg(long, default_value = "all")]
    pub workload: String,
    /// Writer sessions (separate processes for cmd: targets); of each target in a mixed race.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub writers: u32,
    /// Requests per writer.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    pub ops: u32,
    /// SIGKILL random writers at random moments and start replacements.
    #[arg(long)]
    pub kill: bool,
    /// Seed of the writers' plans and kill moments (random when not given; always reported).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Stop the writers after this many seconds, whatever is left of their plans.
    #[arg(long, value_name = "SECS")]
    pub duration: Option<super::Seconds>,
    /// Write the report: json:PATH, or md:PATH for a Markdown summary (a mixed race's
    /// losses by target and what each did to the other's files, then the terminal summary).
    /// Give it again for both.
    #[arg(long, value_name = "json:PATH|md:PATH")]
    pub report: Vec<String>,
    /// In-process stores skip fsync (writes still survive SIGKILL, not a power cut).
    /// For cmd: targets, pass the adapter's own flag in the command instead.
    #[arg(long)]
    pub no_fsync: bool,
    /// Raw readers polling the task files, for targets with a known layout.
    #[arg(long, default_value_t = 2)]
    pub readers: usize,
    /// Repeat each workload this many times (seeds SEED, SEED+1, ...).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub runs: u32,
    /// In a mixed race, each target creates, changes and lists only its own tasks, even
    /// when all keep the same files (targets of different layouts always do).
    #[arg(long)]
    pub own_tasks: bool,
    /// In-process teammates of each writer of a Claude Code target with agent teams, each a
    /// writer of its own beside its lead (each target then keeps its own tasks).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub teammates: usize,
    /// Seconds each writer waits between its requests (default: none).
    #[arg(long, value_name = "SECS")]
    pub think: Option<super::Seconds>,
    /// Seconds a request may go unanswered before its session is judged hung.
    #[arg(long, default_value = "10", value_name = "SECS")]
    pub timeout: super::Seconds,
    /// Step budget of the linearizability search, per task; past it the verdict is unknown.
    #[arg(long, default_value_t = taskproof_race::DEFAULT_LIN_BUDGET)]
    pub lin_budget: u64,
}

pub fn run(args: Args) -> anyhow::Result<Verdict> {
    let mut args = args;
    args.target = args
        .target
        .into_iter()
        .map(|t| {
            let mapping = args.mapping.as_deref().filter(|_| t.takes_mapping());
            t.with_mapping(mapping)
        })
        .collect::<Result<_, _>>()
        .map_err(anyhow::Error::msg)?;
    if args.mapping.is_some() && !args.target.iter().any(TargetSpec::takes_mapping) {
        anyhow::bail!(
            "--mapping is for {} targets, and no --target is one",
            taskproof_targets::listed(taskproof_targets::mapping_kinds().map(|k| k.prefix))
        );
    }
    let workloads: Vec<Workload> = if args.workload == "all" {
        Workload::ALL.to_vec()
    } else {
        vec![args.workload.parse().map_err(anyhow::Error::msg)?]
    };
    let specs: Vec<ReportSpec> = args
        .report
        .iter()
        .map(|spec| match spec.parse::<ReportSpec>() {
            Ok(r @ (ReportSpec::Json(_) | ReportSpec::Markdown(_))) => Ok(r),
            _ => anyhow::bail!("--report {spec:?}: expected json:PATH or md:PATH"),
        })
        .collect::<anyhow::Result<_>>()?;
    let duration = args.duration.map(|d| d.0);
    let seed = args.seed.unwrap_or_else(rand::random);
    let targets = args.target.clone();
    for (i, t) in targets.iter().enumerate() {
        if targets[..i].contains(t) {
            anyhow::bail!(
                "--target {t} is given twice; --writers sets the number of sessions of each target"
            );
        }
    }
    let first = targets
        .first()
        .cloned()
        .expect("clap gives --target a default");
    let think = args.think.map_or(std::time::Duration::ZERO, |s| s.0);
    if args.own_tasks && targets.len() < 2 {
        anyhow::bail!("--own-tasks is for a mixed race: give --target at least twice");
    }
    if args.teammates > 0 {
        if !targets.iter().any(TargetSpec::has_teams) {
            anyhow::bail!(
                "--teammates is for a Claude Code target with agent teams (claude-code@VERSION:teams-env)"
            );
        }
        if args.kill {
            anyhow::bail!(
                "--teammates with --kill: a team's members run in one process and are not replaced alone"
            );
        }
        if args.teammates > 8 {
            anyhow::bail!("--teammates {}: at most 8", args.teammates);
        }
    }
    // A mixed race is judged by the strict promises: the reference's, which every target's
    // changes are held to on a shared list.
    let profile = args.profile.unwrap_or_else(|| {
        if targets.len() > 1 {
            Profile::Strict
        } else {
            first.default_profile()
        }
    });
    for t in &targets {
        if let Some(code) = super::prepare_target(t) {
            return Ok(code);
        }
    }
    let mix = taskproof_race::Mix {
        targets: if targets.len() > 1 {
            targets.clone()
        } else {
            Vec::new()
        },
        think,
        own_tasks: args.own_tasks,
        teammates: args.teammates,
    };
    let settle = match args.settle {
        Some(s) => std::time::Duration::from_secs_f64(s),
        None if targets.iter().any(TargetSpec::acts_after_answering) => {
            taskproof_race::driver::DEFAULT_SETTLE
        }
        None => std::time::Duration::ZERO,
    };
    let cfg = Config {
        settle,
        profile,
        target: first,
        writers: args.writers as usize,
        ops: args.ops as usize,
        kill: args.kill,
        seed,
        duration,
        fsync: !args.no_fsync,
        readers: args.readers,
        timeout: args.timeout.0,
        drive: args.drive.map(Into::into),
    };
    let output = Output::from_env();
    let bar = progress_bar(
        &output,
        0,
        "{prefix:>12} [{bar:40}] {pos}/{len} requests {elapsed}",
    );
    let progress = |done: usize, planned: usize| {
        if let Some(b) = &bar {
            b.set_length(planned as u64);
            b.set_position(done as u64);
        }
    };
    let announce = |w: Workload, i: usize| {
        if let Some(b) = &bar {
            b.set_prefix(if args.runs > 1 {
                format!("{w} {}", i + 1)
            } else {
                w.to_string()
            });
            b.set_position(0);
        }
    };
    let result = taskproof_race::run_all(
        &cfg,
        &mix,
        &workloads,
        args.runs as usize,
        args.lin_budget,
        bar.as_ref()
            .map(|_| &progress as taskproof_race::driver::Progress<'_>),
        &announce,
    );
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let report = match result {
        Ok(r) => r,
        Err(e @ DriverError::Root { .. }) => return Err(e.into()),
        Err(e) => {
            eprintln!("taskproof race: {e}");
            return Ok(Verdict::TargetBroke);
        }
    };
    let mut reporters = Reporters::new(
        &specs,
        Box::new(TerminalReporter::new(
            std::io::stdout().lock(),
            output,
            ColorChoice::Never,
        )),
    );
    reporters.emit(&Event::RaceFinished { report: &report });
    Ok(conclude("race", reporters, Verdict::of_race(&report)))
}

/// `--settle`: seconds from 0 to 600.
pub(super) fn settle_seconds(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if (0.0..=600.0).contains(&x) => Ok(x),
        _ => Err(format!(
            "expected a number of seconds from 0 to 600, got {s:?}"
        )),
    }
}
