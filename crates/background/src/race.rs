//! The kill/complete race against a background-task target (`taskproof race-background`):
//! N tasks each sleeping S seconds, task i killed at S + (i − N/2) × step after its start, so
//! that the kills sweep across the moment the tasks complete; then each task id is accounted
//! for — notified once, twice or more, never — with what its kill answered and the status
//! notified (rules B2 and B3, docs/background.md). The process table is read after the
//! session's end (B7).

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::procs;
use crate::targets::{BgOpen, BgTarget};
use taskproof_session::background::{BgEnd, BgError, BgKill, BgStatus, BgWork};

/// What to race.
#[derive(Debug, Clone)]
pub struct BgRaceConfig {
    pub target: BgTarget,
    pub open: BgOpen,
    pub tasks: usize,
    pub sleep: f64,
    pub step: f64,
}

/// The JSON report's format version (`race-background --report json:PATH`): 1 since it
/// carries one; a report without the field is version 0, the same shape (docs/background.md).
pub const FORMAT_VERSION: u64 = 1;

/// One task's account.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskAccount {
    pub id: String,
    /// Milliseconds from the task's start to its kill, less its sleep (negative: before it
    /// was due to complete).
    pub kill_offset_ms: f64,
    /// `killed`, `already_final:STATUS` or `not_found`.
    pub kill: String,
    pub notified: usize,
    /// The statuses of its notifications, in order.
    pub statuses: Vec<BgStatus>,
    /// `once`, `twice or more`, `never`, or `contradicts its kill` (notified once with a
    /// status its kill's answer rules out).
    pub verdict: String,
}

/// The race's result, as its JSON report writes it and reads back.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BgRaceReport {
    /// 0 when the report has none (written before it carried one).
    #[serde(default)]
    pub format_version: u64,
    pub target: String,
    pub tasks: usize,
    pub sleep: f64,
    pub step: f64,
    pub once: usize,
    pub twice_or_more: usize,
    pub never: usize,
    pub contradicted: usize,
    pub killed: usize,
    pub already_final: usize,
    pub not_found: usize,
    /// Processes of the tasks alive after the session ended (B7), as `pid (group): command`.
    pub orphans: Vec<String>,
    pub seconds: f64,
    pub accounts: Vec<TaskAccount>,
}

impl BgRaceReport {
    /// Whether every task was notified exactly once, as its kill answered, and nothing was
    /// left running.
    pub fn ok(&self) -> bool {
        self.twice_or_more == 0
            && self.never == 0
            && self.contradicted == 0
            && self.not_found == 0
            && self.orphans.is_empty()
    }

    /// The Markdown report.
    pub fn markdown(&self) -> String {
        let mut out = format!(
            "# taskproof race-background\n\nTarget `{}`: {} tasks of {} s, the kill of task i at {} s + (i − {}) × {} ms after its start; {:.1} s.\n\n",
            self.target,
            self.tasks,
            self.sleep,
            self.sleep,
            self.tasks / 2,
            self.step * 1000.0,
            self.seconds
        );
        out.push_str(&format!(
            "**{}**: notified once {}, twice or more {}, never {}, once but contradicting its kill {}; kills answered killed {}, already final {}, not found {}; {} process(es) left after the end.\n\n",
            if self.ok() { "ok" } else { "FAILED" },
            self.once,
            self.twice_or_more,
            self.never,
            self.contradicted,
            self.killed,
            self.already_final,
            self.not_found,
            self.orphans.len()
        ));
        out.push_str("| task | kill at (ms from due) | kill answered | notified | statuses | verdict |\n|---|---|---|---|---|---|\n");
        for a in &self.accounts {
            out.push_str(&format!(
                "| `{}` | {:+.1} | {} | {} | {} | {} |\n",
                a.id,
                a.kill_offset_ms,
                a.kill,
                a.notified,
                a.statuses
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                a.verdict
            ));
        }
        if !self.orphans.is_empty() {
            out.push_str(&format!("\nLeft alive: {}\n", self.orphans.join("; ")));
        }
        out
    }
}

/// Runs the race. An error is the target's (it hung, crashed, answered garbage), or the
/// harness's failure to make the session's folder.
pub fn race(config: &BgRaceConfig) -> Result<BgRaceReport, BgError> {
    let started = Instant::now();
    let dir = tempfile::Builder::new()
        .prefix("taskproof-bg-race-")
        .tempdir()
        .map_err(BgError::io("failed to make a session folder"))?;
    let mut session = config.target.open(dir.path(), config.open.clone())?;
    let work = BgWork {
        command: format!("sleep {}; exit 0", config.sleep),
    };
    let result = (|| -> Result<BgRaceReport, BgError> {
        let mut plan = Vec::new();
        let mut ids = Vec::new();
        for i in 0..config.tasks {
            let s = session.spawn(&work)?;
            let spawned = Instant::now();
            let offset = (i as f64 - (config.tasks / 2) as f64) * config.step;
            let at = spawned + Duration::from_secs_f64((config.sleep + offset).max(0.0));
            plan.push((at, i, offset));
            ids.push(s.id);
        }
        plan.sort_by_key(|p| p.0);
        let mut kills = vec![(String::new(), 0.0); config.tasks];
        for (at, i, offset) in plan {
            if let Some(d) = at.checked_duration_since(Instant::now()) {
                std::thread::sleep(d);
            }
            let answer = session.kill(&ids[i])?;
            kills[i] = (
                match answer {
                    BgKill::Killed => "killed".to_string(),
                    BgKill::AlreadyFinal(s) => {
                        format!("already_final:{}", s.as_str())
                    }
                    BgKill::NotFound(_) => "not_found".to_string(),
                },
                offset * 1000.0,
            );
        }
        let within = Duration::from_secs_f64(config.sleep + 10.0);
        session.notifications(within)?;
        // A second notification comes after the first: give stragglers a second.
        std::thread::sleep(Duration::from_secs(1));
        let notes = session.notifications(Duration::ZERO)?;
        let pgids = session.task_pids()?;
        session.end(BgEnd::Exit)?;
        let orphans: Vec<String> = procs::survivors_after(&pgids, Duration::from_secs(3))
            .iter()
            .map(|m| m.to_string())
            .collect();
        let mut report = BgRaceReport {
            format_version: FORMAT_VERSION,
            target: config.target.to_string(),
            tasks: config.tasks,
            sleep: config.sleep,
            step: config.step,
            once: 0,
            twice_or_more: 0,
            never: 0,
            contradicted: 0,
            killed: 0,
            already_final: 0,
            not_found: 0,
            orphans,
            seconds: 0.0,
            accounts: Vec::new(),
        };
        for (i, id) in ids.iter().enumerate() {
            let statuses: Vec<BgStatus> = notes
                .iter()
                .filter(|n| &n.id == id)
                .map(|n| n.status)
                .collect();
            let (kill, offset) = kills[i].clone();
            match kill.as_str() {
                "killed" => report.killed += 1,
                "not_found" => report.not_found += 1,
                _ => report.already_final += 1,
            }
            let expected = match kill.as_str() {
                "killed" => Some(BgStatus::Killed),
                "already_final:completed" => Some(BgStatus::Completed),
                "already_final:failed" => Some(BgStatus::Failed),
                "already_final:killed" => Some(BgStatus::Killed),
                _ => None,
            };
            let verdict = match statuses.len() {
                0 => {
                    report.never += 1;
                    "never"
                }
                1 if expected.is_some_and(|e| e != statuses[0]) => {
                    report.contradicted += 1;
                    "contradicts its kill"
                }
                1 => {
                    report.once += 1;
                    "once"
                }
                _ => {
                    report.twice_or_more += 1;
                    "twice or more"
                }
            };
            report.accounts.push(TaskAccount {
                id: id.clone(),
                kill_offset_ms: offset,
                kill,
                notified: statuses.len(),
                statuses,
                verdict: verdict.to_string(),
            });
        }
        Ok(report)
    })();
    if result.is_err() {
        let pgids = session.task_pids().unwrap_or_default();
        let _ = session.end(BgEnd::Sigkill);
        for m in procs::members_of(&pgids) {
            if let Some(p) = rustix::process::Pid::from_raw(m.pgid) {
                let _ = rustix::process::kill_process_group(p, rustix::process::Signal::KILL);
            }
        }
    }
    let mut report = result?;
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BgMutant;

    fn config(m: Option<BgMutant>) -> BgRaceConfig {
        BgRaceConfig {
            target: BgTarget::InProcess(m),
            open: BgOpen::default(),
            tasks: 20,
            sleep: 0.5,
            step: 0.004,
        }
    }

    #[test]
    fn the_reference_accounts_every_task_once() {
        let r = race(&config(None)).unwrap();
        assert!(r.ok(), "{}", r.markdown());
        assert_eq!(r.once, 20);
        assert_eq!(r.accounts.len(), 20);
    }

    #[test]
    fn without_the_latch_killed_tasks_are_notified_twice() {
        let r = race(&config(Some(BgMutant::DoubleNotify))).unwrap();
        assert!(!r.ok());
        // Every task the kill reached while it ran is notified by the kill and the handler.
        assert_eq!(r.twice_or_more, r.killed, "{}", r.markdown());
    }
}
