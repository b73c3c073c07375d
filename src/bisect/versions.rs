//! Published versions and version ranges: `KIND@A..B`, the list of versions a registry says
//! were published, and the versions of a range in order.
//!
//! A range names a target *family*, the part before the last `@`: `claude-code` (versions
//! from npm, [`npm_versions`]) or any target spec with `{version}` in it
//! (`cmd:sh adapter.sh {version}`), whose versions come from a file (`--versions FILE`).
//! Another kind with published versions plugs in as one more [`Family`] variant: it says how
//! to list its versions and which [`TargetSpec`] runs one of them.

use std::cmp::Ordering;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};

use taskproof_claude_code::cache_dir;
use taskproof_claude_code::{ClaudeCode, Config};
use taskproof_targets::TargetSpec;

/// The version `latest` stands for: the registry's `latest` dist-tag.
pub const LATEST: &str = "latest";

/// How long npm's answer is reused from the cache before it is asked again.
pub const NPM_FRESH_SECS: u64 = 3600;

/// `KIND@A..B`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Range {
    pub family: Family,
    pub from: String,
    /// A version, or `latest`.
    pub to: String,
}

/// What kind of target a range ranges over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Family {
    /// `@anthropic-ai/claude-code` on npm, every version run in one configuration (teams
    /// off unless the range names another: `claude-code@A..B:teams-env`).
    ClaudeCode(Config),
    /// A target spec with `{version}` in it, replaced by each version.
    Template(String),
}

impl Family {
    /// The target that runs `version`.
    pub fn target(&self, version: &str) -> Result<TargetSpec, String> {
        match self {
            Family::ClaudeCode(config) => {
                Ok(ClaudeCode::parse(version)?.with_config(*config).into())
            }
            Family::Template(t) => t.replace("{version}", version).parse(),
        }
    }

    /// The family's name as written before `@`.
    pub fn name(&self) -> &str {
        match self {
            Family::ClaudeCode(_) => "claude-code",
            Family::Template(t) => t,
        }
    }
}

impl std::fmt::Display for Range {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}@{}..{}", self.family.name(), self.from, self.to)?;
        match self.family {
            Family::ClaudeCode(config) if config != Config::TeamsOff => write!(f, ":{config}"),
            _ => Ok(()),
        }
    }
}

impl std::str::FromStr for Range {
    type Err = String;
    fn from_str(s: &str) -> Result<Range, String> {
        let expected = "expected KIND@A..B, e.g. claude-code@2.1.17..2.1.112, claude-code@2.1.17..latest or claude-code@2.1.207..2.1.332:teams-env";
        let (kind, range) = s
            .rsplit_once('@')
            .ok_or_else(|| format!("{s:?}: no @; {expected}"))?;
        let (from, to) = range
            .split_once("..")
            .ok_or_else(|| format!("{s:?}: no .. after @; {expected}"))?;
        let (from, to) = (from.trim(), to.trim());
        // A Claude Code range may end in the configuration every version runs in.
        let (to, config) = match to.split_once(':') {
            Some((to, config)) if kind == "claude-code" => (
                to,
                Config::parse(config).map_err(|e| format!("{s:?}: {e}"))?,
            ),
            _ => (to, Config::TeamsOff),
        };
        if from.is_empty() || to.is_empty() {
            return Err(format!("{s:?}: the range needs both ends; {expected}"));
        }
        if from == LATEST {
            return Err(format!(
                "{s:?}: `latest` can only end a range (it is the newest version)"
            ));
        }
        for v in [from, to] {
            if v != LATEST && !taskproof_session::npm::is_version(v) {
                return Err(format!("{s:?}: {v:?} is not a version number"));
            }
        }
        if from == to {
            return Err(format!(
                "{s:?}: the range is empty (both ends are {from}); bisect needs two versions"
            ));
        }
        let family = if kind == "claude-code" {
            Family::ClaudeCode(config)
        } else if kind.contains("{version}") {
            // Checked now, so that a bad template is an error before anything runs.
            kind.replace("{version}", from)
                .parse::<TargetSpec>()
                .map_err(|e| format!("{s:?}: {e}"))?;
            Family::Template(kind.to_string())
        } else {
            return Err(format!(
                "{s:?}: {kind:?} has no published versions taskproof knows; ranges are over \
                 claude-code, or over a target spec with {{version}} in it given --versions FILE"
            ));
        };
        Ok(Range {
            family,
            from: from.to_string(),
            to: to.to_string(),
        })
    }
}

/// The order versions are taken in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Order {
    /// By version number (semver precedence).
    Version,
    /// By the registry's publication time.
    Published,
}

/// One published version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Release {
    pub version: String,
    /// When the registry says it was published (RFC 3339), when it says.
    pub published: Option<String>,
}

/// What a registry says was published.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Published {
    /// Every version that can be installed, in no particular order.
    pub releases: Vec<Release>,
    /// The `latest` dist-tag, when known.
    pub latest: Option<String>,
    /// Versions with a publication time that can no longer be installed (unpublished).
    pub unpublished: Vec<String>,
    /// Where the list came from, for messages.
    pub source: String,
}

impl Published {
    /// Reads the answer of `npm view PKG time versions dist-tags --json`, of `npm view PKG
    /// time --json` (an object version -> time, with `created` and `modified`), or a JSON
    /// array of version strings (for kinds with no registry, and for tests).
    pub fn parse(text: &str, source: &str) -> Result<Published, String> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| format!("{source}: not JSON: {e}"))?;
        let mut out = Published {
            source: source.to_string(),
            ..Published::default()
        };
        let str_list = |v: &Value, what: &str| -> Result<Vec<String>, String> {
            match v {
                Value::Array(a) => a
                    .iter()
                    .map(|x| {
                        x.as_str()
                            .map(str::to_string)
                            .ok_or_else(|| format!("{source}: {what}: expected strings, got {x}"))
                    })
                    .collect(),
                // npm prints a lone version as a string.
                Value::String(s) => Ok(vec![s.clone()]),
                other => Err(format!("{source}: {what}: expected an array, got {other}")),
            }
        };
        let times = |m: &Map<String, Value>| -> Result<Vec<Release>, String> {
            m.iter()
                .filter(|(k, _)| !matches!(k.as_str(), "created" | "modified" | "unpublished"))
                .map(|(k, v)| {
                    v.as_str()
                        .map(|t| Release {
                            version: k.clone(),
                            published: Some(t.to_string()),
                        })
                        .ok_or_else(|| format!("{source}: time.{k}: expected a string, got {v}"))
                })
                .collect()
        };
        match &value {
            Value::Array(_) => {
                out.releases = str_list(&value, "versions")?
                    .into_iter()
                    .map(|version| Release {
                        version,
                        published: None,
                    })
                    .collect();
            }
            Value::Object(m) if m.contains_key("time") || m.contains_key("versions") => {
                for k in m.keys() {
                    if !matches!(k.as_str(), "time" | "versions" | "dist-tags") {
                        return Err(format!(
                            "{source}: unknown field {k:?}; expected time, versions, dist-tags"
                        ));
                    }
                }
                let timed = match m.get("time") {
                    Some(Value::Object(t)) => times(t)?,
                    Some(other) => {
                        return Err(format!("{source}: time: expected an object, got {other}"));
                    }
                    None => Vec::new(),
                };
                let listed = match m.get("versions") {
                    Some(v) => Some(str_list(v, "versions")?),
                    None => None,
                };
                match listed {
                    Some(listed) => {
                        for r in &timed {
                            if !listed.contains(&r.version) {
                                out.unpublished.push(r.version.clone());
                            }
                        }
                        out.releases = listed
                            .into_iter()
                            .map(|version| Release {
                                published: timed
                                    .iter()
                                    .find(|r| r.version == version)
                                    .and_then(|r| r.published.clone()),
                                version,
                            })
                            .collect();
                    }
                    None => out.releases = timed,
                }
                if let Some(tags) = m.get("dist-tags") {
                    out.latest = tags.get(LATEST).and_then(Value::as_str).map(str::to_string);
                }
            }
            Value::Object(m) => out.releases = times(m)?,
            other => {
                return Err(format!(
                    "{source}: expected npm view's JSON (an object) or an array of versions, got {other}"
                ));
            }
        }
        out.unpublished.sort_by(|a, b| by_version(a, b));
        Ok(out)
    }

    /// The versions from `range.from` to `range.to` (both included) in `order`, checked: both
    /// ends published, `to` after `from`. The error says what is wrong and names the nearest
    /// published versions.
    pub fn range(&self, range: &Range, order: Order) -> Result<Vec<Release>, String> {
        let to = if range.to == LATEST {
            self.latest.clone().ok_or_else(|| {
                format!(
                    "{range}: {} names no `latest` version; give the last version",
                    self.source
                )
            })?
        } else {
            range.to.clone()
        };
        let mut all = self.releases.clone();
        match order {
            Order::Version => all.sort_by(|a, b| by_version(&a.version, &b.version)),
            Order::Published => {
                if let Some(r) = all.iter().find(|r| r.published.is_none()) {
                    return Err(format!(
                        "{range}: {} gives no publication time for {}; use --order version",
                        self.source, r.version
                    ));
                }
                all.sort_by(|a, b| {
                    a.published
                        .cmp(&b.published)
                        .then_with(|| by_version(&a.version, &b.version))
                })
            }
        }
        let find = |v: &str| -> Result<usize, String> {
            all.iter().position(|r| r.version == v).ok_or_else(|| {
                let gone = if self.unpublished.iter().any(|u| u == v) {
                    " (it was published and has been unpublished)"
                } else {
                    ""
                };
                format!(
                    "{range}: {v} is not a published version{gone}; {}",
                    self.nearest(v)
                )
            })
        };
        let (a, b) = (find(&range.from)?, find(&to)?);
        if a == b {
            return Err(format!(
                "{range}: the range is empty ({to} is {})",
                range.from
            ));
        }
        if a > b {
            let how = match order {
                Order::Version => "by version number".to_string(),
                Order::Published => format!(
                    "by publication time ({} published {}, {} published {})",
                    range.from,
                    all[a].published.as_deref().unwrap_or("?"),
                    to,
                    all[b].published.as_deref().unwrap_or("?")
                ),
            };
            return Err(format!(
                "{range}: the range is reversed: {to} comes before {} {how}",
                range.from
            ));
        }
        Ok(all[a..=b].to_vec())
    }

    /// `the published versions nearest to V are X and Y`.
    fn nearest(&self, v: &str) -> String {
        let mut all: Vec<&str> = self.releases.iter().map(|r| r.version.as_str()).collect();
        all.sort_by(|a, b| by_version(a, b));
        let after = all
            .iter()
            .position(|x| by_version(x, v) == Ordering::Greater);
        let before = match after {
            Some(0) => None,
            Some(i) => Some(all[i - 1]),
            None => all.last().copied(),
        };
        let after = after.map(|i| all[i]);
        match (before, after) {
            (Some(b), Some(a)) => format!("the published versions nearest to it are {b} and {a}"),
            (Some(b), None) => format!("the newest published version is {b}"),
            (None, Some(a)) => format!("the oldest published version is {a}"),
            (None, None) => format!("{} lists no version", self.source),
        }
    }
}

/// Semver precedence; text that is not semver sorts after, by text.
pub fn by_version(a: &str, b: &str) -> Ordering {
    match (semver::Version::parse(a), semver::Version::parse(b)) {
        (Ok(x), Ok(y)) => x.cmp(&y),
        (Ok(_), Err(_)) => Ordering::Less,
        (Err(_), Ok(_)) => Ordering::Greater,
        (Err(_), Err(_)) => a.cmp(b),
    }
}

/// The published versions of a range's family: from `file` when given, else from the
/// family's registry (npm for `claude-code`).
pub fn published(range: &Range, file: Option<&Path>) -> Result<Published, String> {
    if let Some(f) = file {
        let text =
            std::fs::read_to_string(f).map_err(|e| format!("--versions {}: {e}", f.display()))?;
        return Published::parse(&text, &f.display().to_string());
    }
    match &range.family {
        Family::ClaudeCode(_) => npm_versions(range),
        Family::Template(t) => Err(format!(
            "{t}: a template target has no registry; give its versions with --versions FILE"
        )),
    }
}

/// The cache file of npm's answer about `@anthropic-ai/claude-code`.
pub fn npm_cache_file() -> Result<PathBuf, String> {
    cache_dir()
        .map(|d| d.join("npm-view.json"))
        .map_err(|e| e.to_string())
}

/// `npm view @anthropic-ai/claude-code time versions dist-tags --json`, reused from the cache
/// (`CACHE/npm-view.json`) when it is younger than [`NPM_FRESH_SECS`] and names both ends of
/// `range` (`latest` counts as named only while fresh); asked again otherwise.
pub fn npm_versions(range: &Range) -> Result<Published, String> {
    let file = npm_cache_file()?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let source = format!(
        "npm view {} (cached in {})",
        taskproof_claude_code::PACKAGE,
        file.display()
    );
    if let Ok(text) = std::fs::read_to_string(&file)
        && let Ok(Value::Object(m)) = serde_json::from_str::<Value>(&text)
        && let (Some(at), Some(answer)) =
            (m.get("fetched").and_then(Value::as_u64), m.get("answer"))
        && now.saturating_sub(at) < NPM_FRESH_SECS
        && let Ok(p) = Published::parse(&answer.to_string(), &source)
    {
        let has = |v: &str| v == LATEST || p.releases.iter().any(|r| r.version == v);
        if has(&range.from) && has(&range.to) {
            return Ok(p);
        }
    }
    let out = Command::new("npm")
        .args([
            "view",
            taskproof_claude_code::PACKAGE,
            "time",
            "versions",
            "dist-tags",
            "--json",
        ])
        .env("NO_UPDATE_NOTIFIER", "1")
        .env("npm_config_update_notifier", "false")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("run npm view ({e}); node and npm must be on PATH"))?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    if !out.status.success() {
        return Err(format!(
            "npm view {} exited {}: {}",
            taskproof_claude_code::PACKAGE,
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let p = Published::parse(&text, &source)?;
    let answer: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    if let Some(dir) = file.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let cached = serde_json::json!({"fetched": now, "answer": answer});
    // A cache that cannot be written is asked again next time; nothing else depends on it.
    let tmp = file.with_extension(format!("json.{}", std::process::id()));
    if std::fs::write(&tmp, cached.to_string()).is_ok() {
        let _ = std::fs::rename(&tmp, &file);
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_and_refuse_what_cannot_be_a_range() {
        let r: Range = "claude-code@2.1.17..latest".parse().unwrap();
        assert_eq!(r.family, Family::ClaudeCode(Config::TeamsOff));
        assert_eq!((r.from.as_str(), r.to.as_str()), ("2.1.17", "latest"));
        let teams: Range = "claude-code@2.1.207..2.1.332:teams-env".parse().unwrap();
        assert_eq!(teams.family, Family::ClaudeCode(Config::TeamsEnv));
        assert_eq!(teams.to, "2.1.332");
        assert_eq!(teams.to_string(), "claude-code@2.1.207..2.1.332:teams-env");
        assert_eq!(
            teams.family.target("2.1.276").unwrap().to_string(),
            "claude-code@2.1.276:teams-env"
        );
        let e = "claude-code@2.1.207..2.1.332:teams"
            .parse::<Range>()
            .unwrap_err();
        assert!(e.contains("unknown Claude Code configuration"), "{e}");
        let t: Range = "cmd:sh a.sh {version}@1.0.0..1.0.9".parse().unwrap();
        assert_eq!(t.family, Family::Template("cmd:sh a.sh {version}".into()));
        assert_eq!(
            t.family.target("1.0.3").unwrap(),
            TargetSpec::cmd("sh a.sh 1.0.3")
        );
        for bad in [
            "claude-code@2.1.17",
            "claude-code@2.1.17..",
            "claude-code@..2.1.17",
            "claude-code@2.1.17..2.1.17",
            "claude-code@latest..2.1.17",
            "claude-code@v2.1.17..2.1.20",
            "naive@1.0.0..2.0.0",
            "2.1.17..2.1.20",
        ] {
            assert!(bad.parse::<Range>().is_err(), "{bad}");
        }
    }

    #[test]
    fn npm_answers_parse_and_unpublished_versions_are_named() {
        let text = r#"{"time": {"created": "2020-01-01T00:00:00Z", "1.0.0": "2020-01-02T00:00:00Z",
            "1.0.1": "2020-01-03T00:00:00Z", "1.0.2": "2020-01-04T00:00:00Z", "1.0.10": "2020-01-05T00:00:00Z"},
            "versions": ["1.0.0", "1.0.2", "1.0.10"], "dist-tags": {"latest": "1.0.10"}}"#;
        let p = Published::parse(text, "t").unwrap();
        assert_eq!(p.unpublished, vec!["1.0.1"]);
        assert_eq!(p.latest.as_deref(), Some("1.0.10"));
        let r: Range = "claude-code@1.0.0..latest".parse().unwrap();
        let got: Vec<String> = p
            .range(&r, Order::Version)
            .unwrap()
            .into_iter()
            .map(|r| r.version)
            .collect();
        // 1.0.10 after 1.0.2: numbers, not text.
        assert_eq!(got, ["1.0.0", "1.0.2", "1.0.10"]);
        let gone: Range = "claude-code@1.0.1..1.0.10".parse().unwrap();
        let e = p.range(&gone, Order::Version).unwrap_err();
        assert!(e.contains("unpublished"), "{e}");
        let missing: Range = "claude-code@1.0.0..1.0.5".parse().unwrap();
        let e = p.range(&missing, Order::Version).unwrap_err();
        assert!(e.contains("nearest to it are 1.0.2 and 1.0.10"), "{e}");
        let reversed: Range = "claude-code@1.0.10..1.0.0".parse().unwrap();
        assert!(
            p.range(&reversed, Order::Version)
                .unwrap_err()
                .contains("reversed")
        );
    }

    #[test]
    fn publication_order_follows_the_times() {
        let text = r#"{"1.0.0": "2020-01-05T00:00:00Z", "1.0.1": "2020-01-02T00:00:00Z", "1.0.2": "2020-01-09T00:00:00Z"}"#;
        let p = Published::parse(text, "t").unwrap();
        let r: Range = "claude-code@1.0.1..1.0.2".parse().unwrap();
        let got: Vec<String> = p
            .range(&r, Order::Published)
            .unwrap()
            .into_iter()
            .map(|r| r.version)
            .collect();
        assert_eq!(got, ["1.0.1", "1.0.0", "1.0.2"]);
        let by_number: Range = "claude-code@1.0.0..1.0.1".parse().unwrap();
        assert!(p.range(&by_number, Order::Published).is_err());
    }
}
