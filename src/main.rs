//! The `taskproof` command: parse, run, map the outcome to an exit code.

fn main() {
    std::process::exit(taskproof::cli::main());
}
