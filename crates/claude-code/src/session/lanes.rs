//! Race writers that are members of one agent team: the lead of one Claude Code CLI (terminal
//! UI, agent teams on) and in-process teammates it spawned, each a [`Session`] of its own,
//! all backed by that one process (`race --teammates N`, docs/race.md, "A team and another
//! product").
//!
//! Why not one prompt per request, as [`ClaudeCodeSession`] drives a member: a teammate's
//! request would then need a turn of the lead (its `SendMessage`) first, so the lead's own
//! requests and every hand-off would queue behind each other in one input box. Instead each
//! member keeps **one turn under way** for the whole race, as an agent working through a list
//! does: the lead's turn spawns the teammates with `Agent` and goes on; each teammate's turn
//! starts with its spawn prompt. A request of a writer is the next tool calls of its own
//! conversation: the scripted model answers the request the CLI holds open for that
//! conversation (the last tool result, or the first prompt) with the script's `tool_use`, and
//! the result that comes back ends the request and is held until the writer's next one.
//! Measured before this was built (a `/tmp` probe with the repro helpers, 2.1.332, teams on,
//! `CLAUDE_CODE_TASK_LIST_ID=race`, load 0.5): the lead and w1 each made 30 `TaskUpdate`s of
//! task 1 this way in 3.4 s, 28 of the lead's 30 calls in flight while one of w1's was, both
//! writing `race/1.json`; a prompt typed to the lead while w1's turn was still under way also
//! reached the model at once, so both ways overlap, and this one does not queue.
//!
//! The lanes share the CLI, its scripted model and the transcript behind one lock, held only
//! to start the CLI and to tell the model what a lane awaits; each lane waits for its own
//! turns on its own channel ([`ScriptedModel::await_on`]). A lane's kill ends the CLI, and
//! with it every lane.

use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, MutexGuard};

use taskproof_model::scripted::{Awaited, Exchange};

use super::*;

/// What the lanes share: the one CLI and its model.
struct Team {
    setup: Setup,
    _config: tempfile::TempDir,
    _guard: TempGuard,
    model: ScriptedModel,
    cli: Option<ClaudeProcess>,
    /// The list the team works on: the first request's; the CLI runs on it.
    list: Option<String>,
    /// Each lane's channel, the lead's first (member `None`).
    lanes: Vec<(Option<String>, Sender<Exchange>)>,
    next_tool: u64,
    transcript: String,
    dead: Option<TargetError>,
}

impl Team {
    fn note(&mut self, line: String) {
        if self.transcript.len() + line.len() < MAX_TRANSCRIPT {
            self.transcript.push_str(&line);
            self.transcript.push('\n');
        }
    }

    fn fail(&mut self, e: TargetError) -> TargetError {
        if let Some(mut cli) = self.cli.take() {
            cli.kill();
        }
        self.dead = Some(e.clone());
        e
    }

    fn tool_id(&mut self) -> String {
        let id = format!("toolu_taskproof_team_{}", self.next_tool);
        self.next_tool += 1;
        id
    }

    /// Starts the CLI on `list` and the members' turns: the lead's prompt (request 1) is
    /// typed, its turn spawns each member with `Agent` (member `k` gets request `k + 1`'s
    /// spawn prompt); the last spawn's result is held for the lead's lane, each member's
    /// prompt for its own. Within the start-up limit.
    fn start(&mut self, list: &str, limit: Duration) -> Result<(), TargetError> {
        let conversation = Conversation::New(new_conversation_id());
        let deadline = Instant::now() + limit;
        let mut cli = start_ready(
            &self.setup,
            list,
            &self.model.base_url(),
            &conversation,
            limit,
        )?;
        cli.wait_quiet(Duration::from_millis(300), Duration::from_secs(5));
        self.note(format!(
            "team: the CLI of list {list:?} (conversation {}) started; its lead and {} teammate(s) are race writers",
            conversation.id(),
            self.lanes.len() - 1
        ));
        let (tx, rx) = mpsc::channel();
        self.model
            .await_on(Awaited::Prompt { n: 1, member: None }, tx.clone());
        let submitted = cli.submit(&format!("Do {}.", prompt_marker(1)));
        self.cli = Some(cli);
        submitted.map_err(|e| TargetError::Io(format!("failed to type the lead's prompt: {e}")))?;
        let mut held = Some(self.wait_start(&rx, deadline)?);
        let members: Vec<(String, Sender<Exchange>)> = self.lanes[1..]
            .iter()
            .map(|(m, tx)| (m.clone().expect("members are named"), tx.clone()))
            .collect();
        let lead = self.lanes[0].1.clone();
        if members.is_empty() {
            let _ = lead.send(held.take().expect("the lead's prompt"));
            return Ok(());
        }
        for (k, (name, member_tx)) in members.iter().enumerate() {
            let n = k as u64 + 2;
            let id = self.tool_id();
            self.model.await_on(
                Awaited::Prompt {
                    n,
                    member: Some(name.clone()),
                },
                member_tx.clone(),
            );
            let last = k + 1 == members.len();
            self.model.await_on(
                Awaited::Tool(id.clone()),
                if last { lead.clone() } else { tx.clone() },
            );
            let input = json!({"description": format!("taskproof member {name}"),
                               "prompt": spawn_prompt(name, n), "name": name,
                               "subagent_type": "general-purpose"});
            self.note(format!("team: the lead -> Agent {input}"));
            held.take().expect("the lead's turn").answer(Reply::Tool {
                id,
                name: "Agent".into(),
                input,
            });
            if !last {
                held = Some(self.wait_start(&rx, deadline)?);
            }
        }
        Ok(())
    }

    /// The next turn on the start's own channel, before `deadline`; the terminal UI gets
    /// Enter again now and then while its prompt has not reached the model.
    fn wait_start(
        &mut self,
        rx: &Receiver<Exchange>,
        deadline: Instant,
    ) -> Result<Exchange, TargetError> {
        let mut last_enter = Instant::now();
        loop {
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(x) => return Ok(x),
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(self.fail(TargetError::Io("the scripted model stopped".into())));
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            let cli = self.cli.as_mut().expect("started");
            if let Some(status) = cli.exited() {
                let output = cli.output();
                return Err(self.fail(TargetError::Exited {
                    status: format!("{status}; its output ended with: {}", tail(&output)),
                }));
            }
            if Instant::now() >= deadline {
                let output = cli.output();
                self.note(format!(
                    "team: the start timed out; the CLI's output ended with: {}",
                    tail(&output)
                ));
                return Err(self.fail(TargetError::Timeout(
                    deadline.saturating_duration_since(Instant::now()),
                )));
            }
            if last_enter.elapsed() >= ENTER_AGAIN {
                let _ = cli.press_enter();
                last_enter = Instant::now();
            }
        }
    }
}

impl Drop for Team {
    fn drop(&mut self) {
        if let Some(mut cli) = self.cli.take() {
            cli.kill();
        }
    }
}

/// One race writer of a team: the lead (`member` `None`) or a teammate.
pub struct TeamLane {
    team: Arc<Mutex<Team>>,
    member: Option<String>,
    hello: Hello,
    features: Features,
    root: PathBuf,
    options: SessionOptions,
    turns: Receiver<Exchange>,
    tx: Sender<Exchange>,
    /// The request the CLI holds open for this member's conversation, to be answered with
    /// its next tool call: its first prompt, then each last tool result.
    held: Option<Exchange>,
}

fn lock(team: &Mutex<Team>) -> MutexGuard<'_, Team> {
    team.lock().unwrap_or_else(|p| p.into_inner())
}

/// Opens the lead and `members` (teammates' names) as race writers backed by one CLI of
/// `spec` (a teams configuration; the terminal UI, whatever `options.drive` says): one
/// session each, the lead's first. The CLI starts on the first request of any of them.
pub fn open_team(
    spec: &ClaudeCode,
    root: &Path,
    options: SessionOptions,
    members: &[String],
) -> Result<Vec<TeamLane>, TargetError> {
    if !spec.config.teams() {
        return Err(TargetError::Spawn(format!(
            "{spec}: teammates need a teams configuration (claude-code@VERSION:teams-env)"
        )));
    }
    if let Some(bad) = members.iter().find(|m| !valid_member(m)) {
        return Err(TargetError::Spawn(format!(
            "{bad:?} is not a teammate's name the Agent tool takes"
        )));
    }
    let install = spec
        .prepare()
        .map_err(|e| TargetError::Spawn(e.to_string()))?;
    let root = std::path::absolute(root).map_err(|e| TargetError::Spawn(e.to_string()))?;
    let (config, guard) = TempGuard::tempdir("taskproof-claude-code-team-")
        .map_err(|e| TargetError::Spawn(format!("failed to create a config folder: {e}")))?;
    let mut options = options;
    options.drive = Some(Drive::Terminal);
    options.timeout = options.timeout.max(TERMINAL_MIN_TIMEOUT);
    let setup = prepare_config(
        config.path(),
        &root,
        &install,
        &Extra::default(),
        &options,
        spec.config,
    )
    .map_err(TargetError::Spawn)?;
    let features = version::features(&install.version);
    let model = ScriptedModel::start(
        ClaudeCodeRecognizer,
        options
            .model_log
            .clone()
            .map(|l| (l, "team race".to_string())),
    )
    .map_err(|e| TargetError::Spawn(e.to_string()))?;
    let hello = hello(spec, &install.version, features);
    let names: Vec<Option<String>> = std::iter::once(None)
        .chain(members.iter().cloned().map(Some))
        .collect();
    let channels: Vec<(Sender<Exchange>, Receiver<Exchange>)> =
        names.iter().map(|_| mpsc::channel()).collect();
    let team = Arc::new(Mutex::new(Team {
        setup,
        _config: config,
        _guard: guard,
        model,
        cli: None,
        list: None,
        lanes: names
            .iter()
            .cloned()
            .zip(channels.iter().map(|(tx, _)| tx.clone()))
            .collect(),
        next_tool: 1,
        transcript: String::new(),
        dead: None,
    }));
    Ok(names
        .into_iter()
        .zip(channels)
        .map(|(member, (tx, turns))| TeamLane {
            team: Arc::clone(&team),
            member,
            hello: hello.clone(),
            features,
            root: root.clone(),
            options: options.clone(),
            turns,
            tx,
            held: None,
        })
        .collect())
}

impl TeamLane {
    /// The member this lane writes as: `lead`, or the teammate's name.
    pub fn member(&self) -> &str {
        self.member.as_deref().unwrap_or("lead")
    }

    /// Waits for this lane's next turn within the request limit, watching the CLI.
    fn next_turn(&mut self, limit: Duration) -> Result<Exchange, TargetError> {
        let deadline = Instant::now() + limit;
        loop {
            match self.turns.recv_timeout(Duration::from_millis(100)) {
                Ok(x) => return Ok(x),
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    unreachable!("the lane keeps a sender")
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            let mut team = lock(&self.team);
            if let Some(e) = &team.dead {
                return Err(e.clone());
            }
            if let Some(cli) = team.cli.as_mut()
                && let Some(status) = cli.exited()
            {
                let output = cli.output();
                return Err(team.fail(TargetError::Exited {
                    status: format!("{status}; its output ended with: {}", tail(&output)),
                }));
            }
            if Instant::now() >= deadline {
                let who = self.member().to_string();
                team.note(format!("team: {who}'s turn did not come within {limit:?}"));
                return Err(team.fail(TargetError::Timeout(limit)));
            }
        }
    }

    fn run(
        &mut self,
        op: &str,
        list: &str,
        mut script: mapping::Script,
    ) -> Result<Value, TargetError> {
        {
            let mut team = lock(&self.team);
            if let Some(e) = &team.dead {
                return Err(e.clone());
            }
            match team.list.clone() {
                None => {
                    team.list = Some(list.to_string());
                    let limit = self.options.start_timeout.max(self.options.timeout);
                    if let Err(e) = team.start(list, limit) {
                        return Err(team.fail(e));
                    }
                }
                Some(l) if l != list => {
                    return Ok(failure(
                        ErrorKind::Unsupported,
                        format!("a team's race writers work on one list ({l:?}), not {list:?}"),
                    ));
                }
                Some(_) => {}
            }
        }
        let limit = self.options.start_timeout.max(self.options.timeout);
        let mut held = match self.held.take() {
            Some(x) => x,
            None => self.next_turn(limit)?,
        };
        let dir = mapping::list_dir(&self.root, list);
        let mut result: Option<ToolResult> = None;
        loop {
            match script.next(result.as_ref(), &dir) {
                Ok(Step::Call { name, input }) => {
                    {
                        let mut team = lock(&self.team);
                        let id = team.tool_id();
                        team.note(format!("{} ({op}) -> {name} {input}", self.member()));
                        team.model
                            .await_on(Awaited::Tool(id.clone()), self.tx.clone());
                        held.answer(Reply::Tool {
                            id,
                            name: name.to_string(),
                            input,
                        });
                    }
                    held = self.next_turn(self.options.timeout)?;
                    let Turn::Result(r) = &held.turn else {
                        return Err(lock(&self.team).fail(TargetError::BadResponse {
                            op: op.to_string(),
                            reason: format!("awaited a tool result, got {:?}", held.turn),
                        }));
                    };
                    let flag = if r.is_error { "error" } else { "ok" };
                    lock(&self.team).note(format!(
                        "  {} <- {flag}: {}",
                        self.member(),
                        r.text.replace('\n', "\\n")
                    ));
                    result = Some(r.clone());
                }
                Ok(Step::Done(answer)) => {
                    self.held = Some(held);
                    return Ok(answer);
                }
                Err(reason) => {
                    self.held = Some(held);
                    return Err(lock(&self.team).fail(TargetError::BadResponse {
                        op: op.to_string(),
                        reason,
                    }));
                }
            }
        }
    }
}

impl Session for TeamLane {
    fn hello(&self) -> &Hello {
        &self.hello
    }

    fn call(&mut self, request: &Value) -> Result<Value, TargetError> {
        let op = request
            .get("op")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string();
        if request.get(MEMBER).is_some() {
            return Ok(failure(
                ErrorKind::Invalid,
                "member: a team lane writes as its own member only",
            ));
        }
        match mapping::plan(request, self.features) {
            Plan::Answer(answer) => Ok(answer),
            Plan::Run(planned) => self.run(&op, &planned.list, planned.script),
        }
    }

    fn kill(&mut self) {
        let mut team = lock(&self.team);
        team.fail(TargetError::Killed);
    }

    /// Ends this member's turn; the CLI ends with the last lane.
    fn close(&mut self) -> Result<(), TargetError> {
        if let Some(held) = self.held.take() {
            held.answer(Reply::EndTurn);
        }
        match &lock(&self.team).dead {
            None | Some(TargetError::Killed) => Ok(()),
            Some(e) => Err(e.clone()),
        }
    }

    fn stderr(&self) -> String {
        let team = lock(&self.team);
        let mut out = team.transcript.clone();
        if let Some(cli) = &team.cli {
            out.push_str(&format!("[team CLI] {}\n", tail(&cli.output())));
        }
        out
    }
}
