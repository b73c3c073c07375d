//! `taskproof profile`: the recorded profiles. `record` and `hold` run a target (their
//! options and bodies are in `record.rs` and `hold.rs`); the rest need none. `diff A B` says what
//! changed from A to B, per rule and per scenario (exit 0 when nothing did, 1 when
//! something did, 2 when a profile cannot be read); `merge` joins recordings of one target
//! made at different times; `list` shows the built-in ones.

use super::verdict::Verdict;
use std::collections::BTreeMap;

use serde_json::{Value, json};

use taskproof_profile::recorded::{BUILTIN, Recorded, ScenarioRecord, State};
use taskproof_profile::{Choice, diff};

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Run the whole suite against a target and write what it did as a recorded profile.
    Record(super::record::Args),
    /// The release watch: record what a target does now and compare it with a recorded
    /// profile; exit 1 with the diff, per rule, when it changed.
    Hold(super::hold::Args),
    /// Say what changed between two recorded profiles, per rule and per scenario.
    #[command(after_long_help = "\
Examples:
  taskproof profile diff claude-code-2.1.20 claude-code-2.1.21
  taskproof profile diff strict profiles/my-store.json

A and B are built-in profile names, profile files (*.json), or `strict` (every scenario as
strict expects). Exit status: 0 when they record the same behaviour, 1 when they differ, 2
when a profile cannot be read.")]
    Diff {
        /// The profile before.
        a: String,
        /// The profile after.
        b: String,
    },
    /// Merge recordings of one target made at different times into one profile: a step
    /// they saw differently becomes racy.
    #[command(after_long_help = "\
Examples:
  taskproof profile record --target claude-code@2.1.21 --out new.json
  taskproof profile merge new.json profiles/claude-code-2.1.21.json --out profiles/claude-code-2.1.21.json

A store whose answers depend on timing can answer the same way in every run of one recording
(--repeat) and another way on a day when the machine is busier. Merged, the recordings say
both: each step either of them saw differently is recorded as racy with every observation,
so `run --profile` accepts either; concurrent blocks add up their runs. The first
recording's `recorded` is kept, the others' dates listed under `recorded.merged`. Only
recordings of the same target (`recorded.target`) merge. Exit status: 0 when the profile was
written, 2 when a profile cannot be read or written or the targets differ.")]
    Merge {
        /// The recordings (built-in names or files), newest first.
        #[arg(required = true, num_args = 2..)]
        profiles: Vec<String>,
        /// Where to write the merged profile.
        #[arg(long, value_name = "FILE")]
        out: std::path::PathBuf,
        /// The merged profile's name [default: the first recording's].
        #[arg(long)]
        name: Option<String>,
    },
    /// Probe the racy steps of a recorded profile for time, against its target, and record
    /// each step the idle time decides as time-dependent.
    #[command(after_long_help = "\
Examples:
  taskproof profile probe profiles/claude-code-2.1.20.json
  taskproof profile probe claude-code-2.1.17 --time-probe 10 --out /tmp/2.1.17.json

Each racy step's scenario runs --repeat times with --time-probe seconds of idle time before
the step (sessions open, nothing sent) and --repeat times without, in the order with,
without, without, with. When every run with the idle time gives one answer the profile
already lists, and some run without it gives another, the step becomes `timed`: that
answer after the idle time, the others sooner. Otherwise it stays racy, and the line says
why. `record` does the same for the steps its own runs saw differ; this is for a profile
recorded before the probe existed, or merged from recordings of different days. The target
is the profile's own (`recorded.target`) unless --target names another. Exit status: 0 when
the profile was written, 2 when it cannot be read or written, 3 when the target cannot
start.")]
    Probe {
        /// The recorded profile (a built-in name or a file).
        profile: String,
        /// The target to probe [default: the profile's recorded.target].
        #[arg(long)]
        target: Option<taskproof_targets::TargetSpec>,
        /// Seconds of idle time before each racy step (0 to 600).
        #[arg(long, value_name = "SECS", default_value = "7", value_parser = super::race::settle_seconds)]
        time_probe: f64,
        /// Runs with the idle time, and as many without.
        #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=100))]
        repeat: u32,
        /// Seconds a request may go unanswered before the target is judged hung.
        #[arg(long, value_name = "SECS", default_value = "10")]
        timeout: super::Seconds,
        /// Where to write the profile [default: the profile's own file; a built-in name
        /// writes profiles/NAME.json].
        #[arg(long, value_name = "FILE")]
        out: Option<std::path::PathBuf>,
    },
    /// List the recorded profiles built into taskproof.
    List,
}

pub fn run(args: Args) -> anyhow::Result<Verdict> {
    match args.command {
        Command::Record(a) => super::record::run(a),
        Command::Hold(a) => super::hold::run(a),
        Command::List => {
            let mut out = String::new();
            for (name, aliases, text) in BUILTIN {
                let about = Recorded::parse_text(text, name)
                    .map(|r| {
                        let get = |k: &str| {
                            r.recorded
                                .get(k)
                                .and_then(|v| v.as_str())
                                .unwrap_or("?")
                                .to_string()
                        };
                        format!("recorded from {} on {}", get("target"), get("date"))
                    })
                    .unwrap_or_else(|e| format!("unreadable: {e}"));
                let aka = if aliases.is_empty() {
                    String::new()
                } else {
                    format!(" (also {})", aliases.join(", "))
                };
                out.push_str(&format!("{name}{aka}: {about}\n"));
            }
            Ok(super::print_stdout(&out))
        }
        Command::Merge {
            profiles,
            out,
            name,
        } => {
            let usage = |e: String| {
                eprintln!("taskproof profile merge: {e}");
                Ok(Verdict::Usage)
            };
            let mut parts = Vec::new();
            for p in &profiles {
                match load(p) {
                    Ok(r) if r.name == "strict" && r.file == "strict" => {
                        return usage("strict is not a recording".into());
                    }
                    Ok(r) => parts.push(r),
                    Err(e) => return usage(e),
                }
            }
            let name = name.unwrap_or_else(|| parts[0].name.clone());
            let merged = match taskproof_profile::recorded::merge_recordings(&name, &parts) {
                Ok(m) => m,
                Err(e) => return usage(e),
            };
            if let Err(e) = std::fs::write(&out, merged.to_text()) {
                return usage(format!("cannot write {}: {e}", out.display()));
            }
            let count = |timed: bool| {
                merged
                    .scenarios
                    .values()
                    .flat_map(|s| s.steps.values())
                    .filter(|r| match r.seen {
                        taskproof_profile::recorded::Seen::Racy(_) => !timed,
                        taskproof_profile::recorded::Seen::Timed { .. } => timed,
                        taskproof_profile::recorded::Seen::Same(_) => false,
                    })
                    .count()
            };
            let (racy, timed) = (count(false), count(true));
            println!(
                "merged {} recordings into {} (profile {name}): {} scenarios, {racy} racy steps, {timed} time-dependent",
                parts.len(),
                out.display(),
                merged.scenarios.len()
            );
            Ok(Verdict::Clean)
        }
        Command::Probe {
            profile,
            target,
            time_probe,
            repeat,
            timeout,
            out,
        } => probe(profile, target, time_probe, repeat, timeout, out),
        Command::Diff { a, b } => {
            let (a, b) = match (load(&a), load(&b)) {
                (Ok(a), Ok(b)) => (a, b),
                (Err(e), _) | (_, Err(e)) => {
                    eprintln!("taskproof profile diff: {e}");
                    return Ok(Verdict::Usage);
                }
            };
            let changes = diff::diff(&a, &b);
            let code = super::print_stdout(&diff::render(&a, &b, &changes));
            if code != Verdict::Clean {
                return Ok(code);
            }
            Ok(if changes.is_empty() {
                Verdict::Clean
            } else {
                Verdict::Found
            })
        }
    }
}

/// A recorded profile by name or path; `strict` is every built-in scenario as strict
/// expects.
pub(super) fn load(s: &str) -> Result<Recorded, String> {
    match Choice::resolve(s)? {
        Choice::Recorded(r) => Ok((*r).clone()),
        Choice::Written(taskproof_profile::Profile::Strict) => {
            let scenarios = taskproof_scenario::load_builtin().map_err(|errors| {
                errors
                    .iter()
                    .map(|e| e.to_string())
                    .collect::<Vec<_>>()
                    .join("; ")
            })?;
            let scenarios: BTreeMap<String, ScenarioRecord> = scenarios
                .into_iter()
                .map(|s| {
                    (
                        s.id.clone(),
                        ScenarioRecord {
                            title: s.title,
                            rules: s.rules,
                            state: State::Ran,
                            steps: BTreeMap::new(),
                        },
                    )
                })
                .collect();
            Ok(Recorded {
                name: "strict".into(),
                recorded: serde_json::json!({"target": "the scenario files", "date": "-"}),
                scenarios,
                file: "strict".into(),
            })
        }
        Choice::Written(p) => Err(format!(
            "{p} is written into the scenario files, not recorded; diff recorded profiles or strict"
        )),
    }
}

/// `profile probe`: the time probe of `record`, for the racy steps of a profile on disk.
fn probe(
    profile: String,
    target: Option<taskproof_targets::TargetSpec>,
    time_probe: f64,
    repeat: u32,
    timeout: super::Seconds,
    out: Option<std::path::PathBuf>,
) -> anyhow::Result<Verdict> {
    let usage = |e: String| {
        eprintln!("taskproof profile probe: {e}");
        Ok(Verdict::Usage)
    };
    let mut recorded = match load(&profile) {
        Ok(r) if r.file == "strict" => return usage("strict is not a recording".into()),
        Ok(r) => r,
        Err(e) => return usage(e),
    };
    let target = match target {
        Some(t) => t,
        None => {
            let spec = recorded
                .recorded
                .get("target")
                .and_then(|v| v.as_str())
                .unwrap_or_default();
            match spec.parse::<taskproof_targets::TargetSpec>() {
                Ok(t) => t,
                Err(e) => {
                    return usage(format!(
                        "{}: recorded.target {spec:?} is not a target ({e}); name one with --target",
                        recorded.file
                    ));
                }
            }
        }
    };
    let idle = std::time::Duration::from_secs_f64(time_probe);
    if idle.is_zero() {
        return usage("--time-probe 0 probes nothing".into());
    }
    let racy = crate::record::racy_steps(&recorded);
    let out = out.unwrap_or_else(|| {
        if recorded.file.ends_with(".json") && std::path::Path::new(&recorded.file).is_file() {
            std::path::PathBuf::from(&recorded.file)
        } else {
            taskproof_profile::recorded::default_path(&recorded.name)
        }
    });
    if racy.is_empty() {
        println!("{} has no racy step: nothing to probe", recorded.file);
        return Ok(Verdict::Clean);
    }
    let scenarios = match taskproof_scenario::load_builtin() {
        Ok(s) => s,
        Err(errors) => {
            return usage(
                errors
                    .iter()
                    .map(|e| e.to_string())
                    .collect::<Vec<_>>()
                    .join("; "),
            );
        }
    };
    if let Some(code) = super::prepare_target(&target) {
        return Ok(code);
    }
    let config = taskproof_scenario::RunConfig {
        profile: taskproof_profile::Profile::Strict,
        timeout: timeout.0,
        jobs: 1,
        ..taskproof_scenario::RunConfig::new(target)
    };
    let probed = crate::record::time_probe(
        &scenarios,
        &config,
        &racy,
        idle,
        repeat as usize,
        &mut |line| eprintln!("taskproof profile probe: {line}"),
    );
    let mut timed = 0;
    for result in &probed {
        let (folded, words) = crate::record::fold_probe(&mut recorded, result, idle);
        timed += usize::from(folded);
        let (id, index, _) = result;
        println!("{id} steps[{index}]: {words}");
    }
    if let Value::Object(m) = &mut recorded.recorded {
        m.insert(
            "time_probe".into(),
            json!({"date": taskproof_profile::recorded::today(), "seconds": time_probe, "repeat": repeat}),
        );
    }
    if let Err(e) = std::fs::write(&out, recorded.to_text()) {
        return usage(format!("cannot write {}: {e}", out.display()));
    }
    println!(
        "probed {} racy steps: {timed} time-dependent, {} left racy; wrote {}",
        probed.len(),
        probed.len() - timed,
        out.display()
    );
    Ok(Verdict::Clean)
}
