//! Every JSON file checked in under reports/ and profiles/ is classified by its path: a report
//! of one of the schema's kinds (read through the reader taskproof itself uses, and written
//! back without losing a field), or a named other kind of file (scenario files the fuzzer
//! wrote, recorded profiles, caches and measurement records). A file that no rule names
//! fails the test, so a new kind of report cannot be checked in unread.

use std::path::{Path, PathBuf};

use serde_json::Value;
use taskproof_background::race::BgRaceReport;
use taskproof_matrix::input::{Index, read_manifest, read_race, read_run, strip_cut_markers};
use taskproof_profile::format::Recorded;
use taskproof_report::schema;

use crate::util::repo;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `run --report json:` (the store suite, the background suite, holds).
    Run,
    /// `race --report json:`.
    Race,
    /// `race-background --report json:`.
    BgRace,
    /// `fuzz --report json:`.
    Fuzz,
    /// `matrix`'s `target.json`.
    MatrixTarget,
    /// `matrix`'s `index.json`.
    MatrixIndex,
    /// A scenario file (a fuzz finding, a probe): read by the scenario loader.
    Scenario,
    /// A recorded profile (`record`, `hold --out`): read by the profile reader.
    Profile,
    /// Not a report of a command: a cache or a measurement record, with who writes it.
    Other(&'static str),
}

/// Path patterns (`*` stands for one path segment's characters), first match wins.
const RULES: &[(&str, Kind)] = &[
    ("reports/matrix/index.json", Kind::MatrixIndex),
    ("reports/matrix/*/target.json", Kind::MatrixTarget),
    // The MCP servers' and oh-my-opencode's columns are read where their runs were made
    // (reports/matrix/index.json names ../mcp/NAME and ../oh-my-opencode/VERSION), not from
    // copies.
    ("reports/mcp/*/target.json", Kind::MatrixTarget),
    ("reports/oh-my-opencode/*/target.json", Kind::MatrixTarget),
    ("reports/matrix/*/run.json", Kind::Run),
    ("reports/matrix/*/race.json", Kind::Race),
    ("reports/mcp/*/run.json", Kind::Run),
    ("reports/mcp/*/race-*.json", Kind::Race),
    ("reports/race-*.json", Kind::Race),
    ("reports/claude-code/*/race-*.json", Kind::Race),
    ("reports/claude-code/*/run.json", Kind::Run),
    ("reports/claude-code-controller/*/run.json", Kind::Run),
    ("reports/claude-code-controller/*/race-*.json", Kind::Race),
    // The race of an agent team (lead and teammates of one Claude Code CLI) and the
    // controller, charged per writer (reports/claude-code-controller/team/run.sh).
    (
        "reports/claude-code-controller/team/team-race-*.json",
        Kind::Race,
    ),
    ("reports/claude-code-controller/*/fuzz.json", Kind::Fuzz),
    (
        "reports/claude-code-controller/*/findings/*.json",
        Kind::Scenario,
    ),
    ("reports/oh-my-opencode/*/run.json", Kind::Run),
    ("reports/oh-my-opencode/*/run-*.json", Kind::Run),
    ("reports/oh-my-opencode/*/scenario-*.json", Kind::Scenario),
    ("reports/oh-my-opencode/*/race.json", Kind::Race),
    ("reports/oh-my-opencode/*/fuzz.json", Kind::Fuzz),
    ("reports/oh-my-opencode/*/findings/*.json", Kind::Scenario),
    ("reports/oh-my-opencode/mixed/*.json", Kind::Race),
    ("reports/claude-code/*/background-suite.json", Kind::Run),
    (
        "reports/claude-code/*/background-session-end-kills-tasks.json",
        Kind::Run,
    ),
    ("reports/claude-code/*/between-requests.json", Kind::Run),
    ("reports/claude-code/*/session-list.json", Kind::Run),
    ("reports/claude-code/*/resume-*.json", Kind::Run),
    ("reports/claude-code/*/terminal-suite.json", Kind::Run),
    ("reports/background/race-*.json", Kind::BgRace),
    ("reports/background/*.json", Kind::Run),
    ("reports/profiles/holds/*.json", Kind::Run),
    ("reports/task-master-mcp/*.json", Kind::Run),
    ("reports/fuzz-findings/*.json", Kind::Scenario),
    ("reports/fuzz-recall/*/fuzz.json", Kind::Fuzz),
    ("reports/fuzz-recall/*/findings/*.json", Kind::Scenario),
    ("reports/claude-code/*/fuzz/*.json", Kind::Scenario),
    ("reports/claude-code/probes/*.json", Kind::Scenario),
    // Scenarios of public reports about agent teams, run by path, beside their runs.
    ("reports/claude-code/teams/team-*.json", Kind::Scenario),
    ("reports/claude-code/teams/highest-id-*.json", Kind::Run),
    ("reports/claude-code/*/hold-*.json", Kind::Profile),
    ("profiles/*.json", Kind::Profile),
    (
        "reports/claude-code/timeline.json",
        Kind::Other("timeline's judgement cache (taskproof timeline)"),
    ),
    (
        "reports/claude-code/*/background.json",
        Kind::Other("a probe record of benches/background.rs, one free-form record per case"),
    ),
    (
        "reports/claude-code/*/background-race*.json",
        Kind::Other("a probe record of benches/background.rs (the kill/complete race)"),
    ),
    (
        "reports/claude-code/background-rates-*.json",
        Kind::Other("scripts/background-rates.sh's counts"),
    ),
    (
        "reports/bench-store.json",
        Kind::Other("benches/store.rs's measurements"),
    ),
    (
        "reports/mcp/*/tools.json",
        Kind::Other("an MCP server's tools/list answer, verbatim (reports/mcp/NAME/NOTES.md)"),
    ),
    (
        "reports/mcp/*/samples/*.json",
        Kind::Other("an MCP server's answers, verbatim, recorded while mapping it"),
    ),
    (
        "reports/mcp/*/samples/*/*.json",
        Kind::Other("an MCP server's answers, verbatim, recorded while mapping it"),
    ),
    (
        "reports/fuzz-results.json",
        Kind::Other("scripts/fuzz-report.sh's measurements"),
    ),
];

/// Whether `path` matches `pattern` segment by segment; `*` matches any characters but `/`.
fn matches(pattern: &str, path: &str) -> bool {
    fn segment(p: &str, s: &str) -> bool {
        match p.split_once('*') {
            None => p == s,
            Some((head, tail)) => {
                let Some(rest) = s.strip_prefix(head) else {
                    return false;
                };
                (0..=rest.len())
                    .filter(|&i| rest.is_char_boundary(i))
                    .any(|i| segment(tail, &rest[i..]))
            }
        }
    }
    let (p, s): (Vec<&str>, Vec<&str>) = (pattern.split('/').collect(), path.split('/').collect());
    p.len() == s.len() && p.iter().zip(&s).all(|(p, s)| segment(p, s))
}

fn kind_of(rel: &str) -> Option<Kind> {
    RULES
        .iter()
        .find(|(pattern, _)| matches(pattern, rel))
        .map(|(_, k)| *k)
}

fn json_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a folder entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            json_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "json") {
            out.push(p);
        }
    }
}

/// Whether everything `original` holds is in `written`, with the same value: reading a
/// report through its type and writing it again loses no field.
fn kept(original: &Value, written: &Value, at: &str) -> Result<(), String> {
    match (original, written) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in a {
                let Some(w) = b.get(k) else {
                    return Err(format!("{at}.{k}: dropped"));
                };
                kept(v, w, &format!("{at}.{k}"))?;
            }
            Ok(())
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => a
            .iter()
            .zip(b)
            .enumerate()
            .try_for_each(|(i, (v, w))| kept(v, w, &format!("{at}[{i}]"))),
        (Value::Number(a), Value::Number(b)) if a.as_f64() == b.as_f64() => Ok(()),
        (a, b) if a == b => Ok(()),
        (a, b) => Err(format!("{at}: {a} was written back as {b}")),
    }
}

/// Reads `path` as a report of `kind` through taskproof's own reader, and checks that
/// writing it again keeps every field.
fn read_as(kind: Kind, path: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let mut original: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    strip_cut_markers(&mut original, "", &mut Default::default());
    let written = match kind {
        Kind::Run => schema::to_value(&read_run(path).map_err(|e| e.to_string())?),
        Kind::Race => schema::to_value(&read_race(path).map_err(|e| e.to_string())?),
        Kind::BgRace => {
            let r: BgRaceReport = schema::read(path).map_err(|e| e.to_string())?;
            let mut v = schema::to_value(&r);
            // A report written before it carried a version reads as version 0.
            if original.get("format_version").is_none() {
                assert_eq!(r.format_version, 0, "{}", path.display());
                v.as_object_mut()
                    .expect("an object")
                    .remove("format_version");
            }
            v
        }
        Kind::Fuzz => {
            schema::to_value(&schema::read::<schema::FuzzReport>(path).map_err(|e| e.to_string())?)
        }
        Kind::MatrixTarget => schema::to_value(&read_manifest(path).map_err(|e| e.to_string())?),
        Kind::MatrixIndex => {
            schema::to_value(&schema::read::<Index>(path).map_err(|e| e.to_string())?)
        }
        Kind::Scenario => {
            taskproof_scenario::load_file(path).map_err(|e| format!("{e:?}"))?;
            return Ok(());
        }
        Kind::Profile => {
            Recorded::load(path).map_err(|e| e.to_string())?;
            return Ok(());
        }
        Kind::Other(_) => return Ok(()),
    };
    kept(&original, &written, "")
}

#[test]
fn every_checked_in_report_reads_through_the_schema() {
    let root = repo();
    let mut files = Vec::new();
    json_files(&root.join("reports"), &mut files);
    json_files(&root.join("profiles"), &mut files);
    let mut problems = Vec::new();
    let mut read = std::collections::BTreeMap::<String, usize>::new();
    for path in &files {
        let rel = path
            .strip_prefix(root)
            .expect("under the repository")
            .to_string_lossy()
            .replace('\\', "/");
        let Some(kind) = kind_of(&rel) else {
            problems.push(format!(
                "{rel}: no rule in tests/report_schema.rs says what this file is; add one (a report kind, or what else it is)"
            ));
            continue;
        };
        match read_as(kind, path) {
            Ok(()) => {
                let name = match kind {
                    Kind::Other(_) => "other".to_string(),
                    k => format!("{k:?}"),
                };
                *read.entry(name).or_default() += 1;
            }
            Err(e) => problems.push(format!("{rel} (as {kind:?}): {e}")),
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // Every kind of report is among the checked-in files, so no rule reads nothing.
    for kind in [
        "Run",
        "Race",
        "BgRace",
        "Fuzz",
        "MatrixTarget",
        "MatrixIndex",
        "Scenario",
        "Profile",
    ] {
        assert!(
            read.get(kind).copied().unwrap_or(0) > 0,
            "no {kind} file read: {read:?}"
        );
    }
    eprintln!("read {} files: {read:?}", files.len());
}

#[test]
fn every_rule_names_a_checked_in_file() {
    let root = repo();
    let mut files = Vec::new();
    json_files(&root.join("reports"), &mut files);
    json_files(&root.join("profiles"), &mut files);
    let rels: Vec<String> = files
        .iter()
        .map(|p| p.strip_prefix(root).unwrap().to_string_lossy().into_owned())
        .collect();
    for (pattern, kind) in RULES {
        assert!(
            rels.iter()
                .any(|r| kind_of(r) == Some(*kind) && matches(pattern, r)),
            "{pattern} ({kind:?}) names no checked-in file: a stale rule"
        );
    }
}

#[test]
fn a_report_without_format_version_is_version_0_where_it_once_had_none() {
    let dir = crate::util::tempdir();
    // The background race's report carried no version before the schema: version 0.
    let bg = r#"{"target": "reference", "tasks": 0, "sleep": 1.0, "step": 0.1, "once": 0,
        "twice_or_more": 0, "never": 0, "contradicted": 0, "killed": 0, "already_final": 0,
        "not_found": 0, "orphans": [], "seconds": 0.5, "accounts": []}"#;
    let p = dir.path().join("race-reference.json");
    let r: BgRaceReport = schema::parse(&p, bg).expect("reads");
    assert_eq!(r.format_version, 0);
    let with: BgRaceReport =
        schema::parse(&p, &bg.replacen('{', "{\"format_version\": 1, ", 1)).expect("reads");
    assert_eq!(with.format_version, 1);
    // A run report always had one: without it, the matrix refuses the file, naming it.
    let run = dir.path().join("run.json");
    std::fs::write(
        &run,
        r#"{"target": {"spec": "x"}, "profile": "strict", "scenarios": []}"#,
    )
    .unwrap();
    let e = read_run(&run).expect_err("refused").to_string();
    assert!(
        e.contains("run.json: format_version: this taskproof reads run reports of format 1, 2 or 3, not one without format_version"),
        "{e}"
    );
    // And a version it does not know.
    std::fs::write(
        &run,
        r#"{"format_version": 7, "target": {"spec": "x"}, "profile": "strict", "scenarios": []}"#,
    )
    .unwrap();
    let e = read_run(&run).expect_err("refused").to_string();
    assert!(e.contains("not 7"), "{e}");
}

#[test]
fn the_pattern_matcher_keeps_to_one_segment() {
    assert!(matches(
        "reports/race-*.json",
        "reports/race-naive-create.json"
    ));
    assert!(!matches(
        "reports/race-*.json",
        "reports/claude-code/race-x.json"
    ));
    assert!(matches("reports/*/run.json", "reports/2.1.17/run.json"));
    assert!(!matches("reports/*/run.json", "reports/a/b/run.json"));
    assert!(matches(
        "profiles/*.json",
        "profiles/claude-code-2.1.17.json"
    ));
}
