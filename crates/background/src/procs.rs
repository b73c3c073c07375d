//! The process table, read from `/proc`: which processes are alive in a process group (the
//! orphan checks of rule B7 look for any process of a task's group after a kill or the
//! session's end).

use std::time::{Duration, Instant};

/// A live process of a group: its pid, its state letter and its command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub pid: i32,
    pub pgid: i32,
    pub state: char,
    pub cmdline: String,
}

impl std::fmt::Display for Member {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "pid {} (group {}, state {}): {}",
            self.pid, self.pgid, self.state, self.cmdline
        )
    }
}

/// `(state, pgid)` from `/proc/PID/stat`, whose second field (the command name, in
/// parentheses) may itself hold spaces and parentheses.
fn stat_of(pid: i32) -> Option<(char, i32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgid = fields.next()?.parse().ok()?;
    Some((state, pgid))
}

/// Every process alive (not a zombie) in one of `groups`.
pub fn members_of(groups: &[i32]) -> Vec<Member> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Some((state, pgid)) = stat_of(pid) else {
            continue;
        };
        if state == 'Z' || state == 'X' || !groups.contains(&pgid) {
            continue;
        }
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|b| {
                String::from_utf8_lossy(&b)
                    .split('\0')
                    .filter(|s| !s.is_empty())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default();
        out.push(Member {
            pid,
            pgid,
            state,
            cmdline,
        });
    }
    out.sort_by_key(|m| m.pid);
    out
}

/// Every process alive in group `pgid`.
pub fn group_members(pgid: i32) -> Vec<Member> {
    members_of(&[pgid])
}

/// Waits up to `grace` for every process of `groups` to be gone; returns those still alive
/// then (empty when none is).
pub fn survivors_after(groups: &[i32], grace: Duration) -> Vec<Member> {
    let deadline = Instant::now() + grace;
    loop {
        let alive = members_of(groups);
        if alive.is_empty() || Instant::now() >= deadline {
            return alive;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_is_seen_while_alive_and_not_after() {
        use std::os::unix::process::CommandExt;
        let mut c = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let g = c.id() as i32;
        // Between fork and exec the child has no command line yet: wait for the exec.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let mut m = group_members(g);
        while m.iter().all(|p| p.cmdline.is_empty()) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
            m = group_members(g);
        }
        assert_eq!(m.len(), 1, "{m:?}");
        assert!(m[0].cmdline.contains("sleep 30"), "{m:?}");
        c.kill().unwrap();
        c.wait().unwrap();
        assert!(survivors_after(&[g], Duration::from_secs(2)).is_empty());
    }
}
