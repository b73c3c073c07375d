//! Large answers written as bytes made once, not as a `serde_json::Value` tree.
//!
//! `rmcp` takes a tool result's `structuredContent` as a `Value` and its text as a `String`,
//! and serialises the whole message itself. For a `task_list` of 10,000 tasks that meant
//! cloning a tree of 10,000 task values, serialising it, escaping 6 MB of text, and freeing it
//! all again, on every call (issue 28). Instead, the server registers the answer's two parts
//! here as finished JSON (each task's bytes are made once and kept with the cached task) and
//! hands `rmcp` a short placeholder string for each; [`SplicingWriter`], the writer under
//! `rmcp`'s stdio transport, replaces each placeholder's JSON string, quotes included, with the
//! registered bytes as the message line goes out.
//!
//! A placeholder is the string `taskproof-part-{nonce}-{n}` (for a string) or the object
//! `{"taskproof-part-{nonce}-{n}": null}` (for an object: `rmcp` moves a `structuredContent`
//! that is not an object into the text for older clients). The nonce is drawn at random when the
//! server starts and never shown, so no task text can name a part, and a part is taken out of
//! the registry when it is written. Every other message (and every byte of a line without a
//! placeholder) passes through unchanged, so `rmcp`'s framing and its own error answers are
//! untouched.

use std::collections::HashMap;
use std::io;
use std::pin::Pin;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use tokio::io::AsyncWrite;

/// The parts waiting to be written, by number.
pub struct Parts {
    /// `"taskproof-part-{nonce}-`: what every placeholder starts with, as it stands in JSON.
    prefix: String,
    next: AtomicU64,
    parts: Mutex<HashMap<u64, Part>>,
}

/// A registered part: its JSON, and whether it stands for a placeholder object.
struct Part {
    json: Vec<u8>,
    object: bool,
}

impl Parts {
    pub fn new() -> Parts {
        let nonce: u128 = rand::random();
        Parts {
            prefix: format!("\"taskproof-part-{nonce:032x}-"),
            next: AtomicU64::new(0),
            parts: Mutex::new(HashMap::new()),
        }
    }

    /// Registers `json` (one JSON string literal, quotes included) and returns the string to
    /// put where it belongs in the message.
    pub fn string(&self, json: Vec<u8>) -> String {
        self.register(json, false)
    }

    /// Registers `json` (one JSON object) and returns the object to put where it belongs in
    /// the message.
    pub fn object(&self, json: Vec<u8>) -> serde_json::Value {
        let key = self.register(json, true);
        serde_json::Value::Object([(key, serde_json::Value::Null)].into_iter().collect())
    }

    fn register(&self, json: Vec<u8>, object: bool) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        self.lock().insert(n, Part { json, object });
        // Without the leading quote: the string's value, not its JSON.
        format!("{}{n}", &self.prefix[1..])
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Part>> {
        self.parts.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Writes `line` into `out` with every registered placeholder replaced by its part.
    fn splice(&self, line: &[u8], out: &mut Vec<u8>) {
        if self.lock().is_empty() {
            out.extend_from_slice(line);
            return;
        }
        let prefix = self.prefix.as_bytes();
        let mut rest = line;
        while let Some(at) = memchr::memmem::find(rest, prefix) {
            let digits = &rest[at + prefix.len()..];
            let len = digits.iter().take_while(|b| b.is_ascii_digit()).count();
            let n = (digits.get(len) == Some(&b'"'))
                .then(|| {
                    std::str::from_utf8(&digits[..len])
                        .ok()?
                        .parse::<u64>()
                        .ok()
                })
                .flatten();
            let after = &digits[(len + 1).min(digits.len())..];
            let mut parts = self.lock();
            // Where the placeholder starts and what follows it, for the part's kind.
            let found = n.and_then(|n| {
                let object = parts.get(&n)?.object;
                if !object {
                    return Some((n, at, after));
                }
                let tail = after.strip_prefix(b":null}")?;
                (at > 0 && rest[at - 1] == b'{').then_some((n, at - 1, tail))
            });
            match found.and_then(|(n, start, tail)| Some((parts.remove(&n)?, start, tail))) {
                Some((part, start, tail)) => {
                    drop(parts);
                    out.reserve(start + part.json.len());
                    out.extend_from_slice(&rest[..start]);
                    out.extend_from_slice(&part.json);
                    rest = tail;
                }
                None => {
                    let end = at + prefix.len();
                    out.extend_from_slice(&rest[..end]);
                    rest = &rest[end..];
                }
            }
        }
        out.extend_from_slice(rest);
    }
}

impl Default for Parts {
    fn default() -> Self {
        Parts::new()
    }
}

/// The writer under `rmcp`'s transport: collects each message line, splices its parts in,
/// and writes it on.
pub struct SplicingWriter<W> {
    inner: W,
    parts: std::sync::Arc<Parts>,
    /// The message line being written, until its newline.
    line: Vec<u8>,
    /// Spliced lines not yet taken by `inner`, and how much of them it took.
    out: Vec<u8>,
    sent: usize,
}

impl<W> SplicingWriter<W> {
    pub fn new(inner: W, parts: std::sync::Arc<Parts>) -> SplicingWriter<W> {
        SplicingWriter {
            inner,
            parts,
            line: Vec::new(),
            out: Vec::new(),
            sent: 0,
        }
    }
}

impl<W: AsyncWrite + Unpin> SplicingWriter<W> {
    /// Hands `inner` what is waiting, until it has all of it or cannot take more now.
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.sent < self.out.len() {
            match Pin::new(&mut self.inner).poll_write(cx, &self.out[self.sent..]) {
                Poll::Ready(Ok(0)) => {
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::WriteZero,
                        "the client stopped reading",
                    )));
                }
                Poll::Ready(Ok(n)) => self.sent += n,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        self.out.clear();
        self.sent = 0;
        Poll::Ready(Ok(()))
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for SplicingWriter<W> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        // Lines are taken whole and kept until written; a writer that is behind is asked to
        // catch up first, so the buffer holds at most what one message needs.
        if this.sent < this.out.len() {
            match this.poll_drain(cx) {
                Poll::Ready(Ok(())) => {}
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        let mut rest = buf;
        while let Some(nl) = memchr::memchr(b'\n', rest) {
            let (head, tail) = rest.split_at(nl + 1);
            if this.line.is_empty() {
                this.parts.splice(head, &mut this.out);
            } else {
                this.line.extend_from_slice(head);
                let line = std::mem::take(&mut this.line);
                this.parts.splice(&line, &mut this.out);
            }
            rest = tail;
        }
        this.line.extend_from_slice(rest);
        // Start handing it on; what `inner` cannot take now is sent by the next write or
        // flush.
        if let Poll::Ready(Err(e)) = this.poll_drain(cx) {
            return Poll::Ready(Err(e));
        }
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match this.poll_drain(cx) {
            Poll::Ready(Ok(())) => Pin::new(&mut this.inner).poll_flush(cx),
            other => other,
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.line.is_empty() {
            // A last line without its newline: written as it is.
            let line = std::mem::take(&mut this.line);
            this.parts.splice(&line, &mut this.out);
        }
        match this.poll_drain(cx) {
            Poll::Ready(Ok(())) => Pin::new(&mut this.inner).poll_shutdown(cx),
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use tokio::io::AsyncWriteExt;

    fn write_all(parts: &Arc<Parts>, chunks: &[&[u8]]) -> Vec<u8> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut w = SplicingWriter::new(Vec::new(), parts.clone());
            for c in chunks {
                w.write_all(c).await.unwrap();
            }
            w.flush().await.unwrap();
            w.inner
        })
    }

    #[test]
    fn a_placeholder_is_replaced_by_its_part_once() {
        let parts = Arc::new(Parts::new());
        let a = parts.string(br#""a \"text\"""#.to_vec());
        let b = parts.object(br#"{"tasks":[]}"#.to_vec());
        let line = serde_json::json!({"content": [{"text": a}], "structuredContent": b});
        let mut bytes = serde_json::to_vec(&line).unwrap();
        bytes.push(b'\n');
        // Split in the middle of a placeholder: lines are spliced whole.
        let (x, y) = bytes.split_at(20);
        let out = write_all(&parts, &[x, y, &bytes]);
        let mut lines = out.split(|b| *b == b'\n');
        let first: serde_json::Value = serde_json::from_slice(lines.next().unwrap()).unwrap();
        assert_eq!(
            first,
            serde_json::json!({"content": [{"text": "a \"text\""}],
                               "structuredContent": {"tasks": []}})
        );
        // Written once: the same placeholder again is left as it was.
        assert_eq!(lines.next().unwrap(), &bytes[..bytes.len() - 1]);
        assert!(parts.lock().is_empty(), "a written part is not kept");
    }

    #[test]
    fn lines_without_placeholders_pass_unchanged() {
        let parts = Arc::new(Parts::new());
        let _ = parts.string(b"1".to_vec());
        let other = format!("{{\"x\":\"{}999\"}}\n", &parts.prefix[1..]);
        let plain = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n";
        let out = write_all(&parts, &[other.as_bytes(), plain]);
        assert_eq!(out, [other.as_bytes(), plain].concat());
    }

    #[test]
    fn placeholders_of_another_server_are_not_parts_here() {
        let parts = Arc::new(Parts::new());
        let other = Parts::new();
        let p = other.string(b"1".to_vec());
        let _ = parts.string(b"2".to_vec());
        let line = format!("{{\"x\":\"{p}\"}}\n");
        assert_eq!(write_all(&parts, &[line.as_bytes()]), line.as_bytes());
    }
}
