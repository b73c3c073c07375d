//! The fuzzers: every cargo-fuzz target replays its checked-in corpus and regression files
//! under plain `cargo test` (so CI needs no nightly and no libFuzzer), and `taskproof fuzz`
//! finds, writes and replays divergences. Here the helpers every part uses; the cargo-fuzz
//! targets (cargo_fuzz.rs), what a run judges against (oracle.rs), what it does with its
//! findings (findings.rs), time between requests (time.rs) and concurrent cases
//! (concurrent.rs).

mod cargo_fuzz;
mod concurrent;
mod findings;
mod oracle;
mod time;

use std::path::Path;

use taskproof_fuzz::targets;

use crate::util;

/// The files of one folder, sorted, or none if it does not exist.
fn files(dir: &Path) -> Vec<std::path::PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<_> = rd
        .map(|e| e.expect("a readable folder entry").path())
        .filter(|p| p.is_file())
        .collect();
    out.sort();
    out
}

fn fuzz(args: &[&str]) -> (i32, String) {
    let out = util::taskproof()
        .arg("fuzz")
        .args(args)
        .output()
        .expect("taskproof runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

/// `taskproof fuzz ARGS --seed 3 --max-findings 1 --out OUT`: a seeded run that stops at its
/// first finding (a run goes on past it unless told otherwise).
fn first_finding(out: &str, args: &[&str]) -> (i32, String) {
    let mut all = args.to_vec();
    all.extend(["--seed", "3", "--max-findings", "1", "--out", out]);
    fuzz(&all)
}

fn run(args: &[&str]) -> (i32, String) {
    let out = util::taskproof()
        .arg("run")
        .args(args)
        .output()
        .expect("taskproof runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// The `.json` files of a folder.
fn written(dir: &Path) -> Vec<std::path::PathBuf> {
    files(dir)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect()
}
