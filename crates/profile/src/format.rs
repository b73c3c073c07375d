//! The recorded profile file (docs/profiles.md, "The file"): what a recorded profile holds,
//! read with the field decoder every other input of taskproof uses ([`taskproof_core::field`]), so
//! that an error names the file and the field, and written with keys in a fixed order so
//! that two recordings of the same behaviour are the same text.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::observe;
use taskproof_core::field::{self, FieldError, Fields};
use taskproof_core::rule::Rule;

/// The profile file format this build writes and reads.
pub const FORMAT: u64 = 1;

/// Where a step's record is kept: its index in the file's `steps`, or `end`, the check
/// after the last step that nothing escaped the root.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum StepKey {
    Step(usize),
    End,
}

impl fmt::Display for StepKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StepKey::Step(i) => write!(f, "{i}"),
            StepKey::End => f.write_str("end"),
        }
    }
}

impl StepKey {
    fn parse(s: &str) -> Option<StepKey> {
        match s {
            "end" => Some(StepKey::End),
            _ if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
                s.parse().ok().map(StepKey::Step)
            }
            _ => None,
        }
    }

    /// `steps[3]`, or `the end of the scenario`.
    pub fn label(&self) -> String {
        match self {
            StepKey::Step(i) => format!("steps[{i}]"),
            StepKey::End => "the end of the scenario".into(),
        }
    }
}

/// How one run of a scenario ended, as far as a recording cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// Every step ran (differences are in the steps).
    Ran,
    /// Not run, or stopped at an unmet precondition: why.
    Skipped(String),
    /// The target broke the protocol: where and how.
    Error(String),
}

/// What a recorded profile says of one step.
#[derive(Debug, Clone, PartialEq)]
pub struct StepRecord {
    /// The step's rules when they are not the scenario's.
    pub rules: Option<Vec<Rule>>,
    /// What `strict` expects, as the scenario file writes it (for the reader).
    pub strict: Value,
    pub seen: Seen,
}

/// What was seen at a step over the recording's runs.
#[derive(Debug, Clone, PartialEq)]
pub enum Seen {
    /// The same every run (a concurrent block: how often it held, in `held`).
    Same(Value),
    /// Different between runs: every distinct observation (`null` for as strict).
    Racy(Vec<Value>),
    /// Different between runs, and decided by time: every run that waited `after` seconds
    /// (idle, sessions open) before the step saw `late`; the other answers (`soon`) were
    /// seen when the step came sooner (`record`'s time probe).
    Timed {
        soon: Vec<Value>,
        late: Value,
        after: f64,
    },
}

/// One scenario in a recorded profile.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioRecord {
    pub title: String,
    pub rules: Vec<Rule>,
    pub state: State,
    pub steps: BTreeMap<StepKey, StepRecord>,
}

impl ScenarioRecord {
    /// Whether every step behaved as `strict` expects.
    pub fn as_strict(&self) -> bool {
        self.state == State::Ran && self.steps.values().all(|s| s.seen.as_strict())
    }
}

impl Seen {
    /// Whether this is what `strict` expects: a concurrent block that always held.
    pub fn as_strict(&self) -> bool {
        match self {
            Seen::Same(v) => observe::is_concurrent(v) && v.get("held") == Some(&json!("always")),
            Seen::Racy(_) | Seen::Timed { .. } => false,
        }
    }

    /// How a message names one observation: `null` is what strict expects.
    pub fn words(v: &Value) -> String {
        if v.is_null() {
            "what strict expects".to_string()
        } else {
            v.to_string()
        }
    }

    /// Every answer this record allows at the step (`null`: as strict).
    pub fn answers(&self) -> Vec<Value> {
        match self {
            Seen::Same(v) => vec![v.clone()],
            Seen::Racy(vs) => vs.clone(),
            Seen::Timed { soon, late, .. } => {
                let mut all = soon.clone();
                all.push(late.clone());
                all
            }
        }
    }

    pub fn to_json(&self) -> (&'static str, Value) {
        match self {
            Seen::Same(v) => ("seen", v.clone()),
            Seen::Racy(vs) => ("racy", Value::Array(vs.clone())),
            Seen::Timed { soon, late, after } => (
                "timed",
                json!({"soon": soon, "late": late, "after_seconds": after}),
            ),
        }
    }
}

/// A recorded profile.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    pub name: String,
    /// Who recorded what, when: `target`, `hello`, `taskproof`, `date`, `runs`.
    pub recorded: Value,
    pub scenarios: BTreeMap<String, ScenarioRecord>,
    /// Where it was read from, for messages.
    pub file: String,
}

/// A profile file that cannot be used: the file, the field and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {field}: {message}")]
pub struct ProfileError {
    pub file: String,
    pub field: String,
    pub message: String,
}

impl Recorded {
    /// Reads a profile file.
    pub fn load(path: &Path) -> Result<Recorded, ProfileError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ProfileError {
            file: file.clone(),
            field: "(file)".into(),
            message: format!("cannot be read: {e}"),
        })?;
        Recorded::parse_text(&text, &file)
    }

    /// Parses a profile file's text; `file` names it in errors.
    pub fn parse_text(text: &str, file: &str) -> Result<Recorded, ProfileError> {
        let in_file = |e: FieldError| ProfileError {
            file: file.to_string(),
            field: e.field,
            message: e.message,
        };
        let v: Value = serde_json::from_str(text).map_err(|e| ProfileError {
            file: file.to_string(),
            field: format!("line {}", e.line()),
            message: format!("not JSON: {e}"),
        })?;
        let mut r = decode(&v).map_err(in_file)?;
        r.file = file.to_string();
        Ok(r)
    }

    /// The file's JSON: keys in a fixed order, scenarios by id, steps by index.
    pub fn to_json(&self) -> Value {
        let mut scenarios = Map::new();
        for (id, s) in &self.scenarios {
            let mut o = Map::new();
            o.insert("title".into(), json!(s.title));
            o.insert("rules".into(), json!(s.rules));
            match &s.state {
                State::Ran => {}
                State::Skipped(r) => {
                    o.insert("skipped".into(), json!(r));
                }
                State::Error(e) => {
                    o.insert("error".into(), json!(e));
                }
            }
            if !s.steps.is_empty() {
                let mut steps = Map::new();
                for (k, r) in &s.steps {
                    let mut so = Map::new();
                    if let Some(rules) = &r.rules {
                        so.insert("rules".into(), json!(rules));
                    }
                    so.insert("strict".into(), r.strict.clone());
                    let (key, v) = r.seen.to_json();
                    so.insert(key.into(), v);
                    steps.insert(k.to_string(), Value::Object(so));
                }
                o.insert("steps".into(), Value::Object(steps));
            }
            scenarios.insert(id.clone(), Value::Object(o));
        }
        json!({
            "profile": self.name,
            "format": FORMAT,
            "recorded": self.recorded,
            "scenarios": scenarios,
        })
    }

    /// The file's text.
    pub fn to_text(&self) -> String {
        let mut s = serde_json::to_string_pretty(&self.to_json()).expect("JSON values serialize");
        s.push('\n');
        s
    }

    /// The scenarios (with their differing steps) where this profile is not `strict`.
    pub fn differences_from_strict(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (id, s) in &self.scenarios {
            match &s.state {
                State::Ran => {}
                State::Skipped(r) => out.push(format!("{id}: skipped ({r})")),
                State::Error(e) => out.push(format!("{id}: error ({e})")),
            }
            for (k, r) in &s.steps {
                if !r.seen.as_strict() {
                    let (what, v) = r.seen.to_json();
                    out.push(format!("{id} {}: {what} {v}", k.label()));
                }
            }
        }
        out
    }
}

/// Decodes a parsed profile file.
fn decode(v: &Value) -> Result<Recorded, FieldError> {
    let top = Fields::only(v, "", &["profile", "format", "recorded", "scenarios"])?;
    let name = top.req_str("profile")?;
    match top.req("format")? {
        Value::Number(n) if n.as_u64() == Some(FORMAT) => {}
        other => {
            return Err(FieldError::new(
                "format",
                format!(
                    "expected {FORMAT}, got {other}; record the profile again with this taskproof"
                ),
            ));
        }
    }
    let recorded = top.req("recorded")?;
    Fields::new(recorded, "recorded")?;
    let all = Fields::new(top.req("scenarios")?, "scenarios")?;
    let mut scenarios = BTreeMap::new();
    for (id, sv) in all.map {
        let s = Fields::only(
            sv,
            &all.at(id),
            &["title", "rules", "skipped", "error", "steps"],
        )?;
        let state = match (s.opt_str("skipped")?, s.opt_str("error")?) {
            (None, None) => State::Ran,
            (Some(r), None) => State::Skipped(r),
            (None, Some(e)) => State::Error(e),
            (Some(_), Some(_)) => {
                return Err(FieldError::new(
                    s.path.clone(),
                    "has both skipped and error",
                ));
            }
        };
        let mut steps = BTreeMap::new();
        if let Some(stv) = s.get("steps") {
            let st = Fields::new(stv, &s.at("steps"))?;
            for (k, rv) in st.map {
                let key = StepKey::parse(k)
                    .ok_or_else(|| FieldError::new(st.at(k), "expected a step index or \"end\""))?;
                steps.insert(
                    key,
                    step(&Fields::only(
                        rv,
                        &st.at(k),
                        &["strict", "rules", "seen", "racy", "timed"],
                    )?)?,
                );
            }
        }
        let record = ScenarioRecord {
            title: s.req_str("title")?,
            rules: rules(s.req("rules")?, &s.at("rules"))?,
            state,
            steps,
        };
        scenarios.insert(id.clone(), record);
    }
    Ok(Recorded {
        name,
        recorded: recorded.clone(),
        scenarios,
        file: String::new(),
    })
}

/// One step's record.
fn step(r: &Fields<'_>) -> Result<StepRecord, FieldError> {
    let seen = match (r.get("seen"), r.get("racy"), r.get("timed")) {
        (Some(v), None, None) => {
            check_seen(v, &r.at("seen"))?;
            Seen::Same(v.clone())
        }
        (None, Some(Value::Array(vs)), None) if vs.len() >= 2 => Seen::Racy(vs.clone()),
        (None, Some(_), None) => {
            return Err(FieldError::new(
                r.at("racy"),
                "expected an array of at least two observations",
            ));
        }
        (None, None, Some(t)) => timed(&Fields::only(
            t,
            &r.at("timed"),
            &["soon", "late", "after_seconds"],
        )?)?,
        _ => {
            return Err(FieldError::new(
                r.path.clone(),
                "expected exactly one of seen, racy and timed",
            ));
        }
    };
    Ok(StepRecord {
        rules: r
            .get("rules")
            .map(|v| rules(v, &r.at("rules")))
            .transpose()?,
        strict: r.req("strict")?.clone(),
        seen,
    })
}

/// A time-dependent step: `{"soon": [..], "late": V, "after_seconds": N}`.
fn timed(t: &Fields<'_>) -> Result<Seen, FieldError> {
    let soon = match t.req("soon")? {
        Value::Array(vs) if !vs.is_empty() => vs.clone(),
        _ => {
            return Err(FieldError::new(
                t.at("soon"),
                "expected an array of at least one observation",
            ));
        }
    };
    let after = t
        .req("after_seconds")?
        .as_f64()
        .filter(|s| *s > 0.0 && *s <= 600.0)
        .ok_or_else(|| {
            FieldError::new(
                t.at("after_seconds"),
                "expected a number of seconds above 0, at most 600",
            )
        })?;
    Ok(Seen::Timed {
        soon,
        late: t.req("late")?.clone(),
        after,
    })
}

/// A list of rules (`S1` … `S20`), each checked.
fn rules(v: &Value, at: &str) -> Result<Vec<Rule>, FieldError> {
    field::str_array(v, at)?
        .iter()
        .enumerate()
        .map(|(i, n)| {
            n.parse::<Rule>()
                .map_err(|e| FieldError::new(field::index_path(at, i), e.to_string()))
        })
        .collect()
}

/// An observation must be one of the shapes [`observe`] writes.
fn check_seen(v: &Value, at: &str) -> Result<(), FieldError> {
    let m = Fields::new(v, at)?.map;
    let shape_ok = if m.contains_key("error") {
        m.get("error").is_some_and(Value::is_string)
    } else if m.contains_key("ok") {
        m.get("ok") == Some(&Value::Bool(true))
    } else if m.contains_key("verify") {
        matches!(
            m.get("held").and_then(Value::as_str),
            Some("always" | "never" | "sometimes")
        )
    } else {
        m.contains_key("broken") || m.get("held") == Some(&Value::Bool(false))
    };
    if shape_ok {
        Ok(())
    } else {
        Err(FieldError::new(
            at,
            "expected {\"error\": KIND}, {\"ok\": true, ...}, {\"broken\": {...}}, {\"verify\": V, \"held\": \"always\"|\"never\"|\"sometimes\", ...} or {\"held\": false, \"seen\": ...}",
        ))
    }
}

/// The profile's file name under `profiles/`.
pub fn default_path(name: &str) -> PathBuf {
    PathBuf::from("profiles").join(format!("{name}.json"))
}

/// Today's date (UTC), `YYYY-MM-DD`.
pub fn today() -> String {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    taskproof_store::audit::format_time(ms)[..10].to_string()
}
