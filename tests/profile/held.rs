//! `run --profile` with a recorded profile: a target passes its own recording and fails
//! another's naming the step, and every report names the recording the run used.

use super::*;

#[test]
fn a_target_passes_its_own_recording_and_fails_another_naming_the_step() {
    let dir = tempdir();
    let ids = scenario_file("ids-never-reused-after-delete-and-restart");
    let cycle = scenario_file("rt04-circular-dependency");
    let (ids, cycle) = (ids.to_str().unwrap(), cycle.to_str().unwrap());
    let (code, out, err) = tp(
        dir.path(),
        &[
            "record",
            ids,
            cycle,
            "--target",
            "mutant:reused-ids",
            "--out",
            "p/reused.json",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("1 as strict expects, 1 differ"), "{out}");
    let text = std::fs::read_to_string(dir.path().join("p/reused.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["profile"], "reused");
    assert_eq!(
        v["recorded"]["hello"]["name"],
        "taskproof-mutant-reused-ids"
    );
    assert!(v["recorded"]["date"].as_str().unwrap().starts_with("20"));
    // Stable: recording again writes the same scenarios.
    let (code, ..) = tp(
        dir.path(),
        &[
            "record",
            ids,
            cycle,
            "--target",
            "mutant:reused-ids",
            "--out",
            "p/again.json",
        ],
    );
    assert_eq!(code, 0);
    let again: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("p/again.json")).unwrap())
            .unwrap();
    assert_eq!(again["scenarios"], v["scenarios"]);

    let (code, out, err) = tp(
        dir.path(),
        &[
            "run",
            ids,
            cycle,
            "--target",
            "mutant:reused-ids",
            "--profile",
            "p/reused.json",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.ends_with("2 passed, 0 failed, 0 errors, 0 skipped\n"),
        "{out}"
    );

    let (code, out, err) = tp(
        dir.path(),
        &[
            "run",
            ids,
            cycle,
            "--target",
            "reference",
            "--profile",
            "p/reused.json",
        ],
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("FAIL ids-never-reused-after-delete-and-restart"),
        "{out}"
    );
    assert!(out.contains("the profile reused recorded"), "{out}");
    assert!(out.contains(" at steps["), "{out}");
    assert!(
        out.ends_with("1 passed, 1 failed, 0 errors, 0 skipped\n"),
        "{out}"
    );
}

/// Every report of a run names the profile the run held the target to: a recorded profile by
/// its name, marked `(recorded)`, never as `strict`, whose steps it replays.
#[test]
fn every_report_names_the_recorded_profile_the_run_used() {
    let dir = tempdir();
    let rt01 = scenario_file("rt01-basic-creation");
    let rt01 = rt01.to_str().unwrap();
    let reports = |tag: &str| -> Vec<String> {
        [
            format!("json:{tag}.json"),
            format!("junit:{tag}.xml"),
            format!("md:{tag}.md"),
        ]
        .to_vec()
    };
    let read = |name: &str| std::fs::read_to_string(dir.path().join(name)).unwrap();

    // `naive` is held to its recording without --profile.
    let mut args = vec!["run", rt01, "--target", "naive"];
    let held = reports("held");
    for r in &held {
        args.extend(["--report", r.as_str()]);
    }
    let (code, out, err) = tp(dir.path(), &args);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("under profile hand-written-files (recorded)\n"),
        "{out}"
    );
    let json: serde_json::Value = serde_json::from_str(&read("held.json")).unwrap();
    assert_eq!(json["profile"], "hand-written-files (recorded)");
    assert_eq!(
        json["format_version"],
        taskproof_report::schema::RUN_FORMAT,
        "the JSON report keeps its shape"
    );
    assert!(
        read("held.xml").contains("name=\"naive (hand-written-files (recorded))\""),
        "{}",
        read("held.xml")
    );
    assert!(
        read("held.md").contains("profile `hand-written-files (recorded)`"),
        "{}",
        read("held.md")
    );

    // A profile file is named by the name inside it; `strict` stays `strict`.
    let (code, out, err) = tp(
        dir.path(),
        &[
            "record",
            rt01,
            "--target",
            "reference",
            "--out",
            "p/mine.json",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = tp(
        dir.path(),
        &[
            "run",
            rt01,
            "--profile",
            "p/mine.json",
            "--report",
            "json:file.json",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("under profile mine (recorded)\n"), "{out}");
    let json: serde_json::Value = serde_json::from_str(&read("file.json")).unwrap();
    assert_eq!(json["profile"], "mine (recorded)");
    let mut args = vec!["run", rt01, "--profile", "strict"];
    let strict = reports("strict");
    for r in &strict {
        args.extend(["--report", r.as_str()]);
    }
    let (code, out, err) = tp(dir.path(), &args);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("under profile strict\n"), "{out}");
    let json: serde_json::Value = serde_json::from_str(&read("strict.json")).unwrap();
    assert_eq!(json["profile"], "strict");
    assert!(read("strict.xml").contains("name=\"reference (strict)\""));
    assert!(read("strict.md").contains("profile `strict`"));
}

/// Holding the real Claude Code to recordings, cheaply (CI has 2.1.112 in its cache): 2.1.112
/// never reuses a deleted id, as its own recording and 2.1.21's say, so it passes them on that
/// scenario and fails 2.1.20's, which recorded the reuse, naming the step.
#[test]
#[cfg_attr(not(taskproof_has_npm), ignore = "needs node and npm on PATH")]
fn the_real_claude_code_2_1_112_passes_its_recording_and_fails_2_1_20s_on_id_reuse() {
    require(&[crate::util::Tool::Npm]);
    let dir = tempdir();
    let ids = scenario_file("ids-never-reused-after-delete-and-restart");
    let ids = ids.to_str().unwrap();
    let hold = |profile: &str| {
        tp(
            dir.path(),
            &[
                "run",
                ids,
                "--target",
                "claude-code@2.1.112",
                "--profile",
                profile,
                "--timeout",
                "120",
                "--start-timeout",
                "180",
            ],
        )
    };
    let (code, out, err) = hold("claude-code-2.1.112");
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("under profile claude-code-2.1.112 (recorded)\n"),
        "{out}"
    );
    assert!(
        out.ends_with("1 passed, 0 failed, 0 errors, 0 skipped\n"),
        "{out}"
    );
    let (code, out, err) = hold("claude-code-2.1.20");
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("the profile claude-code-2.1.20 recorded"),
        "{out}"
    );
    assert!(out.contains("at steps[10]"), "{out}");
}
