//! The background tasks' processes, read from the machine: every process whose environment
//! or command line carries a task's marker (`TASKPROOF_BG_TASK=SESSION-N`, which the session
//! puts before the `sh -c` of each task, so the shell and everything it starts inherit it,
//! and the CLI's own shell wrapper has it in its command line). Zombies run nothing and are
//! left out.

use std::collections::BTreeMap;

/// The variable that marks a task's processes.
pub const MARKER: &str = "TASKPROOF_BG_TASK";

/// One live process of a task.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TaskProc {
    pub pid: i32,
    pub pgid: i32,
    /// The task's number within the session (the `N` of its marker).
    pub task: u64,
    pub command: String,
}

/// `pid`'s state letter, process group and command line, if it still exists.
fn stat(pid: i32) -> Option<(char, i32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgid = fields.next()?.parse().ok()?;
    Some((state, pgid))
}

/// The task number in `text` after `MARKER=session-`, if any.
fn task_in(text: &str, prefix: &str) -> Option<u64> {
    let at = text.find(prefix)? + prefix.len();
    let digits: String = text[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// Every live process of session `session`'s tasks, by pid.
pub fn scan(session: &str) -> Vec<TaskProc> {
    let prefix = format!("{MARKER}={session}-");
    let mut found = BTreeMap::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let read = |name: &str| {
            std::fs::read(format!("/proc/{pid}/{name}"))
                .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
                .unwrap_or_default()
        };
        let command = read("cmdline");
        let task = task_in(&read("environ"), &prefix).or_else(|| task_in(&command, &prefix));
        let Some(task) = task else { continue };
        // Gone meanwhile, or a zombie.
        let Some((state, pgid)) = stat(pid) else {
            continue;
        };
        if state == 'Z' || state == 'X' {
            continue;
        }
        found.insert(
            pid,
            TaskProc {
                pid,
                pgid,
                task,
                command: command.trim_end().to_string(),
            },
        );
    }
    found.into_values().collect()
}

/// SIGKILL to every process of the session's tasks (each one this session started, named by
/// its pid), until none is left or `within` passed; returns how many were killed.
pub fn kill_all(session: &str, within: std::time::Duration) -> usize {
    let deadline = std::time::Instant::now() + within;
    let mut killed = std::collections::BTreeSet::new();
    loop {
        let left = scan(session);
        if left.is_empty() || std::time::Instant::now() >= deadline {
            return killed.len();
        }
        for p in left {
            if let Some(pid) = rustix::process::Pid::from_raw(p.pid) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                killed.insert(p.pid);
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;
    use std::time::Duration;

    #[test]
    fn markers_are_read_from_numbers_only() {
        assert_eq!(
            task_in("A=1 TASKPROOF_BG_TASK=s1-12 B=2", "TASKPROOF_BG_TASK=s1-"),
            Some(12)
        );
        assert_eq!(
            task_in("TASKPROOF_BG_TASK=s1-x", "TASKPROOF_BG_TASK=s1-"),
            None
        );
        assert_eq!(
            task_in("TASKPROOF_BG_TASK=s2-1", "TASKPROOF_BG_TASK=s1-"),
            None
        );
    }

    #[test]
    fn a_marked_process_and_its_children_are_found_and_killed() {
        let session = format!("test{}", std::process::id());
        let mut child = Command::new("sh")
            .arg("-c")
            .arg("sleep 300 & sleep 300; wait")
            .env(MARKER, format!("{session}-4"))
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let mut procs = scan(&session);
        while procs.len() < 3 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
            procs = scan(&session);
        }
        assert_eq!(procs.len(), 3, "{procs:?}");
        assert!(procs.iter().all(|p| p.task == 4));
        assert!(procs.iter().any(|p| p.pid == child.id() as i32));
        assert_eq!(kill_all(&session, Duration::from_secs(10)), 3);
        let _ = child.wait();
        assert!(scan(&session).is_empty());
    }
}
