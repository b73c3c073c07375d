//! One running Claude Code CLI on one task list: started in print mode with stream-json
//! input (one user message per protocol request) or, for versions whose task tools exist only
//! in interactive sessions, as the real terminal UI in a pseudo-terminal, with the prompt
//! typed as a person would.
//!
//! The CLI runs in a process group of its own, so a kill reaches whatever it started; its
//! output is drained by a thread (a full pipe or terminal would stall it) and the tail is
//! kept for reports and for noticing that the input box is ready.

use std::ffi::OsString;
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::config::Config;
use crate::install::Installation;
use taskproof_core::protocol::SESSION_LIST;
use taskproof_session::Drive;
use taskproof_session::group::Group;

/// How much of the CLI's output is kept.
const MAX_OUTPUT: usize = 64 * 1024;

/// Print mode with a conversation on standard input and its events on standard output, one
/// JSON object a line each way (the shape both the task sessions and the background
/// sessions drive).
pub(crate) const PRINT_STREAM_JSON: [&str; 6] = [
    "-p",
    "--verbose",
    "--input-format",
    "stream-json",
    "--output-format",
    "stream-json",
];
/// What the terminal UI shows under its input box once it takes input, by version, blanks
/// left out: `? for shortcuts` up to 2.1.211 at least (2.1.112 draws it as `?forshortcuts`,
/// moving the cursor over the blanks); 2.1.332 shows its permission mode there instead
/// (`⏵⏵ auto mode on (shift+tab to cycle)`), and 2.1.211 does after a turn (`⏸ manual
/// mode on · ctrl+t to hide tasks`). In permission mode `default` (the teams
/// configurations) 2.1.332 shows `⏸ manual mode on`, followed by ` · ? for shortcuts` at
/// start and by the task count (`0/2 tasks done`) when a resumed conversation has tasks.
/// Measured by starting each version in a pseudo-terminal (docs/claude-code.md, "The
/// terminal UI").
const READY: [&str; 4] = [
    "forshortcuts",
    "shift+tabtocycle",
    "modeon·",
    "⏸manualmodeon",
];

/// Everything a CLI needs besides its list.
#[derive(Debug, Clone)]
pub struct Setup {
    pub install: Installation,
    pub drive: Drive,
    /// The private `HOME` and `CLAUDE_CONFIG_DIR`.
    pub config: PathBuf,
    /// The working folder (inside `config`, outside the root).
    pub cwd: PathBuf,
    /// Folders searched before the inherited `PATH` (see `session::Extra`).
    pub path: Vec<PathBuf>,
    /// The target's configuration: what it adds to the environment and the command line
    /// (its settings are written into `config` by the session).
    pub configuration: Config,
}

#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error("start Claude Code {version}: {reason}")]
    Spawn { version: String, reason: String },
    #[error("open a pseudo-terminal: {0}")]
    Pty(String),
}

enum Input {
    Pipe(ChildStdin),
    Pty(File),
}

pub struct ClaudeProcess {
    child: Group,
    input: Option<Input>,
    output: Arc<Mutex<Output>>,
    pub drive: Drive,
}

#[derive(Default)]
struct Output {
    /// The tail of what the CLI wrote, escape sequences removed.
    text: String,
    /// Set once the terminal UI showed its input box.
    ready: bool,
    /// How many reads drew the line under the input box: it is drawn again when the UI is
    /// done with a command and takes input again.
    redraws: u64,
    /// Bytes read so far, and when the last came: the terminal UI animates a spinner while
    /// it works, so silence means it is idle.
    total: u64,
    last: Option<Instant>,
}

/// A dummy key: the scripted model checks none, and the terminal UI must be told it was
/// approved (by its last 20 characters, see [`write_first_run_answers`]).
pub(super) const API_KEY: &str = "sk-ant-api03-taskproof-scripted-model-0000000000000000";

/// Writes `config/.claude.json` with the answers to what a fresh CLI would otherwise ask
/// before it takes a prompt: onboarding done, [`API_KEY`] approved (Claude Code keeps the
/// key's last 20 characters there), and `project`, the folder it runs in, trusted. Every CLI
/// taskproof starts gets it, the task sessions and the background-task sessions alike, so a
/// version that asks something new is answered in this one place.
pub(super) fn write_first_run_answers(config: &Path, project: &Path) -> Result<(), String> {
    let key_tail = &API_KEY[API_KEY.len() - 20..];
    let state = serde_json::json!({
        "hasCompletedOnboarding": true,
        "customApiKeyResponses": {"approved": [key_tail], "rejected": []},
        "projects": {project.to_string_lossy(): {"hasTrustDialogAccepted": true, "allowedTools": []}},
    });
    let path = config.join(".claude.json");
    std::fs::write(&path, format!("{state:#}\n"))
        .map_err(|e| format!("failed to write {}: {e}", path.display()))
}

/// The environment of every CLI taskproof starts (the task-store sessions here, the
/// background-task sessions in `background.rs`): only what it needs, nothing inherited that
/// could point it at a real account, a real model or an enclosing Claude Code session. It
/// has its own config folder, the scripted model as its API with [`API_KEY`], every tool
/// listed in the first request, and no other traffic.
pub(super) fn scripted_env(config: &Path, base_url: &str) -> Vec<(&'static str, OsString)> {
    vec![
        ("HOME", config.into()),
        ("CLAUDE_CONFIG_DIR", config.into()),
        ("ANTHROPIC_BASE_URL", base_url.into()),
        ("ANTHROPIC_API_KEY", API_KEY.into()),
        // Tools are listed in the first request only when tool search does not defer them.
        ("ENABLE_TOOL_SEARCH", "false".into()),
        // No prompt suggestions after a turn: in 2.1.17 a prompt typed while one is being
        // fetched can stick, and they are calls to the model an agent does not make.
        ("CLAUDE_CODE_ENABLE_PROMPT_SUGGESTION", "false".into()),
        // No traffic except to the scripted model.
        ("DISABLE_TELEMETRY", "1".into()),
        ("DISABLE_ERROR_REPORTING", "1".into()),
        ("DISABLE_AUTOUPDATER", "1".into()),
        ("DISABLE_BUG_COMMAND", "1".into()),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".into()),
        ("LANG", "C.UTF-8".into()),
    ]
}

/// The environment of a task session's CLI on `list`: the list is named by
/// `CLAUDE_CODE_TASK_LIST_ID`, except the session's own list ([`SESSION_LIST`]), which is
/// the list the CLI keeps under its session id when it is given none.
fn environment(setup: &Setup, list: &str, base_url: &str) -> Vec<(&'static str, OsString)> {
    let mut env = scripted_env(&setup.config, base_url);
    if list != SESSION_LIST {
        env.push(("CLAUDE_CODE_TASK_LIST_ID", list.into()));
    }
    if let Some((name, value)) = setup.configuration.env() {
        env.push((name, value.into()));
    }
    env.extend([
        // The task tools: on by this switch up to 2.1.112, by the todo switch later.
        ("CLAUDE_CODE_ENABLE_TASKS", "1".into()),
        ("CLAUDE_CODE_ENABLE_TODO_TOOLS", "1".into()),
        ("TERM", "xterm-256color".into()),
    ]);
    let inherited = std::env::var_os("PATH");
    let folders = setup
        .path
        .iter()
        .cloned()
        .chain(inherited.iter().flat_map(std::env::split_paths));
    if let Ok(path) = std::env::join_paths(folders)
        && !path.is_empty()
    {
        env.push(("PATH", path));
    }
    env
}

/// Which conversation a CLI holds: Claude Code names each by a UUID, chosen here so that
/// the same conversation can be started again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Conversation {
    /// A new conversation with this id (`--session-id`).
    New(String),
    /// The conversation with this id, started again (`--resume`), as a user resumes it.
    Resume(String),
}

impl Conversation {
    pub fn id(&self) -> &str {
        match self {
            Conversation::New(id) | Conversation::Resume(id) => id,
        }
    }
}

impl ClaudeProcess {
    pub fn start(
        setup: &Setup,
        list: &str,
        base_url: &str,
        conversation: &Conversation,
    ) -> Result<ClaudeProcess, ProcessError> {
        let spawn_error = |reason: String| ProcessError::Spawn {
            version: setup.install.version.clone(),
            reason,
        };
        let mut command = setup.install.command();
        command
            .env_clear()
            .envs(environment(setup, list, base_url))
            .current_dir(&setup.cwd)
            .args(["--allowedTools", setup.configuration.allowed_tools()])
            .args(setup.configuration.args());
        match conversation {
            Conversation::New(id) => command.args(["--session-id", id]),
            Conversation::Resume(id) => command.args(["--resume", id]),
        };
        let output = Arc::new(Mutex::new(Output::default()));
        let (child, input, reader): (Group, Input, Box<dyn Read + Send>) = match setup.drive {
            Drive::Print => {
                command
                    .args(PRINT_STREAM_JSON)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped());
                let mut child =
                    Group::spawn(&mut command).map_err(|e| spawn_error(e.to_string()))?;
                let stdin = child.child().stdin.take().expect("piped stdin");
                let stdout = child.child().stdout.take().expect("piped stdout");
                let stderr = child.child().stderr.take().expect("piped stderr");
                drain(Box::new(stderr), Arc::clone(&output));
                (child, Input::Pipe(stdin), Box::new(stdout))
            }
            Drive::Terminal => {
                let (master, slave) = open_pty()?;
                let out = slave
                    .try_clone()
                    .map_err(|e| ProcessError::Pty(e.to_string()))?;
                let err = slave
                    .try_clone()
                    .map_err(|e| ProcessError::Pty(e.to_string()))?;
                command.stdin(slave).stdout(out).stderr(err);
                let child = Group::spawn(&mut command).map_err(|e| spawn_error(e.to_string()))?;
                // The command kept the slave ends; drop ours so that reading the master
                // ends when the CLI is gone.
                drop(command);
                let reader = master
                    .try_clone()
                    .map_err(|e| ProcessError::Pty(e.to_string()))?;
                (child, Input::Pty(master), Box::new(reader))
            }
        };
        drain(reader, Arc::clone(&output));
        Ok(ClaudeProcess {
            child,
            input: Some(input),
            output,
            drive: setup.drive,
        })
    }

    /// Whether the terminal UI showed its input box (always true in print mode).
    pub fn ready(&self) -> bool {
        self.drive == Drive::Print || self.output.lock().unwrap_or_else(|p| p.into_inner()).ready
    }

    /// Sends one user message (a prompt, or one of the terminal UI's own commands such as
    /// `/clear`): in the terminal UI typed as a person types it, Enter once the text shows.
    pub fn submit(&mut self, text: &str) -> std::io::Result<()> {
        match self.input.as_mut() {
            Some(Input::Pipe(stdin)) => {
                let line = serde_json::json!({
                    "type": "user",
                    "message": {"role": "user", "content": text},
                });
                stdin.write_all(format!("{line}\n").as_bytes())?;
                stdin.flush()
            }
            Some(Input::Pty(master)) => {
                let before = self.output.lock().unwrap_or_else(|p| p.into_inner()).total;
                master.write_all(text.as_bytes())?;
                master.flush()?;
                // Characters arriving with the Enter key in one read look like a paste,
                // where Enter is a newline: a person presses Enter once the text shows.
                let deadline = Instant::now() + Duration::from_secs(2);
                while Instant::now() < deadline {
                    let out = self.output.lock().unwrap_or_else(|p| p.into_inner());
                    if out.total > before && out.text.ends_with_text(text) {
                        break;
                    }
                    drop(out);
                    std::thread::sleep(Duration::from_millis(10));
                }
                std::thread::sleep(Duration::from_millis(100));
                let master = match self.input.as_mut() {
                    Some(Input::Pty(m)) => m,
                    _ => return Err(std::io::Error::other("the CLI was stopped")),
                };
                master.write_all(b"\r")?;
                master.flush()
            }
            None => Err(std::io::Error::other("the CLI was stopped")),
        }
    }

    /// How many bytes the CLI wrote so far (its screen changes while it works).
    pub fn written(&self) -> u64 {
        self.output.lock().unwrap_or_else(|p| p.into_inner()).total
    }

    /// How many times the terminal UI drew the line under its input box so far.
    pub fn redraws(&self) -> u64 {
        self.output
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .redraws
    }

    /// Whether nothing was drawn for `quiet`.
    pub fn quiet_for(&self, quiet: Duration) -> bool {
        let out = self.output.lock().unwrap_or_else(|p| p.into_inner());
        out.last.is_none_or(|t| t.elapsed() >= quiet)
    }

    /// Waits up to `max` for the CLI to end by itself; true when it did.
    pub fn wait_exit(&mut self, max: Duration) -> bool {
        let deadline = Instant::now() + max;
        loop {
            if self.child.exited().is_some() {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until the terminal UI wrote nothing for `quiet` (it is idle), at most `max`.
    pub fn wait_quiet(&self, quiet: Duration, max: Duration) {
        let deadline = Instant::now() + max;
        while Instant::now() < deadline {
            let last = self.output.lock().unwrap_or_else(|p| p.into_inner()).last;
            if last.is_none_or(|t| t.elapsed() >= quiet) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Presses Enter again, for a terminal UI that took the text but not the key (it does
    /// so while it is still busy starting).
    pub fn press_enter(&mut self) -> std::io::Result<()> {
        match self.input.as_mut() {
            Some(Input::Pty(master)) => {
                master.write_all(b"\r")?;
                master.flush()
            }
            _ => Ok(()),
        }
    }

    /// The exit status, if the CLI is gone.
    pub fn exited(&mut self) -> Option<String> {
        self.child.exited().map(|s| s.to_string())
    }

    /// The tail of the CLI's output, for reports.
    pub fn output(&self) -> String {
        self.output
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .text
            .clone()
    }

    /// SIGKILL to the CLI's whole process group (also when the CLI itself already ended:
    /// node children it left behind end too), then reaps it.
    pub fn kill(&mut self) {
        self.input = None;
        self.child.kill();
    }

    /// Waits up to `wait` for the terminal UI to show its input box.
    pub fn wait_ready(&mut self, wait: Duration) -> Result<(), String> {
        let deadline = Instant::now() + wait;
        while !self.ready() {
            if let Some(status) = self.exited() {
                return Err(format!("exited ({status}) while starting"));
            }
            if Instant::now() >= deadline {
                return Err(format!("showed no input box within {wait:?}"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }
}

impl Drop for ClaudeProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

fn open_pty() -> Result<(File, File), ProcessError> {
    use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
    let err = |e: rustix::io::Errno| ProcessError::Pty(e.to_string());
    let master =
        openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC).map_err(err)?;
    grantpt(&master).map_err(err)?;
    unlockpt(&master).map_err(err)?;
    let name = ptsname(&master, Vec::new()).map_err(err)?;
    let path = Path::new(std::ffi::OsStr::from_bytes(name.as_bytes()));
    // A wide terminal, so that the UI never wraps the short lines it is read by.
    let size = rustix::termios::Winsize {
        ws_row: 50,
        ws_col: 200,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    rustix::termios::tcsetwinsize(&master, size).map_err(err)?;
    let slave = File::options()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| ProcessError::Pty(format!("open {}: {e}", path.display())))?;
    Ok((File::from(master), slave))
}

use std::os::unix::ffi::OsStrExt;

/// Whether the end of a terminal's text shows `typed` (the input line, maybe followed by the
/// cursor and the box's border).
trait EndsWithText {
    fn ends_with_text(&self, typed: &str) -> bool;
}

impl EndsWithText for String {
    fn ends_with_text(&self, typed: &str) -> bool {
        let start = self.len().saturating_sub(4096);
        let start = (start..=self.len())
            .find(|&i| self.is_char_boundary(i))
            .unwrap_or(0);
        // The UI moves the cursor over blanks instead of writing them (2.1.17 shows "Do
        // taskproof request 2." as `Dotaskproofrequest2.` once the escape sequences are gone),
        // so blanks are compared on neither side.
        let tail: String = self[start..]
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        // The UI draws the cursor over the last character, so look for all but it.
        let mut probe: String = typed.chars().filter(|c| !c.is_whitespace()).collect();
        probe.pop();
        tail.contains(&probe)
    }
}

/// Reads `from` until it ends, keeping the tail (escape sequences removed) in `into`.
fn drain(mut from: Box<dyn Read + Send>, into: Arc<Mutex<Output>>) {
    std::thread::spawn(move || {
        let mut chunk = [0u8; 16384];
        let mut pending = Vec::new();
        loop {
            let n = match from.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            pending.extend_from_slice(&chunk[..n]);
            let text = strip_escapes(&pending);
            pending.clear();
            let mut out = into.lock().unwrap_or_else(|p| p.into_inner());
            out.total += n as u64;
            out.last = Some(Instant::now());
            // The marker may straddle two reads: look at it with the end of the last one.
            let mut from = out.text.len().saturating_sub(64);
            while !out.text.is_char_boundary(from) {
                from -= 1;
            }
            let around = format!("{}{text}", &out.text[from..]);
            let before = shows_input_box(&out.text[from..]);
            if shows_input_box(&around) && (!before || shows_input_box(&text)) {
                out.redraws += 1;
            }
            out.text.push_str(&text);
            if !out.ready && shows_input_box(&out.text) {
                out.ready = true;
            }
            if out.text.len() > MAX_OUTPUT {
                let mut cut = out.text.len() - MAX_OUTPUT / 2;
                while !out.text.is_char_boundary(cut) {
                    cut += 1;
                }
                out.text.drain(..cut);
            }
        }
    });
}

/// Whether the terminal UI's text shows the line under its input box (see [`READY`]),
/// blanks aside.
fn shows_input_box(text: &str) -> bool {
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    READY.iter().any(|r| compact.contains(r))
}

/// Terminal output without its control sequences (CSI, OSC and two-byte escapes), so that
/// the text the UI shows can be searched.
pub fn strip_escapes(bytes: &[u8]) -> String {
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != 0x1b {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        i += 1;
        match bytes.get(i) {
            Some(b'[') => {
                i += 1;
                while i < bytes.len() && !(0x40..=0x7e).contains(&bytes[i]) {
                    i += 1;
                }
                i += 1;
            }
            Some(b']') => {
                while i < bytes.len() && bytes[i] != 0x07 && bytes[i] != 0x1b {
                    i += 1;
                }
                i += 1;
            }
            Some(_) => i += 1,
            None => {}
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The key the CLI is given is the one its first-run answers approve (by its last 20
    /// characters, which is how Claude Code keeps approvals), onboarding is done, and the
    /// folder the CLI runs in is trusted: without any of them the terminal UI asks first.
    #[test]
    fn the_first_run_answers_approve_the_key_the_cli_is_given_and_trust_its_folder() {
        let config = tempfile::tempdir().unwrap();
        let project = config.path().join("work");
        write_first_run_answers(config.path(), &project).unwrap();
        let text = std::fs::read_to_string(config.path().join(".claude.json")).unwrap();
        let state: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(state["hasCompletedOnboarding"], true);
        let env = scripted_env(config.path(), "http://127.0.0.1:1");
        let key = env
            .iter()
            .find(|(k, _)| *k == "ANTHROPIC_API_KEY")
            .map(|(_, v)| v.to_str().unwrap().to_string())
            .unwrap();
        let approved = state["customApiKeyResponses"]["approved"]
            .as_array()
            .unwrap();
        assert_eq!(approved.len(), 1);
        assert_eq!(approved[0], key[key.len() - 20..]);
        let projects = state["projects"].as_object().unwrap();
        assert_eq!(
            projects[&*project.to_string_lossy()]["hasTrustDialogAccepted"],
            true,
            "{text}"
        );
        // A folder it cannot write to is an error naming the file, not a panic.
        let e = write_first_run_answers(&config.path().join("missing"), &project).unwrap_err();
        assert!(e.contains("missing/.claude.json"), "{e}");
    }

    /// A named list is `CLAUDE_CODE_TASK_LIST_ID`; the session's own list is the absence of
    /// it, so that the CLI keeps the list under its session id, as for most users.
    #[test]
    fn the_sessions_own_list_is_the_cli_given_no_list() {
        let config = tempfile::tempdir().unwrap();
        let setup = Setup {
            install: Installation {
                version: "2.1.112".into(),
                dir: config.path().to_path_buf(),
                program: crate::install::Executable::Node(config.path().join("cli.js")),
            },
            drive: Drive::Terminal,
            config: config.path().to_path_buf(),
            cwd: config.path().to_path_buf(),
            path: Vec::new(),
            configuration: Config::TeamsOff,
        };
        let named = environment(&setup, "shared-plan", "http://127.0.0.1:1");
        assert!(
            named
                .iter()
                .any(|(k, v)| *k == "CLAUDE_CODE_TASK_LIST_ID" && v == "shared-plan")
        );
        let own = environment(&setup, SESSION_LIST, "http://127.0.0.1:1");
        assert!(own.iter().all(|(k, _)| *k != "CLAUDE_CODE_TASK_LIST_ID"));
        assert!(own.iter().any(|(k, _)| *k == "CLAUDE_CODE_ENABLE_TASKS"));
    }

    #[test]
    fn escapes_are_removed_from_terminal_output() {
        let raw = b"\x1b[2K\x1b[1G  ? for\x1b[39m shortcuts\x1b]0;title\x07!";
        assert_eq!(strip_escapes(raw), "  ? for shortcuts!");
    }

    #[test]
    fn the_input_box_is_recognised_in_every_version_measured() {
        // 2.1.17: the line under the box, blanks written.
        assert!(shows_input_box("  ? for shortcuts  "));
        // 2.1.112: the cursor moved over the blanks.
        assert!(shows_input_box("───\r\n ?forshortcuts●high·/effort"));
        // 2.1.332: the permission mode instead of the shortcuts hint.
        assert!(shows_input_box(
            "──── ⏵⏵ auto mode on (shift+tab to cycle) · ← for agents"
        ));
        // 2.1.211 after a turn.
        assert!(shows_input_box(
            "──── ⏸ manual mode on · ctrl+t to hide tasks · ← for agents"
        ));
        // 2.1.332 in permission mode default, resumed with two tasks.
        assert!(shows_input_box(
            "──── ⏸ manual mode on 0/2 tasks done ◻a ◻b · ctrl+t to hide tasks · ← for agents"
        ));
        // The welcome banner before the box is drawn is not ready.
        assert!(!shows_input_box("Welcome to Claude Code! /help for help"));
        assert!(!shows_input_box("Tips for getting started"));
    }

    #[test]
    fn typed_text_is_found_although_the_ui_skips_its_blanks() {
        // What 2.1.17 drew for a typed prompt, escape sequences removed: the cursor moved over
        // the blanks, and it sits on the last character.
        let screen = "\u{276f}\u{a0}\r\r\n\r\n\rDotaskproofrequest2 \r      \r\r\n".to_string();
        assert!(screen.ends_with_text("Do taskproof request 2."));
        assert!(!screen.ends_with_text("Do taskproof request 3."));
        assert!(
            !"something else"
                .to_string()
                .ends_with_text("Do taskproof request 2.")
        );
    }
}
