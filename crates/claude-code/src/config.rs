//! A Claude Code target's configuration: the user settings it runs with that change what its
//! task tools do (issue 54). `claude-code@VERSION` is the default (agent teams off);
//! `claude-code@VERSION:CONFIG` names another, and every verdict of a run holds for the
//! configuration it ran in.
//!
//! Agent teams are switched on by the user in one of three ways, each a configuration of its
//! own, because a version may honour one and not another: the environment variable
//! [`TEAMS_ENV`], the same variable in `settings.json`'s `env`, or the `--agent-teams` flag.
//! With teams on, the terminal UI makes the session's own list a team list at start: the
//! folder `tasks/<session id>/` becomes `tasks/session-<first 8 hex of the id>/`
//! (docs/claude-code.md, "Agent teams").

use std::fmt;

use serde_json::{Value, json};

/// The environment variable that switches agent teams on.
pub const TEAMS_ENV: &str = "CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS";
/// The command-line flag that switches agent teams on.
pub const TEAMS_FLAG: &str = "--agent-teams";

/// A named configuration of a Claude Code target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Config {
    /// Agent teams off, as Claude Code runs unless the user switches them on.
    #[default]
    TeamsOff,
    /// `CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS=1` in the CLI's environment.
    TeamsEnv,
    /// `{"env": {"CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS": "1"}}` in the user's settings.json.
    TeamsSettings,
    /// `--agent-teams` on the CLI's command line. Measured: every version tried refuses it
    /// as an unknown option and does not start (docs/claude-code.md), although the teams
    /// gate reads it from the process's arguments.
    TeamsFlag,
}

impl Config {
    /// Every configuration, in the order errors list them.
    pub const ALL: [Config; 4] = [
        Config::TeamsOff,
        Config::TeamsEnv,
        Config::TeamsSettings,
        Config::TeamsFlag,
    ];

    /// The name a target spec and a report use.
    pub fn name(self) -> &'static str {
        match self {
            Config::TeamsOff => "teams-off",
            Config::TeamsEnv => "teams-env",
            Config::TeamsSettings => "teams-settings",
            Config::TeamsFlag => "teams-flag",
        }
    }

    /// What the configuration is, in words, for a report's header.
    pub fn describe(self) -> String {
        match self {
            Config::TeamsOff => {
                format!("agent teams off (the default: no {TEAMS_ENV}, no {TEAMS_FLAG})")
            }
            Config::TeamsEnv => format!("agent teams on: {TEAMS_ENV}=1 in the environment"),
            Config::TeamsSettings => {
                format!("agent teams on: {TEAMS_ENV}=1 in settings.json's env")
            }
            Config::TeamsFlag => format!("agent teams on: {TEAMS_FLAG} on the command line"),
        }
    }

    /// Parses a configuration's name (what follows `:` in `claude-code@VERSION:CONFIG`).
    pub fn parse(s: &str) -> Result<Config, String> {
        Config::ALL
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Config::ALL.iter().map(|c| c.name()).collect();
                format!(
                    "unknown Claude Code configuration {s:?}; expected one of {}",
                    names.join(", ")
                )
            })
    }

    /// Whether agent teams are on.
    pub fn teams(self) -> bool {
        self != Config::TeamsOff
    }

    /// What the configuration adds to the CLI's environment.
    pub fn env(self) -> Option<(&'static str, &'static str)> {
        (self == Config::TeamsEnv).then_some((TEAMS_ENV, "1"))
    }

    /// What the configuration adds to the CLI's command line. With teams on, the
    /// permission mode `default`: 2.1.332's terminal UI otherwise starts in auto mode, whose
    /// safety check of the `Agent` tool runs on Anthropic's server, which the scripted model
    /// is not, so spawning a teammate stops at a dialog ("Auto mode can't check actions in
    /// this session"); in `default` mode the tools `--allowedTools` names run unasked.
    pub fn args(self) -> &'static [&'static str] {
        match self {
            Config::TeamsOff => &[],
            Config::TeamsEnv | Config::TeamsSettings => &["--permission-mode", "default"],
            Config::TeamsFlag => &[TEAMS_FLAG, "--permission-mode", "default"],
        }
    }

    /// The CLI's `--allowedTools`: the task tools, and with teams on the tools a lead spawns
    /// and addresses its teammates with (`Agent`, `SendMessage`).
    pub fn allowed_tools(self) -> &'static str {
        if self.teams() {
            "TaskCreate,TaskUpdate,TaskList,TaskGet,Agent,SendMessage"
        } else {
            "TaskCreate,TaskUpdate,TaskList,TaskGet"
        }
    }

    /// `settings` (the session's user settings, if any) with what the configuration adds:
    /// for [`Config::TeamsSettings`], the variable in `env`, beside any other entry. `Err`
    /// when the settings already give the variable another value or are not an object.
    pub fn settings(self, settings: Option<&Value>) -> Result<Option<Value>, String> {
        if self != Config::TeamsSettings {
            return Ok(settings.cloned());
        }
        let mut out = settings.cloned().unwrap_or_else(|| json!({}));
        let Some(object) = out.as_object_mut() else {
            return Err("the session's settings are not a JSON object".into());
        };
        let env = object.entry("env").or_insert_with(|| json!({}));
        let Some(env) = env.as_object_mut() else {
            return Err("the session's settings have an env that is not an object".into());
        };
        match env.get(TEAMS_ENV) {
            Some(v) if v != "1" => {
                return Err(format!(
                    "the session's settings set {TEAMS_ENV} to {v}, and the configuration {} sets it to \"1\"",
                    self.name()
                ));
            }
            _ => {
                env.insert(TEAMS_ENV.into(), json!("1"));
            }
        }
        Ok(Some(out))
    }

    /// The folder of the session's own list, as Claude Code names it for `session_id` in this
    /// configuration, when driven in the terminal UI (`terminal`): with teams on, the team
    /// list `session-<first 8 characters of the id>`; otherwise the id itself.
    pub fn own_list_folder(self, session_id: &str, terminal: bool) -> String {
        if self.teams() && terminal {
            let head: String = session_id.chars().take(8).collect();
            format!("session-{head}")
        } else {
            session_id.to_string()
        }
    }
}

impl fmt::Display for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses_back_and_others_are_refused_with_the_names() {
        for c in Config::ALL {
            assert_eq!(Config::parse(c.name()), Ok(c));
        }
        let e = Config::parse("teams").unwrap_err();
        assert!(e.contains("\"teams\""), "{e}");
        assert!(
            e.contains("teams-off, teams-env, teams-settings, teams-flag"),
            "{e}"
        );
        assert!(Config::parse("").is_err());
        assert!(Config::parse("Teams-Env").is_err());
    }

    #[test]
    fn each_way_of_switching_teams_on_adds_only_its_own_part() {
        assert_eq!(Config::TeamsEnv.env(), Some((TEAMS_ENV, "1")));
        assert_eq!(Config::TeamsFlag.env(), None);
        assert_eq!(Config::TeamsFlag.args()[0], "--agent-teams");
        assert!(!Config::TeamsEnv.args().contains(&"--agent-teams"));
        assert!(Config::TeamsOff.args().is_empty());
        assert!(
            Config::TeamsEnv
                .allowed_tools()
                .ends_with(",Agent,SendMessage")
        );
        assert_eq!(
            Config::TeamsOff.allowed_tools(),
            "TaskCreate,TaskUpdate,TaskList,TaskGet"
        );
        assert!(!Config::TeamsOff.teams());
        assert_eq!(Config::TeamsOff.settings(None), Ok(None));
        let hooks = json!({"hooks": {"PreToolUse": []}});
        assert_eq!(
            Config::TeamsEnv.settings(Some(&hooks)),
            Ok(Some(hooks.clone()))
        );
        let merged = Config::TeamsSettings
            .settings(Some(&hooks))
            .unwrap()
            .unwrap();
        assert_eq!(merged["hooks"], hooks["hooks"]);
        assert_eq!(merged["env"][TEAMS_ENV], "1");
        let clash = json!({"env": {TEAMS_ENV: "0"}});
        assert!(Config::TeamsSettings.settings(Some(&clash)).is_err());
        assert!(Config::TeamsSettings.settings(Some(&json!([]))).is_err());
    }

    #[test]
    fn with_teams_on_the_terminal_ui_keeps_the_own_list_in_a_session_folder() {
        let id = "9f6527a8-1111-4222-8333-444455556666";
        assert_eq!(Config::TeamsOff.own_list_folder(id, true), id);
        assert_eq!(Config::TeamsEnv.own_list_folder(id, false), id);
        assert_eq!(
            Config::TeamsSettings.own_list_folder(id, true),
            "session-9f6527a8"
        );
    }
}
