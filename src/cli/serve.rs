//! `taskproof serve`: a store behind the adapter protocol on stdin/stdout.

use std::io::{self, BufRead, Read, Write};
use std::path::PathBuf;

use anyhow::Context;

use crate::protocol::{ErrorKind, Response};
use crate::store::{Mutant, Options, StoreKind};

/// The longest request line read; a longer one is answered `invalid` and skipped.
const MAX_LINE: usize = 64 * 1024 * 1024;

#[derive(Debug, clap::Args)]
#[command(after_long_help = "\
Examples:
  TASKPROOF_ROOT=/tmp/tasks taskproof serve
  echo '{\"op\":\"hello\"}' | TASKPROOF_ROOT=/tmp/tasks taskproof serve --profile cc-2.1.17
  taskproof run --target 'cmd:taskproof serve'")]
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

pub fn run(args: Args) -> anyhow::Result<i32> {
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
    let mut input = stdin.lock();
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let mut buf = Vec::new();
    // The answer line, reused: a long `list` answer is not allocated again each time.
    let mut line = Vec::new();
    loop {
        buf.clear();
        let n = (&mut input)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut buf)
            .context("failed to read a request from stdin")?;
        if n == 0 {
            return Ok(super::exit::OK);
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
            return Ok(super::exit::OK);
        }
    }
}
