//! Profiles as files: `profile diff` per rule and scenario, `profile merge` of two days'
//! recordings, and a malformed profile named by file and field.

use super::*;

#[test]
fn diff_says_what_changed_per_rule_and_scenario() {
    let dir = tempdir();
    let before = write(
        dir.path(),
        "old.json",
        r#"{
        "ids": {"title": "Ids are never reused after delete and restart", "rules": ["S1"],
                "steps": {"4": {"strict": {"ok": true, "task": {"id": "3"}}, "seen": {"ok": true, "task": {"id": "2"}}}}},
        "race": {"title": "Concurrent creates get unique ids", "rules": ["S2"],
                 "steps": {"0": {"strict": "holds", "seen": {"verify": "unique_ids", "held": "never", "held_in": 0, "runs": 3, "violations": "2 to 9"}}}},
        "same": {"title": "Unchanged", "rules": ["S3"]}
    }"#,
    );
    let after = write(
        dir.path(),
        "new.json",
        r#"{
        "ids": {"title": "Ids are never reused after delete and restart", "rules": ["S1"]},
        "race": {"title": "Concurrent creates get unique ids", "rules": ["S2"],
                 "steps": {"0": {"strict": "holds", "seen": {"verify": "unique_ids", "held": "never", "held_in": 0, "runs": 3, "violations": 40}}}},
        "same": {"title": "Unchanged", "rules": ["S3"]}
    }"#,
    );
    let (code, out, err) = tp(dir.path(), &["profile", "diff", &before, &after]);
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(
        out,
        "old (t, recorded 2026-01-01) -> new (t, recorded 2026-01-01)\n\
         1 scenario(s) changed, under 1 rule(s):\n  S1: ids\n\n\
         ids: Ids are never reused after delete and restart: now as strict expects in new (was not in old) [S1]\n  \
         steps[4]: old answers {\"ok\":true,\"task\":{\"id\":\"2\"}} where strict expects {\"ok\":true,\"task\":{\"id\":\"3\"}}; new behaves as strict expects\n"
    );
    // The other way round, and a profile against itself.
    let (code, out, _) = tp(dir.path(), &["profile", "diff", &after, &before]);
    assert_eq!(code, 1);
    assert!(out.contains("ids: Ids are never reused after delete and restart: no longer as strict expects in old [S1]"), "{out}");
    let (code, out, _) = tp(dir.path(), &["profile", "diff", &after, &after]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.ends_with("no change: every scenario is recorded the same\n"),
        "{out}"
    );
}

#[test]
fn merge_joins_two_days_recordings_and_the_diff_then_counts_the_flap_as_no_change() {
    let dir = tempdir();
    let gone = r#"{"s": {"title": "t", "rules": ["S16"],
        "steps": {"6": {"strict": {"ok": true}, "seen": {"error": "not_found"}}}}}"#;
    let busy = write(dir.path(), "busy.json", gone);
    let quiet = write(
        dir.path(),
        "quiet.json",
        r#"{"s": {"title": "t", "rules": ["S16"]}}"#,
    );
    let (code, out, err) = tp(
        dir.path(),
        &[
            "profile",
            "merge",
            &quiet,
            &busy,
            "--out",
            "both.json",
            "--name",
            "both",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("2 recordings into both.json (profile both): 1 scenarios, 1 racy steps"),
        "{out}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("both.json")).unwrap())
            .unwrap();
    assert_eq!(v["profile"], "both");
    assert_eq!(
        v["scenarios"]["s"]["steps"]["6"]["racy"],
        json!([null, {"error": "not_found"}])
    );
    assert_eq!(v["recorded"]["merged"], json!([{"date": "2026-01-01"}]));
    // Either day's recording records one of the answers the merged one allows.
    for one in [&busy, &quiet] {
        let (code, out, _) = tp(dir.path(), &["profile", "diff", one, "both.json"]);
        assert_eq!(code, 0, "{out}");
    }
    // Recordings of two targets do not merge.
    let other = dir.path().join("other.json");
    std::fs::write(
        &other,
        r#"{"profile": "other", "format": 1, "recorded": {"target": "u"}, "scenarios": {}}"#,
    )
    .unwrap();
    let (code, _, err) = tp(
        dir.path(),
        &[
            "profile",
            "merge",
            &busy,
            other.to_str().unwrap(),
            "--out",
            "x.json",
        ],
    );
    assert_eq!(code, 2);
    assert!(err.contains("only recordings of one target merge"), "{err}");
}

#[test]
fn a_malformed_profile_names_the_file_and_the_field() {
    let dir = tempdir();
    let bad = write(
        dir.path(),
        "bad.json",
        r#"{"x": {"title": "t", "rules": ["S1"], "steps": {"2": {"strict": {"ok": true}, "seen": {"held": "yes"}}}}}"#,
    );
    let (code, out, err) = tp(dir.path(), &["run", "--profile", &bad]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains(&format!("{bad}: scenarios.x.steps.2.seen: expected")),
        "{err}"
    );
    let typo = write(
        dir.path(),
        "typo.json",
        r#"{"x": {"title": "t", "rules": ["S1"], "stpes": {}}}"#,
    );
    let (code, _, err) = tp(dir.path(), &["profile", "diff", &typo, "strict"]);
    assert_eq!(code, 2);
    assert!(
        err.contains(&format!("{typo}: scenarios.x.stpes: unknown field")),
        "{err}"
    );
    let (code, _, err) = tp(dir.path(), &["run", "--profile", "no-such-profile"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown profile \"no-such-profile\""), "{err}");
}
