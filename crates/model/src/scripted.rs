//! The scripted model: an HTTP server on 127.0.0.1 that speaks enough of the Anthropic
//! Messages API (`POST /v1/messages`, plain JSON and server-sent events, and
//! `/v1/messages/count_tokens`; [`crate::messages`]) for an unmodified agent CLI (Claude
//! Code) to take it for the model.
//!
//! The server decides nothing itself. A request that carries the agent's conversation at the
//! point the session waits for (the prompt of the pending protocol request, or the
//! `tool_result` of the `tool_use` it sent last) is handed to the session as an [`Exchange`];
//! the session answers with the next tool call or the end of the turn. Every other request
//! (conversation titles from a small model, prompt suggestions, token counts, retries) is a
//! side request and gets a short harmless text, so it can never be mistaken for a turn.
//!
//! What differs between products (which requests are the agent's conversation, how a
//! prompt is marked, where a request names its session, which side request asks for a
//! summary) is the product driver's [`Recognizer`]; the rest is the Messages API and is
//! the same for every product.
//!
//! Every request and answer goes to the scenario's model log ([`LogHandle`]) when the run
//! keeps one, named by the CLI's list and conversation.

use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::messages::{
    ModelError, Server, answer, answer_count_tokens, is_count_tokens, read_messages_request,
    result_text,
};
use crate::model_log::{Exchange as Logged, LogHandle};

/// How long a request of the CLI waits for the session's next step before it gets the
/// harmless answer (the session is gone or stuck; its own timeout reports that).
const STEP_WAIT: Duration = Duration::from_secs(600);

/// What one product's requests look like, as far as the model must tell them apart: the
/// driver of each product passes its own to [`ScriptedModel::start`] (Claude Code's is
/// `taskproof_claude_code::recognizer::ClaudeCodeRecognizer`).
pub trait Recognizer: Send + Sync + 'static {
    /// Whether the request is the agent's own conversation, whose last user message may be
    /// a turn, and not a side request of the product (a title, a prompt suggestion).
    fn is_agent(&self, body: &Value) -> bool;

    /// Whether `texts`, the text blocks of the conversation's last user message, are the
    /// prompt of protocol request `n`.
    fn is_prompt(&self, texts: &[&str], n: u64) -> bool;

    /// The session the request names (a product that keeps a list under its session's id
    /// says which); `None` when it names none.
    fn session(&self, body: &Value) -> Option<String> {
        let _ = body;
        None
    }

    /// The member of an agent team whose conversation the request is (a teammate the
    /// session's lead spawned; Claude Code's in-process teammates send their requests to the
    /// lead's model); `None` for the lead's own conversation and every product without
    /// teams.
    fn member(&self, body: &Value) -> Option<String> {
        let _ = body;
        None
    }

    /// For a side request that asks for a summary of the conversation (a compaction), the
    /// summary to answer with; `None` for every other request, which gets `Done.`.
    fn summary(&self, body: &Value) -> Option<&'static str> {
        let _ = body;
        None
    }
}

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

/// The first decision a product's driver makes about a protocol request: answer it at once
/// (a request no tool can take), or run `S`, its script of tool calls.
pub enum Plan<S> {
    Answer(Value),
    Run(S),
}

/// The next move of a driver's script of tool calls: call a tool (its result comes back as
/// the next [`Turn::Result`]), or answer the protocol request.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Call { name: &'static str, input: Value },
    Done(Value),
}

/// A protocol failure answer, `{"ok": false, "error": {"kind", "message"}}`.
pub fn failure(kind: taskproof_core::protocol::ErrorKind, message: impl Into<String>) -> Value {
    taskproof_core::protocol::Response::error(kind, message).to_json()
}

/// One turn waiting for the session's reply.
pub struct Exchange {
    pub turn: Turn,
    /// The session the request named ([`Recognizer::session`]: for Claude Code the session
    /// id in `metadata.user_id`, which names the list it keeps under its own id); `None`
    /// when the request named none.
    pub session: Option<String>,
    reply: SyncSender<Reply>,
}

impl Exchange {
    pub fn answer(self, reply: Reply) {
        // The CLI's request may have given up already; then nothing is waiting.
        let _ = self.reply.send(reply);
    }
}

/// A turn awaited on a lane of its own ([`ScriptedModel::await_on`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Awaited {
    /// The prompt of protocol request `n` in `member`'s conversation (the lead's for `None`).
    Prompt { n: u64, member: Option<String> },
    /// The result of this `tool_use` id.
    Tool(String),
}

/// What the session waits for next.
#[derive(Debug, Default)]
struct Expect {
    prompt: Option<u64>,
    /// The member whose conversation must carry the prompt ([`Recognizer::member`]); `None`
    /// for the lead's.
    member: Option<String>,
    tool: Option<String>,
    /// Turns awaited at the same time as the above and as each other, each delivered to the
    /// channel it names: several conversations of one CLI (a lead and its teammates) each
    /// with a turn under way.
    lanes: Vec<(Awaited, Sender<Exchange>)>,
}

/// Counts of what the server saw, for the transcript and for tests.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Seen {
    pub turns: u64,
    pub side: u64,
    /// Of the side requests, how many asked for a summary of the conversation (Claude
    /// Code's `/compact`; [`Recognizer::summary`]), each answered with that summary.
    pub compactions: u64,
    /// The last few side requests, briefly (model and the end of the last message), for
    /// the report when a turn never came.
    pub recent_side: Vec<String>,
}

/// The running server. Dropping it stops it.
pub struct ScriptedModel {
    server: Server,
    expect: Arc<Mutex<Expect>>,
    seen: Arc<Mutex<Seen>>,
    exchanges: Receiver<Exchange>,
}

/// Where a server logs its exchanges: the scenario's log, and the conversation they belong
/// to.
#[derive(Clone)]
struct LogTo {
    log: LogHandle,
    conversation: String,
}

impl ScriptedModel {
    /// Starts the server for the product whose requests `recognizer` tells apart; with
    /// `log`, every exchange is recorded there under `conversation`.
    pub fn start(
        recognizer: impl Recognizer,
        log: Option<(LogHandle, String)>,
    ) -> Result<ScriptedModel, ModelError> {
        let log = log.map(|(log, conversation)| LogTo { log, conversation });
        let expect = Arc::new(Mutex::new(Expect::default()));
        let seen = Arc::new(Mutex::new(Seen::default()));
        let (tx, exchanges) = mpsc::channel();
        let server = {
            let expect = Arc::clone(&expect);
            let seen = Arc::clone(&seen);
            Server::start(move |request| {
                handle(request, &recognizer, &expect, &seen, &tx, log.as_ref())
            })?
        };
        Ok(ScriptedModel {
            server,
            expect,
            seen,
            exchanges,
        })
    }

    /// The value for `ANTHROPIC_BASE_URL`.
    pub fn base_url(&self) -> String {
        self.server.base_url()
    }

    /// From now on, the prompt of protocol request `n` in the lead's conversation is a turn.
    pub fn expect_prompt(&self, n: u64) {
        self.expect_prompt_from(n, None);
    }

    /// From now on, the prompt of protocol request `n` in `member`'s conversation (the
    /// lead's for `None`) is a turn.
    pub fn expect_prompt_from(&self, n: u64, member: Option<&str>) {
        let mut e = self.expect.lock().unwrap_or_else(|p| p.into_inner());
        e.prompt = Some(n);
        e.member = member.map(str::to_string);
        e.tool = None;
    }

    /// From now on, the result of `tool_use_id` is a turn.
    pub fn expect_tool(&self, tool_use_id: &str) {
        let mut e = self.expect.lock().unwrap_or_else(|p| p.into_inner());
        e.prompt = None;
        e.member = None;
        e.tool = Some(tool_use_id.to_string());
    }

    /// Nothing is a turn until the next `expect_*`.
    pub fn expect_nothing(&self) {
        *self.expect.lock().unwrap_or_else(|p| p.into_inner()) = Expect::default();
    }

    /// From now on, `awaited` is a turn too, delivered to `to` instead of [`next`](Self::next),
    /// once; whatever else is awaited stays awaited. This is how several conversations of one
    /// CLI (a lead and its in-process teammates) have turns under way at once, each answered
    /// by the lane that waits on its own channel.
    pub fn await_on(&self, awaited: Awaited, to: Sender<Exchange>) {
        let mut e = self.expect.lock().unwrap_or_else(|p| p.into_inner());
        e.lanes.push((awaited, to));
    }

    /// The next turn, if one arrives within `wait`.
    pub fn next(&self, wait: Duration) -> Result<Exchange, RecvTimeoutError> {
        self.exchanges.recv_timeout(wait)
    }

    pub fn seen(&self) -> Seen {
        self.seen.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

fn handle(
    request: tiny_http::Request,
    recognizer: &dyn Recognizer,
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
    let (turn, lane) = match take(&body, recognizer, expect) {
        Some((turn, lane)) => (Some(turn), lane),
        None => (None, None),
    };
    // What the model made of the request, for the log: the turn it was, or a side request;
    // and the member of a team whose conversation it is, if any.
    let mut note = match &turn {
        Some(Turn::Prompt(n)) => json!({"turn": "prompt", "request": n}),
        Some(Turn::Result(r)) => json!({"turn": "result", "tool_use_id": r.tool_use_id}),
        None => json!({"turn": null}),
    };
    if let Some(member) = recognizer.member(&body) {
        note["member"] = json!(member);
    }
    let kind = if turn.is_some() { "agent" } else { "side" };
    let summary = turn.is_none().then(|| recognizer.summary(&body)).flatten();
    let reply = match turn {
        Some(turn) => {
            seen.lock().unwrap_or_else(|p| p.into_inner()).turns += 1;
            let (reply_tx, reply_rx) = mpsc::sync_channel(1);
            let sent = lane.as_ref().unwrap_or(tx).send(Exchange {
                turn,
                session: recognizer.session(&body),
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
            seen.compactions += u64::from(summary.is_some());
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
    let content = match (reply, summary) {
        (Reply::Tool { id, name, input }, _) => {
            vec![json!({"type": "tool_use", "id": id, "name": name, "input": input})]
        }
        (Reply::EndTurn, Some(summary)) => vec![json!({"type": "text", "text": summary})],
        (Reply::EndTurn, None) => vec![json!({"type": "text", "text": "Done."})],
    };
    record(kind, &Value::Array(content.clone()), note);
    answer(request, "msg_taskproof", &model, content, stream);
}

#[cfg(test)]
fn take_turn(body: &Value, recognizer: &dyn Recognizer, expect: &Mutex<Expect>) -> Option<Turn> {
    take(body, recognizer, expect).map(|(turn, _)| turn)
}

/// Whether `body` is a turn the session waits for; if so, it is taken (a retry of the same
/// request later is a side request), with the lane's channel when it was awaited on one.
fn take(
    body: &Value,
    recognizer: &dyn Recognizer,
    expect: &Mutex<Expect>,
) -> Option<(Turn, Option<Sender<Exchange>>)> {
    // Only the agent's own conversation can be a turn; a product's side requests (titles,
    // suggestions) are recognised by the product's driver.
    if !recognizer.is_agent(body) {
        return None;
    }
    // The conversation ends with the user's message (Claude Code 2.1.330 appends a
    // `system` message with the environment after it); an assistant message last is not a
    // turn.
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
    let texts: Vec<&str> = blocks
        .iter()
        .filter(|b| b["type"] == "text")
        .filter_map(|b| b["text"].as_str())
        .collect();
    let result_of = |id: &str| {
        blocks
            .iter()
            .find(|b| b["type"] == "tool_result" && b["tool_use_id"] == id)
            .map(|block| {
                Turn::Result(ToolResult {
                    tool_use_id: id.to_string(),
                    is_error: block["is_error"].as_bool().unwrap_or(false),
                    text: result_text(&block["content"]),
                })
            })
    };
    let member = recognizer.member(body);
    if let Some(n) = e.prompt {
        if recognizer.is_prompt(&texts, n) && member == e.member {
            e.prompt = None;
            e.member = None;
            return Some((Turn::Prompt(n), None));
        }
    } else if let Some(id) = e.tool.clone()
        && let Some(turn) = result_of(&id)
    {
        e.tool = None;
        return Some((turn, None));
    }
    let (i, turn) = e
        .lanes
        .iter()
        .enumerate()
        .find_map(|(i, (awaited, _))| match awaited {
            Awaited::Prompt { n, member: m } => {
                (recognizer.is_prompt(&texts, *n) && member == *m).then_some((i, Turn::Prompt(*n)))
            }
            Awaited::Tool(id) => result_of(id).map(|turn| (i, turn)),
        })?;
    let (_, to) = e.lanes.remove(i);
    Some((turn, Some(to)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A product whose agent offers the tool `todo` and whose prompts say `request N`.
    struct Product;

    impl Recognizer for Product {
        fn is_agent(&self, body: &Value) -> bool {
            body["tools"]
                .as_array()
                .is_some_and(|tools| tools.iter().any(|t| t["name"] == "todo"))
        }

        fn is_prompt(&self, texts: &[&str], n: u64) -> bool {
            texts.iter().any(|t| t.contains(&format!("request {n}.")))
        }
    }

    fn body(last: Value) -> Value {
        json!({"tools": [{"name": "todo"}], "messages": [last]})
    }

    #[test]
    fn only_the_awaited_prompt_and_result_are_turns() {
        let expect = Mutex::new(Expect::default());
        let prompt = body(json!({"role": "user", "content": [
            {"type": "text", "text": "<system-reminder>x</system-reminder>"},
            {"type": "text", "text": "Do request 3."}]}));
        assert_eq!(
            take_turn(&prompt, &Product, &expect),
            None,
            "nothing awaited yet"
        );
        expect.lock().unwrap().prompt = Some(3);
        let other = body(json!({"role": "user", "content": "Do request 4."}));
        assert_eq!(take_turn(&other, &Product, &expect), None);
        let not_agent = json!({"messages": prompt["messages"].clone()});
        assert_eq!(take_turn(&not_agent, &Product, &expect), None);
        let answered = json!({"tools": [{"name": "todo"}], "messages": [
            prompt["messages"][0].clone(), {"role": "assistant", "content": "Done."}]});
        assert_eq!(
            take_turn(&answered, &Product, &expect),
            None,
            "assistant last"
        );
        let then_system = json!({"tools": [{"name": "todo"}], "messages": [
            prompt["messages"][0].clone(), {"role": "system", "content": "env"}]});
        assert_eq!(
            take_turn(&then_system, &Product, &expect),
            Some(Turn::Prompt(3)),
            "a system message after the user's is not the last"
        );
        expect.lock().unwrap().prompt = Some(3);
        assert_eq!(take_turn(&prompt, &Product, &expect), Some(Turn::Prompt(3)));
        assert_eq!(
            take_turn(&prompt, &Product, &expect),
            None,
            "a retry is a side request"
        );
        expect.lock().unwrap().tool = Some("t1".into());
        let result = body(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "is_error": true,
             "content": [{"type": "text", "text": "Task not found"}]}]}));
        let other_result = body(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t0", "content": "x"}]}));
        assert_eq!(take_turn(&other_result, &Product, &expect), None);
        assert_eq!(
            take_turn(&result, &Product, &expect),
            Some(Turn::Result(ToolResult {
                tool_use_id: "t1".into(),
                is_error: true,
                text: "Task not found".into()
            }))
        );
        assert_eq!(take_turn(&result, &Product, &expect), None, "taken once");
    }

    /// A recognizer of a team's requests: a test body names its member in `member`.
    struct Team;
    impl Recognizer for Team {
        fn is_agent(&self, body: &Value) -> bool {
            Product.is_agent(body)
        }
        fn is_prompt(&self, texts: &[&str], n: u64) -> bool {
            Product.is_prompt(texts, n)
        }
        fn member(&self, body: &Value) -> Option<String> {
            body["member"].as_str().map(str::to_string)
        }
    }

    /// A prompt awaited from a member of a team is a turn only in that member's
    /// conversation, and one awaited from the lead only in the lead's.
    #[test]
    fn a_members_prompt_is_a_turn_only_in_its_conversation() {
        let expect = Mutex::new(Expect::default());
        let lead = body(json!({"role": "user", "content": "Do request 5."}));
        let mut w1 = lead.clone();
        w1["member"] = json!("w1");
        let mut w2 = lead.clone();
        w2["member"] = json!("w2");
        {
            let mut e = expect.lock().unwrap();
            e.prompt = Some(5);
            e.member = Some("w1".into());
        }
        assert_eq!(take_turn(&lead, &Team, &expect), None, "the lead's");
        assert_eq!(take_turn(&w2, &Team, &expect), None, "another member's");
        assert_eq!(take_turn(&w1, &Team, &expect), Some(Turn::Prompt(5)));
        expect.lock().unwrap().prompt = Some(5);
        assert_eq!(
            take_turn(&w1, &Team, &expect),
            None,
            "awaited from the lead"
        );
        assert_eq!(take_turn(&lead, &Team, &expect), Some(Turn::Prompt(5)));
    }

    /// Turns awaited on lanes are awaited at once, each taken once and handed to its own
    /// lane's channel, while the session's own expectation still goes to `next`: the lead's
    /// tool result and a teammate's prompt in flight together.
    #[test]
    fn turns_awaited_on_lanes_go_to_their_lanes() {
        let expect = Mutex::new(Expect::default());
        let (lead_tx, lead_rx) = mpsc::channel();
        let (w1_tx, w1_rx) = mpsc::channel();
        let mut w1_prompt = body(json!({"role": "user", "content": "Do request 2."}));
        w1_prompt["member"] = json!("w1");
        let lead_prompt = body(json!({"role": "user", "content": "Do request 2."}));
        let lead_result = body(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "Spawned"}]}));
        {
            let mut e = expect.lock().unwrap();
            e.lanes.push((Awaited::Tool("t1".into()), lead_tx));
            e.lanes.push((
                Awaited::Prompt {
                    n: 2,
                    member: Some("w1".into()),
                },
                w1_tx,
            ));
        }
        assert!(
            take(&lead_prompt, &Team, &expect).is_none(),
            "prompt 2 is awaited from w1, not the lead"
        );
        let (turn, to) = take(&w1_prompt, &Team, &expect).unwrap();
        assert_eq!(turn, Turn::Prompt(2));
        to.unwrap()
            .send(Exchange {
                turn,
                session: None,
                reply: mpsc::sync_channel(1).0,
            })
            .unwrap();
        assert_eq!(w1_rx.try_recv().unwrap().turn, Turn::Prompt(2));
        assert!(take(&w1_prompt, &Team, &expect).is_none(), "taken once");
        expect.lock().unwrap().prompt = Some(3);
        let (turn, to) = take(&lead_result, &Team, &expect).unwrap();
        assert!(matches!(&turn, Turn::Result(r) if r.tool_use_id == "t1"));
        to.unwrap()
            .send(Exchange {
                turn,
                session: None,
                reply: mpsc::sync_channel(1).0,
            })
            .unwrap();
        assert!(lead_rx.try_recv().is_ok());
        assert!(expect.lock().unwrap().lanes.is_empty());
        let (turn, to) = take(&lead_prompt, &Team, &expect).unwrap_or((Turn::Prompt(0), None));
        assert_eq!(turn, Turn::Prompt(0), "prompt 3 is the session's, not 2");
        assert!(to.is_none());
        let third = body(json!({"role": "user", "content": "Do request 3."}));
        let (turn, to) = take(&third, &Team, &expect).unwrap();
        assert_eq!(turn, Turn::Prompt(3));
        assert!(to.is_none(), "the session's own expectation goes to next");
    }

    /// Over HTTP: a turn reaches the session with the session the product's recognizer read,
    /// its reply is the answer; a side request gets `Done.` or the recognizer's summary, and
    /// the counts say which was which.
    #[test]
    fn turns_reach_the_session_and_side_requests_are_answered_harmlessly() {
        struct Named;
        impl Recognizer for Named {
            fn is_agent(&self, body: &Value) -> bool {
                Product.is_agent(body)
            }
            fn is_prompt(&self, texts: &[&str], n: u64) -> bool {
                Product.is_prompt(texts, n)
            }
            fn session(&self, body: &Value) -> Option<String> {
                body["session"].as_str().map(str::to_string)
            }
            fn summary(&self, body: &Value) -> Option<&'static str> {
                (body["summarise"] == true).then_some("SUMMARY")
            }
        }
        let model = ScriptedModel::start(Named, None).unwrap();
        let url = format!("{}/v1/messages", model.base_url());
        let post = |body: Value| {
            let url = url.clone();
            std::thread::spawn(move || http_post(&url, &body.to_string()))
        };
        model.expect_prompt(1);
        let mut turn = body(json!({"role": "user", "content": "Do request 1."}));
        turn["session"] = json!("s-1");
        let pending = post(turn);
        let exchange = model.next(Duration::from_secs(10)).unwrap();
        assert_eq!(exchange.turn, Turn::Prompt(1));
        assert_eq!(exchange.session.as_deref(), Some("s-1"));
        exchange.answer(Reply::Tool {
            id: "t1".into(),
            name: "todo".into(),
            input: json!({"a": 1}),
        });
        let answer: Value = serde_json::from_str(&pending.join().unwrap()).unwrap();
        assert_eq!(answer["stop_reason"], "tool_use");
        assert_eq!(answer["content"][0]["id"], "t1");
        let side: Value = serde_json::from_str(
            &post(json!({"messages": [{"role": "user", "content": "a title"}]}))
                .join()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(side["content"][0]["text"], "Done.");
        let summary: Value = serde_json::from_str(
            &post(json!({"summarise": true, "messages": [{"role": "user", "content": "sum"}]}))
                .join()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(summary["content"][0]["text"], "SUMMARY");
        let seen = model.seen();
        assert_eq!((seen.turns, seen.side, seen.compactions), (1, 2, 1));
    }

    /// One `POST` over a plain TCP connection; the answer's body.
    fn http_post(url: &str, body: &str) -> String {
        use std::io::{Read, Write};
        let rest = url.strip_prefix("http://").unwrap();
        let (host, path) = rest.split_once('/').unwrap();
        let mut s = std::net::TcpStream::connect(host).unwrap();
        write!(
            s,
            "POST /{path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out.split_once("\r\n\r\n").unwrap().1.to_string()
    }
}
