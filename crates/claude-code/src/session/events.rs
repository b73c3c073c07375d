//! What a user does to the conversation between requests: slash commands, ending the CLIs
//! (`/exit`, answering the terminal UI's question when a teammate still works) and resuming.

use super::*;

impl ClaudeCodeSession {
    /// Waits up to `limit` for the CLI to end after `/exit`. With a teammate still at work
    /// the terminal UI asks first ("Background work is running … 1. Exit and stop tasks
    /// 2. Move to background and exit 3. Stay", measured on 2.1.332 with an in-process
    /// teammate mid-turn): the session confirms the first choice with Enter, as a user ends
    /// the session, and says so.
    pub(super) fn wait_exit_confirming(
        &mut self,
        run: &mut Running,
        shown: usize,
        limit: Duration,
    ) -> bool {
        let deadline = Instant::now() + limit;
        let mut confirmed = false;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if run.cli.wait_exit(left.min(Duration::from_millis(500))) {
                return true;
            }
            if left.is_zero() {
                return false;
            }
            if !confirmed {
                let output = run.cli.output();
                let since: String = output
                    .get(shown..)
                    .unwrap_or(&output)
                    .chars()
                    .filter(|c| !c.is_whitespace())
                    .collect();
                if since.contains("Exitandstoptasks") {
                    confirmed = true;
                    let _ = run.cli.press_enter();
                    self.note(
                        "/exit: the UI asked about background work still running (a teammate at work); confirmed \"Exit and stop tasks\"".into(),
                    );
                }
            }
        }
    }

    /// Types `/clear` or `/compact` into every running CLI of the session and waits until
    /// each is idle again (`/compact` asks the model for a summary first: a side request,
    /// answered with a short text).
    pub(super) fn slash(&mut self, command: &str, asks_model: bool) -> Result<(), TargetError> {
        let limit = self.event_limit();
        let lists: Vec<String> = self.clis.keys().cloned().collect();
        for list in lists {
            let run = self.clis.get_mut(&list).expect("listed above");
            let seen_before = run.model.seen();
            run.cli
                .wait_quiet(Duration::from_millis(300), Duration::from_secs(5));
            if let Err(e) = run.cli.submit(command) {
                let status = run.cli.exited().unwrap_or_else(|| e.to_string());
                let output = run.cli.output();
                return Err(self.fail(TargetError::Exited {
                    status: format!(
                        "{status} on {command}; its output ended with: {}",
                        tail(&output)
                    ),
                }));
            }
            let started = Instant::now();
            let (written, redraws) = (run.cli.written(), run.cli.redraws());
            // The UI answers on its screen; a summary needs the model first.
            loop {
                let run = self.clis.get_mut(&list).expect("listed above");
                if let Some(status) = run.cli.exited() {
                    let output = run.cli.output();
                    return Err(self.fail(TargetError::Exited {
                        status: format!(
                            "{status} after {command}; its output ended with: {}",
                            tail(&output)
                        ),
                    }));
                }
                // Done when the UI drew its input box again after the command (in print
                // mode, when it wrote anything), and a summary was asked for if needed.
                // The line under the box is not always redrawn in a form READY knows (2.1.332
                // shows its task panel there after /compact), so a screen that changed and
                // then stayed still for a second counts too.
                let drawn = match run.cli.drive {
                    Drive::Terminal => {
                        run.cli.redraws() > redraws
                            || (run.cli.written() > written
                                && run.cli.quiet_for(Duration::from_millis(1000)))
                    }
                    Drive::Print => run.cli.written() > written,
                };
                // A summary is asked for by a request the model recognises (and answers
                // with SUMMARY); should a version word it otherwise, any side request after
                // the command and 5 s will do, as before the summary was recognised.
                let seen = run.model.seen();
                let summarised = seen.compactions > seen_before.compactions
                    || (seen.side > seen_before.side
                        && started.elapsed() >= Duration::from_secs(5));
                let answered = drawn && (!asks_model || summarised);
                if answered {
                    break;
                }
                if started.elapsed() >= limit {
                    let output = run.cli.output();
                    self.note(format!(
                        "{command} in the CLI of list {list:?}: nothing within {limit:?}"
                    ));
                    return Err(self.fail(TargetError::Io(format!(
                        "Claude Code did not act on {command} within {limit:?}; its output ended with: {}",
                        tail(&output)
                    ))));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let run = self.clis.get_mut(&list).expect("listed above");
            run.cli.wait_quiet(
                Duration::from_millis(700),
                limit.saturating_sub(started.elapsed()),
            );
            let summaries = run.model.seen().compactions - seen_before.compactions;
            let asked = if asks_model {
                format!(", the summary asked for {summaries} time(s)")
            } else {
                String::new()
            };
            self.note(format!(
                "{command} in the CLI of list {list:?}: done in {:.1} s{asked}",
                started.elapsed().as_secs_f64()
            ));
        }
        Ok(())
    }

    /// Ends every CLI: `/exit` typed (each must then end by itself within the limit), or
    /// SIGKILL. The conversations stay for `resume`.
    pub(super) fn end_clis(&mut self, exit: bool) -> Result<(), TargetError> {
        let limit = self.event_limit();
        let mut lists: Vec<String> = self.clis.keys().cloned().collect();
        lists.sort();
        let mut first_error = None;
        for list in &lists {
            let mut run = self.clis.remove(list).expect("listed above");
            // With teams on, the team records before the CLI ends: measured on 2.1.276 and
            // 2.1.332, `/exit` deletes the team (its record, members and inboxes) and keeps
            // its task list, which the session says.
            let teams_before: Vec<(String, Vec<String>)> = if self.teams_in_terminal() {
                team_records(&self.setup.config)
                    .into_iter()
                    .map(|(name, _)| {
                        let members = team_members(&self.setup.config, &name);
                        (name, members)
                    })
                    .collect()
            } else {
                Vec::new()
            };
            if exit {
                run.cli
                    .wait_quiet(Duration::from_millis(300), Duration::from_secs(5));
                let shown = run.cli.output().len();
                let sent = run.cli.submit("/exit");
                let ended = sent.is_ok() && self.wait_exit_confirming(&mut run, shown, limit);
                if ended {
                    let status = run.cli.exited().unwrap_or_default();
                    self.note(format!(
                        "/exit in the CLI of list {list:?}: it ended ({status})"
                    ));
                    let after = team_records(&self.setup.config);
                    for (name, members) in &teams_before {
                        let kept = after.iter().any(|(n, _)| n == name);
                        self.note(format!(
                            "agent teams: the team {name} (members {}) {} at /exit; its list folder {}",
                            members.join(", "),
                            if kept { "is still recorded" } else { "was deleted" },
                            if self.root.join(name).is_dir() { "is kept" } else { "is gone" }
                        ));
                    }
                } else {
                    let output = run.cli.output();
                    first_error.get_or_insert(TargetError::Io(format!(
                        "Claude Code did not end within {limit:?} of /exit; its output ended with: {}",
                        tail(&output)
                    )));
                }
            } else {
                self.note(format!("SIGKILL to the CLI of list {list:?}"));
            }
            // Whatever the CLI left behind in its process group ends too.
            run.cli.kill();
        }
        self.suspended = Some(lists);
        match first_error {
            Some(e) => Err(self.fail(e)),
            None => Ok(()),
        }
    }

    /// Starts again, with `--resume`, the conversation of every CLI that `exit` or `kill`
    /// ended, each until its input box shows, as a user who resumes sees the session.
    pub(super) fn resume(&mut self) -> Result<(), TargetError> {
        let lists = self.suspended.take().unwrap_or_default();
        self.dead = None;
        self.resuming = lists.clone();
        for list in &lists {
            self.running(list)?;
            self.note(format!(
                "--resume {} for list {list:?}: the input box shows",
                self.conversations[list]
            ));
        }
        Ok(())
    }
}
