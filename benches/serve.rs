//! Benchmark of the store as agents reach it (issue 28): `list`, `get` and `update` through
//! `taskproof serve` (the adapter protocol on stdin/stdout) and `list` through `taskproof
//! mcp` (its `task_list` tool), each against baselines measured in the same run:
//! - the same operation **in-process** (`StrictStore::handle`, the figure of
//!   `reports/bench-store.md`), warm and, for `list`, cold (a newly opened store);
//! - `list` of the **naive store** (`serve --profile cc-2.1.17`) through the same pipe.
//!
//! Every time is a client's: from writing the request line to having read the whole answer
//! line (the answer is not parsed, except once to check it). The `list` answers' sizes are
//! reported with the bytes per second they came at, so that serialisation can be told from
//! the file system. The first list of a fresh process is measured on processes started for
//! it (after their handshake), one per sample.
//!
//! Run with `cargo bench --bench serve` (writes `reports/bench-serve.md`); under `cargo test
//! --benches` it runs a quick smoke pass on 100 tasks and writes nothing. Set
//! `TASKPROOF_BENCH_DIR` to measure on another file system than the temporary folder's.
//!
//! The warm samples are taken round-robin (one sample of each path per round) from processes
//! that stay up, so a burst of load on the shared machine falls on every path alike.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use taskproof_core::protocol::{Request, Response};
use taskproof_core::task::{ListName, NewTask, Patch, TaskId};
use taskproof_store::{LIST_INDEX_NAME, Options, StrictStore, TaskStore};

const BIN: &str = env!("CARGO_BIN_EXE_taskproof");

#[derive(Clone, Copy)]
struct Plan {
    tasks: usize,
    /// Rounds of warm `list` samples (one of each path per round).
    list_rounds: usize,
    /// Fresh processes (and fresh in-process stores) for the first list.
    cold: usize,
    /// Rounds of `get` and `update` samples.
    op_rounds: usize,
}

const FULL: Plan = Plan {
    tasks: 10_000,
    list_rounds: 15,
    cold: 3,
    op_rounds: 300,
};

const SMOKE: Plan = Plan {
    tasks: 100,
    list_rounds: 3,
    cold: 1,
    op_rounds: 5,
};

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let plan = if full { FULL } else { SMOKE };
    let base = std::env::var_os("TASKPROOF_BENCH_DIR").map(PathBuf::from);
    let tmp = match &base {
        Some(b) => tempfile::tempdir_in(b).unwrap(),
        None => tempfile::tempdir().unwrap(),
    };
    let root = tmp.path();
    let load_before = loadavg();
    eprintln!("seeding {} tasks...", plan.tasks);
    seed(root, plan.tasks);
    // The strict store keeps only files unchanged for two seconds.
    std::thread::sleep(Duration::from_millis(2_100));
    let r = measure(root, &plan);
    let load_after = loadavg();
    print_summary(&r);
    if full {
        write_report(&r, &plan, root, &load_before, &load_after);
    }
}

fn list() -> ListName {
    "l".parse().unwrap()
}

/// `n` tasks, each with a description and a small metadata object, as agents write them.
fn seed(root: &Path, n: usize) {
    let store = StrictStore::open(root, Options { durable: false }).unwrap();
    let l = list();
    for i in 0..n {
        let mut t = NewTask::new(format!("Task {i}: implement part {i} of the plan"));
        t.description = format!("Step {i}. Read the notes, change the code, run the tests.");
        t.active_form = Some(format!("Implementing part {i}"));
        let md = json!({"priority": i % 5, "labels": ["backend", "p1"], "estimate": 1.5,
                        "source": {"issue": i, "by": "planner"}});
        t.metadata = Some(md.as_object().unwrap().clone());
        let r = store.handle(&Request::Create {
            list: l.clone(),
            task: t,
        });
        assert!(r.is_ok(), "seed: {r:?}");
    }
}

/// A long-lived server process and the last answer it gave.
struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    answer: Vec<u8>,
    next_id: u64,
    mcp: bool,
}

impl Server {
    fn serve(root: &Path, profile: &str) -> Server {
        let mut child = Command::new(BIN)
            .args(["serve", "--no-fsync", "--profile", profile])
            .env("TASKPROOF_ROOT", root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::with_capacity(1 << 20, child.stdout.take().unwrap());
        let mut s = Server {
            child,
            stdin,
            stdout,
            answer: Vec::new(),
            next_id: 1,
            mcp: false,
        };
        s.round_trip(br#"{"op":"hello"}"#);
        assert!(s.answer.starts_with(br#"{"ok":true"#), "hello");
        s
    }

    fn mcp(root: &Path) -> Server {
        let mut child = Command::new(BIN)
            .arg("mcp")
            .arg("--root")
            .arg(root)
            .args(["--list", "l", "--no-fsync"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::with_capacity(1 << 20, child.stdout.take().unwrap());
        let mut s = Server {
            child,
            stdin,
            stdout,
            answer: Vec::new(),
            next_id: 1,
            mcp: true,
        };
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "bench", "version": "1"}}});
        s.round_trip(init.to_string().as_bytes());
        assert!(
            s.answer.windows(8).any(|w| w == b"\"result\""),
            "initialize"
        );
        let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        writeln!(s.stdin, "{done}").unwrap();
        s
    }

    /// Sends one line and reads the answer line (for MCP, the one answering this id).
    fn round_trip(&mut self, line: &[u8]) -> Duration {
        let start = Instant::now();
        self.stdin.write_all(line).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
        loop {
            self.answer.clear();
            let n = self.stdout.read_until(b'\n', &mut self.answer).unwrap();
            assert!(n > 0, "the server closed its output");
            // An MCP server may send notifications in between; answers carry an id.
            if !self.mcp || self.answer.windows(5).take(64).any(|w| w == b"\"id\":") {
                break;
            }
        }
        start.elapsed()
    }

    /// One `list` of the list (`task_list` for MCP); the time and the answer's size.
    fn list(&mut self) -> (Duration, usize) {
        let line = if self.mcp {
            self.next_id += 1;
            json!({"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call",
                   "params": {"name": "task_list", "arguments": {}}})
            .to_string()
        } else {
            r#"{"op":"list","list":"l"}"#.to_string()
        };
        let t = self.round_trip(line.as_bytes());
        (t, self.answer.len())
    }

    /// Checks that the last answer was a whole list of `n` tasks.
    fn check_list(&self, n: usize) {
        let v: Value = serde_json::from_slice(&self.answer).unwrap();
        let tasks = if self.mcp {
            assert_ne!(v["result"]["isError"], json!(true), "{v}");
            v["result"]["structuredContent"]["tasks"].clone()
        } else {
            assert_eq!(v["ok"], json!(true), "{v}");
            v["tasks"].clone()
        };
        assert_eq!(
            tasks.as_array().map(Vec::len),
            Some(n),
            "tasks in the answer"
        );
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct ListRow {
    path: &'static str,
    /// The first list of a fresh process (or store) without the list's index on disk, median
    /// over the fresh ones (`None` for a store that keeps none).
    cold: Option<Duration>,
    /// The first list of a fresh process (or store), median over the fresh ones.
    first: Duration,
    warm: Duration,
    bytes: usize,
}

struct OpRow {
    op: &'static str,
    in_process: Duration,
    serve: Duration,
}

struct Results {
    tasks: usize,
    lists: Vec<ListRow>,
    ops: Vec<OpRow>,
    /// A `hello` through `serve`: the pipe's round trip with next to no work in it, the
    /// floor under every `serve` figure.
    floor: Duration,
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn measure(root: &Path, plan: &Plan) -> Results {
    let l = list();
    let list_req = Request::List { list: l.clone() };
    // First lists: fresh in-process stores and fresh processes, in turn; each first without
    // the list's index on disk (as after the list was written by another program, or never
    // listed), then with it (as after any earlier list of a large list).
    let index = root.join(l.as_str()).join(LIST_INDEX_NAME);
    let remove_index = || match std::fs::remove_file(&index) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => panic!("{}: {e}", index.display()),
    };
    let (mut cold_in, mut cold_serve, mut cold_mcp) = (vec![], vec![], vec![]);
    let (mut first_in, mut first_serve, mut first_mcp, mut first_naive) =
        (vec![], vec![], vec![], vec![]);
    for _ in 0..plan.cold {
        remove_index();
        let store = StrictStore::open(root, Options { durable: false }).unwrap();
        let t = Instant::now();
        let r = store.handle(&list_req);
        cold_in.push(t.elapsed());
        assert!(matches!(&r, Response::Tasks { tasks, .. } if tasks.len() == plan.tasks));
        drop(store);
        remove_index();
        let mut s = Server::serve(root, "strict");
        cold_serve.push(s.list().0);
        s.check_list(plan.tasks);
        remove_index();
        let mut m = Server::mcp(root);
        cold_mcp.push(m.list().0);
        m.check_list(plan.tasks);
        assert!(
            index.exists() || plan.tasks < 256,
            "a first list writes the index"
        );
        let store = StrictStore::open(root, Options { durable: false }).unwrap();
        let t = Instant::now();
        let r = store.handle(&list_req);
        first_in.push(t.elapsed());
        assert!(matches!(&r, Response::Tasks { tasks, .. } if tasks.len() == plan.tasks));
        let mut s = Server::serve(root, "strict");
        first_serve.push(s.list().0);
        s.check_list(plan.tasks);
        let mut m = Server::mcp(root);
        first_mcp.push(m.list().0);
        m.check_list(plan.tasks);
        let mut n = Server::serve(root, "cc-2.1.17");
        first_naive.push(n.list().0);
        n.check_list(plan.tasks);
    }
    // Warm lists, round-robin, from stores and processes that listed before.
    let store = StrictStore::open(root, Options { durable: false }).unwrap();
    let mut serve = Server::serve(root, "strict");
    let mut mcp = Server::mcp(root);
    let mut naive = Server::serve(root, "cc-2.1.17");
    let in_process_list = |store: &StrictStore| {
        let t = Instant::now();
        let r = store.handle(&list_req);
        let e = t.elapsed();
        assert!(r.is_ok());
        e
    };
    // Two lists each first: one caches the files, one places the watches.
    for _ in 0..3 {
        in_process_list(&store);
        serve.list();
        mcp.list();
        naive.list();
    }
    serve.check_list(plan.tasks);
    mcp.check_list(plan.tasks);
    naive.check_list(plan.tasks);
    let (mut w_in, mut w_serve, mut w_mcp, mut w_naive) = (vec![], vec![], vec![], vec![]);
    let (mut b_serve, mut b_mcp, mut b_naive) = (0, 0, 0);
    for _ in 0..plan.list_rounds {
        w_in.push(in_process_list(&store));
        let (t, b) = serve.list();
        w_serve.push(t);
        b_serve = b;
        let (t, b) = mcp.list();
        w_mcp.push(t);
        b_mcp = b;
        let (t, b) = naive.list();
        w_naive.push(t);
        b_naive = b;
    }
    let in_process_bytes = match store.handle(&list_req) {
        r @ Response::Tasks { .. } => serde_json::to_vec(&r.to_json()).unwrap().len() + 1,
        other => panic!("{other:?}"),
    };
    let lists = vec![
        ListRow {
            path: "in-process",
            cold: Some(median(cold_in)),
            first: median(first_in),
            warm: median(w_in),
            bytes: in_process_bytes,
        },
        ListRow {
            path: "serve",
            cold: Some(median(cold_serve)),
            first: median(first_serve),
            warm: median(w_serve),
            bytes: b_serve,
        },
        ListRow {
            path: "mcp",
            cold: Some(median(cold_mcp)),
            first: median(first_mcp),
            warm: median(w_mcp),
            bytes: b_mcp,
        },
        ListRow {
            path: "naive through serve",
            cold: None,
            first: median(first_naive),
            warm: median(w_naive),
            bytes: b_naive,
        },
    ];
    drop((mcp, naive));

    // `get` and `update`, in-process and through `serve`, in turn.
    let (mut g_in, mut g_serve, mut u_in, mut u_serve) = (vec![], vec![], vec![], vec![]);
    let mut floor = vec![];
    for i in 0..plan.op_rounds {
        let id = TaskId((i % plan.tasks) as u64 + 1);
        let get = Request::Get {
            list: l.clone(),
            id,
        };
        let t = Instant::now();
        assert!(store.handle(&get).is_ok());
        g_in.push(t.elapsed());
        let line = get.to_json().to_string();
        g_serve.push(serve.round_trip(line.as_bytes()));
        floor.push(serve.round_trip(br#"{"op":"hello"}"#));
        assert!(serve.answer.starts_with(br#"{"ok":true"#));

        let update = |id: TaskId, subject: String| Request::Update {
            list: l.clone(),
            id,
            patch: Patch {
                subject: Some(subject),
                ..Patch::default()
            },
        };
        // Each path updates its own task (the other half of the list), and the two take
        // turns going first: an update right after the other path's write of the same file
        // would pay for that write's unfinished work in the file system.
        let in_process = |i: usize, u_in: &mut Vec<Duration>| {
            let req = update(id, format!("Task {i}: renamed in process"));
            let t = Instant::now();
            assert!(store.handle(&req).is_ok());
            u_in.push(t.elapsed());
        };
        let other = TaskId(((i + plan.tasks / 2) % plan.tasks) as u64 + 1);
        let line = update(other, format!("Task {i}: renamed through serve"))
            .to_json()
            .to_string();
        if i % 2 == 1 {
            in_process(i, &mut u_in);
        }
        u_serve.push(serve.round_trip(line.as_bytes()));
        assert!(serve.answer.starts_with(br#"{"ok":true"#));
        if i % 2 == 0 {
            in_process(i, &mut u_in);
        }
    }
    Results {
        tasks: plan.tasks,
        floor: median(floor),
        lists,
        ops: vec![
            OpRow {
                op: "get",
                in_process: median(g_in),
                serve: median(g_serve),
            },
            OpRow {
                op: "update",
                in_process: median(u_in),
                serve: median(u_serve),
            },
        ],
    }
}

fn fmt(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us >= 1000.0 {
        format!("{:.2} ms", us / 1000.0)
    } else {
        format!("{us:.1} µs")
    }
}

fn div(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64()
}

fn mb_per_s(bytes: usize, d: Duration) -> f64 {
    bytes as f64 / d.as_secs_f64() / 1e6
}

fn print_summary(r: &Results) {
    for l in &r.lists {
        eprintln!(
            "list {:<20} no index {:>10}  first {:>10}  warm {:>10}  {} bytes, {:.0} MB/s",
            l.path,
            l.cold.map_or("-".into(), fmt),
            fmt(l.first),
            fmt(l.warm),
            l.bytes,
            mb_per_s(l.bytes, l.warm)
        );
    }
    eprintln!(
        "hello through serve (the pipe's round trip) {}",
        fmt(r.floor)
    );
    for o in &r.ops {
        eprintln!(
            "{:<6} in-process {:>10}  serve {:>10}  {:.2}x",
            o.op,
            fmt(o.in_process),
            fmt(o.serve),
            div(o.serve, o.in_process)
        );
    }
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn command_output(cmd: &str, args: &[&str]) -> String {
    Command::new(cmd)
        .args(args)
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

/// The targets of issue 28, each with whether this run met it.
fn targets(r: &Results) -> Vec<(String, bool)> {
    let row = |p: &str| r.lists.iter().find(|l| l.path == p).unwrap();
    let (inp, naive) = (row("in-process"), row("naive through serve"));
    let mut out = Vec::new();
    for p in ["serve", "mcp"] {
        let x = row(p);
        let a = div(x.warm, inp.warm);
        out.push((
            format!(
                "`list` through {p} at most 2x the in-process warm list ({}, {a:.2}x)",
                fmt(x.warm)
            ),
            a <= 2.0,
        ));
        let b = div(x.warm, naive.warm);
        out.push((
            format!("`list` through {p} at most 0.25x the naive store through `serve` ({b:.2}x)"),
            b <= 0.25,
        ));
        let c = div(x.first, inp.warm);
        out.push((
            format!(
                "first `list` of a fresh {p} process at most 3x the in-process warm list ({}, {c:.2}x; {:.2}x the in-process first list; without the index on disk {}, {:.2}x)",
                fmt(x.first),
                div(x.first, inp.first),
                x.cold.map_or("-".into(), fmt),
                x.cold.map_or(f64::NAN, |d| div(d, inp.warm)),
            ),
            c <= 3.0,
        ));
    }
    for o in &r.ops {
        let a = div(o.serve, o.in_process);
        out.push((
            format!(
                "`{}` through serve within 1.5x of in-process ({} vs {}, {a:.2}x)",
                o.op,
                fmt(o.serve),
                fmt(o.in_process)
            ),
            a <= 1.5,
        ));
    }
    out
}

fn write_report(r: &Results, plan: &Plan, dir: &Path, before: &str, after: &str) {
    let mut md = String::new();
    md.push_str(
        "# Serve and MCP benchmark: the store as agents reach it\n\n\
         Produced by `cargo bench --bench serve` (benches/serve.rs; issue 28). Each time is a \
         client's, from writing the request line to having read the whole answer line, median \
         of the samples. Baselines in the same run: the same operation **in-process** \
         (`StrictStore::handle`), and `list` of the **naive store** (`serve --profile \
         cc-2.1.17`) through the same pipe. *Warm* samples are taken round-robin, one of each \
         path per round, from stores and processes that listed twice before (the first list \
         reads and caches the files, the second places the watches that let later lists skip \
         the per-file `stat`; see docs/store.md). *First* is the first list of a newly \
         started process after its handshake (for in-process: of a newly opened store), one \
         fresh process per sample, with the list's index (`.list-index`, written by an \
         earlier list) on disk; *no index* the same with the index removed first, as after \
         the list was written by another program or never listed. Tasks carry a description, an active form and a small \
         metadata object. Writes without fsync (`--no-fsync`). The machine is shared: the \
         same-run ratios are what these numbers support.\n\n",
    );
    md.push_str(&format!(
        "- date: {}\n- machine: {} CPUs, {}\n- load average (1, 5, 15 min): {before} at the start, {after} at the end\n\
         - file system of the benchmark folder: {}\n- tasks: {}; warm `list` samples: {} per path; first lists: {} fresh processes per path; `get` / `update` samples: {}\n\n",
        command_output("date", &["-u", "+%Y-%m-%dT%H:%M:%SZ"]),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        command_output("rustc", &["--version"]),
        command_output("stat", &["-f", "-c", "%T", &dir.to_string_lossy()]),
        r.tasks,
        plan.list_rounds,
        plan.cold,
        plan.op_rounds,
    ));
    md.push_str("## Targets (issue 28)\n\n| target | met in this run |\n|---|---|\n");
    for (t, ok) in targets(r) {
        md.push_str(&format!("| {t} | {} |\n", if ok { "yes" } else { "no" }));
    }
    let inp = r.lists.iter().find(|l| l.path == "in-process").unwrap();
    let naive = r
        .lists
        .iter()
        .find(|l| l.path == "naive through serve")
        .unwrap();
    md.push_str(&format!(
        "\n## `list` of {} tasks\n\n| path | first, no index | first | warm | answer size | warm, MB/s | warm / in-process warm | warm / naive | first / in-process warm |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        r.tasks
    ));
    for l in &r.lists {
        md.push_str(&format!(
            "| {} | {} | {} | {} | {:.2} MB | {:.0} | {:.2} | {:.2} | {:.2} |\n",
            l.path,
            l.cold.map_or("-".into(), fmt),
            fmt(l.first),
            fmt(l.warm),
            l.bytes as f64 / 1e6,
            mb_per_s(l.bytes, l.warm),
            div(l.warm, inp.warm),
            div(l.warm, naive.warm),
            div(l.first, inp.warm),
        ));
    }
    md.push_str(
        "\nThe in-process answer size is that of the same answer serialised as `serve` sends \
         it; in-process `list` hands back the tasks and serialises nothing. The MCP answer \
         carries the tasks twice, as the result's text (pretty-printed JSON, as a JSON string) \
         and as its `structuredContent`.\n",
    );
    md.push_str(
        "\n## `get` and `update` through `serve`\n\n| op | in-process | serve | serve / in-process |\n|---|---:|---:|---:|\n",
    );
    for o in &r.ops {
        md.push_str(&format!(
            "| {} | {} | {} | {:.2} |\n",
            o.op,
            fmt(o.in_process),
            fmt(o.serve),
            div(o.serve, o.in_process)
        ));
    }
    md.push_str(&format!(
        "\nA `hello` through `serve`, the pipe's round trip with next to no work in it, took \
         {} (median, taken in the same rounds): the part of each `serve` figure that no store \
         can make smaller. `serve` keeps watching stdin for {} µs after each answer while \
         requests come in a burst (docs/store.md, \"Serve between requests\"), so this is one \
         process wake-up (the client's), not two.\n",
        fmt(r.floor),
        taskproof::cli::serve::BURST_WINDOW.as_micros()
    ));
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("reports/bench-serve.md");
    std::fs::write(&path, md).unwrap();
    eprintln!("wrote {}", path.display());
}
