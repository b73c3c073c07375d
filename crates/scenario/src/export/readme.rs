//! `README.md`: what failed, the rules, the versions, the command, expected and got, as
//! text to paste into an issue.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use taskproof_core::rule::Rule;
use taskproof_report::result::{Outcome, StepFailure, TargetFailure};
use taskproof_session::wire::Event;

use crate::format::{Action, Scenario, Step};

use super::*;

/// The step of the scenario with file index `index`.
pub(super) fn step_at(s: &Scenario, index: usize) -> Option<&Step> {
    s.steps.iter().find(|st| st.index == index)
}

/// The failures of the result, and a target error as one more (its step and message).
pub(super) fn failures(
    result: &Result<Outcome, TargetFailure>,
) -> (Vec<&StepFailure>, Option<&TargetFailure>) {
    match result {
        Ok(Outcome::Fail(fs)) => (fs.iter().collect(), None),
        Err(e) => (Vec::new(), Some(e)),
        _ => (Vec::new(), None),
    }
}

/// The steps that failed or that the target failed at, in order.
pub(super) fn failing_steps(result: &Result<Outcome, TargetFailure>) -> Vec<usize> {
    let (fs, e) = failures(result);
    let mut out: Vec<usize> = fs.iter().filter_map(|f| f.step).collect();
    out.extend(e.and_then(|e| e.step));
    out.sort();
    out.dedup();
    out
}

/// A step, in a few words, for the script and the report.
pub(super) fn words(step: &Step) -> String {
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
pub(super) fn limits(f: &Failed<'_>) -> Vec<String> {
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

pub(super) fn readme_text(
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

pub(super) fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// The lines sent and got while the steps `steps` ran, each marked with its process.
pub(super) fn lines_of_steps(events: &[Event], steps: &[usize]) -> Vec<String> {
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
