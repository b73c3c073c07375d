//! A session on the real OpenCode with the real oh-my-opencode plugin: one `opencode run` per
//! task list the session touches, each with its own scripted model and its own config folder
//! whose `oh-my-opencode.json` puts the plugin's `sisyphus.tasks.storage_path` at the list's
//! folder under the root (`ROOT/{list}`), as a user points it at a Claude Code list.
//!
//! `opencode run MESSAGE` is one agent turn: OpenCode sends the message to the model, runs
//! each tool call the model answers with, sends the result back, and ends when the model ends
//! the turn. The session keeps that turn open for as long as it lives: the first request's
//! prompt is the message, each request is the next tool calls of the same turn, and the
//! model's request that carries the last result of a request is held unanswered until the
//! next request (or the end of the session, which ends the turn). OpenCode starts once per
//! list, not once per request (it takes 5 to 15 s to start; a tool call then takes
//! milliseconds).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::install::Installation;
use crate::mapping;
use taskproof_core::protocol::{Feature, Hello, Layout, PROTOCOL_VERSION};
use taskproof_model::scripted::{Exchange, Reply, ScriptedModel, Turn};
use taskproof_model::scripted::{Plan, Step};
use taskproof_session::group::{Group, TempGuard};
use taskproof_session::ids::Book;
use taskproof_session::{Session, SessionOptions, TargetError};

/// The model OpenCode is told to use: any name of the `anthropic` provider does, since the
/// provider's `baseURL` is the scripted model.
const MODEL: &str = "anthropic/claude-sonnet-4-5";
/// How long a model request may be held between two protocol requests before the session
/// starts OpenCode again instead of answering it: OpenCode 1.18.33 gives up waiting for a
/// model answer's headers after 300 s (`ProviderHeaderTimeoutError`, measured) and sends the
/// request again, which the scripted model would take for a side request.
const HOLD_AT_MOST: Duration = Duration::from_secs(240);
/// The least time the first request of an OpenCode gets, whatever `--start-timeout` says: it
/// starts in 7 to 14 s on an idle machine, but several starting at once beside other work
/// (load 10 to 25) took up to 65 s, and a suite starts them two scenarios at a time.
const START_MIN: Duration = Duration::from_secs(150);
/// How long `opencode run` may take to end after its turn ended.
const EXIT_WAIT: Duration = Duration::from_secs(10);
/// How much transcript is kept for the report.
const MAX_TRANSCRIPT: usize = 256 * 1024;

struct Running {
    process: Group,
    model: ScriptedModel,
    /// OpenCode's output (stdout and stderr), in the session folder.
    output: PathBuf,
    /// The model request that carried the last tool result, held for the next request.
    held: Option<(Exchange, Instant)>,
}

pub struct OpencodeSession {
    hello: Hello,
    root: PathBuf,
    install: Installation,
    /// The session's private folder: one folder per OpenCode run (its HOME, config, data and
    /// output), removed when the session ends.
    folder: tempfile::TempDir,
    _guard: TempGuard,
    options: SessionOptions,
    book: Book,
    running: HashMap<String, Running>,
    /// How many OpenCode processes the session started, for their folders' names.
    started: u64,
    next_request: u64,
    next_tool: u64,
    transcript: String,
    dead: Option<TargetError>,
}

fn spawn_error(e: impl std::fmt::Display) -> (TargetError, String) {
    (TargetError::Spawn(e.to_string()), String::new())
}

impl OpencodeSession {
    pub fn open(
        install: &Installation,
        root: &Path,
        options: SessionOptions,
    ) -> Result<OpencodeSession, (TargetError, String)> {
        let root = std::path::absolute(root).map_err(spawn_error)?;
        let (folder, guard) = TempGuard::tempdir("taskproof-opencode-")
            .map_err(|e| spawn_error(format!("failed to create a private folder: {e}")))?;
        let hello = Hello {
            protocol: PROTOCOL_VERSION,
            name: "oh-my-opencode".into(),
            version: format!(
                "{} (opencode {})",
                install.plugin_version, install.opencode_version
            ),
            layout: Layout::Opaque,
            // No claim: the plugin has none (an agent's task_update of status and owner is
            // not exclusive), so claim scenarios are not judged.
            features: [
                Feature::Edges,
                Feature::Metadata,
                Feature::Owner,
                Feature::ActiveForm,
                Feature::EdgesAtCreate,
                Feature::Lists,
                Feature::Delete,
            ]
            .into_iter()
            .collect(),
            mapping: mapping::stated(),
        };
        Ok(OpencodeSession {
            hello,
            book: Book::new(&root),
            root,
            install: install.clone(),
            folder,
            _guard: guard,
            options,
            running: HashMap::new(),
            started: 0,
            next_request: 1,
            next_tool: 1,
            transcript: String::new(),
            dead: None,
        })
    }

    /// How long the first request of a new OpenCode may take: start-up included.
    fn start_limit(&self) -> Duration {
        self.options
            .start_timeout
            .max(self.options.timeout)
            .max(START_MIN)
    }

    fn note(&mut self, line: String) {
        if self.transcript.len() + line.len() < MAX_TRANSCRIPT {
            self.transcript.push_str(&line);
            self.transcript.push('\n');
        }
    }

    fn fail(&mut self, e: TargetError) -> TargetError {
        for (_, mut r) in self.running.drain() {
            r.process.kill();
        }
        self.dead = Some(e.clone());
        e
    }

    /// Starts OpenCode on `list` with the prompt of request `n`.
    fn start(&mut self, list: &str, n: u64) -> Result<(), TargetError> {
        self.started += 1;
        let dir = self.folder.path().join(format!("run-{}", self.started));
        let storage = self.root.join(list);
        let log = self
            .options
            .model_log
            .clone()
            .map(|log| (log, format!("list {list}, OpenCode {}", self.started)));
        let model = ScriptedModel::start(crate::OpencodeRecognizer, log)
            .map_err(|e| TargetError::Spawn(e.to_string()))?;
        let output = dir.join("output.txt");
        let mut command = crate::process::command(&self.install, &dir, &storage, &model.base_url())
            .map_err(TargetError::Spawn)?;
        model.expect_prompt(n);
        command.args([
            "run",
            "--model",
            MODEL,
            &format!("Do {}.", crate::prompt_marker(n)),
        ]);
        let process = Group::spawn(&mut command).map_err(|e| {
            TargetError::Spawn(format!(
                "failed to start {}: {e}",
                self.install.opencode.display()
            ))
        })?;
        self.note(format!(
            "OpenCode {} started for list {list:?} (storage_path {})",
            self.started,
            storage.display()
        ));
        self.running.insert(
            list.to_string(),
            Running {
                process,
                model,
                output,
                held: None,
            },
        );
        Ok(())
    }

    /// The end of OpenCode's output, for an error message.
    fn tail(&self, list: &str) -> String {
        let Some(r) = self.running.get(list) else {
            return String::new();
        };
        let text = std::fs::read_to_string(&r.output).unwrap_or_default();
        let text: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let mut cut = text.len().saturating_sub(600);
        while !text.is_char_boundary(cut) {
            cut += 1;
        }
        text[cut..].to_string()
    }

    fn turn(&mut self, op: &str, mut script: mapping::Script) -> Result<Value, TargetError> {
        let n = self.next_request;
        self.next_request += 1;
        let list = script.list().to_string();
        // A conversation whose held request is too old, or whose OpenCode ended, is
        // replaced by a new one (the tasks are in the list's folder, not the conversation).
        let stale = self.running.get_mut(&list).map(|r| {
            r.process.exited().is_some()
                || r.held
                    .as_ref()
                    .is_none_or(|(_, at)| at.elapsed() >= HOLD_AT_MOST)
        });
        if stale == Some(true) {
            let mut old = self.running.remove(&list).expect("checked above");
            self.note(format!(
                "request {n}: OpenCode of list {list:?} ended or waited too long; starting another"
            ));
            old.process.kill();
        }
        let fresh = !self.running.contains_key(&list);
        if fresh {
            self.start(&list, n)?;
        }
        let mut deadline = Instant::now()
            + if fresh {
                self.start_limit()
            } else {
                self.options.timeout
            };
        let mut held = self
            .running
            .get_mut(&list)
            .and_then(|r| r.held.take())
            .map(|(x, _)| x);
        loop {
            let (exchange, result) = match held.take() {
                // The held request's own result belonged to the request before.
                Some(x) => (x, None),
                None => {
                    let x = self.next_exchange(&list, deadline, fresh)?;
                    let result = match &x.turn {
                        Turn::Prompt(_) => {
                            if fresh {
                                deadline = Instant::now() + self.options.timeout;
                            }
                            None
                        }
                        Turn::Result(r) => {
                            let flag = if r.is_error { "error" } else { "ok" };
                            self.note(format!("  <- {flag}: {}", r.text.replace('\n', "\\n")));
                            let mut r = r.clone();
                            let run_folder = self
                                .running
                                .get(&list)
                                .and_then(|r| r.output.parent().map(Path::to_path_buf));
                            if let Some(full) = run_folder.and_then(|f| untruncated(&r.text, &f)) {
                                self.note(format!(
                                    "  (OpenCode cut the result; read {} bytes from its file)",
                                    full.len()
                                ));
                                r.text = full;
                            }
                            Some(r)
                        }
                    };
                    (x, result)
                }
            };
            let step = self.book.with(|tables| {
                script.next(
                    result.as_ref().map(|r| (r.is_error, r.text.as_str())),
                    tables,
                )
            });
            let step = match step {
                Ok(step) => step,
                Err(e) => {
                    exchange.answer(Reply::EndTurn);
                    return Err(self.fail(TargetError::Io(format!("the id book: {e}"))));
                }
            };
            match step {
                Ok(Step::Call { name, input }) => {
                    let id = format!("toolu_taskproof_{}", self.next_tool);
                    self.next_tool += 1;
                    self.note(format!("request {n} ({op}) -> {name} {input}"));
                    let run = self.running.get_mut(&list).expect("running");
                    run.model.expect_tool(&id);
                    exchange.answer(Reply::Tool {
                        id,
                        name: name.to_string(),
                        input,
                    });
                }
                Ok(Step::Done(answer)) => {
                    let run = self.running.get_mut(&list).expect("running");
                    run.model.expect_nothing();
                    run.held = Some((exchange, Instant::now()));
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

    /// The next model request of `list`'s OpenCode that is a turn, before `deadline`.
    fn next_exchange(
        &mut self,
        list: &str,
        deadline: Instant,
        fresh: bool,
    ) -> Result<Exchange, TargetError> {
        loop {
            let now = Instant::now();
            if now >= deadline {
                let tail = self.tail(list);
                self.note(format!("timeout; OpenCode's output ended with: {tail}"));
                let limit = if fresh {
                    self.start_limit()
                } else {
                    self.options.timeout
                };
                return Err(self.fail(TargetError::Timeout(limit)));
            }
            let run = self.running.get_mut(list).expect("running");
            match run
                .model
                .next((deadline - now).min(Duration::from_millis(100)))
            {
                Ok(x) => return Ok(x),
                Err(RecvTimeoutError::Timeout) => {
                    if let Some(status) = run.process.exited() {
                        let tail = self.tail(list);
                        return Err(self.fail(TargetError::Exited {
                            status: format!("{status}; its output ended with: {tail}"),
                        }));
                    }
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(self.fail(TargetError::Io("the scripted model stopped".into())));
                }
            }
        }
    }

    /// Ends every conversation: the held request answered with the end of the turn, then
    /// OpenCode given [`EXIT_WAIT`] to end by itself before its process group is killed.
    fn end_all(&mut self) {
        for (list, mut r) in self.running.drain() {
            r.model.expect_nothing();
            if let Some((x, _)) = r.held.take() {
                x.answer(Reply::EndTurn);
            }
            let began = Instant::now();
            while r.process.exited().is_none() && began.elapsed() < EXIT_WAIT {
                std::thread::sleep(Duration::from_millis(50));
            }
            let ended = r.process.exited().is_some();
            r.process.kill();
            let how = if ended { "ended" } else { "killed" };
            if self.transcript.len() < MAX_TRANSCRIPT {
                self.transcript
                    .push_str(&format!("OpenCode of list {list:?}: {how}\n"));
            }
        }
    }
}

impl Session for OpencodeSession {
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
        match mapping::plan(request) {
            Plan::Answer(answer) => Ok(answer),
            Plan::Run(script) => self.turn(&op, script),
        }
    }

    fn kill(&mut self) {
        for (_, mut r) in self.running.drain() {
            r.process.kill();
        }
        self.dead = Some(TargetError::Killed);
    }

    fn close(&mut self) -> Result<(), TargetError> {
        // Every answer was given after its tool returned, so nothing is pending.
        self.end_all();
        match self.dead.replace(TargetError::Killed) {
            None | Some(TargetError::Killed) => Ok(()),
            Some(e) => Err(e),
        }
    }

    fn stderr(&self) -> String {
        let mut out = self.transcript.clone();
        for (list, r) in &self.running {
            let seen = r.model.seen();
            out.push_str(&format!(
                "[OpenCode of list {list:?}: {} turns, {} side requests] {}\n",
                seen.turns,
                seen.side,
                self.tail(list)
            ));
        }
        out
    }
}

impl Drop for OpencodeSession {
    fn drop(&mut self) {
        for (_, mut r) in self.running.drain() {
            r.process.kill();
        }
    }
}

/// The whole result of a tool call whose output OpenCode cut for the model (over about 50 KB:
/// "The tool call succeeded but the output was truncated. Full output saved to: PATH"; a
/// task with large metadata), read from the file OpenCode saved it in, inside the run's own
/// data folder (`run`). `None` for a result OpenCode did not cut, or whose file is gone or
/// outside the run's folder.
fn untruncated(text: &str, run: &Path) -> Option<String> {
    const SAVED: &str =
        "The tool call succeeded but the output was truncated. Full output saved to: ";
    let at = text.find(SAVED)? + SAVED.len();
    let path = Path::new(text[at..].lines().next()?.trim());
    if !path.starts_with(run)
        || path
            .components()
            .any(|c| c == std::path::Component::ParentDir)
    {
        return None;
    }
    std::fs::read_to_string(path).ok()
}

/// The config OpenCode reads (`opencode.json`): the `anthropic` provider at the scripted
/// model, nothing fetched or shared, the plugin loaded from its installed package.
pub fn opencode_config(install: &Installation, base_url: &str) -> Value {
    json!({
        "$schema": "https://opencode.ai/config.json",
        "plugin": [format!("file://{}", install.plugin_entry.display())],
        "model": MODEL,
        "small_model": "anthropic/claude-haiku-4-5",
        "autoupdate": false,
        "share": "disabled",
        "provider": {"anthropic": {"options": {
            "baseURL": format!("{base_url}/v1"),
            "apiKey": "taskproof-scripted-model",
        }}},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_result_is_read_whole_from_its_file_in_the_runs_folder_only() {
        let run = tempfile::tempdir().unwrap();
        let file = run.path().join("data/opencode/tool-output/tool_1");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, "{\"task\": {}}").unwrap();
        let cut = |p: &Path| {
            format!(
                "...51414 bytes truncated...\n\nThe tool call succeeded but the output was truncated. Full output saved to: {}\nUse the Task tool to have explore agent process this file",
                p.display()
            )
        };
        assert_eq!(
            untruncated(&cut(&file), run.path()).as_deref(),
            Some("{\"task\": {}}")
        );
        assert_eq!(
            untruncated("{\"task\": {}}", run.path()),
            None,
            "a result OpenCode did not cut"
        );
        let elsewhere = tempfile::tempdir().unwrap();
        let outside = elsewhere.path().join("x");
        std::fs::write(&outside, "secret").unwrap();
        assert_eq!(
            untruncated(&cut(&outside), run.path()),
            None,
            "a file outside the run's folder"
        );
        assert_eq!(
            untruncated(&cut(&run.path().join("../x")), run.path()),
            None,
            "a path that climbs out"
        );
    }
}
