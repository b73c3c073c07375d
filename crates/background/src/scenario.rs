//! The background scenario format: a JSON file of steps against one session of a
//! background-task target (docs/background.md, "Scenarios"). The built-in suite is
//! `background/scenarios/*.json`, compiled in. The loader is strict: an unknown field, a
//! missing one or a wrong type is an error naming the file, the line and the field, and a
//! step naming a task no earlier step started is refused before anything runs.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use taskproof_core::rule::Rule;

/// One scenario file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BgScenario {
    pub id: String,
    pub title: String,
    /// The rules it checks, `B1` … `B8`.
    #[serde(deserialize_with = "rules")]
    pub rules: Vec<Rule>,
    /// Where the behaviour is described: the seed, the public reports.
    pub source: String,
    /// The output cap the session is opened with (targets whose cap differs skip it).
    #[serde(default)]
    pub output_cap: Option<u64>,
    /// Seconds the final wait for notifications may take [default 10].
    #[serde(default)]
    pub final_wait: Option<f64>,
    pub steps: Vec<Step>,
    #[serde(skip)]
    pub file: PathBuf,
}

fn rules<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Rule>, D::Error> {
    let words = Vec::<String>::deserialize(d)?;
    words
        .iter()
        .map(|w| {
            let r: Rule = w.parse().map_err(serde::de::Error::custom)?;
            if Rule::BACKGROUND.contains(&r) {
                Ok(r)
            } else {
                Err(serde::de::Error::custom(format!(
                    "{w} is a store rule; a background scenario cites B1 to B8"
                )))
            }
        })
        .collect()
}

/// One step.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Step {
    /// Starts one task, or `count` tasks named `NAME#0` … .
    Spawn(Spawn),
    /// Starts a task spawned with `hold`.
    Start(String),
    /// Kills a task.
    Kill(Kill),
    /// Waits this many seconds.
    Pause(f64),
    /// Reads a task's output from what was consumed so far.
    Read(Read),
    /// Collects the notifications, waiting up to this many seconds while a task has none.
    Wait(f64),
    /// Checks that no process of any task's group is alive, after this many seconds' grace.
    Orphans(f64),
    /// The kill/complete race: `count` tasks each sleeping `sleep` seconds, task i killed at
    /// `sleep + (i - count/2) × step` seconds after it started.
    Race(Race),
    /// Ends the session: `exit` as its user would, or `sigkill`.
    End(EndHow),
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spawn {
    #[serde(rename = "as")]
    pub name: String,
    #[serde(default)]
    pub count: Option<usize>,
    /// Text the task prints first.
    #[serde(default)]
    pub print: Option<String>,
    /// Text the task prints to stderr (the same output file).
    #[serde(default)]
    pub print_stderr: Option<String>,
    /// Seconds it then sleeps.
    #[serde(default)]
    pub sleep: Option<f64>,
    /// Its exit code [default 0].
    #[serde(default)]
    pub exit: Option<i32>,
    /// It also starts a child that outlives its shell unless its group is killed.
    #[serde(default)]
    pub tree: bool,
    /// It never ends on its own.
    #[serde(default)]
    pub forever: bool,
    /// It writes this many bytes of output as fast as it can, then exits 0.
    #[serde(default)]
    pub flood: Option<u64>,
    /// Held in `pending` until a `start` step (targets that cannot hold skip the scenario).
    #[serde(default)]
    pub hold: bool,
    /// A command of its own instead (then `expect_output` says what it prints).
    #[serde(default)]
    pub command: Option<String>,
    #[serde(default)]
    pub expect_output: Option<String>,
}

impl Spawn {
    /// The task names this step starts.
    pub fn names(&self) -> Vec<String> {
        match self.count {
            None => vec![self.name.clone()],
            Some(n) => (0..n).map(|i| format!("{}#{i}", self.name)).collect(),
        }
    }

    /// The shell command it runs.
    pub fn command(&self) -> String {
        if let Some(c) = &self.command {
            return c.clone();
        }
        let mut parts = Vec::new();
        if self.tree {
            parts.push("sleep 1000 &".to_string());
        }
        if let Some(p) = &self.print {
            parts.push(format!("printf '%s' {};", quote(p)));
        }
        if let Some(p) = &self.print_stderr {
            parts.push(format!("printf '%s' {} >&2;", quote(p)));
        }
        if let Some(n) = self.flood {
            parts.push(format!("yes | head -c {n};"));
        }
        if self.forever {
            parts.push("while :; do sleep 1000; done;".to_string());
        }
        if let Some(s) = self.sleep {
            parts.push(format!("sleep {s};"));
        }
        parts.push(format!("exit {}", self.exit.unwrap_or(0)));
        parts.join(" ")
    }

    /// The whole output it writes when it runs to its end, if known.
    pub fn expected_output(&self) -> Option<String> {
        if self.command.is_some() {
            return self.expect_output.clone();
        }
        if self.flood.is_some() {
            return None;
        }
        Some(format!(
            "{}{}",
            self.print.as_deref().unwrap_or(""),
            self.print_stderr.as_deref().unwrap_or("")
        ))
    }

    /// Whether it ends on its own (with `exit`).
    pub fn ends(&self) -> bool {
        !self.forever
    }
}

/// `'text'` for sh, single quotes escaped.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Kill {
    pub task: String,
    #[serde(default)]
    pub expect: Option<KillExpect>,
}

/// What a kill must answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KillExpect {
    Killed,
    AlreadyFinal,
    NotFound,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Read {
    pub task: String,
    /// The text this read must return.
    #[serde(default)]
    pub expect: Option<String>,
    /// The status it must report.
    #[serde(default)]
    pub status: Option<taskproof_session::background::BgStatus>,
    /// Read on until a read returns nothing.
    #[serde(default)]
    pub all: bool,
    /// Read again (every 20 ms, at most this many seconds) until the status reported is
    /// final, without collecting notifications: for steps that need a finished task whose
    /// notification is still uncollected, however slow the machine.
    #[serde(default)]
    pub until_final: Option<f64>,
    /// Read again (every 20 ms, at most this many seconds) until some output arrived: the
    /// task got at least as far as its first `print`.
    #[serde(default)]
    pub until_output: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Race {
    #[serde(rename = "as")]
    pub name: String,
    pub count: usize,
    pub sleep: f64,
    pub step: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndHow {
    Exit,
    Sigkill,
}

/// A scenario file that could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {message}")]
pub struct BgLoadError {
    pub file: PathBuf,
    pub message: String,
}

/// Reads one scenario from `text` (named `file` in errors).
pub fn load_text(text: &str, file: &Path) -> Result<BgScenario, BgLoadError> {
    let err = |message: String| BgLoadError {
        file: file.to_path_buf(),
        message,
    };
    let mut s: BgScenario = serde_json::from_str(text)
        .map_err(|e| err(format!("line {}, column {}: {e}", e.line(), e.column())))?;
    s.file = file.to_path_buf();
    if s.id.is_empty() || !s.id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        return Err(err(format!(
            "\"id\" must be letters, digits and '-', got {:?}",
            s.id
        )));
    }
    if s.rules.is_empty() {
        return Err(err("\"rules\" must cite at least one of B1 to B8".into()));
    }
    let mut known = BTreeSet::new();
    for (i, step) in s.steps.iter().enumerate() {
        let at = |m: String| err(format!("steps[{i}]: {m}"));
        let need = |known: &BTreeSet<String>, t: &str| {
            if known.contains(t) {
                Ok(())
            } else {
                Err(at(format!("no earlier step starts a task named {t:?}")))
            }
        };
        match step {
            Step::Spawn(sp) => {
                if sp.name.is_empty() || sp.name.contains('#') {
                    return Err(at(format!(
                        "spawn: \"as\" must be a name without '#', got {:?}",
                        sp.name
                    )));
                }
                if sp.command.is_none() && sp.expect_output.is_some() {
                    return Err(at("spawn: \"expect_output\" goes with \"command\"".into()));
                }
                if sp.count == Some(0) {
                    return Err(at("spawn: \"count\" must be at least 1".into()));
                }
                for n in sp.names() {
                    if !known.insert(n.clone()) {
                        return Err(at(format!("spawn: a task named {n:?} was started before")));
                    }
                }
            }
            Step::Start(t) => need(&known, t)?,
            Step::Kill(k) => need(&known, &k.task)?,
            Step::Read(r) => {
                need(&known, &r.task)?;
                for (name, v) in [
                    ("until_final", r.until_final),
                    ("until_output", r.until_output),
                ] {
                    if let Some(x) = v
                        && !(x.is_finite() && x > 0.0 && x <= 600.0)
                    {
                        return Err(at(format!(
                            "read: \"{name}\" must be between 0 and 600 seconds, got {x}"
                        )));
                    }
                }
            }
            Step::Pause(x) | Step::Wait(x) | Step::Orphans(x) => {
                if !(x.is_finite() && *x >= 0.0 && *x <= 600.0) {
                    return Err(at(format!("seconds must be between 0 and 600, got {x}")));
                }
            }
            Step::Race(r) => {
                let ok =
                    r.sleep.is_finite() && r.sleep > 0.0 && r.step.is_finite() && r.step >= 0.0;
                if r.count == 0 || r.count > 1000 || !ok {
                    return Err(at(
                        "race: \"count\" must be 1 to 1000, \"sleep\" above 0, \"step\" at least 0"
                            .into(),
                    ));
                }
                for i in 0..r.count {
                    known.insert(format!("{}#{i}", r.name));
                }
            }
            Step::End(_) => {
                if i + 1 != s.steps.len() {
                    return Err(at("end must be the last step".into()));
                }
            }
        }
    }
    Ok(s)
}

/// The built-in background suite: (path in the repository, contents).
pub const BUILTIN: &[(&str, &str)] = &[
    (
        "background/scenarios/completion.json",
        include_str!("../../../background/scenarios/completion.json"),
    ),
    (
        "background/scenarios/end-during-the-spawning-turn.json",
        include_str!("../../../background/scenarios/end-during-the-spawning-turn.json"),
    ),
    (
        "background/scenarios/failure.json",
        include_str!("../../../background/scenarios/failure.json"),
    ),
    (
        "background/scenarios/kill-before-start.json",
        include_str!("../../../background/scenarios/kill-before-start.json"),
    ),
    (
        "background/scenarios/kill-while-running.json",
        include_str!("../../../background/scenarios/kill-while-running.json"),
    ),
    (
        "background/scenarios/kill-after-completion.json",
        include_str!("../../../background/scenarios/kill-after-completion.json"),
    ),
    (
        "background/scenarios/kill-complete-race.json",
        include_str!("../../../background/scenarios/kill-complete-race.json"),
    ),
    (
        "background/scenarios/many-finish-together.json",
        include_str!("../../../background/scenarios/many-finish-together.json"),
    ),
    (
        "background/scenarios/output-before-during-after.json",
        include_str!("../../../background/scenarios/output-before-during-after.json"),
    ),
    (
        "background/scenarios/ids.json",
        include_str!("../../../background/scenarios/ids.json"),
    ),
    (
        "background/scenarios/session-end-kills-tasks.json",
        include_str!("../../../background/scenarios/session-end-kills-tasks.json"),
    ),
    (
        "background/scenarios/session-sigkill-kills-tasks.json",
        include_str!("../../../background/scenarios/session-sigkill-kills-tasks.json"),
    ),
    (
        "background/scenarios/never-ending-command.json",
        include_str!("../../../background/scenarios/never-ending-command.json"),
    ),
    (
        "background/scenarios/output-flood.json",
        include_str!("../../../background/scenarios/output-flood.json"),
    ),
];

/// The built-in background scenarios, sorted by id.
pub fn load_builtin() -> Result<Vec<BgScenario>, Vec<BgLoadError>> {
    collect(
        BUILTIN
            .iter()
            .map(|(p, t)| load_text(t, Path::new(p)))
            .collect(),
    )
}

/// The scenarios of these files or folders (searched for `*.json`), sorted by id.
pub fn load_paths(paths: &[PathBuf]) -> Result<Vec<BgScenario>, Vec<BgLoadError>> {
    let mut files = Vec::new();
    let mut errors = Vec::new();
    for p in paths {
        if p.is_dir() {
            match std::fs::read_dir(p) {
                Ok(rd) => {
                    let mut v: Vec<PathBuf> = rd
                        .flatten()
                        .map(|e| e.path())
                        .filter(|f| f.extension().is_some_and(|e| e == "json"))
                        .collect();
                    v.sort();
                    files.extend(v);
                }
                Err(e) => errors.push(BgLoadError {
                    file: p.clone(),
                    message: e.to_string(),
                }),
            }
        } else {
            files.push(p.clone());
        }
    }
    let mut loaded: Vec<Result<BgScenario, BgLoadError>> = errors.into_iter().map(Err).collect();
    for f in files {
        loaded.push(match std::fs::read_to_string(&f) {
            Ok(t) => load_text(&t, &f),
            Err(e) => Err(BgLoadError {
                file: f.clone(),
                message: format!("failed to read: {e}"),
            }),
        });
    }
    collect(loaded)
}

fn collect(
    loaded: Vec<Result<BgScenario, BgLoadError>>,
) -> Result<Vec<BgScenario>, Vec<BgLoadError>> {
    let mut ok = Vec::new();
    let mut errors = Vec::new();
    for l in loaded {
        match l {
            Ok(s) => ok.push(s),
            Err(e) => errors.push(e),
        }
    }
    let mut seen = BTreeSet::new();
    for s in &ok {
        if !seen.insert(s.id.clone()) {
            errors.push(BgLoadError {
                file: s.file.clone(),
                message: format!("the id {:?} is used by another scenario", s.id),
            });
        }
    }
    if errors.is_empty() {
        ok.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(ok)
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_suite_loads_and_every_rule_has_a_scenario() {
        let s = load_builtin().unwrap();
        for r in Rule::BACKGROUND {
            assert!(
                s.iter().any(|sc| sc.rules.contains(&r)),
                "no scenario cites {r}"
            );
        }
    }

    #[test]
    fn bad_files_name_the_file_and_the_field() {
        let f = Path::new("x.json");
        let e = load_text(
            r#"{"id":"a","title":"t","rules":["B1"],"source":"s","steps":[{"spawn":{"as":"t","slep":1}}]}"#,
            f,
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("x.json") && e.to_string().contains("slep"),
            "{e}"
        );
        let e = load_text(
            r#"{"id":"a","title":"t","rules":["S1"],"source":"s","steps":[]}"#,
            f,
        )
        .unwrap_err();
        assert!(e.message.contains("store rule"), "{e}");
        let e = load_text(
            r#"{"id":"a","title":"t","rules":["B1"],"source":"s","steps":[{"kill":{"task":"u"}}]}"#,
            f,
        )
        .unwrap_err();
        assert!(
            e.message.contains("steps[0]") && e.message.contains("\"u\""),
            "{e}"
        );
        let e = load_text(
            r#"{"id":"a","title":"t","rules":["B1"],"source":"s","steps":[{"end":"exit"},{"pause":1}]}"#,
            f,
        )
        .unwrap_err();
        assert!(e.message.contains("last step"), "{e}");
    }

    #[test]
    fn commands_say_what_the_step_says() {
        let sp: Spawn =
            serde_json::from_str(r#"{"as":"t","print":"it's","sleep":0.5,"exit":3,"tree":true}"#)
                .unwrap();
        assert_eq!(
            sp.command(),
            "sleep 1000 & printf '%s' 'it'\\''s'; sleep 0.5; exit 3"
        );
        assert_eq!(sp.expected_output().as_deref(), Some("it's"));
    }
}
