//! What Claude Code's requests to the scripted model look like: which is the agent's turn
//! (it offers the task tools; a prompt carries [`prompt_marker`] and is not a prompt
//! suggestion), which session it names (`metadata.user_id`), and which asks for the summary
//! of `/compact` ([`SUMMARY`]). [`ClaudeCodeRecognizer`] tells the shared scripted model
//! (`taskproof_model::scripted`) so.

use serde_json::Value;

use taskproof_model::scripted::Recognizer;

/// Claude Code's requests, for [`taskproof_model::scripted::ScriptedModel::start`].
#[derive(Debug, Clone, Copy, Default)]
pub struct ClaudeCodeRecognizer;

impl Recognizer for ClaudeCodeRecognizer {
    /// Only the agent's own conversation offers the task tools; title and suggestion
    /// requests of the small model offer none.
    fn is_agent(&self, body: &Value) -> bool {
        body["tools"]
            .as_array()
            .is_some_and(|tools| tools.iter().any(|t| t["name"] == "TaskCreate"))
    }

    /// The CLI puts reminders before the prompt (and 2.1.330 the date after it); a
    /// prompt-suggestion request appends its own instruction to the conversation.
    fn is_prompt(&self, texts: &[&str], n: u64) -> bool {
        let marker = prompt_marker(n);
        texts.iter().any(|t| t.contains(&marker))
            && !texts.iter().any(|t| t.contains("[SUGGESTION MODE"))
    }

    fn session(&self, body: &Value) -> Option<String> {
        session_id(body)
    }

    fn summary(&self, body: &Value) -> Option<&'static str> {
        is_compaction(body).then_some(SUMMARY)
    }

    fn member(&self, body: &Value) -> Option<String> {
        member(body)
    }
}

/// What a teammate's conversation starts with: the prompt the lead gave it when it spawned it
/// (the `Agent` tool's `prompt`), which names the member and carries request `n`'s marker.
pub fn spawn_prompt(member: &str, n: u64) -> String {
    format!("{MEMBER_INTRO}{member}. Do {}.", prompt_marker(n))
}

const MEMBER_INTRO: &str = "You are taskproof team member ";

/// The member of an agent team whose conversation `body` is: a teammate's requests begin with
/// the spawn prompt ([`spawn_prompt`]), which the CLI delivers as the conversation's first
/// user message (wrapped in `<teammate-message teammate_id="team-lead" …>` by 2.1.276 and
/// 2.1.332). Nothing else in a teammate's requests names it: its system prompt says only
/// that it runs in a team, and `metadata.user_id` names the lead's session (with a
/// `parent_session_id`). `None` for the lead's conversation.
pub fn member(body: &Value) -> Option<String> {
    let first = body["messages"]
        .as_array()?
        .iter()
        .find(|m| m["role"] == "user")?;
    let texts: Vec<&str> = match &first["content"] {
        Value::String(s) => vec![s.as_str()],
        Value::Array(items) => items.iter().filter_map(|b| b["text"].as_str()).collect(),
        _ => Vec::new(),
    };
    texts.iter().find_map(|t| {
        let rest = &t[t.find(MEMBER_INTRO)? + MEMBER_INTRO.len()..];
        let name = &rest[..rest.find('.')?];
        (!name.is_empty()).then(|| name.to_string())
    })
}

/// The marker that makes a prompt the prompt of protocol request `n`.
pub fn prompt_marker(n: u64) -> String {
    format!("taskproof request {n}")
}

/// The summary the scripted model gives when `/compact` asks for one: an `<analysis>` and a
/// `<summary>` block, the form the compaction prompt asks for. Measured (repro/claude-code/
/// session_list_compact.py): every version from 2.1.17 to 2.1.332 takes it at once, while
/// 2.1.332 asks again when the answer is a plain `Done.`.
pub const SUMMARY: &str = "<analysis>The user asked for numbered taskproof requests; each was done with the task tools.</analysis>\n<summary>1. Primary Request and Intent: do each taskproof request with the task tools.\n2. Pending Tasks: see TaskList.\n3. Current Work: waiting for the next request.</summary>";

/// Whether a request asks for the summary of `/compact`: its last user message says "create
/// a detailed summary of the conversation" (2.1.17, which sends it with the summarising
/// system prompt and the tool Read only) or "Respond with TEXT ONLY" (2.1.112 and later,
/// with the agent's own tools and system prompt). Measured on 2.1.17, 2.1.112, 2.1.211 and
/// 2.1.332 (repro/claude-code/session_list_compact.py).
pub fn is_compaction(body: &Value) -> bool {
    let Some(last) = body["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] != "system"))
    else {
        return false;
    };
    if last["role"] != "user" {
        return false;
    }
    let texts: Vec<&str> = match &last["content"] {
        Value::String(s) => vec![s.as_str()],
        Value::Array(items) => items.iter().filter_map(|b| b["text"].as_str()).collect(),
        _ => Vec::new(),
    };
    texts.iter().any(|t| {
        t.contains("create a detailed summary of the conversation")
            || t.contains("Respond with TEXT ONLY")
    })
}

/// The session id a request names in `metadata.user_id`: a JSON object's `session_id` from
/// 2.1.112 on (`{"device_id": …, "account_uuid": …, "session_id": …}`), the part after
/// `_session_` before (2.1.17: `user_…_account__session_ID`). Measured on 2.1.17, 2.1.112,
/// 2.1.211 and 2.1.332 (repro/claude-code/session_list_where.py).
pub fn session_id(body: &Value) -> Option<String> {
    let user = body["metadata"]["user_id"].as_str()?;
    let id = match serde_json::from_str::<Value>(user) {
        Ok(v) => v["session_id"].as_str()?.to_string(),
        Err(_) => user.rsplit_once("_session_")?.1.to_string(),
    };
    (!id.is_empty()).then_some(id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(last: Value) -> Value {
        json!({"tools": [{"name": "TaskCreate"}], "messages": [last]})
    }

    /// The agent's conversation offers `TaskCreate`; its prompt carries the marker, and a
    /// prompt-suggestion request that repeats it is no prompt.
    #[test]
    fn the_agent_and_its_prompts_are_told_from_suggestions() {
        let r = ClaudeCodeRecognizer;
        let prompt = body(json!({"role": "user", "content": "Do taskproof request 3."}));
        assert!(r.is_agent(&prompt));
        assert!(!r.is_agent(&json!({"messages": prompt["messages"].clone()})));
        assert!(!r.is_agent(&json!({"tools": [{"name": "Read"}]})));
        let texts = [
            "<system-reminder>x</system-reminder>",
            "Do taskproof request 3.",
        ];
        assert!(r.is_prompt(&texts, 3));
        assert!(!r.is_prompt(&texts, 4));
        assert!(!r.is_prompt(
            &["Do taskproof request 3.", "[SUGGESTION MODE: suggest]"],
            3
        ));
    }

    /// A teammate's conversation is named by the spawn prompt it starts with, as 2.1.332
    /// delivers it; the lead's names no member.
    #[test]
    fn a_teammates_conversation_is_told_by_its_spawn_prompt() {
        let wrapped = format!(
            "<teammate-message teammate_id=\"team-lead\" summary=\"taskproof member w1\">\n{}\n</teammate-message>",
            spawn_prompt("w1", 4)
        );
        let teammate = json!({"messages": [
            {"role": "user", "content": [
                {"type": "text", "text": "<system-reminder>x</system-reminder>"},
                {"type": "text", "text": wrapped}]},
            {"role": "system", "content": "env"},
            {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
            {"role": "user", "content": [{"type": "text", "text":
                "<teammate-message teammate_id=\"team-lead\">\nDo taskproof request 7.\n</teammate-message>"}]}]});
        assert_eq!(
            ClaudeCodeRecognizer.member(&teammate).as_deref(),
            Some("w1")
        );
        let lead = body(json!({"role": "user", "content": "Do taskproof request 4."}));
        assert_eq!(ClaudeCodeRecognizer.member(&lead), None);
        assert!(spawn_prompt("w1", 4).contains(&prompt_marker(4)));
    }

    /// Both forms of `metadata.user_id` the versions send name the session id.
    #[test]
    fn the_session_id_is_read_from_either_form_of_the_user_id() {
        let v2117 = json!({"metadata": {"user_id":
            "user_3f2a_account__session_d4f7d651-3caf-4380-a09c-e1e869eb075b"}});
        assert_eq!(
            session_id(&v2117).as_deref(),
            Some("d4f7d651-3caf-4380-a09c-e1e869eb075b")
        );
        let later = json!({"metadata": {"user_id":
            "{\"device_id\":\"44\",\"account_uuid\":\"\",\"session_id\":\"a0826274-6866-4322-8944-c6b9fcf37172\"}"}});
        assert_eq!(
            session_id(&later).as_deref(),
            Some("a0826274-6866-4322-8944-c6b9fcf37172")
        );
        assert_eq!(
            session_id(&json!({"metadata": {"user_id": "user_1"}})),
            None
        );
        assert_eq!(session_id(&json!({})), None);
    }

    /// The summary request of `/compact`, in the form each version sends it, and not a
    /// prompt that merely mentions a summary.
    #[test]
    fn compaction_requests_are_recognised_in_both_forms() {
        let old = json!({"tools": [{"name": "Read"}], "messages": [
            {"role": "user", "content": "Do taskproof request 1."},
            {"role": "assistant", "content": "Done."},
            {"role": "user", "content": "Your task is to create a detailed summary of the conversation so far, …"}]});
        assert!(is_compaction(&old));
        let new = body(json!({"role": "user", "content": [
            {"type": "text", "text": "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools. …"}]}));
        assert!(is_compaction(&new));
        let with_system = json!({"messages": [
            {"role": "user", "content": [{"type": "text", "text": "CRITICAL: Respond with TEXT ONLY."}]},
            {"role": "system", "content": "env"}]});
        assert!(is_compaction(&with_system));
        let prompt = body(json!({"role": "user", "content": "Do taskproof request 3."}));
        assert!(!is_compaction(&prompt));
        assert!(SUMMARY.starts_with("<analysis>") && SUMMARY.ends_with("</summary>"));
    }
}
