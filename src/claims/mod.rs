//! The register of claims about real products (`repro/claims.toml`, repro/README.md) and
//! the reruns of their reproductions: every claim taskproof publishes about a product's
//! behaviour, the versions it is made for, what each version answers, and a script that
//! shares no code with taskproof and answers the claim's question on its own.
//!
//! [`Register::load`] reads the file strictly (an unknown key, a missing field or a claim
//! whose script is missing is an error naming the file, the claim and the key);
//! [`run_repro`] runs one script for one version under its time limit, in a process group
//! of its own that is killed whatever the script does (past the limit, SIGTERM first, so
//! that the script ends the sessions it started outside the group, then SIGKILL after
//! [`TERM_GRACE`]); [`Register::record`] writes the results back into the file with
//! `toml_edit`, so that its comments and layout stay.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::Value;

use taskproof_session::group::Group;
use taskproof_session::pipes;

/// The register's file, relative to the repository root.
pub const DEFAULT_REGISTER: &str = "repro/claims.toml";

/// The register as it was when this binary was built, so that an installed `taskproof
/// claims list` reads it without a checkout, as `taskproof run` has the scenarios. Its
/// reproductions are not built in: they are scripts under `repro/` that share no code with
/// taskproof, and only a checkout has them.
pub const BUILTIN_REGISTER: &str = include_str!("../../repro/claims.toml");

/// A script that gives no time limit has this one.
pub const DEFAULT_TIMEOUT: u64 = 180;

/// How long a script past its limit has, after SIGTERM to its group, to end what it started
/// before the group gets SIGKILL: the helpers of repro/lib kill the product's sessions on
/// SIGTERM and give them up to 10 s (`kill_marked`).
pub const TERM_GRACE: Duration = Duration::from_secs(10);

/// How long the pipes of a script whose group is dead may take to reach their end before the
/// run stops waiting for them (a process that left the group may hold them open).
pub const PIPE_GRACE: Duration = Duration::from_secs(2);

/// What is kept of each of a script's stdout and stderr.
const PIPE_LIMIT: usize = 16 << 20;

/// Whether the claim stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Its reproduction confirms it on every version it names.
    Confirmed,
    /// Its reproduction does not confirm it (`why` says so); the docs say so where it
    /// appears.
    Unconfirmed,
    /// Taken back (`why`); kept so that the record says what was claimed and why it fell.
    Withdrawn,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Confirmed => "confirmed",
            Status::Unconfirmed => "unconfirmed",
            Status::Withdrawn => "withdrawn",
        }
    }
}

/// The last run of a claim's reproduction on one version.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LastRun {
    pub version: String,
    /// UTC, `2026-11-27T16:02:11Z`.
    pub date: String,
    /// `/proc/loadavg`'s three figures when it started.
    pub load: String,
    pub answer: bool,
    pub observed: String,
}

/// One claim.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claim {
    pub id: String,
    /// `claude-code`, or `mcp:PACKAGE`.
    pub product: String,
    /// The configuration the claim holds for: for Claude Code one of
    /// `taskproof_claude_code::Config`'s names (`teams-off`, the default, or agent teams
    /// on: `teams-env`, `teams-settings`, `teams-flag`; issue 54), required there, since a
    /// verdict measured with teams off says nothing about teams on. Other products have
    /// none.
    #[serde(default)]
    pub configuration: Option<String>,
    /// The claim, as published.
    pub says: String,
    /// The yes/no question the reproduction answers.
    pub asks: String,
    #[serde(default)]
    pub sources: Vec<String>,
    /// Where taskproof publishes it.
    #[serde(default)]
    pub appears: Vec<String>,
    /// The taskproof command that shows it (`{version}` for the version).
    #[serde(default)]
    pub taskproof: Option<String>,
    /// The script, relative to the repository root.
    pub repro: PathBuf,
    #[serde(default)]
    pub timeout: Option<u64>,
    pub status: Status,
    #[serde(default)]
    pub why: Option<String>,
    /// The change points (`torn-writes-2-1-113`) or rows (`edges-mirrored`) of the version
    /// timeline (reports/claude-code/timeline.md) this claim stands behind: `taskproof
    /// timeline` says there whether it is confirmed.
    #[serde(default)]
    pub timeline: Vec<String>,
    /// What each version answers.
    pub expect: BTreeMap<String, bool>,
    #[serde(default)]
    pub last: Vec<LastRun>,
}

impl Claim {
    /// The answer the claim expects of `version`: the one it names, else (for a version it
    /// does not name, the release watch) the answer of the newest named version below it.
    pub fn expected(&self, version: &str) -> Option<bool> {
        if let Some(a) = self.expect.get(version) {
            return Some(*a);
        }
        let v = semver::Version::parse(version).ok()?;
        self.expect
            .iter()
            .filter_map(|(k, a)| Some((semver::Version::parse(k).ok()?, *a)))
            .filter(|(k, _)| *k < v)
            .max_by(|a, b| a.0.cmp(&b.0))
            .map(|(_, a)| a)
    }

    /// The last recorded run on `version`.
    pub fn last_on(&self, version: &str) -> Option<&LastRun> {
        self.last.iter().find(|l| l.version == version)
    }

    /// The versions it names, oldest first.
    pub fn versions(&self) -> Vec<String> {
        let mut v: Vec<String> = self.expect.keys().cloned().collect();
        v.sort_by(
            |a, b| match (semver::Version::parse(a), semver::Version::parse(b)) {
                (Ok(x), Ok(y)) => x.cmp(&y),
                _ => a.cmp(b),
            },
        );
        v
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRegister {
    #[serde(default)]
    claim: Vec<Claim>,
}

/// The register, read.
#[derive(Debug, Clone)]
pub struct Register {
    /// The file read, or [`DEFAULT_REGISTER`] for the built-in copy.
    pub path: PathBuf,
    /// The repository root: the folder above the register's; `None` for the built-in copy,
    /// which has no scripts beside it.
    pub root: Option<PathBuf>,
    pub claims: Vec<Claim>,
}

impl Register {
    /// Reads and checks `path`.
    pub fn load(path: &Path) -> Result<Register, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("{}: failed to read: {e}", path.display()))?;
        let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let root = absolute
            .parent()
            .and_then(Path::parent)
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        Self::parse(&text, path, Some(root))
    }

    /// The copy built into this binary ([`BUILTIN_REGISTER`]): everything but the scripts,
    /// which are not checked (there is no checkout to find them in).
    pub fn builtin() -> Result<Register, String> {
        Self::parse(
            BUILTIN_REGISTER,
            Path::new(&format!(
                "{DEFAULT_REGISTER} (built into taskproof {})",
                env!("CARGO_PKG_VERSION")
            )),
            None,
        )
    }

    /// Whether this is the built-in copy.
    pub fn is_builtin(&self) -> bool {
        self.root.is_none()
    }

    /// Checks `text`, read from `path`; each claim's script must be a file under `root`
    /// when there is one.
    fn parse(text: &str, path: &Path, root: Option<PathBuf>) -> Result<Register, String> {
        let raw: RawRegister = toml::from_str(text)
            .map_err(|e| format!("{}: {}", path.display(), e.to_string().replace('\n', " ")))?;
        let mut seen = std::collections::BTreeSet::new();
        for (i, c) in raw.claim.iter().enumerate() {
            let at = |key: &str| format!("{}: claim[{i}] ({}).{key}", path.display(), c.id);
            if !seen.insert(c.id.as_str()) {
                return Err(format!("{}: the id is used twice", at("id")));
            }
            if c.expect.is_empty() {
                return Err(format!("{}: names no version", at("expect")));
            }
            match (c.product.as_str(), c.configuration.as_deref()) {
                ("claude-code", None) => {
                    return Err(format!(
                        "{}: a Claude Code claim names the configuration it holds for (teams-off for the default)",
                        at("configuration")
                    ));
                }
                ("claude-code", Some(name)) => {
                    taskproof_claude_code::Config::parse(name)
                        .map_err(|e| format!("{}: {e}", at("configuration")))?;
                }
                (_, Some(_)) => {
                    return Err(format!(
                        "{}: only Claude Code claims have a configuration",
                        at("configuration")
                    ));
                }
                (_, None) => {}
            }
            if let Some(root) = &root
                && !root.join(&c.repro).is_file()
            {
                return Err(format!(
                    "{}: no such script {}",
                    at("repro"),
                    root.join(&c.repro).display()
                ));
            }
            if c.status != Status::Confirmed && c.why.as_deref().is_none_or(str::is_empty) {
                return Err(format!(
                    "{}: a claim that is {} says why",
                    at("why"),
                    c.status.as_str()
                ));
            }
        }
        Ok(Register {
            path: path.to_path_buf(),
            root,
            claims: raw.claim,
        })
    }

    /// Writes the runs in `results` into the file as each claim's `[[claim.last]]` for its
    /// version (replacing an earlier run on the same version), keeping everything else of
    /// the file as it is.
    ///
    /// A version the claim does not name (the release watch) is added to its `expect` only
    /// when the run agreed with what the claim expected of it: the claim then covers that
    /// version with a run to show for it, as every named version has. A run that disagreed,
    /// or had nothing to agree with (a version older than every named one), is recorded and
    /// nothing more: it contradicts or goes beyond what the claim says, so what the claim
    /// should become (a new change point, `unconfirmed`) is for a person to write, not for
    /// `--record` to infer; writing the inferred answer silently widened the claim over a
    /// version whose run said otherwise.
    pub fn record(&self, results: &[Outcome]) -> Result<(), String> {
        use toml_edit::{DocumentMut, Item, Table, value};
        if self.is_builtin() {
            return Err(format!(
                "{}: the built-in register cannot be written; record into a checkout's file",
                self.path.display()
            ));
        }
        let text = std::fs::read_to_string(&self.path)
            .map_err(|e| format!("{}: failed to read: {e}", self.path.display()))?;
        let mut doc: DocumentMut = text
            .parse()
            .map_err(|e| format!("{}: {e}", self.path.display()))?;
        let claims = doc
            .get_mut("claim")
            .and_then(Item::as_array_of_tables_mut)
            .ok_or_else(|| format!("{}: no [[claim]] tables", self.path.display()))?;
        for r in results {
            let Some(answer) = r.answer else { continue };
            let Some(t) = claims
                .iter_mut()
                .find(|t| t.get("id").and_then(Item::as_str) == Some(&r.claim))
            else {
                continue;
            };
            if r.agreement() == Agreement::Holds
                && let Some(expect) = t.get_mut("expect").and_then(Item::as_table_like_mut)
                && expect.get(&r.version).is_none()
            {
                expect.insert(&r.version, value(answer));
            }
            let mut run = Table::new();
            run.insert("version", value(r.version.clone()));
            run.insert("date", value(r.date.clone()));
            run.insert("load", value(r.load.clone()));
            run.insert("answer", value(answer));
            run.insert("observed", value(r.observed.clone()));
            let last = t
                .entry("last")
                .or_insert_with(|| Item::ArrayOfTables(Default::default()))
                .as_array_of_tables_mut()
                .ok_or_else(|| {
                    format!(
                        "{}: claim {}: `last` is not [[claim.last]] tables",
                        self.path.display(),
                        r.claim
                    )
                })?;
            let same = last
                .iter()
                .position(|l| l.get("version").and_then(Item::as_str) == Some(&r.version));
            match same {
                Some(i) => {
                    if let Some(old) = last.get_mut(i) {
                        *old = run;
                    }
                }
                None => last.push(run),
            }
        }
        // Written beside and renamed over, so a crash leaves the old register or the new.
        let tmp = self.path.with_extension("toml.tmp");
        std::fs::write(&tmp, doc.to_string())
            .and_then(|()| std::fs::rename(&tmp, &self.path))
            .map_err(|e| format!("{}: failed to write: {e}", self.path.display()))
    }
}

/// What one run of a reproduction said.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub claim: String,
    pub version: String,
    /// The claim's expectation for the version.
    pub expected: Option<bool>,
    /// The script's answer; `None` when it could not answer.
    pub answer: Option<bool>,
    pub observed: String,
    /// Why it could not answer.
    pub error: Option<String>,
    pub date: String,
    pub load: String,
    pub seconds: f64,
}

/// How a run's answer compares with the register.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agreement {
    /// It answered what the claim expects of the version.
    Holds,
    /// It answered the other way.
    Differs,
    /// It answered, but the claim expects nothing of the version: one older than every
    /// version the claim names (the release watch run on an old version). Not an error of
    /// the reproduction.
    Unnamed,
    /// It could not answer.
    Broke,
}

impl Outcome {
    /// Whether the reproduction agrees with the register.
    pub fn holds(&self) -> Option<bool> {
        Some(self.answer? == self.expected?)
    }

    /// How the run compares with the register.
    pub fn agreement(&self) -> Agreement {
        match (self.answer, self.expected) {
            (None, _) => Agreement::Broke,
            (Some(_), None) => Agreement::Unnamed,
            (Some(a), Some(e)) if a == e => Agreement::Holds,
            (Some(_), Some(_)) => Agreement::Differs,
        }
    }
}

/// `/proc/loadavg`'s three figures.
pub fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// Now in UTC, to the second: the clock and the calendar every crate below uses
/// (`taskproof_check::journal::now_ms`, `taskproof_store::audit::format_time`), not a copy.
pub fn now_utc() -> String {
    let ms = taskproof_check::journal::now_ms();
    let t = taskproof_store::audit::format_time(ms - ms % 1000);
    // `…:11.000Z` → `…:11Z`.
    t.replace(".000Z", "Z")
}

/// SIGTERM to `group`, then waits up to `grace` for its leader to end.
fn terminate(group: &mut Group, grace: Duration) {
    if let Some(pid) = rustix::process::Pid::from_raw(group.id() as i32) {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::TERM);
    }
    let deadline = Instant::now() + grace;
    while group.exited().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs `claim`'s script for `version` with `python` under its time limit, and reads the
/// answer from the last line of its standard output.
pub fn run_repro(register: &Register, claim: &Claim, version: &str, python: &str) -> Outcome {
    let date = now_utc();
    let load = load();
    let started = Instant::now();
    let expected = claim.expected(version);
    let limit = Duration::from_secs(claim.timeout.unwrap_or(DEFAULT_TIMEOUT));
    let outcome = |answer, observed: String, error: Option<String>| Outcome {
        claim: claim.id.clone(),
        version: version.to_string(),
        expected,
        answer,
        observed,
        error,
        date: date.clone(),
        load: load.clone(),
        seconds: started.elapsed().as_secs_f64(),
    };
    let Some(root) = &register.root else {
        return outcome(
            None,
            String::new(),
            Some(format!(
                "{}: the built-in register has no scripts; run it from a checkout",
                claim.repro.display()
            )),
        );
    };
    let mut command = Command::new(python);
    command
        .arg(root.join(&claim.repro))
        .arg("--version")
        .arg(version)
        .current_dir(root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut group = match Group::spawn(&mut command) {
        Ok(g) => g,
        Err(e) => {
            return outcome(
                None,
                String::new(),
                Some(format!("failed to run {python}: {e}")),
            );
        }
    };
    // Read into bounded buffers by threads that may outlive the run: a process that left
    // the group (a `setsid` child the script failed to end) can hold a pipe open for ever.
    let read = |pipe: Option<Box<dyn Read + Send>>| {
        let pipe = pipe.unwrap_or_else(|| Box::new(std::io::empty()));
        pipes::keep_stderr(pipe, PIPE_LIMIT)
    };
    let (stdout, stdout_thread) = read(group.child().stdout.take().map(|p| Box::new(p) as _));
    let (stderr, stderr_thread) = read(group.child().stderr.take().map(|p| Box::new(p) as _));
    let status = loop {
        if let Some(s) = group.exited() {
            break Some(s);
        }
        if started.elapsed() >= limit {
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    if status.is_none() {
        // The reproduction helpers (repro/lib) start the product in sessions of their own
        // and end them on SIGTERM, not on SIGKILL: the script gets SIGTERM and a grace
        // period to clean up before the group is killed.
        terminate(&mut group, TERM_GRACE);
    }
    // The whole group, whatever it left running: a reproduction never outlives its run.
    group.kill();
    pipes::finish_stderr(stdout_thread, PIPE_GRACE);
    pipes::finish_stderr(stderr_thread, PIPE_GRACE);
    let text = |kept: &pipes::Kept| {
        String::from_utf8_lossy(&kept.lock().unwrap_or_else(|p| p.into_inner())).into_owned()
    };
    let (out, err) = (text(&stdout), text(&stderr));
    let tail = |s: &str| {
        let lines: Vec<&str> = s.lines().rev().take(3).collect();
        lines.into_iter().rev().collect::<Vec<_>>().join(" | ")
    };
    let Some(status) = status else {
        return outcome(
            None,
            String::new(),
            Some(format!(
                "no answer within {} s; its stderr ended: {}",
                limit.as_secs(),
                tail(&err)
            )),
        );
    };
    let last = out
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    let parsed: Option<Value> = serde_json::from_str(last).ok();
    let Some(v) = parsed.filter(Value::is_object) else {
        return outcome(
            None,
            String::new(),
            Some(format!(
                "exited {status} without the JSON line the protocol asks for; its stderr ended: {}",
                tail(&err)
            )),
        );
    };
    let observed = v["observed"].as_str().unwrap_or("").to_string();
    match v["answer"].as_bool() {
        Some(a) if status.success() => outcome(Some(a), observed, None),
        _ => outcome(
            None,
            observed,
            Some(
                v["error"]
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| format!("exited {status} without an answer")),
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(expect: &[(&str, bool)]) -> Claim {
        Claim {
            id: "c".into(),
            product: "claude-code".into(),
            configuration: Some("teams-off".into()),
            says: "s".into(),
            asks: "a".into(),
            sources: vec![],
            appears: vec![],
            taskproof: None,
            repro: "x.py".into(),
            timeout: None,
            status: Status::Confirmed,
            why: None,
            timeline: vec![],
            expect: expect.iter().map(|(v, a)| (v.to_string(), *a)).collect(),
            last: vec![],
        }
    }

    #[test]
    fn a_version_the_register_does_not_name_expects_the_newest_named_below_it() {
        let c = claim(&[("2.1.40", false), ("2.1.41", true), ("2.1.9", false)]);
        assert_eq!(c.expected("2.1.41"), Some(true));
        assert_eq!(c.expected("2.1.340"), Some(true), "the release watch");
        assert_eq!(c.expected("2.1.20"), Some(false), "2.1.9 < 2.1.20 < 2.1.40");
        assert_eq!(c.expected("1.0.0"), None, "nothing below it");
        assert_eq!(c.versions(), ["2.1.9", "2.1.40", "2.1.41"]);
    }

    const ONE: &str = "[[claim]]\nid = \"c\"\nproduct = \"claude-code\"\nsays = \"s\"\nasks = \"a\"\nrepro = \"x.py\"\nstatus = \"confirmed\"\n";

    #[test]
    fn a_claude_code_claim_names_a_known_configuration_and_others_none() {
        let path = Path::new("claims.toml");
        let with = |extra: &str| format!("{ONE}{extra}[claim.expect]\n\"2.1.332\" = true\n");
        let e = Register::parse(&with(""), path, None).unwrap_err();
        assert!(e.contains("claim[0] (c).configuration"), "{e}");
        assert!(e.contains("teams-off for the default"), "{e}");
        let e = Register::parse(&with("configuration = \"teams\"\n"), path, None).unwrap_err();
        assert!(
            e.contains("unknown Claude Code configuration \"teams\""),
            "{e}"
        );
        let r = Register::parse(&with("configuration = \"teams-env\"\n"), path, None).unwrap();
        assert_eq!(r.claims[0].configuration.as_deref(), Some("teams-env"));
        let other = with("configuration = \"teams-env\"\n").replace("\"claude-code\"", "\"mcp:x\"");
        let e = Register::parse(&other, path, None).unwrap_err();
        assert!(e.contains("only Claude Code claims"), "{e}");
    }

    #[test]
    fn every_claude_code_claim_of_the_checked_in_register_names_its_configuration() {
        let r = Register::builtin().unwrap();
        for c in r.claims.iter().filter(|c| c.product == "claude-code") {
            assert!(c.configuration.is_some(), "{}", c.id);
        }
    }
}
