//! `taskproof scenarios`: the built-in suite, listed or written out to a folder.

use super::verdict::Verdict;
use std::path::PathBuf;

use taskproof_scenario::builtin;

#[derive(Debug, clap::Args)]
#[command(after_long_help = "\
Examples:
  taskproof scenarios list
  taskproof scenarios export my-scenarios/
  taskproof run my-scenarios/ --skip-file my-scenarios/expected/naive-strict.skip --target naive")]
pub struct Args {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// List the built-in scenarios: file, rules and title, one per line.
    List,
    /// Write the built-in scenarios (and their expected-failure lists) into a folder, to
    /// edit them or run them from disk. Refuses, writing nothing, when a file there differs.
    Export {
        /// The folder to write into (created when missing).
        dir: PathBuf,
    },
}

pub fn run(args: Args) -> anyhow::Result<Verdict> {
    match args.command {
        Command::List => {
            let scenarios = match builtin::load_builtin() {
                Ok(s) => s,
                Err(errors) => {
                    for e in errors {
                        eprintln!("taskproof scenarios: {e}");
                    }
                    return Ok(Verdict::Usage);
                }
            };
            let mut text = String::new();
            for s in &scenarios {
                text.push_str(&format!(
                    "{}\t{}\t{}\n",
                    s.file.display(),
                    taskproof_core::rule::join(&s.rules, ","),
                    s.title
                ));
            }
            Ok(super::print_stdout(&text))
        }
        Command::Export { dir } => match builtin::export(&dir) {
            Ok(written) => {
                let text = format!(
                    "wrote {} file(s) to {} ({} already there)\n",
                    written.len(),
                    dir.display(),
                    builtin::files().len() - written.len()
                );
                Ok(super::print_stdout(&text))
            }
            Err(e) => {
                eprintln!("taskproof scenarios export: {e}");
                Ok(Verdict::Usage)
            }
        },
    }
}
