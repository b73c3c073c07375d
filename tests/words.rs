//! The words a user reads, snapshot-tested with `insta` (tests/snapshots/): a failing
//! scenario's block against the naive store and a mutant, the summary of the reference run,
//! and the `--help` of the main commands. The witness of a task that vanished between requests
//! is in tests/session_steps.rs, the race checker's explanations in tests/race.rs.
//!
//! A changed text fails the test with a diff; `cargo insta review` (or `INSTA_UPDATE=always`
//! on a developer's machine) accepts it. CI runs with `CI=true` and `INSTA_UPDATE=no`, so a
//! new or changed snapshot is never written there, only failed (.ci/run).

use std::process::Output;

use crate::util::{repo, taskproof_in};

/// `taskproof ARGS` from the repository: exit code and stdout.
fn taskproof(args: &[&str]) -> (i32, String) {
    let Output { status, stdout, .. } = taskproof_in(repo())
        .args(args)
        // clap wraps help to the terminal; a pipe has none, so it wraps at 100 columns.
        .env_remove("COLUMNS")
        .output()
        .expect("run taskproof");
    (
        status.code().expect("an exit code"),
        String::from_utf8(stdout).expect("UTF-8 stdout"),
    )
}

#[test]
fn a_cycle_accepted_by_the_naive_store_reads_as_the_readme_shows() {
    let (code, out) = taskproof(&[
        "run",
        "--target",
        "naive",
        "--profile",
        "strict",
        "--filter",
        "rt04-circular-dependency",
    ]);
    assert_eq!(code, 1, "{out}");
    insta::assert_snapshot!("naive_rt04_strict", out);
}

#[test]
fn a_mutant_that_does_not_mirror_edges_fails_with_each_step_named() {
    let (code, out) = taskproof(&[
        "run",
        "--target",
        "mutant:no-mirror",
        "--filter",
        "rt03-blocks",
        "--filter",
        "rt07-deletion",
        // One at a time and none prepared ahead, so the two blocks come in id order: with
        // scenarios prepared ahead, several starters hand them on as each is ready, and under
        // load rt07 was seen before rt03.
        "--jobs",
        "1",
        "--start-ahead",
        "0",
    ]);
    assert_eq!(code, 1, "{out}");
    insta::assert_snapshot!("mutant_no_mirror_rt03_rt07", out);
}

#[test]
fn the_reference_run_ends_with_its_notes_and_summary() {
    let (code, out) = taskproof(&["run"]);
    assert_eq!(code, 0, "{out}");
    // The lines between the first and the summary come as scenarios finish, in parallel:
    // sorted, so the snapshot holds their words and not their order.
    let lines: Vec<&str> = out.lines().collect();
    let (first, rest) = lines.split_first().expect("a first line");
    let (last, middle) = rest.split_last().expect("a summary line");
    let mut middle = middle.to_vec();
    middle.sort_unstable();
    let text = [vec![*first], middle, vec![*last]].concat().join("\n");
    insta::assert_snapshot!("reference_run", text);
}

#[test]
fn the_main_commands_help() {
    for command in [
        "run",
        "race",
        "fuzz",
        "check",
        "maint matrix",
        "profile hold",
        "serve",
        "versions",
    ] {
        let mut args: Vec<&str> = command.split(' ').collect();
        args.push("--help");
        let (code, out) = taskproof(&args);
        assert_eq!(code, 0, "{command} --help: {out}");
        insta::assert_snapshot!(format!("help_{}", command.replace(' ', "_")), out);
    }
    let (code, out) = taskproof(&["--help"]);
    assert_eq!(code, 0, "{out}");
    insta::assert_snapshot!("help", out);
}
