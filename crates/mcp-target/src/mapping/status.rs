//! Status words both ways: the server's word for a wire status and back, the words the
//! server is known to have, and the statuses its tasks can have.

use serde_json::Value;
use taskproof_core::protocol::Op;

use super::Mapping;

impl Mapping {
    /// The statuses the server's tasks can have, when `status_from` reads them from its
    /// fields and no rule gives `in_progress` (a task done or not done): hello's
    /// [`taskproof_core::protocol::STATUSES`], so the steps that start a task are not judged.
    pub fn statuses(&self) -> Option<String> {
        let rules = &self.task.status_from;
        if rules.is_empty() || rules.iter().any(|r| r.status == "in_progress") {
            return None;
        }
        let mut have: Vec<&str> = Vec::new();
        for r in rules {
            if !have.contains(&r.status.as_str()) {
                have.push(&r.status);
            }
        }
        Some(have.join(", "))
    }

    /// The server's status word (or table of arguments) for a wire word (others as given).
    pub fn status_out(&self, wire: &str) -> Value {
        self.status
            .get(wire)
            .cloned()
            .unwrap_or_else(|| Value::String(wire.to_string()))
    }

    /// Whether some call of `update` gives the request's status to the server (a template
    /// names `patch.status`); else the status is said only by which calls run.
    pub fn passes_status(&self) -> bool {
        self.ops.get(&Op::Update).is_some_and(|m| {
            m.calls
                .iter()
                .any(|c| c.args.names_under(&["patch", "status"]))
        })
    }

    /// The server's status words the mapping knows: those `[status]` names, the words of
    /// `status.refuse`, and with `ignore_case` the wire words `[status]` leaves as they are
    /// (they go to the server as given, so they are its words too).
    pub fn server_statuses(&self) -> Vec<&str> {
        let mut words: Vec<&str> = self.status.values().filter_map(Value::as_str).collect();
        words.extend(self.status_words.refuse.iter().map(String::as_str));
        if self.status_words.ignore_case {
            words.extend(
                ["pending", "in_progress", "completed"]
                    .into_iter()
                    .filter(|w| !self.status.contains_key(*w)),
            );
        }
        words
    }

    /// Whether `word` is one of the server's status words ([`Mapping::server_statuses`]),
    /// compared without case when `status.ignore_case` says the server reads them so.
    pub fn is_server_status(&self, word: &str) -> bool {
        self.server_statuses()
            .iter()
            .any(|w| self.status_words.same(w, word))
    }

    /// The wire status word for a server word (others as given); without case when
    /// `status.ignore_case` says so.
    pub fn status_in(&self, server: &str) -> String {
        let find = |same: &dyn Fn(&str) -> bool| {
            self.status
                .iter()
                .find(|(_, s)| s.as_str().is_some_and(same))
                .map(|(w, _)| w.clone())
        };
        find(&|s| s == server)
            .or_else(|| find(&|s| self.status_words.same(s, server)))
            .or_else(|| {
                // An unmapped wire word in the server's case (`Pending`).
                ["pending", "in_progress", "completed"]
                    .into_iter()
                    .find(|w| {
                        self.status_words.ignore_case
                            && !self.status.contains_key(*w)
                            && self.status_words.same(w, server)
                    })
                    .map(str::to_string)
            })
            .unwrap_or_else(|| server.to_string())
    }
}
