//! How long a target's processes took to start: from the spawn until the process answered
//! its greeting (an MCP server's `initialize`, an adapter's `hello`), each start under its
//! own limit (`--start-timeout`), apart from the requests' (issue 55: a slow start hides
//! behind flags). A target that starts processes keeps a [`StartLog`] shared by all its
//! sessions; a run reads it at its end and says, once, which flag would have helped.

use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One start of one of a target's processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Start {
    /// From the spawn until the greeting was answered, or the limit when it was not.
    pub took: Duration,
    /// The greeting got no answer within the start's limit.
    pub timed_out: bool,
}

/// The starts of one target's processes, shared by every session it opens (a clone is a
/// handle on the same log).
#[derive(Debug, Clone)]
pub struct StartLog {
    greeting: &'static str,
    starts: Arc<Mutex<Vec<Start>>>,
}

impl StartLog {
    /// A log whose starts end when the process answers `greeting` (`initialize`, `hello`).
    pub fn new(greeting: &'static str) -> StartLog {
        StartLog {
            greeting,
            starts: Arc::default(),
        }
    }

    /// What answering ends a start.
    pub fn greeting(&self) -> &'static str {
        self.greeting
    }

    /// Records a start that was answered after `took`.
    pub fn answered(&self, took: Duration) {
        self.push(Start {
            took,
            timed_out: false,
        });
    }

    /// Records a start that got no answer within `limit`.
    pub fn timed_out(&self, limit: Duration) {
        self.push(Start {
            took: limit,
            timed_out: true,
        });
    }

    fn push(&self, s: Start) {
        self.starts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(s);
    }

    /// Every start so far, in the order they ended.
    pub fn all(&self) -> Vec<Start> {
        self.starts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_one_log() {
        let log = StartLog::new("hello");
        let other = log.clone();
        other.answered(Duration::from_millis(5));
        log.timed_out(Duration::from_secs(2));
        assert_eq!(
            log.all(),
            vec![
                Start {
                    took: Duration::from_millis(5),
                    timed_out: false
                },
                Start {
                    took: Duration::from_secs(2),
                    timed_out: true
                }
            ]
        );
        assert_eq!(other.greeting(), "hello");
    }
}
