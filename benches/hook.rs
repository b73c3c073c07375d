//! Benchmark of `taskproof check --stdin`, the Claude Code hook (issue 14, part 3).
//!
//! The hook runs before every task tool call, so its own time is what an agent waits for.
//! On a list of 1,000 tasks it measures the wall time of one hook run, from spawning the
//! built binary with the event on stdin to its exit, for each event the hook judges, and in
//! the same run two baselines: spawning `true` the same way (what any command hook costs)
//! and reading and parsing the list's 1,000 files in this process (what judging against the
//! list cannot avoid). Results go to `reports/bench-hook.md`.
//!
//! Run with `cargo bench --bench hook`. Under `cargo test --benches` (no `--bench`
//! argument) it runs a quick smoke pass on 100 tasks and writes nothing. Set
//! `TASKPROOF_BENCH_DIR` to measure on another file system than the temporary folder's.
//!
//! The cases are measured round-robin (one sample of each per round), so a burst of load on
//! the shared machine falls on every case alike; each case checks its exit status, so a
//! hook that stopped judging could not pass for a fast one.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const TARGET: Duration = Duration::from_millis(50);
const SESSION: &str = "bench-session";

#[derive(Clone, Copy)]
struct Plan {
    tasks: u64,
    warmup: usize,
    rounds: usize,
}

const FULL: Plan = Plan {
    tasks: 1_000,
    warmup: 5,
    rounds: 60,
};

const SMOKE: Plan = Plan {
    tasks: 100,
    warmup: 1,
    rounds: 3,
};

/// One thing timed: a hook run with an event (and the exit status it must give), or a
/// baseline.
struct Case {
    name: &'static str,
    what: Kind,
    samples: Vec<Duration>,
}

enum Kind {
    /// `taskproof check --stdin` with this event; it must exit with this status.
    Hook { event: Value, exit: i32 },
    /// `true`, spawned the same way, with the same bytes on stdin.
    SpawnTrue,
    /// Read and parse every task file of the list, in this process.
    ReadList,
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let plan = if full { FULL } else { SMOKE };
    let base = std::env::var_os("TASKPROOF_BENCH_DIR").map(PathBuf::from);
    let config = match &base {
        Some(b) => tempfile::tempdir_in(b).unwrap(),
        None => tempfile::tempdir().unwrap(),
    };
    let list = config.path().join("tasks").join(SESSION);
    seed(&list, plan.tasks);
    let n = plan.tasks;

    let update = |input: Value| {
        json!({"session_id": SESSION, "transcript_path": "/t.jsonl", "cwd": "/w",
               "permission_mode": "default", "hook_event_name": "PreToolUse",
               "tool_name": "TaskUpdate", "tool_input": input, "tool_use_id": "toolu_1"})
    };
    // Task 1 heads the first chain (1 blocks 2 blocks ... 10); task n heads none.
    let mut cases = vec![
        Case::new("spawn `true` (baseline)", Kind::SpawnTrue),
        Case::new(
            "read and parse the list's files in-process (baseline)",
            Kind::ReadList,
        ),
        Case::new(
            "event about no task (`Bash`): start-up only",
            Kind::Hook {
                event: json!({"session_id": SESSION, "hook_event_name": "PreToolUse",
                              "tool_name": "Bash", "tool_input": {"command": "ls"}}),
                exit: 0,
            },
        ),
        Case::new(
            "TaskUpdate owner (harmless)",
            Kind::Hook {
                event: update(json!({"taskId": n.to_string(), "owner": "me"})),
                exit: 0,
            },
        ),
        Case::new(
            "TaskUpdate addBlockedBy (no cycle)",
            Kind::Hook {
                event: update(
                    json!({"taskId": (n - 5).to_string(), "addBlockedBy": [(n - 15).to_string()]}),
                ),
                exit: 0,
            },
        ),
        Case::new(
            "TaskUpdate addBlockedBy closing a cycle (refused)",
            Kind::Hook {
                event: update(json!({"taskId": "1", "addBlockedBy": ["10"]})),
                exit: 2,
            },
        ),
        Case::new(
            "TaskUpdate status in_progress",
            Kind::Hook {
                event: update(json!({"taskId": (n - 9).to_string(), "status": "in_progress"})),
                exit: 0,
            },
        ),
        Case::new(
            "TaskCompleted with an open blocker (refused)",
            Kind::Hook {
                event: json!({"session_id": SESSION, "hook_event_name": "TaskCompleted",
                              "task_id": n.to_string(), "task_subject": "s",
                              "task_description": ""}),
                exit: 2,
            },
        ),
        Case::new(
            "TaskCreate",
            Kind::Hook {
                event: json!({"session_id": SESSION, "hook_event_name": "PreToolUse",
                              "tool_name": "TaskCreate",
                              "tool_input": {"subject": "new", "description": "d"}}),
                exit: 0,
            },
        ),
    ];

    let bin = env!("CARGO_BIN_EXE_taskproof");
    for round in 0..plan.warmup + plan.rounds {
        for case in &mut cases {
            let took = case.run(bin, config.path(), &list);
            if round >= plan.warmup {
                case.samples.push(took);
            }
        }
    }

    for c in &cases {
        eprintln!("{:>10}  {}", fmt(median(&c.samples)), c.name);
    }
    if full {
        write_report(&cases, &plan, config.path());
    }
}

impl Case {
    fn new(name: &'static str, what: Kind) -> Case {
        Case {
            name,
            what,
            samples: Vec::new(),
        }
    }

    fn run(&self, bin: &str, config: &Path, list: &Path) -> Duration {
        match &self.what {
            Kind::Hook { event, exit } => {
                let mut cmd = Command::new(bin);
                cmd.args(["check", "--stdin"])
                    .env("CLAUDE_CONFIG_DIR", config)
                    .env_remove("CLAUDE_CODE_TASK_LIST_ID");
                let (took, code) = spawn(cmd, event.to_string().as_bytes());
                assert_eq!(code, *exit, "{}: wrong exit status", self.name);
                took
            }
            Kind::SpawnTrue => spawn(Command::new("true"), b"{}").0,
            Kind::ReadList => {
                let start = Instant::now();
                let mut n = 0;
                for entry in std::fs::read_dir(list).unwrap() {
                    let entry = entry.unwrap();
                    if entry.file_name().to_string_lossy().ends_with(".json") {
                        let bytes = std::fs::read(entry.path()).unwrap();
                        let v: Value = serde_json::from_slice(&bytes).unwrap();
                        n += usize::from(v.is_object());
                    }
                }
                let took = start.elapsed();
                assert!(n > 0);
                took
            }
        }
    }
}

/// Spawns `cmd` with `stdin` as its input, output discarded, and returns the wall time to
/// its exit and its exit status.
fn spawn(mut cmd: Command, stdin: &[u8]) -> (Duration, i32) {
    let start = Instant::now();
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // `true` may exit before reading: a closed pipe is fine.
    let _ = child.stdin.take().unwrap().write_all(stdin);
    let status = child.wait().unwrap();
    (start.elapsed(), status.code().unwrap_or(-1))
}

/// A list of `n` tasks as Claude Code writes them: chains of ten (each task blocks the
/// next, recorded on both sides), the first half completed, a description of a few lines,
/// and the store's `.highwatermark` and `.lock`.
fn seed(list: &Path, n: u64) {
    std::fs::create_dir_all(list).unwrap();
    for i in 1..=n {
        let head = (i - 1) % 10 == 0;
        let tail = i % 10 == 0 || i == n;
        let blocks: Vec<String> = if tail {
            vec![]
        } else {
            vec![(i + 1).to_string()]
        };
        let blocked_by: Vec<String> = if head {
            vec![]
        } else {
            vec![(i - 1).to_string()]
        };
        let status = if i <= n / 2 { "completed" } else { "pending" };
        let task = json!({
            "id": i.to_string(),
            "subject": format!("Implement part {i} of the feature"),
            "description": "Read the module, change what the task says, run the tests, and \
                            write down anything surprising for the next task in the chain. "
                .repeat(3),
            "activeForm": format!("Implementing part {i}"),
            "status": status,
            "blocks": blocks,
            "blockedBy": blocked_by,
            "metadata": {"area": "bench"},
        });
        std::fs::write(
            list.join(format!("{i}.json")),
            serde_json::to_string_pretty(&task).unwrap(),
        )
        .unwrap();
    }
    std::fs::write(list.join(".highwatermark"), n.to_string()).unwrap();
    std::fs::write(list.join(".lock"), "").unwrap();
}

fn median(v: &[Duration]) -> Duration {
    let mut v = v.to_vec();
    v.sort();
    v[v.len() / 2]
}

fn fmt(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

fn command_output(cmd: &str, args: &[&str]) -> String {
    Command::new(cmd)
        .args(args)
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

fn write_report(cases: &[Case], plan: &Plan, dir: &Path) {
    let dir_str = dir.to_string_lossy().into_owned();
    let fs = command_output("stat", &["-f", "-c", "%T", &dir_str]);
    let date = command_output("date", &["-u", "+%Y-%m-%dT%H:%M:%SZ"]);
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let rustc = command_output("rustc", &["--version"]);
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .unwrap_or_default();
    let spawn_true = median(&cases[0].samples);
    let read_list = median(&cases[1].samples);
    let hooks: Vec<&Case> = cases
        .iter()
        .filter(|c| matches!(c.what, Kind::Hook { .. }))
        .collect();
    let slowest = hooks
        .iter()
        .map(|c| median(&c.samples))
        .max()
        .unwrap_or_default();

    let mut md = String::new();
    md.push_str("# Hook benchmark: `taskproof check --stdin` on a 1,000-task list\n\n");
    md.push_str(
        "Produced by `cargo bench --bench hook` (benches/hook.rs). Each row is the median wall \
         time of one run, from spawning the release binary with the event on stdin to its \
         exit, which is what Claude Code waits for before the task tool runs. The two \
         baselines are measured in the same run, round-robin with the hook runs: spawning \
         `true` the same way (the cost of any command hook) and reading and parsing the \
         list's task files in the benchmark's own process (the cost of looking at the list \
         at all). Ratios are against those baselines; absolute times move with the load of \
         the shared machine, the ratios much less.\n\n",
    );
    md.push_str(&format!(
        "- date: {date}\n- machine: {cpus} CPUs, {rustc}, load average {load} at the end\n\
         - file system of the list: {fs}\n- list: {} tasks in chains of ten, both sides of \
         each edge recorded, half completed, `.highwatermark` and `.lock` present\n\
         - {} rounds after {} warm-up rounds; each round times every row once\n\n",
        plan.tasks, plan.rounds, plan.warmup,
    ));
    md.push_str("| run | median | / spawn `true` | / read the list |\n|---|---:|---:|---:|\n");
    for c in cases {
        let m = median(&c.samples);
        md.push_str(&format!(
            "| {} | {} | {:.1} | {:.1} |\n",
            c.name,
            fmt(m),
            m.as_secs_f64() / spawn_true.as_secs_f64(),
            m.as_secs_f64() / read_list.as_secs_f64(),
        ));
    }
    md.push_str(&format!(
        "\nTarget: under {} median for every event the hook judges. Slowest hook row: {} — {}.\n",
        fmt(TARGET),
        fmt(slowest),
        if slowest < TARGET { "met" } else { "NOT met" },
    ));
    let reports = Path::new(env!("CARGO_MANIFEST_DIR")).join("reports");
    std::fs::create_dir_all(&reports).unwrap();
    std::fs::write(reports.join("bench-hook.md"), md).unwrap();
    eprintln!("wrote reports/bench-hook.md");
}
