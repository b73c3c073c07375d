//! Time between requests: generated waits and the settle phase find what a store removes
//! when no request is in flight, and session steps agree with the model.

use super::*;

/// An adapter for the reference store behind `serve` whose store, like Claude Code with a
/// finished list, removes a completed task's file about `delay` s after it sees it (looking
/// every `delay / 5` s): a background job of the adapter's own, in its process group. No
/// request is in flight when it happens, so only time between requests shows it.
fn forgetful_target_after(delay: f64) -> String {
    format!(
        "cmd:(while sleep {poll}; do f=$(grep -l '\"completed\"' \"$TASKPROOF_ROOT\"/*/*.json 2>/dev/null); \
         if [ -n \"$f\" ]; then sleep {delay}; rm -f $f; fi; done) & exec '{}' serve --no-fsync",
        util::bin(),
        poll = delay / 5.0,
    )
}

/// [`forgetful_target_after`] 0.5 s.
fn forgetful_target() -> String {
    forgetful_target_after(0.5)
}

/// The steps of a written finding.
fn finding_steps(dir: &Path) -> Vec<serde_json::Value> {
    let found = written(dir);
    assert_eq!(found.len(), 1, "{found:?}");
    let scenario: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&found[0]).unwrap()).unwrap();
    scenario["steps"].as_array().unwrap().clone()
}

/// With `--wait-max`, sequences carry `wait` steps; against a store that removes completed
/// tasks between requests, the fuzzer finds the loss under S14 and shrinks it, waits
/// included, to the few steps that show it, which replay as a scenario.
#[test]
fn generated_waits_find_a_task_removed_between_requests_and_shrink_with_it() {
    let dir = util::tempdir();
    let out = dir.path().join("found");
    // 0.2 s: a simpler sequence is kept only when two runs of it diverge, and on a loaded
    // machine (the whole suite on two cores) a removal 0.5 s after a 0.1 s poll came too
    // late for the waits of every simpler sequence in some runs (shrunk from 9 to 9 steps,
    // twice in a row); 0.2 s after a 0.04 s poll leaves the waits room.
    let target = forgetful_target_after(0.2);
    let (code, text) = fuzz(&[
        "--target",
        &target,
        "--settle",
        "0",
        "--parallel",
        "0",
        "--wait-max",
        "1.5",
        "--cases",
        "60",
        "--steps",
        "12",
        "--seed",
        "4",
        "--max-findings",
        "1",
        "--shrink-runs",
        "100",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("between requests: waits of up to 1.5 s"),
        "{text}"
    );
    assert!(text.contains("rules: S14"), "{text}");
    let steps = finding_steps(&out);
    let waits: Vec<f64> = steps.iter().filter_map(|s| s["wait"].as_f64()).collect();
    // The loss needs time: a wait at least as long as the adapter's 0.2 s delay.
    assert_eq!(waits.len(), 1, "{steps:#?}");
    assert!((0.2..=1.5).contains(&waits[0]), "{steps:#?}");
    // Shrunk: fewer steps than the case had, down to a create, a completion, the wait and
    // what reads the task on a quiet machine. Under load a simpler sequence may miss the loss
    // in one of the two runs a waiting sequence needs, and keeps a step or two more.
    let shrunk = text
        .lines()
        .find_map(|l| l.strip_prefix("shrunk from "))
        .and_then(|l| {
            let mut w = l.split_whitespace();
            Some((
                w.next()?.parse::<usize>().ok()?,
                w.nth(1)?.parse::<usize>().ok()?,
            ))
        })
        .unwrap_or_else(|| panic!("no shrink line: {text}"));
    assert!(shrunk.1 < shrunk.0 || shrunk.0 <= 4, "{shrunk:?}\n{text}");
    assert!(steps.len() <= 8, "{steps:#?}");
}

/// The settle phase: each case leaves the store alone before its final listings, and
/// what vanishes meanwhile is a finding whose scenario shows the wait it needs.
#[test]
fn the_settle_phase_finds_what_vanishes_after_the_last_step() {
    let dir = util::tempdir();
    let out = dir.path().join("found");
    let target = forgetful_target();
    let (code, text) = fuzz(&[
        "--target",
        &target,
        "--settle",
        "1",
        "--cases",
        "30",
        "--steps",
        "8",
        "--seed",
        "1",
        "--max-findings",
        "1",
        "--shrink-runs",
        "0",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("each case then leaves the store alone for 1 s before its final listings"),
        "{text}"
    );
    let steps = finding_steps(&out);
    let settle = steps
        .iter()
        .position(|s| s["wait"] == 1.0)
        .unwrap_or_else(|| panic!("no settle wait: {steps:#?}"));
    assert!(
        steps[settle]["note"]
            .as_str()
            .unwrap()
            .starts_with("the settle phase"),
        "{steps:#?}"
    );
    assert!(
        steps[settle + 1..]
            .iter()
            .all(|s| s["send"]["op"] == "list"),
        "{steps:#?}"
    );
}

/// Without waits or a settle phase the same store agrees with the model: the loss is
/// only visible between requests.
#[test]
fn without_time_between_requests_the_forgetful_store_agrees() {
    let dir = util::tempdir();
    let target = forgetful_target();
    let (code, text) = fuzz(&[
        "--target",
        &target,
        "--cases",
        "25",
        "--steps",
        "8",
        "--seed",
        "1",
        "--out",
        dir.path().join("found").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{text}");
}

/// Session events against a store connection: clear and compact leave it alone, exit and
/// resume close it and open another, and the reference agrees with its model throughout.
#[test]
fn session_steps_against_the_reference_agree_with_the_model() {
    let dir = util::tempdir();
    let (code, text) = fuzz(&[
        "--session-steps",
        "--wait-max",
        "0.2",
        "--cases",
        "60",
        "--seed",
        "5",
        "--out",
        dir.path().join("found").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains(
            "between requests: waits of up to 0.2 s; clear, compact, and exit then resume"
        ),
        "{text}"
    );
}
