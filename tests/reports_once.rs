//! reports/ keeps every file once (issue 56; reports/README.md, "No two identical files"): no
//! two checked-in files hold the same bytes, and a run whose finding was kept in another
//! run's folder (scripts/lib/keep_once.py) still names a scenario that is there.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::util::repo;

/// The files under `dir` that git tracks, relative to the repository: what is checked in,
/// not what a local run left beside it.
fn checked_in(dir: &str) -> Vec<PathBuf> {
    let out = Command::new("git")
        .args(["ls-files", "-z", "--", dir])
        .current_dir(repo())
        .output()
        .expect("run git ls-files");
    assert!(out.status.success(), "git ls-files {dir} failed");
    out.stdout
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| PathBuf::from(String::from_utf8(p.to_vec()).expect("a UTF-8 path")))
        // A file deleted in the work tree but not yet from the index is not kept.
        .filter(|p| repo().join(p).is_file())
        .collect()
}

/// Groups of two or more of `files` (relative to `root`) with the same bytes, each sorted.
fn same_bytes(root: &Path, files: &[PathBuf]) -> Vec<Vec<PathBuf>> {
    let mut by_content: HashMap<Vec<u8>, Vec<PathBuf>> = HashMap::new();
    for f in files {
        let bytes = std::fs::read(root.join(f)).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        by_content.entry(bytes).or_default().push(f.clone());
    }
    let mut groups: Vec<Vec<PathBuf>> = by_content
        .into_values()
        .filter(|g| g.len() > 1)
        .map(|mut g| {
            g.sort();
            g
        })
        .collect();
    groups.sort();
    groups
}

#[test]
fn the_check_finds_two_files_with_the_same_bytes_and_nothing_else() {
    let dir = crate::util::tempdir();
    for (name, text) in [("a.json", "{}\n"), ("b/a.json", "{}\n"), ("c.txt", "{}")] {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let files: Vec<PathBuf> = ["a.json", "b/a.json", "c.txt"].map(PathBuf::from).into();
    assert_eq!(
        same_bytes(dir.path(), &files),
        vec![vec![PathBuf::from("a.json"), PathBuf::from("b/a.json")]]
    );
}

/// Every checked-in file of reports/ is the only one with its bytes. An empty file is a copy
/// of every other empty file, so a writer keeps none (scripts/hold-profiles.sh drops an empty
/// stderr). There is no allow-list: a second copy is removed and what named it points at the
/// one kept.
#[test]
fn reports_hold_no_two_identical_files() {
    let files = checked_in("reports");
    assert!(
        files.len() > 100,
        "reports/ should hold the checked-in runs"
    );
    let groups = same_bytes(repo(), &files);
    let shown: Vec<String> = groups
        .iter()
        .map(|g| {
            g.iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(" = ")
        })
        .collect();
    assert!(
        groups.is_empty(),
        "byte-identical files in reports/ (keep one, point the others' readers at it; reports/README.md):\n{}",
        shown.join("\n")
    );
}

/// A fuzz run's reports name the scenario of each finding, in `found[].file` (fuzz.json) and
/// on its `replay:` line (fuzz.txt); after keep_once.py that is another run's copy, which
/// must be there.
#[test]
fn every_finding_a_fuzz_report_names_is_checked_in() {
    let files = checked_in("reports");
    let kept: std::collections::HashSet<&Path> = files.iter().map(PathBuf::as_path).collect();
    let mut named = Vec::new();
    for f in &files {
        let text = || std::fs::read_to_string(repo().join(f)).unwrap();
        match f.file_name().and_then(|n| n.to_str()) {
            Some("fuzz.json") => {
                let v: Value = serde_json::from_str(&text()).unwrap();
                for finding in v["found"].as_array().into_iter().flatten() {
                    let file = finding["file"].as_str().expect("found[].file");
                    named.push((f.clone(), file.to_string()));
                }
            }
            Some("fuzz.txt") => {
                for line in text().lines() {
                    if let Some(rest) = line.strip_prefix("replay: taskproof run ") {
                        let file = rest.split_whitespace().next().unwrap_or_default();
                        named.push((f.clone(), file.to_string()));
                    }
                }
            }
            _ => {}
        }
    }
    assert!(
        named.len() > 50,
        "the checked-in fuzz runs name their findings"
    );
    let missing: Vec<String> = named
        .iter()
        .filter(|(_, file)| !kept.contains(Path::new(file)))
        .map(|(report, file)| format!("{}: {file}", report.display()))
        .collect();
    assert!(
        missing.is_empty(),
        "findings named but not checked in:\n{}",
        missing.join("\n")
    );
}
