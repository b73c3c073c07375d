//! The naive store: what the runtime test observed in Claude Code 2.1.17 (profile
//! `cc-2.1.17`, SPEC §4), built so that anyone can watch its failures happen.
//!
//! It keeps the same layout as the reference store but none of its guarantees: no lock,
//! files truncated and rewritten in place (through links, like a plain `open(path, "w")`),
//! any status string, any transition, blockers not enforced, references and cycles
//! unchecked, `blockedBy` not mirrored into the blocker's `blocks`, orphaned references left
//! after a delete. Sequentially it still assigns increasing ids and keeps what it is told;
//! concurrently it loses updates, hands out duplicate ids and double claims.

use std::io;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::{Operations, TaskStore};
use taskproof_core::protocol::{
    ErrorKind, Failure, Feature, Hello, Layout, OpResult, PROTOCOL_VERSION, Request, Response,
};
use taskproof_core::task::{ListName, NewTask, Patch, Status, Strictness, Task, TaskId};

const LAYOUT: Layout = Layout::ClaudeCode;
const HIGHWATERMARK: &str = ".highwatermark";

/// The Claude Code 2.1.17 model.
pub struct NaiveStore {
    root: PathBuf,
}

fn io_failure(e: impl std::fmt::Display) -> Failure {
    Failure::new(ErrorKind::Io, e.to_string())
}

impl NaiveStore {
    pub fn open(root: &Path) -> io::Result<NaiveStore> {
        if !root.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{}: not a folder", root.display()),
            ));
        }
        Ok(NaiveStore {
            root: root.to_path_buf(),
        })
    }

    fn folder(&self, list: &ListName) -> PathBuf {
        self.root.join(list.as_str())
    }

    fn path(&self, list: &ListName, id: TaskId) -> PathBuf {
        self.folder(list)
            .join(LAYOUT.file_name(id).expect("file layout"))
    }

    fn read(&self, list: &ListName, id: TaskId) -> OpResult<Task> {
        let path = self.path(list, id);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(Failure::new(
                    ErrorKind::NotFound,
                    format!("no task {id} in list {list}"),
                ));
            }
            Err(e) => return Err(io_failure(format!("{}: {e}", path.display()))),
        };
        let v: Value = serde_json::from_slice(&bytes)
            .map_err(|e| Failure::new(ErrorKind::Corrupt, format!("{}: {e}", path.display())))?;
        let t = Task::from_json(&v, Strictness::Lenient)
            .map_err(|e| Failure::new(ErrorKind::Corrupt, format!("{}: {e}", path.display())))?;
        Ok(t)
    }

    fn write(&self, list: &ListName, task: &Task) -> OpResult<()> {
        let mut bytes = serde_json::to_vec_pretty(&task.to_json()).expect("tasks serialize");
        bytes.push(b'\n');
        // Truncate, then write: a concurrent reader can see an empty or partial file, and the
        // last writer wins.
        std::fs::write(self.path(list, task.id), bytes).map_err(io_failure)
    }

    fn ids(&self, list: &ListName) -> OpResult<Vec<TaskId>> {
        let mut ids = Vec::new();
        let entries = match std::fs::read_dir(self.folder(list)) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(ids),
            Err(e) => return Err(io_failure(e)),
        };
        for entry in entries {
            let entry = entry.map_err(io_failure)?;
            if let Some(id) = entry
                .file_name()
                .to_str()
                .and_then(|n| LAYOUT.task_id_of(n))
            {
                ids.push(id);
            }
        }
        ids.sort();
        Ok(ids)
    }
}

impl Operations for NaiveStore {
    fn get(&self, list: &ListName, id: TaskId) -> OpResult<Task> {
        self.read(list, id)
    }

    fn create(&self, list: &ListName, new: &NewTask) -> OpResult<Task> {
        std::fs::create_dir_all(self.folder(list)).map_err(io_failure)?;
        // Read-compute-write of the watermark with no lock: two processes can compute the
        // same id, and the later task file replaces the earlier one.
        let hwm_path = self.folder(list).join(HIGHWATERMARK);
        let hwm = std::fs::read_to_string(&hwm_path)
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .unwrap_or(0);
        let highest = self.ids(list)?.last().map(|i| i.get()).unwrap_or(0);
        let id = TaskId(hwm.max(highest) + 1);
        let mut task = Task::new(id, new.subject.clone());
        task.description = new.description.clone();
        task.active_form = new.active_form.clone();
        task.owner = new.owner.clone();
        task.metadata = new.metadata.clone();
        task.blocked_by = new.blocked_by.iter().copied().collect();
        task.blocks = new.blocks.iter().copied().collect();
        self.write(list, &task)?;
        std::fs::write(&hwm_path, format!("{id}\n")).map_err(io_failure)?;
        Ok(task)
    }

    fn update(&self, list: &ListName, id: TaskId, patch: &Patch) -> OpResult<Task> {
        let mut task = self.read(list, id)?;
        patch.apply_fields(&mut task);
        if let Some(s) = &patch.status {
            task.status = s.clone();
        }
        for x in &patch.remove_blocked_by {
            task.blocked_by.remove(x);
        }
        for x in &patch.remove_blocks {
            task.blocks.remove(x);
        }
        // One side only, unchecked: the blocker's `blocks` is never touched.
        task.blocked_by.extend(patch.add_blocked_by.iter().copied());
        task.blocks.extend(patch.add_blocks.iter().copied());
        self.write(list, &task)?;
        Ok(task)
    }

    fn delete(&self, list: &ListName, id: TaskId) -> OpResult<()> {
        match std::fs::remove_file(self.path(list, id)) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Err(Failure::new(
                ErrorKind::NotFound,
                format!("no task {id} in list {list}"),
            )),
            Err(e) => Err(io_failure(e)),
        }
    }

    fn list(&self, list: &ListName) -> OpResult<(Vec<Task>, Vec<String>)> {
        let mut tasks = Vec::new();
        let mut corrupt = Vec::new();
        for id in self.ids(list)? {
            if self.path(list, id).is_dir() {
                continue;
            }
            match self.read(list, id) {
                Ok(t) if t.id == id => tasks.push(t),
                Ok(_) => corrupt.push(LAYOUT.file_name(id).expect("file layout")),
                Err(f) if f.kind == ErrorKind::NotFound => {}
                Err(f) if f.kind == ErrorKind::Corrupt => {
                    corrupt.push(LAYOUT.file_name(id).expect("file layout"))
                }
                Err(f) => return Err(f),
            }
        }
        Ok((tasks, corrupt))
    }

    fn claim(&self, list: &ListName, id: TaskId, owner: &str) -> OpResult<Task> {
        let mut task = self.read(list, id)?;
        if task.owner.is_some() || task.status != Status::Pending {
            return Err(Failure::new(
                ErrorKind::Conflict,
                format!("task {id} is owned or not pending"),
            ));
        }
        // Check, then write, with nothing in between to stop a second claimer.
        task.status = Status::InProgress;
        task.owner = Some(owner.to_string());
        self.write(list, &task)?;
        Ok(task)
    }
}

impl TaskStore for NaiveStore {
    fn hello(&self) -> Hello {
        Hello {
            protocol: PROTOCOL_VERSION,
            name: "taskproof-naive".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            layout: LAYOUT,
            features: Feature::OF_A_STORE.into_iter().collect(),
            mapping: Default::default(),
        }
    }

    fn handle(&self, request: &Request) -> Response {
        super::answer(self, request)
    }
}
