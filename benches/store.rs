//! Benchmark of the strict reference store against the naive baseline (issue 2, part 6).
//!
//! For lists of 100, 1,000 and 10,000 tasks, with fsync on and off, it measures the median
//! time of one `create`, `update` (a field), `complete` (status to completed), `delete` and
//! `list`, for the strict store and, in the same run and on the same kind of list, for the
//! naive store (no lock, truncate and write in place, never fsyncs), and reports the ratio
//! strict / naive. Results go to `reports/bench-store.md` and `reports/bench-store.json`.
//!
//! Run with `cargo bench --bench store`. Under `cargo test --benches` (no `--bench`
//! argument) it runs a quick smoke pass on the smallest list and writes nothing. Set
//! `TASKPROOF_BENCH_DIR` to measure on another file system than the temporary folder's.
//!
//! Each list is seeded by the strict store without fsync (the same layout serves both
//! stores), then each operation gets a few warm-up runs and a fixed number of timed samples.
//! The list stays at its size throughout: a timed create is followed by an untimed delete of
//! the new task, a timed complete or delete works on a task created untimed just before.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use taskproof::protocol::{Request, Response};
use taskproof::store::{NaiveStore, Options, StrictStore, TaskStore};
use taskproof::task::{ListName, NewTask, Patch, Status, TaskId};

/// In the order [`measure`] returns them.
const OPS: [&str; 5] = ["create", "update", "complete", "delete", "list"];
const WARMUP: usize = 5;

#[derive(Clone, Copy)]
struct Plan {
    sizes: &'static [usize],
    /// Samples of each writing operation, without and with fsync.
    samples: (usize, usize),
    /// Samples of `list`, per size (it reads the whole folder).
    list_samples: fn(usize) -> usize,
}

const FULL: Plan = Plan {
    sizes: &[100, 1_000, 10_000],
    samples: (200, 40),
    list_samples: |n| match n {
        0..=100 => 100,
        101..=1_000 => 30,
        _ => 7,
    },
};

const SMOKE: Plan = Plan {
    sizes: &[100],
    samples: (5, 3),
    list_samples: |_| 3,
};

struct Row {
    size: usize,
    fsync: bool,
    op: &'static str,
    samples: usize,
    strict: Duration,
    naive: Duration,
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let plan = if full { FULL } else { SMOKE };
    let base = std::env::var_os("TASKPROOF_BENCH_DIR").map(PathBuf::from);
    let mut rows = Vec::new();
    for &size in plan.sizes {
        for fsync in [false, true] {
            let samples = if fsync {
                plan.samples.1
            } else {
                plan.samples.0
            };
            let list_samples = (plan.list_samples)(size);
            let strict = measure(&base, size, samples, list_samples, |root| {
                Box::new(StrictStore::open(root, Options { durable: fsync }).unwrap())
            });
            let naive = measure(&base, size, samples, list_samples, |root| {
                Box::new(NaiveStore::open(root).unwrap())
            });
            for (i, op) in OPS.iter().enumerate() {
                let row = Row {
                    size,
                    fsync,
                    op,
                    samples: if *op == "list" { list_samples } else { samples },
                    strict: strict[i],
                    naive: naive[i],
                };
                eprintln!(
                    "{:>6} tasks  fsync {:<5}  {:<8}  strict {:>10}  naive {:>10}  ratio {:>6.2}",
                    row.size,
                    row.fsync,
                    row.op,
                    fmt(row.strict),
                    fmt(row.naive),
                    ratio(&row)
                );
                rows.push(row);
            }
        }
    }
    if full {
        let dir = bench_dir(&base);
        write_reports(&rows, &plan, dir.path());
    }
}

fn bench_dir(base: &Option<PathBuf>) -> tempfile::TempDir {
    match base {
        Some(b) => tempfile::tempdir_in(b).unwrap(),
        None => tempfile::tempdir().unwrap(),
    }
}

fn ratio(r: &Row) -> f64 {
    r.strict.as_secs_f64() / r.naive.as_secs_f64()
}

fn fmt(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us >= 1000.0 {
        format!("{:.2} ms", us / 1000.0)
    } else {
        format!("{us:.1} µs")
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn list() -> ListName {
    "bench".parse().unwrap()
}

/// Seeds a list of `size` tasks, opens the store to measure on it, and returns the median
/// time of each of [`OPS`].
fn measure(
    base: &Option<PathBuf>,
    size: usize,
    samples: usize,
    list_samples: usize,
    open: impl Fn(&Path) -> Box<dyn TaskStore>,
) -> Vec<Duration> {
    let dir = bench_dir(base);
    let seeder = StrictStore::open(dir.path(), Options { durable: false }).unwrap();
    for i in 0..size {
        let r = seeder.handle(&Request::Create {
            list: list(),
            task: NewTask::new(format!("task {i}")),
        });
        assert!(r.is_ok(), "seeding: {r:?}");
    }
    let store = open(dir.path());
    let l = list();
    // One timed request; the answer must be a success.
    let run = |req: &Request| -> (Duration, Response) {
        let t = Instant::now();
        let r = store.handle(req);
        let d = t.elapsed();
        assert!(r.is_ok(), "{:?}: {r:?}", req.op());
        (d, r)
    };
    let new_id = |r: &Response| match r {
        Response::Task(t) => t.id,
        other => panic!("create answered {other:?}"),
    };
    let create = Request::Create {
        list: l.clone(),
        task: NewTask::new("new"),
    };
    let delete = |id| Request::Delete {
        list: l.clone(),
        id,
    };
    let update = |id, patch| Request::Update {
        list: l.clone(),
        id,
        patch,
    };
    // Every operation below leaves the list at `size` tasks: what a sample creates is deleted
    // untimed, and what it deletes or completes it created untimed.
    let series = |sample: &mut dyn FnMut() -> Duration| -> Duration {
        for _ in 0..WARMUP {
            sample();
        }
        median((0..samples).map(|_| sample()).collect())
    };

    let list_req = Request::List { list: l.clone() };
    run(&list_req);
    let list_time = median((0..list_samples).map(|_| run(&list_req).0).collect());
    let create_time = series(&mut || {
        let (d, r) = run(&create);
        run(&delete(new_id(&r)));
        d
    });
    let mut seeded = (1..=size as u64).map(TaskId).cycle();
    let update_time = series(&mut || {
        let patch = Patch {
            subject: Some("changed".into()),
            ..Patch::default()
        };
        run(&update(seeded.next().unwrap(), patch)).0
    });
    let complete_time = series(&mut || {
        let id = new_id(&run(&create).1);
        let patch = Patch {
            status: Some(Status::Completed),
            ..Patch::default()
        };
        let (d, _) = run(&update(id, patch));
        run(&delete(id));
        d
    });
    let delete_time = series(&mut || {
        let id = new_id(&run(&create).1);
        run(&delete(id)).0
    });
    vec![
        create_time,
        update_time,
        complete_time,
        delete_time,
        list_time,
    ]
}

fn command_output(cmd: &str, args: &[&str]) -> String {
    std::process::Command::new(cmd)
        .args(args)
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

fn write_reports(rows: &[Row], plan: &Plan, bench_dir: &Path) {
    let dir_str = bench_dir.to_string_lossy().into_owned();
    let fs = command_output("stat", &["-f", "-c", "%T", &dir_str]);
    let df = command_output("df", &["-T", &dir_str]);
    let device = df
        .lines()
        .nth(1)
        .unwrap_or("")
        .split_whitespace()
        .take(2)
        .collect::<Vec<_>>()
        .join(" ");
    let date = command_output("date", &["-u", "+%Y-%m-%dT%H:%M:%SZ"]);
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_default();
    let rustc = command_output("rustc", &["--version"]);

    let json_rows: Vec<Value> = rows
        .iter()
        .map(|r| {
            json!({
                "tasks": r.size,
                "fsync": r.fsync,
                "op": r.op,
                "samples": r.samples,
                "strict_median_us": r.strict.as_secs_f64() * 1e6,
                "naive_median_us": r.naive.as_secs_f64() * 1e6,
                "ratio": ratio(r),
            })
        })
        .collect();
    let report = json!({
        "format_version": 1,
        "date": date,
        "machine": {"cpus": cpus, "cpu": cpu, "filesystem": fs, "device": device, "rustc": rustc},
        "warmup": WARMUP,
        "samples": {"write_ops_without_fsync": plan.samples.0, "write_ops_with_fsync": plan.samples.1},
        "results": json_rows,
    });
    let reports = Path::new(env!("CARGO_MANIFEST_DIR")).join("reports");
    std::fs::create_dir_all(&reports).unwrap();
    let mut text = serde_json::to_string_pretty(&report).unwrap();
    text.push('\n');
    std::fs::write(reports.join("bench-store.json"), text).unwrap();

    let mut md = String::new();
    md.push_str("# Store benchmark: strict reference store vs naive baseline\n\n");
    md.push_str(
        "Produced by `cargo bench --bench store` (benches/store.rs). Each cell is the median \
         time of one operation; *ratio* is strict / naive, measured in the same run on lists \
         seeded the same way. The naive store is the `cc-2.1.17` model: no lock, files \
         truncated and rewritten in place, no fsync ever, so its column is the cost of \
         writing the bytes at all; with fsync on, only the strict store syncs. Medians below a \
         millisecond move by several times between runs on a machine shared with other work \
         (compare the rows of one operation across sizes); the trends across sizes and the \
         cost of fsync are what these numbers support.\n\n",
    );
    md.push_str(&format!(
        "- date: {date}\n- machine: {cpus} CPUs ({cpu}), {rustc}\n- file system of the \
         benchmark folder: {fs} ({device})\n- samples per operation: {} without fsync, {} with \
         fsync, after {WARMUP} warm-up runs; `list`: {} / {} / {} samples for 100 / 1,000 / \
         10,000 tasks\n- the list keeps its size: a timed create is followed by an untimed delete, a timed \
         complete or delete works on a task created untimed just before\n\n",
        plan.samples.0,
        plan.samples.1,
        (plan.list_samples)(100),
        (plan.list_samples)(1_000),
        (plan.list_samples)(10_000),
    ));
    for fsync in [false, true] {
        md.push_str(&format!(
            "## fsync {}\n\n| tasks | op | strict | naive | ratio |\n|---:|---|---:|---:|---:|\n",
            if fsync { "on" } else { "off" }
        ));
        for r in rows.iter().filter(|r| r.fsync == fsync) {
            md.push_str(&format!(
                "| {} | {} | {} | {} | {:.2} |\n",
                r.size,
                r.op,
                fmt(r.strict),
                fmt(r.naive),
                ratio(r)
            ));
        }
        md.push('\n');
    }
    std::fs::write(reports.join("bench-store.md"), md).unwrap();
    eprintln!("wrote reports/bench-store.md and reports/bench-store.json");
}
