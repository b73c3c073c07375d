//! `taskproof judge`: the store author's loop in one command. It judges one store with the
//! scenario suite, a short race and a fuzz budget (each can be sized or left out), and ends
//! with one to-do list: one item per broken rule, most costly first (docs/spec.md,
//! "Consequence classes"), each with its witness and a command line that replays it.
//!
//! The three parts are the same as `run`, `race` and `fuzz` (their crates' public entry
//! points, called as those commands call them); this command adds only the sizes, the
//! grouping and the replay lines, which carry every flag the run was given (`--mapping`,
//! `--profile`, the seed).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;

use super::Seconds;
use super::verdict::Verdict;
use taskproof_core::rule::{Class, Rule};
use taskproof_fuzz::driver::Setup;
use taskproof_fuzz::known::KnownFindings;
use taskproof_fuzz::run::{Plan, RunError, ShrinkLimit, fuzz};
use taskproof_fuzz::strategy::BetweenRequests;
use taskproof_profile::{Mode, Profile};
use taskproof_race::{Config, Mix, RaceReport, Workload};
use taskproof_report::result::{OutcomeKind, SuiteResult};
use taskproof_scenario::{RunConfig, SkipList, load_builtin, run_suite};
use taskproof_session::SessionOptions;
use taskproof_targets::TargetSpec;

#[derive(Debug, clap::Args)]
#[command(after_long_help = "\
Examples:
  taskproof judge --target 'cmd:python3 my_store.py'
  taskproof judge --target 'mcp:my-server' --mapping my-server.toml --fuzz-time 120
  taskproof judge --target 'cmd:./store' --no-fuzz --race-writers 8 --race-ops 200

It runs, in turn: the built-in suite (as `taskproof run`), a short race of concurrent writers
(as `taskproof race`, the workloads of --race-workload), and the fuzzer for a budget of cases
and seconds (as `taskproof fuzz`, its findings written to --out). It then prints one to-do
list: one item per rule the store breaks, lost data first (data-loss, inconsistent,
accepts-refused, input), then the target's own errors (a process that exited, hung or broke
the protocol: no rule). Each item gives the rule, a witness (what was sent, expected and
got), and a command line that replays it with every flag this run was given.

Exit status: 0 when nothing is on the list, 1 when a rule is broken, 2 on usage errors, 3
when the target broke (could not start, or only errors are on the list).")]
pub struct Args {
    // The kinds' list comes from the registry (`taskproof_targets::KINDS`).
    #[arg(long, short, default_value = "reference", help = taskproof_targets::target_help())]
    pub target: String,
    /// The mapping file of an mcp:COMMAND target (docs/mcp-targets.md).
    #[arg(long, value_name = "FILE")]
    pub mapping: Option<PathBuf>,
    /// What the store promises: strict, hand-written-files or hand-written-s07 (the sets
    /// the scenario files call strict, cc-2.1.17 and s07) [default: hand-written-files for
    /// naive, strict otherwise].
    #[arg(long, short, value_parser = taskproof_profile::parse_promises)]
    pub profile: Option<Profile>,
    /// Leave out the scenario suite.
    #[arg(long)]
    pub no_suite: bool,
    /// Scenarios run at once [default: as `run`].
    #[arg(long, short, default_value_t = 0, hide_default_value = true)]
    pub jobs: usize,
    /// Leave out the race.
    #[arg(long)]
    pub no_race: bool,
    /// The race's workloads, comma-separated (see `taskproof race --help`), or `all`.
    #[arg(long, value_name = "NAMES", default_value = "metadata,create")]
    pub race_workload: String,
    /// Writer sessions of the race.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub race_writers: u32,
    /// Requests per writer of the race.
    #[arg(long, value_name = "N", default_value_t = 25, value_parser = clap::value_parser!(u32).range(1..))]
    pub race_ops: u32,
    /// Seconds the race's sessions stay open and idle after the last answer [default: as
    /// `race`: 7 when the target declares it acts after answering, 0 otherwise].
    #[arg(long, value_name = "SECS", value_parser = super::race::settle_seconds)]
    pub race_settle: Option<f64>,
    /// Leave out the fuzzer.
    #[arg(long)]
    pub no_fuzz: bool,
    /// The most fuzz cases.
    #[arg(long, value_name = "N", default_value_t = 300)]
    pub fuzz_cases: u32,
    /// Start no fuzz case after this many seconds (shrinking included).
    #[arg(long, value_name = "SECS", default_value = "30")]
    pub fuzz_time: Seconds,
    /// Where the fuzzer writes its findings' scenario files.
    #[arg(long, value_name = "DIR", default_value = "taskproof-judge-findings")]
    pub out: PathBuf,
    /// The seed of the race and the fuzzer (default: random, and printed in the replay
    /// lines).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Seconds a request may go unanswered before the target is judged hung.
    #[arg(long, value_name = "SECS", default_value = "10")]
    pub timeout: Seconds,
    /// Seconds a session may take to start and answer hello.
    #[arg(long, value_name = "SECS", default_value = "60")]
    pub start_timeout: Seconds,
}

/// One thing to fix: a broken rule (or the target's own error), with its first witness and
/// how to replay it.
#[derive(Debug, Clone)]
struct Todo {
    /// `None` for an error of the target.
    class: Option<Class>,
    rule: Option<Rule>,
    /// Where it was found, and what: `suite: rt04-circular-dependency`.
    found: Vec<String>,
    witness: Vec<String>,
    replay: String,
}

/// The flags every replay line repeats: the target, its mapping, the profile.
struct Replay {
    target: String,
    mapping: Option<String>,
    profile: Profile,
}

impl Replay {
    fn common(&self) -> String {
        let mut s = format!("--target {}", shell_word(&self.target));
        if let Some(m) = &self.mapping {
            let _ = write!(s, " --mapping {}", shell_word(m));
        }
        s
    }

    /// `run`'s profile words: the written expectations under the profile's name.
    fn run_profile(&self) -> String {
        match self.profile {
            Profile::Strict => "strict".into(),
            p => format!("written:{p}"),
        }
    }

    fn suite(&self, id: &str) -> String {
        format!(
            "taskproof run {} --profile {} --filter {}",
            self.common(),
            self.run_profile(),
            shell_word(id)
        )
    }

    fn file(&self, path: &std::path::Path) -> String {
        format!(
            "taskproof run {} {} --profile {}",
            shell_word(&path.display().to_string()),
            self.common(),
            self.run_profile()
        )
    }

    fn race(&self, workload: &str, cfg: &Config) -> String {
        format!(
            "taskproof race {} --profile {} --workload {workload} --writers {} --ops {} --seed {} --settle {}",
            self.common(),
            promises_name(self.profile),
            cfg.writers,
            cfg.ops,
            cfg.seed,
            cfg.settle.as_secs_f64()
        )
    }
}

/// The name `race` and `fuzz` take for a promise set.
fn promises_name(p: Profile) -> &'static str {
    match p {
        Profile::Strict => "strict",
        Profile::Cc2117 => "hand-written-files",
        Profile::S07 => "hand-written-s07",
    }
}

pub fn run(args: Args) -> anyhow::Result<Verdict> {
    let usage = |msg: String| {
        eprintln!("taskproof judge: {msg}");
        Ok(Verdict::Usage)
    };
    let target: TargetSpec = match args.target.parse() {
        Ok(t) => t,
        Err(e) => return usage(format!("invalid --target {:?}: {e}", args.target)),
    };
    let target = match target.with_mapping(args.mapping.as_deref()) {
        Ok(t) => t,
        Err(e) => return usage(e),
    };
    let workloads: Vec<Workload> = if args.race_workload == "all" {
        Workload::ALL.to_vec()
    } else {
        match args
            .race_workload
            .split(',')
            .map(|w| w.trim().parse::<Workload>())
            .collect::<Result<_, _>>()
        {
            Ok(w) => w,
            Err(e) => return usage(format!("--race-workload: {e}")),
        }
    };
    if args.no_suite && args.no_race && args.no_fuzz {
        return usage("--no-suite, --no-race and --no-fuzz leave nothing to judge".into());
    }
    if let Some(code) = super::prepare_target(&target) {
        return Ok(code);
    }
    let profile = args.profile.unwrap_or_else(|| target.default_profile());
    let seed = args.seed.unwrap_or_else(rand::random);
    let replay = Replay {
        target: args.target.clone(),
        mapping: args.mapping.as_ref().map(|m| m.display().to_string()),
        profile,
    };
    println!(
        "judging {target} under {} (seed {seed}): {}",
        promises_name(profile),
        [
            (!args.no_suite).then_some("the suite"),
            (!args.no_race).then_some("a race"),
            (!args.no_fuzz).then_some("the fuzzer"),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(", ")
    );
    let mut todo: Vec<Todo> = Vec::new();
    let mut broke = false;

    if !args.no_suite {
        let scenarios = load_builtin()
            .map_err(|errors| anyhow::anyhow!("the built-in suite does not load: {}", errors[0]))?;
        let config = RunConfig {
            profile,
            mode: Mode::Expectations,
            timeout: args.timeout.0,
            start_timeout: args.start_timeout.0,
            jobs: args.jobs,
            skips: SkipList::default(),
            ..RunConfig::new(target.clone())
        };
        let suite = run_suite(&scenarios, &config, &mut |_| {});
        println!("suite: {}", suite.summary().line());
        if let Err(e) = &suite.target.hello {
            println!("suite: the target's hello failed: {e}");
            broke = true;
        }
        suite_items(&suite, &replay, &mut todo);
    }

    if !args.no_race {
        let settle = match args.race_settle {
            Some(s) => Duration::from_secs_f64(s),
            None if target.acts_after_answering() => taskproof_race::driver::DEFAULT_SETTLE,
            None => Duration::ZERO,
        };
        let cfg = Config {
            settle,
            profile,
            target: target.clone(),
            writers: args.race_writers as usize,
            ops: args.race_ops as usize,
            kill: false,
            seed,
            duration: None,
            fsync: true,
            readers: 2,
            timeout: args.timeout.0,
            drive: None,
        };
        let mix = Mix {
            targets: Vec::new(),
            think: Duration::ZERO,
            own_tasks: false,
            teammates: 0,
        };
        match taskproof_race::run_all(
            &cfg,
            &mix,
            &workloads,
            1,
            taskproof_race::DEFAULT_LIN_BUDGET,
            None,
            &|_, _| {},
        ) {
            Ok(report) => {
                println!("race: {}", race_line(&report));
                race_items(&report, &cfg, &replay, &mut todo);
            }
            Err(e) => {
                println!("race: the target broke: {e}");
                broke = true;
            }
        }
    }

    if !args.no_fuzz {
        let scratch = tempfile::Builder::new()
            .prefix("taskproof-judge-")
            .tempdir()
            .context("failed to make a scratch folder")?;
        let settle = if target.acts_after_answering() {
            taskproof_race::driver::DEFAULT_SETTLE
        } else {
            Duration::ZERO
        };
        let plan = Plan {
            setup: Setup {
                target: target.clone(),
                profile,
                session_options: SessionOptions {
                    timeout: args.timeout.0,
                    start_timeout: args.start_timeout.0,
                    durable: false,
                    interactive: !settle.is_zero(),
                    ..SessionOptions::default()
                },
                scratch: scratch.path().to_path_buf(),
                settle,
                reuse: true,
            },
            cases: args.fuzz_cases,
            steps: 24,
            seed,
            files: profile == Profile::Strict,
            between: BetweenRequests {
                wait_max_tenths: 0,
                events: false,
            },
            parallel: taskproof_fuzz::strategy::Parallel::default(),
            replays: 10,
            shrink: ShrinkLimit {
                runs: ShrinkLimit::default().runs,
                time: Duration::from_secs(20),
            },
            known: KnownFindings::default(),
            max_findings: None,
            time_limit: Some(args.fuzz_time.0),
            prestart: true,
            out: args.out.clone(),
            mapping: args.mapping.clone(),
        };
        match fuzz(&plan, &mut |_| {}) {
            Ok(report) => {
                println!("fuzz: {}", taskproof_fuzz::render::summary(&plan, &report));
                for f in &report.found {
                    let rules = &f.finding.rules;
                    todo.push(Todo {
                        class: taskproof_core::rule::Class::of(rules),
                        rule: rules.first().copied(),
                        found: vec![format!("fuzz: {}", f.finding.fingerprint)],
                        witness: vec![fold(&f.finding.summary)],
                        replay: replay.file(f.written.path()),
                    });
                }
            }
            Err(RunError::Target(e)) => {
                println!("fuzz: the target broke: {e}");
                broke = true;
            }
            Err(RunError::Harness(e)) => anyhow::bail!("fuzz: {e}"),
        }
    }

    let list = merge(todo);
    print!("{}", render(&list));
    let rules_broken = list.iter().any(|t| t.rule.is_some());
    Ok(if rules_broken {
        Verdict::Found
    } else if broke || !list.is_empty() {
        Verdict::TargetBroke
    } else {
        Verdict::Clean
    })
}

/// One item per failed scenario (its first failure, with the failing step's rule and class)
/// and per scenario the target broke in.
fn suite_items(suite: &SuiteResult, replay: &Replay, todo: &mut Vec<Todo>) {
    for r in &suite.scenarios {
        match r.kind() {
            OutcomeKind::Fail => {
                let Some(f) = r.failures().first() else {
                    continue;
                };
                let mut witness = Vec::new();
                let at = f
                    .step
                    .map(|i| format!("steps[{i}]"))
                    .unwrap_or_else(|| "after the last step".into());
                witness.push(fold(&format!("{at}: {}", f.reason)));
                if let Some(req) = &f.request {
                    witness.push(fold(&format!("request:  {req}")));
                }
                witness.push(fold(&format!("expected: {}", f.expected)));
                witness.push(fold(&format!("actual:   {}", f.actual)));
                todo.push(Todo {
                    class: f.class(),
                    rule: f
                        .rules
                        .first()
                        .copied()
                        .or_else(|| r.rules.first().copied()),
                    found: vec![format!("suite: {}", r.id)],
                    witness,
                    replay: replay.suite(&r.id),
                });
            }
            OutcomeKind::Error => {
                let mut witness = vec![fold(&r.reason().unwrap_or_default())];
                let stderr = r.stderr.trim();
                if !stderr.is_empty() {
                    witness.push("stderr:".into());
                    let lines: Vec<&str> = stderr.lines().collect();
                    witness.extend(
                        lines[lines.len().saturating_sub(5)..]
                            .iter()
                            .map(|l| fold(l)),
                    );
                }
                todo.push(Todo {
                    class: None,
                    rule: None,
                    found: vec![format!("suite: {}", r.id)],
                    witness,
                    replay: replay.suite(&r.id),
                });
            }
            _ => {}
        }
    }
}

/// The race's one line: anomalies the profile promises against, by kind, per workload.
fn race_line(report: &RaceReport) -> String {
    let parts: Vec<String> = report
        .workloads
        .iter()
        .map(|w| {
            if let Some(why) = &w.skipped {
                return format!("{} skipped ({why})", w.workload);
            }
            let found: Vec<String> = w
                .anomalies
                .iter()
                .filter(|(_, n)| **n > 0)
                .map(|(k, n)| format!("{n} {}", k.replace('_', " ")))
                .collect();
            format!(
                "{} {}",
                w.workload,
                if found.is_empty() {
                    "nothing lost".to_string()
                } else {
                    found.join(", ")
                }
            )
        })
        .collect();
    format!(
        "{} writers x {} requests: {}",
        report.writers,
        report.ops,
        parts.join("; ")
    )
}

/// One item per workload and kind of anomaly the profile promises against, with the first
/// witness of that kind; a workload's target errors as one error item.
fn race_items(report: &RaceReport, cfg: &Config, replay: &Replay, todo: &mut Vec<Todo>) {
    for w in &report.workloads {
        for kind in taskproof_race::AnomalyKind::ALL {
            if w.anomalies.get(kind.name()).copied().unwrap_or(0) == 0 {
                continue;
            }
            let rule: Option<Rule> = kind.rule().parse().ok();
            let first = w
                .witnesses
                .iter()
                .find(|x| x.kind == kind && !x.observation);
            let mut witness = vec![format!(
                "{} {} in workload {}",
                w.anomalies[kind.name()],
                kind.label(),
                w.workload
            )];
            if let Some(x) = first {
                witness.push(fold(&x.text));
            }
            todo.push(Todo {
                class: rule.map(Rule::class),
                rule,
                found: vec![format!("race: {} {}", w.workload, kind.label())],
                witness,
                replay: replay.race(&w.workload, cfg),
            });
        }
        if !w.errors.is_empty() {
            todo.push(Todo {
                class: None,
                rule: None,
                found: vec![format!("race: {}", w.workload)],
                witness: w.errors.iter().take(3).map(|e| fold(e)).collect(),
                replay: replay.race(&w.workload, cfg),
            });
        }
    }
}

/// One item per rule (and per class, for a refusal of the wrong kind, whose class is not its
/// rule's), the first witness kept and every place it was found named; errors of the target
/// one item each. Sorted most costly first, then by rule; errors last.
fn merge(items: Vec<Todo>) -> Vec<Todo> {
    let mut by_rule: BTreeMap<(Class, Rule), Todo> = BTreeMap::new();
    let mut rest = Vec::new();
    for t in items {
        match (t.class, t.rule) {
            (Some(c), Some(r)) => match by_rule.get_mut(&(c, r)) {
                Some(first) => first.found.extend(t.found),
                None => {
                    by_rule.insert((c, r), t);
                }
            },
            _ => rest.push(t),
        }
    }
    by_rule.into_values().chain(rest).collect()
}

/// The to-do list as the terminal shows it.
fn render(list: &[Todo]) -> String {
    let mut out = String::new();
    if list.is_empty() {
        out.push_str("\nnothing to fix: no rule broken, no target error\n");
        return out;
    }
    let _ = writeln!(out, "\nto do, most costly first ({} items):", list.len());
    for (n, t) in list.iter().enumerate() {
        let head = match (t.class, t.rule) {
            (Some(c), Some(r)) => format!("{r} {} ({}: {})", r.title(), c.as_str(), c.title()),
            _ => "target error (no rule: the target exited, hung or broke the protocol)".into(),
        };
        let _ = writeln!(out, "{}. {head}", n + 1);
        let shown = 5;
        let more = t.found.len().saturating_sub(shown);
        let _ = writeln!(
            out,
            "   found in: {}{}",
            t.found[..t.found.len().min(shown)].join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        );
        for w in &t.witness {
            for line in w.lines() {
                let _ = writeln!(out, "   {line}");
            }
        }
        let _ = writeln!(out, "   replay: {}", t.replay);
    }
    out
}

/// The longest witness line shown; longer ones are cut, saying how much was left out.
const FOLD: usize = 240;

/// A witness line no longer than [`FOLD`] characters.
fn fold(s: &str) -> String {
    let s = s.trim_end();
    match s.char_indices().nth(FOLD) {
        None => s.to_string(),
        Some((i, _)) => format!("{}… ({} more characters)", &s[..i], s[i..].chars().count()),
    }
}

/// Quotes a word for a POSIX shell when it needs it.
fn shell_word(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_:./=@,".contains(&b))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(class: Option<Class>, rule: Option<Rule>, found: &str) -> Todo {
        Todo {
            class,
            rule,
            found: vec![found.into()],
            witness: vec!["w".into()],
            replay: "r".into(),
        }
    }

    #[test]
    fn the_list_is_one_item_per_rule_lost_data_first_errors_last() {
        let list = merge(vec![
            item(None, None, "suite: e"),
            item(Some(Class::AcceptsRefused), Some(Rule::S5), "suite: a"),
            item(
                Some(Class::DataLoss),
                Some(Rule::S19),
                "race: metadata lost",
            ),
            item(Some(Class::DataLoss), Some(Rule::S1), "suite: b"),
            item(Some(Class::DataLoss), Some(Rule::S1), "fuzz: f"),
        ]);
        let rules: Vec<Option<Rule>> = list.iter().map(|t| t.rule).collect();
        assert_eq!(
            rules,
            [Some(Rule::S1), Some(Rule::S19), Some(Rule::S5), None]
        );
        assert_eq!(list[0].found, ["suite: b", "fuzz: f"]);
        let text = render(&list);
        assert!(text.contains("1. S1 ids (data-loss"), "{text}");
        assert!(text.contains("4. target error"), "{text}");
    }

    #[test]
    fn long_witnesses_are_cut_and_say_how_much() {
        let long = "x".repeat(FOLD + 10);
        assert_eq!(
            fold(&long),
            format!("{}… (10 more characters)", "x".repeat(FOLD))
        );
        assert_eq!(fold("short"), "short");
        assert_eq!(shell_word("cmd:python3 a.py"), "'cmd:python3 a.py'");
        assert_eq!(shell_word("a/b.toml"), "a/b.toml");
    }
}
