//! `taskproof mcp-draft COMMAND`: a draft mapping file for an MCP task server
//! (docs/mcp-targets.md).

use std::path::PathBuf;

use super::{Seconds, exit};
use crate::target::SessionOptions;
use crate::target::mcp::draft;

#[derive(Debug, clap::Args)]
#[command(after_long_help = "\
Examples:
  taskproof mcp-draft 'taskproof mcp' --out my-mapping.toml
  taskproof run --target 'mcp:taskproof mcp' --mapping my-mapping.toml

The server is started with TASKPROOF_ROOT set to a scratch folder; its tools and input
schemas become comments of the draft, and every guess is marked CHECK for a person.

Exit status: 0 when the draft was written, 2 on a usage error or an unwritable file, 3 when
the server could not be started or did not answer its tool list.")]
pub struct Args {
    /// The command that starts the MCP server on stdio (run through `sh -c`).
    pub command: String,
    /// Write the draft here instead of to standard output.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Seconds the server may take to start and list its tools.
    #[arg(long, value_name = "SECS", default_value = "60")]
    pub start_timeout: Seconds,
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    let options = SessionOptions {
        start_timeout: args.start_timeout.0,
        ..SessionOptions::default()
    };
    let text = match draft::draft(&args.command, options) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("taskproof mcp-draft: {e}");
            return Ok(exit::TARGET);
        }
    };
    match &args.out {
        None => Ok(super::print_stdout(&text)),
        Some(path) => {
            std::fs::write(path, &text).map_err(|e| {
                anyhow::anyhow!("failed to write the draft to {}: {e}", path.display())
            })?;
            println!(
                "wrote a draft mapping to {}; check every line marked CHECK",
                path.display()
            );
            Ok(exit::OK)
        }
    }
}
