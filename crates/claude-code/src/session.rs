//! A session on the real Claude Code: one CLI per task list the session touches, each with
//! its own scripted model, all sharing a private config folder whose `tasks` is a symbolic
//! link to the root (so the lists are `ROOT/{list}/{id}.json`, layout `claude-code`).
//!
//! A request is one turn of the agent's conversation: the session sends a prompt naming the
//! request, the model answers with the script's tool calls one by one, the CLI runs each real
//! tool and reports its result in its next call to the model, and the turn ends when the
//! script has its answer. The per-request timeout covers the turn; starting a CLI has the
//! start-up limit. A CLI is restarted after [`RESTART_EVERY`] requests, so that the
//! conversation it sends with every call, and with it the cost of a request, stays bounded.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::config::Config;
use crate::install::Installation;
use crate::mapping::{self, Features};
use crate::process::{ClaudeProcess, Conversation, Setup, write_first_run_answers};
use crate::recognizer::{ClaudeCodeRecognizer, prompt_marker, spawn_prompt};
use crate::version::{self, ClaudeCode};
use taskproof_core::protocol::{
    ErrorKind, Feature, Hello, Layout, MEMBER, PROTOCOL_VERSION, SESSION_LIST,
};
use taskproof_model::scripted::{Plan, Step, failure};
use taskproof_model::scripted::{Reply, ScriptedModel, ToolResult, Turn};
use taskproof_session::group::TempGuard;
use taskproof_session::{Drive, Session, SessionEvent, SessionOptions, TargetError};

mod events;
pub mod lanes;
mod team;

use team::{lead_team, team_members, team_records, valid_member};

/// Requests one CLI serves before it is replaced by a fresh one.
pub const RESTART_EVERY: u64 = 40;
/// How long the terminal UI may sit on a typed prompt before Enter is pressed again.
const ENTER_AGAIN: Duration = Duration::from_millis(1500);
/// How long the terminal UI of 2.1.17 may hold a prompt it took without calling the model
/// before the CLI is restarted and the prompt typed again. Measured: a prompt it sends at all
/// reaches the model within a few seconds even on a loaded machine, while now and then the UI
/// shows its spinner with no call for ever (4 of the first 13 scenarios of one suite run at
/// load average 14, with prompt suggestions off, timed out that way).
const STUCK_AFTER: Duration = Duration::from_secs(15);
/// How often one request's prompt is given to a new CLI before the request times out.
const MAX_RESENDS: u32 = 2;
/// How much transcript is kept for the report.
const MAX_TRANSCRIPT: usize = 256 * 1024;

struct Running {
    cli: ClaudeProcess,
    model: ScriptedModel,
    requests: u64,
    /// The members of the agent team this CLI's lead spawned (in-process teammates, which
    /// end with the CLI).
    members: HashSet<String>,
}

/// The least time a request gets in the terminal UI, whatever `--timeout` says: the UI
/// answers a turn in about a second on an idle machine, but with the other core busy
/// (load 5 to 9) 2.1.17's requests went past the default 10 s limit (5 of 6 scenarios of
/// `nothing-vanishes-*` ended as target errors on 2026-11-26), so the target asks for more
/// itself rather than leaving it to the user's `--timeout`.
pub const TERMINAL_MIN_TIMEOUT: Duration = Duration::from_secs(60);

/// How long the terminal UI may take over `/clear`, `/compact` or `/exit` before the session
/// reports it as an error of the target (at least; the request limit applies when longer).
const EVENT_LIMIT: Duration = Duration::from_secs(30);

/// What a caller adds to every CLI of a session; the default adds nothing, and `open` uses
/// it. This is how a session runs Claude Code with hooks installed (tests/claude_code_hook.rs).
#[derive(Debug, Clone, Default)]
pub struct Extra {
    /// Written as `$CLAUDE_CONFIG_DIR/settings.json`, the user settings every CLI of the
    /// session reads (Claude Code's `hooks`, for instance), before any CLI starts.
    pub settings: Option<Value>,
    /// Folders put before the inherited `PATH` of every CLI (and so of the commands its
    /// hooks run), so that a command the settings name by its bare name is found there.
    pub path: Vec<PathBuf>,
}

pub struct ClaudeCodeSession {
    hello: Hello,
    root: PathBuf,
    setup: Setup,
    /// The private HOME/CLAUDE_CONFIG_DIR, removed when the session ends (or, through the
    /// guard, when a signal ends taskproof).
    _config: tempfile::TempDir,
    _guard: TempGuard,
    features: Features,
    options: SessionOptions,
    clis: HashMap<String, Running>,
    next_request: u64,
    next_tool: u64,
    tool_uses: u64,
    tool_results: u64,
    transcript: String,
    dead: Option<TargetError>,
    /// The conversation of each list's CLI (Claude Code's session id), kept across `exit`
    /// and `kill` so that `resume` starts the same conversation again. It is the id the CLI
    /// was started with until a request names another (`/clear` starts a new conversation
    /// under a new id), and for the session's own list it names the list's folder.
    conversations: HashMap<String, String>,
    /// The lists whose CLIs an `exit` or `kill` ended, in the order they were started:
    /// `resume` starts them again.
    suspended: Option<Vec<String>>,
    /// Lists whose next CLI resumes its conversation.
    resuming: Vec<String>,
    /// With agent teams on in the terminal UI: the team the CLI of the session's own list
    /// made at start, whose folder holds that list (`note_own_team`).
    own_team: Option<String>,
}

/// A new conversation id: a random UUID (version 4), as Claude Code makes its own.
fn new_conversation_id() -> String {
    let b: [u8; 16] = rand::random();
    let hex: String = b
        .iter()
        .enumerate()
        .map(|(i, x)| match i {
            6 => format!("{:02x}", (x & 0x0f) | 0x40),
            8 => format!("{:02x}", (x & 0x3f) | 0x80),
            _ => format!("{x:02x}"),
        })
        .collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

fn spawn_error(e: impl std::fmt::Display) -> (TargetError, String) {
    (TargetError::Spawn(e.to_string()), String::new())
}

impl ClaudeCodeSession {
    /// Installs the version if needed (not timed), prepares the private config folder and
    /// answers `hello`. CLIs start when a request first touches their list.
    pub fn open(
        spec: &ClaudeCode,
        root: &Path,
        options: SessionOptions,
    ) -> Result<ClaudeCodeSession, (TargetError, String)> {
        Self::open_with(spec, root, options, &Extra::default())
    }

    /// [`open`](Self::open), with `extra` added to every CLI of the session.
    pub fn open_with(
        spec: &ClaudeCode,
        root: &Path,
        options: SessionOptions,
        extra: &Extra,
    ) -> Result<ClaudeCodeSession, (TargetError, String)> {
        let install = spec.prepare().map_err(spawn_error)?;
        let root = std::path::absolute(root).map_err(spawn_error)?;
        // Created and registered at once, before anything is written into it, so a signal
        // that ends taskproof from here on removes it.
        let (config, guard) = TempGuard::tempdir("taskproof-claude-code-")
            .map_err(|e| spawn_error(format!("failed to create a config folder: {e}")))?;
        let setup = prepare_config(config.path(), &root, &install, extra, &options, spec.config)
            .map_err(spawn_error)?;
        let features = version::features(&install.version);
        let mut options = options;
        let mut transcript = String::new();
        if setup.drive == Drive::Terminal && options.timeout < TERMINAL_MIN_TIMEOUT {
            transcript.push_str(&format!(
                "the terminal UI gets {TERMINAL_MIN_TIMEOUT:?} a request (asked: {:?})\n",
                options.timeout
            ));
            options.timeout = TERMINAL_MIN_TIMEOUT;
        }
        let hello = hello(spec, &install.version, features);
        Ok(ClaudeCodeSession {
            hello,
            root,
            setup,
            _guard: guard,
            _config: config,
            features,
            options,
            clis: HashMap::new(),
            next_request: 1,
            next_tool: 1,
            tool_uses: 0,
            tool_results: 0,
            transcript,
            dead: None,
            conversations: HashMap::new(),
            suspended: None,
            resuming: Vec::new(),
            own_team: None,
        })
    }

    /// The private configuration folder every CLI of the session runs with
    /// (`CLAUDE_CONFIG_DIR`): its `tasks` links to the root; `sessions/` and `teams/` are
    /// the CLI's.
    pub fn config_dir(&self) -> &Path {
        &self.setup.config
    }

    /// How the CLIs of this session are driven.
    pub fn drive(&self) -> Drive {
        self.setup.drive
    }

    /// How many `tool_use` calls the scripted model made, and how many `tool_result`s of
    /// them the CLI sent back: equal when every tool really ran.
    pub fn tool_calls(&self) -> (u64, u64) {
        (self.tool_uses, self.tool_results)
    }

    /// What the scripted model asked and the CLI answered, one line each.
    pub fn transcript(&self) -> &str {
        &self.transcript
    }

    fn note(&mut self, line: String) {
        if self.transcript.len() + line.len() < MAX_TRANSCRIPT {
            self.transcript.push_str(&line);
            self.transcript.push('\n');
        }
    }

    fn fail(&mut self, e: TargetError) -> TargetError {
        for (_, mut r) in self.clis.drain() {
            r.cli.kill();
        }
        self.dead = Some(e.clone());
        e
    }

    /// The CLI of `list`, started (or restarted) if needed within the start-up limit.
    fn running(&mut self, list: &str) -> Result<&mut Running, TargetError> {
        if self
            .clis
            .get(list)
            .is_some_and(|r| r.requests >= RESTART_EVERY)
            && let Some(mut old) = self.clis.remove(list)
        {
            old.cli.kill();
        }
        if !self.clis.contains_key(list) {
            let conversation = match self.resuming.iter().position(|l| l == list) {
                Some(i) => {
                    self.resuming.remove(i);
                    Conversation::Resume(self.conversations[list].clone())
                }
                // A CLI replaced on the session's own list (after RESTART_EVERY requests, or
                // stuck on a prompt) goes on with the same conversation, whose id names the
                // list: a new one would start an empty list.
                None if list == SESSION_LIST && self.conversations.contains_key(list) => {
                    let id = self.conversations[list].clone();
                    if transcript_exists(&self.setup.config, &id) {
                        Conversation::Resume(id)
                    } else {
                        Conversation::New(id)
                    }
                }
                None => Conversation::New(new_conversation_id()),
            };
            self.conversations
                .insert(list.to_string(), conversation.id().to_string());
            let log = self.options.model_log.clone().map(|log| {
                (
                    log,
                    format!("list {list}, conversation {}", conversation.id()),
                )
            });
            let model = ScriptedModel::start(ClaudeCodeRecognizer, log)
                .map_err(|e| TargetError::Spawn(e.to_string()))?;
            let teams_before = team_records(&self.setup.config);
            let cli = start_ready(
                &self.setup,
                list,
                &model.base_url(),
                &conversation,
                self.options.start_timeout,
            )?;
            if list == SESSION_LIST && self.teams_in_terminal() {
                self.note_own_team(&teams_before, conversation.id());
            }
            self.clis.insert(
                list.to_string(),
                Running {
                    cli,
                    model,
                    requests: 0,
                    members: HashSet::new(),
                },
            );
        }
        Ok(self.clis.get_mut(list).expect("just inserted"))
    }

    /// Types (or sends) the prompt of request `n` to the CLI of `list`, starting the CLI if
    /// needed; says whether the CLI is fresh (its start-up is still going on in print mode).
    fn send_prompt(&mut self, list: &str, n: u64) -> Result<bool, TargetError> {
        let run = self.running(list)?;
        run.requests += 1;
        // A fresh CLI reads its first prompt only once it has started (in print mode nothing
        // tells when): until the prompt reaches the model, the start-up limit applies.
        let fresh = run.requests == 1;
        if run.cli.drive == Drive::Terminal {
            // A prompt typed while the UI still finishes the last turn can stick in its queue
            // (2.1.17 then shows a spinner and never calls the model): wait until it is idle.
            run.cli
                .wait_quiet(Duration::from_millis(300), Duration::from_secs(5));
        }
        run.model.expect_prompt(n);
        if let Err(e) = run.cli.submit(&format!("Do {}.", prompt_marker(n))) {
            let status = run.cli.exited().unwrap_or_else(|| e.to_string());
            let output = run.cli.output();
            return Err(self.fail(TargetError::Exited {
                status: format!("{status}; its output ended with: {}", tail(&output)),
            }));
        }
        Ok(fresh)
    }

    /// One protocol request as one turn: the prompt goes to the CLI of `list`, and the
    /// script's tool calls answer it. With `member`, the lead hands the prompt to that
    /// teammate (spawning it with the `Agent` tool the first time, with `SendMessage` after)
    /// and the script answers in the teammate's conversation.
    fn turn(
        &mut self,
        op: &str,
        list: &str,
        member: Option<&str>,
        mut script: mapping::Script,
    ) -> Result<Value, TargetError> {
        let n = self.next_request;
        self.next_request += 1;
        let timeout = self.options.timeout;
        let start_timeout = self.options.start_timeout;
        let mut fresh = self.send_prompt(list, n)?;
        // After the CLI started: its conversation names the session's own list.
        let mut dir = self.list_dir(list);
        let mut submitted = Instant::now();
        let mut resent = 0;
        let mut deadline = Instant::now()
            + if fresh {
                start_timeout.max(timeout)
            } else {
                timeout
            };
        let mut prompted = false;
        let mut handoff = member;
        let mut last_enter = Instant::now();
        loop {
            let run = self.clis.get_mut(list).expect("running");
            let now = Instant::now();
            if now >= deadline {
                let output = run.cli.output();
                let side = run.model.seen().recent_side.join("\n    ");
                self.note(format!(
                    "timeout; the last side requests:\n    {side}\nthe CLI's output ended with: {}",
                    tail(&output)
                ));
                let limit = if fresh && !prompted {
                    start_timeout.max(timeout)
                } else {
                    timeout
                };
                return Err(self.fail(TargetError::Timeout(limit)));
            }
            let wait = (deadline - now).min(Duration::from_millis(100));
            let exchange = match run.model.next(wait) {
                Ok(x) => x,
                Err(RecvTimeoutError::Timeout) => {
                    if let Some(status) = run.cli.exited() {
                        let output = run.cli.output();
                        return Err(self.fail(TargetError::Exited {
                            status: format!("{status}; its output ended with: {}", tail(&output)),
                        }));
                    }
                    if !prompted
                        && run.cli.drive == Drive::Terminal
                        && submitted.elapsed() >= STUCK_AFTER
                        && resent < MAX_RESENDS
                    {
                        // The prompt never reached the model although the UI took it (see
                        // STUCK_AFTER). No tool ran for it, so a new CLI can be given it.
                        resent += 1;
                        self.note(format!(
                            "request {n}: the terminal UI sat on the prompt for {:?} without calling the model; restarting it and typing the prompt again",
                            submitted.elapsed()
                        ));
                        if let Some(mut old) = self.clis.remove(list) {
                            old.cli.kill();
                        }
                        fresh = self.send_prompt(list, n)?;
                        submitted = Instant::now();
                        last_enter = Instant::now();
                        deadline = Instant::now() + start_timeout.max(timeout);
                        continue;
                    }
                    if !prompted
                        && run.cli.drive == Drive::Terminal
                        && last_enter.elapsed() >= ENTER_AGAIN
                    {
                        let _ = run.cli.press_enter();
                        last_enter = Instant::now();
                    }
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(self.fail(TargetError::Io("the scripted model stopped".into())));
                }
            };
            let result: Option<ToolResult> = match &exchange.turn {
                Turn::Prompt(_) => {
                    prompted = true;
                    if fresh {
                        deadline = Instant::now() + timeout;
                    }
                    if let Some(id) = &exchange.session {
                        self.follow_conversation(list, id, n);
                        dir = self.list_dir(list);
                    }
                    if let Some(name) = handoff.take() {
                        self.hand_to_member(list, name, n, exchange);
                        continue;
                    }
                    None
                }
                Turn::Result(r) => {
                    self.tool_results += 1;
                    let flag = if r.is_error { "error" } else { "ok" };
                    self.note(format!("  <- {flag}: {}", r.text.replace('\n', "\\n")));
                    Some(r.clone())
                }
            };
            match script.next(result.as_ref(), &dir) {
                Ok(Step::Call { name, input }) => {
                    let id = format!("toolu_taskproof_{}", self.next_tool);
                    self.next_tool += 1;
                    self.tool_uses += 1;
                    let by = member.map(|m| format!(" by {m}")).unwrap_or_default();
                    self.note(format!("request {n} ({op}{by}) -> {name} {input}"));
                    let run = self.clis.get_mut(list).expect("running");
                    run.model.expect_tool(&id);
                    exchange.answer(Reply::Tool {
                        id,
                        name: name.to_string(),
                        input,
                    });
                }
                Ok(Step::Done(answer)) => {
                    let run = self.clis.get_mut(list).expect("running");
                    run.model.expect_nothing();
                    exchange.answer(Reply::EndTurn);
                    return Ok(answer);
                }
                Err(reason) => {
                    exchange.answer(Reply::EndTurn);
                    return Err(self.fail(TargetError::BadResponse {
                        op: op.to_string(),
                        reason,
                    }));
                }
            }
        }
    }
}

impl ClaudeCodeSession {
    /// The folder of `list` under the root: the list's own, or for the session's own list
    /// the folder of the CLI's session id.
    fn list_dir(&self, list: &str) -> PathBuf {
        match self.conversations.get(list) {
            Some(id) if list == SESSION_LIST => {
                mapping::list_dir(&self.root, &self.own_list_folder(id))
            }
            _ => mapping::list_dir(&self.root, list),
        }
    }

    /// The folder name of the session's own list while its conversation is `id`: `id`,
    /// or with agent teams on in the terminal UI the team the CLI made of it at start. That
    /// team is read from the CLI's own record (`teams/<name>/config.json` in the config
    /// folder, whose `leadSessionId` names the conversation), since a version may key it to
    /// another id than the conversation's (issue 54: 2.1.207 to 2.1.276 key a resumed
    /// session's team to a fresh id); without a record, `session-<first 8 of id>`.
    fn own_list_folder(&self, id: &str) -> String {
        if !self.teams_in_terminal() {
            return id.to_string();
        }
        match self
            .own_team
            .clone()
            .or_else(|| lead_team(&self.setup.config, id))
        {
            Some(team) => taskproof_core::layout::claude_code_name(&team),
            None => self.setup.configuration.own_list_folder(id, true),
        }
    }

    /// Takes the session id a request of `list`'s CLI named as its conversation from now on
    /// (a `/clear` starts a new one), saying so in the transcript when it changed.
    fn follow_conversation(&mut self, list: &str, id: &str, n: u64) {
        let old = self.conversations.insert(list.to_string(), id.to_string());
        if let Some(old) = old.filter(|old| old != id) {
            let own = match (&self.own_team, list == SESSION_LIST) {
                // With teams on, the list is the team's, whose folder does not follow the id.
                (Some(team), true) if self.teams_in_terminal() => {
                    format!("; the session's own list stays the team folder {team}")
                }
                (_, true) => format!("; the session's own list is {id} now"),
                (_, false) => String::new(),
            };
            self.note(format!(
                "request {n}: the CLI of list {list:?} names session id {id}, no longer {old}{own}"
            ));
        }
    }

    /// How long one session event may take.
    fn event_limit(&self) -> Duration {
        EVENT_LIMIT.max(self.options.timeout)
    }
}

/// The session's `hello`: layout `claude-code`, and the optional parts of the contract the
/// version's task tools have.
fn hello(spec: &ClaudeCode, version: &str, features: Features) -> Hello {
    // The optional parts of the contract its tools have (docs/claude-code.md, "Mapping"):
    // every one but edge removal (`TaskUpdate` has no removeBlocks/removeBlockedBy);
    // edges given at creation are a `TaskUpdate` right after the `TaskCreate`, as an
    // agent does it.
    let mut announced = vec![
        Feature::Claim,
        Feature::Edges,
        Feature::Metadata,
        Feature::Owner,
        Feature::ActiveForm,
        Feature::EdgesAtCreate,
        Feature::Lists,
        // The list the CLI keeps under its session id when it is given none, as most
        // users run it (docs/claude-code.md, "The session's own list").
        Feature::SessionList,
    ];
    if features.delete {
        announced.push(Feature::Delete);
    }
    // Teammates, with teams on. They run in the lead's process in the terminal UI only
    // (in print mode a named `Agent` is a plain subagent without the task tools:
    // docs/claude-code.md, "Agent teams driven by the scripted model"), where a scenario
    // with a member runs (`Scenario::plays_a_user`); a member's request to a session in
    // print mode is answered `unsupported`.
    if spec.config.teams() {
        announced.push(Feature::Team);
    }
    Hello {
        protocol: PROTOCOL_VERSION,
        name: "claude-code".into(),
        version: version.to_string(),
        layout: Layout::ClaudeCode,
        features: announced.into_iter().collect(),
        mapping: features.stated(),
    }
}

fn transcript_exists(config: &Path, id: &str) -> bool {
    let Ok(projects) = std::fs::read_dir(config.join("projects")) else {
        return false;
    };
    projects
        .flatten()
        .any(|p| p.path().join(format!("{id}.jsonl")).is_file())
}

/// The last part of a CLI's output, for an error message.
fn tail(output: &str) -> String {
    let text: String = output.split_whitespace().collect::<Vec<_>>().join(" ");
    let start = text.len().saturating_sub(600);
    let mut cut = start;
    while !text.is_char_boundary(cut) {
        cut += 1;
    }
    text[cut..].to_string()
}

/// Starts a CLI on `list` and waits until its input box shows (within `limit`); one that
/// does not is killed, and the error has the end of what it printed.
fn start_ready(
    setup: &Setup,
    list: &str,
    base_url: &str,
    conversation: &Conversation,
    limit: Duration,
) -> Result<ClaudeProcess, TargetError> {
    let mut cli = ClaudeProcess::start(setup, list, base_url, conversation)
        .map_err(|e| TargetError::Spawn(e.to_string()))?;
    if let Err(reason) = cli.wait_ready(limit) {
        let output = cli.output();
        cli.kill();
        return Err(TargetError::Spawn(format!(
            "Claude Code {} {reason}; its output ended with: {}",
            setup.install.version,
            tail(&output)
        )));
    }
    Ok(cli)
}

/// The private config folder: `tasks` links to the root, a working folder, and the answers
/// of the first-run dialogs the terminal UI would otherwise ask (onboarding done, the API key
/// approved, the working folder trusted).
fn prepare_config(
    config: &Path,
    root: &Path,
    install: &Installation,
    extra: &Extra,
    options: &SessionOptions,
    configuration: Config,
) -> Result<Setup, String> {
    std::env::join_paths(&extra.path)
        .map_err(|e| format!("failed to put the extra folders on PATH: {e}"))?;
    let cwd = config.join("work");
    std::fs::create_dir_all(&cwd)
        .map_err(|e| format!("failed to create {}: {e}", cwd.display()))?;
    let cwd = cwd
        .canonicalize()
        .map_err(|e| format!("failed to resolve {}: {e}", cwd.display()))?;
    std::os::unix::fs::symlink(root, config.join("tasks"))
        .map_err(|e| format!("failed to link {}/tasks to the root: {e}", config.display()))?;
    write_first_run_answers(config, &cwd)?;
    if let Some(settings) = configuration.settings(extra.settings.as_ref())? {
        let path = config.join("settings.json");
        std::fs::write(&path, format!("{settings:#}\n"))
            .map_err(|e| format!("failed to write {}: {e}", path.display()))?;
    }
    Ok(Setup {
        install: install.clone(),
        drive: version::drive(&install.version, options.interactive, options.drive),
        config: config.to_path_buf(),
        cwd,
        path: extra.path.clone(),
        configuration,
    })
}

impl Session for ClaudeCodeSession {
    fn hello(&self) -> &Hello {
        &self.hello
    }

    fn call(&mut self, request: &Value) -> Result<Value, TargetError> {
        if let Some(e) = &self.dead {
            return Err(e.clone());
        }
        let op = request
            .get("op")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string();
        // The member of the team that sends it (docs/scenario-format.md, "Agent teams"):
        // taken out of the request, which the mapping then reads as the lead's.
        let mut request = request.clone();
        let member = match request.as_object_mut().and_then(|o| o.remove(MEMBER)) {
            None => None,
            Some(Value::String(m)) if valid_member(&m) => {
                if !self.hello.features.contains(&Feature::Team)
                    || self.setup.drive != Drive::Terminal
                {
                    return Ok(failure(
                        ErrorKind::Unsupported,
                        format!(
                            "member {m:?}: agent teams need a teams configuration and the terminal UI (this session: {}, {:?})",
                            self.setup.configuration, self.setup.drive
                        ),
                    ));
                }
                Some(m)
            }
            Some(other) => {
                return Ok(failure(
                    ErrorKind::Invalid,
                    format!(
                        "member: {other} is not a teammate's name (letters, digits, _ and -, at most 64, as the Agent tool takes)"
                    ),
                ));
            }
        };
        match mapping::plan(&request, self.features) {
            Plan::Answer(answer) => Ok(answer),
            Plan::Run(planned) => self.turn(&op, &planned.list, member.as_deref(), planned.script),
        }
    }

    fn kill(&mut self) {
        for (_, mut r) in self.clis.drain() {
            r.cli.kill();
        }
        self.dead = Some(TargetError::Killed);
    }

    fn close(&mut self) -> Result<(), TargetError> {
        // Every answer was given after its tool finished writing, so nothing is pending:
        // stopping the CLIs loses nothing.
        for (_, mut r) in self.clis.drain() {
            r.cli.kill();
        }
        match self.dead.replace(TargetError::Killed) {
            None | Some(TargetError::Killed) => Ok(()),
            Some(e) => Err(e),
        }
    }

    fn event(&mut self, event: SessionEvent) -> Result<bool, TargetError> {
        if let Some(e) = &self.dead
            && !matches!(event, SessionEvent::Resume | SessionEvent::Kill)
        {
            return Err(e.clone());
        }
        match event {
            SessionEvent::Clear => self.slash("/clear", false)?,
            SessionEvent::Compact => self.slash("/compact", true)?,
            SessionEvent::Exit => {
                self.end_clis(true)?;
                self.dead = Some(TargetError::Io("the session was exited".into()));
            }
            SessionEvent::Kill => {
                self.end_clis(false)?;
                self.dead = Some(TargetError::Killed);
            }
            SessionEvent::Resume => self.resume()?,
        }
        Ok(true)
    }

    fn own_list(&self) -> Option<String> {
        self.conversations
            .get(SESSION_LIST)
            .map(|id| taskproof_core::layout::claude_code_name(&self.own_list_folder(id)))
    }

    fn stderr(&self) -> String {
        let mut out = self.transcript.clone();
        for (list, r) in &self.clis {
            let seen = r.model.seen();
            out.push_str(&format!(
                "[CLI of list {list:?}: {} turns, {} side requests] {}\n",
                seen.turns,
                seen.side,
                tail(&r.cli.output())
            ));
        }
        out
    }
}
