//! `taskproof matrix`: the builder on small fixed reports (tests/fixtures/matrix/), and the
//! command end to end against fast in-process targets.

use std::path::{Path, PathBuf};

use taskproof_matrix::State;

use crate::util::{repo, taskproof, tempdir};

fn fixtures() -> PathBuf {
    repo().join("tests/fixtures/matrix")
}

fn good() -> Vec<taskproof_matrix::Column> {
    taskproof_matrix::load_from(&fixtures().join("good")).expect("the fixtures load")
}

#[test]
fn columns_follow_the_index_and_take_labels_from_target_json() {
    let cols = good();
    let labels: Vec<&str> = cols.iter().map(|c| c.label.as_str()).collect();
    // alpha and gamma have no target.json: their label is the spec of their reports, and for
    // Claude Code the configuration its run was in (teams-off: the report is from before
    // configurations were named).
    assert_eq!(
        labels,
        [
            "cmd:alpha --fast",
            "claude-code@9.9.9 (teams-off)",
            "Beta store",
            "delta"
        ]
    );
    assert_eq!(
        cols[1].races.len(),
        1,
        "race-create.json is read as a race report"
    );
    assert!(cols[3].run.is_none());
}

#[test]
fn rows_are_grouped_by_first_rule_lost_data_first_with_the_cell_states_of_each_report() {
    let cols = good();
    let m = taskproof_matrix::build(&cols);
    let groups: Vec<(&str, Option<&str>, Vec<&str>)> = m
        .groups
        .iter()
        .map(|g| {
            (
                g.rule.as_str(),
                g.class.map(|c| c.as_str()),
                g.rows.iter().map(|r| r.id.as_str()).collect(),
            )
        })
        .collect();
    // The groups follow their rules' consequence classes, most severe first: S13
    // (inconsistent) before S7 (accepts what the contract refuses).
    assert_eq!(
        groups,
        [
            ("S1", Some("data-loss"), vec!["ids-start-at-one"]),
            ("S13", Some("inconsistent"), vec!["lists-isolated"]),
            (
                "S7",
                Some("accepts-refused"),
                vec!["concurrent-edges", "cycle-refused"]
            ),
            ("no rule", None, vec!["zz-extra"]),
        ]
    );
    assert_eq!(m.groups[2].name, Some("no cycles"));
    let states = |id: &str| -> Vec<State> {
        m.rows()
            .find(|r| r.id == id)
            .expect("row")
            .cells
            .iter()
            .map(|c| c.state)
            .collect()
    };
    use State::*;
    assert_eq!(states("ids-start-at-one"), [Pass, Pass, Error, Error]);
    assert_eq!(states("cycle-refused"), [Fail, Pass, Error, Error]);
    assert_eq!(states("concurrent-edges"), [Skip, Skip, Error, Error]);
    // gamma's report has no lists-isolated: not run, not invented.
    assert_eq!(states("lists-isolated"), [Error, Missing, Error, Error]);
    assert_eq!(states("zz-extra"), [Missing, Pass, Error, Error]);
    // A column without a run report is an error with the reason the target.json gives.
    let delta = &m.rows().next().expect("a row").cells[3];
    assert!(delta.scenario.is_none());
    assert!(
        delta
            .reason
            .as_deref()
            .is_some_and(|r| r.contains("npm found no such version")),
        "{:?}",
        delta.reason
    );
    let alpha = m.counts(0);
    assert_eq!(
        (
            alpha[&Pass],
            alpha[&Fail],
            alpha[&Skip],
            alpha[&Error],
            alpha[&Missing]
        ),
        (1, 1, 1, 1, 1)
    );
}

#[test]
fn race_counts_are_summed_per_target_and_kept_apart_by_kind() {
    let cols = good();
    let m = taskproof_matrix::build(&cols);
    let alpha = &m.races[0];
    assert_eq!(alpha.counts["lost"], (5, 0));
    assert_eq!(alpha.counts["duplicate_ids"], (2, 0));
    assert_eq!(alpha.counts["torn_writes"], (1, 0));
    assert_eq!((alpha.ran(), alpha.workloads.len()), (2, 3));
    assert_eq!(alpha.target_errors, 1);
    // Format 1 (no profile) with its own key, torn_reads.
    let gamma = &m.races[1];
    assert_eq!(gamma.counts["lost"], (2, 0));
    assert_eq!(gamma.profiles, ["(not recorded)"]);
    assert!(m.anomaly_kinds.iter().any(|k| k == "torn_reads"));
    assert_eq!(
        m.anomaly_kinds[..3],
        [
            "lost".to_string(),
            "duplicate_ids".into(),
            "torn_writes".into()
        ]
    );
    assert!(m.races[2].error.is_some(), "beta's race could not run");
    assert!(m.races[3].absent && m.races[3].error.is_none());

    let pages = taskproof_matrix::render(&cols, "fixture");
    assert!(
        pages.markdown.contains("| lost updates | 5 | 2 | ! | · |"),
        "{}",
        pages.markdown
    );
    assert!(pages.markdown.contains("| duplicate ids | 2 | 2 | ! | · |"));
}

#[test]
fn hostile_strings_stay_text_in_both_pages() {
    let pages = taskproof_matrix::render(&good(), "a note with <b>markup</b>");
    let html = &pages.html;
    // The only script element is the page's own.
    assert_eq!(html.matches("<script").count(), 1, "{html}");
    assert!(!html.contains("<img"));
    assert!(!html.contains("<b>markup"));
    assert!(html.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"));
    assert!(html.contains("&lt;img src=x onerror=alert(1)&gt;"));
    // Self-contained: nothing is fetched.
    for needle in ["src=\"http", "href=\"http", "@import", "url("] {
        assert!(!html.contains(needle), "{needle}");
    }
    let md = &pages.markdown;
    let prose = without_code_spans(md);
    assert!(!prose.contains("<script"), "{prose}");
    assert!(!prose.contains("<img"), "{prose}");
    assert!(
        prose.contains("&lt;img src=x onerror=alert(1)&gt;"),
        "{prose}"
    );
    // The hostile answer is shown inside inline code, whose pipes are escaped for tables.
    assert!(md.contains("\\| `tick`"), "{md}");
    assert!(md.contains("Every scenario is an error: the target failed its hello"));
}

#[test]
fn a_cell_opens_to_the_step_the_expected_and_the_actual_answer() {
    let html = taskproof_matrix::render(&good(), "").html;
    let start = html
        .find("<b>cycle-refused</b> on <b>cmd:alpha --fast</b>")
        .expect("the failing cell's detail");
    let detail = &html[start..start + html[start..].find("</details>").expect("closed")];
    assert!(detail.contains("steps[3] · session main · S7"), "{detail}");
    assert!(
        detail.contains("<dt>expected</dt><dd><pre>{&quot;error&quot;:&quot;cycle&quot;}</pre>")
    );
    assert!(detail.contains("<dt>actual</dt>"));
    assert!(detail.contains("expected error cycle, got a success"));
    // The error cell names its step and message.
    assert!(html.contains("<dt>step</dt><dd>steps[1]</dd>"));
    assert!(html.contains("no answer within 10s"));
}

#[test]
fn a_malformed_report_is_a_usage_error_naming_file_line_and_field() {
    let out = tempdir();
    let o = taskproof()
        .args(["matrix", "--from"])
        .arg(fixtures().join("bad-outcome"))
        .arg("--out")
        .arg(out.path())
        .output()
        .expect("run taskproof");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("bad-outcome/run.json"), "{err}");
    assert!(
        err.contains("unknown variant `maybe`") && err.contains("line "),
        "{err}"
    );
    assert!(
        !out.path().join("matrix.html").exists(),
        "nothing half-done"
    );
}

/// Markdown with its inline code spans (where `<` is text, not markup) taken out.
fn without_code_spans(md: &str) -> String {
    let b = md.as_bytes();
    let run_at = |i: usize| b[i..].iter().take_while(|&&c| c == b'`').count();
    let (mut out, mut i) = (Vec::new(), 0);
    while i < b.len() {
        if b[i] != b'`' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let n = run_at(i);
        let mut j = i + n;
        while j < b.len() && !(b[j] == b'`' && run_at(j) == n) {
            j += if b[j] == b'`' { run_at(j) } else { 1 };
        }
        assert!(j < b.len(), "an unclosed code span at byte {i}");
        i = j + n;
    }
    String::from_utf8(out).expect("UTF-8")
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn matrix_runs_targets_saves_their_reports_and_rebuilds_from_them() {
    let dir = tempdir();
    let out = dir.path().join("reports");
    let o = taskproof()
        .args([
            "matrix",
            "--target",
            "reference",
            "--target",
            "mutant:no-mirror",
            "--target",
            "cmd:echo not a hello",
            "--label",
            "garbage=cmd:echo not a hello",
            "--race-writers",
            "2",
            "--race-ops",
            "5",
            "--out",
        ])
        .arg(&out)
        .output()
        .expect("run taskproof");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    for f in [
        "matrix.md",
        "matrix.html",
        "matrix/index.json",
        "matrix/reference/run.json",
        "matrix/reference/race.json",
        "matrix/mutant-no-mirror/run.json",
        "matrix/mutant-no-mirror/race.json",
        "matrix/garbage/target.json",
    ] {
        assert!(out.join(f).is_file(), "{f} missing; {err}");
    }
    let md = read(&out.join("matrix.md"));
    assert!(
        md.contains("| scenario | reference | mutant:no-mirror | garbage |"),
        "{md}"
    );
    // The mutant does not mirror edges: rt03-blocks fails there and nowhere else; the
    // target that cannot start is a column of errors.
    assert!(md.contains("| rt03-blocks | ✓ | ✗ | ! |"), "{md}");
    assert!(md.contains("| rt01-basic-creation | ✓ | ✓ | ! |"), "{md}");
    assert!(md.contains("| half edges | 0 |"), "{md}");
    let html = read(&out.join("matrix.html"));
    assert!(html.contains("</html>"));

    // Rebuilt from the saved reports alone, the pages are the same.
    let o = taskproof()
        .args(["matrix", "--from"])
        .arg(out.join("matrix"))
        .arg("--out")
        .arg(&out)
        .output()
        .expect("run taskproof");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(read(&out.join("matrix.md")), md);
    assert_eq!(read(&out.join("matrix.html")), html);
}

#[test]
fn matrix_without_input_or_with_an_unknown_target_is_a_usage_error() {
    let o = taskproof().arg("matrix").output().expect("run taskproof");
    assert_eq!(o.status.code(), Some(2));
    let o = taskproof()
        .args(["matrix", "--target", "bogus"])
        .output()
        .expect("run taskproof");
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn running_one_target_into_a_matrix_keeps_the_other_columns() {
    let dir = tempdir();
    let out = dir.path().join("reports");
    let matrix = |target: &str| {
        let o = taskproof()
            .args(["matrix", "--no-race", "--target", target, "--out"])
            .arg(&out)
            .output()
            .expect("run taskproof");
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let index: serde_json::Value =
            serde_json::from_str(&read(&out.join("matrix/index.json"))).unwrap();
        (index["targets"].clone(), read(&out.join("matrix.md")))
    };
    matrix("reference");
    let (index, md) = matrix("mutant:no-mirror");
    assert_eq!(index, serde_json::json!(["reference", "mutant-no-mirror"]));
    assert!(
        md.contains("| scenario | reference | mutant:no-mirror |"),
        "{md}"
    );
    // A target run again keeps its place; a folder gone from disk leaves the index.
    std::fs::create_dir_all(out.join("matrix/naive")).unwrap();
    let (index, md2) = matrix("reference");
    assert_eq!(index, serde_json::json!(["reference", "mutant-no-mirror"]));
    assert_eq!(md2, md);
    std::fs::remove_dir_all(out.join("matrix/mutant-no-mirror")).unwrap();
    let (index, _) = matrix("reference");
    assert_eq!(index, serde_json::json!(["reference"]));
    // An index that cannot be read is named, not replaced.
    std::fs::write(out.join("matrix/index.json"), "{").unwrap();
    let o = taskproof()
        .args(["matrix", "--no-race", "--target", "reference", "--out"])
        .arg(&out)
        .output()
        .expect("run taskproof");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("matrix/index.json"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Issue 24: a cell is `vanished` when the scenario failed because acknowledged task files
/// went between requests (its failure's witness names them), apart from other failures.
/// The checked-in run of the six `nothing-vanishes-*` scenarios against Claude Code 2.1.332
/// in its terminal UI shows three such cells.
#[test]
fn a_failure_whose_witness_shows_files_gone_between_requests_is_its_own_state() {
    let report = repo().join("reports/claude-code/2.1.332/between-requests.json");
    let column = taskproof_matrix::Column {
        run: Some(taskproof_matrix::input::read_run(&report).expect("the checked-in report reads")),
        label: "claude-code@2.1.332".into(),
        ..Default::default()
    };
    let columns = [column];
    let m = taskproof_matrix::build(&columns);
    let state = |id: &str| m.rows().find(|r| r.id == id).expect(id).cells[0].state;
    assert_eq!(
        state("nothing-vanishes-finished-list-left-idle"),
        State::Vanished
    );
    assert_eq!(state("nothing-vanishes-after-clear"), State::Pass);
    let vanished = m
        .rows()
        .filter(|r| r.cells[0].state == State::Vanished)
        .count();
    assert_eq!(vanished, 3);
    let md = taskproof_matrix::markdown::render(&m, "t", "");
    assert!(
        md.contains("⌛ `nothing-vanishes-finished-list-left-idle` vanished"),
        "{md}"
    );
    assert!(md.contains("    vanished: shared-plan/"), "{md}");
}

/// `--mapping` goes to the mcp: targets' runs (an MCP server is a column like any store),
/// and is refused, naming the file, when there is no such target or the file is bad.
#[test]
fn an_mcp_target_is_a_column_through_its_mapping() {
    let dir = tempdir();
    let mapping = repo().join("mappings/taskproof.toml");
    let target = format!("mcp:'{}' mcp", crate::util::bin());
    let out = taskproof()
        .args(["matrix", "--target", "reference", "--mapping"])
        .arg(&mapping)
        .arg("--out")
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no mcp:COMMAND target to give it to"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "[server]\nlayout = 3\n").unwrap();
    let out = taskproof()
        .args(["matrix", "--target", &target, "--mapping"])
        .arg(&bad)
        .arg("--out")
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("bad.toml"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!dir.path().join("matrix").exists(), "nothing was run");

    let out = taskproof()
        .args(["matrix", "--no-race", "--target", &target, "--mapping"])
        .arg(&mapping)
        .args(["--label", &format!("taskproof-mcp={target}"), "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let md = std::fs::read_to_string(dir.path().join("matrix.md")).unwrap();
    let row = md
        .lines()
        .find(|l| l.starts_with("| taskproof-mcp |"))
        .unwrap_or_else(|| panic!("{md}"));
    // Every built-in scenario passes strict through the mapping: nothing else counted but
    // the three on an agent session's own list and the agent team's, not judged (∅) since
    // a store has neither.
    let cells: Vec<&str> = row.split('|').map(str::trim).collect();
    // The counts after ✓: ◐ ◷ ✗ ⌛ – ∅ !.
    assert_eq!(cells[6..13], ["0", "0", "0", "0", "0", "4", "0"], "{row}");
}

/// Both pages lead with the failures by consequence class, most severe first; a column of
/// races only (no run report, nothing that failed to run) shows its scenario cells as race
/// only, never as not run.
#[test]
fn the_pages_lead_with_failures_by_class_and_a_race_only_column_is_not_not_run() {
    let d = tempdir();
    let mixed = d.path().join("mixed");
    std::fs::create_dir_all(&mixed).unwrap();
    std::fs::copy(
        fixtures().join("good/gamma/race-create.json"),
        mixed.join("race-create.json"),
    )
    .unwrap();
    let mut cols = good();
    cols.extend(taskproof_matrix::load_from(&mixed).expect("a race-only column loads"));
    let last = cols.len() - 1;
    assert!(cols[last].run.is_none() && cols[last].run_error.is_none());
    let m = taskproof_matrix::build(&cols);
    assert!(
        m.rows().all(|r| r.cells[last].state == State::RaceOnly),
        "a race-only column has no scenario to run"
    );
    assert_eq!(m.counts(last).get(&State::Missing), None);
    // alpha failed cycle-refused (S7): one failure that accepts what the contract refuses.
    let alpha: Vec<(&str, usize)> = m
        .failed_by_class(0)
        .into_iter()
        .map(|(c, n)| (c.as_str(), n))
        .collect();
    assert_eq!(
        alpha,
        [
            ("data-loss", 0),
            ("inconsistent", 0),
            ("accepts-refused", 1),
            ("input", 0)
        ]
    );

    let pages = taskproof_matrix::render(&cols, "");
    let at = |text: &str, s: &str| {
        text.find(s)
            .unwrap_or_else(|| panic!("{s} not in the page"))
    };
    let md = &pages.markdown;
    assert!(at(md, "## Failures by consequence") < at(md, "## Targets"));
    assert!(
        at(md, "| `data-loss` (loses or corrupts acknowledged data) |")
            < at(md, "| `input` (input checking) |")
    );
    assert!(md.contains("| `accepts-refused` (accepts what the contract refuses) | 1 |"));
    assert!(md.contains("| **S7 no cycles** (accepts-refused) |"));
    assert!(md.contains("cycle-refused` fail, accepts-refused"));
    let html = &pages.html;
    assert!(at(html, "id=\"classes\"") < at(html, "id=\"scenarios\""));
    assert!(html.contains("class: <b>accepts-refused</b>"));
    assert!(html.contains("<td class=\"c raceonly\">"));
}

/// Columns of the shipped matrix whose run report is known to be older than the suite, each
/// with why it was not rerun. A listed column whose report covers the suite fails the test
/// (take it off), so the list cannot rot.
const STALE: &[(&str, &str)] = &[
    ("reference", WHY_53),
    ("naive", WHY_53),
    ("learn-claude-code s07", WHY_53),
    ("task-master-0.43.1", WHY_53),
    ("claude-code-controller-0.3.0", WHY_53),
    ("oh-my-opencode-4.19.4", WHY_53),
    ("taskproof-mcp", WHY_53),
    ("dex 0.16.0 (mcp)", WHY_53),
    ("kazuph mcp-taskmanager 1.1.1 (mcp)", WHY_53),
    ("ohno-mcp 0.20.0 (mcp)", WHY_53),
    ("task-orchestrator 3.3.3 (mcp)", WHY_53),
    ("claude-code@2.1.17 (teams-off)", WHY_53),
    ("claude-code@2.1.20 (teams-off)", WHY_53),
    ("claude-code@2.1.21 (teams-off)", WHY_53),
    ("claude-code@2.1.112 (teams-off)", WHY_53),
    ("claude-code@2.1.276:teams-env (teams-env)", WHY_53),
    ("claude-code@2.1.330 (teams-off)", WHY_53),
    ("claude-code@2.1.332 (teams-off)", WHY_53),
    ("claude-code@2.1.332:teams-env (teams-env)", WHY_53),
];

/// Why the columns above are stale.
const WHY_53: &str = "lacks concurrent-deletes-stay-deleted (issue 53.3), added the day its suite reports were made; a rerun of every column takes hours on 2 cores: reports/matrix/rebuild.sh COLUMN";

/// The published matrix is current: every run report a column of reports/matrix.md reads
/// (reports/matrix/*/run.json, reports/claude-code/VERSION/run.json) holds every scenario of
/// the built-in suite. A full run reports every scenario it was given (pass, fail, skip or
/// not judged), so a scenario that is missing is one added after the report was made: the
/// report is older than the suite, and its cells would show as not run. A column of races
/// only has no run report and no scenario applies to it. And the pages are the ones the
/// checked-in reports make (`reports/matrix/rebuild.sh --pages`).
#[test]
fn the_checked_in_matrix_reports_cover_the_current_suite_and_make_the_pages() {
    let suite = taskproof_scenario::builtin::load_builtin().expect("the built-in suite loads");
    let ids: std::collections::BTreeSet<&str> = suite.iter().map(|s| s.id.as_str()).collect();
    let mut cols = taskproof_matrix::load_from(&repo().join("reports/matrix")).unwrap();
    cols.extend(taskproof_matrix::load_from(&repo().join("reports/claude-code")).unwrap());
    let mut stale = Vec::new();
    for c in &cols {
        let Some(run) = &c.run else { continue };
        let has: std::collections::BTreeSet<&str> =
            run.scenarios.iter().map(|s| s.id.as_str()).collect();
        let missing: Vec<&str> = ids.difference(&has).copied().collect();
        let listed = STALE.iter().any(|(label, _)| *label == c.label);
        match (missing.is_empty(), listed) {
            (false, false) => stale.push(format!(
                "{} ({}): lacks {} scenario(s) of the suite: {}",
                c.label,
                c.sources
                    .iter()
                    .find(|p| p.ends_with("run.json"))
                    .map(|p| p.strip_prefix(repo()).unwrap_or(p).display().to_string())
                    .unwrap_or_default(),
                missing.len(),
                missing.join(", ")
            )),
            (true, true) => stale.push(format!(
                "{}: listed in STALE but its report covers the suite: take it off",
                c.label
            )),
            _ => {}
        }
    }
    assert!(
        stale.is_empty(),
        "checked-in reports older than the suite; rerun them with reports/matrix/rebuild.sh COLUMN:\n{}",
        stale.join("\n")
    );

    let out = tempdir();
    let status = taskproof()
        .current_dir(repo())
        .args([
            "maint",
            "matrix",
            "--from",
            "reports/matrix",
            "--from",
            "reports/claude-code",
            "--out",
        ])
        .arg(out.path())
        .output()
        .unwrap();
    assert!(status.status.success(), "{status:?}");
    // matrix.md is checked in, once, for readers of the repository's page; matrix.html is
    // built from the same reports (.ci/run's pages step), not checked in (reports/README.md).
    assert!(
        read(&out.path().join("matrix.md")) == read(&repo().join("reports/matrix.md")),
        "reports/matrix.md is not what the checked-in reports make: rebuild it with reports/matrix/rebuild.sh --pages"
    );
    assert!(read(&out.path().join("matrix.html")).contains("</html>"));
    assert!(
        !repo().join("reports/matrix.html").exists(),
        "reports/matrix.html is built by .ci/run from the reports, not checked in"
    );
}
