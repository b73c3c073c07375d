//! The scripted model: an HTTP server on 127.0.0.1 that speaks enough of the Anthropic
//! Messages API (`POST /v1/messages`, plain JSON and server-sent events, and
//! `/v1/messages/count_tokens`) for an unmodified Claude Code CLI to take it for the model.
//!
//! The server decides nothing itself. A request that carries the agent's conversation at the
//! point the session waits for (the prompt of the pending protocol request, or the
//! `tool_result` of the `tool_use` it sent last) is handed to the session as an [`Exchange`];
//! the session answers with the next tool call or the end of the turn. Every other request
//! (conversation titles from a small model, prompt suggestions, token counts, retries) is a
//! side request and gets a short harmless text, so it can never be mistaken for a turn.
//!
//! Every request and answer goes to the scenario's model log ([`LogHandle`]) when the run
//! keeps one, named by the CLI's list and conversation.

use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use super::model_log::{Exchange as Logged, LogHandle};

/// How long a request of the CLI waits for the session's next step before it gets the
/// harmless answer (the session is gone or stuck; its own timeout reports that).
const STEP_WAIT: Duration = Duration::from_secs(600);

/// A turn of the agent's conversation, handed to the session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Turn {
    /// The CLI sent the prompt of protocol request `n`.
    Prompt(u64),
    /// The CLI ran the tool and sent its result.
    Result(ToolResult),
}

/// What the CLI reported for one `tool_use`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolResult {
    pub tool_use_id: String,
    pub is_error: bool,
    pub text: String,
}

/// The model's next move.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Tool {
        id: String,
        name: String,
        input: Value,
    },
    EndTurn,
}

/// One turn waiting for the session's reply.
pub struct Exchange {
    pub turn: Turn,
    /// The session id the CLI named in the request (`metadata.user_id`), which names the
    /// list it keeps under its own id; `None` when the request named none.
    pub session: Option<String>,
    reply: SyncSender<Reply>,
}

impl Exchange {
    pub fn answer(self, reply: Reply) {
        // The CLI's request may have given up already; then nothing is waiting.
        let _ = self.reply.send(reply);
    }
}

/// What the session waits for next.
#[derive(Debug, Default)]
struct Expect {
    prompt: Option<u64>,
    tool: Option<String>,
}

/// Counts of what the server saw, for the transcript and for tests.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Seen {
    pub turns: u64,
    pub side: u64,
    /// Of the side requests, how many asked for the summary of `/compact`
    /// ([`is_compaction`]), each answered with [`SUMMARY`].
    pub compactions: u64,
    /// The last few side requests, briefly (model and the end of the last message), for
    /// the report when a turn never came.
    pub recent_side: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("start the scripted model on 127.0.0.1: {0}")]
    Bind(String),
}

/// The running server. Dropping it stops it.
pub struct ScriptedModel {
    server: Arc<tiny_http::Server>,
    port: u16,
    expect: Arc<Mutex<Expect>>,
    seen: Arc<Mutex<Seen>>,
    exchanges: Receiver<Exchange>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Where a server logs its exchanges: the scenario's log, and the conversation they belong
/// to.
#[derive(Clone)]
struct LogTo {
    log: LogHandle,
    conversation: String,
}

/// The marker that makes a prompt the prompt of protocol request `n`.
pub fn prompt_marker(n: u64) -> String {
    format!("taskproof request {n}")
}

impl ScriptedModel {
    /// Starts the server; with `log`, every exchange is recorded there under
    /// `conversation`.
    pub fn start(log: Option<(LogHandle, String)>) -> Result<ScriptedModel, ModelError> {
        let log = log.map(|(log, conversation)| LogTo { log, conversation });
        let server =
            tiny_http::Server::http("127.0.0.1:0").map_err(|e| ModelError::Bind(e.to_string()))?;
        let port = server
            .server_addr()
            .to_ip()
            .map(|a| a.port())
            .ok_or_else(|| ModelError::Bind("not an IP address".into()))?;
        let server = Arc::new(server);
        let expect = Arc::new(Mutex::new(Expect::default()));
        let seen = Arc::new(Mutex::new(Seen::default()));
        let (tx, exchanges) = mpsc::channel();
        let thread = {
            let server = Arc::clone(&server);
            let expect = Arc::clone(&expect);
            let seen = Arc::clone(&seen);
            std::thread::spawn(move || {
                for request in server.incoming_requests() {
                    let expect = Arc::clone(&expect);
                    let seen = Arc::clone(&seen);
                    let tx = tx.clone();
                    let log = log.clone();
                    // A turn blocks until the session answers; side requests must not wait
                    // behind it, so every request has a thread.
                    std::thread::spawn(move || handle(request, &expect, &seen, &tx, log.as_ref()));
                }
            })
        };
        Ok(ScriptedModel {
            server,
            port,
            expect,
            seen,
            exchanges,
            thread: Some(thread),
        })
    }

    /// The value for `ANTHROPIC_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// From now on, the prompt of protocol request `n` is a turn.
    pub fn expect_prompt(&self, n: u64) {
        let mut e = self.expect.lock().unwrap_or_else(|p| p.into_inner());
        e.prompt = Some(n);
        e.tool = None;
    }

    /// From now on, the result of `tool_use_id` is a turn.
    pub fn expect_tool(&self, tool_use_id: &str) {
        let mut e = self.expect.lock().unwrap_or_else(|p| p.into_inner());
        e.prompt = None;
        e.tool = Some(tool_use_id.to_string());
    }

    /// Nothing is a turn until the next `expect_*`.
    pub fn expect_nothing(&self) {
        *self.expect.lock().unwrap_or_else(|p| p.into_inner()) = Expect::default();
    }

    /// The next turn, if one arrives within `wait`.
    pub fn next(&self, wait: Duration) -> Result<Exchange, RecvTimeoutError> {
        self.exchanges.recv_timeout(wait)
    }

    pub fn seen(&self) -> Seen {
        self.seen.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl Drop for ScriptedModel {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn handle(
    request: tiny_http::Request,
    expect: &Mutex<Expect>,
    seen: &Mutex<Seen>,
    tx: &Sender<Exchange>,
    log: Option<&LogTo>,
) {
    let Some((request, path, raw)) = read_messages_request(request) else {
        return;
    };
    let record = |kind: &'static str, answer: &Value, note: Value| {
        if let Some(to) = log {
            let e = Logged {
                path: &path,
                raw: &raw,
                kind,
                answer,
                note,
            };
            to.log.record(&to.conversation, e);
        }
    };
    let body: Value = serde_json::from_slice(&raw).unwrap_or(Value::Null);
    if is_count_tokens(&path) {
        record("count_tokens", &json!({"input_tokens": 1}), Value::Null);
        answer_count_tokens(request);
        return;
    }
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("claude")
        .to_string();
    let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let turn = take_turn(&body, expect);
    // What the model made of the request, for the log: the turn it was, or a side request.
    let note = match &turn {
        Some(Turn::Prompt(n)) => json!({"turn": "prompt", "request": n}),
        Some(Turn::Result(r)) => json!({"turn": "result", "tool_use_id": r.tool_use_id}),
        None => json!({"turn": null}),
    };
    let kind = if turn.is_some() { "agent" } else { "side" };
    let compaction = turn.is_none() && is_compaction(&body);
    let reply = match turn {
        Some(turn) => {
            seen.lock().unwrap_or_else(|p| p.into_inner()).turns += 1;
            let (reply_tx, reply_rx) = mpsc::sync_channel(1);
            let sent = tx.send(Exchange {
                turn,
                session: session_id(&body),
                reply: reply_tx,
            });
            match sent {
                Ok(()) => reply_rx.recv_timeout(STEP_WAIT).unwrap_or(Reply::EndTurn),
                Err(_) => Reply::EndTurn,
            }
        }
        None => {
            let mut seen = seen.lock().unwrap_or_else(|p| p.into_inner());
            seen.side += 1;
            seen.compactions += u64::from(compaction);
            if seen.recent_side.len() >= 8 {
                seen.recent_side.remove(0);
            }
            let last = body["messages"]
                .as_array()
                .and_then(|m| m.last())
                .map(|m| m["content"].to_string())
                .unwrap_or_default();
            let cut = last.len().saturating_sub(300);
            let cut = (cut..=last.len())
                .find(|&i| last.is_char_boundary(i))
                .unwrap_or(0);
            seen.recent_side.push(format!("{model}: …{}", &last[cut..]));
            Reply::EndTurn
        }
    };
    let content = match reply {
        Reply::Tool { id, name, input } => {
            vec![json!({"type": "tool_use", "id": id, "name": name, "input": input})]
        }
        Reply::EndTurn if compaction => vec![json!({"type": "text", "text": SUMMARY})],
        Reply::EndTurn => vec![json!({"type": "text", "text": "Done."})],
    };
    record(kind, &Value::Array(content.clone()), note);
    answer(request, "msg_taskproof", &model, content, stream);
}

/// Reads a request to the scripted model. A request that is not a `POST` to the Messages API
/// is answered 404 here and gives `None`; any other comes back with its path and body.
pub(super) fn read_messages_request(
    mut request: tiny_http::Request,
) -> Option<(tiny_http::Request, String, Vec<u8>)> {
    let path = request.url().to_string();
    let mut raw = Vec::new();
    let _ = request.as_reader().read_to_end(&mut raw);
    if *request.method() != tiny_http::Method::Post || !path.starts_with("/v1/messages") {
        let _ = request.respond(tiny_http::Response::empty(404));
        return None;
    }
    Some((request, path, raw))
}

pub(super) fn is_count_tokens(path: &str) -> bool {
    path.starts_with("/v1/messages/count_tokens")
}

/// The token count the CLI asks for before some turns: any number will do.
pub(super) fn answer_count_tokens(request: tiny_http::Request) {
    respond(
        request,
        json!({"input_tokens": 1}).to_string().into_bytes(),
        false,
    );
}

/// Answers with one assistant message of `content`, as an event stream when the request
/// asked for one. It stops for tool use when the content has a `tool_use` block.
pub(super) fn answer(
    request: tiny_http::Request,
    id_prefix: &str,
    model: &str,
    content: Vec<Value>,
    stream: bool,
) {
    let stop = if content.iter().any(|b| b["type"] == "tool_use") {
        "tool_use"
    } else {
        "end_turn"
    };
    let message = json!({
        "id": format!("{id_prefix}_{}", unique()),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": null,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    });
    if stream {
        respond(request, sse(&message), true);
    } else {
        respond(request, message.to_string().into_bytes(), false);
    }
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(1);
    N.fetch_add(1, Ordering::Relaxed)
}

fn respond(request: tiny_http::Request, body: Vec<u8>, stream: bool) {
    let kind = if stream {
        "text/event-stream"
    } else {
        "application/json"
    };
    let header = tiny_http::Header::from_bytes("Content-Type", kind).expect("a valid header");
    let _ = request.respond(tiny_http::Response::from_data(body).with_header(header));
}

/// The message as the event stream the Messages API sends when `stream` is true.
pub(super) fn sse(message: &Value) -> Vec<u8> {
    let mut events: Vec<(&str, Value)> = Vec::new();
    let mut start = message.clone();
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    events.push((
        "message_start",
        json!({"type": "message_start", "message": start}),
    ));
    let blocks = message["content"].as_array().cloned().unwrap_or_default();
    for (i, block) in blocks.iter().enumerate() {
        let (first, delta) = if block["type"] == "tool_use" {
            (
                json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}),
                json!({"type": "input_json_delta", "partial_json": block["input"].to_string()}),
            )
        } else {
            (
                json!({"type": "text", "text": ""}),
                json!({"type": "text_delta", "text": block["text"]}),
            )
        };
        events.push((
            "content_block_start",
            json!({"type": "content_block_start", "index": i, "content_block": first}),
        ));
        events.push((
            "content_block_delta",
            json!({"type": "content_block_delta", "index": i, "delta": delta}),
        ));
        events.push((
            "content_block_stop",
            json!({"type": "content_block_stop", "index": i}),
        ));
    }
    events.push((
        "message_delta",
        json!({"type": "message_delta",
               "delta": {"stop_reason": message["stop_reason"], "stop_sequence": null},
               "usage": {"output_tokens": 1}}),
    ));
    events.push(("message_stop", json!({"type": "message_stop"})));
    let mut out = String::new();
    for (name, data) in events {
        out.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    }
    out.into_bytes()
}

/// The summary the scripted model gives when `/compact` asks for one: an `<analysis>` and a
/// `<summary>` block, the form the compaction prompt asks for. Measured (repro/claude-code/
/// session_list_compact.py): every version from 2.1.17 to 2.1.332 takes it at once, while
/// 2.1.332 asks again when the answer is a plain `Done.`.
pub const SUMMARY: &str = "<analysis>The user asked for numbered taskproof requests; each was done with the task tools.</analysis>\n<summary>1. Primary Request and Intent: do each taskproof request with the task tools.\n2. Pending Tasks: see TaskList.\n3. Current Work: waiting for the next request.</summary>";

/// Whether a request asks for the summary of `/compact`: its last user message says "create
/// a detailed summary of the conversation" (2.1.17, which sends it with the summarising
/// system prompt and the tool Read only) or "Respond with TEXT ONLY" (2.1.112 and later,
/// with the agent's own tools and system prompt). Measured on 2.1.17, 2.1.112, 2.1.211 and
/// 2.1.332 (repro/claude-code/session_list_compact.py).
pub fn is_compaction(body: &Value) -> bool {
    let Some(last) = body["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] != "system"))
    else {
        return false;
    };
    if last["role"] != "user" {
        return false;
    }
    let texts: Vec<&str> = match &last["content"] {
        Value::String(s) => vec![s.as_str()],
        Value::Array(items) => items.iter().filter_map(|b| b["text"].as_str()).collect(),
        _ => Vec::new(),
    };
    texts.iter().any(|t| {
        t.contains("create a detailed summary of the conversation")
            || t.contains("Respond with TEXT ONLY")
    })
}

/// The session id a request names in `metadata.user_id`: a JSON object's `session_id` from
/// 2.1.112 on (`{"device_id": …, "account_uuid": …, "session_id": …}`), the part after
/// `_session_` before (2.1.17: `user_…_account__session_ID`). Measured on 2.1.17, 2.1.112,
/// 2.1.211 and 2.1.332 (repro/claude-code/session_list_where.py).
pub fn session_id(body: &Value) -> Option<String> {
    let user = body["metadata"]["user_id"].as_str()?;
    let id = match serde_json::from_str::<Value>(user) {
        Ok(v) => v["session_id"].as_str()?.to_string(),
        Err(_) => user.rsplit_once("_session_")?.1.to_string(),
    };
    (!id.is_empty()).then_some(id)
}

/// Whether `body` is the turn the session waits for; if so, it is taken (a retry of the same
/// request later is a side request).
fn take_turn(body: &Value, expect: &Mutex<Expect>) -> Option<Turn> {
    // Only the agent's own conversation offers the task tools; title and suggestion
    // requests of the small model offer none.
    let offers_tasks = body["tools"]
        .as_array()
        .is_some_and(|tools| tools.iter().any(|t| t["name"] == "TaskCreate"));
    if !offers_tasks {
        return None;
    }
    // The conversation ends with the user's message (2.1.330 appends a `system` message
    // with the environment after it); an assistant message last is not a turn.
    let last = body["messages"]
        .as_array()?
        .iter()
        .rev()
        .find(|m| m["role"] != "system")?;
    if last["role"] != "user" {
        return None;
    }
    let blocks: Vec<Value> = match &last["content"] {
        Value::String(s) => vec![json!({"type": "text", "text": s})],
        Value::Array(items) => items.clone(),
        _ => return None,
    };
    let mut e = expect.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(n) = e.prompt {
        // The CLI puts reminders before the prompt (and 2.1.330 the date after it); a
        // prompt-suggestion request appends its own instruction to the conversation.
        let texts: Vec<&str> = blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect();
        let marker = prompt_marker(n);
        if texts.iter().any(|t| t.contains(&marker))
            && !texts.iter().any(|t| t.contains("[SUGGESTION MODE"))
        {
            e.prompt = None;
            return Some(Turn::Prompt(n));
        }
        return None;
    }
    if let Some(id) = e.tool.clone() {
        let block = blocks
            .iter()
            .find(|b| b["type"] == "tool_result" && b["tool_use_id"] == id.as_str())?;
        e.tool = None;
        return Some(Turn::Result(ToolResult {
            tool_use_id: id,
            is_error: block["is_error"].as_bool().unwrap_or(false),
            text: result_text(&block["content"]),
        }));
    }
    None
}

pub(super) fn result_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(last: Value) -> Value {
        json!({"tools": [{"name": "TaskCreate"}], "messages": [last]})
    }

    #[test]
    fn only_the_awaited_prompt_and_result_are_turns() {
        let expect = Mutex::new(Expect::default());
        let prompt = body(json!({"role": "user", "content": [
            {"type": "text", "text": "<system-reminder>x</system-reminder>"},
            {"type": "text", "text": "Do taskproof request 3."}]}));
        assert_eq!(take_turn(&prompt, &expect), None, "nothing awaited yet");
        expect.lock().unwrap().prompt = Some(3);
        let suggestion = body(json!({"role": "user", "content": [
            {"type": "text", "text": "Do taskproof request 3."},
            {"type": "text", "text": "[SUGGESTION MODE: suggest]"}]}));
        assert_eq!(take_turn(&suggestion, &expect), None);
        let no_tools = json!({"messages": prompt["messages"].clone()});
        assert_eq!(take_turn(&no_tools, &expect), None);
        assert_eq!(take_turn(&prompt, &expect), Some(Turn::Prompt(3)));
        assert_eq!(
            take_turn(&prompt, &expect),
            None,
            "a retry is a side request"
        );
        expect.lock().unwrap().tool = Some("t1".into());
        let result = body(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "is_error": true,
             "content": [{"type": "text", "text": "Task not found"}]}]}));
        assert_eq!(
            take_turn(&result, &expect),
            Some(Turn::Result(ToolResult {
                tool_use_id: "t1".into(),
                is_error: true,
                text: "Task not found".into()
            }))
        );
    }

    /// Both forms of `metadata.user_id` the versions send name the session id.
    #[test]
    fn the_session_id_is_read_from_either_form_of_the_user_id() {
        let v2117 = json!({"metadata": {"user_id":
            "user_3f2a_account__session_d4f7d651-3caf-4380-a09c-e1e869eb075b"}});
        assert_eq!(
            session_id(&v2117).as_deref(),
            Some("d4f7d651-3caf-4380-a09c-e1e869eb075b")
        );
        let later = json!({"metadata": {"user_id":
            "{\"device_id\":\"44\",\"account_uuid\":\"\",\"session_id\":\"a0826274-6866-4322-8944-c6b9fcf37172\"}"}});
        assert_eq!(
            session_id(&later).as_deref(),
            Some("a0826274-6866-4322-8944-c6b9fcf37172")
        );
        assert_eq!(
            session_id(&json!({"metadata": {"user_id": "user_1"}})),
            None
        );
        assert_eq!(session_id(&json!({})), None);
    }

    /// The summary request of `/compact`, in the form each version sends it, and not a
    /// prompt that merely mentions a summary.
    #[test]
    fn compaction_requests_are_recognised_in_both_forms() {
        let old = json!({"tools": [{"name": "Read"}], "messages": [
            {"role": "user", "content": "Do taskproof request 1."},
            {"role": "assistant", "content": "Done."},
            {"role": "user", "content": "Your task is to create a detailed summary of the conversation so far, …"}]});
        assert!(is_compaction(&old));
        let new = body(json!({"role": "user", "content": [
            {"type": "text", "text": "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools. …"}]}));
        assert!(is_compaction(&new));
        let with_system = json!({"messages": [
            {"role": "user", "content": [{"type": "text", "text": "CRITICAL: Respond with TEXT ONLY."}]},
            {"role": "system", "content": "env"}]});
        assert!(is_compaction(&with_system));
        let prompt = body(json!({"role": "user", "content": "Do taskproof request 3."}));
        assert!(!is_compaction(&prompt));
        assert!(SUMMARY.starts_with("<analysis>") && SUMMARY.ends_with("</summary>"));
    }

    #[test]
    fn streams_carry_the_whole_message() {
        let m = json!({"content": [{"type": "tool_use", "id": "a", "name": "TaskGet",
                                    "input": {"taskId": "1"}}],
                       "stop_reason": "tool_use"});
        let text = String::from_utf8(sse(&m)).unwrap();
        assert!(text.starts_with("event: message_start\n"));
        assert!(
            text.contains(r#""partial_json":"{\"taskId\":\"1\"}""#),
            "{text}"
        );
        assert!(text.contains(r#""stop_reason":"tool_use""#));
        assert!(text.ends_with("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"));
    }
}
