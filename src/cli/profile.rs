//! `taskproof profile`: the recorded profiles, without any target. `diff A B` says what
//! changed from A to B, per rule and per scenario (exit 0 when nothing did, 1 when
//! something did, 2 when a profile cannot be read); `merge` joins recordings of one target
//! made at different times; `list` shows the built-in ones.

use std::collections::BTreeMap;

use super::exit;
use crate::profile::recorded::{BUILTIN, Recorded, ScenarioRecord, State};
use crate::profile::{Choice, diff};

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, clap::Subcommand)]
pub enum Command {
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
  taskproof record --target claude-code@2.1.21 --out new.json
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
    /// List the recorded profiles built into taskproof.
    List,
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    match args.command {
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
                Ok(exit::USAGE)
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
            let merged = match crate::profile::recorded::merge_recordings(&name, &parts) {
                Ok(m) => m,
                Err(e) => return usage(e),
            };
            if let Err(e) = std::fs::write(&out, merged.to_text()) {
                return usage(format!("cannot write {}: {e}", out.display()));
            }
            let racy: usize = merged
                .scenarios
                .values()
                .flat_map(|s| s.steps.values())
                .filter(|r| matches!(r.seen, crate::profile::recorded::Seen::Racy(_)))
                .count();
            println!(
                "merged {} recordings into {} (profile {name}): {} scenarios, {racy} racy steps",
                parts.len(),
                out.display(),
                merged.scenarios.len()
            );
            Ok(exit::OK)
        }
        Command::Diff { a, b } => {
            let (a, b) = match (load(&a), load(&b)) {
                (Ok(a), Ok(b)) => (a, b),
                (Err(e), _) | (_, Err(e)) => {
                    eprintln!("taskproof profile diff: {e}");
                    return Ok(exit::USAGE);
                }
            };
            let changes = diff::diff(&a, &b);
            let code = super::print_stdout(&diff::render(&a, &b, &changes));
            if code != exit::OK {
                return Ok(code);
            }
            Ok(if changes.is_empty() {
                exit::OK
            } else {
                exit::FOUND
            })
        }
    }
}

/// A recorded profile by name or path; `strict` is every built-in scenario as strict
/// expects.
pub(super) fn load(s: &str) -> Result<Recorded, String> {
    match Choice::resolve(s)? {
        Choice::Recorded(r) => Ok((*r).clone()),
        Choice::Written(crate::profile::Profile::Strict) => {
            let scenarios = crate::scenario::load_builtin().map_err(|errors| {
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
