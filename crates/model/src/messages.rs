//! The Anthropic Messages API as taskproof's scripted models speak it: an HTTP server on
//! 127.0.0.1 with one thread a request ([`Server`]), reading a request
//! ([`read_messages_request`]), and answering it with one assistant message, as plain JSON or
//! as the server-sent events of `"stream": true` ([`answer`]), or with a token count
//! ([`answer_count_tokens`]).
//!
//! Every scripted model is made of these pieces: the task sessions' one
//! ([`crate::scripted::ScriptedModel`]) and the Claude Code background sessions' one, which
//! reads each request for what the CLI reported of its background work
//! (`taskproof_claude_code::background::scripted`). What a model answers is its own; how a
//! request is read and an answer sent is here only.

use std::sync::Arc;
use std::thread::JoinHandle;

use serde_json::{Value, json};

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("start the scripted model on 127.0.0.1: {0}")]
    Bind(String),
}

/// A running HTTP server on 127.0.0.1 (a free port) that hands every request to its handler
/// on a thread of its own: a turn may block until the session answers, and side requests
/// must not wait behind it. Dropping it stops it.
pub struct Server {
    server: Arc<tiny_http::Server>,
    port: u16,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Starts the server; `handle` answers each request (or drops it, which closes the
    /// connection).
    pub fn start(
        handle: impl Fn(tiny_http::Request) + Send + Sync + 'static,
    ) -> Result<Server, ModelError> {
        let server =
            tiny_http::Server::http("127.0.0.1:0").map_err(|e| ModelError::Bind(e.to_string()))?;
        let port = server
            .server_addr()
            .to_ip()
            .map(|a| a.port())
            .ok_or_else(|| ModelError::Bind("not an IP address".into()))?;
        let server = Arc::new(server);
        let handle = Arc::new(handle);
        let thread = {
            let server = Arc::clone(&server);
            std::thread::spawn(move || {
                for request in server.incoming_requests() {
                    let handle = Arc::clone(&handle);
                    std::thread::spawn(move || handle(request));
                }
            })
        };
        Ok(Server {
            server,
            port,
            thread: Some(thread),
        })
    }

    /// The server's address as a base URL (`ANTHROPIC_BASE_URL`, a provider's `baseURL`).
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Reads a request to the scripted model. A request that is not a `POST` to the Messages API
/// is answered 404 here and gives `None`; any other comes back with its path and body.
pub fn read_messages_request(
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

/// Whether a request's path is the token count's (`/v1/messages/count_tokens`).
pub fn is_count_tokens(path: &str) -> bool {
    path.starts_with("/v1/messages/count_tokens")
}

/// The token count a CLI asks for before some turns: any number will do.
pub fn answer_count_tokens(request: tiny_http::Request) {
    respond(
        request,
        json!({"input_tokens": 1}).to_string().into_bytes(),
        false,
    );
}

/// Answers with one assistant message of `content`, as an event stream when the request
/// asked for one. It stops for tool use when the content has a `tool_use` block.
pub fn answer(
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
pub fn sse(message: &Value) -> Vec<u8> {
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

/// The text of a `tool_result` block's content: a string, or the `text` of its blocks, one
/// a line.
pub fn result_text(content: &Value) -> String {
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
