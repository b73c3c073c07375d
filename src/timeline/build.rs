//! Building a timeline: for each row, the version ranges over which its answer held, found
//! by judging a few versions and bisecting between any two that differ, with every
//! judgement cached in a JSON file.
//!
//! What it assumes: between two judged versions that agree, nothing changed. A behaviour
//! that changes and changes back between two such versions (a flip-flop) is missed. To
//! catch one, every row is judged at both ends, at every version already known (the
//! checked-in reports and profiles, and the cache), and at `samples` versions spread
//! evenly over the range; a flip-flop is found when it spans one of them. Between two
//! judged versions that differ, [`crate::bisect::bisect`] finds the last change toward the
//! later one's answer; when the version before it still differs from the earlier end, the
//! part before is bisected again, so every change between judged versions is named.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::rows::Row;
use crate::bisect::{self, Found, Judged, Seen};
use crate::claims::Status;

/// One judged (version, probe).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Point {
    pub judged: Judged,
    /// Where it comes from: `run 2026-11-26` or the checked-in file it was read from.
    pub source: String,
}

/// The judgements of every (probe, version), kept in a JSON file so that a rerun runs
/// nothing already judged and the page can be rebuilt from the file alone.
#[derive(Debug, Clone, Default)]
pub struct Cache {
    pub path: Option<PathBuf>,
    /// probe key -> version -> point.
    pub points: BTreeMap<String, BTreeMap<String, Point>>,
}

fn seen_json(s: &Seen) -> Value {
    json!({"key": s.key, "summary": s.summary, "witness": s.witness})
}

fn seen_of(v: &Value, at: &str) -> Result<Seen, String> {
    let field = |k: &str| {
        v.get(k)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| format!("{at}.{k}: expected a string"))
    };
    Ok(Seen {
        key: field("key")?,
        summary: field("summary")?,
        witness: field("witness")?,
        failed_steps: Vec::new(),
        answers: BTreeMap::new(),
    })
}

impl Cache {
    /// Reads the cache file; a missing file is an empty cache.
    pub fn load(path: &Path) -> Result<Cache, String> {
        let mut cache = Cache {
            path: Some(path.to_path_buf()),
            points: BTreeMap::new(),
        };
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(cache),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        let p = path.display();
        let v: Value = serde_json::from_str(&text).map_err(|e| format!("{p}: not JSON: {e}"))?;
        if v.get("format").and_then(Value::as_u64) != Some(1) {
            return Err(format!("{p}: format: expected 1"));
        }
        let Some(Value::Object(probes)) = v.get("points") else {
            return Err(format!("{p}: points: expected an object"));
        };
        for (probe, versions) in probes {
            let Value::Object(versions) = versions else {
                return Err(format!("{p}: points.{probe}: expected an object"));
            };
            for (version, point) in versions {
                let at = format!("{p}: points.{probe}.{version}");
                let source = point
                    .get("source")
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("{at}.source: expected a string"))?
                    .to_string();
                let judged = if let Some(why) = point.get("unusable") {
                    Judged::Unusable(
                        why.as_str()
                            .ok_or_else(|| format!("{at}.unusable: expected a string"))?
                            .to_string(),
                    )
                } else if let Some(Value::Array(all)) = point.get("flaky") {
                    Judged::Flaky(
                        all.iter()
                            .map(|s| seen_of(s, &format!("{at}.flaky")))
                            .collect::<Result<_, _>>()?,
                    )
                } else {
                    Judged::Seen(seen_of(point, &at)?)
                };
                cache
                    .points
                    .entry(probe.clone())
                    .or_default()
                    .insert(version.clone(), Point { judged, source });
            }
        }
        Ok(cache)
    }

    /// The file's JSON.
    pub fn to_json(&self) -> Value {
        let mut probes = serde_json::Map::new();
        for (probe, versions) in &self.points {
            let mut m = serde_json::Map::new();
            for (version, p) in versions {
                let mut v = match &p.judged {
                    Judged::Seen(s) => seen_json(s),
                    Judged::Flaky(all) => {
                        json!({"flaky": all.iter().map(seen_json).collect::<Vec<_>>()})
                    }
                    Judged::Unusable(why) => json!({"unusable": why}),
                };
                v["source"] = json!(p.source);
                m.insert(version.clone(), v);
            }
            probes.insert(probe.clone(), Value::Object(m));
        }
        json!({"format": 1, "points": probes})
    }

    /// Writes the file (through a temporary file and a rename), when it has a path.
    pub fn save(&self) -> Result<(), String> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let mut text = serde_json::to_string_pretty(&self.to_json()).expect("JSON serializes");
        text.push('\n');
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, text)
            .and_then(|()| std::fs::rename(&tmp, path))
            .map_err(|e| format!("write {}: {e}", path.display()))
    }

    pub fn get(&self, probe: &str, version: &str) -> Option<&Point> {
        self.points.get(probe).and_then(|m| m.get(version))
    }

    /// Adds a point unless one is there (a run's answer wins over nothing, never over an
    /// earlier point).
    pub fn add(&mut self, probe: &str, version: &str, point: Point) {
        self.points
            .entry(probe.to_string())
            .or_default()
            .entry(version.to_string())
            .or_insert(point);
    }
}

/// A span of versions over which a row's answer held: from `from` to `to` (indices into
/// the range), as far as the judged versions tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    pub from: usize,
    pub to: usize,
    pub seen: Seen,
    /// The versions judged inside it.
    pub judged: usize,
}

/// A change between two judged versions; the versions between them (left out: not
/// installable, not startable, flaky) could not be judged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Changed {
    pub before: usize,
    pub after: usize,
}

/// One row, built.
#[derive(Debug, Clone)]
pub struct RowTimeline {
    pub row: Row,
    /// Every judged version of the range, by index.
    pub points: BTreeMap<usize, Point>,
    pub spans: Vec<Span>,
    pub changes: Vec<Changed>,
    /// Versions this build ran (not found in the cache).
    pub runs: usize,
    /// When the row could not be built whole, why.
    pub problems: Vec<String>,
}

/// A whole timeline.
#[derive(Debug, Clone)]
pub struct Timeline {
    pub range: String,
    pub versions: Vec<String>,
    pub rows: Vec<RowTimeline>,
    pub samples: usize,
    /// What the register of claims (repro/claims.toml) says of the change points and rows.
    pub vouches: Vec<Vouch>,
}

/// A claim of the register that stands behind a change point (its anchor,
/// `torn-writes-2-1-113`) or a row (its id): whether a reproduction that shares no code with
/// taskproof confirmed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vouch {
    pub anchor: String,
    pub claim: String,
    pub status: Status,
    pub why: Option<String>,
}

impl Timeline {
    /// The register's word on `anchor`, in words, when it has one.
    pub fn vouch_text(&self, anchor: &str) -> Option<String> {
        let words: Vec<String> = self
            .vouches
            .iter()
            .filter(|v| v.anchor == anchor)
            .map(|v| match (v.status, &v.why) {
                (Status::Confirmed, _) => format!(
                    "confirmed by a reproduction that shares no code with taskproof (repro/claims.toml, `{}`)",
                    v.claim
                ),
                (status, why) => format!(
                    "**{}** by its reproduction (repro/claims.toml, `{}`): {}",
                    status.as_str(),
                    v.claim,
                    why.as_deref().unwrap_or("").trim_end_matches('.')
                ),
            })
            .collect();
        (!words.is_empty()).then(|| words.join("; "))
    }

    /// The register's claims whose anchor names nothing this timeline shows, so that its
    /// word on them appears nowhere: neither a row id of `rows` (every row there is) nor a
    /// change point of a built row. A change point of a row left out of this build (`--row`)
    /// is not counted: nothing can be said of it here.
    pub fn unmatched(&self, rows: &[Row]) -> Vec<&Vouch> {
        self.vouches
            .iter()
            .filter(|v| {
                if rows.iter().any(|r| r.id == v.anchor) {
                    return false;
                }
                let Some(row) = row_of(&v.anchor, rows) else {
                    return true;
                };
                match self.rows.iter().find(|r| r.row.id == row.id) {
                    None => false,
                    Some(built) => !built
                        .changes
                        .iter()
                        .any(|c| anchor(row.id, &self.versions[c.after]) == v.anchor),
                }
            })
            .collect()
    }

    /// Whether the register holds a claim on `anchor` that is not confirmed.
    pub fn doubted(&self, anchor: &str) -> bool {
        self.vouches
            .iter()
            .any(|v| v.anchor == anchor && v.status != Status::Confirmed)
    }
}

/// The anchor of a row's change point at `version` (the later version of the change):
/// `torn-writes-2-1-113`. A row's own anchor is its id.
pub fn anchor(row: &str, version: &str) -> String {
    format!("{row}-{}", version.replace('.', "-"))
}

/// The row a change point's anchor belongs to, among `rows`: the one whose id it starts
/// with, followed by `-` and a version's digits.
fn row_of<'a>(anchor: &str, rows: &'a [Row]) -> Option<&'a Row> {
    rows.iter().find(|r| {
        anchor
            .strip_prefix(r.id)
            .and_then(|rest| rest.strip_prefix('-'))
            .is_some_and(|v| {
                v.starts_with(|c: char| c.is_ascii_digit())
                    && v.chars().all(|c| c.is_ascii_digit() || c == '-')
            })
    })
}

/// The evenly spread sample indices of a range of `n` versions (without the ends).
pub fn sample_indices(n: usize, samples: usize) -> Vec<usize> {
    (1..=samples)
        .map(|k| k * (n - 1) / (samples + 1))
        .filter(|&i| i > 0 && i < n - 1)
        .collect()
}

/// Builds one row over `versions`. `run(version)` judges the row's probe at a version not
/// in the cache, or answers `None` when it may not run anything (`--no-run`: the version
/// is then left unjudged); every answer goes into the cache (saved after each run).
pub fn build_row(
    row: &Row,
    versions: &[String],
    samples: usize,
    cache: &mut Cache,
    run: &mut dyn FnMut(&str) -> Option<Judged>,
    progress: &mut dyn FnMut(&str),
) -> RowTimeline {
    let n = versions.len();
    let key = row.key();
    let mut out = RowTimeline {
        row: row.clone(),
        points: BTreeMap::new(),
        spans: Vec::new(),
        changes: Vec::new(),
        runs: 0,
        problems: Vec::new(),
    };
    if n < 2 {
        return out;
    }
    let today = taskproof_profile::format::today();
    let mut runs = 0usize;
    let mut judge = |i: usize, cache: &mut Cache| -> Judged {
        if let Some(p) = cache.get(&key, &versions[i]) {
            return p.judged.clone();
        }
        let Some(judged) = run(&versions[i]) else {
            return Judged::Unusable("not run".into());
        };
        runs += 1;
        progress(&format!(
            "  {} {:<10} {}",
            row.id,
            versions[i],
            judged.line()
        ));
        cache.add(
            &key,
            &versions[i],
            Point {
                judged: judged.clone(),
                source: format!("run {today}"),
            },
        );
        if let Err(e) = cache.save() {
            progress(&format!("  warning: {e}"));
        }
        judged
    };
    let mut first: Vec<usize> = vec![0, n - 1];
    first.extend(sample_indices(n, samples));
    for (i, v) in versions.iter().enumerate() {
        if cache.get(&key, v).is_some() {
            first.push(i);
        }
    }
    first.sort_unstable();
    first.dedup();
    let mut seen: BTreeMap<usize, String> = BTreeMap::new();
    for &i in &first {
        if let Judged::Seen(s) = judge(i, cache) {
            seen.insert(i, s.key);
        }
    }
    // Bisect between neighbours that differ; a change found leaves [a, before] to check.
    let mut todo: Vec<(usize, usize)> = {
        let idx: Vec<usize> = seen.keys().copied().collect();
        idx.windows(2).map(|w| (w[0], w[1])).collect()
    };
    while let Some((a, b)) = todo.pop() {
        if seen[&a] == seen[&b] || b - a < 2 {
            continue;
        }
        let sub = &versions[a..=b];
        let mut sub_judge = |v: &str| {
            let i = a + sub
                .iter()
                .position(|x| x == v)
                .expect("a version of the range");
            judge(i, cache)
        };
        let found = bisect::bisect(sub, &mut sub_judge, &mut |_| {});
        for t in &found.trials {
            if let Judged::Seen(s) = &t.judged {
                seen.insert(a + t.index, s.key.clone());
            }
        }
        match found.found {
            Found::Change { before, .. } if a + before > a => todo.push((a, a + before)),
            Found::Change { .. } => {}
            Found::NoChange => {}
            Found::Inconclusive(why) => out.problems.push(why),
        }
    }
    out.runs = runs;
    for (i, v) in versions.iter().enumerate() {
        if let Some(p) = cache.get(&key, v) {
            out.points.insert(i, p.clone());
        }
    }
    // Spans of equal answers among the usable points, and the changes between them.
    let usable: Vec<(usize, &Seen)> = out
        .points
        .iter()
        .filter_map(|(i, p)| p.judged.seen().map(|s| (*i, s)))
        .collect();
    for (k, (i, s)) in usable.iter().enumerate() {
        match out.spans.last_mut() {
            Some(last) if last.seen.key == s.key => {
                last.to = *i;
                last.judged += 1;
            }
            _ => {
                if k > 0 {
                    out.changes.push(Changed {
                        before: usable[k - 1].0,
                        after: *i,
                    });
                }
                out.spans.push(Span {
                    from: *i,
                    to: *i,
                    seen: (*s).clone(),
                    judged: 1,
                });
            }
        }
    }
    out
}
