//! The real Claude Code as a background-task target (issue 25): the measured cases and the
//! kill/complete race, recorded as reports. It starts real CLIs, so a plain `cargo test`
//! never runs it. `--profile dev`: the time is the CLI's, not taskproof's, and the dev build
//! is the one already there.
//!
//! - `cargo bench --profile dev --bench background -- cases VERSION... [--only CASE,...]`
//!   runs every case of benches/background/probe.rs (or those named,
//!   replacing theirs in the existing record) against each version (installed into the cache
//!   on first use) and writes `reports/claude-code/VERSION/background.{json,md}`.
//! - `cargo bench --profile dev --bench background -- race VERSION [N [SPREAD]]` runs the
//!   kill/complete race of N tasks (default 100; completions spread over SPREAD ms, default
//!   400) and writes `reports/claude-code/VERSION/background-race.{json,md}` with the time it
//!   took and the load average; `race VERSION N SPREAD nokill` is its control, the same tasks
//!   and completions with no kill (`background-race-nokill.{json,md}`).
//! - `cargo bench --profile dev --bench background -- tools VERSION...` appends each
//!   version's background tools (read from its first request) to
//!   `reports/claude-code/background-tools.txt`.
//! - `cargo bench --profile dev --bench background -- table VERSION...` prints the cases
//!   across those versions' records as a Markdown table (docs/claude-code.md has it).

use std::path::PathBuf;
use std::time::Duration;

use taskproof_claude_code::ClaudeCode;
#[path = "background/probe.rs"]
mod probe;
#[path = "background/race.rs"]
mod race;
#[path = "background/summary.rs"]
mod summary;

use taskproof_claude_code::background::{BgOptions, ClaudeCodeBg};

fn main() -> anyhow::Result<()> {
    // cargo bench passes `--bench`.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let Some((mode, rest)) = args.split_first() else {
        anyhow::bail!(
            "usage: background (cases VERSION... [--only CASE,...] | race VERSION [N [SPREAD_MS [nokill]]])"
        );
    };
    let reports = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("reports")
        .join("claude-code");
    let scratch = tempfile::tempdir()?;
    match mode.as_str() {
        "cases" => {
            let mut only = Vec::new();
            let mut versions = Vec::new();
            let mut it = rest.iter();
            while let Some(a) = it.next() {
                if a == "--only" {
                    only = it
                        .next()
                        .map(|o| o.split(',').map(String::from).collect())
                        .unwrap_or_default();
                } else {
                    versions.push(a.clone());
                }
            }
            for v in versions {
                let spec = ClaudeCode::parse(&v).map_err(|e| anyhow::anyhow!(e))?;
                spec.prepare().map_err(|e| anyhow::anyhow!(e))?;
                let mut report = probe::run(&spec, scratch.path(), &only)?;
                let version = report["version"].as_str().unwrap_or(&v).to_string();
                let dir = reports.join(&version);
                // With --only, the cases run again replace theirs in the existing record.
                if let (false, Ok(old)) = (
                    only.is_empty(),
                    std::fs::read_to_string(dir.join("background.json")),
                ) {
                    let mut old: serde_json::Value = serde_json::from_str(&old)?;
                    let new = report["cases"].as_array().cloned().unwrap_or_default();
                    if let Some(cases) = old["cases"].as_array_mut() {
                        for n in new {
                            match cases.iter_mut().find(|c| c["case"] == n["case"]) {
                                Some(c) => *c = n,
                                // A case the record does not have yet is added.
                                None => cases.push(n),
                            }
                        }
                    }
                    old["load_at_end"] = report["load_at_end"].clone();
                    report = old;
                }
                std::fs::create_dir_all(&dir)?;
                let command = format!("cargo bench --profile dev --bench background -- cases {v}");
                std::fs::write(dir.join("background.json"), format!("{report:#}\n"))?;
                std::fs::write(
                    dir.join("background.md"),
                    summary::markdown(&report, &command),
                )?;
                println!(
                    "{}",
                    summary::markdown(&report, &command)
                        .lines()
                        .take(20)
                        .collect::<Vec<_>>()
                        .join("\n")
                );
            }
        }
        "race" => {
            let v = rest
                .first()
                .ok_or_else(|| anyhow::anyhow!("race VERSION [N [SPREAD_MS [nokill]]]"))?;
            let n: usize = rest.get(1).map(|n| n.parse()).transpose()?.unwrap_or(100);
            // Measured on 2.1.112: every kill of the one turn lands within about 150 ms of
            // the gate's release, so completions spread over 400 ms fall on both sides of it.
            let spread: u64 = rest.get(2).map(|n| n.parse()).transpose()?.unwrap_or(400);
            // `nokill`: the control, the same tasks and completions without the kills.
            let kill = rest.get(3).map(String::as_str) != Some("nokill");
            let spec = ClaudeCode::parse(v).map_err(|e| anyhow::anyhow!(e))?;
            spec.prepare().map_err(|e| anyhow::anyhow!(e))?;
            let uptime = std::process::Command::new("uptime")
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
                .unwrap_or_default();
            let mut report = race::race(
                &spec,
                scratch.path(),
                n,
                Duration::from_millis(spread),
                kill,
            )?;
            report["uptime_before"] = serde_json::json!(uptime);
            println!("{}", serde_json::to_string_pretty(&report["tally"])?);
            println!(
                "total {} ms, load {}",
                report["total_ms"], report["load_after"]
            );
            let dir = reports.join(v);
            std::fs::create_dir_all(&dir)?;
            let name = if kill {
                "background-race"
            } else {
                "background-race-nokill"
            };
            std::fs::write(dir.join(format!("{name}.json")), format!("{report:#}\n"))?;
            let command = format!(
                "cargo bench --profile dev --bench background -- race {v} {n} {spread}{}",
                if kill { "" } else { " nokill" }
            );
            std::fs::write(
                dir.join(format!("{name}.md")),
                summary::race_markdown(&report, v, &command),
            )?;
        }
        "tools" => {
            // The background tools of each version, from the tool list of its first request.
            let mut out = String::new();
            for v in rest {
                let spec = ClaudeCode::parse(v).map_err(|e| anyhow::anyhow!(e))?;
                spec.prepare().map_err(|e| anyhow::anyhow!(e))?;
                let root = tempfile::tempdir_in(scratch.path())?;
                let line = match ClaudeCodeBg::open(&spec, root.path(), BgOptions::default()) {
                    Ok(s) => {
                        let t = s.tools();
                        let bg: Vec<&String> = t
                            .offered
                            .iter()
                            .filter(|n| {
                                ["Bash", "Output", "Kill", "Stop"]
                                    .iter()
                                    .any(|k| n.contains(k))
                            })
                            .collect();
                        format!(
                            "{v}: output {:?}, kill {:?}; offered: {bg:?}",
                            t.output, t.kill
                        )
                    }
                    Err(e) => format!("{v}: {}", format!("{e:#}").lines().next().unwrap_or("")),
                };
                println!("{line}");
                out.push_str(&line);
                out.push('\n');
            }
            let path = reports.join("background-tools.txt");
            let mut all = std::fs::read_to_string(&path).unwrap_or_default();
            all.push_str(&out);
            std::fs::write(&path, all)?;
        }
        "table" => {
            // The cases across the versions named, from their records.
            let mut records = Vec::new();
            for v in rest {
                let path = reports.join(v).join("background.json");
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| anyhow::anyhow!("read {}: {e}", path.display()))?;
                records.push(serde_json::from_str(&text)?);
            }
            print!("{}", summary::table(&records));
        }
        other => anyhow::bail!("unknown mode {other:?}: cases, race, tools or table"),
    }
    Ok(())
}
