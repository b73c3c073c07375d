//! The measured cases of issue 25 against one real Claude Code version, recorded as JSON for
//! `reports/claude-code/VERSION/background.{json,md}` (the kill/complete race of many tasks is
//! race.rs's, the Markdown summaries summary.rs's).
//!
//! A case opens a session of its own, does what its name says, and records what the CLI
//! answered, what the model received (notifications per task id) and what the machine shows
//! (the tasks' processes in `/proc`). A *finding* is a place where the version departs from
//! the seed's task system (lesson "The Task System": one notification per task, final statuses
//! final, the processes gone once a task is killed or its session ends); it is a statement of
//! what was seen, with the issue of anthropics/claude-code it reproduces, never a guess.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use taskproof_claude_code::ClaudeCode;
use taskproof_claude_code::background::{BgOptions, ClaudeCodeBg, parse};
use taskproof_session::background::{BgEnd, BgKill, BgNotification, BgSession, BgStatus, BgWork};

/// An issue of anthropics/claude-code.
fn issue(n: u32) -> String {
    format!("https://github.com/anthropics/claude-code/issues/{n}")
}

/// One case's record.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Case {
    pub case: String,
    /// The issues the case looks for.
    pub issues: Vec<String>,
    pub observed: Value,
    pub findings: Vec<String>,
    /// Set when the case could not be run to its end (a target error), with the error.
    pub error: Option<String>,
    pub seconds: f64,
}

/// How long a case waits for notifications.
const NOTIFY_WAIT: Duration = Duration::from_secs(20);

pub(crate) fn work(command: impl Into<String>) -> BgWork {
    BgWork {
        command: command.into(),
    }
}

/// The load average, for every figure.
pub fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

pub(crate) fn kill_word(k: &BgKill) -> String {
    match k {
        BgKill::Killed => "killed".into(),
        BgKill::AlreadyFinal(s) => format!("already {}", s.as_str()),
        BgKill::NotFound(words) => format!("not found ({})", words.trim()),
    }
}

/// Per task id: how often it was notified, with which statuses and exit codes, and its
/// live processes now.
fn account(s: &ClaudeCodeBg, notes: &[BgNotification], ids: &[String]) -> Value {
    let mut out = serde_json::Map::new();
    for id in ids {
        let mine: Vec<&BgNotification> = notes.iter().filter(|n| &n.id == id).collect();
        out.insert(
            id.clone(),
            json!({
                "notified": mine.len(),
                "statuses": mine.iter().map(|n| n.status.as_str()).collect::<Vec<_>>(),
                "exit_codes": mine.iter().map(|n| n.exit_code).collect::<Vec<_>>(),
                "alive": s.procs_of(id).iter().map(|p| json!({"pid": p.pid, "pgid": p.pgid, "command": p.command})).collect::<Vec<_>>(),
            }),
        );
    }
    Value::Object(out)
}

/// Findings about notification counts: none or more than one per task.
fn count_findings(notes: &[BgNotification], ids: &[String], findings: &mut Vec<String>) {
    for id in ids {
        let n = notes.iter().filter(|x| &x.id == id).count();
        if n == 0 {
            findings.push(format!(
                "{id}: never notified within {NOTIFY_WAIT:?} (seed: exactly once)"
            ));
        } else if n > 1 {
            findings.push(format!("{id}: notified {n} times (seed: exactly once)"));
        }
    }
}

/// Waits up to `within` for the task's processes to be gone; how long they lived, or None.
fn gone_within(s: &ClaudeCodeBg, id: &str, within: Duration) -> Option<Duration> {
    let start = Instant::now();
    while start.elapsed() < within {
        if s.procs_of(id).is_empty() {
            return Some(start.elapsed());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

fn wait_procs(s: &ClaudeCodeBg, id: &str, at_least: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while s.procs_of(id).len() < at_least && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub(crate) type Body = fn(&mut ClaudeCodeBg, &mut Vec<String>) -> anyhow::Result<Value>;

/// The cases, in order: (name, issues, body).
pub(crate) fn cases() -> Vec<(&'static str, Vec<u32>, Body)> {
    vec![
        ("completion", vec![], completion),
        ("failure", vec![], failure),
        ("kill-while-running", vec![84464], kill_running),
        ("output-before-during-after", vec![], output_phases),
        ("five-finish-together", vec![40235], five_together),
        ("finish-during-the-turn", vec![40235], during_turn),
        (
            "output-consumed-then-notified",
            vec![52786, 33872],
            consumed_then_notified,
        ),
        ("kill-after-finish", vec![43078], kill_finished),
        ("kill-process-tree", vec![84464], kill_tree),
        ("session-exit-with-tasks-running", vec![], |s, f| {
            session_end(s, f, BgEnd::Exit)
        }),
        ("session-sigkill-with-tasks-running", vec![], |s, f| {
            session_end(s, f, BgEnd::Sigkill)
        }),
        ("never-ends", vec![], never_ends),
        ("output-flood", vec![], flood),
    ]
}

/// Runs every case (or those named in `only`) against `spec`, each in its own session in a
/// fresh folder under `scratch`.
pub fn run(spec: &ClaudeCode, scratch: &Path, only: &[String]) -> anyhow::Result<Value> {
    let options = BgOptions::default();
    let mut records = Vec::new();
    let mut tools = Value::Null;
    let mut version = String::new();
    let mut ids = Vec::new();
    for (name, issues, body) in cases() {
        if !only.is_empty() && !only.iter().any(|o| o == name) {
            continue;
        }
        let root = tempfile::Builder::new()
            .prefix(&format!("bg-{name}-"))
            .tempdir_in(scratch)?;
        let start = Instant::now();
        let mut findings = Vec::new();
        let (observed, error) = match ClaudeCodeBg::open(spec, root.path(), options.clone()) {
            Ok(mut s) => {
                version = s.version().to_string();
                tools = serde_json::to_value(s.tools())?;
                let result = body(&mut s, &mut findings);
                ids.extend(s.started().iter().map(|t| t.id.clone()));
                for (raw, why) in s.malformed() {
                    findings.push(format!("malformed <task-notification> ({why}): {raw:?}"));
                }
                for shrunk in s.shrunk() {
                    findings.push(format!("the conversation lost notifications: {shrunk}"));
                }
                let stream: Vec<Value> = s
                    .stream_notes()
                    .iter()
                    .map(|n| json!({"id": n.id, "status": n.status, "summary": n.summary}))
                    .collect();
                let (agent, side) = s.requests();
                let extra = json!({"cli_stream_notifications": stream,
                                   "background_reminders": s.reminders(),
                                   "model_requests": {"agent": agent, "side": side}});
                match result {
                    Ok(mut v) => {
                        if let Value::Object(m) = &mut v {
                            m.insert("session".into(), extra);
                        }
                        (v, None)
                    }
                    Err(e) => (extra, Some(format!("{e:#}"))),
                }
            }
            Err(e) => (Value::Null, Some(format!("{e:#}"))),
        };
        records.push(Case {
            case: name.into(),
            issues: issues.into_iter().map(issue).collect(),
            observed,
            findings,
            error,
            seconds: start.elapsed().as_secs_f64(),
        });
    }
    Ok(json!({
        "version": version,
        "drive": "print mode, stream-json input and output",
        "tools": tools,
        "ids_seen": ids,
        "load_at_end": load(),
        "cases": records,
    }))
}

fn one_task(s: &mut ClaudeCodeBg, command: &str, f: &mut Vec<String>) -> anyhow::Result<Value> {
    let started = s.spawn(&work(command))?;
    let notes = s.notifications(NOTIFY_WAIT)?;
    std::thread::sleep(Duration::from_millis(500));
    let notes2 = s.notifications(Duration::ZERO)?;
    let ids = vec![started.id.clone()];
    count_findings(&notes2, &ids, f);
    let output = s.output(&started.id, 0).map_err(|e| format!("{e:#}"));
    let file = started
        .output_file
        .as_ref()
        .and_then(|p| std::fs::read_to_string(p).ok());
    let _ = notes;
    Ok(json!({
        "command": command,
        "id": started.id,
        "output_file": started.output_file,
        "tasks": account(s, &notes2, &ids),
        "output_after": match &output { Ok(o) => json!({"text": o.text, "status": o.status}), Err(e) => json!({"error": e}) },
        "output_file_text": file,
        "notifications_raw": notes2.iter().map(|n| n.raw.clone()).collect::<Vec<_>>(),
    }))
}

fn completion(s: &mut ClaudeCodeBg, f: &mut Vec<String>) -> anyhow::Result<Value> {
    let v = one_task(s, "echo done; exit 0", f)?;
    check_final(&v, "completed", Some(0), f);
    Ok(v)
}

fn failure(s: &mut ClaudeCodeBg, f: &mut Vec<String>) -> anyhow::Result<Value> {
    let v = one_task(s, "echo failing; exit 3", f)?;
    check_final(&v, "failed", Some(3), f);
    Ok(v)
}

/// A finding when the single task's notification disagrees with what happened.
fn check_final(v: &Value, status: &str, code: Option<i32>, f: &mut Vec<String>) {
    if let Some((id, t)) = v["tasks"].as_object().and_then(|m| m.iter().next()) {
        for (st, ec) in t["statuses"]
            .as_array()
            .into_iter()
            .flatten()
            .zip(t["exit_codes"].as_array().into_iter().flatten())
        {
            if st != status || ec.as_i64().map(|c| c as i32) != code {
                f.push(format!(
                    "{id}: notified {st} with exit code {ec}, expected {status} with {code:?}"
                ));
            }
        }
    }
}

fn kill_running(s: &mut ClaudeCodeBg, f: &mut Vec<String>) -> anyhow::Result<Value> {
    let started = s.spawn(&work("sleep 60"))?;
    wait_procs(s, &started.id, 2);
    let before = s.procs_of(&started.id).len();
    let answer = s.kill(&started.id)?;
    let gone = gone_within(s, &started.id, Duration::from_secs(5));
    if answer == BgKill::Killed && gone.is_none() {
        f.push(format!(
            "{}: the kill said killed, and a process of the task was alive 5 s later",
            started.id
        ));
    }
    let notes = s.notifications(NOTIFY_WAIT)?;
    std::thread::sleep(Duration::from_millis(500));
    let notes = s.notifications(Duration::ZERO).unwrap_or(notes);
    let ids = vec![started.id.clone()];
    count_findings(&notes, &ids, f);
    let second = s
        .kill(&started.id)
        .map(|k| kill_word(&k))
        .unwrap_or_else(|e| format!("error: {e:#}"));
    Ok(json!({
        "id": started.id,
        "processes_before_kill": before,
        "kill": kill_word(&answer),
        "processes_gone_after_ms": gone.map(|d| d.as_millis() as u64),
        "second_kill": second,
        "tasks": account(s, &notes, &ids),
        "notifications_raw": notes.iter().map(|n| n.raw.clone()).collect::<Vec<_>>(),
    }))
}

fn output_phases(s: &mut ClaudeCodeBg, f: &mut Vec<String>) -> anyhow::Result<Value> {
    let started = s.spawn(&work("echo first; sleep 3; echo second; exit 0"))?;
    let read = |s: &mut ClaudeCodeBg| match s.output(&started.id, 0) {
        Ok(o) => json!({"text": o.text, "status": o.status, "at_ms": 0}),
        Err(e) => json!({"error": format!("{e:#}")}),
    };
    let t0 = Instant::now();
    let mut before = read(s);
    before["at_ms"] = json!(t0.elapsed().as_millis() as u64);
    std::thread::sleep(Duration::from_millis(1000));
    let mut during = read(s);
    during["at_ms"] = json!(t0.elapsed().as_millis() as u64);
    let notes = s.notifications(NOTIFY_WAIT)?;
    let mut after = read(s);
    after["at_ms"] = json!(t0.elapsed().as_millis() as u64);
    let mut offset = s.output(&started.id, 6).map(|o| o.text).unwrap_or_default();
    if offset.is_empty() {
        offset = "(empty)".into();
    }
    let file = started
        .output_file
        .as_ref()
        .and_then(|p| std::fs::read_to_string(p).ok());
    let ids = vec![started.id.clone()];
    count_findings(&notes, &ids, f);
    if let (Some(text), Some(file)) = (after["text"].as_str(), &file)
        && text != file
    {
        f.push(format!(
            "{}: the output tool gave {text:?} after completion, the file has {file:?}",
            started.id
        ));
    }
    Ok(json!({
        "id": started.id,
        "before": before, "during": during, "after": after,
        "from_offset_6": offset,
        "output_file_text": file,
        "tasks": account(s, &notes, &ids),
    }))
}

/// A command that sleeps until `deadline_ms` (milliseconds since the epoch), then runs `then`.
fn at(deadline_ms: u128, then: &str) -> String {
    format!(
        "t=$(date +%s.%N); sleep $(awk -v t=\"$t\" 'BEGIN {{ d = {:.3} - t; if (d < 0) d = 0; printf \"%.3f\", d }}'); {then}",
        deadline_ms as f64 / 1000.0
    )
}

fn epoch_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}

fn five_together(s: &mut ClaudeCodeBg, f: &mut Vec<String>) -> anyhow::Result<Value> {
    // All five end within a few milliseconds of one moment, 4 s from now (after the turn
    // that starts them is over).
    let deadline = epoch_ms() + 4000;
    let works: Vec<BgWork> = (0..5)
        .map(|i| work(at(deadline, &format!("echo task {i}; exit 0"))))
        .collect();
    let started = s.spawn_many(&works)?;
    let ids: Vec<String> = started.iter().map(|t| t.id.clone()).collect();
    let notes = s.notifications(NOTIFY_WAIT)?;
    std::thread::sleep(Duration::from_millis(1000));
    let notes = s.notifications(Duration::ZERO).unwrap_or(notes);
    count_findings(&notes, &ids, f);
    let received = s.received();
    let requests: Vec<u64> = received.iter().map(|r| r.request).collect();
    Ok(json!({
        "ids": ids,
        "tasks": account(s, &notes, &ids),
        "notification_requests": requests,
        "note": "notification_requests: the agent request that brought each notification (one request can bring several)",
    }))
}

/// Sixteen tasks that exit at once, while the turn that starts them is still running (the
/// suite's `ids` scenario): how many are notified on their own within [`NOTIFY_WAIT`], how
/// many only with the user's next prompt, and how many never.
fn during_turn(s: &mut ClaudeCodeBg, f: &mut Vec<String>) -> anyhow::Result<Value> {
    let works: Vec<BgWork> = (0..16).map(|i| work(format!("echo {i}"))).collect();
    let t0 = Instant::now();
    let started = s.spawn_many(&works)?;
    let turn_ms = t0.elapsed().as_millis() as u64;
    let ids: Vec<String> = started.iter().map(|t| t.id.clone()).collect();
    let notes = s.notifications(NOTIFY_WAIT)?;
    std::thread::sleep(Duration::from_secs(2));
    let notes = s.notifications(Duration::ZERO).unwrap_or(notes);
    let on_their_own = notes.len();
    s.ping()?;
    std::thread::sleep(Duration::from_secs(3));
    let all = s.notifications(Duration::ZERO).unwrap_or_default();
    let late: Vec<&BgNotification> = all[on_their_own.min(all.len())..].iter().collect();
    let count = |n: &[&BgNotification], id: &str| n.iter().filter(|x| x.id == id).count();
    let own: Vec<&BgNotification> = notes.iter().collect();
    let (mut alone, mut with_prompt, mut never) = (0, 0, 0);
    for id in &ids {
        match (count(&own, id), count(&late, id)) {
            (0, 0) => never += 1,
            (0, _) => with_prompt += 1,
            _ => alone += 1,
        }
    }
    if with_prompt > 0 {
        f.push(format!(
            "{with_prompt} of 16 tasks that ended during the turn that started them were notified only with the next prompt"
        ));
    }
    count_findings(&all, &ids, f);
    let received = s.received();
    Ok(json!({
        "ids": ids,
        "spawn_turn_ms": turn_ms,
        "notified_on_their_own": alone,
        "notified_only_with_the_next_prompt": with_prompt,
        "never_notified": never,
        "tasks": account(s, &all, &ids),
        "notification_requests": received.iter().map(|r| r.request).collect::<Vec<u64>>(),
    }))
}

fn consumed_then_notified(s: &mut ClaudeCodeBg, f: &mut Vec<String>) -> anyhow::Result<Value> {
    let started = s.spawn(&work("sleep 2; echo result; exit 0"))?;
    // Consume the result the moment the task ends: the output tool told to wait for it
    // (TaskOutput's `block`), else polled; where the version has no output tool, the file.
    let t0 = Instant::now();
    let mut answers = Vec::new();
    let mut consumed = false;
    while t0.elapsed() < Duration::from_secs(15) && !consumed {
        if s.tools().output.is_none() {
            let o = s.output(&started.id, 0)?;
            consumed = o.text.contains("result");
            answers.push(json!({"file": o.text, "after_ms": t0.elapsed().as_millis() as u64}));
            std::thread::sleep(Duration::from_millis(100));
            continue;
        }
        let r = s.call_output(&started.id, true)?;
        let read = parse::output(&r.text);
        consumed = !r.is_error
            && read
                .as_ref()
                .is_ok_and(|o| o.status.is_some_and(BgStatus::is_final));
        answers.push(
            json!({"is_error": r.is_error, "text": parse::without_reminders(&r.text),
                            "after_ms": t0.elapsed().as_millis() as u64}),
        );
        if r.is_error {
            break;
        }
    }
    let (agent_before, _) = s.requests();
    let at_consumed = s.notifications(Duration::ZERO)?;
    let before = at_consumed.iter().filter(|n| n.id == started.id).count();
    std::thread::sleep(Duration::from_secs(3));
    let notes = s.notifications(NOTIFY_WAIT)?;
    std::thread::sleep(Duration::from_secs(1));
    let notes = s.notifications(Duration::ZERO).unwrap_or(notes);
    let (agent_after, _) = s.requests();
    let ids = vec![started.id.clone()];
    let total = notes.iter().filter(|n| n.id == started.id).count();
    if total > 1 {
        f.push(format!(
            "{}: notified {total} times although its result was consumed ({})",
            started.id,
            issue(52786)
        ));
    }
    // Only a read through the output tool is one the CLI knows of; where the version has
    // none, the harness read the file, which the CLI cannot see.
    if consumed && s.tools().output.is_some() && before == 0 && total >= 1 {
        f.push(format!(
            "{}: notified after its result was consumed by the output tool: a turn of its own \
             for news the model had ({})",
            started.id,
            issue(33872)
        ));
    }
    if total == 0 {
        f.push(format!("{}: never notified", started.id));
    }
    Ok(json!({
        "id": started.id,
        "output_answers": answers,
        "consumed": consumed,
        "notified_before_consumed": before,
        "notified_in_all": total,
        "agent_requests_after_consumed": agent_after.saturating_sub(agent_before),
        "tasks": account(s, &notes, &ids),
    }))
}

fn kill_finished(s: &mut ClaudeCodeBg, f: &mut Vec<String>) -> anyhow::Result<Value> {
    // A: a task that finished and whose processes are all gone.
    let done = s.spawn(&work("exit 0"))?;
    let notes = s.notifications(NOTIFY_WAIT)?;
    std::thread::sleep(Duration::from_millis(300));
    let answer_done = s.kill(&done.id)?;
    // B: a task whose shell exits at once but leaves a child running (in its own session,
    // so the shell's end does not wait for it): the task is over, a process of it is not.
    let leaver = s.spawn(&work(
        "setsid sleep 60 >/dev/null 2>&1 < /dev/null & exit 0",
    ))?;
    let ids = vec![done.id.clone(), leaver.id.clone()];
    let notes = {
        let _ = notes;
        s.notifications(NOTIFY_WAIT)?
    };
    std::thread::sleep(Duration::from_millis(300));
    let alive_before = s.procs_of(&leaver.id).len();
    let answer_leaver = s.kill(&leaver.id)?;
    std::thread::sleep(Duration::from_millis(500));
    let alive_after = s.procs_of(&leaver.id);
    if let BgKill::NotFound(words) = &answer_leaver
        && !alive_after.is_empty()
    {
        f.push(format!(
            "{}: the kill tool says {words:?} while a process of the task runs ({})",
            leaver.id,
            issue(43078)
        ));
    }
    if !alive_after.is_empty() {
        f.push(format!(
            "{}: {} process(es) of the task outlived the task and the kill",
            leaver.id,
            alive_after.len()
        ));
    }
    count_findings(&notes, &ids, f);
    Ok(json!({
        "finished": {"id": done.id, "kill": kill_word(&answer_done)},
        "left_a_child": {"id": leaver.id, "alive_before_kill": alive_before,
                         "kill": kill_word(&answer_leaver), "alive_after_kill": alive_after.len()},
        "tasks": account(s, &notes, &ids),
    }))
}

fn kill_tree(s: &mut ClaudeCodeBg, f: &mut Vec<String>) -> anyhow::Result<Value> {
    // A shell with two children in its process group and one that left it (setsid).
    let started = s.spawn(&work("sleep 61 & sleep 62 & setsid sleep 63 & wait"))?;
    wait_procs(s, &started.id, 5);
    let before: Vec<Value> = s
        .procs_of(&started.id)
        .iter()
        .map(|p| json!({"pid": p.pid, "pgid": p.pgid, "command": p.command}))
        .collect();
    let answer = s.kill(&started.id)?;
    let gone = gone_within(s, &started.id, Duration::from_secs(3));
    let left: Vec<Value> = s
        .procs_of(&started.id)
        .iter()
        .map(|p| json!({"pid": p.pid, "pgid": p.pgid, "command": p.command}))
        .collect();
    if answer == BgKill::Killed && !left.is_empty() {
        f.push(format!(
            "{}: the kill said killed, and {} process(es) of its tree were alive 3 s later: {} ({})",
            started.id,
            left.len(),
            left.iter().map(|p| p["command"].as_str().unwrap_or("").to_string()).collect::<Vec<_>>().join(", "),
            issue(84464)
        ));
    }
    let notes = s.notifications(NOTIFY_WAIT)?;
    let ids = vec![started.id.clone()];
    count_findings(&notes, &ids, f);
    Ok(json!({
        "id": started.id,
        "before_kill": before,
        "kill": kill_word(&answer),
        "all_gone_after_ms": gone.map(|d| d.as_millis() as u64),
        "alive_3s_after_kill": left,
        "tasks": account(s, &notes, &ids),
    }))
}

fn session_end(s: &mut ClaudeCodeBg, f: &mut Vec<String>, how: BgEnd) -> anyhow::Result<Value> {
    // Tasks that end by themselves 30-31 s on: longer than the 8-16 s some versions take to
    // exit without ending them (a first design with 15 s tasks took those for a CLI that
    // waited), shorter than the 60 s a CLI that waits for them is given.
    let started = s.spawn_many(&[work("sleep 30"), work("sleep 31 & wait")])?;
    let ids: Vec<String> = started.iter().map(|t| t.id.clone()).collect();
    for id in &ids {
        wait_procs(s, id, 2);
    }
    let before = s.task_procs().len();
    let t0 = Instant::now();
    let ended = s.end(how).map_err(|e| format!("{e:#}"));
    let took = t0.elapsed();
    // What is left 2 s after the CLI is gone.
    std::thread::sleep(Duration::from_secs(2));
    let left = s.task_procs();
    // The tasks end by themselves 30-31 s after they started: a CLI gone later waited for
    // them; one gone sooner with no process left ended them (the seed's orphan cleanup).
    if how == BgEnd::Exit && took >= Duration::from_secs(29) {
        f.push(format!(
            "the CLI did not end when its input ended: it ran {} ms more, until its tasks had \
             ended by themselves, instead of ending them",
            took.as_millis()
        ));
    }
    if !left.is_empty() {
        f.push(format!(
            "{} process(es) of running tasks outlived the session ({how:?}): {}",
            left.len(),
            left.iter()
                .map(|p| p.command.clone())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(json!({
        "ids": ids,
        "end": format!("{how:?}"),
        "end_result": match &ended { Ok(()) => json!("ok"), Err(e) => json!(e) },
        "cli_gone_after_ms": took.as_millis() as u64,
        "task_processes_before": before,
        "task_processes_2s_after": left.iter().map(|p| json!({"pid": p.pid, "pgid": p.pgid, "task": p.task, "command": p.command})).collect::<Vec<_>>(),
    }))
}

fn never_ends(s: &mut ClaudeCodeBg, f: &mut Vec<String>) -> anyhow::Result<Value> {
    let started = s.spawn(&work("sleep 100000"))?;
    let notes = s.notifications(Duration::from_secs(5))?;
    let mine = notes.iter().filter(|n| n.id == started.id).count();
    if mine != 0 {
        f.push(format!("{}: notified while still running", started.id));
    }
    let answer = s.kill(&started.id)?;
    let gone = gone_within(s, &started.id, Duration::from_secs(5));
    Ok(json!({
        "id": started.id,
        "notified_within_5s": mine,
        "kill": kill_word(&answer),
        "gone_after_ms": gone.map(|d| d.as_millis() as u64),
    }))
}

fn flood(s: &mut ClaudeCodeBg, f: &mut Vec<String>) -> anyhow::Result<Value> {
    // 50 MB of output.
    let started = s.spawn(&work("head -c 50000000 /dev/zero | tr '\\0' x; exit 0"))?;
    let notes = s.notifications(NOTIFY_WAIT)?;
    let ids = vec![started.id.clone()];
    count_findings(&notes, &ids, f);
    let output = s.output(&started.id, 0).map_err(|e| format!("{e:#}"));
    let size = started
        .output_file
        .as_ref()
        .and_then(|p| std::fs::metadata(p).ok())
        .map(|m| m.len());
    Ok(json!({
        "id": started.id,
        "output_file_bytes": size,
        "output_tool_chars": output.as_ref().map(|o| o.text.len()).ok(),
        "output_tool_tail": output.as_ref().map(|o| o.text.chars().rev().take(200).collect::<String>().chars().rev().collect::<String>()).unwrap_or_else(|e| e.clone()),
        "tasks": account(s, &notes, &ids),
    }))
}
