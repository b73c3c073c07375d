//! The race checker's speed on synthetic histories (issue 15; reports/race-checker-speed.md).
//!
//! `cargo bench --bench checker -- table` measures every shape, 10k to 1M operations, and
//! prints the table of reports/race-checker-speed.md (scripts/race-reports.sh writes it).
//! `cargo bench --bench checker -- OPS TASKS [UNANSWERED_PERCENT [lose]]`, e.g.
//! `cargo bench --bench checker -- 100000 16 1`. Prints the generation time, the check's
//! wall and processor time and the verdicts. Under `cargo test --benches` (no arguments
//! after `--`, or `--bench` only) it checks a small history and prints nothing.
//! Run the built binary under `valgrind --tool=callgrind` to count the checker's
//! instructions, which do not depend on the machine's load.

#[path = "../crates/race/tests/synthetic/mod.rs"]
mod synthetic;

use std::time::{Duration, Instant};

use synthetic::{Shape, synthesize};
use taskproof_race::{FinalState, Findings, check_all};

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    if args.first().is_some_and(|a| a == "table") {
        print!("{}", run(taskproof_race::DEFAULT_LIN_BUDGET));
        return;
    }
    let num = |i: usize, default: f64| -> f64 {
        args.get(i)
            .map(|a| a.parse().unwrap_or_else(|_| panic!("not a number: {a}")))
            .unwrap_or(default)
    };
    let quick = args.is_empty();
    let shape = Shape {
        ops: num(0, 2_000.0) as usize,
        tasks: num(1, 16.0) as usize,
        sessions: 16,
        unanswered: num(2, 1.0) / 100.0,
        lose_one: args.get(3).is_some_and(|a| a == "lose"),
    };
    let m = measure(shape, taskproof_race::DEFAULT_LIN_BUDGET);
    let f = &m.findings;
    if quick {
        assert_eq!(f.lin.unknown, 0);
        return;
    }
    println!(
        "{shape:?}: generated in {:.3} s; checked in {:.3} s wall, {} processor; {} linearizable, {} not, {} unknown, {} anomalies, {} steps",
        m.generated.as_secs_f64(),
        m.checked.as_secs_f64(),
        m.cpu
            .map(|c| format!("{:.3} s", c.as_secs_f64()))
            .unwrap_or_else(|| "n/a".into()),
        f.lin.linearizable,
        f.lin.nonlinearizable,
        f.lin.unknown,
        f.total(),
        f.lin.steps
    );
}

/// The processor time this process's threads have used so far, from
/// `/proc/self/task/*/schedstat` (Linux; `None` elsewhere). On a machine shared with other
/// jobs the wall-clock time of a check depends on how much of a core it got; the
/// processor time does not.
fn cpu_time() -> Option<Duration> {
    let mut total = 0u64;
    for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let text = std::fs::read_to_string(task.path().join("schedstat")).ok()?;
        total += text.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(Duration::from_nanos(total))
}

/// One shape measured.
pub struct Measured {
    /// Building the history: not the checker's time.
    pub generated: Duration,
    /// The checker, wall clock.
    pub checked: Duration,
    /// The checker, processor time of all threads (when the system tells).
    pub cpu: Option<Duration>,
    pub findings: Findings,
}

/// Times the full checker on one shape. The history is built before the clocks start.
pub fn measure(shape: Shape, budget: u64) -> Measured {
    let start = Instant::now();
    let (history, tasks, end) = synthesize(shape, 1);
    let generated = start.elapsed();
    let cpu_start = cpu_time();
    let start = Instant::now();
    let f = check_all(
        &history,
        &FinalState {
            tasks: &tasks,
            corrupt: &[],
            torn: &[],
            end,
        },
        budget,
    );
    let checked = start.elapsed();
    let cpu = cpu_start.zip(cpu_time()).map(|(a, b)| b.saturating_sub(a));
    // Freeing a million operations is not the checker's work either.
    drop(history);
    Measured {
        generated,
        checked,
        cpu,
        findings: f,
    }
}

const fn shape(ops: usize, tasks: usize, unanswered: f64, lose_one: bool) -> Shape {
    Shape {
        ops,
        tasks,
        sessions: 16,
        unanswered,
        lose_one,
    }
}

/// The shapes the checked-in measurement uses, in order. A shape that differs from an
/// earlier one only in its number of operations is compared with it in the table.
pub const SHAPES: [Shape; 11] = [
    shape(10_000, 1, 0.0, false),
    shape(10_000, 1, 0.01, false),
    shape(100_000, 1, 0.01, false),
    shape(10_000, 16, 0.01, false),
    shape(100_000, 16, 0.01, false),
    shape(1_000_000, 16, 0.01, false),
    shape(10_000, 100, 0.01, false),
    shape(100_000, 100, 0.01, false),
    shape(10_000, 1, 0.01, true),
    shape(10_000, 16, 0.01, true),
    shape(100_000, 16, 0.01, true),
];

/// Runs every shape and renders a Markdown table: the check time, operations checked per
/// second, and for a shape measured before at a smaller size, how much longer it took for
/// how many times the operations (same run, so the ratio is what counts).
pub fn run(budget: u64) -> String {
    let mut s = String::from(
        "| operations | tasks | sessions | unanswered | one update lost | generation (not counted) | check time | check processor time | operations per processor second | vs the smaller size | linearizable | not | unknown | lost | search steps |\n|---:|---:|---:|---:|:-:|---:|---:|---:|---:|:--|---:|---:|---:|---:|---:|\n",
    );
    // Sizes are compared by processor time when the system tells it: the wall clock of a
    // shared machine measures the load as much as the checker.
    let mut done: Vec<(Shape, Duration)> = Vec::new();
    for shape in SHAPES {
        let m = measure(shape, budget);
        let (g, t, f) = (m.generated, m.checked, &m.findings);
        let cpu = m
            .cpu
            .map(|c| format!("{:.3} s", c.as_secs_f64()))
            .unwrap_or_else(|| "n/a".into());
        let smaller = done
            .iter()
            .rev()
            .find(|(d, _)| {
                d.ops < shape.ops
                    && d.tasks == shape.tasks
                    && d.sessions == shape.sessions
                    && d.unanswered == shape.unanswered
                    && d.lose_one == shape.lose_one
            })
            .map(|(d, dt)| {
                format!(
                    "{:.1}x the {} for {}x the operations",
                    m.cpu.unwrap_or(t).as_secs_f64() / dt.as_secs_f64().max(1e-9),
                    if m.cpu.is_some() {
                        "processor time"
                    } else {
                        "time"
                    },
                    shape.ops / d.ops
                )
            })
            .unwrap_or_default();
        s += &format!(
            "| {} | {} | {} | {:.0}% | {} | {:.2} s | {:.3} s | {cpu} | {:.0} | {smaller} | {} | {} | {} | {} | {} |\n",
            shape.ops,
            shape.tasks,
            shape.sessions,
            shape.unanswered * 100.0,
            if shape.lose_one { "yes" } else { "no" },
            g.as_secs_f64(),
            t.as_secs_f64(),
            shape.ops as f64 / m.cpu.unwrap_or(t).as_secs_f64().max(1e-9),
            f.lin.linearizable,
            f.lin.nonlinearizable,
            f.lin.unknown,
            f.count(taskproof_race::AnomalyKind::Lost),
            f.lin.steps
        );
        done.push((shape, m.cpu.unwrap_or(t)));
    }
    s
}
