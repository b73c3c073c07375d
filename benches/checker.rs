//! One shape of the race checker's benchmark, for profiling (issue 15): the whole checker
//! on one synthetic history, as `taskproof race --bench-checker` measures every shape.
//!
//! `cargo bench --bench checker -- OPS TASKS [UNANSWERED_PERCENT [lose]]`, e.g.
//! `cargo bench --bench checker -- 100000 16 1`. Prints the generation time, the check's
//! wall and processor time and the verdicts. Under `cargo test --benches` (no arguments
//! after `--`, or `--bench` only) it checks a small history and prints nothing.
//! Run the built binary under `valgrind --tool=callgrind` to count the checker's
//! instructions, which do not depend on the machine's load.

use taskproof::race::bench::{Shape, measure};

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
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
    let m = measure(shape, taskproof::race::DEFAULT_LIN_BUDGET);
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
