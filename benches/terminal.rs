//! Benchmark of one request to the real Claude Code in its terminal UI (issue 24: a scenario
//! that plays a user runs its sessions there, so its requests cost what the UI costs).
//!
//! For one published version (`TASKPROOF_BENCH_CLAUDE_CODE`, default `latest`; installed
//! into the cache on first use) it opens a session in the terminal UI and one in print mode
//! (the baseline, measured in the same run), creates a task in each, then times `get` and
//! `update` requests round-robin, one of each mode per round, from sending the request to
//! having its answer (a whole model turn: the prompt, the tool call, the real tool, the
//! result). Results go to `reports/bench-terminal.md` with the load average.
//!
//! Run with `cargo bench --bench terminal`. It needs node and npm (the CLI is installed from
//! npm) and starts real CLIs, so a plain `cargo test` never runs it.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use taskproof_claude_code::{ClaudeCode, ClaudeCodeSession, Executable};
use taskproof_session::{Session, SessionOptions};

const ROUNDS: usize = 20;
const TARGET: Duration = Duration::from_millis(1500);

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

fn open(cc: &ClaudeCode, interactive: bool, root: &std::path::Path) -> ClaudeCodeSession {
    let options = SessionOptions {
        timeout: Duration::from_secs(60),
        start_timeout: Duration::from_secs(120),
        interactive,
        ..SessionOptions::default()
    };
    ClaudeCodeSession::open(cc, root, options).unwrap_or_else(|(e, _)| panic!("open: {e}"))
}

fn timed(s: &mut ClaudeCodeSession, request: &Value) -> Duration {
    let start = Instant::now();
    let answer = s
        .call(request)
        .unwrap_or_else(|e| panic!("{request}: {e}\n{}", s.stderr()));
    let took = start.elapsed();
    assert_eq!(answer["ok"], true, "{request} -> {answer}");
    took
}

fn stats(mut v: Vec<Duration>) -> (Duration, Duration, Duration) {
    v.sort();
    (v[0], v[v.len() / 2], v[v.len() - 1])
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!(
            "terminal: starts real Claude Code CLIs; run it with `cargo bench --bench terminal`"
        );
        return;
    }
    let version = std::env::var("TASKPROOF_BENCH_CLAUDE_CODE").unwrap_or_else(|_| "latest".into());
    let cc = ClaudeCode::parse(&version).expect("a version or latest");
    let installed = cc.prepare().expect("install Claude Code with npm");
    // Neither mode may be forced from outside: each session chooses by `interactive`.
    assert!(
        std::env::var_os(taskproof_claude_code::DRIVE_ENV).is_none(),
        "unset TASKPROOF_CLAUDE_CODE_DRIVE: this benchmark compares both modes"
    );
    let load_before = load();
    let (root_t, root_p) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut terminal = open(&cc, true, root_t.path());
    let mut print = open(&cc, false, root_p.path());
    let create = json!({"op": "create", "list": "bench", "task": {"subject": "bench"}});
    // The first request of each starts its CLI: not measured.
    timed(&mut terminal, &create);
    timed(&mut print, &create);
    let (mut t_get, mut p_get, mut t_upd, mut p_upd) = (vec![], vec![], vec![], vec![]);
    for round in 0..ROUNDS {
        let get = json!({"op": "get", "list": "bench", "id": "1"});
        let update = json!({"op": "update", "list": "bench", "id": "1",
            "patch": {"metadata": {"round": round}}});
        t_get.push(timed(&mut terminal, &get));
        p_get.push(timed(&mut print, &get));
        t_upd.push(timed(&mut terminal, &update));
        p_upd.push(timed(&mut print, &update));
    }
    let _ = terminal.close();
    let _ = print.close();
    let load_after = load();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# One request to Claude Code in its terminal UI\n\nProduced by `cargo bench --bench terminal` (benches/terminal.rs). Claude Code {} ({}), {} rounds; each request is a whole model turn against the scripted model, timed from sending it to its answer; print mode is the baseline, measured round-robin in the same run.\n",
        installed.version,
        match installed.program {
            Executable::Node(_) => "cli.js",
            Executable::Native(_) => "native",
        },
        ROUNDS
    );
    let _ = writeln!(
        out,
        "- load average (1, 5, 15 min): {load_before} at the start, {load_after} at the end\n"
    );
    let _ = writeln!(
        out,
        "| request | terminal UI min / median / max | print mode min / median / max | median ratio |\n|---|---|---|---:|"
    );
    let mut medians = Vec::new();
    for (name, t, p) in [("get", t_get, p_get), ("update", t_upd, p_upd)] {
        let (tmin, tmed, tmax) = stats(t);
        let (pmin, pmed, pmax) = stats(p);
        medians.push(tmed);
        let _ = writeln!(
            out,
            "| `{name}` | {} / {} / {} | {} / {} / {} | {:.2}x |",
            ms(tmin),
            ms(tmed),
            ms(tmax),
            ms(pmin),
            ms(pmed),
            ms(pmax),
            tmed.as_secs_f64() / pmed.as_secs_f64()
        );
    }
    let worst = medians.iter().max().copied().unwrap_or_default();
    let _ = writeln!(
        out,
        "\nTarget (issue 24): a terminal-UI request at most {} median on an idle machine: {} (worst median {}).",
        ms(TARGET),
        if worst <= TARGET { "met" } else { "not met" },
        ms(worst)
    );
    print!("{out}");
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("reports/bench-terminal.md");
    std::fs::write(&path, out).expect("write reports/bench-terminal.md");
}
