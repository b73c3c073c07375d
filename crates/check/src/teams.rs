//! The sessions and agent teams of a Claude Code configuration folder, as far as finding
//! which list a running session reads (docs/check.md, "Lists under agent teams").
//!
//! A running CLI writes `sessions/<pid>.json` (`pid`, `sessionId`, `cwd`, `startedAt`,
//! `procStart`, `version`; measured on 2.1.276 and 2.1.332) and, with agent teams on, a team
//! record `teams/<team>/config.json` (`name`, `createdAt`, `leadSessionId`, the lead's
//! `cwd` among `members`; 2.1.332 also `leadProcess.pid`). A session's own list is then the
//! team's folder. Which team is a session's:
//!
//! 1. the team whose `leadSessionId` is the session id;
//! 2. the team whose `leadProcess.pid` is the pid of a live process of the session;
//! 3. before 2.1.311 a resumed session's team is keyed to a fresh id that nothing else
//!    names (`--resume X` makes `session-<8 hex of a fresh id>`, led by that id, while the
//!    process, its requests and its hooks say X; anthropics/claude-code#76844, bisected to
//!    2.1.310 → 2.1.311): the one team whose lead works in the process's folder, made within
//!    [`START_WINDOW_MS`] of the process's start, whose lead session is no live process's
//!    and that names no lead process. Two such teams are not told apart: no team is taken.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::hook::str_field;

/// How far apart a team record's `createdAt` and its process's `startedAt` may be (2.1.276:
/// the team 94 ms before the process record).
pub const START_WINDOW_MS: u64 = 10_000;

/// The first version whose resumed session keeps its team (bisect, docs/claude-code.md), and
/// reads the session-keyed list while the team's list is empty (2.1.332's
/// `rekeySessionTeamAtStartup`).
const REKEYS_FROM: (u64, u64, u64) = (2, 1, 311);

/// A CLI process that is running now, from its `sessions/<pid>.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Live {
    pub pid: u32,
    pub session: String,
    pub cwd: Option<String>,
    pub started_at: Option<u64>,
    pub version: Option<String>,
}

/// A team record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Team {
    pub name: String,
    pub lead_session: Option<String>,
    pub lead_pid: Option<u32>,
    pub lead_cwd: Option<String>,
    pub created_at: Option<u64>,
}

impl Team {
    /// The list folder of the team: its name in lower case, every character outside
    /// `[a-z0-9]` a `-` (what the CLI uses for its lead).
    pub fn list(&self) -> String {
        crate::locate::team_lead_list(&self.name)
    }
}

/// A session's list, and how it was told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reads {
    pub list: String,
    pub how: String,
    /// The session's process this was told from.
    pub pid: u32,
}

/// What a configuration folder says about running sessions and teams.
#[derive(Debug, Clone, Default)]
pub struct Sessions {
    pub config: PathBuf,
    pub live: Vec<Live>,
    pub teams: Vec<Team>,
}

impl Sessions {
    /// Reads `sessions/` and `teams/` of the configuration folder `config`; what cannot be
    /// read is left out (the CLI rewrites these files while it runs).
    pub fn read(config: &Path) -> Sessions {
        let teams = read_teams(config);
        Sessions {
            config: config.to_path_buf(),
            live: read_live(config),
            teams,
        }
    }

    /// [`Sessions::read`] for finding a session's team only: `sessions/` is not read when
    /// there is no team (what the hook runs before every task tool call of a session
    /// without teams).
    pub fn read_for_team(config: &Path) -> Sessions {
        let teams = read_teams(config);
        let live = if teams.is_empty() {
            Vec::new()
        } else {
            read_live(config)
        };
        Sessions {
            config: config.to_path_buf(),
            live,
            teams,
        }
    }

    /// The live processes of `session`.
    pub fn processes(&self, session: &str) -> impl Iterator<Item = &Live> {
        self.live.iter().filter(move |l| l.session == session)
    }

    /// The team `session` leads, and how that was told (see the module's docs).
    pub fn team_of(&self, session: &str) -> Option<(&Team, String)> {
        if let Some(t) = self
            .teams
            .iter()
            .find(|t| t.lead_session.as_deref() == Some(session))
        {
            return Some((t, format!("the team {} this session leads", t.name)));
        }
        for p in self.processes(session) {
            if let Some(t) = self.teams.iter().find(|t| t.lead_pid == Some(p.pid)) {
                return Some((
                    t,
                    format!(
                        "the team {} whose lead is this session's process {}",
                        t.name, p.pid
                    ),
                ));
            }
            let (Some(cwd), Some(started)) = (&p.cwd, p.started_at) else {
                continue;
            };
            let mut near = self.teams.iter().filter(|t| {
                t.lead_pid.is_none()
                    && t.lead_cwd.as_deref() == Some(cwd.as_str())
                    && t.created_at
                        .is_some_and(|c| c.abs_diff(started) <= START_WINDOW_MS)
                    && !t
                        .lead_session
                        .as_deref()
                        .is_some_and(|s| self.live.iter().any(|l| l.session == s))
            });
            if let (Some(t), None) = (near.next(), near.next()) {
                let gap = t.created_at.unwrap_or(started).abs_diff(started);
                return Some((
                    t,
                    format!(
                        "the team {} made {gap} ms from the start of this session's process {} in its folder, led by an id no process has (a resumed session's team before Claude Code 2.1.311)",
                        t.name, p.pid
                    ),
                ));
            }
        }
        None
    }

    /// The list a live session reads now, in the folder of lists `root`; `None` when the
    /// session has no live process here.
    pub fn reads(&self, session: &str, root: &Path) -> Option<Reads> {
        let process = self.processes(session).next()?;
        let own = taskproof_core::layout::claude_code_name(session);
        let Some((team, how)) = self.team_of(session) else {
            return Some(Reads {
                list: own,
                how: format!(
                    "its own list, by its session id (process {}, no team)",
                    process.pid
                ),
                pid: process.pid,
            });
        };
        let list = team.list();
        // From 2.1.311 a team list that holds no task leaves the session on the list keyed
        // by its id, when that one has tasks (2.1.332, measured: a session resumed with teams
        // switched on still lists the tasks of `<session id>`).
        let rekeys = process
            .version
            .as_deref()
            .and_then(version)
            .is_some_and(|v| v >= REKEYS_FROM);
        if rekeys && !has_task_files(&root.join(&list)) && has_task_files(&root.join(&own)) {
            return Some(Reads {
                list: own,
                how: format!(
                    "its own list, by its session id: {how} holds no task, and Claude Code {} then reads the list of the session id",
                    process.version.as_deref().unwrap_or("")
                ),
                pid: process.pid,
            });
        }
        Some(Reads {
            list,
            how,
            pid: process.pid,
        })
    }
}

/// The live CLI processes of `sessions/`.
fn read_live(config: &Path) -> Vec<Live> {
    let mut live = Vec::new();
    for (name, v) in json_files(&config.join("sessions"), |p| {
        p.extension().is_some_and(|e| e == "json")
    }) {
        let Some(pid) = v.get("pid").and_then(Value::as_u64) else {
            continue;
        };
        let Ok(pid) = u32::try_from(pid) else {
            continue;
        };
        // The record is the process's own: its name is its pid.
        if name != format!("{pid}.json") || !alive(pid, str_field(&v, "procStart")) {
            continue;
        }
        let Some(session) = str_field(&v, "sessionId") else {
            continue;
        };
        live.push(Live {
            pid,
            session: session.to_string(),
            cwd: str_field(&v, "cwd").map(str::to_string),
            started_at: v.get("startedAt").and_then(Value::as_u64),
            version: str_field(&v, "version").map(str::to_string),
        });
    }
    live.sort_by_key(|l| l.pid);
    live
}

/// The team records of `teams/`.
fn read_teams(config: &Path) -> Vec<Team> {
    let mut teams = Vec::new();
    if let Ok(dir) = std::fs::read_dir(config.join("teams")) {
        for entry in dir.flatten() {
            let Ok(bytes) = std::fs::read(entry.path().join("config.json")) else {
                continue;
            };
            let Ok(v) = serde_json::from_slice::<Value>(&bytes) else {
                continue;
            };
            let Some(name) = str_field(&v, "name") else {
                continue;
            };
            let lead_cwd = v
                .get("members")
                .and_then(Value::as_array)
                .and_then(|m| {
                    m.iter()
                        .find(|m| str_field(m, "agentType") == Some("team-lead"))
                })
                .and_then(|m| str_field(m, "cwd"))
                .map(str::to_string);
            teams.push(Team {
                name: name.to_string(),
                lead_session: str_field(&v, "leadSessionId").map(str::to_string),
                lead_pid: v
                    .pointer("/leadProcess/pid")
                    .and_then(Value::as_u64)
                    .and_then(|p| u32::try_from(p).ok()),
                lead_cwd,
                created_at: v.get("createdAt").and_then(Value::as_u64),
            });
        }
    }
    teams.sort_by(|a, b| a.name.cmp(&b.name));
    teams
}

/// Whether a folder holds a task file (`N.json`).
pub fn has_task_files(folder: &Path) -> bool {
    std::fs::read_dir(folder).is_ok_and(|d| {
        d.flatten().any(|e| {
            taskproof_core::protocol::Layout::ClaudeCode
                .task_id_of(&e.file_name().to_string_lossy())
                .is_some()
        })
    })
}

/// The names of a session's own list: `<session id>` with teams off, `session-<first 8>`
/// as the terminal UI names its team with teams on.
pub fn own_list_names(session: &str) -> [String; 2] {
    let short: String = session.chars().take(8).collect();
    [
        taskproof_core::layout::claude_code_name(session),
        format!("session-{short}"),
    ]
}

/// Whether a list folder's name is one Claude Code gives a session's own list (a session id,
/// or `session-` and 8 hex digits), not one a user chose.
pub fn is_own_list_name(name: &str) -> bool {
    let hex = |s: &str| s.chars().all(|c| c.is_ascii_hexdigit());
    if let Some(rest) = name.strip_prefix("session-") {
        return rest.len() == 8 && hex(rest);
    }
    let parts: Vec<&str> = name.split('-').collect();
    parts.iter().map(|p| p.len()).eq([8, 4, 4, 4, 12]) && parts.iter().all(|p| hex(p))
}

/// A version number `MAJOR.MINOR.PATCH`.
fn version(v: &str) -> Option<(u64, u64, u64)> {
    let mut it = v.split('.').map(|p| p.parse::<u64>().ok());
    Some((it.next()??, it.next()??, it.next()??))
}

/// Whether process `pid` is running and, when the record says when it started
/// (`procStart`, clock ticks since boot: field 22 of `/proc/<pid>/stat`), is the same one.
fn alive(pid: u32, proc_start: Option<&str>) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let Some(want) = proc_start else {
        return true;
    };
    // The command name, in parentheses, may hold spaces: count fields after its `)`.
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().nth(19))
        .is_none_or(|start| start == want)
}

/// The JSON files of `folder` whose path `keep` accepts, by name.
fn json_files(folder: &Path, keep: impl Fn(&Path) -> bool) -> Vec<(String, Value)> {
    let Ok(dir) = std::fs::read_dir(folder) else {
        return Vec::new();
    };
    dir.flatten()
        .filter(|e| keep(&e.path()))
        .filter_map(|e| {
            let v = serde_json::from_slice(&std::fs::read(e.path()).ok()?).ok()?;
            Some((e.file_name().to_string_lossy().into_owned(), v))
        })
        .collect()
}

/// The configuration folder a folder of lists belongs to: its parent when that has
/// `sessions/` or `teams/`, else `$CLAUDE_CONFIG_DIR` (or `~/.claude`) when its `tasks`
/// is this folder.
pub fn config_of(root: &Path) -> Option<PathBuf> {
    let real = root.canonicalize().ok()?;
    if let Some(parent) = root.parent().filter(|p| !p.as_os_str().is_empty())
        && (parent.join("sessions").is_dir() || parent.join("teams").is_dir())
    {
        return Some(parent.to_path_buf());
    }
    let config = crate::discover::default_root(
        std::env::var_os("CLAUDE_CONFIG_DIR"),
        std::env::var_os("HOME"),
    )?;
    (config.canonicalize().ok()? == real)
        .then(|| config.parent().map(Path::to_path_buf))
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn write(path: &Path, v: &Value) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, serde_json::to_vec(v).unwrap()).unwrap();
    }

    /// A configuration folder with this test's own process as a live CLI of `session`.
    fn config_with_live(session: &str, version: &str) -> (tempfile::TempDir, u32, u64) {
        let tmp = tempfile::tempdir().unwrap();
        let pid = std::process::id();
        let started = 1_796_554_962_943;
        write(
            &tmp.path().join(format!("sessions/{pid}.json")),
            &json!({"pid": pid, "sessionId": session, "cwd": "/w", "startedAt": started, "version": version}),
        );
        std::fs::create_dir_all(tmp.path().join("tasks")).unwrap();
        (tmp, pid, started)
    }

    fn team(config: &Path, name: &str, lead: &str, created: u64, extra: Value) {
        let mut v = json!({"name": name, "createdAt": created, "leadSessionId": lead,
            "members": [{"name": "team-lead", "agentType": "team-lead", "cwd": "/w"}]});
        v.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        write(&config.join(format!("teams/{name}/config.json")), &v);
    }

    const X: &str = "a6a188cb-d0a1-488e-a0b2-37177ed07b39";

    #[test]
    fn a_resumed_sessions_team_under_a_fresh_id_is_found_by_its_start_and_folder() {
        let (tmp, pid, started) = config_with_live(X, "2.1.276");
        // A team left by an earlier start that failed, in the same folder, long before.
        team(
            tmp.path(),
            "session-09fc053e",
            "09fc053e-0000",
            started - 60_000,
            json!({}),
        );
        team(
            tmp.path(),
            "session-3f6f443e",
            "3f6f443e-0000",
            started - 94,
            json!({}),
        );
        let s = Sessions::read(tmp.path());
        assert_eq!(s.live.len(), 1, "{s:?}");
        let (t, how) = s.team_of(X).unwrap();
        assert_eq!(t.name, "session-3f6f443e");
        assert!(
            how.contains("94 ms") && how.contains(&pid.to_string()),
            "{how}"
        );
        let reads = s.reads(X, &tmp.path().join("tasks")).unwrap();
        assert_eq!(reads.list, "session-3f6f443e");
        // Two teams that fit are not told apart.
        team(
            tmp.path(),
            "session-77777777",
            "77777777-0000",
            started + 50,
            json!({}),
        );
        assert!(Sessions::read(tmp.path()).team_of(X).is_none());
    }

    #[test]
    fn a_team_names_its_lead_by_session_or_by_process() {
        let (tmp, pid, started) = config_with_live(X, "2.1.332");
        team(tmp.path(), "session-a6a188cb", X, started, json!({}));
        assert_eq!(
            Sessions::read(tmp.path()).team_of(X).unwrap().0.name,
            "session-a6a188cb"
        );
        std::fs::remove_dir_all(tmp.path().join("teams")).unwrap();
        team(
            tmp.path(),
            "session-12345678",
            "12345678-0000",
            started - 60_000,
            json!({"leadProcess": {"pid": pid}}),
        );
        let s = Sessions::read(tmp.path());
        let (t, how) = s.team_of(X).unwrap();
        assert_eq!(t.name, "session-12345678");
        assert!(how.contains("process"), "{how}");
    }

    #[test]
    fn from_2_1_311_an_empty_team_list_leaves_the_session_on_its_ids_list() {
        let (tmp, _, started) = config_with_live(X, "2.1.332");
        team(tmp.path(), "session-a6a188cb", X, started, json!({}));
        let root = tmp.path().join("tasks");
        std::fs::create_dir_all(root.join(X)).unwrap();
        std::fs::write(root.join(X).join("1.json"), "{}").unwrap();
        assert_eq!(Sessions::read(tmp.path()).reads(X, &root).unwrap().list, X);
        // Before 2.1.311 the team's list it is, empty or not.
        let (tmp, _, started) = config_with_live(X, "2.1.276");
        team(tmp.path(), "session-a6a188cb", X, started, json!({}));
        let root = tmp.path().join("tasks");
        std::fs::create_dir_all(root.join(X)).unwrap();
        std::fs::write(root.join(X).join("1.json"), "{}").unwrap();
        assert_eq!(
            Sessions::read(tmp.path()).reads(X, &root).unwrap().list,
            "session-a6a188cb"
        );
    }

    #[test]
    fn a_record_of_a_process_that_ended_is_not_live() {
        let tmp = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        write(
            &tmp.path().join(format!("sessions/{pid}.json")),
            &json!({"pid": pid, "sessionId": X}),
        );
        // Ours, but started at another time: a pid used again.
        let me = std::process::id();
        write(
            &tmp.path().join(format!("sessions/{me}.json")),
            &json!({"pid": me, "sessionId": X, "procStart": "1"}),
        );
        assert!(Sessions::read(tmp.path()).live.is_empty());
    }

    #[test]
    fn own_list_names_are_told_from_chosen_ones() {
        assert!(is_own_list_name(X));
        assert!(is_own_list_name("session-a6a188cb"));
        assert!(!is_own_list_name("session-a6a188c"));
        assert!(!is_own_list_name("plan"));
        assert_eq!(own_list_names(X)[1], "session-a6a188cb");
        assert_eq!(version("2.1.311"), Some((2, 1, 311)));
        assert_eq!(version("2.1"), None);
    }
}
