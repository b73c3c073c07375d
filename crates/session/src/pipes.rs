//! The threads that drain a child's pipes, for every target that runs a process: its answers
//! line by line onto a channel (so a request can wait for one with a time limit), and its
//! stderr into a bounded buffer for the report (read to the end, so the child never blocks on
//! a full pipe).

use std::io::{BufRead, BufReader, Read};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// One line of a child's stdout.
pub enum Line {
    /// The line's bytes, with its `\n` when it had one (the last line of the stream may not).
    Text(Vec<u8>),
    /// A line longer than the limit; nothing more is read after it.
    TooLong,
}

/// Reads `stdout` line by line onto the returned channel until end of file, a read error, a
/// line longer than `max` bytes ([`Line::TooLong`], then the end) or the receiver's drop. The
/// channel's disconnection is the stream's end.
pub fn lines(stdout: impl Read + Send + 'static, max: usize) -> Receiver<Line> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        loop {
            let mut buf = Vec::new();
            let line = match (&mut reader)
                .take(max as u64 + 1)
                .read_until(b'\n', &mut buf)
            {
                Ok(0) | Err(_) => return,
                Ok(_) if buf.len() > max => Line::TooLong,
                Ok(_) => Line::Text(buf),
            };
            let last = matches!(line, Line::TooLong);
            if tx.send(line).is_err() || last {
                return;
            }
        }
    });
    rx
}

/// What a child wrote to stderr, kept up to a limit.
pub type Kept = Arc<Mutex<Vec<u8>>>;

/// Reads `stderr` to its end, keeping the first `max` bytes in the returned buffer; the
/// thread ends with the pipe, so joining it after the child is gone gives the whole of it.
pub fn keep_stderr(stderr: impl Read + Send + 'static, max: usize) -> (Kept, JoinHandle<()>) {
    let kept: Kept = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&kept);
    let thread = std::thread::spawn(move || {
        let mut pipe = stderr;
        let mut chunk = [0u8; 8192];
        while let Ok(n) = pipe.read(&mut chunk) {
            if n == 0 {
                return;
            }
            let mut kept = sink.lock().unwrap_or_else(|p| p.into_inner());
            let room = max.saturating_sub(kept.len());
            kept.extend_from_slice(&chunk[..n.min(room)]);
        }
    });
    (kept, thread)
}

/// How long a killed target's stderr may take to reach its end before the session stops
/// waiting for it.
pub const STDERR_GRACE: Duration = Duration::from_millis(500);

/// Waits up to `within` for a [`keep_stderr`] thread to end, joining it if it did. Called
/// once the child's process group is dead, so that the last words of a killed target reach
/// the report; a grandchild that left the group can hold the pipe open, hence the bound
/// (the thread then ends on its own with the pipe).
pub fn finish_stderr(thread: JoinHandle<()>, within: Duration) {
    let deadline = Instant::now() + within;
    while !thread.is_finished() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    if thread.is_finished() {
        let _ = thread.join();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finishing_stderr_joins_a_drain_whose_pipe_closed_with_all_it_read() {
        let (reader, mut writer) = std::io::pipe().unwrap();
        let (kept, thread) = keep_stderr(reader, 1024);
        std::io::Write::write_all(&mut writer, b"last words\n").unwrap();
        drop(writer);
        finish_stderr(thread, Duration::from_secs(60));
        assert_eq!(&*kept.lock().unwrap(), b"last words\n");
    }

    #[test]
    fn finishing_stderr_does_not_wait_for_a_pipe_something_else_holds_open() {
        // The write end stays open, as when a grandchild that left the group holds it: the
        // call returns after its bound all the same.
        let (reader, writer) = std::io::pipe().unwrap();
        let (_kept, thread) = keep_stderr(reader, 1024);
        let (done, returned) = mpsc::channel();
        std::thread::spawn(move || {
            finish_stderr(thread, Duration::from_millis(20));
            let _ = done.send(());
        });
        assert!(
            returned.recv_timeout(Duration::from_secs(60)).is_ok(),
            "finish_stderr waited on for a pipe that never closed"
        );
        drop(writer);
    }

    #[test]
    fn lines_come_whole_and_a_line_over_the_limit_ends_the_stream() {
        let input: &[u8] = b"{\"a\":1}\nshort\n0123456789abcdef\nnever read\n";
        let rx = lines(input, 10);
        let got: Vec<_> = rx.iter().collect();
        assert_eq!(got.len(), 3);
        assert!(matches!(&got[0], Line::Text(b) if b == b"{\"a\":1}\n"));
        assert!(matches!(&got[1], Line::Text(b) if b == b"short\n"));
        assert!(matches!(got[2], Line::TooLong));
    }

    #[test]
    fn stderr_is_kept_up_to_the_limit_and_read_to_its_end() {
        let input: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
        let (kept, thread) = keep_stderr(std::io::Cursor::new(input.clone()), 10_000);
        thread.join().unwrap();
        assert_eq!(*kept.lock().unwrap(), input[..10_000]);
    }
}
