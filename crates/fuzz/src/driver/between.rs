//! What a case does between requests: restarts, waits, session events, and files written
//! into the store by another program.

use super::*;

impl CaseRun<'_> {
    /// Restarts, waits, session events and files written by another program.
    pub(super) fn other(
        &mut self,
        action: ResolvedStep,
        final_check: bool,
    ) -> Result<Option<End>, CaseError> {
        let root = self.ready.root();
        let outside = self.ready.sandbox.path().join("outside");
        let claude_layout = self.ready.hello.layout == Layout::ClaudeCode;
        match &action {
            ResolvedStep::Send { .. } => unreachable!("sends are handled by the caller"),
            ResolvedStep::Restart { session } => {
                let session = *session;
                // Only a session that is open can be restarted; otherwise nothing happens.
                let Some(mut s) = self.ready.sessions.remove(&session) else {
                    self.coverage.leave_out("restart of a session not open");
                    return Ok(None);
                };
                self.coverage.did("restart");
                s.kill();
                drop(s);
                self.records
                    .push(Record::sequential(action.clone(), None, final_check));
                if let Err(e) = self.session(session) {
                    return Ok(Some(broke_at_last(&self.records, &e, "restart")));
                }
            }
            ResolvedStep::Wait { tenths, settle } => {
                self.coverage.did(if *settle { "settle" } else { "wait" });
                std::thread::sleep(Duration::from_millis(u64::from(*tenths) * 100));
                self.records
                    .push(Record::sequential(action.clone(), None, final_check));
            }
            ResolvedStep::Event { session, event } => {
                let (session, event) = (*session, *event);
                // Only a session that is open has a conversation to act on.
                if !self.ready.sessions.contains_key(&session) {
                    self.coverage
                        .leave_out(format!("{} of a session not open", event.name()));
                    return Ok(None);
                }
                self.coverage.did(event.name());
                self.records
                    .push(Record::sequential(action.clone(), None, final_check));
                if let Err(e) = self.session_event(session, event) {
                    return Ok(Some(broke_at_last(&self.records, &e, event.name())));
                }
            }
            ResolvedStep::Garbage { list, id } => {
                if !claude_layout {
                    self.coverage.leave_out("files in an opaque layout");
                    return Ok(None);
                }
                self.coverage.did("garbage file");
                let path = task_path(&root, &self.folder(list), *id);
                write(&path, b"{\"id\": \"")?;
                self.oracle
                    .corrupt
                    .insert((list.parse().expect("valid"), *id), Damage::Garbage);
                self.records
                    .push(Record::sequential(action.clone(), None, final_check));
            }
            ResolvedStep::Symlink {
                list,
                id,
                outside: name,
                content,
            } => {
                if !claude_layout {
                    self.coverage.leave_out("files in an opaque layout");
                    return Ok(None);
                }
                self.coverage.did("symbolic link");
                let target = outside.join(name);
                write(&target, content.to_string().as_bytes())?;
                let path = task_path(&root, &self.folder(list), *id);
                let _ = std::fs::remove_file(&path);
                // A store that keeps its files elsewhere (a mutant, an opaque-minded store
                // behind a claude-code hello) may have no folder for the list.
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent).map_err(|e| {
                        CaseError::Harness(format!("failed to make {}: {e}", parent.display()))
                    })?;
                }
                std::os::unix::fs::symlink(&target, &path)
                    .map_err(|e| format!("failed to link {}: {e}", path.display()))
                    .map_err(CaseError::Harness)?;
                self.oracle
                    .corrupt
                    .insert((list.parse().expect("valid"), *id), Damage::Symlink);
                self.records
                    .push(Record::sequential(action.clone(), None, final_check));
            }
            ResolvedStep::WriteTask { list, id, task } => {
                if !claude_layout {
                    self.coverage.leave_out("files in an opaque layout");
                    return Ok(None);
                }
                self.coverage.did("task rewritten by another program");
                let mut bytes = serde_json::to_vec_pretty(task).expect("values serialize");
                bytes.push(b'\n');
                write(&task_path(&root, &self.folder(list), *id), &bytes)?;
                let extra: Map<String, Value> = task
                    .as_object()
                    .expect("object")
                    .iter()
                    .filter(|(k, _)| !taskproof_core::task::TASK_FIELDS.contains(&k.as_str()))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                self.oracle
                    .extras
                    .insert((list.parse().expect("valid"), *id), extra);
                self.records
                    .push(Record::sequential(action.clone(), None, final_check));
            }
        }
        Ok(None)
    }

    /// Does `event` on open session `i` the way the scenario runner does: an agent session
    /// acts on it as its user would; a connection to a store has no conversation to clear or
    /// compact, and its exit and resume are a close and a new connection.
    pub(super) fn session_event(&mut self, i: usize, event: EventGen) -> Result<(), String> {
        let s = self
            .ready
            .sessions
            .get_mut(&i)
            .expect("the caller checked it is open");
        match event {
            EventGen::Clear | EventGen::Compact => {
                let e = if event == EventGen::Clear {
                    SessionEvent::Clear
                } else {
                    SessionEvent::Compact
                };
                s.event(e).map(|_| ()).map_err(|e| e.to_string())
            }
            EventGen::ExitResume => {
                if s.event(SessionEvent::Exit).map_err(|e| e.to_string())? {
                    if s.event(SessionEvent::Resume).map_err(|e| e.to_string())? {
                        return Ok(());
                    }
                } else {
                    s.close().map_err(|e| e.to_string())?;
                }
                self.ready.sessions.remove(&i);
                self.session(i).map(|_| ())
            }
        }
    }
}
