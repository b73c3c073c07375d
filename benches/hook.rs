//! Benchmark of `taskproof check --stdin`, the Claude Code hook (issue 14, part 3).
//!
//! The hook runs before every task tool call, so its own time is what an agent waits for.
//! On a list of 1,000 tasks it measures the wall time of one hook run, from spawning the
//! built binary with the event on stdin to its exit, for each event the hook judges, and in
//! the same run two baselines: spawning `true` the same way (what any command hook costs)
//! and reading and parsing the list's 1,000 files in this process (what judging against the
//! list cannot avoid). Results go to `reports/bench-hook.md`.
//!
//! Each event is timed three ways in the same run (issue 42): with the list's journal (the
//! hook as installed), with `--no-journal` (the hook as it was before the journal: the same
//! judging, no journal read or written), and, when `TASKPROOF_BENCH_BEFORE` names a
//! `taskproof` binary built from the commit before the journal, with that binary (and
//! `TASKPROOF_BENCH_BEFORE_FROM` says, for the report, what it was built from). The
//! journal's `PostToolUse` run is timed too, against what that entry cost before (a note and
//! exit). The report gives each event's median with the journal over its median without.
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
    // Three hooks per event on a machine shared with other builds: enough rounds that a
    // burst of load moves a median by less than the 1.3x the journal is held to.
    rounds: 120,
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
    /// CPU time (user and system) spent by the run, summed over the timed samples.
    cpu: Duration,
}

/// Which hook a row runs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Hook {
    /// This build, keeping the list's journal.
    Journal,
    /// This build with `--no-journal`: the judging of before the journal.
    NoJournal,
    /// The binary `TASKPROOF_BENCH_BEFORE` names (built before the journal).
    Before,
}

impl Hook {
    fn label(self) -> &'static str {
        match self {
            Hook::Journal => "with the journal",
            Hook::NoJournal => "--no-journal",
            Hook::Before => "binary before the journal",
        }
    }
}

enum Kind {
    /// `taskproof check --stdin` with this event; it must exit with this status. With
    /// `touch`, a task file is rewritten before the run (not timed), as the tool call the
    /// event follows did.
    Hook {
        event: Value,
        exit: i32,
        hook: Hook,
        touch: bool,
    },
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
    let events: Vec<(&'static str, Value, i32, bool)> = vec![
        (
            "event about no task (`Bash`): start-up only",
            json!({"session_id": SESSION, "hook_event_name": "PreToolUse",
                   "tool_name": "Bash", "tool_input": {"command": "ls"}}),
            0,
            false,
        ),
        (
            "TaskUpdate owner (harmless)",
            update(json!({"taskId": n.to_string(), "owner": "me"})),
            0,
            false,
        ),
        (
            "TaskUpdate addBlockedBy (no cycle)",
            update(json!({"taskId": (n - 5).to_string(), "addBlockedBy": [(n - 15).to_string()]})),
            0,
            false,
        ),
        (
            "TaskUpdate addBlockedBy closing a cycle (refused)",
            update(json!({"taskId": "1", "addBlockedBy": ["10"]})),
            2,
            false,
        ),
        (
            "TaskUpdate status in_progress",
            update(json!({"taskId": (n - 9).to_string(), "status": "in_progress"})),
            0,
            false,
        ),
        (
            "TaskCompleted with an open blocker (refused)",
            json!({"session_id": SESSION, "hook_event_name": "TaskCompleted",
                   "task_id": n.to_string(), "task_subject": "s",
                   "task_description": ""}),
            2,
            false,
        ),
        (
            "TaskCreate",
            json!({"session_id": SESSION, "hook_event_name": "PreToolUse",
                   "tool_name": "TaskCreate",
                   "tool_input": {"subject": "new", "description": "d"}}),
            0,
            false,
        ),
        (
            "PostToolUse after a TaskUpdate (one file rewritten)",
            json!({"session_id": SESSION, "hook_event_name": "PostToolUse",
                   "tool_name": "TaskUpdate",
                   "tool_input": {"taskId": (n - 1).to_string(), "owner": "me"},
                   "tool_response": {"success": true}, "tool_use_id": "toolu_1"}),
            0,
            true,
        ),
    ];
    let before = std::env::var_os("TASKPROOF_BENCH_BEFORE").map(PathBuf::from);
    let mut hooks = vec![Hook::NoJournal, Hook::Journal];
    if before.is_some() {
        hooks.insert(0, Hook::Before);
    }
    let mut cases = vec![
        Case::new("spawn `true` (baseline)", Kind::SpawnTrue),
        Case::new(
            "read and parse the list's files in-process (baseline)",
            Kind::ReadList,
        ),
    ];
    for (name, event, exit, touch) in &events {
        for &hook in &hooks {
            cases.push(Case::new(
                name,
                Kind::Hook {
                    event: event.clone(),
                    exit: *exit,
                    hook,
                    touch: *touch,
                },
            ));
        }
    }

    let bin = env!("CARGO_BIN_EXE_taskproof");
    let load_before = uptime();
    for round in 0..plan.warmup + plan.rounds {
        for case in &mut cases {
            case.prepare(&list, n, round);
            let cpu_before = cpu_times();
            let took = case.run(bin, before.as_deref(), config.path(), &list);
            let cpu_after = cpu_times();
            if round >= plan.warmup {
                case.samples.push(took);
                // A spawned run's CPU is its own, accounted to this process's waited-for
                // children; an in-process run's is this process's own.
                case.cpu += match case.what {
                    Kind::ReadList => cpu_after.0.saturating_sub(cpu_before.0),
                    _ => cpu_after.1.saturating_sub(cpu_before.1),
                };
            }
        }
    }

    let load_after = uptime();
    for c in &cases {
        eprintln!(
            "{:>10} wall {:>10} cpu  {}",
            fmt(median(&c.samples)),
            fmt(c.cpu_per_run()),
            c.label()
        );
    }
    let journal = config
        .path()
        .join("tasks")
        .join(".taskproof-journal")
        .join(format!("{SESSION}.jsonl"));
    let journal_len = std::fs::metadata(&journal).map_or(0, |m| m.len());
    assert!(
        journal_len > 0,
        "the hook kept no journal at {}",
        journal.display()
    );
    eprintln!(
        "load before: {load_before}\nload after:  {load_after}\njournal: {journal_len} bytes"
    );
    if full {
        let load = (load_before, load_after);
        write_report(&cases, &plan, config.path(), &load, journal_len);
    }
}

/// `uptime`'s line, for the load the figures were measured under.
fn uptime() -> String {
    command_output("uptime", &[])
}

impl Case {
    fn new(name: &'static str, what: Kind) -> Case {
        Case {
            name,
            what,
            samples: Vec::new(),
            cpu: Duration::ZERO,
        }
    }

    /// Mean CPU time of one run.
    fn cpu_per_run(&self) -> Duration {
        self.cpu / self.samples.len().max(1) as u32
    }

    fn hook(&self) -> Option<Hook> {
        match self.what {
            Kind::Hook { hook, .. } => Some(hook),
            _ => None,
        }
    }

    /// The row's name in the output: the event and which hook.
    fn label(&self) -> String {
        match self.hook() {
            Some(h) => format!("{} ({})", self.name, h.label()),
            None => self.name.to_string(),
        }
    }

    /// What the tool call an event follows did, before the timed run: rewrite task
    /// `n - 1` with another owner each round, so a `PostToolUse` run has a new version to
    /// journal.
    fn prepare(&self, list: &Path, n: u64, round: usize) {
        if let Kind::Hook { touch: true, .. } = self.what {
            let path = list.join(format!("{}.json", n - 1));
            let mut task: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
            task["owner"] = json!(format!("agent-{round}"));
            std::fs::write(&path, serde_json::to_string_pretty(&task).unwrap()).unwrap();
        }
    }

    fn run(&self, bin: &str, before: Option<&Path>, config: &Path, list: &Path) -> Duration {
        match &self.what {
            Kind::Hook {
                event, exit, hook, ..
            } => {
                let mut cmd = match hook {
                    Hook::Before => Command::new(before.expect("TASKPROOF_BENCH_BEFORE is set")),
                    _ => Command::new(bin),
                };
                cmd.args(["check", "--stdin"])
                    .env("CLAUDE_CONFIG_DIR", config)
                    .env_remove("CLAUDE_CODE_TASK_LIST_ID");
                if *hook == Hook::NoJournal {
                    cmd.arg("--no-journal");
                }
                let (took, code) = spawn(cmd, event.to_string().as_bytes());
                assert_eq!(code, *exit, "{}: wrong exit status", self.label());
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

/// CPU time (user and system) of this process and of its waited-for children, from
/// `/proc/self/stat` (fields 14 to 17, in clock ticks of 10 ms). One run is shorter than a
/// tick, but the kernel keeps the totals in nanoseconds and rounds them only when read, so
/// the sum over all samples of a case is exact to about one tick.
fn cpu_times() -> (Duration, Duration) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The command name may hold spaces; the fields after it are plain numbers.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = rest
        .split_whitespace()
        .skip(11)
        .take(4)
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    let tick = |t: u64| Duration::from_millis(t * 10);
    match f.as_slice() {
        [ut, st, cut, cst] => (tick(ut + st), tick(cut + cst)),
        _ => (Duration::ZERO, Duration::ZERO),
    }
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

fn write_report(
    cases: &[Case],
    plan: &Plan,
    dir: &Path,
    load: &(String, String),
    journal_len: u64,
) {
    let dir_str = dir.to_string_lossy().into_owned();
    let fs = command_output("stat", &["-f", "-c", "%T", &dir_str]);
    let date = command_output("date", &["-u", "+%Y-%m-%dT%H:%M:%SZ"]);
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let rustc = command_output("rustc", &["--version"]);
    let spawn_true = median(&cases[0].samples);
    let read_list = median(&cases[1].samples);
    let journaled: Vec<&Case> = cases
        .iter()
        .filter(|c| c.hook() == Some(Hook::Journal))
        .collect();
    let slowest = journaled
        .iter()
        .map(|c| median(&c.samples))
        .max()
        .unwrap_or_default();
    let before_given = cases.iter().any(|c| c.hook() == Some(Hook::Before));

    let mut md = String::new();
    md.push_str("# Hook benchmark: `taskproof check --stdin` on a 1,000-task list\n\n");
    md.push_str(
        "Produced by `cargo bench --bench hook` (benches/hook.rs). Each row is the median wall \
         time of one run, from spawning the release binary with the event on stdin to its \
         exit, which is what Claude Code waits for before (or, for `PostToolUse`, after) the \
         task tool runs. Every event is timed with the list's journal (the hook as installed) \
         and with `--no-journal` (the same judging, no journal read or written: the hook as it \
         was before the journal), round-robin in the same run, so both see the same load. The \
         two baselines are measured the same way: spawning `true` (the cost of any command \
         hook) and reading and parsing the list's task files in the benchmark's own process \
         (the cost of looking at the list at all). Absolute times move with the load of the \
         shared machine, the ratios much less.\n\n",
    );
    md.push_str(&format!(
        "- date: {date}\n- machine: {cpus} CPUs, {rustc}\n- `uptime` before: `{}`\n- `uptime` after: `{}`\n\
         - file system of the list: {fs}\n- list: {} tasks in chains of ten, both sides of \
         each edge recorded, half completed, `.highwatermark` and `.lock` present; its journal \
         after the run: {journal_len} bytes (every task's last version, the runs' lines)\n\
         - {} rounds after {} warm-up rounds; each round times every row once\n",
        load.0, load.1, plan.tasks, plan.rounds, plan.warmup,
    ));
    match std::env::var("TASKPROOF_BENCH_BEFORE") {
        Ok(path) => md.push_str(&format!(
            "- binary before the journal (`TASKPROOF_BENCH_BEFORE`): `{path}`, built {}\n\n",
            std::env::var("TASKPROOF_BENCH_BEFORE_FROM").unwrap_or_else(|_| {
                "from a commit not named (set TASKPROOF_BENCH_BEFORE_FROM)".into()
            })
        )),
        Err(_) => md.push('\n'),
    }

    md.push_str("## The journal's cost, per event\n\n");
    if before_given {
        md.push_str(
            "| event | binary before the journal | `--no-journal` | with the journal | journal / `--no-journal` | journal / before |\n\
             |---|---:|---:|---:|---:|---:|\n",
        );
    } else {
        md.push_str(
            "| event | `--no-journal` | with the journal | journal / `--no-journal` |\n\
             |---|---:|---:|---:|\n",
        );
    }
    let of = |name: &str, hook: Hook| {
        cases
            .iter()
            .find(|c| c.name == name && c.hook() == Some(hook))
            .map(|c| median(&c.samples))
    };
    let mut ratios = Vec::new();
    for c in &journaled {
        let with = median(&c.samples);
        let without = of(c.name, Hook::NoJournal).unwrap_or_default();
        let ratio = with.as_secs_f64() / without.as_secs_f64().max(1e-9);
        if !c.name.starts_with("PostToolUse") {
            ratios.push(ratio);
        }
        match of(c.name, Hook::Before) {
            Some(b) => md.push_str(&format!(
                "| {} | {} | {} | {} | {:.2}x | {:.2}x |\n",
                c.name,
                fmt(b),
                fmt(without),
                fmt(with),
                ratio,
                with.as_secs_f64() / b.as_secs_f64().max(1e-9),
            )),
            None => md.push_str(&format!(
                "| {} | {} | {} | {:.2}x |\n",
                c.name,
                fmt(without),
                fmt(with),
                ratio
            )),
        }
    }
    ratios.sort_by(f64::total_cmp);
    let worst = ratios.last().copied().unwrap_or_default();
    md.push_str(&format!(
        "\nTarget (issue 42): the hook's median with the journal within 1.3x of its median \
         without, for every event it judged before. Largest ratio of those: {worst:.2}x, {}. \
         The `PostToolUse` row is a run the journal adds: before the journal that entry was \
         not installed (the hook only printed that it judges nothing there), so its ratio is \
         the cost of the new entry, not a slowdown of an old one.\n\n",
        if worst <= 1.3 { "met" } else { "NOT met" },
    ));

    md.push_str("## Every row\n\n");
    let cpu_true = cases[0].cpu_per_run();
    md.push_str(
        "| run | median wall | / spawn `true` | / read the list | mean CPU | CPU / `true` |\n\
         |---|---:|---:|---:|---:|---:|\n",
    );
    for c in cases {
        let m = median(&c.samples);
        md.push_str(&format!(
            "| {} | {} | {:.1} | {:.1} | {} | {:.1} |\n",
            c.label(),
            fmt(m),
            m.as_secs_f64() / spawn_true.as_secs_f64(),
            m.as_secs_f64() / read_list.as_secs_f64(),
            fmt(c.cpu_per_run()),
            c.cpu_per_run().as_secs_f64() / cpu_true.as_secs_f64().max(1e-9),
        ));
    }
    let slowest_cpu = journaled
        .iter()
        .map(|c| c.cpu_per_run())
        .max()
        .unwrap_or_default();
    md.push_str(&format!(
        "\nTarget (issue 14): under {} median for every event the hook judges. Slowest row with \
         the journal: {} wall, {}; {} CPU per run, {}.\n\n\
         *mean CPU* is the user and system time the run itself used (for a spawned run, from \
         the kernel's accounting of waited-for children in `/proc/self/stat`, summed over \
         the samples, exact to about 10 ms in total). On a machine shared with other work the \
         wall time is mostly waiting for a CPU; the CPU time is what the hook costs where it \
         runs alone.\n",
        fmt(TARGET),
        fmt(slowest),
        if slowest < TARGET { "met" } else { "NOT met" },
        fmt(slowest_cpu),
        if slowest_cpu < TARGET {
            "under the target"
        } else {
            "NOT under the target"
        },
    ));
    let reports = Path::new(env!("CARGO_MANIFEST_DIR")).join("reports");
    std::fs::create_dir_all(&reports).unwrap();
    std::fs::write(reports.join("bench-hook.md"), md).unwrap();
    eprintln!("wrote reports/bench-hook.md");
}
