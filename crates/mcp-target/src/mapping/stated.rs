//! What `hello` states of a mapping: the file, and per operation the tools called.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use taskproof_core::protocol::{
    ATOMIC, CALLS_APART, Op, READ_MODIFY_WRITE, ReadModifyWrite, STATUSES,
};

use super::{Mapping, OPS, describe};

impl Mapping {
    /// What `hello` states: the file, and per operation the tools called.
    pub fn stated(&self) -> BTreeMap<String, String> {
        let mut m = BTreeMap::new();
        m.insert("mapping".into(), self.path.display().to_string());
        if self.skip_stdout_noise {
            m.insert(
                "stdout".into(),
                "lines on the server's stdout that are not MCP are skipped (server.skip_stdout_noise)"
                    .into(),
            );
        }
        if self.check_form {
            m.insert(
                "form".into(),
                "requests of a malformed form are answered invalid by taskproof's MCP client \
                 (server.check_form), without a tool call"
                    .into(),
            );
        }
        if let Some(statuses) = self.statuses() {
            m.insert(STATUSES.into(), statuses);
        }
        if !self.task.status_from.is_empty() {
            m.insert(
                "status".into(),
                "the server has no status words (task.status_from reads the status from its \
                 fields): a status other than pending, in_progress and completed is answered \
                 invalid by taskproof's MCP client"
                    .into(),
            );
        }
        if self.task.status_from.is_empty()
            && self.ops.contains_key(&Op::Update)
            && !self.passes_status()
        {
            m.insert(
                "status".into(),
                "the server is never given a status word (the mapping says a status by which \
                 calls run): a status other than pending, in_progress and completed is \
                 answered invalid by taskproof's MCP client"
                    .into(),
            );
        } else if self.task.status_from.is_empty() && !self.server_statuses().is_empty() {
            let mut words = self
                .server_statuses()
                .iter()
                .map(|w| format!("{w:?}"))
                .collect::<Vec<_>>();
            words.dedup();
            m.insert(
                "status".into(),
                format!(
                    "a status outside pending, in_progress and completed that is one of the \
                     server's own words ({}{}) is answered invalid by taskproof's MCP client \
                     (passed on, it would mean another wire status, or what the server does \
                     with it); other words go to the server as given",
                    words.join(", "),
                    if self.status_words.ignore_case {
                        ", compared without case: the server reads them so (status.ignore_case)"
                    } else {
                        ""
                    }
                ),
            );
        }
        if self.task.id_table {
            m.insert(
                "ids".into(),
                "wire ids are taskproof's numbers for the server's own ids (task.ids = \"table\", \
                 kept in ROOT/.taskproof-mcp/ids.json, shared by every session on the root): a \
                 server id never seen before gets one more than the highest number given in its \
                 list, one seen before gets its old number, and a wire id the table does not \
                 know goes to the server as given. So S1 judges whether the server hands out an \
                 id a second time, not how it numbers; and a wire id names a task of its own \
                 list only"
                    .into(),
            );
        }
        if self.launch.per_list {
            m.insert(
                "lists".into(),
                "one server per list (server.per_list), started on the list's first use; a list \
                 name that cannot name a folder is answered invalid by taskproof's MCP client"
                    .into(),
            );
        } else if let Some(c) = &self.container {
            m.insert(
                "lists".into(),
                format!(
                    "each list is a container of the server, made by {} on the list's first \
                     create and kept in ROOT/.taskproof-mcp/ids.json; before that, list answers [] \
                     and the other operations not_found without a tool call (taskproof's MCP \
                     client); a list name that is not a valid name is answered invalid",
                    c.tool
                ),
            );
        }
        if let Some(why) = self.not_atomic() {
            m.insert(ATOMIC.into(), format!("no: {why}"));
        }
        let rmw = self.read_modify_write_requests();
        if !rmw.is_empty() {
            m.insert(READ_MODIFY_WRITE.into(), ReadModifyWrite::write_all(&rmw));
        }
        let apart = self.calls_apart();
        if !apart.is_empty() {
            m.insert(CALLS_APART.into(), ReadModifyWrite::write_all(&apart));
        }
        for op in OPS {
            let text = match self.ops.get(&op) {
                None => "unsupported (the mapping's `unsupported`)".to_string(),
                Some(o) => {
                    let mut s = String::new();
                    for (i, c) in o.calls.iter().enumerate() {
                        if i > 0 {
                            s.push_str("; ");
                        }
                        match &c.read {
                            Some(r) if c.tool.is_empty() => {
                                let _ = write!(s, "get {}", r.join("."));
                            }
                            Some(r) => {
                                let _ = write!(s, "get {} then {}", r.join("."), c.tool);
                            }
                            None => s.push_str(&c.tool),
                        }
                        if !c.when.is_empty() {
                            let _ = write!(s, " when {}", describe(&c.when));
                        }
                        if !c.unless.is_empty() {
                            let _ = write!(s, " unless {}", describe(&c.unless));
                        }
                        if let Some(f) = &c.for_each {
                            let _ = write!(s, " for each of {}", f.join("."));
                        }
                    }
                    if o.answer.fetch {
                        s.push_str(if op == Op::List {
                            "; then get of each"
                        } else {
                            "; then get"
                        });
                    }
                    for c in &o.unsupported_when {
                        let _ = write!(s, "; {} unsupported", describe(c));
                    }
                    if let Some(u) = &o.undo {
                        let _ = write!(
                            s,
                            "; when a call fails after the task was made, {} removes it again \
                             (taskproof's MCP client: the server has no single call for it)",
                            u.tool
                        );
                    }
                    s
                }
            };
            m.insert(op.to_string(), text);
        }
        m
    }
}
