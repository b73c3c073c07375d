//! What a mapping says of its atomicity: the calls that write with a task read in an earlier
//! call (read-modify-write), the requests made of calls apart, and what `hello` says of them.

use std::collections::BTreeSet;

use taskproof_core::protocol::{Op, ReadModifyWrite};

use super::{Call, Cond, CondValue, Mapping};

impl Mapping {
    /// The calls that write with a task read before them in a separate call, each with the
    /// call that read it: its own `read`, else the last earlier call of its operation that
    /// read (`{current}` stays for the calls after a read).
    fn written_after_read(&self) -> Vec<(Op, &Call, &Call)> {
        let mut out = Vec::new();
        for (op, m) in &self.ops {
            let mut reader: Option<&Call> = None;
            for c in &m.calls {
                if c.read.is_some() {
                    reader = Some(c);
                }
                if let Some(r) = reader
                    && !c.tool.is_empty()
                    && c.uses_current()
                {
                    out.push((*op, c, r));
                }
            }
        }
        out
    }

    /// The calls that read a task before they write (`read`): the mapping is then not
    /// atomic, whatever the server is.
    pub fn read_modify_write(&self) -> Vec<String> {
        self.written_after_read()
            .into_iter()
            .map(|(_, c, r)| {
                let path = r.read.as_deref().unwrap_or_default().join(".");
                if std::ptr::eq(c, r) {
                    format!("{} ({} read = {path})", c.key, c.tool)
                } else {
                    format!("{} ({}, with what {} read = {path})", c.key, c.tool, r.key)
                }
            })
            .collect()
    }

    /// The requests the mapping performs by read-modify-write, as `hello` names them for the
    /// harness ([`ReadModifyWrite`]): per call that writes with what a call read, the request
    /// paths that must be there for it to run (its `for_each`, its `read` of a request path,
    /// and the paths of its `when` conditions on the request; a condition that a missing
    /// value can meet, or one on what was read, requires nothing). What an earlier call read
    /// may have been read by another (one whose own conditions did not hold), so its
    /// conditions are not the writer's.
    pub fn read_modify_write_requests(&self) -> Vec<ReadModifyWrite> {
        let of_request =
            |p: &[String]| matches!(p.first().map(String::as_str), Some("task" | "patch"));
        let mut out = BTreeSet::new();
        for (op, c, _) in self.written_after_read() {
            let mut paths: BTreeSet<String> = BTreeSet::new();
            for p in c.for_each.iter().chain(&c.read) {
                if of_request(p) {
                    paths.insert(p.join("."));
                }
            }
            for cond in c.when.iter().filter(|w| !w.reads_current()) {
                let needs_value = match cond {
                    Cond::Present(_) => true,
                    Cond::Is(_, values) => values
                        .iter()
                        .all(|v| matches!(v, CondValue::Lit(x) if !x.is_null())),
                };
                if needs_value && of_request(cond.path()) {
                    paths.insert(cond.path().join("."));
                }
            }
            out.insert(ReadModifyWrite {
                op,
                paths: paths.into_iter().collect(),
            });
        }
        out.into_iter().collect()
    }

    /// The request paths carried out in tool calls of their own ([`taskproof_core::protocol::CALLS_APART`]): per writing
    /// operation, each request path a call with a tool runs for (its `for_each`: a call per
    /// item) or on (a `when` condition on the request). A request with two of them, or with
    /// two items at a `for_each` path, is several calls with nothing to undo the first when a
    /// later one is refused.
    pub fn calls_apart(&self) -> Vec<ReadModifyWrite> {
        let of_request =
            |p: &[String]| matches!(p.first().map(String::as_str), Some("task" | "patch"));
        let mut out = BTreeSet::new();
        for (op, m) in &self.ops {
            if matches!(op, Op::Get | Op::List) {
                continue;
            }
            for c in m.calls.iter().filter(|c| !c.tool.is_empty()) {
                let paths = c
                    .for_each
                    .iter()
                    .map(Vec::as_slice)
                    .chain(c.when.iter().map(Cond::path))
                    .filter(|p| of_request(p));
                for p in paths {
                    out.insert(ReadModifyWrite {
                        op: *op,
                        paths: vec![p.join(".")],
                    });
                }
            }
        }
        out.into_iter().collect()
    }

    /// The operations whose answer is read by a later call (`fetch`): it can show another
    /// writer's change made after this one.
    pub fn read_back(&self) -> Vec<String> {
        self.ops
            .iter()
            .filter(|(op, m)| m.answer.fetch && **op != Op::List)
            .map(|(op, _)| format!("ops.{op}"))
            .collect()
    }

    /// Why concurrency verdicts through this mapping are not the server's alone, if they are
    /// not: calls that read a task and then write it, and answers read by a later call.
    pub fn not_atomic(&self) -> Option<String> {
        let rmw = self.read_modify_write();
        let back = self.read_back();
        let mut parts = Vec::new();
        if !rmw.is_empty() {
            parts.push(format!(
                "it reads a task and then writes it in separate tool calls (read-modify-write by \
                 taskproof's MCP client: {}): a change another writer makes in between can be \
                 lost by the mapping, not the server, unless the server refuses a stale write",
                rmw.join(", ")
            ));
        }
        if !back.is_empty() {
            parts.push(format!(
                "the answers of {} are read by a get after the change: they can show another \
                 writer's later change, so a nonlinearizable answer may be the mapping's",
                back.join(", ")
            ));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}
