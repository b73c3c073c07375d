//! Concurrent cases behind `cmd:`: a store missing one lock is found by them and only by
//! them, and the reference agrees.

use super::*;

/// Issue 53: a store correct but for one lock passed `run`, `race` and sequential `fuzz`.
/// Behind `cmd:` (real processes, real locks), the fuzzer's concurrent cases find each of
/// the three with its defaults (the parallel part on), confirm the finding by replaying
/// its scenario, and say in how many replays it failed. A race is a probability: measured
/// here, the first confirmed finding came within 1 to 61 cases for seeds 2 to 4 (a run goes
/// on past a finding its replays do not confirm), and once, with the whole suite running beside
/// it, 200 cases met no delete race at all: 1,200 cases (a run stops at its first confirmed
/// finding) leave a wide margin; the written scenario is a
/// `concurrent` block judged `linearizable`, which fails against the store and passes
/// against the reference.
#[test]
fn a_store_missing_one_lock_is_found_by_concurrent_cases_behind_cmd() {
    let mutants = ["delete-without-lock", "claim-without-lock", "no-lock"];
    std::thread::scope(|scope| {
        for m in mutants {
            scope.spawn(move || {
                let dir = util::tempdir();
                let out = dir.path().join("found");
                let json = dir.path().join("fuzz.json");
                let target = format!("cmd:exec '{}' serve --no-fsync --mutant {m}", util::bin());
                let (code, text) = fuzz(&[
                    "--target",
                    &target,
                    "--seed",
                    "2",
                    "--cases",
                    "1200",
                    "--max-findings",
                    "1",
                    "--replays",
                    "10",
                    "--out",
                    out.to_str().unwrap(),
                    "--report",
                    &format!("json:{}", json.display()),
                ]);
                let report: serde_json::Value =
                    serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
                assert!(report["concurrent_cases"].as_u64().unwrap() > 0);
                // A history no order explains is never met on a store with its locks (the
                // reference agrees below and in `the_reference_agrees_in_concurrent_cases…`).
                // The delete's race is the narrowest: under a loaded machine its replays
                // may all miss it (measured: 3 to 17 of 20 on a quiet one, 0 of 10 once while
                // the whole test suite ran beside it), so for it a divergence met and not
                // confirmed counts as found; the claim's and the write's are confirmed.
                let met_unconfirmed = report["unconfirmed"].as_array().unwrap().iter().any(|u| {
                    u["summary"]
                        .as_str()
                        .unwrap()
                        .starts_with("no order of the")
                });
                if m == "delete-without-lock" && code == 0 && met_unconfirmed {
                    return;
                }
                assert_eq!(code, 1, "{m} not found: {text}");
                let found = &report["found"][0];
                assert!(
                    found["rules"].as_array().unwrap().contains(&"S19".into()),
                    "{m}: {found}"
                );
                assert_eq!(found["replays"], 10, "{m}: {found}");
                let failed = found["failed_replays"].as_u64().unwrap();
                assert!((1..=10).contains(&failed), "{m}: {found}");
                assert!(
                    text.contains(&format!("failed in {failed} of 10 replays")),
                    "{text}"
                );
                let file = found["file"].as_str().unwrap();
                let scenario: serde_json::Value =
                    serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
                let block = scenario["steps"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find_map(|s| s.get("concurrent"))
                    .unwrap_or_else(|| panic!("{m}: no concurrent block: {scenario:#}"));
                assert_eq!(block["verify"], "linearizable");
                assert!(block["lanes"].as_array().unwrap().len() >= 2);
                // The reference explains every answer of the same requests, whatever order
                // they meet in.
                for _ in 0..3 {
                    let (code, report) = run(&[file, "--target", "reference"]);
                    assert_eq!(code, 0, "{m}: fails against the reference:\n{report}");
                }
            });
        }
    });
}

/// The same three stores look like the reference to a run without the parallel part: what
/// finds them is the concurrency, not the sequences.
#[test]
fn without_the_parallel_part_a_missing_lock_looks_like_the_reference() {
    let dir = util::tempdir();
    let out = dir.path().to_str().unwrap();
    for m in ["delete-without-lock", "claim-without-lock"] {
        let target = format!("mutant:{m}");
        let (code, text) = fuzz(&[
            "--target",
            &target,
            "--parallel",
            "0",
            "--cases",
            "150",
            "--seed",
            "2",
            "--out",
            out,
        ]);
        assert_eq!(code, 0, "{m}: {text}");
        assert!(text.contains("150 cases agreed"), "{text}");
        assert!(!text.contains("concurrent:"), "{text}");
    }
}

/// The reference agrees with the strict model in concurrent cases through real processes,
/// and the run says what raced: requests in parallel parts, pairs in flight at once,
/// distinct interleavings.
#[test]
fn the_reference_agrees_in_concurrent_cases_behind_cmd() {
    let dir = util::tempdir();
    let json = dir.path().join("fuzz.json");
    let target = format!("cmd:exec '{}' serve --no-fsync", util::bin());
    let (code, text) = fuzz(&[
        "--target",
        &target,
        "--seed",
        "5",
        "--cases",
        "80",
        "--out",
        dir.path().join("found").to_str().unwrap(),
        "--report",
        &format!("json:{}", json.display()),
    ]);
    assert_eq!(code, 0, "{text}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(report["reused_root"].as_bool().unwrap(), "{report}");
    assert_eq!(report["unknown_cases"], 0);
    assert!(
        report["concurrent_cases"].as_u64().unwrap() > 20,
        "{report}"
    );
    let c = &report["coverage"];
    assert!(c["concurrent"].as_u64().unwrap() > 40, "{c}");
    assert!(c["overlapping"].as_u64().unwrap() > 0, "{c}");
    assert!(c["interleavings"].as_u64().unwrap() > 1, "{c}");
    assert!(text.contains("pairs of them in flight at once"), "{text}");
}
