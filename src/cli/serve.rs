//! `taskproof serve adapter`: a store behind the adapter protocol on stdin/stdout.

use super::verdict::Verdict;
use std::io::{self, BufRead, Read, Write};
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use rustix::event::{PollFd, PollFlags, Timespec, poll};

use taskproof_core::protocol::{ErrorKind, Response};
use taskproof_store::{Mutant, Options, StoreKind};

/// The longest request line read; a longer one is answered `invalid` and skipped.
const MAX_LINE: usize = 64 * 1024 * 1024;

#[derive(Debug, clap::Args)]
#[command(after_long_help = "\
Examples:
  TASKPROOF_ROOT=/tmp/tasks taskproof serve adapter
  echo '{\"op\":\"hello\"}' | TASKPROOF_ROOT=/tmp/tasks taskproof serve adapter --profile cc-2.1.17
  taskproof run --target 'cmd:taskproof serve adapter'")]
pub struct Args {
    /// The behaviour to serve: the strict reference store, or the model of Claude Code
    /// 2.1.17 (no lock, no checks, last write wins).
    #[arg(long, default_value = "strict", value_parser = ["strict", "cc-2.1.17"])]
    pub profile: String,
    /// Serve a deliberately broken reference store (for testing harnesses).
    #[arg(long, hide = true)]
    pub mutant: Option<Mutant>,
    /// Skip fsync: writes still survive SIGKILL, but not a power cut. For tests only.
    #[arg(long)]
    pub no_fsync: bool,
}

pub fn run(args: Args) -> anyhow::Result<Verdict> {
    let root: PathBuf = std::env::var_os("TASKPROOF_ROOT")
        .map(PathBuf::from)
        .context("TASKPROOF_ROOT is not set; it names the folder the store keeps its state in")?;
    std::fs::create_dir_all(&root)
        .with_context(|| format!("failed to create TASKPROOF_ROOT {}", root.display()))?;
    let kind = match (args.mutant, args.profile.as_str()) {
        (Some(m), _) => StoreKind::Mutant(m),
        (None, "cc-2.1.17") => StoreKind::Naive,
        (None, _) => StoreKind::Reference,
    };
    let options = Options {
        durable: !args.no_fsync,
    };
    let store = kind
        .open(&root, options)
        .with_context(|| format!("failed to open the store at {}", root.display()))?;

    let stdin = io::stdin();
    let mut input = io::BufReader::with_capacity(64 * 1024, stdin.lock());
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let mut buf = Vec::new();
    // The answer line, reused: a long `list` answer is not allocated again each time.
    let mut line = Vec::new();
    let mut burst = Burst::new();
    loop {
        buf.clear();
        if input.buffer().is_empty() {
            burst.wait(io::stdin());
        }
        let n = (&mut input)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut buf)
            .context("failed to read a request from stdin")?;
        burst.arrived(Instant::now());
        if n == 0 {
            return Ok(Verdict::Clean);
        }
        line.clear();
        if buf.len() > MAX_LINE && buf.last() != Some(&b'\n') {
            // Skip the rest of the oversized line before answering it.
            let mut sink = Vec::new();
            input.read_until(b'\n', &mut sink).ok();
            Response::error(
                ErrorKind::Invalid,
                format!("request: longer than {MAX_LINE} bytes"),
            )
            .write_json(&mut line);
        } else {
            match std::str::from_utf8(&buf) {
                // The answer is written straight from the store's tasks (no `Value` tree).
                Ok(l) => store.write_answer(l.trim_end_matches(['\n', '\r']), &mut line),
                Err(e) => Response::error(ErrorKind::Invalid, format!("request: not UTF-8: {e}"))
                    .write_json(&mut line),
            }
        }
        line.push(b'\n');
        if out.write_all(&line).and_then(|()| out.flush()).is_err() {
            // The harness hung up; nothing more to answer.
            return Ok(Verdict::Clean);
        }
        burst.answer_written();
    }
}

/// How long after an answer `serve` keeps looking at stdin for the next request before it
/// goes to sleep in `read`. A harness sends its next request within microseconds of reading
/// an answer; waking a process that sleeps in `read` costs about as much as the request
/// itself (docs/store.md, "Serve between requests"), so while the requests come in a burst
/// `serve` looks for them instead of sleeping, yielding the core to anything else runnable.
pub const BURST_WINDOW: Duration = Duration::from_micros(200);

/// Whether the client is in a burst: its last request came within [`BURST_WINDOW`] of the
/// answer before it. An agent that calls now and then never makes `serve` spin for more than
/// one window; a harness's sequence of requests finds `serve` awake.
struct Burst {
    on: bool,
    answered: Instant,
}

impl Burst {
    fn new() -> Self {
        Burst {
            on: true,
            answered: Instant::now(),
        }
    }

    /// Before a blocking read with nothing buffered: watch `input` for up to the window.
    /// Returns how many times it looked (0 outside a burst).
    fn wait(&self, input: impl AsFd) -> usize {
        if !self.on {
            return 0;
        }
        let zero = Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        let mut looked = 0;
        while self.answered.elapsed() < BURST_WINDOW {
            let mut fds = [PollFd::new(&input, PollFlags::IN)];
            looked += 1;
            // An error here is the read's to report: stop watching and read.
            if poll(&mut fds, Some(&zero)).unwrap_or(1) > 0 {
                break;
            }
            std::thread::yield_now();
        }
        looked
    }

    /// A request has been read at `now`: was it part of the burst?
    fn arrived(&mut self, now: Instant) {
        self.on = now.saturating_duration_since(self.answered) <= BURST_WINDOW;
    }

    fn answer_written(&mut self) {
        self.answered = Instant::now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_within_the_window_keeps_serve_watching_and_a_late_one_lets_it_sleep() {
        let mut b = Burst::new();
        let t0 = b.answered;
        b.arrived(t0 + Duration::from_micros(150));
        assert!(
            b.on,
            "a request 150 us after the answer is part of the burst"
        );
        b.arrived(t0 + Duration::from_millis(5));
        assert!(!b.on, "a request 5 ms after the answer ends the burst");
        b.answered = t0 + Duration::from_millis(10);
        b.arrived(t0 + Duration::from_millis(10) + BURST_WINDOW);
        assert!(b.on, "the window's end is still inside it");
    }

    #[test]
    fn outside_a_burst_serve_does_not_watch_its_input() {
        // A pipe with nothing in it: watched, it is looked at until the window ends, which is
        // put 1 ms ahead so that it cannot have ended before the first look.
        let (read, _write) = std::io::pipe().unwrap();
        let mut b = Burst::new();
        b.on = false;
        b.answered = Instant::now() + Duration::from_millis(1);
        assert_eq!(b.wait(&read), 0, "off, serve goes straight to read");
        b.on = true;
        b.answered = Instant::now() + Duration::from_millis(1);
        assert!(b.wait(&read) >= 1, "on, serve looks for the next request");
    }

    #[test]
    fn a_request_already_there_ends_the_watch_at_the_first_look() {
        let (read, mut write) = std::io::pipe().unwrap();
        write.write_all(b"{}\n").unwrap();
        let mut b = Burst::new();
        b.answered = Instant::now() + Duration::from_millis(1);
        assert_eq!(b.wait(&read), 1, "the request is there: no second look");
    }
}
