//! Reading what Claude Code says about background tasks: the result of `Bash` with
//! `run_in_background`, of the output tool (`BashOutput`, later `TaskOutput`), of the kill
//! tool (`KillBash`, `KillShell`, later `TaskStop`), and the `<task-notification>` blocks.
//! Every reader is strict: text that does not have the expected shape is an error naming
//! what was missing, never a guess.

use std::path::PathBuf;
use std::sync::LazyLock;

use regex_lite::Regex;

use taskproof_session::background::{BgKill, BgNotification, BgStarted, BgStatus};

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("a valid pattern")
}

static ID: LazyLock<Regex> =
    LazyLock::new(|| re(r"running in background with ID: ([A-Za-z0-9_-]+)"));
static FILE: LazyLock<Regex> = LazyLock::new(|| re(r"Output is being written to: (\S+)"));
static EXIT: LazyLock<Regex> = LazyLock::new(|| re(r"exit code (-?[0-9]+)"));
static FINAL: LazyLock<Regex> = LazyLock::new(|| re(r"\(status: ([a-z_]+)\)"));

/// The line versions without an output tool (2.1.277 on) append to a task's output file once
/// its shell exits: `\n[exited with code N]\n`, after whatever the command wrote (measured
/// on 2.1.277 and 2.1.332: `"boom\n"` becomes `"boom\n\n[exited with code 3]\n"`, `"x"`
/// becomes `"x\n[exited with code 0]\n"`). Returns the length of the command's own output
/// and the exit code, or None when the file does not end in the trailer.
pub fn exit_trailer(file: &[u8]) -> Option<(usize, i32)> {
    const HEAD: &[u8] = b"\n[exited with code ";
    // The trailer is short: it is looked for in the last 64 bytes only.
    let tail_from = file.len().saturating_sub(64);
    let body = file[tail_from..].strip_suffix(b"]\n")?;
    let at = body.windows(HEAD.len()).rposition(|w| w == HEAD)?;
    let code = &body[at + HEAD.len()..];
    let digits = code.strip_prefix(b"-").unwrap_or(code);
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let code = std::str::from_utf8(code).ok()?.parse().ok()?;
    Some((tail_from + at, code))
}

/// A status word of Claude Code (the five of the seed).
pub fn status(word: &str) -> Option<BgStatus> {
    Some(match word {
        "pending" => BgStatus::Pending,
        "running" => BgStatus::Running,
        "completed" => BgStatus::Completed,
        "failed" => BgStatus::Failed,
        "killed" => BgStatus::Killed,
        _ => return None,
    })
}

/// The id and output file of `Bash`'s answer to `run_in_background`.
pub fn started(text: &str) -> Result<BgStarted, String> {
    let id = ID.captures(text).map(|c| c[1].to_string()).ok_or_else(|| {
        format!("no `running in background with ID: …` in Bash's answer {text:?}")
    })?;
    let output_file = FILE.captures(text).map(|c| {
        // The sentence after the path begins with ". ".
        PathBuf::from(c[1].trim_end_matches('.'))
    });
    Ok(BgStarted { id, output_file })
}

/// The text between `<tag>` and `</tag>`, once; None when absent; an error when the tag
/// is there more than once or not closed.
fn tag<'a>(text: &'a str, name: &str) -> Result<Option<&'a str>, String> {
    let open = format!("<{name}>");
    let close = format!("</{name}>");
    let Some(start) = text.find(&open) else {
        return Ok(None);
    };
    let from = start + open.len();
    let len = text[from..]
        .find(&close)
        .ok_or_else(|| format!("<{name}> is not closed"))?;
    if text[from + len..].contains(&open) {
        return Err(format!("<{name}> appears twice"));
    }
    Ok(Some(&text[from..from + len]))
}

/// A `<task-notification>` block, strictly: `task-id` and `status` (a final status) must be
/// there once each; `output-file`, `tool-use-id` and `summary` at most once; the exit code is
/// the summary's `exit code N` when it says one.
pub fn notification(raw: &str) -> Result<BgNotification, String> {
    let body = raw
        .strip_prefix("<task-notification>")
        .and_then(|b| b.strip_suffix("</task-notification>"))
        .ok_or("not a closed <task-notification> element")?;
    let id = tag(body, "task-id")?.ok_or("no <task-id>")?.trim();
    if id.is_empty()
        || !id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(format!("task id {id:?} is not a word"));
    }
    let word = tag(body, "status")?.ok_or("no <status>")?.trim();
    let status = status(word).ok_or_else(|| format!("unknown status {word:?}"))?;
    let output_file = tag(body, "output-file")?.map(|f| PathBuf::from(f.trim()));
    tag(body, "tool-use-id")?;
    let summary = tag(body, "summary")?;
    let exit_code = match summary.and_then(|s| EXIT.captures(s)) {
        Some(c) => Some(
            c[1].parse::<i32>()
                .map_err(|e| format!("exit code {:?}: {e}", &c[1]))?,
        ),
        None => None,
    };
    Ok(BgNotification {
        id: id.to_string(),
        status,
        exit_code,
        output_file,
        raw: raw.to_string(),
    })
}

/// A tool result without the `<system-reminder>` sections the CLI appends to it (a
/// notification that arrived while the tool ran is one).
pub fn without_reminders(text: &str) -> String {
    const OPEN: &str = "<system-reminder>";
    const CLOSE: &str = "</system-reminder>";
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find(OPEN) {
        out.push_str(&rest[..start]);
        match rest[start..].find(CLOSE) {
            Some(end) => rest = &rest[start + end + CLOSE.len()..],
            None => {
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out.trim_end().to_string()
}

/// What the output tool answered, read: the status, exit code and the whole output so far
/// (`<output>` of `TaskOutput`, `<stdout>` and `<stderr>` of `BashOutput`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputRead {
    pub status: Option<BgStatus>,
    pub exit_code: Option<i32>,
    pub text: String,
    /// `TaskOutput`'s `retrieval_status` (success, timeout, not_ready), when given.
    pub retrieval: Option<String>,
}

pub fn output(text: &str) -> Result<OutputRead, String> {
    let text = &without_reminders(text);
    let status = match tag(text, "status")? {
        Some(w) => Some(status(w.trim()).ok_or_else(|| format!("unknown status {w:?}"))?),
        None => None,
    };
    let exit_code = match tag(text, "exit_code")? {
        Some(c) => Some(
            c.trim()
                .parse::<i32>()
                .map_err(|e| format!("exit code {c:?}: {e}"))?,
        ),
        None => None,
    };
    let retrieval = tag(text, "retrieval_status")?.map(|r| r.trim().to_string());
    // The tool puts a newline after the opening tag (2.1.112: `<output>\na\nb\n</output>`
    // for the output `a\nb\n`).
    let inner = |s: &str| s.strip_prefix('\n').unwrap_or(s).to_string();
    let body = match (
        tag(text, "output")?,
        tag(text, "stdout")?,
        tag(text, "stderr")?,
    ) {
        (Some(o), _, _) => inner(o),
        (None, out, err) => {
            let mut b = out.map(inner).unwrap_or_default();
            if let Some(e) = err {
                b.push_str(&inner(e));
            }
            b
        }
    };
    if status.is_none() && retrieval.is_none() {
        return Err(format!("no <status> or <retrieval_status> in {text:?}"));
    }
    Ok(OutputRead {
        status,
        exit_code,
        text: body,
        retrieval,
    })
}

/// What the kill tool answered: killed (`Successfully killed shell`, `Successfully stopped
/// task`), already final (`… is not running … (status: S)`), or not found (`No shell found`,
/// `No task found`, in the tool's words).
pub fn kill(is_error: bool, text: &str) -> Result<BgKill, String> {
    let text = &without_reminders(text);
    if text.contains("No task found") || text.contains("No shell found") {
        return Ok(BgKill::NotFound(text.trim().to_string()));
    }
    if text.contains("is not running") {
        let word = FINAL
            .captures(text)
            .map(|c| c[1].to_string())
            .ok_or_else(|| format!("`is not running` without `(status: …)`: {text:?}"))?;
        let s = status(&word).ok_or_else(|| format!("unknown status {word:?} in {text:?}"))?;
        return Ok(BgKill::AlreadyFinal(s));
    }
    let lower = text.to_ascii_lowercase();
    if !is_error
        && (lower.contains("successfully killed") || lower.contains("successfully stopped"))
    {
        return Ok(BgKill::Killed);
    }
    Err(format!(
        "an answer of the kill tool that says neither killed, not running nor not found: {text:?}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exit_trailer_is_found_only_at_the_end() {
        // What 2.1.332 left in the files of the suite's tasks.
        assert_eq!(
            exit_trailer(b"boom\n\n[exited with code 3]\n"),
            Some((5, 3))
        );
        assert_eq!(exit_trailer(b"x\n[exited with code 0]\n"), Some((1, 0)));
        assert_eq!(exit_trailer(b"\n[exited with code -1]\n"), Some((0, -1)));
        // The command's own words, or a trailer that is not last, are output.
        assert_eq!(exit_trailer(b"[exited with code 0]\n"), None);
        assert_eq!(exit_trailer(b"\n[exited with code 0]\nmore\n"), None);
        assert_eq!(exit_trailer(b"hello\n"), None);
        assert_eq!(exit_trailer(b""), None);
        // The code is an optional minus and digits, nothing else.
        assert_eq!(exit_trailer(b"\n[exited with code ]\n"), None);
        assert_eq!(exit_trailer(b"\n[exited with code 1x]\n"), None);
        assert_eq!(exit_trailer(b"\n[exited with code --1]\n"), None);
        // A code past i32, and a trailer longer than the 64 bytes looked at.
        assert_eq!(exit_trailer(b"\n[exited with code 99999999999]\n"), None);
        let long = format!("x\n[exited with code {}]\n", "0".repeat(50));
        assert_eq!(exit_trailer(long.as_bytes()), None);
        // The last of two trailers counts.
        assert_eq!(
            exit_trailer(b"\n[exited with code 1]\n\n[exited with code 2]\n"),
            Some((22, 2))
        );
    }

    #[test]
    fn bash_answers_of_each_version_give_the_id() {
        // 2.1.112
        let s = started("Command running in background with ID: b4w8e9xqv. Output is being written to: /tmp/x/tasks/b4w8e9xqv.output").unwrap();
        assert_eq!(s.id, "b4w8e9xqv");
        assert_eq!(
            s.output_file,
            Some(PathBuf::from("/tmp/x/tasks/b4w8e9xqv.output"))
        );
        // 2.1.332 adds a sentence.
        let s = started("Command running in background with ID: bbnym0llb. Output is being written to: /t/bbnym0llb.output. You will be notified when it completes.").unwrap();
        assert_eq!(s.output_file, Some(PathBuf::from("/t/bbnym0llb.output")));
        // 2.0.50 names no file.
        let s =
            started("Command running in background with ID: 258b04\n\n<system-reminder>").unwrap();
        assert_eq!((s.id.as_str(), s.output_file), ("258b04", None));
        assert!(started("Error: permission denied").is_err());
    }

    #[test]
    fn notifications_are_read_strictly() {
        let n = notification("<task-notification>\n<task-id>b4w8e9xqv</task-id>\n<tool-use-id>toolu_01</tool-use-id>\n<output-file>/t/b.output</output-file>\n<status>failed</status>\n<summary>Background command \"x\" failed with exit code 3</summary>\n</task-notification>").unwrap();
        assert_eq!(n.id, "b4w8e9xqv");
        assert_eq!(n.status, BgStatus::Failed);
        assert_eq!(n.exit_code, Some(3));
        assert_eq!(n.output_file, Some(PathBuf::from("/t/b.output")));
        let n = notification("<task-notification><task-id>a1</task-id><status>completed</status><summary>Background command \"x\" completed (exit code 0)</summary></task-notification>").unwrap();
        assert_eq!((n.status, n.exit_code), (BgStatus::Completed, Some(0)));
        for bad in [
            "<task-notification><task-id>a</task-id>",
            "<task-notification><status>completed</status></task-notification>",
            "<task-notification><task-id>a</task-id><status>done</status></task-notification>",
            "<task-notification><task-id>../a</task-id><status>killed</status></task-notification>",
            "<task-notification><task-id>a</task-id><task-id>b</task-id><status>killed</status></task-notification>",
        ] {
            assert!(notification(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn output_answers_of_both_tools_are_read() {
        let o = output("<retrieval_status>success</retrieval_status>\n\n<task_id>b1</task_id>\n\n<task_type>local_bash</task_type>\n\n<status>completed</status>\n\n<exit_code>0</exit_code>\n\n<output>\nhello\n</output>\n\n<system-reminder>\n<task-notification>\n<status>completed</status>\n</task-notification>\n</system-reminder>").unwrap();
        assert_eq!(o.status, Some(BgStatus::Completed));
        assert_eq!((o.exit_code, o.text.as_str()), (Some(0), "hello\n"));
        let o = output(
            "<status>running</status>\n\n<stdout>\nstart\n</stdout>\n\n<timestamp>t</timestamp>",
        )
        .unwrap();
        assert_eq!(
            (o.status, o.text.as_str()),
            (Some(BgStatus::Running), "start\n")
        );
        assert!(output("No task found with ID: x").is_err());
    }

    #[test]
    fn kill_answers_are_mapped() {
        assert_eq!(
            kill(false, "Successfully killed shell: 1 (sleep 5)"),
            Ok(BgKill::Killed)
        );
        assert_eq!(
            kill(
                false,
                "{\"message\":\"Successfully stopped task: b (sleep 5)\"}"
            ),
            Ok(BgKill::Killed)
        );
        assert_eq!(
            kill(
                true,
                "Shell 258b04 is not running, so cannot be killed (status: completed)"
            ),
            Ok(BgKill::AlreadyFinal(BgStatus::Completed))
        );
        assert_eq!(
            kill(
                true,
                "<tool_use_error>Task b1 is not running (status: failed)</tool_use_error>"
            ),
            Ok(BgKill::AlreadyFinal(BgStatus::Failed))
        );
        assert!(matches!(
            kill(true, "No task found with ID: x"),
            Ok(BgKill::NotFound(_))
        ));
        assert!(kill(false, "Done").is_err());
        assert!(
            kill(true, "Successfully killed shell: 1").is_err(),
            "an error is no success"
        );
    }
}
