//! `taskproof run --export DIR`: each failing scenario written out for the store's maintainer,
//! so that the failure reproduces with the store and a shell alone (docs/reports.md,
//! "Exporting failures").
//!
//! `DIR/ID/` holds `README.md` (what failed, the rules, the versions, the command, expected
//! and got: text to paste into an issue), and for a target reached through processes (`cmd:`
//! adapters, `mcp:` servers) what the scenario's sessions really wrote to them and read back
//! (the targets' wire log, [`taskproof_session::wire`]): `process-N.in.jsonl` (the lines sent
//! to process N, in order, to pipe into it), `process-N.out.jsonl` (what it answered),
//! `wire.jsonl` (everything in the order it passed, with the steps and the processes' starts
//! and ends) and `replay.sh`, a POSIX shell script that starts every process as taskproof
//! did, on a fresh folder, and sends each line once the answer to the one before came.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use taskproof_core::rule::Rule;
use taskproof_profile::Profile;
use taskproof_report::result::{Outcome, StepFailure, TargetFailure, TargetInfo};
use taskproof_session::wire::{Event, Launch};

use crate::format::{Action, Scenario, Step};

/// The most processes a replay keeps running at once: each holds one of the shell's file
/// descriptors 3 to 9 (POSIX shells need not offer more).
const MAX_LIVE: usize = 7;

/// What [`write`] needs of the run.
pub(crate) struct Failed<'a> {
    pub scenario: &'a Scenario,
    pub profile: Profile,
    pub target: &'a TargetInfo,
    pub result: &'a Result<Outcome, TargetFailure>,
    pub events: &'a [Event],
    /// What `--profile` the run was given, as `run` takes it (`strict`, `written:s07`, a
    /// recorded profile's name).
    pub profile_flag: String,
    /// What the target's sessions wrote to stderr (the tail, labelled by session).
    pub stderr: &'a str,
}

/// Writes `DIR/ID/` for a failed (or errored) scenario and answers its README's path.
pub(crate) fn write(dir: &Path, f: &Failed<'_>) -> Result<PathBuf, String> {
    let folder = dir.join(folder_name(&f.scenario.id));
    let io = |what: &Path, e: std::io::Error| format!("{}: {e}", what.display());
    if folder.exists() {
        std::fs::remove_dir_all(&folder).map_err(|e| io(&folder, e))?;
    }
    std::fs::create_dir_all(&folder).map_err(|e| io(&folder, e))?;
    let put = |name: &str, text: &str| {
        let path = folder.join(name);
        std::fs::write(&path, text).map_err(|e| io(&path, e))
    };
    let processes = processes(f.events);
    let replay = if processes.is_empty() {
        None
    } else {
        for (n, p) in &processes {
            put(&format!("process-{n}.in.jsonl"), &lines(&p.sent))?;
            put(&format!("process-{n}.out.jsonl"), &lines(&p.got))?;
        }
        put("wire.jsonl", &wire_jsonl(f.events))?;
        let script = script(f);
        if let Ok(s) = &script {
            put("replay.sh", &s.text)?;
        }
        Some(script.map(|s| s.taken))
    };
    if !f.stderr.trim().is_empty() {
        put("stderr.txt", f.stderr)?;
    }
    let readme = folder.join("README.md");
    put("README.md", &readme_text(f, &processes, replay.as_ref()))?;
    Ok(readme)
}

/// A scenario id as one folder name: characters other than letters, digits, `.`, `_` and
/// `-` become `_`.
fn folder_name(id: &str) -> String {
    let name: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    match name.as_str() {
        "" | "." | ".." => format!("scenario{name}"),
        _ => name,
    }
}

/// One process of the scenario: how it started, what it was sent and what it answered.
struct Process {
    launch: Launch,
    sent: Vec<String>,
    got: Vec<String>,
}

fn processes(events: &[Event]) -> BTreeMap<usize, Process> {
    let mut out: BTreeMap<usize, Process> = BTreeMap::new();
    for e in events {
        match e {
            Event::Start { process, launch } => {
                out.insert(
                    *process,
                    Process {
                        launch: launch.clone(),
                        sent: Vec::new(),
                        got: Vec::new(),
                    },
                );
            }
            Event::Sent { process, line } => {
                if let Some(p) = out.get_mut(process) {
                    p.sent.push(line.clone());
                }
            }
            Event::Got { process, line } => {
                if let Some(p) = out.get_mut(process) {
                    p.got.push(line.clone());
                }
            }
            _ => {}
        }
    }
    out
}

fn lines(ls: &[String]) -> String {
    ls.iter().map(|l| format!("{l}\n")).collect()
}

/// A line as JSON when it is, as a string otherwise.
fn as_json(line: &str) -> Value {
    serde_json::from_str(line).unwrap_or_else(|_| Value::String(line.to_string()))
}

fn wire_jsonl(events: &[Event]) -> String {
    let mut out = String::new();
    for e in events {
        let v = match e {
            Event::Step { index, what } => json!({"step": index, "what": what}),
            Event::Start { process, launch } => json!({
                "start": process,
                "script": launch.script,
                "args": launch.args,
                "env": launch.env.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>(),
                "cwd": launch.cwd,
                "root": launch.root,
                "list": launch.list,
            }),
            Event::Sent { process, line } => json!({"process": process, "sent": as_json(line)}),
            Event::Got { process, line } => json!({"process": process, "got": as_json(line)}),
            Event::Closed { process } => json!({"closed": process}),
            Event::Killed { process } => json!({"killed": process}),
        };
        out.push_str(&v.to_string());
        out.push('\n');
    }
    out
}

/// The `taskproof run` line that runs this one scenario again as this run did: the target,
/// its mapping file (an `mcp:` target's hello names it), the profile, and the scenario (by
/// id when it is built in, else by its file's absolute path).
fn rerun_line(f: &Failed<'_>) -> String {
    let s = f.scenario;
    let builtin = crate::builtin::files()
        .iter()
        .any(|(p, _)| std::path::Path::new(p) == s.file);
    let mut line = String::from("taskproof run ");
    if !builtin {
        let path = std::fs::canonicalize(&s.file).unwrap_or_else(|_| s.file.clone());
        line.push_str(&quote(&path.to_string_lossy()));
        line.push(' ');
    }
    line.push_str(&format!("--target {}", quote(&f.target.spec)));
    if let Some(m) = f
        .target
        .hello
        .as_ref()
        .ok()
        .and_then(|h| h.mapping.get("mapping"))
    {
        // As the run found it, from wherever the line is run.
        let m = std::fs::canonicalize(m).map_or_else(|_| m.clone(), |p| p.display().to_string());
        line.push_str(&format!(" --mapping {}", quote(&m)));
    }
    line.push_str(&format!(
        " --profile {} --filter {}",
        quote(&f.profile_flag),
        quote(&s.id)
    ));
    line
}

/// `text` as one shell word in single quotes.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// `text` as one shell word in which the scenario's root reads `$ROOT`.
fn quote_rooted(text: &str, root: &Path) -> String {
    let root = root.to_string_lossy();
    if root.is_empty() {
        return quote(text);
    }
    if text.is_empty() || !text.contains(root.as_ref()) {
        return quote(text);
    }
    text.split(root.as_ref())
        .map(|piece| {
            if piece.is_empty() {
                String::new()
            } else {
                quote(piece)
            }
        })
        .collect::<Vec<_>>()
        .join("\"$ROOT\"")
}

/// The step of the scenario with file index `index`.
fn step_at(s: &Scenario, index: usize) -> Option<&Step> {
    s.steps.iter().find(|st| st.index == index)
}

/// The failures of the result, and a target error as one more (its step and message).
fn failures(
    result: &Result<Outcome, TargetFailure>,
) -> (Vec<&StepFailure>, Option<&TargetFailure>) {
    match result {
        Ok(Outcome::Fail(fs)) => (fs.iter().collect(), None),
        Err(e) => (Vec::new(), Some(e)),
        _ => (Vec::new(), None),
    }
}

/// The steps that failed or that the target failed at, in order.
fn failing_steps(result: &Result<Outcome, TargetFailure>) -> Vec<usize> {
    let (fs, e) = failures(result);
    let mut out: Vec<usize> = fs.iter().filter_map(|f| f.step).collect();
    out.extend(e.and_then(|e| e.step));
    out.sort();
    out.dedup();
    out
}

/// The replay script: every process started as taskproof started it, on `$ROOT` (a fresh
/// folder, or the script's first argument), each line sent when the previous request's
/// answer came, each process ended as taskproof ended it. An error when it cannot be one.
fn script(f: &Failed<'_>) -> Result<Script, String> {
    let failing = failing_steps(f.result);
    let (fails, error) = failures(f.result);
    let mut out = String::new();
    let w = &mut out;
    let _ = writeln!(w, "#!/bin/sh");
    let _ = writeln!(
        w,
        "# Replays scenario {} of taskproof {} against {} with nothing but this shell and the",
        f.scenario.id,
        env!("CARGO_PKG_VERSION"),
        f.target.spec
    );
    let _ = writeln!(
        w,
        "# processes it started (README.md beside it says what failed). Each process starts as\n\
         # taskproof started it, on a fresh folder; each line is sent once the answer to the one\n\
         # before came. It prints every line sent (-> [N]) and got (<- [N]) for process N.\n\
         #\n\
         #   sh replay.sh [ROOT]    # ROOT: an empty folder for the store [default: a new one]\n\
         #\n\
         # REPLAY_TIMEOUT (seconds, default 30) bounds the wait for each answer."
    );
    let _ = writeln!(w, "set -u");
    let _ = writeln!(w, "ROOT=${{1:-$(mktemp -d)}}");
    let _ = writeln!(w, "mkdir -p \"$ROOT\" || exit 2");
    let _ = writeln!(w, "ROOT=$(cd \"$ROOT\" && pwd) || exit 2");
    let _ = writeln!(w, "W=$(mktemp -d) || exit 2");
    let _ = writeln!(w, "LIMIT=${{REPLAY_TIMEOUT:-30}}");
    let _ = writeln!(w, "echo \"# root: $ROOT\"");
    w.push_str(SCRIPT_FUNCTIONS);
    w.push_str(&answers(f.events));
    // Which descriptor each live process's stdin is held on.
    let mut fds: BTreeMap<usize, u8> = BTreeMap::new();
    let mut captures = Captures::default();
    // What taskproof's run got: the JSON-RPC responses by process and id, and how many lines
    // each process answered; and how many requests the script has sent each so far.
    let mut answered = std::collections::BTreeSet::new();
    let mut lines_got: BTreeMap<usize, usize> = BTreeMap::new();
    for e in f.events {
        if let Event::Got { process, line } = e {
            *lines_got.entry(*process).or_default() += 1;
            let msg = as_json(line);
            if let (None, Some(id)) = (msg.get("method"), msg.get("id")) {
                answered.insert((*process, id.to_string()));
            }
        }
    }
    let mut requests: BTreeMap<usize, usize> = BTreeMap::new();
    for e in f.events {
        match e {
            Event::Step { index, .. } => {
                let Some(step) = step_at(f.scenario, *index) else {
                    continue;
                };
                let _ = writeln!(
                    w,
                    "\nsay {}",
                    quote(&format!("# steps[{index}] {}", words(step)))
                );
                if failing.contains(index) {
                    for fl in fails.iter().filter(|fl| fl.step == Some(*index)) {
                        let _ = writeln!(
                            w,
                            "say {}",
                            quote(&format!(
                                "# taskproof judged this step: expected {}; got {}",
                                fl.expected, fl.actual
                            ))
                        );
                    }
                    if let Some(e) = error.filter(|e| e.step == Some(*index)) {
                        let _ = writeln!(
                            w,
                            "say {}",
                            quote(&format!("# taskproof's error at this step: {}", e.message))
                        );
                    }
                }
                if let Action::Wait(d) = &step.action {
                    let _ = writeln!(w, "sleep {}", d.as_secs_f64());
                }
            }
            Event::Start { process, launch } => {
                let free = (3..=9u8).find(|fd| !fds.values().any(|used| used == fd));
                let Some(fd) = free else {
                    return Err(format!(
                        "more than {MAX_LIVE} processes run at once, more than a shell script \
                         can hold open"
                    ));
                };
                fds.insert(*process, fd);
                let root = &launch.root;
                let mut env = String::new();
                for (k, v) in &launch.env {
                    let _ = write!(env, " {k}={}", quote_rooted(v, root));
                }
                let args: String = launch
                    .args
                    .iter()
                    .map(|a| format!(" {}", quote_rooted(a, root)))
                    .collect();
                let cd = match &launch.cwd {
                    Some(c) => {
                        let c = quote_rooted(&c.to_string_lossy(), root);
                        format!("mkdir -p {c} && cd {c} && ")
                    }
                    None => String::new(),
                };
                let what = match &launch.list {
                    Some(l) => format!("process {process}: the server of list {l}"),
                    None => format!("process {process}"),
                };
                let _ = writeln!(w, "\nsay {}", quote(&format!("# {what} starts")));
                let _ = writeln!(
                    w,
                    "mkfifo \"$W/{process}.in\" && : > \"$W/{process}.out\" || exit 2"
                );
                let _ = writeln!(
                    w,
                    "( exec 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-; {cd}exec env{env} sh -c {} sh{args} ) <\"$W/{process}.in\" >>\"$W/{process}.out\" 2>\"$W/{process}.err\" &",
                    quote_rooted(&launch.script, root),
                );
                let _ = writeln!(
                    w,
                    "P{process}=$!; PIDS=\"$PIDS $P{process}\"; N{process}=0; R{process}=0"
                );
                let _ = writeln!(w, "exec {fd}>\"$W/{process}.in\"");
            }
            Event::Sent { process, line } => {
                let Some(fd) = fds.get(process) else { continue };
                // An answer to a request of the server's: the script's `serve` gives it when
                // the replay's server asks.
                let msg = as_json(line);
                if msg.get("jsonrpc").is_some() && msg.get("method").is_none() {
                    continue;
                }
                let root = processes_root(f.events, *process).unwrap_or_default();
                let word = captures.sent(w, *process, line, &root);
                let _ = writeln!(w, "send {process} {fd} {word}");
                // Waits for the answer, when taskproof's run got one (a request cut short by a
                // kill is only sent).
                let msg = as_json(line);
                let asked = requests.entry(*process).or_default();
                *asked += 1;
                if msg.get("jsonrpc").is_some() {
                    if let (Some(_), Some(id)) = (msg.get("method"), msg.get("id"))
                        && answered.contains(&(*process, id.to_string()))
                    {
                        let _ = writeln!(w, "await_id {process} {fd} {}", quote(&id.to_string()));
                    }
                } else if lines_got.get(process).is_some_and(|n| *n >= *asked) {
                    let _ = writeln!(w, "await_line {process}");
                }
            }
            Event::Got { process, line } => captures.got(*process, line),
            Event::Closed { process } | Event::Killed { process } => {
                let Some(fd) = fds.remove(process) else {
                    continue;
                };
                let how = if matches!(e, Event::Killed { .. }) {
                    "killed"
                } else {
                    "closed"
                };
                let _ = writeln!(w, "exec {fd}>&-");
                let _ = writeln!(w, "{how} {process} \"$P{process}\"");
            }
        }
    }
    let _ = writeln!(w, "\nfinish");
    Ok(Script {
        text: out,
        taken: captures.vars.into_keys().collect(),
    })
}

/// A replay script, and the values it takes from the replay's own answers.
struct Script {
    text: String,
    taken: Vec<String>,
}

/// Whether `c` is part of a token: what an id or a time is made of.
fn token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-')
}

/// The tokens of `text` (maximal runs of [`token_char`]), each with where it starts.
fn tokens(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        match (token_char(c), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                out.push((s, &text[s..i]));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, &text[s..]));
    }
    out
}

/// Whether a token may be something the store made up (an id, a time), when it came back
/// in an answer before it was sent: four characters or more, with a letter or digit, and not
/// a short number (which a store hands out in order, the same again in a replay). Words the
/// store knows beforehand are in its tool list, never taken ([`Captures::fixed`]); words of
/// the scenario's were sent before any answer held them.
fn made_up(t: &str) -> bool {
    t.len() >= 4
        && t.bytes().any(|b| b.is_ascii_alphanumeric())
        && (t.len() >= 6 || !t.bytes().all(|b| b.is_ascii_digit()))
}

/// Every string in `v`, outside the keys `skip`.
fn strings<'v>(v: &'v Value, skip: &[&str], out: &mut Vec<&'v str>) {
    match v {
        Value::String(s) => out.push(s),
        Value::Array(a) => a.iter().for_each(|x| strings(x, skip, out)),
        Value::Object(m) => m
            .iter()
            .filter(|(k, _)| !skip.contains(&k.as_str()))
            .for_each(|(_, x)| strings(x, skip, out)),
        _ => {}
    }
}

/// Which answer of a process a value is taken from.
enum Answer {
    /// The JSON-RPC response with this id (as JSON text).
    Id(String),
    /// The line with this number, from 1 (an adapter's answers, one per request).
    Line(usize),
}

/// Values the store made up (ids, times) that later lines send back: a replay takes each from
/// its own answer, at the same place, instead of sending the recorded one, which its store
/// never made.
#[derive(Default)]
struct Captures {
    /// Every token of the lines sent so far.
    sent: std::collections::BTreeSet<String>,
    /// Tokens of the answers to the handshake and the tool list: never taken.
    fixed: std::collections::BTreeSet<String>,
    /// The answers a value may be taken from, in order: process, which answer, its text.
    got: Vec<(usize, Answer, String)>,
    /// Lines got so far, per process.
    counts: BTreeMap<usize, usize>,
    /// The method of each JSON-RPC request, by process and id.
    methods: BTreeMap<(usize, String), String>,
    /// Token → the shell variable that holds the replay's value.
    vars: BTreeMap<String, String>,
}

impl Captures {
    fn got(&mut self, process: usize, line: &str) {
        let n = self.counts.entry(process).or_default();
        *n += 1;
        let msg = as_json(line);
        let answer = match msg.get("id") {
            Some(id) if msg.get("jsonrpc").is_some() => {
                let id = id.to_string();
                let method = self.methods.get(&(process, id.clone()));
                if method.is_some_and(|m| m != "tools/call") {
                    self.fixed
                        .extend(tokens(line).into_iter().map(|(_, t)| t.to_string()));
                    return;
                }
                Answer::Id(id)
            }
            _ => Answer::Line(*n),
        };
        self.got.push((process, answer, line.to_string()));
    }

    /// Line `line` sent to `process`, as one shell word: the root reads `$ROOT`, and each
    /// value taken from an earlier answer its variable, set by what this writes to `w` first.
    fn sent(&mut self, w: &mut String, process: usize, line: &str, root: &Path) -> String {
        let msg = as_json(line);
        let mut payload = Vec::new();
        if msg.get("jsonrpc").is_some() {
            if let (Some(Value::String(method)), Some(id)) = (msg.get("method"), msg.get("id")) {
                self.methods
                    .insert((process, id.to_string()), method.clone());
            }
            if msg.get("method").and_then(Value::as_str) == Some("tools/call") {
                strings(&msg["params"]["arguments"], &[], &mut payload);
            }
        } else {
            strings(&msg, &["op"], &mut payload);
        }
        for text in payload {
            for (_, t) in tokens(text) {
                if made_up(t)
                    && !self.sent.contains(t)
                    && !self.fixed.contains(t)
                    && !self.vars.contains_key(t)
                    && let Some(pick) = self.find(t)
                {
                    let var = format!("V{}", self.vars.len() + 1);
                    let _ = writeln!(
                        w,
                        "{var}=$(pick {pick}); [ -n \"${var}\" ] || {var}={}",
                        quote(t)
                    );
                    self.vars.insert(t.to_string(), var);
                }
            }
        }
        self.sent
            .extend(tokens(line).into_iter().map(|(_, t)| t.to_string()));
        self.word(line, root)
    }

    /// Where the first answer that holds token `t` (as a whole token) has it: the arguments
    /// of the script's `pick` (process, answer, the text from the token before it, and which
    /// occurrence of that text it follows).
    fn find(&self, t: &str) -> Option<String> {
        for (process, answer, line) in &self.got {
            let all = tokens(line);
            for (k, &(start, token)) in all.iter().enumerate() {
                if token != t {
                    continue;
                }
                // The text from the word before it (a key, say: no digit, so not an id or a
                // time itself).
                let Some(&(from, before)) = all[..k]
                    .iter()
                    .rev()
                    .find(|(_, w)| w.bytes().any(|b| b.is_ascii_alphanumeric()))
                else {
                    continue;
                };
                if before.bytes().any(|b| b.is_ascii_digit()) {
                    continue;
                }
                let prefix = &line[from..start];
                // Which occurrence of the prefix, counted as the script's awk counts them.
                let mut at = 0;
                let mut occurrence = 0;
                let found = loop {
                    match line[at..].find(prefix) {
                        Some(i) if at + i + prefix.len() == start => break true,
                        Some(i) if at + i + prefix.len() < start => {
                            occurrence += 1;
                            at += i + prefix.len();
                        }
                        _ => break false,
                    }
                };
                if !found {
                    continue;
                }
                let which = match answer {
                    Answer::Id(id) => format!("id {}", quote(id)),
                    Answer::Line(n) => format!("line {n}"),
                };
                return Some(format!("{process} {which} {} {occurrence}", quote(prefix)));
            }
        }
        None
    }

    /// `text` as one shell word in which the root reads `$ROOT` and each taken value its
    /// variable.
    fn word(&self, text: &str, root: &Path) -> String {
        let root = root.to_string_lossy();
        let mut out = String::new();
        let mut literal = String::new();
        let flush = |literal: &mut String, out: &mut String| {
            if !literal.is_empty() {
                out.push_str(&quote(literal));
                literal.clear();
            }
        };
        let mut i = 0;
        let mut boundary = true;
        while i < text.len() {
            let rest = &text[i..];
            if !root.is_empty() && rest.starts_with(root.as_ref()) {
                flush(&mut literal, &mut out);
                out.push_str("\"$ROOT\"");
                i += root.len();
                boundary = true;
                continue;
            }
            let c = rest.chars().next().expect("not at the end");
            if boundary && token_char(c) {
                let len = rest.find(|c: char| !token_char(c)).unwrap_or(rest.len());
                if let Some(var) = self.vars.get(&rest[..len]) {
                    flush(&mut literal, &mut out);
                    let _ = write!(out, "\"${var}\"");
                    i += len;
                    boundary = false;
                    continue;
                }
            }
            literal.push(c);
            boundary = !token_char(c);
            i += c.len_utf8();
        }
        flush(&mut literal, &mut out);
        if out.is_empty() { quote("") } else { out }
    }
}

/// The root of process `n`'s launch.
fn processes_root(events: &[Event], n: usize) -> Option<PathBuf> {
    events.iter().find_map(|e| match e {
        Event::Start { process, launch } if *process == n => Some(launch.root.clone()),
        _ => None,
    })
}

/// The script's `answer`: the result (or error) of each request a server made of the
/// client, by method, as taskproof's MCP client answered it first; what it answers those it
/// was never asked (no roots, a pong, no such method) otherwise.
fn answers(events: &[Event]) -> String {
    let mut asked: BTreeMap<(usize, String), String> = BTreeMap::new();
    let mut answered: BTreeMap<String, String> = BTreeMap::new();
    for e in events {
        match e {
            Event::Got { process, line } => {
                let msg = as_json(line);
                if let (Some(Value::String(m)), Some(id)) = (msg.get("method"), msg.get("id")) {
                    asked.insert((*process, id.to_string()), m.clone());
                }
            }
            Event::Sent { process, line } => {
                let msg = as_json(line);
                if msg.get("method").is_some() {
                    continue;
                }
                let Some(id) = msg.get("id") else { continue };
                let Some(m) = asked.get(&(*process, id.to_string())) else {
                    continue;
                };
                let part = ["result", "error"]
                    .into_iter()
                    .find_map(|k| msg.get(k).map(|v| format!("\"{k}\":{v}")));
                if let Some(part) = part {
                    answered.entry(m.clone()).or_insert(part);
                }
            }
            _ => {}
        }
    }
    let mut out = String::from(
        "# What taskproof's MCP client answered a request of the server's.\nanswer() {\n  case $1 in\n",
    );
    for (m, part) in &answered {
        let _ = writeln!(out, "    {}) printf '%s' {} ;;", quote(m), quote(part));
    }
    out.push_str(
        "    roots/list) printf '%s' '\"result\":{\"roots\":[]}' ;;\n    \
         ping) printf '%s' '\"result\":{}' ;;\n    \
         *) printf '%s' '\"error\":{\"code\":-32601,\"message\":\"Method not found\"}' ;;\n  \
         esac\n}\n",
    );
    out
}

/// The shell functions of every replay script.
const SCRIPT_FUNCTIONS: &str = r##"PIDS=
# (Shell variables are global: each function's own start with its name.)
say() { printf '%s\n' "$1"; }
# The lines of process $1 from line $2 + 1 on, printed; N$1 becomes how many it has.
show() {
  show_n=$(wc -l < "$W/$1.out" | tr -d ' ')
  if [ "$show_n" -gt "$2" ]; then sed -n "$(( $2 + 1 )),${show_n}p" "$W/$1.out" | sed "s/^/<- [$1] /"; fi
  eval "N$1=$show_n"
}
send() { printf '%s\n' "$3" >&"$2" && printf -- '-> [%s] %s\n' "$1" "$3"; }
# Process $1's response with JSON-RPC id $2 (not a request of its own with that id).
response() {
  grep -e "\"id\":$2[,}]" -e "\"id\": $2[,}]" "$W/$1.out" | grep -v '"method":"' | head -n 1
}
# Answers the requests process $1 made of the client (its lines from R$1 + 1 on that have a
# method and an id) on descriptor $2, as taskproof's MCP client answered them (`answer`).
serve() {
  eval "serve_r=\$R$1"
  serve_n=$(wc -l < "$W/$1.out" | tr -d ' ')
  [ "$serve_r" -lt "$serve_n" ] || return 0
  eval "R$1=$serve_n"
  serve_a=$(sed -n "$(( serve_r + 1 )),${serve_n}p" "$W/$1.out" | awk '
    /"method":"notifications\// { next }
    /"method":"/ {
      m = $0; sub(/.*"method":"/, "", m); sub(/".*/, "", m)
      i = $0; if (!sub(/.*"id": */, "", i)) next; sub(/[,}].*/, "", i)
      print m, i
    }')
  [ -n "$serve_a" ] || return 0
  eval "show $1 \$N$1"
  printf '%s\n' "$serve_a" | while read -r serve_m serve_id; do
    send "$1" "$2" "{\"jsonrpc\":\"2.0\",\"id\":$serve_id,$(answer "$serve_m")}"
  done
}
# Waits for process $1's answer with JSON-RPC id $3 (printing what comes before it), answering
# its requests on descriptor $2 meanwhile.
await_id() {
  await_end=$(( $(date +%s) + LIMIT ))
  while serve "$1" "$2"; [ -z "$(response "$1" "$3")" ]; do
    if [ "$(date +%s)" -gt "$await_end" ]; then eval "show $1 \$N$1"; say "# no answer from process $1 within $LIMIT s; stopping"; finish 1; fi
    sleep 0.05
  done
  eval "show $1 \$N$1"
}
# Waits for one more line from process $1 (an adapter answers each request with one line).
await_line() {
  eval "await_k=\$N$1"; await_end=$(( $(date +%s) + LIMIT ))
  while [ "$(wc -l < "$W/$1.out" | tr -d ' ')" -le "$await_k" ]; do
    if [ "$(date +%s)" -gt "$await_end" ]; then say "# no answer from process $1 within $LIMIT s; stopping"; finish 1; fi
    sleep 0.05
  done
  show "$1" "$await_k"
}
# The token after the (OCC+1)-th PREFIX in process P's answer with JSON-RPC id KEY (id) or
# on line KEY (line): a value the store made up, taken from this run's answer.
pick() { # P id|line KEY PREFIX OCC
  if [ "$2" = id ]; then
    pick_l=$(response "$1" "$3")
  else
    pick_l=$(sed -n "$3p" "$W/$1.out")
  fi
  printf '%s\n' "$pick_l" | PRE=$4 OCC=$5 awk '{
    s = $0; pre = ENVIRON["PRE"]; n = ENVIRON["OCC"] + 0
    while (n-- >= 0) { p = index(s, pre); if (!p) exit; s = substr(s, p + length(pre)) }
    if (match(s, /^[A-Za-z0-9._:-]+/)) print substr(s, 1, RLENGTH)
    exit
  }'
}
# A process and everything it started.
tree() {
  echo "$1"
  for tree_c in $(ps -A -o pid= -o ppid= | awk -v p="$1" '$2 == p { print $1 }'); do tree "$tree_c"; done
}
# Ends process $1 (pid $2) as taskproof killed it: the process and everything it started.
killed() {
  eval "show $1 \$N$1"
  command kill -KILL $(tree "$2") 2>/dev/null
  wait "$2" 2>/dev/null
  say "# process $1 killed"
}
# Ends process $1 (pid $2) as taskproof closed it: its input is closed (by the caller); it may
# take a moment to exit, then whatever is left of it is killed.
closed() {
  closed_i=0
  while command kill -0 "$2" 2>/dev/null && [ "$closed_i" -lt 40 ]; do closed_i=$(( closed_i + 1 )); sleep 0.05; done
  eval "show $1 \$N$1"
  command kill -KILL $(tree "$2") 2>/dev/null
  wait "$2" 2>/dev/null
  say "# process $1 ended at the end of its input"
}
finish() {
  for finish_p in $PIDS; do command kill -KILL $(tree "$finish_p") 2>/dev/null; done
  for finish_f in "$W"/*.err; do
    [ -s "$finish_f" ] || continue
    say "# stderr of process $(basename "$finish_f" .err):"; sed 's/^/#   /' "$finish_f"
  done
  rm -rf "$W"
  say "# the store's folder is kept: $ROOT"
  exit "${1:-0}"
}
"##;

/// A step, in a few words, for the script and the report.
fn words(step: &Step) -> String {
    let session = |s: &str| {
        if s == "main" {
            String::new()
        } else {
            format!(" (session {s})")
        }
    };
    match &step.action {
        Action::Send { request, .. } => format!("send {request}{}", session(&step.session)),
        Action::Open(s) => format!("open session {s}"),
        Action::Restart(s) => format!("restart session {s}"),
        Action::Kill(s) => format!("kill session {s}"),
        Action::Close(s) => format!("close session {s}"),
        Action::Wait(d) => format!("wait {} s", d.as_secs_f64()),
        Action::Event { event, session } => format!("{event} (session {session})"),
        Action::Check { list, .. } => format!("check list {list}{}", session(&step.session)),
        Action::Concurrent(c) => format!("{} lanes at once", c.lanes.len()),
        other => action_word(other).to_string(),
    }
}

/// The step's action, as its key in a scenario file.
pub(crate) fn action_word(a: &Action) -> &'static str {
    match a {
        Action::Send { .. } => "send",
        Action::Open(_) => "open",
        Action::Restart(_) => "restart",
        Action::Kill(_) => "kill",
        Action::Close(_) => "close",
        Action::Wait(_) => "wait",
        Action::Event { .. } => "session event",
        Action::WriteTask { .. } => "write_task",
        Action::WriteFile { .. } => "write_file",
        Action::OutsideFile { .. } => "outside_file",
        Action::Symlink { .. } => "symlink",
        Action::Mkdir(_) => "mkdir",
        Action::RemoveFile(_) => "remove_file",
        Action::AssertFile { .. } => "assert_file",
        Action::AssertOutside { .. } => "assert_outside",
        Action::Check { .. } => "check",
        Action::Concurrent(_) => "concurrent",
    }
}

/// What a replay by pipe cannot do of the scenario's steps (up to the last that failed),
/// each in a sentence.
fn limits(f: &Failed<'_>) -> Vec<String> {
    let last = failing_steps(f.result).last().copied();
    let mut out = Vec::new();
    for step in f.scenario.steps_for(f.profile) {
        if last.is_some_and(|l| step.index > l) {
            break;
        }
        let i = step.index;
        match &step.action {
            Action::Concurrent(c) => out.push(format!(
                "steps[{i}] runs {} lanes at once; the script sends their lines one at a time, \
                 in the order taskproof's sessions sent them, so a failure that needs the \
                 requests to overlap may not show.",
                c.lanes.len()
            )),
            Action::Wait(d) => out.push(format!(
                "steps[{i}] lets {} s pass; the script sleeps as long, but what a store does \
                 while idle may take longer or shorter on another machine.",
                d.as_secs_f64()
            )),
            Action::Event { event, session } => out.push(format!(
                "steps[{i}] is a user's `{event}` of session {session}; the script only ends \
                 or starts processes as taskproof did."
            )),
            a @ (Action::WriteTask { .. }
            | Action::WriteFile { .. }
            | Action::OutsideFile { .. }
            | Action::Symlink { .. }
            | Action::Mkdir(_)
            | Action::RemoveFile(_)) => out.push(format!(
                "steps[{i}] ({}) changes files under the root itself, as another program \
                 would; the script does not, so what follows it may answer otherwise (the \
                 step as written: `{}`).",
                action_word(a),
                step.raw
            )),
            a @ (Action::AssertFile { .. } | Action::AssertOutside { .. }) => out.push(format!(
                "steps[{i}] ({}) judges the files, not an answer: after the script, look \
                     under the folder it names (`{}`).",
                action_word(a),
                step.raw
            )),
            _ => {}
        }
    }
    let (fails, _) = failures(f.result);
    if fails.iter().any(|fl| fl.step.is_none()) {
        out.push(
            "taskproof also watched the sandbox around the root for changes (S13); the \
             script does not: look beside the folder it prints."
                .into(),
        );
    }
    out
}

fn readme_text(
    f: &Failed<'_>,
    processes: &BTreeMap<usize, Process>,
    replay: Option<&Result<Vec<String>, String>>,
) -> String {
    let s = f.scenario;
    let (fails, error) = failures(f.result);
    let mut rules: Vec<Rule> = fails.iter().flat_map(|fl| fl.rules.clone()).collect();
    if rules.is_empty() {
        rules = s.rules.clone();
    }
    rules.sort();
    rules.dedup();
    let rule_text = rules
        .iter()
        .map(|r| format!("{r} ({})", r.title()))
        .collect::<Vec<_>>()
        .join(", ");
    let hello = f.target.hello.as_ref().ok();
    let product = hello
        .map(|h| format!("{} {}", h.name, h.version).trim().to_string())
        .unwrap_or_else(|| f.target.spec.clone());
    let mut w = String::new();
    let verdict = if error.is_some() && fails.is_empty() {
        "breaks the protocol in"
    } else {
        "fails"
    };
    let _ = writeln!(w, "# {product} {verdict} `{}`: {}\n", s.id, s.title);
    let _ = writeln!(
        w,
        "Found by taskproof {} (`taskproof run --export`), profile `{}`.\n",
        env!("CARGO_PKG_VERSION"),
        f.profile
    );
    let _ = writeln!(w, "- **Rules:** {rule_text}");
    let _ = writeln!(w, "- **Target:** `{}`", f.target.spec);
    if let Some(h) = hello {
        let _ = writeln!(
            w,
            "- **Version:** {} {} (its hello)",
            h.name,
            if h.version.is_empty() {
                "(no version given)"
            } else {
                &h.version
            }
        );
        for key in ["server", "mapping"] {
            if let Some(v) = h.mapping.get(key) {
                let _ = writeln!(w, "- **{key}:** {v}");
            }
        }
    }
    let _ = writeln!(
        w,
        "- **Scenario:** `{}` ({}){}",
        s.id,
        s.file.display(),
        s.source
            .as_ref()
            .map(|src| format!(", after {src}"))
            .unwrap_or_default()
    );
    let _ = writeln!(w, "\n## What failed\n");
    for fl in &fails {
        match fl.step {
            Some(i) => {
                let _ = writeln!(
                    w,
                    "steps[{i}]{}: {}\n",
                    fl.session
                        .as_ref()
                        .filter(|s| *s != "main")
                        .map(|s| format!(" (session {s})"))
                        .unwrap_or_default(),
                    fl.reason
                );
            }
            None => {
                let _ = writeln!(w, "after the last step: {}\n", fl.reason);
            }
        }
        let _ = writeln!(w, "```");
        if let Some(r) = &fl.request {
            let _ = writeln!(w, "request:  {r}");
        }
        let _ = writeln!(w, "expected: {}", fl.expected);
        let _ = writeln!(w, "got:      {}", fl.actual);
        let _ = writeln!(w, "```\n");
        if let Some(n) = &fl.note {
            let _ = writeln!(w, "Note: {n}\n");
        }
    }
    if let Some(e) = error {
        let _ = writeln!(
            w,
            "{}the target failed: {}\n",
            e.step.map(|i| format!("steps[{i}]: ")).unwrap_or_default(),
            e.message
        );
        if let Some(r) = &e.request {
            let _ = writeln!(w, "```\nrequest:  {r}\n```\n");
        }
    }
    let _ = writeln!(
        w,
        "The request, expected and got are taskproof's adapter protocol (the README of \
         taskproof, \"The adapter protocol\"); the lines below are what the store itself was \
         sent and answered.\n"
    );
    if !f.stderr.trim().is_empty() {
        let _ = writeln!(
            w,
            "What the store wrote to stderr (its tail, by session; also in `stderr.txt`):\n"
        );
        let _ = writeln!(w, "```\n{}\n```\n", f.stderr.trim_end());
    }
    let _ = writeln!(w, "## To reproduce\n");
    let _ = writeln!(
        w,
        "With taskproof, as this run did:\n\n```sh\n{}\n```\n",
        rerun_line(f)
    );
    match replay {
        None => {
            let _ = writeln!(
                w,
                "`{}` runs inside taskproof, with no process to send lines to; the steps are \
                 those of the scenario file above.\n",
                f.target.spec
            );
        }
        Some(Err(why)) => {
            let _ = writeln!(
                w,
                "No replay script: {why}. The lines each process was sent and answered are in \
                 `process-N.in.jsonl` and `process-N.out.jsonl`, all of them in order in \
                 `wire.jsonl`.\n"
            );
        }
        Some(Ok(taken)) => {
            let _ = writeln!(
                w,
                "With nothing but the store and a POSIX shell, from this folder:\n\n```sh\nsh \
                 replay.sh\n```\n\nIt starts {} as taskproof did, on a fresh folder (or the \
                 one given as its argument), and sends each line once the answer to the one \
                 before came; it prints every line sent (`-> [N]`) and got (`<- [N]`), and \
                 before each step what taskproof judged at it.\n",
                match processes.len() {
                    1 => "the process".to_string(),
                    n => format!("the {n} processes, in order,"),
                }
            );
            if !taken.is_empty() {
                let shown: Vec<String> = taken.iter().take(5).map(|t| format!("`{t}`")).collect();
                let _ = writeln!(
                    w,
                    "The store made up values in taskproof's run that later lines send back \
                     ({}{}); the script takes each from its own run's answer, at the same \
                     place, so the recorded lines piped in as they are would not reproduce \
                     this.\n",
                    shown.join(", "),
                    if taken.len() > shown.len() {
                        format!(" and {} more", taken.len() - shown.len())
                    } else {
                        String::new()
                    }
                );
            } else if let Some((n, p)) = processes.iter().next() {
                let _ = writeln!(
                    w,
                    "Or by hand, all at once{}:\n\n```sh\n{}\n```\n",
                    if processes.len() > 1 {
                        format!(" (process {n} only)")
                    } else {
                        String::new()
                    },
                    pipe_command(
                        *n,
                        &p.launch,
                        p.sent
                            .iter()
                            .any(|l| l.contains(p.launch.root.to_string_lossy().as_ref()))
                    )
                );
            }
        }
    }
    if !processes.is_empty() {
        let failing = failing_steps(f.result);
        let at = lines_of_steps(f.events, &failing);
        if !at.is_empty() {
            let _ = writeln!(
                w,
                "What the failing step{} sent and got:\n",
                plural(failing.len())
            );
            let _ = writeln!(w, "```");
            for l in at {
                let _ = writeln!(w, "{l}");
            }
            let _ = writeln!(w, "```\n");
        }
        let _ = writeln!(w, "Processes:\n");
        for (n, p) in processes {
            let _ = writeln!(
                w,
                "- {n}: `sh -c {}`{}{}; {} line{} sent (`process-{n}.in.jsonl`), {} got \
                 (`process-{n}.out.jsonl`)",
                quote(&p.launch.script),
                if p.launch.args.is_empty() {
                    String::new()
                } else {
                    format!(" with the words {:?}", p.launch.args)
                },
                p.launch
                    .list
                    .as_ref()
                    .map(|l| format!(", the server of list {l}"))
                    .unwrap_or_default(),
                p.sent.len(),
                plural(p.sent.len()),
                p.got.len()
            );
        }
        let _ = writeln!(w);
    }
    let limits = limits(f);
    if !limits.is_empty() {
        let _ = writeln!(w, "## What a replay by pipe cannot do here\n");
        for l in limits {
            let _ = writeln!(w, "- {l}");
        }
        let _ = writeln!(w);
    }
    w
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// The lines sent and got while the steps `steps` ran, each marked with its process.
fn lines_of_steps(events: &[Event], steps: &[usize]) -> Vec<String> {
    let mut inside = false;
    let mut out = Vec::new();
    for e in events {
        match e {
            Event::Step { index, .. } => inside = steps.contains(index),
            Event::Sent { process, line } if inside => out.push(format!("-> [{process}] {line}")),
            Event::Got { process, line } if inside => out.push(format!("<- [{process}] {line}")),
            _ => {}
        }
    }
    out
}

/// A one-line pipe of process `n`'s lines into it, on a fresh folder; `rooted`: some of them
/// name the scenario's root.
fn pipe_command(n: usize, launch: &Launch, rooted: bool) -> String {
    let root = &launch.root;
    let mut env = String::new();
    for (k, v) in &launch.env {
        let _ = write!(env, "{k}={} ", quote_rooted(v, root));
    }
    let args: String = launch
        .args
        .iter()
        .map(|a| format!(" {}", quote_rooted(a, root)))
        .collect();
    let cd = launch
        .cwd
        .as_ref()
        .map(|c| {
            let c = quote_rooted(&c.to_string_lossy(), root);
            format!("mkdir -p {c} && cd {c} && ")
        })
        .unwrap_or_default();
    // Lines that name the scenario's root name the new one.
    let input = if rooted {
        format!(
            "sed \"s|{}|$ROOT|g\" \"$IN\" | ",
            launch.root.to_string_lossy().replace('|', "\\|")
        )
    } else {
        String::new()
    };
    let from = if rooted { "" } else { " < \"$IN\"" };
    format!(
        "ROOT=$(mktemp -d); IN=$PWD/process-{n}.in.jsonl\n{input}({cd}{env}sh -c {} sh{args}{from})",
        quote_rooted(&launch.script, root)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A made-up value is taken from the first answer that has it, after the text just before
    /// it and counting that text's earlier occurrences; a line that sends it back reads the
    /// variable there, and only where the whole token is the value.
    #[test]
    fn made_up_values_are_found_in_the_answer_and_replaced_as_whole_tokens() {
        let mut c = Captures::default();
        let root = Path::new("/tmp/root-x");
        let mut w = String::new();
        c.sent(
            &mut w,
            1,
            r#"{"op":"create","list":"l","task":{"subject":"a"}}"#,
            root,
        );
        c.got(
            1,
            r#"{"ok":true,"task":{"id":"20240001","blockedBy":["20240000"]}}"#,
        );
        c.got(1, r#"{"ok":true,"tasks":[{"id":"x1"},{"id":"abc-77"}]}"#);
        assert!(w.is_empty(), "{w}");
        let line = r#"{"op":"get","list":"l","id":"abc-77","note":"abc-777 in /tmp/root-x/f"}"#;
        let word = c.sent(&mut w, 1, line, root);
        // After the second `id":"` of the second answer (the one before is occurrence 0).
        assert_eq!(
            w,
            "V1=$(pick 1 line 2 'id\":\"' 1); [ -n \"$V1\" ] || V1='abc-77'\n"
        );
        assert_eq!(
            word,
            r#"'{"op":"get","list":"l","id":"'"$V1"'","note":"abc-777 in '"$ROOT"'/f"}'"#
        );
        // A short number is what a store hands out in order: sent as it was.
        assert!(!made_up("12") && !made_up("4711") && !made_up("x1") && !made_up("--:-"));
        assert!(made_up("20240001") && made_up("task-6bbb4882") && made_up("hnipdowj"));
    }

    /// The text a value is found after starts at the word before it, which may have letters
    /// and `_` (a key like `task_id`) but no digit (that could be a made-up value itself).
    #[test]
    fn a_value_is_found_after_the_key_before_it() {
        let mut c = Captures::default();
        let mut w = String::new();
        let root = Path::new("/r");
        c.sent(&mut w, 1, r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"create_task","arguments":{"title":"a"}}}"#, root);
        c.got(1, r#"{"result":{"content":[{"type":"text","text":"{\n  \"ref-7a\": 1, \"task_id\": \"task-6bbb4882\"\n}"}]},"jsonrpc":"2.0","id":2}"#);
        c.sent(&mut w, 1, r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_task","arguments":{"task_id":"task-6bbb4882"}}}"#, root);
        assert_eq!(
            w,
            "V1=$(pick 1 id '2' 'task_id\\\": \\\"' 0); [ -n \"$V1\" ] || V1='task-6bbb4882'\n"
        );
    }
}
