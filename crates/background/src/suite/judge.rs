//! Judging a background scenario after its last step: every task's notifications, statuses,
//! exit codes, output files and ids against rules B1, B2, B3, B4, B6 and B8, on everything the
//! run saw (the parent module runs the steps and collects it; B5 and B7 are judged where they
//! happen, during the steps). Kept apart from the stepping so that what a rule demands reads
//! in one place.

use super::*;

impl Run<'_> {
    /// The checks after the last step (B1, B2, B3, B4, B6, B8), on the notifications
    /// collected last.
    pub(super) fn judge(&mut self, cap: Option<u64>) -> Res<()> {
        let mut race: BTreeMap<String, [usize; 5]> = BTreeMap::new();
        for t in 0..self.tasks.len() {
            let tr = &self.tasks[t];
            let notes: Vec<BgNotification> = self.notified(&tr.id).into_iter().cloned().collect();
            let killed = tr.kill.as_ref().map(|(_, k)| k.clone());
            let (id, name) = (tr.id.clone(), tr.name.clone());
            let should =
                tr.ends || matches!(killed, Some(BgKill::Killed | BgKill::AlreadyFinal(_)));
            if let Some((prefix, _)) = name.split_once('#')
                && tr.in_race
            {
                let e = race.entry(prefix.to_string()).or_default();
                e[notes.len().min(2)] += 1;
                match killed {
                    Some(BgKill::Killed) => e[3] += 1,
                    Some(BgKill::AlreadyFinal(_)) => e[4] += 1,
                    _ => {}
                }
            }
            // B2
            if self.ended && notes.is_empty() {
                // Ended before its notification was collected: it has nowhere to go.
            } else if should && notes.len() != 1 {
                self.fail(
                    None,
                    2,
                    format!(
                        "task {name} ({id}) was notified {} time(s), not once",
                        notes.len()
                    ),
                    json!(1),
                    json!(notes.iter().map(|n| n.raw.clone()).collect::<Vec<_>>()),
                );
            } else if !should && !notes.is_empty() {
                self.fail(
                    None,
                    2,
                    format!("task {name} ({id}) never ends, yet was notified"),
                    json!(0),
                    json!(notes.iter().map(|n| n.raw.clone()).collect::<Vec<_>>()),
                );
            }
            let Some(first) = notes.first() else { continue };
            // B3
            let tr = &self.tasks[t];
            let expected: Vec<BgStatus> = match &killed {
                Some(BgKill::Killed) => vec![BgStatus::Killed],
                Some(BgKill::AlreadyFinal(s)) => vec![*s],
                _ if tr.flood => vec![BgStatus::Failed, BgStatus::Killed, BgStatus::Completed],
                _ => match tr.exit {
                    Some(0) => vec![BgStatus::Completed],
                    Some(_) => vec![BgStatus::Failed],
                    None => vec![BgStatus::Completed, BgStatus::Failed],
                },
            };
            let exit_ok = match (killed.is_some(), tr.exit, first.exit_code) {
                (false, Some(e), Some(got)) => e == got,
                _ => true,
            };
            let file_ok = match (&tr.output_file, &first.output_file) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            };
            if !expected.contains(&first.status) || !exit_ok || !file_ok {
                let what = json!({
                    "status": expected,
                    "exit_code": if killed.is_some() { Value::Null } else { json!(tr.exit) },
                    "output_file": tr.output_file,
                });
                self.fail(
                    None,
                    3,
                    format!(
                        "task {name} ({id}) was notified {} with exit code {} and output file {}, which is not what happened ({})",
                        first.status.as_str(),
                        first.exit_code.map_or("none".to_string(), |c| c.to_string()),
                        first
                            .output_file
                            .as_ref()
                            .map_or("none".to_string(), |f| f.display().to_string()),
                        match &killed {
                            Some(BgKill::Killed) => "its kill answered killed".to_string(),
                            Some(BgKill::AlreadyFinal(s)) => format!(
                                "its kill answered already {}",
                                s.as_str()
                            ),
                            _ => match tr.exit {
                                Some(e) => format!("its command exits {e}"),
                                None => "its command ended".to_string(),
                            },
                        }
                    ),
                    what,
                    json!(first.raw),
                );
            }
            self.tasks[t]
                .finals
                .push(("its notification".into(), first.status));
        }
        for (prefix, [never, once, more, killed, final_]) in race {
            if never + more > 0 || killed + final_ > 0 {
                self.remarks.push(format!(
                    "{prefix}: notified once {once}, twice or more {more}, never {never}; kills answered killed {killed}, already final {final_}"
                ));
            }
        }
        // B1, B4, B8 per task.
        for t in 0..self.tasks.len() {
            let tr = &self.tasks[t];
            let (id, name) = (tr.id.clone(), tr.name.clone());
            let distinct: Vec<&(String, BgStatus)> = tr
                .finals
                .iter()
                .filter(|(_, s)| *s != tr.finals[0].1)
                .collect();
            if let (Some(first), Some(other)) = (tr.finals.first(), distinct.first()) {
                let seen: Vec<String> = tr
                    .finals
                    .iter()
                    .map(|(w, s)| format!("{s:?} ({w})"))
                    .collect();
                let reason = format!(
                    "task {name} ({id})'s final status changed: {:?} ({}) then {:?} ({})",
                    first.1, first.0, other.1, other.0
                );
                self.fail(None, 1, reason, json!(first.1), json!(seen));
            }
            let tr = &self.tasks[t];
            let mut went_back = None;
            for w in tr.seen.windows(2) {
                let rank = |s: BgStatus| match s {
                    BgStatus::Pending => 0,
                    BgStatus::Running => 1,
                    _ => 2,
                };
                if rank(w[1].1) < rank(w[0].1) {
                    went_back = Some((w[0], w[1]));
                }
            }
            if let Some((a, c)) = went_back {
                self.fail(
                    Some(c.0),
                    1,
                    format!(
                        "task {name} ({id}) went from {:?} (steps[{}]) back to {:?}",
                        a.1, a.0, c.1
                    ),
                    json!(a.1),
                    json!(c.1),
                );
            }
        }
        // B4: what ran to its end is read in full, and the file agrees.
        for t in 0..self.tasks.len() {
            let ended_normally = {
                let tr = &self.tasks[t];
                tr.kill.is_none()
                    && tr.ends
                    && !self.notified(&tr.id).is_empty()
                    && tr.expected_output.is_some()
            };
            if !ended_normally || self.ended {
                continue;
            }
            if self.read(usize::MAX, t, true)?.is_none() {
                continue;
            }
            let file = self.tasks[t]
                .output_file
                .as_ref()
                .and_then(|f| std::fs::read(f).ok())
                .map(|mut bytes| {
                    let len = self.session.command_output(&self.tasks[t].id, &bytes);
                    bytes.truncate(len);
                    bytes
                });
            let tr = &self.tasks[t];
            let want = tr.expected_output.clone().unwrap_or_default();
            if tr.consumed != want {
                let reason = format!(
                    "task {} ({})'s output, read from the consumed offset on, is {:?}, not what it wrote, {:?}",
                    tr.name, tr.id, tr.consumed, want
                );
                self.fail(None, 4, reason, json!(want), json!(tr.consumed));
            } else if let Some(f) = &tr.output_file
                && let Some(bytes) = file
                && String::from_utf8_lossy(&bytes) != want
            {
                let reason = format!(
                    "task {} ({})'s output file {} holds {:?}, not what it wrote",
                    tr.name,
                    tr.id,
                    f.display(),
                    String::from_utf8_lossy(&bytes)
                );
                self.fail(
                    None,
                    4,
                    reason,
                    json!(want),
                    json!(String::from_utf8_lossy(&bytes)),
                );
            }
        }
        // B6: random ids.
        if self.tasks.len() >= 8
            && !self
                .tasks
                .iter()
                .any(|t| t.id.chars().skip(1).any(|c| c.is_ascii_lowercase()))
        {
            let ids: Vec<String> = self.tasks.iter().map(|t| t.id.clone()).collect();
            self.fail(
                None,
                6,
                format!(
                    "none of {} ids has a letter after its type letter: they are not random over [0-9a-z]",
                    ids.len()
                ),
                json!("random characters of [0-9a-z]"),
                json!(ids),
            );
        }
        // B8: the cap.
        if let Some(cap) = cap {
            for t in 0..self.tasks.len() {
                let tr = &self.tasks[t];
                if !tr.flood {
                    continue;
                }
                let size = tr
                    .output_file
                    .as_ref()
                    .and_then(|f| std::fs::metadata(f).ok())
                    .map(|m| m.len());
                let notified = !self.notified(&tr.id).is_empty();
                let over = size.is_some_and(|s| s > cap + 4096);
                if over || !notified {
                    let reason = format!(
                        "task {} ({}) flooded its output: {} bytes on disk against a cap of {cap}, {}",
                        tr.name,
                        tr.id,
                        size.map_or("unknown".into(), |s| s.to_string()),
                        if notified {
                            "and it was notified"
                        } else {
                            "and it was never notified"
                        }
                    );
                    self.fail(None, 8, reason, json!({"at_most": cap + 4096}), json!(size));
                }
            }
        }
        Ok(())
    }
}
