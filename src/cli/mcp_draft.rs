//! `taskproof mapping draft COMMAND`: a draft mapping file for an MCP task server
//! (docs/mcp-targets.md).

use super::verdict::Verdict;
use std::path::PathBuf;

use super::Seconds;
use taskproof_mcp_draft as draft;
use taskproof_session::SessionOptions;

#[derive(Debug, clap::Args)]
#[command(after_long_help = "\
Examples:
  taskproof mapping draft 'taskproof serve mcp' --out my-mapping.toml
  taskproof run --target 'mcp:taskproof serve mcp' --mapping my-mapping.toml

The server is started with TASKPROOF_ROOT, HOME and its working folder in a scratch folder;
its tools and input schemas become comments of the draft. Each tool chosen for an operation
is then called once on a probe task (create, get, list, update, delete; --no-probe skips it):
its answer says whether it is JSON or text and where the task, its id and the list are. A
server that keeps its data elsewhere (an absolute path of its own) keeps the probe task there.
Every guess is marked CHECK for a person.

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
    /// Do not call the chosen tools on a probe task (by default each is called once, with
    /// HOME and the working folder in a scratch folder, to learn where its answer keeps the
    /// task, its id and the list).
    #[arg(long)]
    pub no_probe: bool,
}

pub fn run(args: Args) -> anyhow::Result<Verdict> {
    let options = SessionOptions {
        start_timeout: args.start_timeout.0,
        ..SessionOptions::default()
    };
    let text = match draft::draft(&args.command, options, !args.no_probe) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("taskproof mapping draft: {e}");
            return Ok(Verdict::TargetBroke);
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
            Ok(Verdict::Clean)
        }
    }
}
