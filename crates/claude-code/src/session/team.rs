//! Agent teams: handing a request to a teammate the lead spawned, and reading the team the
//! terminal UI made for the session from its records.

use super::*;

impl ClaudeCodeSession {
    /// Answers the lead's prompt of request `n` by handing it to the teammate `name`: the
    /// `Agent` tool spawns it with [`spawn_prompt`] the first time this CLI's lead sees the
    /// name, `SendMessage` sends it the prompt later. From then on the prompt is awaited in
    /// the teammate's conversation; the lead's next request (the tool's result) is a side
    /// request and ends the lead's turn.
    pub(super) fn hand_to_member(
        &mut self,
        list: &str,
        name: &str,
        n: u64,
        exchange: taskproof_model::scripted::Exchange,
    ) {
        let id = format!("toolu_taskproof_{}", self.next_tool);
        self.next_tool += 1;
        let run = self.clis.get_mut(list).expect("running");
        let (tool, input) = if run.members.contains(name) {
            (
                "SendMessage",
                json!({"to": name, "summary": format!("taskproof request {n}"),
                       "message": format!("Do {}.", prompt_marker(n))}),
            )
        } else {
            (
                "Agent",
                json!({"description": format!("taskproof member {name}"),
                       "prompt": spawn_prompt(name, n), "name": name,
                       "subagent_type": "general-purpose"}),
            )
        };
        run.members.insert(name.to_string());
        run.model.expect_prompt_from(n, Some(name));
        exchange.answer(Reply::Tool {
            id,
            name: tool.to_string(),
            input: input.clone(),
        });
        self.note(format!("request {n}: the lead -> {tool} {input}"));
    }

    /// Whether the session's own list is a team's: agent teams on, in the terminal UI.
    pub(super) fn teams_in_terminal(&self) -> bool {
        self.setup.configuration.teams() && self.setup.drive == Drive::Terminal
    }

    /// After the CLI of the session's own list started with agent teams on: the team it made
    /// of its session (a record in `teams/` that was not there before it started, written
    /// by the time its input box shows, or within 2 s), which names the folder it keeps the
    /// list in from now on. Measured on 2.1.276: `/exit` removes the record, and `--resume
    /// ID` makes a new team keyed to a fresh id, not ID, while the requests go on naming ID;
    /// so the team is taken from what the CLI wrote, not computed from the id.
    pub(super) fn note_own_team(&mut self, before: &[(String, String)], conversation: &str) {
        let deadline = Instant::now() + Duration::from_secs(2);
        let made = loop {
            let made: Vec<(String, String)> = team_records(&self.setup.config)
                .into_iter()
                .filter(|t| !before.contains(t))
                .collect();
            if !made.is_empty() || Instant::now() >= deadline {
                break made;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        match made.as_slice() {
            [(name, lead)] => {
                self.note(format!(
                    "agent teams: the CLI of list \"@session\" (conversation {conversation}) made team {name} led by session {lead}: its own list is the folder {name}"
                ));
                self.own_team = Some(name.clone());
            }
            [] => {
                self.note(format!(
                    "agent teams: the CLI of list \"@session\" (conversation {conversation}) made no team record within 2 s"
                ));
                self.own_team = None;
            }
            many => {
                let names: Vec<&str> = many.iter().map(|(n, _)| n.as_str()).collect();
                self.note(format!(
                    "agent teams: the CLI of list \"@session\" made several team records ({}); taking the one it leads",
                    names.join(", ")
                ));
                self.own_team = None;
            }
        }
    }
}

/// Whether the CLI wrote a transcript of conversation `id` under the config folder
/// (`projects/<working folder>/<id>.jsonl`), so that `--resume` finds it.
/// A name the `Agent` tool takes for a teammate (its input schema's `name` pattern in 2.1.276
/// and 2.1.332: `^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`), and not `team-lead`, the lead's own.
pub(super) fn valid_member(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && name.len() <= 64
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && name != "team-lead"
}

/// Every team record of the config folder: (team name, lead session id).
/// The names of the members of team `name`, as its record lists them.
pub(super) fn team_members(config: &Path, name: &str) -> Vec<String> {
    let Some(record) = std::fs::read(config.join("teams").join(name).join("config.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
    else {
        return Vec::new();
    };
    record["members"]
        .as_array()
        .map(|m| {
            m.iter()
                .filter_map(|m| m["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

pub(super) fn team_records(config: &Path) -> Vec<(String, String)> {
    let Ok(teams) = std::fs::read_dir(config.join("teams")) else {
        return Vec::new();
    };
    let mut out: Vec<(String, String)> = teams
        .flatten()
        .filter_map(|t| {
            let record: Value =
                serde_json::from_slice(&std::fs::read(t.path().join("config.json")).ok()?).ok()?;
            let name = record
                .get("name")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| t.file_name().to_string_lossy().into_owned());
            let lead = record
                .get("leadSessionId")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            Some((name, lead))
        })
        .collect();
    out.sort();
    out
}

/// The team whose lead is conversation `id`, from the CLI's team records
/// (`CONFIG/teams/*/config.json`, `leadSessionId` and `name`): the newest when there are
/// several.
pub(super) fn lead_team(config: &Path, id: &str) -> Option<String> {
    let teams = std::fs::read_dir(config.join("teams")).ok()?;
    teams
        .flatten()
        .filter_map(|t| {
            let path = t.path().join("config.json");
            let modified = std::fs::metadata(&path).and_then(|m| m.modified()).ok()?;
            let record: Value = serde_json::from_slice(&std::fs::read(&path).ok()?).ok()?;
            (record.get("leadSessionId")?.as_str()? == id).then_some(())?;
            let name = record
                .get("name")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| t.file_name().to_string_lossy().into_owned());
            Some((modified, name))
        })
        .max()
        .map(|(_, name)| name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A member is named as the `Agent` tool takes a teammate's name, and is not the lead.
    #[test]
    fn a_member_is_a_name_the_agent_tool_takes() {
        for ok in ["w1", "Writer", "Writer-2", "a_b", &"x".repeat(64)] {
            assert!(valid_member(ok), "{ok}");
        }
        for bad in [
            "",
            "-w",
            "_w",
            "w 1",
            "w.1",
            "team-lead",
            &"x".repeat(65),
            "é",
        ] {
            assert!(!valid_member(bad), "{bad}");
        }
    }
}
