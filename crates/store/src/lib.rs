//! taskproof's in-process task stores (docs/architecture.md, "Crates"): the strict reference
//! store, the naive store, the mutants, and what they share (safe file access, journals, the
//! change log, Claude Code's lock protocol). They speak the wire types of `taskproof-core`
//! and nothing above them.
//!
//! Task stores that answer the adapter protocol in-process: the strict reference store, the
//! naive model of Claude Code 2.1.17, and the deliberately broken mutants the harness uses to
//! test itself. All of them keep their state in files under a root folder, so several
//! instances on one root behave like several processes sharing a task list.

pub mod audit;
pub mod cclock;
mod fsys;
mod journal;
mod mutant;
mod naive;
pub mod policy;
mod strict;

pub use fsys::{Dir, LOCK_NAME, LockGuard, ReadError, TMP_NAME};
pub use journal::{JOURNAL_NAME, recover as replay_journal};
pub use mutant::Mutant;
pub use naive::NaiveStore;
pub use strict::{
    HIGHWATERMARK_NAME, HIGHWATERMARK_SCRATCH_NAME, LIST_INDEX_NAME, MAX_METADATA_BYTES,
    MAX_METADATA_DEPTH, SharedTask, StrictStore, parse_watermark,
};

use std::path::Path;

use taskproof_core::protocol::{Hello, OpResult, Request, Response};
use taskproof_core::task::{ListName, NewTask, Patch, Task, TaskId};

/// Settings shared by every store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// fsync written files and their folder. Off only for tests and benchmarks: without it a
    /// write still survives SIGKILL of the process, but not a power cut.
    pub durable: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options { durable: true }
    }
}

/// A store behind the adapter protocol.
pub trait TaskStore: Send + Sync {
    /// The answer to `hello`.
    fn hello(&self) -> Hello;

    /// Answers one decoded request. Never panics on any request; storage failures come
    /// back as `io` errors.
    fn handle(&self, request: &Request) -> Response;

    /// Answers one request given as JSON. A value that is not a well-formed request gets an
    /// `invalid` answer naming the field.
    fn handle_value(&self, request: &serde_json::Value) -> Response {
        match Request::from_json(request) {
            Ok(req) => self.handle(&req),
            Err(e) => Response::Error(e.into()),
        }
    }

    /// Answers one raw request line, as `taskproof serve` receives it.
    fn handle_line(&self, line: &str) -> Response {
        match serde_json::from_str::<serde_json::Value>(line) {
            Ok(v) => self.handle_value(&v),
            Err(e) => Response::error(
                taskproof_core::protocol::ErrorKind::Invalid,
                format!("request: not valid JSON: {e}"),
            ),
        }
    }

    /// Answers one raw request line as [`TaskStore::handle_line`] does, and writes the
    /// answer's JSON (one line, without the newline) to `out`: what `taskproof serve` sends.
    /// A store may write an answer without making the [`Response`] first.
    fn write_answer(&self, line: &str, out: &mut Vec<u8>) {
        self.handle_line(line).write_json(out)
    }
}

/// The six task operations of an in-process store, each a result the protocol answer is
/// made from. The stores differ in how they do them, not in how a request maps onto them:
/// that mapping is [`answer`], written once.
trait Operations: TaskStore {
    fn create(&self, list: &ListName, new: &NewTask) -> OpResult<Task>;
    fn get(&self, list: &ListName, id: TaskId) -> OpResult<Task>;
    fn update(&self, list: &ListName, id: TaskId, patch: &Patch) -> OpResult<Task>;
    fn delete(&self, list: &ListName, id: TaskId) -> OpResult<()>;
    /// The tasks, and the names of the files that could not be read as tasks.
    fn list(&self, list: &ListName) -> OpResult<(Vec<Task>, Vec<String>)>;
    fn claim(&self, list: &ListName, id: TaskId, owner: &str) -> OpResult<Task>;
}

/// Answers one decoded request with `store`'s operations.
fn answer(store: &impl Operations, request: &Request) -> Response {
    match request {
        Request::Hello => Response::Hello(store.hello()),
        Request::Create { list, task } => store.create(list, task).into(),
        Request::Get { list, id } => store.get(list, *id).into(),
        Request::Update { list, id, patch } => store.update(list, *id, patch).into(),
        Request::Delete { list, id } => match store.delete(list, *id) {
            Ok(()) => Response::Done,
            Err(f) => Response::Error(f),
        },
        Request::List { list } => match store.list(list) {
            Ok((tasks, corrupt)) => Response::Tasks { tasks, corrupt },
            Err(f) => Response::Error(f),
        },
        Request::Claim { list, id, owner } => store.claim(list, *id, owner).into(),
    }
}

/// Which store to open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    /// The strict reference store.
    Reference,
    /// The model of Claude Code 2.1.17 (profile `cc-2.1.17`).
    Naive,
    /// The reference store with one rule broken on purpose.
    Mutant(Mutant),
}

impl StoreKind {
    pub fn open(self, root: &Path, options: Options) -> std::io::Result<Box<dyn TaskStore>> {
        Ok(match self {
            StoreKind::Reference => Box::new(StrictStore::open(root, options)?),
            StoreKind::Naive => Box::new(NaiveStore::open(root)?),
            StoreKind::Mutant(m) => Box::new(StrictStore::open_mutant(root, options, m)?),
        })
    }
}
