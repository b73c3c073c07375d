//! scripts/hold-profiles.sh: a store held to its own recording passes and its reports are
//! kept (once), one that differs fails, an unknown profile is refused.

use super::*;

/// Runs `scripts/hold-profiles.sh ARGS` with this build's binary, its reports into `out`.
fn hold_script(out: &Path, target: Option<&str>, args: &[&str]) -> std::process::Output {
    let mut cmd = std::process::Command::new("bash");
    cmd.arg(repo().join("scripts/hold-profiles.sh"))
        .args(args)
        .env("TASKPROOF", crate::util::bin())
        .env("HOLDS_DIR", out)
        .env_remove("TARGET");
    if let Some(t) = target {
        cmd.env("TARGET", t);
    }
    cmd.output().expect("run the hold script")
}

/// The one file in `dir` whose name ends with `suffix`, read.
fn only_file_ending(dir: &Path, suffix: &str) -> (String, String) {
    let names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(suffix))
        .collect();
    assert_eq!(names.len(), 1, "{suffix} in {names:?}");
    let text = std::fs::read_to_string(dir.join(&names[0])).unwrap();
    (names[0].clone(), text)
}

#[test]
#[cfg_attr(not(taskproof_has_python), ignore = "needs python3 on PATH")]
fn the_hold_script_passes_a_store_held_to_its_own_recording_and_keeps_the_reports() {
    require(&[Tool::Python]);
    let out = tempdir();
    let o = hold_script(out.path(), None, &["hand-written-files"]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let (name, status) = only_file_ending(out.path(), "-hand-written-files.status");
    assert!(
        status.contains("target naive profile hand-written-files exit 0"),
        "{status}"
    );
    let base = name.trim_end_matches(".status");
    for ext in ["txt", "json", "md"] {
        assert!(
            out.path().join(format!("{base}.{ext}")).is_file(),
            "{base}.{ext}"
        );
    }
    // The run wrote nothing to stderr: no empty .stderr is kept (reports/README.md).
    assert!(!out.path().join(format!("{base}.stderr")).exists());
    let (_, txt) = only_file_ending(out.path(), "-hand-written-files.txt");
    assert!(
        txt.trim_end()
            .ends_with("49 passed, 0 failed, 0 errors, 0 skipped"),
        "{txt}"
    );
    assert!(
        stdout.contains("hand-written-files: exit 0, 49 passed"),
        "{stdout}"
    );
}

#[test]
#[cfg_attr(not(taskproof_has_python), ignore = "needs python3 on PATH")]
fn the_hold_script_fails_a_store_that_differs_and_refuses_an_unknown_profile() {
    require(&[Tool::Python]);
    let out = tempdir();
    // The reference store does what strict expects, where the naive one's recording saw
    // lost updates and duplicate ids: held to that recording it fails.
    let o = hold_script(out.path(), Some("reference"), &["hand-written-files"]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let (_, status) = only_file_ending(out.path(), "reference-held-to-hand-written-files.status");
    assert!(
        status.contains("target reference profile hand-written-files exit 1"),
        "{status}"
    );
    let o = hold_script(out.path(), None, &["no-such-profile"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("profiles/no-such-profile.json"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A hold's report with the bytes of an earlier day's hold of the same name is not kept
/// twice: the script's last step (`scripts/lib/keep_once.py --hold`) removes it and names the
/// earlier file in the `.status`; a report that differs, or another hold's, stays. (The
/// naive store's own holds are no input for this: its concurrent blocks give different
/// counts from run to run.)
#[test]
#[cfg_attr(not(taskproof_has_python), ignore = "needs python3 on PATH")]
fn a_report_an_earlier_days_hold_holds_byte_for_byte_is_named_not_kept_twice() {
    require(&[Tool::Python]);
    let out = tempdir();
    let put = |name: &str, text: &str| std::fs::write(out.path().join(name), text).unwrap();
    put("2026-11-23-cc.md", "same\n");
    put("2026-11-23-cc.txt", "one run\n");
    put("2026-11-23-cc-rt0.md", "other hold\n");
    put("2026-12-06-cc.md", "same\n");
    put("2026-12-06-cc.txt", "another run\n");
    put("2026-12-06-cc-rt0.md", "other hold\n");
    put("2026-12-06-cc.status", "started ... exit 0\n");
    let o = std::process::Command::new("python3")
        .arg(repo().join("scripts/lib/keep_once.py"))
        .arg("--hold")
        .arg(out.path().join("2026-12-06-cc"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let exists = |name: &str| out.path().join(name).exists();
    assert!(!exists("2026-12-06-cc.md"));
    assert!(exists("2026-11-23-cc.md"));
    assert!(exists("2026-12-06-cc.txt"), "a report that differs stays");
    assert!(
        exists("2026-12-06-cc-rt0.md"),
        "another hold's report is not this one's"
    );
    assert_eq!(
        std::fs::read_to_string(out.path().join("2026-12-06-cc.status")).unwrap(),
        "started ... exit 0\nmd: the same bytes as 2026-11-23-cc.md\n"
    );
}
