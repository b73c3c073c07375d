//! What the matrix is built from: the JSON reports of `taskproof run` (format 1,
//! docs/reports.md) and `taskproof race` (formats 1 and 2, docs/race.md), read back as they
//! were written, and the small `target.json` that `taskproof matrix` writes beside them when
//! a target could not be run at all.
//!
//! Reading is strict about what the matrix shows (an outcome it does not know is an error
//! naming the file, line and field) and lenient about the rest (new fields may appear).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The run report format this reader understands.
pub const RUN_FORMAT: u64 = schema::RUN_FORMAT;
/// The race report formats this reader understands (1: before profiles, 2: with them).
pub const RACE_FORMATS: [u64; 2] = [1, 2];
/// The format of `target.json`.
pub const MANIFEST_FORMAT: u64 = 1;

// The run report and its parts are the schema's types (the ones `run` writes); a race
// report is race's own serde type (the one `race --report json:FILE` writes).
use taskproof_race::report::RaceReport;
use taskproof_report::schema::{ReadError, RunReport};

/// What `taskproof matrix` writes beside a target's reports: its label and spec, and why a
/// report is missing when the target could not be run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub format_version: u64,
    pub label: String,
    pub spec: String,
    pub profile: String,
    /// Why there is no `run.json`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_error: Option<String>,
    /// Why there is no race report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub race_error: Option<String>,
    /// Whether the race was left out on purpose (`--no-race`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub race_not_run: bool,
}

use taskproof_report::schema::{self, read as read_json};

/// Reads a run report, checking its format version.
pub fn read_run(path: &Path) -> Result<RunReport, ReadError> {
    let text = std::fs::read_to_string(path).map_err(|e| ReadError::new(path, e))?;
    parse_run(path, &text)
}

/// Parses a run report read from `path`.
pub fn parse_run(path: &Path, text: &str) -> Result<RunReport, ReadError> {
    known_format(
        path,
        schema::format_version(path, text)?,
        &schema::RUN_FORMATS_READ,
        "run reports",
    )?;
    match schema::parse::<RunReport>(path, text) {
        Ok(r) => Ok(r),
        Err(strict) => {
            let Some((clean, cut)) = uncut(text) else {
                return Err(strict);
            };
            let mut r: RunReport = parse_uncut(path, &clean)?;
            r.cut_scenarios = cut.get("scenarios").copied().unwrap_or(0);
            Ok(r)
        }
    }
}

/// The marker a trimmed copy of a report puts at the end of a long array in place of the
/// items it left out (`"... [23 more items cut]"`, as scripts/claude-code-reports.sh writes
/// them); the number of items.
fn cut_marker(v: &Value) -> Option<u64> {
    v.as_str()?
        .strip_prefix("... [")?
        .strip_suffix(" more items cut]")?
        .parse()
        .ok()
}

/// Removes the cut markers from every array of `v`, counting the items they stood for by
/// the key of the array.
pub fn strip_cut_markers(v: &mut Value, key: &str, cut: &mut BTreeMap<String, u64>) {
    match v {
        Value::Array(items) => {
            items.retain(|x| match cut_marker(x) {
                Some(n) => {
                    *cut.entry(key.to_string()).or_default() += n;
                    false
                }
                None => true,
            });
            for x in items {
                strip_cut_markers(x, key, cut);
            }
        }
        Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                strip_cut_markers(x, k, cut);
            }
        }
        _ => {}
    }
}

/// A trimmed report without its cut markers, as JSON text, when it has any; with the number
/// of items cut, by the key of their array.
fn uncut(text: &str) -> Option<(String, BTreeMap<String, u64>)> {
    let mut value: Value = serde_json::from_str(text).ok()?;
    let mut cut = BTreeMap::new();
    strip_cut_markers(&mut value, "", &mut cut);
    if cut.is_empty() {
        return None;
    }
    let clean = serde_json::to_string_pretty(&value).expect("a JSON value serializes");
    Some((clean, cut))
}

/// Parses a report without its cut markers. It is read from text like every other report,
/// so each report type has one reader; an error's line is in that text, which it says.
fn parse_uncut<T: serde::de::DeserializeOwned>(path: &Path, clean: &str) -> Result<T, ReadError> {
    schema::parse(path, clean).map_err(|e| {
        ReadError::new(
            path,
            format!("{} (in the report with its cut markers removed)", e.message),
        )
    })
}

/// Reads a race report, checking its format version.
pub fn read_race(path: &Path) -> Result<RaceReport, ReadError> {
    let text = std::fs::read_to_string(path).map_err(|e| ReadError::new(path, e))?;
    parse_race(path, &text)
}

/// Parses a race report read from `path`.
pub fn parse_race(path: &Path, text: &str) -> Result<RaceReport, ReadError> {
    known_format(
        path,
        schema::format_version(path, text)?,
        &RACE_FORMATS,
        "race reports",
    )?;
    match schema::parse::<RaceReport>(path, text) {
        Ok(r) => Ok(r),
        // Witnesses cut from a trimmed copy: the counts are whole, so nothing is lost.
        Err(strict) => match uncut(text) {
            Some((clean, _)) => parse_uncut(path, &clean),
            None => Err(strict),
        },
    }
}

/// Refuses a file whose `format_version` is not one this reader knows, naming the ones it
/// does: `format_version: this taskproof reads race reports of format 1 or 2, not 3`. A
/// version of 0 is a file without one.
fn known_format(path: &Path, version: u64, known: &[u64], what: &str) -> Result<(), ReadError> {
    if known.contains(&version) {
        return Ok(());
    }
    let known: Vec<String> = known.iter().map(u64::to_string).collect();
    let known = match known.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => known.join(""),
    };
    let found = match version {
        0 => "one without format_version".into(),
        v => v.to_string(),
    };
    Err(ReadError::new(
        path,
        format!("format_version: this taskproof reads {what} of format {known}, not {found}"),
    ))
}

/// Reads a `target.json`.
pub fn read_manifest(path: &Path) -> Result<Manifest, ReadError> {
    let m: Manifest = read_json(path)?;
    known_format(path, m.format_version, &[MANIFEST_FORMAT], "target.json")?;
    Ok(m)
}

/// One column of the matrix: a target and what is known of it.
#[derive(Debug, Clone, Default)]
pub struct Column {
    /// The column's heading.
    pub label: String,
    /// The target spec (`reference`, `claude-code@2.1.17`, `cmd:...`).
    pub spec: String,
    pub run: Option<RunReport>,
    /// Why there is no run report (the target could not be made ready, say).
    pub run_error: Option<String>,
    pub races: Vec<RaceReport>,
    /// Why there is no race report.
    pub race_error: Option<String>,
    /// The race was left out on purpose.
    pub race_not_run: bool,
    /// Where the column was read from, for the matrix's footnotes.
    pub sources: Vec<PathBuf>,
}

impl Column {
    /// What the target said of itself: the name and version its hello gave, else why there
    /// is none (`failed: ...` when the hello failed, the reason there is no run report).
    pub fn hello(&self) -> String {
        match &self.run {
            Some(r) => match &r.target.error {
                Some(e) => format!("failed: {e}"),
                None => [r.target.name.as_deref(), r.target.version.as_deref()]
                    .into_iter()
                    .flatten()
                    .collect::<Vec<_>>()
                    .join(" "),
            },
            None => self
                .run_error
                .clone()
                .unwrap_or_else(|| "no run report".into()),
        }
    }

    /// The profile the column's reports were judged by, as the reports say.
    pub fn profile(&self) -> Option<&str> {
        self.run.as_ref().map(|r| r.profile.as_str()).or_else(|| {
            self.races
                .iter()
                .find_map(|r| (!r.profile.is_empty()).then_some(r.profile.as_str()))
        })
    }
}

/// Compares names so that numbers inside them compare as numbers (`2.1.17` < `2.1.112`).
pub fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    fn chunks(s: &str) -> Vec<(bool, &str)> {
        let mut out = Vec::new();
        let mut start = 0;
        let bytes = s.as_bytes();
        for i in 1..=bytes.len() {
            if i == bytes.len() || bytes[i].is_ascii_digit() != bytes[start].is_ascii_digit() {
                out.push((bytes[start].is_ascii_digit(), &s[start..i]));
                start = i;
            }
        }
        out
    }
    let (ca, cb) = (chunks(a), chunks(b));
    for (x, y) in ca.iter().zip(&cb) {
        let ord = match (x, y) {
            ((true, p), (true, q)) => {
                let (p, q) = (p.trim_start_matches('0'), q.trim_start_matches('0'));
                p.len().cmp(&q.len()).then_with(|| p.cmp(q))
            }
            ((_, p), (_, q)) => p.cmp(q),
        };
        if ord.is_ne() {
            return ord;
        }
    }
    ca.len().cmp(&cb.len()).then_with(|| a.cmp(b))
}

/// Whether `dir` holds one target's reports (`run.json`, `race*.json` or `target.json`).
fn is_target_dir(dir: &Path) -> bool {
    dir.join("run.json").is_file()
        || dir.join("target.json").is_file()
        || !race_files(dir).is_empty()
}

/// The race reports in `dir`: `race.json` and `race-*.json`, in natural order.
fn race_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_file())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n == "race.json" || (n.starts_with("race-") && n.ends_with(".json")))
        .collect();
    names.sort_by(|a, b| natural_cmp(a, b));
    names.into_iter().map(|n| dir.join(n)).collect()
}

/// Reads one target's folder into a column.
pub fn load_target_dir(dir: &Path) -> Result<Column, ReadError> {
    let mut col = Column::default();
    let manifest_path = dir.join("target.json");
    let manifest = if manifest_path.is_file() {
        col.sources.push(manifest_path.clone());
        Some(read_manifest(&manifest_path)?)
    } else {
        None
    };
    let run_path = dir.join("run.json");
    if run_path.is_file() {
        col.run = Some(read_run(&run_path)?);
        col.sources.push(run_path);
    }
    for p in race_files(dir) {
        col.races.push(read_race(&p)?);
        col.sources.push(p);
    }
    if col.run.is_none() && col.races.is_empty() && manifest.is_none() {
        return Err(ReadError::new(
            dir,
            "no run.json, race*.json or target.json: not a target's reports",
        ));
    }
    let dir_name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| dir.display().to_string());
    col.spec = col
        .run
        .as_ref()
        .map(|r| r.target.spec.clone())
        .or_else(|| col.races.first().map(|r| r.target.clone()))
        .unwrap_or_default();
    col.label = labelled(&col.spec, col.run.as_ref());
    if let Some(m) = manifest {
        col.label = m.label;
        if col.spec.is_empty() {
            col.spec = m.spec;
        }
        if col.run.is_none() {
            col.run_error = m.run_error;
        }
        if col.races.is_empty() {
            col.race_error = m.race_error;
            col.race_not_run = m.race_not_run;
        }
    }
    if col.label.is_empty() {
        col.label = dir_name;
    }
    Ok(col)
}

/// Reads `--from DIR`: one target's folder, or a folder of them (in the order its
/// `index.json` gives, else in natural order of their names).
pub fn load_from(dir: &Path) -> Result<Vec<Column>, ReadError> {
    if !dir.is_dir() {
        return Err(ReadError::new(dir, "not a folder"));
    }
    if is_target_dir(dir) {
        return Ok(vec![load_target_dir(dir)?]);
    }
    let index = dir.join("index.json");
    let names: Vec<String> = if index.is_file() {
        let idx: Index = read_json(&index)?;
        idx.targets
    } else {
        let entries = std::fs::read_dir(dir).map_err(|e| ReadError::new(dir, e))?;
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter(|e| is_target_dir(&e.path()))
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        names.sort_by(|a, b| natural_cmp(a, b));
        names
    };
    if names.is_empty() {
        return Err(ReadError::new(
            dir,
            "holds no target's reports (run.json, race*.json or target.json, here or in a subfolder)",
        ));
    }
    names
        .iter()
        .map(|n| load_target_dir(&dir.join(n)))
        .collect()
}

/// `index.json`: the order of the target folders `taskproof matrix` wrote. An entry is a path
/// relative to the index's folder, so a column can be read where its run was made
/// (reports/matrix/index.json names `../mcp/NAME`) instead of from a copy.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Index {
    pub format_version: u64,
    pub targets: Vec<String>,
}

/// The index of `base` after the targets in `ran` (folder names) were run into it: the
/// folders the old index listed that still hold reports, in their order, then the new ones.
/// An index that cannot be read is an error naming it, never silently replaced.
pub fn merge_index(base: &Path, ran: &[String]) -> Result<Index, ReadError> {
    let path = base.join("index.json");
    let mut targets: Vec<String> = if path.is_file() {
        let old: Index = read_json(&path)?;
        old.targets
            .into_iter()
            .filter(|t| ran.contains(t) || is_target_dir(&base.join(t)))
            .collect()
    } else {
        Vec::new()
    };
    for t in ran {
        if !targets.contains(t) {
            targets.push(t.clone());
        }
    }
    Ok(Index {
        format_version: MANIFEST_FORMAT,
        targets,
    })
}

/// A column's label when nothing names it: its spec, and the configuration its run was in
/// when the target has named ones (Claude Code: `claude-code@2.1.332 (teams-off)`), so that
/// every column says which configuration its verdicts hold for.
fn labelled(spec: &str, run: Option<&RunReport>) -> String {
    match run.and_then(|r| r.target.configuration.as_deref()) {
        Some(config) => format!("{spec} ({config})"),
        // Reports from before configurations were named: taskproof never switched agent
        // teams on then, so a Claude Code run was in the default.
        None if spec.starts_with("claude-code@") && !spec.contains(':') => {
            format!("{spec} (teams-off)")
        }
        None => spec.to_string(),
    }
}

/// Adds `--run FILE` and `--race FILE` reports: each run report is a column; each race
/// report joins the column with the same target spec, or makes one.
pub fn add_files(
    columns: &mut Vec<Column>,
    runs: &[PathBuf],
    races: &[PathBuf],
) -> Result<(), ReadError> {
    for p in runs {
        let run = read_run(p)?;
        columns.push(Column {
            label: labelled(&run.target.spec, Some(&run)),
            spec: run.target.spec.clone(),
            run: Some(run),
            sources: vec![p.clone()],
            ..Column::default()
        });
    }
    for p in races {
        let race = read_race(p)?;
        match columns.iter_mut().find(|c| c.spec == race.target) {
            Some(c) => {
                c.races.push(race);
                c.sources.push(p.clone());
            }
            None => columns.push(Column {
                label: race.target.clone(),
                spec: race.target.clone(),
                races: vec![race],
                sources: vec![p.clone()],
                ..Column::default()
            }),
        }
    }
    Ok(())
}

/// Joins the shards of one run (`taskproof run --partition K/N`, one report per shard, as
/// machines that split a run write them) into one column: columns with the same target
/// spec whose run reports hold disjoint sets of scenarios become one column whose run has
/// every scenario, sorted by id as an unsharded run's report is, with the shards' races and
/// sources. Columns whose scenarios overlap are separate runs and stay separate columns.
pub fn merge_shards(columns: Vec<Column>) -> Vec<Column> {
    let mut out: Vec<Column> = Vec::new();
    for col in columns {
        let ids = |c: &Column| -> Vec<String> {
            c.run
                .as_ref()
                .map(|r| r.scenarios.iter().map(|s| s.id.clone()).collect())
                .unwrap_or_default()
        };
        let mine = ids(&col);
        let joins = out.iter_mut().find(|c| {
            c.spec == col.spec
                && c.run.is_some()
                && col.run.is_some()
                && c.run.as_ref().map(|r| &r.profile) == col.run.as_ref().map(|r| &r.profile)
                && !ids(c).iter().any(|id| mine.contains(id))
        });
        match (joins, col.run) {
            (Some(c), Some(run)) => {
                let into = c.run.as_mut().expect("checked above");
                into.scenarios.extend(run.scenarios);
                into.scenarios.sort_by(|a, b| a.id.cmp(&b.id));
                into.cut_scenarios += run.cut_scenarios;
                c.races.extend(col.races);
                c.sources.extend(col.sources);
            }
            (_, run) => out.push(Column { run, ..col }),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_with_steps_not_judged_is_a_partial_pass_in_old_and_new_reports() {
        // Format 2 knew no partial passes, but kept the steps not judged.
        let old = r#"{"format_version": 2, "target": {"spec": "x"}, "profile": "strict",
            "summary": {"passed": 2},
            "scenarios": [{"id": "a", "outcome": "pass",
                           "skipped_steps": [{"step": 3, "reason": "opaque"}]},
                          {"id": "b", "outcome": "pass"}]}"#;
        let r = parse_run(Path::new("run.json"), old).expect("reads");
        assert_eq!(r.summary.partial, 0);
        let states: Vec<crate::build::State> =
            r.scenarios.iter().map(crate::build::state_of).collect();
        assert_eq!(
            states,
            [crate::build::State::Partial, crate::build::State::Pass]
        );
        // Format 3 says how many steps were judged.
        let new = old
            .replace(r#""format_version": 2"#, r#""format_version": 3"#)
            .replace(r#""passed": 2"#, r#""passed": 2, "partial": 1"#)
            .replace(
                r#""skipped_steps": [{"step": 3, "reason": "opaque"}]"#,
                r#""skipped_steps": [{"step": 3, "reason": "opaque"}], "judged_steps": {"judged": 3, "steps": 4}"#,
            );
        let r = parse_run(Path::new("run.json"), &new).expect("reads");
        assert_eq!(r.summary.partial, 1);
        assert_eq!(
            r.scenarios[0].judged_steps,
            Some(taskproof_report::schema::JudgedSteps {
                judged: 3,
                steps: 4
            })
        );
        assert!(r.scenarios[0].partial() && !r.scenarios[1].partial());
    }

    #[test]
    fn a_trimmed_run_report_is_read_as_far_as_it_goes() {
        let text = r#"{"format_version": 1, "target": {"spec": "x"}, "profile": "strict",
            "scenarios": [{"id": "a", "outcome": "pass",
                           "failures": [], "notes": ["n", "... [2 more items cut]"]},
                          "... [23 more items cut]"]}"#;
        let r = parse_run(Path::new("run.json"), text).expect("reads");
        assert_eq!(r.scenarios.len(), 1);
        assert_eq!(r.cut_scenarios, 23);
        assert_eq!(r.scenarios[0].notes, ["n"]);
        // Without markers, a string where a scenario belongs stays an error with its line.
        let bad = text
            .replace("... [23 more items cut]", "oops")
            .replace(", \"... [2 more items cut]\"", "");
        let e = parse_run(Path::new("run.json"), &bad).expect_err("refused");
        assert!(e.to_string().contains("line"), "{e}");
        // With markers and another fault, the error says where in the report without them.
        let bad = text.replace(r#""outcome": "pass""#, r#""outcome": "passed""#);
        let e = parse_run(Path::new("run.json"), &bad).expect_err("refused");
        assert!(
            e.to_string().contains("passed") && e.to_string().contains("cut markers removed"),
            "{e}"
        );
    }

    #[test]
    fn an_unknown_format_version_is_refused_naming_the_ones_read() {
        let e = parse_race(Path::new("race.json"), r#"{"format_version": 3}"#).unwrap_err();
        assert_eq!(
            e.to_string(),
            "race.json: format_version: this taskproof reads race reports of format 1 or 2, not 3"
        );
        let e = parse_run(Path::new("run.json"), r#"{"format_version": 7}"#).unwrap_err();
        assert_eq!(
            e.to_string(),
            "run.json: format_version: this taskproof reads run reports of format 1, 2 or 3, not 7"
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("target.json");
        std::fs::write(
            &path,
            r#"{"format_version": 2, "label": "x", "spec": "x", "profile": "strict"}"#,
        )
        .unwrap();
        let e = read_manifest(&path).unwrap_err();
        assert!(
            e.to_string().ends_with(
                "target.json: format_version: this taskproof reads target.json of format 1, not 2"
            ),
            "{e}"
        );
    }

    #[test]
    fn natural_order_compares_numbers_as_numbers() {
        let mut v = vec!["2.1.112", "2.1.17", "2.1.21", "2.1.20", "latest"];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(v, ["2.1.17", "2.1.20", "2.1.21", "2.1.112", "latest"]);
        assert!(natural_cmp("race-create.json", "race-claim.json").is_gt());
    }
}
