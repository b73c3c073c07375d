//! The real Claude Code as a background-task target (issue 25): the measured cases and the
//! kill/complete race, recorded as reports.
//!
//! `cargo bench --profile dev --bench background -- cases VERSION...` runs every case of
//! `taskproof::target::claude_code::background::probe` against each version (installed into
//! the cache on first use) and writes `reports/claude-code/VERSION/background.{json,md}`.
//! `cargo bench --profile dev --bench background -- race VERSION [N]` runs the kill/complete
//! race of N tasks (default 100) and writes `reports/claude-code/VERSION/background-race.{json,md}`
//! with the time it took and the load average. It starts real CLIs, so a plain `cargo test`
//! never runs it. (`--profile dev`: the time is the CLI's, not taskproof's, and the dev build
//! is the one already there.)

use std::path::PathBuf;
use std::time::Duration;

use taskproof::target::claude_code::ClaudeCode;
use taskproof::target::claude_code::background::probe;

fn main() -> anyhow::Result<()> {
    // cargo bench passes `--bench`.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let Some((mode, rest)) = args.split_first() else {
        anyhow::bail!("usage: background (cases VERSION... [--only CASE,...] | race VERSION [N])");
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
                let report = probe::run(&spec, scratch.path(), &only)?;
                let version = report["version"].as_str().unwrap_or(&v).to_string();
                let dir = reports.join(&version);
                std::fs::create_dir_all(&dir)?;
                let command = format!("cargo bench --profile dev --bench background -- cases {v}");
                std::fs::write(dir.join("background.json"), format!("{report:#}\n"))?;
                std::fs::write(
                    dir.join("background.md"),
                    probe::markdown(&report, &command),
                )?;
                println!(
                    "{}",
                    probe::markdown(&report, &command)
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
                .ok_or_else(|| anyhow::anyhow!("race VERSION [N]"))?;
            let n: usize = rest.get(1).map(|n| n.parse()).transpose()?.unwrap_or(100);
            let spec = ClaudeCode::parse(v).map_err(|e| anyhow::anyhow!(e))?;
            spec.prepare().map_err(|e| anyhow::anyhow!(e))?;
            let uptime = std::process::Command::new("uptime")
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
                .unwrap_or_default();
            let mut report = probe::race(&spec, scratch.path(), n, Duration::from_millis(3000))?;
            report["uptime_before"] = serde_json::json!(uptime);
            println!("{}", serde_json::to_string_pretty(&report["tally"])?);
            println!(
                "total {} ms, load {}",
                report["total_ms"], report["load_after"]
            );
            let dir = reports.join(v);
            std::fs::create_dir_all(&dir)?;
            std::fs::write(dir.join("background-race.json"), format!("{report:#}\n"))?;
        }
        other => anyhow::bail!("unknown mode {other:?}: cases or race"),
    }
    Ok(())
}
