//! The scripted model of a background session: an HTTP server on 127.0.0.1 that plays the
//! Anthropic Messages API for one unmodified Claude Code CLI, like the task-list target's
//! (`taskproof_model::scripted`), made of the same pieces (`taskproof_model::messages`),, but which also reads every request of the agent's conversation
//! for the `<task-notification>` blocks the CLI put into it.
//!
//! The agent's own requests are those offering the `Bash` tool (title, prefix and summary
//! requests of the small model offer none). Each is handled in three steps:
//! 1. every `<task-notification>` in the whole conversation is counted, in order, in every
//!    message the CLI wrote (user messages and, from 2.1.330, `system` messages, which is
//!    where 2.1.332 puts most notifications): the conversation only grows, so the ones past
//!    the count of the last request are new (a notification that arrives during a turn is
//!    merged into the user message before it, so counting per message would see it twice; a
//!    retried request adds none);
//! 2. if the session waits for the prompt of step `n` and the last user message carries its
//!    marker, the answer is the step's tool calls (one `tool_use` block each, so a batch runs
//!    in one turn);
//! 3. if the session waits for the results of those calls and the last user message has them
//!    all, they go to the session and the answer ends the turn.
//!
//! Everything else, notification turns included, gets a short text that ends the turn.
//!
//! Every request and answer goes to the model's own log ([`LogHandle`]) when one was asked
//! for, with the task ids of the notifications counted in it, so the count can be checked
//! against what the CLI sent.

use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use serde_json::{Value, json};

use taskproof_model::messages::{
    ModelError, Server, answer, answer_count_tokens, is_count_tokens, read_messages_request,
    result_text,
};
use taskproof_model::model_log::{Exchange, LogHandle};

/// One tool call of a step.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    pub name: String,
    pub input: Value,
}

/// What the CLI answered to one call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallResult {
    pub is_error: bool,
    pub text: String,
}

/// A `<task-notification>` block as the model received it, and when.
#[derive(Clone, Debug)]
pub struct Received {
    pub text: String,
    pub at: Instant,
    /// The number of the agent's request that brought it.
    pub request: u64,
}

/// A tool the CLI offered in its first request: its name and its input's properties.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Offered {
    pub name: String,
    pub properties: Vec<String>,
}

#[derive(Default)]
struct State {
    /// The step whose prompt is awaited: its number and calls.
    prompt: Option<(u64, Vec<Call>)>,
    /// The `tool_use` ids whose results are awaited, in call order.
    results: Option<Vec<String>>,
    /// Where a step's results go.
    reply: Option<SyncSender<Vec<CallResult>>>,
    /// The notification blocks received so far, in order.
    received: Vec<Received>,
    /// Requests of the agent (offering `Bash`) and side requests.
    agent_requests: u64,
    side_requests: u64,
    /// The tools of the agent's first request.
    tools: Option<Vec<Offered>>,
    /// Conversations that had fewer notification blocks than counted before (compaction
    /// or a rewritten history): reported, never merged away.
    shrunk: Vec<String>,
    /// The distinct `<system-reminder>`s about background work ("Background Bash …", how
    /// versions before `<task-notification>` told the model), in the order first seen.
    reminders: Vec<String>,
    /// Every request and answer, when asked for.
    log: Option<LogHandle>,
}

/// The running server. Dropping it stops it.
pub struct BgScriptedModel {
    server: Server,
    state: Arc<Mutex<State>>,
}

/// How a background session's exchanges are named in the model log (one CLI a session).
const CONVERSATION: &str = "background";

/// The marker of step `n`'s prompt.
pub fn step_marker(n: u64) -> String {
    format!("taskproof background step {n}")
}

/// The `tool_use` id of call `k` of step `n`.
fn tool_use_id(n: u64, k: usize) -> String {
    format!("toolu_taskproof_{n}_{k}")
}

impl BgScriptedModel {
    /// Starts the server; every exchange goes to `log`.
    pub fn start(log: Option<LogHandle>) -> Result<BgScriptedModel, ModelError> {
        let state = Arc::new(Mutex::new(State {
            log,
            ..State::default()
        }));
        let server = {
            let state = Arc::clone(&state);
            Server::start(move |request| handle(request, &state))?
        };
        Ok(BgScriptedModel { server, state })
    }

    /// The value for `ANTHROPIC_BASE_URL`.
    pub fn base_url(&self) -> String {
        self.server.base_url()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Arms step `n`: its prompt will be answered with `calls`, and their results come
    /// through the returned receiver.
    pub fn arm(&self, n: u64, calls: Vec<Call>) -> Receiver<Vec<CallResult>> {
        let (tx, rx) = mpsc::sync_channel(1);
        let mut s = self.state();
        s.prompt = Some((n, calls));
        s.results = None;
        s.reply = Some(tx);
        rx
    }

    /// Forgets an armed step that timed out.
    pub fn disarm(&self) {
        let mut s = self.state();
        s.prompt = None;
        s.results = None;
        s.reply = None;
    }

    /// The notification blocks received so far.
    pub fn received(&self) -> Vec<Received> {
        self.state().received.clone()
    }

    /// The tools of the agent's first request, once it came.
    pub fn tools(&self) -> Option<Vec<Offered>> {
        self.state().tools.clone()
    }

    /// (agent requests, side requests) so far.
    pub fn requests(&self) -> (u64, u64) {
        let s = self.state();
        (s.agent_requests, s.side_requests)
    }

    /// The distinct reminders about background work seen so far.
    pub fn reminders(&self) -> Vec<String> {
        self.state().reminders.clone()
    }

    /// Conversations seen with fewer notifications than before.
    pub fn shrunk(&self) -> Vec<String> {
        self.state().shrunk.clone()
    }
}

fn handle(request: tiny_http::Request, state: &Mutex<State>) {
    let Some((request, path, raw)) = read_messages_request(request) else {
        return;
    };
    if is_count_tokens(&path) {
        let s = state.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(log) = &s.log {
            let answer = json!({"input_tokens": 1});
            let kind = "count_tokens";
            log.record(
                CONVERSATION,
                Exchange {
                    path: &path,
                    raw: &raw,
                    kind,
                    answer: &answer,
                    note: Value::Null,
                },
            );
        }
        drop(s);
        answer_count_tokens(request);
        return;
    }
    let body: Value = serde_json::from_slice(&raw).unwrap_or(Value::Null);
    let content = {
        let mut s = state.lock().unwrap_or_else(|p| p.into_inner());
        let (counted, sides) = (s.received.len(), s.side_requests);
        let content = step(&body, &mut s);
        if let Some(log) = &s.log {
            let kind = if s.side_requests > sides {
                "side"
            } else {
                "agent"
            };
            let new: Vec<Value> = s.received[counted.min(s.received.len())..]
                .iter()
                .map(|r| json!(task_id(&r.text)))
                .collect();
            let note = json!({"notifications_counted": new, "counted_in_all": s.received.len()});
            let answer = Value::Array(content.clone());
            log.record(
                CONVERSATION,
                Exchange {
                    path: &path,
                    raw: &raw,
                    kind,
                    answer: &answer,
                    note,
                },
            );
        }
        content
    };
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("claude");
    let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    answer(request, "msg_taskproof_bg", model, content, stream);
}

/// The content of the answer to one request, after recording what it carried.
fn step(body: &Value, s: &mut State) -> Vec<Value> {
    let done = vec![json!({"type": "text", "text": "Done."})];
    let tools = body["tools"].as_array();
    if !tools.is_some_and(|t| t.iter().any(|t| t["name"] == "Bash")) {
        s.side_requests += 1;
        return done;
    }
    s.agent_requests += 1;
    if s.tools.is_none() {
        s.tools = Some(
            tools
                .into_iter()
                .flatten()
                .map(|t| Offered {
                    name: t["name"].as_str().unwrap_or("").to_string(),
                    properties: t["input_schema"]["properties"]
                        .as_object()
                        .map(|p| p.keys().cloned().collect())
                        .unwrap_or_default(),
                })
                .collect(),
        );
    }
    let messages: Vec<&Value> = body["messages"]
        .as_array()
        .map(|m| m.iter().collect())
        .unwrap_or_default();
    for r in background_reminders(&messages) {
        if !s.reminders.contains(&r) {
            s.reminders.push(r);
        }
    }
    let blocks = notification_blocks(&messages);
    let known = s.received.len();
    if blocks.len() < known {
        s.shrunk.push(format!(
            "request {} carried {} notifications, {known} were counted before",
            s.agent_requests,
            blocks.len()
        ));
    } else {
        let now = Instant::now();
        let request = s.agent_requests;
        s.received
            .extend(blocks[known..].iter().map(|text| Received {
                text: text.clone(),
                at: now,
                request,
            }));
    }
    // The conversation ends with the user's message (2.1.330 and later append a `system`
    // message after it); an assistant message last is no turn.
    let Some(last) = messages.iter().rev().find(|m| m["role"] != "system") else {
        return done;
    };
    if last["role"] != "user" {
        return done;
    }
    let content: Vec<Value> = match &last["content"] {
        Value::String(t) => vec![json!({"type": "text", "text": t})],
        Value::Array(items) => items.clone(),
        _ => Vec::new(),
    };
    if let Some((n, _)) = &s.prompt {
        let marker = step_marker(*n);
        let asked = content
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .any(|t| t.contains(&marker));
        if asked {
            let (n, calls) = s.prompt.take().expect("checked above");
            if calls.is_empty() {
                // A step without calls (the first, which learns the tools) ends here.
                if let Some(tx) = s.reply.take() {
                    let _ = tx.send(Vec::new());
                }
                return done;
            }
            let ids: Vec<String> = (0..calls.len()).map(|k| tool_use_id(n, k)).collect();
            let uses = calls
                .into_iter()
                .zip(&ids)
                .map(|(c, id)| json!({"type": "tool_use", "id": id, "name": c.name, "input": c.input}))
                .collect();
            s.results = Some(ids);
            return uses;
        }
        return done;
    }
    if let Some(ids) = &s.results {
        let found: Vec<Option<&Value>> = ids
            .iter()
            .map(|id| {
                content
                    .iter()
                    .find(|b| b["type"] == "tool_result" && b["tool_use_id"] == id.as_str())
            })
            .collect();
        if found.iter().all(Option::is_some) {
            let results = found
                .into_iter()
                .flatten()
                .map(|b| CallResult {
                    is_error: b["is_error"].as_bool().unwrap_or(false),
                    text: result_text(&b["content"]),
                })
                .collect();
            s.results = None;
            if let Some(tx) = s.reply.take() {
                let _ = tx.send(results);
            }
        }
    }
    done
}

/// The texts of one message: its text blocks and its tool results (where a notification that
/// arrives while a tool runs is appended), or its content when that is one string.
fn user_texts(m: &Value) -> Vec<String> {
    match &m["content"] {
        Value::String(t) => vec![t.clone()],
        Value::Array(items) => items
            .iter()
            .filter_map(|b| match b["type"].as_str() {
                Some("text") => b["text"].as_str().map(str::to_string),
                Some("tool_result") => Some(result_text(&b["content"])),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The `<system-reminder>` sections of the CLI's messages that speak of background work.
fn background_reminders(messages: &[&Value]) -> Vec<String> {
    const OPEN: &str = "<system-reminder>";
    const CLOSE: &str = "</system-reminder>";
    let mut out = Vec::new();
    for text in users_texts(messages) {
        let mut rest = text.as_str();
        while let Some(start) = rest.find(OPEN) {
            let from = &rest[start + OPEN.len()..];
            let end = from.find(CLOSE).unwrap_or(from.len());
            let body = from[..end].trim();
            if body.starts_with("Background Bash") {
                out.push(body.to_string());
            }
            rest = &from[end..];
        }
    }
    out
}

/// The texts of every message the CLI wrote into the conversation (every role but the
/// model's own `assistant`), in order: text blocks, and tool results (a notification that
/// arrives while a tool runs is appended to its result; 2.1.112 puts it in a
/// `<system-reminder>` there). 2.1.330 and later also write `system` messages into the
/// conversation, and 2.1.332 delivers most notifications in them (issue 43: counting user
/// messages only lost 13 of 16 notifications that the CLI had sent).
fn users_texts<'a>(messages: &'a [&'a Value]) -> impl Iterator<Item = String> + 'a {
    messages
        .iter()
        .filter(|m| m["role"] != "assistant")
        .flat_map(|m| user_texts(m))
}

/// The `<task-id>` of a notification block, or "" when it has none (a malformed block is
/// reported by the session's parser, not here).
fn task_id(block: &str) -> &str {
    block
        .split_once("<task-id>")
        .and_then(|(_, rest)| rest.split_once("</task-id>"))
        .map_or("", |(id, _)| id.trim())
}

/// Every `<task-notification>…</task-notification>` in the text blocks and tool results of
/// the messages the CLI wrote (user and system), in order (an unterminated one is taken to the end of its block, so that a
/// malformed notification is kept and reported rather than dropped).
pub fn notification_blocks(messages: &[&Value]) -> Vec<String> {
    const OPEN: &str = "<task-notification>";
    const CLOSE: &str = "</task-notification>";
    let mut out = Vec::new();
    for text in users_texts(messages) {
        let mut rest = text.as_str();
        while let Some(start) = rest.find(OPEN) {
            let from = &rest[start..];
            // The next opening tag ends an unterminated one too.
            let next_open = from[OPEN.len()..].find(OPEN).map(|i| i + OPEN.len());
            let close = from.find(CLOSE).map(|i| i + CLOSE.len());
            let end = match (close, next_open) {
                (Some(c), Some(o)) if o < c => o,
                (Some(c), _) => c,
                (None, Some(o)) => o,
                (None, None) => from.len(),
            };
            out.push(from[..end].to_string());
            rest = &from[end..];
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(messages: Value) -> Value {
        json!({"tools": [{"name": "Bash", "input_schema": {"properties": {"command": {}}}}],
               "messages": messages})
    }

    const NOTE: &str = "<task-notification>\n<task-id>b1</task-id>\n<status>completed</status>\n</task-notification>";

    #[test]
    fn notifications_are_counted_once_although_messages_are_merged() {
        let mut s = State::default();
        let first = body(json!([
            {"role": "user", "content": "x"},
            {"role": "user", "content": [{"type": "text", "text": NOTE}]}]));
        step(&first, &mut s);
        assert_eq!(s.received.len(), 1);
        // The same conversation again (a retry), and then merged with a later message.
        step(&first, &mut s);
        assert_eq!(s.received.len(), 1, "a retry adds none");
        let merged = body(json!([
            {"role": "user", "content": "x"},
            {"role": "user", "content": [{"type": "text", "text": NOTE},
                                         {"type": "text", "text": "more"}]}]));
        step(&merged, &mut s);
        assert_eq!(s.received.len(), 1);
        // A second delivery of the same notification is a second block.
        let twice = body(json!([
            {"role": "user", "content": [{"type": "text", "text": format!("{NOTE}{NOTE}")}]}]));
        step(&twice, &mut s);
        assert_eq!(s.received.len(), 2);
        assert_eq!(s.agent_requests, 4);
    }

    /// Issue 43: taskproof said Claude Code 2.1.332 told the model of 3 of 16 tasks that
    /// ended during the turn that started them; the CLI had sent all 16, 14 of them in
    /// `system` messages of the conversation, which the count did not read. This replays
    /// the requests 2.1.332 sent in `end-during-the-spawning-turn` (recorded by the model's
    /// log and published with the report) and wants every started task counted once.
    #[test]
    fn recorded_2_1_332_requests_count_every_notification_once() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(
            "../../reports/claude-code/2.1.332/background-model-log/end-during-the-spawning-turn.jsonl.gz",
        );
        let log = taskproof_model::model_log::read(&path).unwrap();
        assert_eq!(log.target, "claude-code@2.1.332");
        let mut s = State::default();
        let mut started = std::collections::BTreeSet::new();
        for e in log.exchanges.iter().filter(|e| e.kind == "agent") {
            step(&e.request, &mut s);
            // The ids the CLI gave the tasks, from its answers to the Bash calls.
            for m in e.request["messages"].as_array().unwrap() {
                for t in user_texts(m) {
                    if let Some((_, rest)) = t.split_once("running in background with ID: ") {
                        started.insert(rest.split(['.', ' ']).next().unwrap().to_string());
                    }
                }
            }
        }
        assert_eq!(started.len(), 16, "{started:?}");
        let counted: Vec<&str> = s.received.iter().map(|r| task_id(&r.text)).collect();
        let distinct: std::collections::BTreeSet<String> =
            counted.iter().map(|id| id.to_string()).collect();
        assert_eq!(counted.len(), 16, "each notification once: {counted:?}");
        assert_eq!(distinct, started);
        assert!(s.shrunk.is_empty(), "{:?}", s.shrunk);
        let in_system = log.exchanges.last().unwrap().request["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "system")
            .filter(|m| m["content"].to_string().contains("<task-notification>"))
            .count();
        assert!(
            in_system >= 10,
            "most arrive in system messages: {in_system}"
        );
    }

    #[test]
    fn a_notification_inside_a_tool_result_is_counted() {
        let m = json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t", "content": format!("<output>\nx\n</output>\n<system-reminder>\n{NOTE}\n</system-reminder>")}]});
        assert_eq!(notification_blocks(&[&m]), vec![NOTE.to_string()]);
    }

    #[test]
    fn reminders_about_background_work_are_kept_once() {
        let mut s = State::default();
        let reminder = "<system-reminder>\nBackground Bash 258b04 (command: x) (status: running) Has new output available.\n</system-reminder>";
        let other = "<system-reminder>\nThe date is today.\n</system-reminder>";
        let b = body(json!([{"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t", "content": format!("started\n\n{reminder}")},
            {"type": "text", "text": format!("{other}{reminder}")}]}]));
        step(&b, &mut s);
        step(&b, &mut s);
        assert_eq!(
            s.reminders,
            vec!["Background Bash 258b04 (command: x) (status: running) Has new output available."]
        );
    }

    #[test]
    fn an_unterminated_notification_is_kept() {
        let m = json!({"role": "user", "content": "<task-notification><task-id>a</task-id> and <task-notification>x</task-notification>"});
        let blocks = notification_blocks(&[&m]);
        assert_eq!(
            blocks,
            vec![
                "<task-notification><task-id>a</task-id> and ".to_string(),
                "<task-notification>x</task-notification>".to_string()
            ]
        );
    }

    #[test]
    fn a_step_is_answered_with_its_calls_and_its_results_go_back() {
        let mut s = State::default();
        let (tx, rx) = mpsc::sync_channel(1);
        s.prompt = Some((
            7,
            vec![
                Call {
                    name: "Bash".into(),
                    input: json!({"command": "true"}),
                },
                Call {
                    name: "Bash".into(),
                    input: json!({"command": "false"}),
                },
            ],
        ));
        s.reply = Some(tx);
        let side = json!({"messages": [{"role": "user", "content": step_marker(7)}]});
        assert_eq!(
            step(&side, &mut s)[0]["type"],
            "text",
            "no tools: a side request"
        );
        let other = body(json!([{"role": "user", "content": step_marker(6)}]));
        assert_eq!(step(&other, &mut s)[0]["type"], "text");
        let prompt = body(json!([{"role": "user", "content": step_marker(7)},
                                 {"role": "system", "content": "env"}]));
        let uses = step(&prompt, &mut s);
        assert_eq!(uses.len(), 2);
        assert_eq!(uses[1]["id"], "toolu_taskproof_7_1");
        let partial = body(json!([{"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_taskproof_7_0", "content": "a"}]}]));
        step(&partial, &mut s);
        assert!(rx.try_recv().is_err(), "one result of two is not all");
        let both = body(json!([{"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_taskproof_7_0", "content": "a"},
            {"type": "tool_result", "tool_use_id": "toolu_taskproof_7_1", "is_error": true,
             "content": [{"type": "text", "text": "b"}]}]}]));
        step(&both, &mut s);
        assert_eq!(
            rx.try_recv().unwrap(),
            vec![
                CallResult {
                    is_error: false,
                    text: "a".into()
                },
                CallResult {
                    is_error: true,
                    text: "b".into()
                }
            ]
        );
        assert_eq!(s.tools.as_ref().unwrap()[0].properties, vec!["command"]);
    }
}
