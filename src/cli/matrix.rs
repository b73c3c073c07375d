//! `taskproof maint matrix`: run the suite and a short race per workload against each target (as
//! child `taskproof run` and `taskproof race` processes of this same binary, so every target
//! is run exactly as those commands run it, and a target that crashes takes nothing else
//! down), save each target's JSON reports, and build `matrix.md` and `matrix.html` from
//! them; or rebuild the pages from saved reports (`--from`, `--run`, `--race`) without
//! running anything. The pages are built by the pure [`taskproof_matrix::render`].

use super::verdict::Verdict;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use taskproof_matrix::Column;
use taskproof_matrix::input::{MANIFEST_FORMAT, Manifest};
use taskproof_targets::TargetSpec;

#[derive(Debug, clap::Args)]
#[command(after_long_help = "\
Each --target is run twice, by this same binary: `taskproof run` (the built-in suite) and
`taskproof race --workload all` (a short race: --race-writers writers x --race-ops requests
per workload, seed --race-seed), both held to --profile (strict: the matrix shows where each
store differs from the contract). Their JSON reports are saved in OUT/matrix/LABEL/
(run.json, race.json, and target.json saying why a report is missing), so that
`taskproof maint matrix --from OUT/matrix` rebuilds the pages without running anything.

A target that cannot start is a column of errors with the reason, never a failure of the
command. Saved reports from elsewhere can be added: --from DIR (a target's folder holding
run.json and race*.json, or a folder of such folders), --run FILE and --race FILE (a race
report joins the column with the same target spec). Columns: --from first, in order, then
--target, then --run.

Running targets into OUT keeps the other columns already there: OUT/matrix/index.json gains
the targets just run (a target run again keeps its place), and the pages show every column
the index lists, as `--from OUT/matrix` would.

Writes OUT/matrix.md and OUT/matrix.html (one self-contained page: no network, no external
scripts or fonts; every cell opens with scripts off).

Exit status: 0 when the pages were written (failing cells are the matrix's content, not an
error of the command), 2 on a usage error or a report that cannot be read or written.

Examples:
  taskproof maint matrix --target reference --target naive --target claude-code@2.1.17
  taskproof maint matrix --target 'cmd:python3 s07_adapter.py' --label s07='cmd:python3 s07_adapter.py'
  taskproof maint matrix --from reports/matrix --from reports/claude-code --out reports
  taskproof maint matrix --target 'mcp:taskproof serve mcp' --mapping mappings/taskproof.toml
  taskproof maint matrix --run a/run.json --race a/race.json --out /tmp/m")]
pub struct Args {
    /// A target to run: reference, naive, mutant:NAME, cmd:COMMAND or claude-code@VERSION
    /// (repeatable; one column each).
    #[arg(long, short, value_name = "TARGET", value_parser = parse_target)]
    pub target: Vec<String>,
    /// Head the column of TARGET with NAME instead of the target spec (repeatable).
    #[arg(long, value_name = "NAME=TARGET")]
    pub label: Vec<String>,
    /// Saved reports: a target's folder (run.json, race*.json, target.json) or a folder of
    /// them, in the order of its index.json or of their names (repeatable).
    #[arg(long, value_name = "DIR")]
    pub from: Vec<PathBuf>,
    /// A saved `taskproof run --report json:FILE` report: one more column (repeatable).
    #[arg(long, value_name = "FILE")]
    pub run: Vec<PathBuf>,
    /// A saved `taskproof race --report json:FILE` report, joined to the column of its
    /// target (repeatable).
    #[arg(long, value_name = "FILE")]
    pub race: Vec<PathBuf>,
    /// The profile every --target is held to.
    #[arg(long, short, default_value = "strict")]
    pub profile: String,
    /// Where matrix.md, matrix.html and the per-target reports (matrix/LABEL/) go.
    #[arg(long, short, value_name = "DIR", default_value = "reports")]
    pub out: PathBuf,
    /// Writers per race workload.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub race_writers: u32,
    /// Requests per writer per race workload.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    pub race_ops: u32,
    /// Seed of the races (fixed, so a rerun races the same plans).
    #[arg(long, default_value_t = 1)]
    pub race_seed: u64,
    /// Run only the suite, no race.
    #[arg(long)]
    pub no_race: bool,
    /// Passed to `run` and `race`: seconds a request may go unanswered.
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<super::Seconds>,
    /// Passed to `run`: seconds a session may take to start and answer hello.
    #[arg(long, value_name = "SECS")]
    pub start_timeout: Option<super::Seconds>,
    /// Passed to `run`: scenarios run at once.
    #[arg(long, short, value_name = "N")]
    pub jobs: Option<usize>,
    /// The mapping file of the mcp:COMMAND targets (docs/mcp-targets.md), passed to their
    /// `run` and `race`; run the matrix once per mapping, as each run keeps the other
    /// columns.
    #[arg(long, value_name = "FILE")]
    pub mapping: Option<PathBuf>,
}

/// Whether the (already checked) target spec `spec` takes `--mapping FILE`.
fn takes_mapping(spec: &str) -> bool {
    spec.parse::<TargetSpec>().is_ok_and(|t| t.takes_mapping())
}

fn parse_target(s: &str) -> Result<String, String> {
    s.parse::<TargetSpec>().map(|_| s.to_string())
}

/// A file-name-safe form of a label: `claude-code@2.1.17` stays, `cmd:python3 x.py` becomes
/// `cmd-python3-x.py`.
pub fn slug(label: &str) -> String {
    let s: String = label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '@' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect();
    let s = s.trim_matches(|c| c == '-' || c == '.').to_string();
    let s: String = s.chars().take(60).collect();
    if s.is_empty() { "target".into() } else { s }
}

/// The end of a child's stderr, for a reason.
fn stderr_tail(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let start = lines.len().saturating_sub(6);
    lines[start..].join("\n")
}

/// What one child command did.
enum Child {
    /// It wrote its report (exit 0, 1 or 3); the last line of its standard output.
    Report(String),
    /// It wrote no report; why.
    NoReport(String),
    /// It refused the command line (exit 2): the matrix was asked something wrong.
    Usage(String),
}

fn run_child(mut cmd: Command, report: &Path, what: &str) -> Child {
    let _ = std::fs::remove_file(report);
    let out = match cmd.stdin(Stdio::null()).output() {
        Ok(o) => o,
        Err(e) => return Child::NoReport(format!("failed to start taskproof {what}: {e}")),
    };
    let tail = stderr_tail(&out.stderr);
    let code = out.status.code();
    if report.is_file() && matches!(code, Some(0 | 1 | 3)) {
        let stdout = String::from_utf8_lossy(&out.stdout);
        let last = stdout
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .to_string();
        return Child::Report(last);
    }
    let status = match code {
        Some(c) => format!("exit status {c}"),
        None => "killed by a signal".to_string(),
    };
    if code == Some(super::exit::USAGE) && what == "run" {
        return Child::Usage(tail);
    }
    Child::NoReport(if tail.is_empty() {
        format!("taskproof {what} wrote no report ({status})")
    } else {
        format!("taskproof {what} wrote no report ({status}): {tail}")
    })
}

/// Whether two paths name the same folder.
fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// A child `taskproof VERB --target SPEC --profile P --report json:REPORT`, with the
/// request time limit the matrix was given.
fn child(exe: &Path, verb: &str, spec: &str, args: &Args, report: &Path) -> Command {
    let mut cmd = Command::new(exe);
    cmd.arg(verb)
        .arg("--target")
        .arg(spec)
        .arg("--profile")
        .arg(&args.profile)
        .arg("--report")
        .arg(format!("json:{}", report.display()));
    if let Some(t) = args.timeout {
        cmd.arg("--timeout").arg(t.0.as_secs_f64().to_string());
    }
    if let Some(m) = &args.mapping
        && takes_mapping(spec)
    {
        cmd.arg("--mapping").arg(m);
    }
    cmd
}

/// Runs the suite and the race against one target into `dir` (run.json, race.json and
/// target.json). `Err`: a usage error of the whole command.
fn run_target(exe: &Path, spec: &str, label: &str, dir: &Path, args: &Args) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut manifest = Manifest {
        format_version: MANIFEST_FORMAT,
        label: label.to_string(),
        spec: spec.to_string(),
        profile: args.profile.clone(),
        ..Manifest::default()
    };
    let _ = std::fs::remove_file(dir.join("target.json"));

    eprintln!("taskproof maint matrix: {label}: running the suite");
    let run_json = dir.join("run.json");
    let mut cmd = child(exe, "run", spec, args, &run_json);
    cmd.arg("--color").arg("never");
    if let Some(t) = args.start_timeout {
        cmd.arg("--start-timeout")
            .arg(t.0.as_secs_f64().to_string());
    }
    if let Some(j) = args.jobs {
        cmd.arg("--jobs").arg(j.to_string());
    }
    let mut started = true;
    match run_child(cmd, &run_json, "run") {
        Child::Report(last) => {
            eprintln!("taskproof maint matrix: {label}: {last}");
            if let Ok(r) = taskproof_matrix::input::read_run(&run_json)
                && r.target.error.is_some()
            {
                started = false;
            }
        }
        Child::NoReport(why) => {
            eprintln!("taskproof maint matrix: {label}: {why}");
            manifest.run_error = Some(why);
            started = false;
        }
        Child::Usage(why) => {
            return Err(format!(
                "taskproof run refused --target {spec:?} --profile {:?}: {why}",
                args.profile
            ));
        }
    }

    let race_json = dir.join("race.json");
    let _ = std::fs::remove_file(&race_json);
    if args.no_race {
        manifest.race_not_run = true;
    } else if !started {
        manifest.race_error =
            Some("not run: the target could not start (see its scenarios)".into());
    } else {
        eprintln!(
            "taskproof maint matrix: {label}: racing {} writers x {} requests per workload",
            args.race_writers, args.race_ops
        );
        let mut cmd = child(exe, "race", spec, args, &race_json);
        cmd.args(["--workload", "all", "--writers"])
            .arg(args.race_writers.to_string())
            .arg("--ops")
            .arg(args.race_ops.to_string())
            .arg("--seed")
            .arg(args.race_seed.to_string());
        match run_child(cmd, &race_json, "race") {
            Child::Report(last) => eprintln!("taskproof maint matrix: {label}: {last}"),
            Child::NoReport(why) | Child::Usage(why) => {
                eprintln!("taskproof maint matrix: {label}: {why}");
                manifest.race_error = Some(why);
            }
        }
    }
    let mut text = serde_json::to_string_pretty(&manifest).expect("JSON serializes");
    text.push('\n');
    let path = dir.join("target.json");
    std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

pub fn run(args: Args) -> anyhow::Result<Verdict> {
    let usage = |msg: String| {
        eprintln!("taskproof maint matrix: {msg}");
        Ok(Verdict::Usage)
    };
    if args.target.is_empty() && args.from.is_empty() && args.run.is_empty() && args.race.is_empty()
    {
        return usage(
            "nothing to build: give --target to run targets, or --from, --run or --race for saved reports".into(),
        );
    }
    if let Some(m) = &args.mapping {
        let Some(first) = args.target.iter().find(|t| takes_mapping(t)) else {
            return usage(format!(
                "--mapping {}: no {} target to give it to",
                m.display(),
                taskproof_targets::listed(taskproof_targets::mapping_kinds().map(|k| k.syntax))
            ));
        };
        // Read now, so that a bad file is a usage error before any target runs.
        if let Err(e) = first
            .parse::<TargetSpec>()
            .and_then(|t| t.with_mapping(Some(m)))
        {
            return usage(e);
        }
    }
    let mut labels: Vec<(String, String)> = Vec::new();
    for l in &args.label {
        match l.split_once('=') {
            Some((name, spec)) if !name.trim().is_empty() && !spec.is_empty() => {
                labels.push((name.trim().to_string(), spec.to_string()))
            }
            _ => return usage(format!("--label {l:?}: expected NAME=TARGET")),
        }
    }

    let base = args.out.join("matrix");
    if !args.target.is_empty()
        && let Err(e) = std::fs::create_dir_all(&base)
    {
        return usage(format!("cannot create {}: {e}", base.display()));
    }
    let mut columns: Vec<Column> = Vec::new();
    for dir in &args.from {
        // OUT/matrix is read after the targets ran, with them in it.
        if !args.target.is_empty() && same_dir(dir, &base) {
            continue;
        }
        match taskproof_matrix::load_from(dir) {
            Ok(c) => columns.extend(c),
            Err(e) => return usage(e.to_string()),
        }
    }

    if !args.target.is_empty() {
        let exe = std::env::current_exe()?;
        let mut slugs: Vec<String> = Vec::new();
        for spec in &args.target {
            let label = labels
                .iter()
                .find(|(_, s)| s == spec)
                .map(|(n, _)| n.clone())
                .unwrap_or_else(|| spec.clone());
            let mut s = slug(&label);
            let mut n = 2;
            while slugs.contains(&s) {
                s = format!("{}-{n}", slug(&label));
                n += 1;
            }
            let dir = base.join(&s);
            slugs.push(s);
            if let Err(why) = run_target(&exe, spec, &label, &dir, &args) {
                return usage(why);
            }
        }
        // The index keeps the columns of earlier runs into the same folder: running one
        // target adds or replaces its column, never drops the others.
        let index = match taskproof_matrix::input::merge_index(&base, &slugs) {
            Ok(i) => i,
            Err(e) => return usage(e.to_string()),
        };
        let mut text = serde_json::to_string_pretty(&index).expect("JSON serializes");
        text.push('\n');
        if let Err(e) = std::fs::write(base.join("index.json"), text) {
            return usage(format!(
                "cannot write {}: {e}",
                base.join("index.json").display()
            ));
        }
        match taskproof_matrix::load_from(&base) {
            Ok(c) => columns.extend(c),
            Err(e) => return usage(e.to_string()),
        }
    }

    if let Err(e) = taskproof_matrix::add_files(&mut columns, &args.run, &args.race) {
        return usage(e.to_string());
    }
    // Shards of one run (`run --partition K/N` on several machines) are one column.
    let mut columns = taskproof_matrix::input::merge_shards(columns);
    for (name, spec) in &labels {
        let mut found = false;
        for c in columns.iter_mut().filter(|c| &c.spec == spec) {
            c.label = name.clone();
            found = true;
        }
        if !found {
            return usage(format!(
                "--label {name}={spec}: no column has the target {spec:?}"
            ));
        }
    }

    let mut sources: Vec<String> = Vec::new();
    for d in &args.from {
        if args.target.is_empty() || !same_dir(d, &base) {
            sources.push(format!("--from {}", d.display()));
        }
    }
    if !args.target.is_empty() {
        sources.push(format!("--from {}", args.out.join("matrix").display()));
    }
    for f in &args.run {
        sources.push(format!("--run {}", f.display()));
    }
    for f in &args.race {
        sources.push(format!("--race {}", f.display()));
    }
    let note = format!(
        "Built by taskproof {} from the JSON reports of taskproof run and taskproof race; rebuild with: taskproof maint matrix {}",
        env!("CARGO_PKG_VERSION"),
        sources.join(" ")
    );
    let pages = taskproof_matrix::render(&columns, &note);
    if let Err(e) = std::fs::create_dir_all(&args.out) {
        return usage(format!("cannot create {}: {e}", args.out.display()));
    }
    for (name, text) in [("matrix.md", &pages.markdown), ("matrix.html", &pages.html)] {
        let path = args.out.join(name);
        if let Err(e) = std::fs::write(&path, text) {
            return usage(format!("cannot write {}: {e}", path.display()));
        }
        println!("wrote {}", path.display());
    }
    Ok(Verdict::Clean)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_file_names() {
        for (label, file) in [
            ("claude-code@2.1.17", "claude-code@2.1.17"),
            ("cmd:python3 x.py", "cmd-python3-x.py"),
            ("../..", "target"),
            ("a/b", "a-b"),
        ] {
            assert_eq!(slug(label), file, "{label}");
        }
    }
}
