//! The kill/complete race of many background tasks on one real Claude Code version, recorded
//! as JSON for `reports/claude-code/VERSION/background-race.{json,md}` (its summary is
//! summary.rs's).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use taskproof_claude_code::ClaudeCode;
use taskproof_claude_code::background::{BgOptions, ClaudeCodeBg};
use taskproof_session::background::{BgEnd, BgNotification, BgSession, BgWork};

use crate::probe::{kill_word, load, work};

/// The kill/complete race: `n` tasks held at a gate (an exclusive `flock` the harness holds),
/// released at once; task `i` then sleeps `i·spread/n` (shuffled) and exits 0, while every
/// task is killed in one turn, in a shuffled order, right after the release. Every id is
/// accounted for: what its kill answered, how often it was notified and with what, and
/// whether a process of it is alive afterwards.
pub fn race(
    spec: &ClaudeCode,
    scratch: &Path,
    n: usize,
    spread: Duration,
    kill: bool,
) -> anyhow::Result<Value> {
    use rand::seq::SliceRandom;
    let total = Instant::now();
    let load_before = load();
    let root = tempfile::Builder::new()
        .prefix("bg-race-")
        .tempdir_in(scratch)?;
    let gate_path = root.path().join("gate.lock");
    let gate = std::fs::File::create(&gate_path)?;
    rustix::fs::flock(&gate, rustix::fs::FlockOperation::LockExclusive)?;
    let options = BgOptions {
        timeout: Duration::from_secs(60),
        start_timeout: Duration::from_secs(60),
        model_log: None,
    };
    let t_open = Instant::now();
    let mut s = ClaudeCodeBg::open(spec, root.path(), options)?;
    let open_ms = t_open.elapsed().as_millis() as u64;
    let mut delays: Vec<u64> = (0..n as u64)
        .map(|i| i * spread.as_millis() as u64 / n as u64)
        .collect();
    delays.shuffle(&mut rand::rng());
    let works: Vec<BgWork> = delays
        .iter()
        .map(|d| {
            work(format!(
                "flock -s gate.lock true; sleep {}.{:03}; exit 0",
                d / 1000,
                d % 1000
            ))
        })
        .collect();
    let t_spawn = Instant::now();
    let started = s.spawn_many(&works)?;
    let spawn_ms = t_spawn.elapsed().as_millis() as u64;
    let ids: Vec<String> = started.iter().map(|t| t.id.clone()).collect();
    // Every task waits at the gate (its shell is up) before the release.
    let deadline = Instant::now() + Duration::from_secs(20);
    while s
        .task_procs()
        .iter()
        .filter(|p| p.command.starts_with("flock"))
        .count()
        < n
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    let waiting = s
        .task_procs()
        .iter()
        .filter(|p| p.command.starts_with("flock"))
        .count();
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut rand::rng());
    let kill_ids: Vec<String> = order.iter().map(|&i| ids[i].clone()).collect();
    // Release, then kill everything in one turn.
    drop(gate);
    let t_kill = Instant::now();
    // Without kills (the control): the same completions, nobody interfering.
    let answers = if kill {
        s.kill_many(&kill_ids)?
    } else {
        std::thread::sleep(spread);
        Vec::new()
    };
    let kill_ms = t_kill.elapsed().as_millis() as u64;
    let mut by_id: BTreeMap<String, String> = BTreeMap::new();
    for (id, a) in kill_ids.iter().zip(&answers) {
        by_id.insert(id.clone(), kill_word(a));
    }
    // Notifications: until every id has one, or 10 s; then 2 s more for duplicates (the
    // counts of the table; what comes only with the next prompt is counted apart).
    let t_notes = Instant::now();
    let notes = s.notifications(Duration::from_secs(10))?;
    let notes_ms = t_notes.elapsed().as_millis() as u64;
    std::thread::sleep(Duration::from_secs(2));
    let notes = s.notifications(Duration::ZERO).unwrap_or(notes);
    // Then the next prompt, and 2 s: what a version held back comes with it.
    let held = notes.len();
    s.ping()?;
    std::thread::sleep(Duration::from_secs(2));
    let after_prompt = s.notifications(Duration::ZERO).unwrap_or_default();
    let late: Vec<BgNotification> = after_prompt[held.min(after_prompt.len())..].to_vec();
    let procs = s.task_procs();
    let mut rows = Vec::new();
    let mut tally: BTreeMap<String, usize> = BTreeMap::new();
    let mut count = |k: String| *tally.entry(k).or_default() += 1;
    for (i, id) in ids.iter().enumerate() {
        let mine: Vec<&BgNotification> = notes.iter().filter(|x| &x.id == id).collect();
        let later = late.iter().filter(|x| &x.id == id).count();
        if later > 0 {
            count(format!(
                "notified {later} time(s) only with the next prompt"
            ));
        }
        let n_started = s.started()[i].n;
        let alive = procs.iter().filter(|p| p.task == n_started).count();
        let notified = match mine.len() {
            0 => "never".to_string(),
            1 => "once".to_string(),
            k => format!("{k} times"),
        };
        let statuses: Vec<&str> = mine.iter().map(|x| x.status.as_str()).collect();
        let kill = by_id.get(id).cloned().unwrap_or_else(|| "not asked".into());
        count(format!("notified {notified}"));
        count(format!(
            "kill answered: {}",
            kill.split(" (").next().unwrap_or("")
        ));
        for st in &statuses {
            count(format!("notified status {st}"));
        }
        if alive > 0 {
            count("a process alive after".into());
        }
        // Mixed answers: killed but notified completed, or final but notified killed.
        if let Some(first) = statuses.first()
            && ((kill == "killed" && *first != "killed")
                || (kill.starts_with("already") && !kill.ends_with(first)))
        {
            count("kill answer and notification disagree".into());
        }
        rows.push(json!({"id": id, "delay_ms": delays[i], "kill": kill, "notified": mine.len(),
                         "statuses": statuses, "exit_codes": mine.iter().map(|x| x.exit_code).collect::<Vec<_>>(),
                         "alive_after": alive, "notified_with_next_prompt": later}));
    }
    let (agent, side) = s.requests();
    let kill_tool = s.tools().kill.0.clone();
    let malformed = s.malformed().len();
    let end = s.end(BgEnd::Exit).map_err(|e| format!("{e:#}"));
    drop(s);
    Ok(json!({
        "tasks": n,
        "kill_tool": kill_tool,
        "killed": kill,
        "spread_ms": spread.as_millis() as u64,
        "waiting_at_gate_before_release": waiting,
        "open_ms": open_ms,
        "spawn_turn_ms": spawn_ms,
        "kill_turn_ms": kill_ms,
        "notifications_wait_ms": notes_ms,
        "total_ms": total.elapsed().as_millis() as u64,
        "load_before": load_before,
        "load_after": load(),
        "model_requests": {"agent": agent, "side": side},
        "malformed_notifications": malformed,
        "end": match end { Ok(()) => "exit ok".to_string(), Err(e) => e },
        "tally": tally,
        "per_task": rows,
    }))
}
