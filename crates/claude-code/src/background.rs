//! The real Claude Code as a background-task target (`claude-code@VERSION`, issue 25): one
//! unmodified CLI in print mode with stream-json input, driven by a scripted model
//! (`background::scripted`) that starts work with `Bash` and `run_in_background: true`, reads it with the
//! version's output tool and stops it with the version's kill tool, and counts every
//! `<task-notification>` the CLI puts into the model's conversation.
//!
//! Each operation is one turn: the session sends a user message naming step `n`, the model
//! answers with the step's tool calls (a batch is one message with many `tool_use` blocks, so
//! a hundred tasks start in one turn), the CLI runs them and sends their results, and the
//! model ends the turn. Notifications arrive as turns of their own (or inside the next
//! request) and are answered with a short text.
//!
//! Which tools a version has is read from the `tools` array of its first request, not
//! assumed: `BashOutput`/`KillBash` (1.0.x), `BashOutput`/`KillShell` (2.0.x),
//! `TaskOutput`/`KillShell` (2.1.0-2.1.x), `TaskOutput`/`TaskStop`, and `TaskStop` alone in
//! the newest (whose output is read with `Read` on the file; the driver reads the file
//! itself then). docs/claude-code.md, "Background tasks, measured", has the versions.
//!
//! Processes: the CLI leads a process group of its own ([`Group`]); the tasks' shells are
//! found from `/proc` by a marker each task's command carries ([`procs`]), so that what is
//! left after a kill or after the session ended can be seen, and everything is killed when
//! the session is dropped.

pub mod parse;
pub mod procs;
mod scripted;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

pub use self::procs::TaskProc;
pub use self::scripted::CallResult;
use self::scripted::{BgScriptedModel, Call, step_marker};
pub use self::scripted::{Offered, Received};
use crate::install::Installation;
use crate::version::ClaudeCode;
use taskproof_model::model_log::LogHandle;
use taskproof_session::background::{
    BgEnd, BgError, BgKill, BgNotification, BgOutput, BgSession, BgStarted, BgWork,
};
use taskproof_session::group::{self, CleanupGuard, Group, TempGuard};

/// How much of the CLI's stdout and stderr is kept for errors.
const TAIL: usize = 64 * 1024;

/// How long things may take, and where the scripted model's log goes.
#[derive(Clone, Debug)]
pub struct BgOptions {
    /// One operation (a turn of the conversation), and the CLI's exit after its input ended.
    pub timeout: Duration,
    /// Starting the CLI and its first turn (which reads the tool list).
    pub start_timeout: Duration,
    /// Every request of the CLI and every answer of the scripted model, when given.
    pub model_log: Option<LogHandle>,
}

impl Default for BgOptions {
    fn default() -> Self {
        BgOptions {
            timeout: Duration::from_secs(60),
            start_timeout: Duration::from_secs(60),
            model_log: None,
        }
    }
}

/// The tools a version offers for background work, and the name of each one's id field.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Tools {
    /// `TaskOutput` or `BashOutput` and its id field; None where the version has neither.
    pub output: Option<(String, String)>,
    /// Whether the output tool takes `block` (TaskOutput: false reads without waiting).
    pub output_block: bool,
    /// `TaskStop`, `KillShell` or `KillBash`, and its id field.
    pub kill: (String, String),
    /// Every tool name of the first request, as offered.
    pub offered: Vec<String>,
}

impl Tools {
    /// Reads the background tools out of the first request's tool list.
    pub fn from_offered(offered: &[Offered]) -> Result<Tools, String> {
        let find = |names: &[&str]| {
            names
                .iter()
                .find_map(|n| offered.iter().find(|t| t.name == *n))
        };
        let id_field = |t: &Offered| {
            ["task_id", "shell_id", "bash_id"]
                .iter()
                .find(|f| t.properties.iter().any(|p| p == *f))
                .map(|f| f.to_string())
                .ok_or_else(|| {
                    format!(
                        "{} has no task_id, shell_id or bash_id among {:?}",
                        t.name, t.properties
                    )
                })
        };
        let names: Vec<String> = offered.iter().map(|t| t.name.clone()).collect();
        let bash = find(&["Bash"]).ok_or_else(|| format!("no Bash tool among {names:?}"))?;
        if !bash.properties.iter().any(|p| p == "run_in_background") {
            return Err(format!(
                "Bash takes no run_in_background (its input: {:?})",
                bash.properties
            ));
        }
        let kill = find(&["TaskStop", "KillShell", "KillBash"]).ok_or_else(|| {
            format!("no kill tool (TaskStop, KillShell, KillBash) among {names:?}")
        })?;
        let output = find(&["TaskOutput", "BashOutput"]);
        Ok(Tools {
            output: match output {
                Some(t) => Some((t.name.clone(), id_field(t)?)),
                None => None,
            },
            output_block: output.is_some_and(|t| t.properties.iter().any(|p| p == "block")),
            kill: (kill.name.clone(), id_field(kill)?),
            offered: names,
        })
    }
}

/// A task this session started.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Started {
    /// Its number in the session (the marker's `N`).
    pub n: u64,
    pub id: String,
    pub output_file: Option<PathBuf>,
    pub command: String,
}

/// A notification the CLI itself wrote on its stream-json output (`system` /
/// `task_notification`): what it says it told the model, beside what the model received.
#[derive(Clone, Debug, serde::Serialize)]
pub struct StreamNote {
    pub id: String,
    pub status: String,
    pub summary: String,
}

#[derive(Default)]
struct Stream {
    tail: String,
    notes: Vec<StreamNote>,
    /// `result` events: turns the CLI finished.
    results: u64,
}

/// One session: one CLI.
pub struct ClaudeCodeBg {
    version: String,
    tools: Tools,
    model: BgScriptedModel,
    child: Group,
    pid: i32,
    stdin: Option<ChildStdin>,
    stream: Arc<Mutex<Stream>>,
    stderr: Arc<Mutex<String>>,
    /// The session's marker (random), in every task's command.
    session: String,
    root: PathBuf,
    options: BgOptions,
    next_step: u64,
    started: Vec<Started>,
    /// Notification blocks parsed so far (well-formed ones).
    parsed: Vec<BgNotification>,
    /// Blocks that were not well-formed: (raw, why).
    malformed: Vec<(String, String)>,
    /// How many received blocks were looked at.
    looked: usize,
    ended: bool,
    /// Kills the tasks' processes if a signal ends taskproof (they are in no group of ours).
    _on_signal: CleanupGuard,
    _config: tempfile::TempDir,
    _guard: TempGuard,
    /// Set when the CLI had to be killed after its input ended (it waited for its tasks).
    pub exit_note: Option<String>,
    /// What the driver mapped rather than passed on (see [`BgSession::remarks`]).
    remarks: Vec<String>,
}

/// Opens a background session on `spec` (installed first if needed) whose tasks run in
/// `root`: the one function the `--suite background` runner needs.
pub fn open(
    spec: &ClaudeCode,
    root: &Path,
    options: BgOptions,
) -> Result<Box<dyn BgSession>, BgError> {
    Ok(Box::new(ClaudeCodeBg::open(spec, root, options)?))
}

fn keep_tail(into: &mut String, add: &str) {
    into.push_str(add);
    if into.len() > TAIL {
        let mut cut = into.len() - TAIL / 2;
        while !into.is_char_boundary(cut) {
            cut += 1;
        }
        into.drain(..cut);
    }
}

/// Single quotes for `sh`.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

impl ClaudeCodeBg {
    pub fn open(
        spec: &ClaudeCode,
        root: &Path,
        options: BgOptions,
    ) -> Result<ClaudeCodeBg, BgError> {
        let install = spec.prepare().map_err(BgError::Start)?;
        let root = std::path::absolute(root)
            .and_then(|r| r.canonicalize())
            .map_err(BgError::io(format!(
                "resolve the session folder {}",
                root.display()
            )))?;
        let (config, guard) = TempGuard::tempdir("taskproof-claude-code-bg-")
            .map_err(BgError::io("create a private config folder"))?;
        write_config(config.path(), &root)?;
        let model = BgScriptedModel::start(options.model_log.clone())
            .map_err(|e| BgError::Start(e.to_string()))?;
        let session = format!("{:016x}", rand::random::<u64>());
        let on_signal = {
            let session = session.clone();
            group::on_signal(Box::new(move || {
                procs::kill_all(&session, Duration::from_secs(2));
            }))
        };
        let (child, stdin, stream, stderr) =
            start(&install, config.path(), &root, &model.base_url())?;
        let pid = child.id() as i32;
        let mut s = ClaudeCodeBg {
            version: install.version.clone(),
            tools: Tools {
                output: None,
                output_block: false,
                kill: (String::new(), String::new()),
                offered: Vec::new(),
            },
            model,
            child,
            pid,
            stdin: Some(stdin),
            stream,
            stderr,
            session,
            root,
            options,
            next_step: 0,
            started: Vec::new(),
            parsed: Vec::new(),
            malformed: Vec::new(),
            looked: 0,
            ended: false,
            _on_signal: on_signal,
            _config: config,
            _guard: guard,
            exit_note: None,
            remarks: Vec::new(),
        };
        // The first turn calls nothing: it shows the tools.
        s.step(Vec::new(), s.options.start_timeout)
            .map_err(|e| e.context("the first turn (which reads the tool list)"))?;
        let offered = s.model.tools().ok_or_else(|| {
            BgError::Start(format!(
                "Claude Code {} sent no request of its agent",
                s.version
            ))
        })?;
        s.tools = Tools::from_offered(&offered).map_err(|e| {
            BgError::Unsupported(format!(
                "Claude Code {} has no background Bash in print mode: {e}",
                s.version
            ))
        })?;
        Ok(s)
    }

    /// The folder the tasks run in.
    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn version(&self) -> &str {
        &self.version
    }

    pub fn tools(&self) -> &Tools {
        &self.tools
    }

    /// The process id of the CLI.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// The tasks started so far.
    pub fn started(&self) -> &[Started] {
        &self.started
    }

    /// Notification blocks that were not well-formed, raw, with the reason.
    pub fn malformed(&self) -> &[(String, String)] {
        &self.malformed
    }

    /// What the CLI wrote on its own stream about notifications.
    pub fn stream_notes(&self) -> Vec<StreamNote> {
        self.stream
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .notes
            .clone()
    }

    /// Every notification block the model received, raw, with when.
    pub fn received(&self) -> Vec<Received> {
        self.model.received()
    }

    /// (agent requests, side requests) the scripted model answered.
    pub fn requests(&self) -> (u64, u64) {
        self.model.requests()
    }

    /// The distinct `<system-reminder>`s about background work the model received (how
    /// versions before `<task-notification>` spoke of it).
    pub fn reminders(&self) -> Vec<String> {
        self.model.reminders()
    }

    /// Conversations that carried fewer notifications than an earlier one.
    pub fn shrunk(&self) -> Vec<String> {
        self.model.shrunk()
    }

    /// The live processes of the session's tasks, from `/proc`.
    pub fn task_procs(&self) -> Vec<TaskProc> {
        procs::scan(&self.session)
    }

    /// The live processes of the task with id `id`.
    pub fn procs_of(&self, id: &str) -> Vec<TaskProc> {
        let ns: Vec<u64> = self
            .started
            .iter()
            .filter(|s| s.id == id)
            .map(|s| s.n)
            .collect();
        self.task_procs()
            .into_iter()
            .filter(|p| ns.contains(&p.task))
            .collect()
    }

    fn tails(&self) -> String {
        let err = self
            .stderr
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let out = self
            .stream
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .tail
            .clone();
        let last = |s: &str| {
            let cut = s.len().saturating_sub(2000);
            let cut = (cut..=s.len())
                .find(|&i| s.is_char_boundary(i))
                .unwrap_or(0);
            s[cut..].to_string()
        };
        format!("stderr: …{}\nstdout: …{}", last(&err), last(&out))
    }

    /// One turn: the prompt of the next step, answered with `calls`; their results.
    fn step(&mut self, calls: Vec<Call>, wait: Duration) -> Result<Vec<CallResult>, BgError> {
        if self.ended {
            return Err(BgError::Ended("the session has ended".into()));
        }
        let n = self.next_step;
        self.next_step += 1;
        let expected = calls.len();
        let rx = self.model.arm(n, calls);
        let line = json!({
            "type": "user",
            "message": {"role": "user", "content": format!("Do {}.", step_marker(n))},
        });
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| BgError::Ended("the CLI's input is closed".into()))?;
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .and_then(|()| stdin.flush())
            .map_err(|e| {
                BgError::Exited(format!(
                    "send step {n} to Claude Code {}: {e}",
                    self.version
                ))
            })?;
        let deadline = Instant::now() + wait;
        loop {
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(results) if results.len() == expected => return Ok(results),
                Ok(results) => {
                    return Err(BgError::Garbage(format!(
                        "step {n}: {} results for {expected} calls",
                        results.len()
                    )));
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(BgError::Garbage(format!(
                        "step {n}: the scripted model dropped the step"
                    )));
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            }
            if let Some(status) = self.child.exited() {
                self.model.disarm();
                self.ended = true;
                return Err(BgError::Exited(format!(
                    "Claude Code {} exited ({status}) during step {n}\n{}",
                    self.version,
                    self.tails()
                )));
            }
            if Instant::now() >= deadline {
                self.model.disarm();
                return Err(BgError::Timeout(format!(
                    "Claude Code {} did not finish step {n} ({expected} tool calls) within {wait:?}\n{}",
                    self.version,
                    self.tails()
                )));
            }
        }
    }

    /// One turn that calls nothing: a user message, as a person would send the next prompt
    /// (notifications a version holds back until the next turn come with it).
    pub fn ping(&mut self) -> Result<(), BgError> {
        self.step(Vec::new(), self.options.timeout).map(drop)
    }

    /// The `Bash` call that starts `work` as task `n`.
    fn spawn_call(&self, n: u64, work: &BgWork) -> (Call, String) {
        let command = format!(
            "{}={}-{n} sh -c {}",
            procs::MARKER,
            self.session,
            quote(&work.command)
        );
        let call = Call {
            name: "Bash".into(),
            input: json!({
                "command": command,
                "description": format!("taskproof background task {n}"),
                "run_in_background": true,
            }),
        };
        (call, command)
    }

    /// Starts every work in one turn (one `Bash` call each); their ids in order.
    pub fn spawn_many(&mut self, works: &[BgWork]) -> Result<Vec<BgStarted>, BgError> {
        let first = self.started.len() as u64;
        let (calls, commands): (Vec<Call>, Vec<String>) = works
            .iter()
            .enumerate()
            .map(|(i, w)| self.spawn_call(first + i as u64, w))
            .unzip();
        let results = self.step(calls, self.options.timeout)?;
        let mut out = Vec::new();
        for (i, (r, command)) in results.into_iter().zip(commands).enumerate() {
            if r.is_error {
                return Err(BgError::Refused(format!(
                    "Claude Code {}: Bash failed: {}",
                    self.version, r.text
                )));
            }
            let started = parse::started(&r.text)
                .map_err(|e| BgError::Garbage(format!("Claude Code {}: {e}", self.version)))?;
            self.started.push(Started {
                n: first + i as u64,
                id: started.id.clone(),
                output_file: started.output_file.clone(),
                command,
            });
            out.push(started);
        }
        Ok(out)
    }

    /// Kills every id in one turn; the answers in order.
    pub fn kill_many(&mut self, ids: &[String]) -> Result<Vec<BgKill>, BgError> {
        let (name, field) = self.tools.kill.clone();
        let calls = ids
            .iter()
            .map(|id| Call {
                name: name.clone(),
                input: json!({ field.clone(): id }),
            })
            .collect();
        let results = self.step(calls, self.options.timeout)?;
        results
            .into_iter()
            .map(|r| {
                parse::kill(r.is_error, &r.text).map_err(|e| {
                    BgError::Garbage(format!("Claude Code {} {name}: {e}", self.version))
                })
            })
            .collect()
    }

    /// Parses the blocks received since the last look.
    fn look(&mut self) {
        let received = self.model.received();
        for r in &received[self.looked.min(received.len())..] {
            match parse::notification(&r.text) {
                Ok(n) => self.parsed.push(n),
                Err(why) => self.malformed.push((r.text.clone(), why)),
            }
        }
        self.looked = received.len();
    }

    /// The notifications parsed so far, without waiting.
    pub fn notifications_now(&mut self) -> Vec<BgNotification> {
        self.look();
        self.parsed.clone()
    }

    /// Ends the session; see [`BgSession::end`].
    fn end_inner(&mut self, how: BgEnd) -> Result<(), BgError> {
        if self.ended {
            return Ok(());
        }
        self.ended = true;
        let ended = self.end_cli(how);
        if let Some(Err(e)) = self.options.model_log.as_ref().map(LogHandle::finish) {
            self.remarks.push(e);
        }
        ended
    }

    /// Ends the CLI as `how` says.
    fn end_cli(&mut self, how: BgEnd) -> Result<(), BgError> {
        match how {
            BgEnd::Exit => {
                // The end of the input is how a print-mode session ends.
                self.stdin = None;
                let deadline = Instant::now() + self.options.timeout;
                while self.child.exited().is_none() {
                    if Instant::now() >= deadline {
                        // Measured: 2.1.112 and 2.1.332 wait for their running tasks to end
                        // before they exit. The session has ended as its user ended it; the
                        // CLI is killed (its tasks are in sessions of their own, untouched),
                        // and what its tasks left running is judged from the process table.
                        self.child.kill();
                        self.exit_note = Some(format!(
                            "Claude Code {} did not exit within {:?} after its input ended, waiting for its tasks; it was killed",
                            self.version, self.options.timeout
                        ));
                        return Ok(());
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                Ok(())
            }
            BgEnd::Sigkill => {
                // The CLI's process only, as `kill -9 PID` does; its group is killed when
                // the session is dropped, after the orphans were looked at.
                if let Some(pid) = rustix::process::Pid::from_raw(self.pid) {
                    rustix::process::kill_process(pid, rustix::process::Signal::KILL).map_err(
                        |e| BgError::Io {
                            what: format!("SIGKILL to Claude Code (pid {})", self.pid),
                            error: e.into(),
                        },
                    )?;
                }
                let deadline = Instant::now() + Duration::from_secs(10);
                while self.child.exited().is_none() {
                    if Instant::now() >= deadline {
                        return Err(BgError::Timeout(format!(
                            "Claude Code (pid {}) outlived SIGKILL for 10 s",
                            self.pid
                        )));
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                self.stdin = None;
                Ok(())
            }
        }
    }

    /// The whole output of task `id` as the output tool gives it (status, exit code, text),
    /// or, where the version has no output tool, None.
    pub fn read_output(&mut self, id: &str) -> Result<Option<parse::OutputRead>, BgError> {
        let Some((name, _)) = self.tools.output.clone() else {
            return Ok(None);
        };
        let r = self.call_output(id, false)?;
        if r.is_error && (r.text.contains("No task found") || r.text.contains("No shell found")) {
            // The tool's own answer that it knows no such task: for a task it should still
            // know, a finding (B5), not a broken target.
            return Err(BgError::NoSuchTask(format!(
                "Claude Code {} {name} {id}: {}",
                self.version,
                parse::without_reminders(&r.text).trim()
            )));
        }
        if r.is_error {
            return Err(BgError::Refused(format!(
                "Claude Code {} {name} {id}: {}",
                self.version, r.text
            )));
        }
        parse::output(&r.text)
            .map(Some)
            .map_err(|e| BgError::Garbage(format!("Claude Code {} {name}: {e}", self.version)))
    }
}

impl ClaudeCodeBg {
    /// One call of the output tool, its answer as given (`block`: wait for the task to end,
    /// where the tool can; up to half the step's timeout). An error where the version has
    /// no output tool.
    pub fn call_output(&mut self, id: &str, block: bool) -> Result<CallResult, BgError> {
        let (name, field) = self.tools.output.clone().ok_or_else(|| {
            BgError::Unsupported(format!("Claude Code {} has no output tool", self.version))
        })?;
        let mut input = json!({ field: id });
        if self.tools.output_block {
            input["block"] = json!(block);
            if block {
                input["timeout"] = json!(self.options.timeout.as_millis() as u64 / 2);
            }
        }
        Ok(self
            .step(vec![Call { name, input }], self.options.timeout)?
            .remove(0))
    }
}

impl BgSession for ClaudeCodeBg {
    fn spawn(&mut self, work: &BgWork) -> Result<BgStarted, BgError> {
        Ok(self.spawn_many(std::slice::from_ref(work))?.remove(0))
    }

    fn kill(&mut self, id: &str) -> Result<BgKill, BgError> {
        Ok(self.kill_many(&[id.to_string()])?.remove(0))
    }

    /// With an output tool: its answer (the whole output so far) from byte `offset`, with
    /// its status; the tool reports no offset. Without one (the newest versions tell the
    /// model to `Read` the file): the output file read from disk, with no status.
    fn output(&mut self, id: &str, offset: u64) -> Result<BgOutput, BgError> {
        let from = |bytes: &[u8]| {
            let start = (offset as usize).min(bytes.len());
            String::from_utf8_lossy(&bytes[start..]).into_owned()
        };
        match self.read_output(id)? {
            Some(read) => Ok(BgOutput {
                text: from(read.text.as_bytes()),
                next_offset: None,
                status: read.status,
            }),
            None => {
                let file = self
                    .started
                    .iter()
                    .find(|s| s.id == id)
                    .and_then(|s| s.output_file.clone())
                    .ok_or_else(|| {
                        BgError::Garbage(format!("no output file known for task {id}"))
                    })?;
                let bytes = std::fs::read(&file)
                    .map_err(BgError::io(format!("read {}", file.display())))?;
                // The CLI's own `[exited with code N]` line after the command's output is
                // not output the command wrote: it is read as the exit it reports, and named
                // in the scenario's notes, so that B4 judges the command's bytes.
                let output = &bytes[..self.command_output(id, &bytes)];
                Ok(BgOutput {
                    text: from(output),
                    next_offset: Some(output.len().max(offset as usize) as u64),
                    status: None,
                })
            }
        }
    }

    fn notifications(&mut self, within: Duration) -> Result<Vec<BgNotification>, BgError> {
        let deadline = Instant::now() + within;
        loop {
            self.look();
            if let Some((raw, why)) = self.malformed.first() {
                return Err(BgError::Garbage(format!(
                    "Claude Code {} sent a malformed <task-notification> ({why}): {raw:?}",
                    self.version
                )));
            }
            let all = self
                .started
                .iter()
                .all(|s| self.parsed.iter().any(|n| n.id == s.id));
            if all || Instant::now() >= deadline {
                return Ok(self.parsed.clone());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn end(&mut self, how: BgEnd) -> Result<(), BgError> {
        self.end_inner(how)
    }

    fn task_pids(&mut self) -> Result<Vec<i32>, BgError> {
        Ok(self.task_procs().into_iter().map(|p| p.pid).collect())
    }

    fn delivered(&mut self) -> Vec<BgNotification> {
        self.notifications_now()
    }

    fn command_output(&mut self, id: &str, file: &[u8]) -> usize {
        let Some((len, code)) = parse::exit_trailer(file) else {
            return file.len();
        };
        let remark = format!(
            "task {id}'s output file ends in Claude Code {}'s own line \"[exited with code {code}]\" after the command's {len} bytes; it is read as the exit, not as output",
            self.version
        );
        if !self.remarks.contains(&remark) {
            self.remarks.push(remark);
        }
        len
    }

    fn remarks(&self) -> Vec<String> {
        self.remarks.clone()
    }

    fn output_root(&self) -> Option<std::path::PathBuf> {
        // CLAUDE_CODE_TMPDIR: the CLI keeps each task's output under it.
        Some(self._config.path().join("tmp"))
    }
}

impl Drop for ClaudeCodeBg {
    fn drop(&mut self) {
        self.stdin = None;
        self.child.kill();
        procs::kill_all(&self.session, Duration::from_secs(10));
    }
}

fn write_config(config: &Path, root: &Path) -> Result<(), BgError> {
    crate::process::write_first_run_answers(config, root).map_err(BgError::Start)?;
    std::fs::create_dir_all(config.join("tmp"))
        .map_err(BgError::io(format!("create {}/tmp", config.display())))
}

type Started4 = (Group, ChildStdin, Arc<Mutex<Stream>>, Arc<Mutex<String>>);

fn start(
    install: &Installation,
    config: &Path,
    root: &Path,
    base_url: &str,
) -> Result<Started4, BgError> {
    let mut command = install.command();
    command
        .env_clear()
        .envs(crate::process::scripted_env(config, base_url))
        // Where the tasks' output files go (else /tmp/claude-UID/…, outside the session).
        .env("CLAUDE_CODE_TMPDIR", config.join("tmp"))
        .env("TMPDIR", config.join("tmp"))
        .current_dir(root)
        // Unknown names are ignored, so every version's names can be allowed at once
        // (`--dangerously-skip-permissions` is refused as root).
        .args([
            "--allowedTools",
            "Bash,BashOutput,KillBash,KillShell,TaskOutput,TaskStop,Read",
            // Said outright: 2.1.285 to 2.1.301 otherwise put `Bash` before their auto-mode
            // classifier, which asks the model for a safety verdict the scripted model does
            // not give, and refuse every command ("Auto mode could not evaluate this
            // action"). Measured: with it 2.1.295 runs `completion`; 1.0.72 and 2.0.50 take it.
            "--permission-mode",
            "default",
        ])
        .args(crate::process::PRINT_STREAM_JSON)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(path) = std::env::var_os("PATH") {
        command.env("PATH", path);
    }
    let mut child = Group::spawn(&mut command)
        .map_err(|e| BgError::Start(format!("start Claude Code {}: {e}", install.version)))?;
    let stdin = child.child().stdin.take().expect("piped stdin");
    let stdout = child.child().stdout.take().expect("piped stdout");
    let stderr_pipe = child.child().stderr.take().expect("piped stderr");
    let stream = Arc::new(Mutex::new(Stream::default()));
    let stderr = Arc::new(Mutex::new(String::new()));
    {
        let stream = Arc::clone(&stream);
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                let event: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
                let mut s = stream.lock().unwrap_or_else(|p| p.into_inner());
                if event["type"] == "system" && event["subtype"] == "task_notification" {
                    let text = |k: &str| event[k].as_str().unwrap_or("").to_string();
                    s.notes.push(StreamNote {
                        id: text("task_id"),
                        status: text("status"),
                        summary: text("summary"),
                    });
                } else if event["type"] == "result" {
                    s.results += 1;
                }
                keep_tail(&mut s.tail, &line);
                keep_tail(&mut s.tail, "\n");
            }
        });
    }
    {
        let stderr = Arc::clone(&stderr);
        std::thread::spawn(move || {
            let mut pipe = stderr_pipe;
            let mut chunk = [0u8; 8192];
            loop {
                match pipe.read(&mut chunk) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => keep_tail(
                        &mut stderr.lock().unwrap_or_else(|p| p.into_inner()),
                        &String::from_utf8_lossy(&chunk[..n]),
                    ),
                }
            }
        });
    }
    Ok((child, stdin, stream, stderr))
}
