//! `taskproof judge`, the store author's loop: a store written from the README alone with
//! three planted defects (tests/fixtures/judge/planted_store.py) is judged by the one
//! command, and its to-do list names all three, lost data first.

use crate::util::{Tool, repo, require, taskproof, tempdir};

/// The number of each to-do item (`N. RULE title (class: …)`) whose rule is `rule`.
fn item_of(out: &str, rule: &str) -> Option<(usize, String)> {
    out.lines().find_map(|l| {
        let (n, rest) = l.split_once(". ")?;
        let n: usize = n.trim().parse().ok()?;
        rest.starts_with(&format!("{rule} "))
            .then(|| (n, rest.to_string()))
    })
}

#[test]
#[cfg_attr(not(taskproof_has_python), ignore = "needs python3 on PATH")]
fn a_store_with_three_planted_defects_gets_all_three_on_its_list_lost_data_first() {
    require(&[Tool::Python]);
    let d = tempdir();
    let store = repo().join("tests/fixtures/judge/planted_store.py");
    let target = format!("cmd:python3 {}", store.display());
    let out = taskproof()
        .current_dir(d.path())
        .args([
            "judge",
            "--target",
            &target,
            "--seed",
            "7",
            "--race-workload",
            "metadata",
            "--race-writers",
            "4",
            "--race-ops",
            "25",
            "--fuzz-cases",
            "40",
            "--out",
        ])
        .arg(d.path().join("findings"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    let list = stdout
        .split_once("\nto do, most costly first")
        .map(|(_, l)| l)
        .unwrap_or_else(|| panic!("no to-do list:\n{stdout}"));
    // 1: an id handed out again (S1); 3: an update without a lock loses a change (S19);
    // 2: a completion past an unfinished blocker (S5).
    let ids = item_of(list, "S1").unwrap_or_else(|| panic!("S1 not on the list:\n{list}"));
    let lost = item_of(list, "S19").unwrap_or_else(|| panic!("S19 not on the list:\n{list}"));
    let blocked = item_of(list, "S5").unwrap_or_else(|| panic!("S5 not on the list:\n{list}"));
    assert!(ids.1.contains("(data-loss"), "{}", ids.1);
    assert!(lost.1.contains("(data-loss"), "{}", lost.1);
    assert!(blocked.1.contains("(accepts-refused"), "{}", blocked.1);
    assert!(
        ids.0 < blocked.0 && lost.0 < blocked.0,
        "lost data comes first:\n{list}"
    );
    // Every data-loss item comes before every other.
    let classes: Vec<&str> = list
        .lines()
        .filter_map(|l| l.split_once(" (").map(|(_, c)| c))
        .filter_map(|c| c.split(':').next())
        .filter(|c| ["data-loss", "inconsistent", "accepts-refused", "input"].contains(c))
        .collect();
    let mut sorted = classes.clone();
    sorted.sort_by_key(|c| {
        ["data-loss", "inconsistent", "accepts-refused", "input"]
            .iter()
            .position(|x| x == c)
    });
    assert_eq!(classes, sorted, "{list}");
    // Each item replays with the target as given.
    let replays = list
        .lines()
        .filter(|l| l.trim().starts_with("replay: "))
        .count();
    assert_eq!(
        replays,
        list.lines()
            .filter(|l| l
                .split_once(". ")
                .is_some_and(|(n, _)| n.parse::<usize>().is_ok()))
            .count(),
        "{list}"
    );
}

#[test]
#[cfg_attr(not(taskproof_has_python), ignore = "needs python3 on PATH")]
fn a_printed_replay_line_replays_the_failure() {
    require(&[Tool::Python]);
    let d = tempdir();
    let store = repo().join("tests/fixtures/judge/planted_store.py");
    let target = format!("cmd:python3 {}", store.display());
    let out = taskproof()
        .current_dir(d.path())
        .args(["judge", "--target", &target, "--no-race", "--no-fuzz"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("replay: taskproof "))
        .unwrap_or_else(|| panic!("no replay line:\n{stdout}"));
    let words = shlex::split(line).expect("a shell line");
    let replayed = taskproof()
        .current_dir(d.path())
        .args(&words)
        .args(["--color", "never"])
        .output()
        .unwrap();
    let again = String::from_utf8_lossy(&replayed.stdout);
    assert_eq!(replayed.status.code(), Some(1), "{line}\n{again}");
    assert!(again.contains("1 failed"), "{line}\n{again}");
}

/// A pass that judged part of its steps is a partial pass, told apart from a full one, with
/// how many steps were judged: on the terminal, in the summary and in the JSON report. The
/// planted store's layout is opaque, so the file steps of this scenario are not judged.
#[test]
#[cfg_attr(not(taskproof_has_python), ignore = "needs python3 on PATH")]
fn a_pass_that_judged_part_of_its_steps_is_a_partial_pass() {
    require(&[Tool::Python]);
    let d = tempdir();
    let store = repo().join("tests/fixtures/judge/planted_store.py");
    let json = d.path().join("run.json");
    let out = taskproof()
        .current_dir(d.path())
        .args(["run", "--target"])
        .arg(format!("cmd:python3 {}", store.display()))
        .args(["--filter", "stray-files-and-folders-are-skipped"])
        .args(["--filter", "rt04-*", "--color", "never", "--report"])
        .arg(format!("json:{}", json.display()))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let partial = stdout
        .lines()
        .find(|l| l.starts_with("PARTIAL stray-files-and-folders-are-skipped: passed, "))
        .unwrap_or_else(|| panic!("no PARTIAL line:\n{stdout}"));
    assert!(!stdout.contains("PARTIAL rt04"), "{stdout}");
    assert!(
        stdout.ends_with(
            "2 passed, 0 failed, 0 errors, 0 skipped, 1 of the passes partial (part of their steps not judged)\n"
        ),
        "{stdout}"
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["summary"]["partial"], 1);
    let s = report["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "stray-files-and-folders-are-skipped")
        .unwrap();
    let (judged, steps) = (
        s["judged_steps"]["judged"].as_u64().unwrap(),
        s["judged_steps"]["steps"].as_u64().unwrap(),
    );
    assert!(judged < steps, "{s:#}");
    assert!(
        partial.ends_with(&format!("{judged} of {steps} steps judged")),
        "{partial}"
    );
}
