//! Where a hook's list is and what is in it: the list folder found the way Claude Code
//! finds it (the session's list id, sanitised; a teammate's team lead's list; the
//! `CLAUDE_CODE_TASK_LIST_ID` override), and the list read as far as the hook needs it,
//! each task file's deciding fields only. A list that cannot be found or read is said in
//! words for the user, never a reason to refuse ([`super::hook`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde_json::Value;

use crate::discover::ListLocation;
use crate::finding::{Finding, FindingKind};
use crate::hook::{HookContext, str_field};
use crate::{audit, journal, judge};
use taskproof_core::protocol::Layout;
use taskproof_core::task::{MAX_SUBJECT_CHARS, Status, Task, TaskId};
use taskproof_store::{HIGHWATERMARK_NAME, ReadError, parse_watermark};

/// A list folder the hook decided on, and how it got there (for the user's message).
#[derive(Debug, Clone)]
pub(super) struct Place {
    pub(super) location: ListLocation,
    pub(super) how: String,
}

/// The list name `TeamCreate` gives a team's lead: every UTF-16 unit outside
/// `[A-Za-z0-9]` becomes `-`, then lower case.
pub(super) fn team_lead_list(team: &str) -> String {
    let mut out = String::with_capacity(team.len());
    for c in team.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else {
            out.extend(std::iter::repeat_n('-', c.len_utf16()));
        }
    }
    out
}

/// The list folder a hook event belongs to, chosen as Claude Code chooses the list its task
/// tools write to: the folder named on the command line; else, under the configuration
/// folder's `tasks/`, `CLAUDE_CODE_TASK_LIST_ID`; else the team's list (a teammate's
/// `team_name`, or the team in its `agent_id` `name@team`; for a team's lead, the team whose
/// `teams/*/config.json` names this session as `leadSessionId`, or whose lead is this
/// session's process: [`crate::teams`]); else the session's id.
/// Every name is sanitised as Claude Code does. `Err` says why there is no place to look.
pub(super) fn locate(event: &Value, ctx: &HookContext) -> Result<Place, String> {
    if let Some(dir) = &ctx.list_dir {
        return Ok(Place {
            location: ListLocation::direct(dir),
            how: "named on the command line".into(),
        });
    }
    let Some(config) = &ctx.config_dir else {
        return Err(
            "neither CLAUDE_CONFIG_DIR nor HOME is set, so the folder of task lists is unknown"
                .into(),
        );
    };
    let root = config.join("tasks");
    let place = |name: String, how: String| Place {
        location: ListLocation::in_root(&root, &name),
        how,
    };
    if let Some(id) = &ctx.list_id {
        return Ok(place(
            taskproof_core::layout::claude_code_name(id),
            format!("from CLAUDE_CODE_TASK_LIST_ID={id:?}"),
        ));
    }
    let team = str_field(event, "team_name")
        .filter(|t| !t.is_empty())
        .map(|t| (t.to_string(), "the event's team_name"))
        .or_else(|| {
            str_field(event, "agent_id")
                .and_then(|a| a.split_once('@'))
                .map(|(_, t)| t)
                .filter(|t| !t.is_empty())
                .map(|t| (t.to_string(), "the team in the event's agent_id"))
        });
    if let Some((team, source)) = team {
        // A teammate's tools use the team name as given; its lead's, the lead's form. Take
        // whichever exists, the teammate's when neither does.
        let names = [
            taskproof_core::layout::claude_code_name(&team),
            team_lead_list(&team),
        ];
        let name = names
            .iter()
            .find(|n| root.join(n).is_dir())
            .unwrap_or(&names[0])
            .clone();
        return Ok(place(name, format!("from {source} {team:?}")));
    }
    let session = str_field(event, "session_id").filter(|s| !s.is_empty());
    if let Some(session) = session {
        if let Some((team, how)) = crate::teams::Sessions::read_for_team(config).team_of(session) {
            let name = team.list();
            // Claude Code 2.1.17 keeps a lead on its session's list; later versions move it
            // to the team's. Only a team list that exists is taken.
            if root.join(&name).is_dir() {
                return Ok(place(name, format!("from {how}")));
            }
        }
        return Ok(place(
            taskproof_core::layout::claude_code_name(session),
            format!("from the event's session_id {session:?}"),
        ));
    }
    Err(format!(
        "the event has no session_id and CLAUDE_CODE_TASK_LIST_ID is not set, so no list under {} is this session's",
        root.display()
    ))
}

/// A list read from disk, as far as the hook needs it.
pub(super) struct List {
    pub(super) name: String,
    pub(super) path: PathBuf,
    pub(super) layout: Layout,
    /// The readable tasks, with id, subject, status and edges only.
    pub(super) tasks: BTreeMap<TaskId, Task>,
    /// Ids of every task file present, readable or not.
    pub(super) present: BTreeSet<TaskId>,
    /// The highest id the list is known to have assigned.
    pub(super) bound: u64,
    /// The unsafe problems the list already has ([`FindingKind::blocks_hook`]).
    pub(super) old: Vec<Finding>,
    /// Every readable task file by name, with its exact bytes, for the journal.
    pub(super) files: Vec<(String, Vec<u8>)>,
    /// Task files present that could not be read (a link, a special file).
    pub(super) unreadable: Vec<String>,
    /// The files of `files` whose bytes were not a whole task when read, and why.
    pub(super) torn: Vec<(String, journal::Torn)>,
}

/// Reads the list at `place`; `Err` says, for the user, why it could not be.
pub(super) fn read_list(place: &Place, layout: Option<Layout>) -> Result<List, String> {
    let path = place.location.path.clone();
    let shown = path.display();
    let how = &place.how;
    let dir = match place.location.open() {
        Ok(d) => d,
        Err(super::CheckError::Io { error, .. })
            if error.kind() == std::io::ErrorKind::NotFound =>
        {
            return Err(format!("there is no task list folder {shown} ({how})"));
        }
        Err(e) => return Err(format!("{e} ({how})")),
    };
    let names: Vec<String> = dir
        .entries()
        .map_err(|e| format!("read {shown}: {e} ({how})"))?
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    let layout = layout.unwrap_or_else(|| audit::detect_layout(names.iter().map(String::as_str)));
    let name = place.location.name.clone();
    let mut list = List {
        name: name.clone(),
        path,
        layout,
        tasks: BTreeMap::new(),
        present: BTreeSet::new(),
        bound: 0,
        old: Vec::new(),
        files: Vec::new(),
        unreadable: Vec::new(),
        torn: Vec::new(),
    };
    for file in &names {
        let Some(id) = layout.task_id_of(file) else {
            continue;
        };
        let mut bytes = Vec::new();
        // The size when the file was opened, beside what was read: a writer that truncates
        // and rewrites the file in place changes it during the read.
        let size = match dir.read_into(file, &mut bytes) {
            Ok(st) => st.st_size,
            // Gone since the listing, or a folder: not a task file. A link or a special file
            // is present but unreadable; `taskproof check` says why.
            Err(ReadError::Missing | ReadError::Folder) => continue,
            Err(_) => {
                list.present.insert(id);
                list.unreadable.push(file.clone());
                continue;
            }
        };
        list.present.insert(id);
        let old = |kind, message: String| {
            Finding::new(&name, file.clone(), kind, message).involving([id])
        };
        let decoded = serde_json::from_slice::<LightTask>(&bytes);
        if let Some(torn) = journal::Torn::of_read(&bytes, size, decoded.is_ok()) {
            list.torn.push((file.clone(), torn));
        }
        match decoded {
            Ok(t) if t.id == Some(id) => {
                let mut task = Task::new(id, t.subject);
                task.status = Status::parse(&t.status);
                task.blocks = t.blocks.into_iter().flatten().collect();
                task.blocked_by = t.blocked_by.into_iter().flatten().collect();
                if !task.status.is_known() {
                    list.old.push(old(
                        FindingKind::UnknownStatus,
                        format!(
                            "status {:?} is not one of pending, in_progress, completed",
                            t.status
                        ),
                    ));
                }
                let n = task.subject.chars().count();
                if n == 0 || n > MAX_SUBJECT_CHARS {
                    list.old.push(old(
                        FindingKind::Schema,
                        format!("subject: {n} characters; a subject has 1 to {MAX_SUBJECT_CHARS}"),
                    ));
                }
                list.tasks.insert(id, task);
            }
            Ok(t) => list.old.push(old(
                FindingKind::IdMismatch,
                format!(
                    "holds id {:?}, but its name says {id}",
                    t.id.map(|i| i.to_string())
                ),
            )),
            Err(e) if e.is_syntax() || e.is_eof() => list.old.push(old(
                FindingKind::MalformedJson,
                format!("is not valid JSON: {e}"),
            )),
            Err(e) => list.old.push(old(FindingKind::Schema, e.to_string())),
        }
        // Kept whole: the journal records the exact bytes Claude Code wrote.
        list.files.push((file.clone(), bytes));
    }
    let highest = list.present.iter().next_back().map_or(0, |i| i.get());
    let highwatermark = dir
        .read(HIGHWATERMARK_NAME)
        .ok()
        .and_then(|b| parse_watermark(&b));
    list.bound = highest.max(highwatermark.unwrap_or(0));
    let tasks: Vec<Task> = list.tasks.values().cloned().collect();
    list.old.extend(
        judge::judge_tasks(&name, layout, &tasks, &list.present, list.bound)
            .into_iter()
            .filter(|f| f.kind.blocks_hook()),
    );
    judge::sort_findings(&mut list.old, layout);
    Ok(list)
}

/// Whether `bytes` decode as a task object, as the hook reads one (an id of either layout, a
/// subject, a status, edges): what the journal calls a whole version of a task file.
pub(crate) fn decodes_as_task(bytes: &[u8]) -> bool {
    serde_json::from_slice::<LightTask>(bytes).is_ok()
}

/// What the hook reads of a task file: the fields that decide a change's verdict. Every
/// other field is skipped unread, so a long description costs no allocation. Ids may be
/// strings (claude-code) or integers (s07); an id that is neither is left out.
#[derive(serde::Deserialize)]
struct LightTask {
    #[serde(default, deserialize_with = "light_id")]
    id: Option<TaskId>,
    subject: String,
    status: String,
    #[serde(default, deserialize_with = "light_ids")]
    blocks: Vec<Option<TaskId>>,
    #[serde(default, rename = "blockedBy", deserialize_with = "light_ids")]
    blocked_by: Vec<Option<TaskId>>,
}

/// One id, as a string of digits or a non-negative integer.
struct LightId(Option<TaskId>);

impl<'de> serde::Deserialize<'de> for LightId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl serde::de::Visitor<'_> for Visit {
            type Value = LightId;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a task id (a string of digits or an integer)")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<LightId, E> {
                Ok(LightId(v.parse().ok()))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<LightId, E> {
                Ok(LightId(Some(TaskId(v))))
            }
            fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<LightId, E> {
                Ok(LightId(None))
            }
            fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<LightId, E> {
                Ok(LightId(None))
            }
        }
        d.deserialize_any(Visit)
    }
}

fn light_id<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<TaskId>, D::Error> {
    <LightId as serde::Deserialize>::deserialize(d).map(|i| i.0)
}

fn light_ids<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Option<TaskId>>, D::Error> {
    <Vec<LightId> as serde::Deserialize>::deserialize(d)
        .map(|v| v.into_iter().map(|i| i.0).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_ids_are_sanitised_as_claude_code_does() {
        assert_eq!(taskproof_core::layout::claude_code_name("../x"), "---x");
        assert_eq!(
            taskproof_core::layout::claude_code_name("my.project"),
            "my-project"
        );
        assert_eq!(taskproof_core::layout::claude_code_name("a_b-C9"), "a_b-C9");
        // One UTF-16 unit per `-`: é is one, an emoji two.
        assert_eq!(taskproof_core::layout::claude_code_name("é😀"), "---");
        assert_eq!(team_lead_list("My Team_1"), "my-team-1");
    }
}
