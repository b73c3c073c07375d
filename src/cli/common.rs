//! The option groups several commands share, declared once and flattened into each
//! (after nextest's `CommonOpts`): the target (`--target`, `--mapping`), the limits
//! (`--timeout`, `--start-timeout`) and the output (`--report`, `--color`). A command whose
//! default differs says so with clap's `mut_arg` on its own `Args` (`hold` waits 60 s for a
//! request, not 10), so the flag's name, value name and help are written here only.

use std::path::PathBuf;

use super::Seconds;
use super::run::ReportSpec;
use taskproof_targets::TargetSpec;

/// `--target` and `--mapping`: the store under test.
#[derive(Debug, Clone, clap::Args)]
pub struct TargetOpts {
    // The kinds' list comes from the registry (`taskproof_targets::KINDS`).
    #[arg(long, short, default_value = "reference", help = taskproof_targets::target_help())]
    pub target: TargetSpec,
    #[command(flatten)]
    pub mapping: MappingOpt,
}

/// `--mapping`, alone: for the commands whose `--target` is not a [`TargetSpec`] (`run`'s
/// also names background targets).
#[derive(Debug, Clone, clap::Args)]
pub struct MappingOpt {
    /// The mapping file of an mcp:COMMAND target (docs/mcp-targets.md; `taskproof mapping
    /// draft COMMAND` writes a draft).
    #[arg(long, value_name = "FILE")]
    pub mapping: Option<PathBuf>,
}

impl TargetOpts {
    /// The `--mapping` file, if one was given.
    pub fn mapping(&self) -> Option<&std::path::Path> {
        self.mapping.mapping.as_deref()
    }
}

/// `--timeout` and `--start-timeout`: how long a target may take.
#[derive(Debug, Clone, Copy, clap::Args)]
pub struct Limits {
    /// Seconds a request may go unanswered before the target is judged hung.
    #[arg(long, value_name = "SECS", default_value = "10")]
    pub timeout: Seconds,
    /// Seconds a session may take to start and answer hello (start-up is not a request).
    #[arg(long, value_name = "SECS", default_value = "60")]
    pub start_timeout: Seconds,
}

/// `--report` and `--color`: what is written besides the terminal, and how the terminal is
/// coloured.
#[derive(Debug, Clone, clap::Args)]
pub struct OutputOpts {
    /// Also write a report: json:PATH, junit:PATH or md:PATH (repeatable).
    #[arg(long, value_name = "KIND:PATH")]
    pub report: Vec<ReportSpec>,
    #[command(flatten)]
    pub color: ColorOpt,
}

/// `--color`, alone: for the commands that write no report files (`check`).
#[derive(Debug, Clone, Copy, clap::Args)]
pub struct ColorOpt {
    /// Color the terminal output (auto: when stdout is a terminal and NO_COLOR is unset).
    #[arg(long, value_enum, default_value = "auto")]
    pub color: super::Color,
}
