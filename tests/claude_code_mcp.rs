//! The real Claude Code with `taskproof mcp` as an MCP server, on the folder of its own task
//! tools: the scripted model calls the server's tools (`mcp__taskproof__*`), then Claude
//! Code's own `TaskList` reads back what the server wrote, and Claude Code's own `TaskCreate`
//! succeeds while stores with Claude Code's locks keep taking `.lock.lock` beside it.
//!
//! Needs node and npm, and Claude Code 2.1.112 in the cache (CI fills it first, as for
//! tests/claude_code.rs); `TASKPROOF_TEST_CLAUDE_CODE` picks another print-mode version.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use taskproof_claude_code::ClaudeCode;
use taskproof_claude_code::recognizer::{ClaudeCodeRecognizer, prompt_marker};
use taskproof_model::scripted::{Exchange, Reply, ScriptedModel, Turn};
use taskproof_store::{Options, StrictStore, TaskStore};

const API_KEY: &str = "sk-ant-api03-taskproof-scripted-model-0000000000000000";
const LIST: &str = "shared";
const WAIT: Duration = Duration::from_secs(180);

/// The scripted agent: each tool call answers the turn the CLI is waiting on (the prompt
/// first, then the result of the previous call) and returns the CLI's result of it.
struct Agent<'m> {
    model: &'m ScriptedModel,
    pending: Option<Exchange>,
    calls: u64,
}

impl Agent<'_> {
    fn tool(&mut self, name: &str, input: Value) -> (bool, String) {
        let ex = match self.pending.take() {
            Some(ex) => ex,
            None => self
                .model
                .next(WAIT)
                .unwrap_or_else(|_| panic!("the CLI never sent its prompt to the model")),
        };
        self.calls += 1;
        let id = format!("toolu_taskproof_{}", self.calls);
        self.model.expect_tool(&id);
        ex.answer(Reply::Tool {
            id: id.clone(),
            name: name.into(),
            input,
        });
        let next = self
            .model
            .next(WAIT)
            .unwrap_or_else(|_| panic!("no result of {name} within {WAIT:?}"));
        let Turn::Result(r) = &next.turn else {
            panic!("expected the result of {name}, got {:?}", next.turn)
        };
        assert_eq!(r.tool_use_id, id);
        let out = (r.is_error, r.text.clone());
        self.pending = Some(next);
        out
    }

    fn end(&mut self) {
        let ex = self.pending.take().expect("a turn to end");
        self.model.expect_nothing();
        ex.answer(Reply::EndTurn);
    }
}

fn task_file(root: &Path, id: &str) -> Value {
    let path = root.join(LIST).join(format!("{id}.json"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

#[test]
#[cfg_attr(not(taskproof_has_npm), ignore = "needs node and npm on PATH")]
fn claude_code_calls_the_servers_tools_and_reads_their_tasks_with_its_own() {
    crate::util::require(&[crate::util::Tool::Npm]);
    let version = std::env::var("TASKPROOF_TEST_CLAUDE_CODE").unwrap_or_else(|_| "2.1.112".into());
    let install = ClaudeCode::parse(&version)
        .expect("a version number")
        .prepare()
        .expect("install Claude Code with npm");

    let config = tempfile::tempdir().unwrap();
    let config = config.path();
    let root = config.join("tasks");
    let work = config.join("work");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    let work = work.canonicalize().unwrap();
    let key_tail = &API_KEY[API_KEY.len() - 20..];
    let state = json!({
        "hasCompletedOnboarding": true,
        "customApiKeyResponses": {"approved": [key_tail], "rejected": []},
        "projects": {work.to_string_lossy(): {"hasTrustDialogAccepted": true, "allowedTools": []}},
    });
    std::fs::write(config.join(".claude.json"), state.to_string()).unwrap();
    // The server finds the folder and list the way Claude Code does: CLAUDE_CONFIG_DIR and
    // CLAUDE_CODE_TASK_LIST_ID, which the CLI passes on to the servers it starts.
    let mcp = json!({"mcpServers": {"taskproof": {
        "type": "stdio",
        "command": env!("CARGO_BIN_EXE_taskproof"),
        "args": ["mcp"],
        "env": {"TASKPROOF_ACTOR": "mcp-agent"},
    }}});

    let model = ScriptedModel::start(ClaudeCodeRecognizer, None).unwrap();
    model.expect_prompt(1);
    let tools = [
        "mcp__taskproof__task_create",
        "mcp__taskproof__task_claim",
        "mcp__taskproof__task_update",
        "mcp__taskproof__task_list",
        "TaskCreate",
        "TaskList",
        "TaskGet",
    ]
    .join(",");
    let child = install
        .command()
        .env_clear()
        .envs([
            ("HOME", config.as_os_str()),
            ("CLAUDE_CONFIG_DIR", config.as_os_str()),
        ])
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("ANTHROPIC_BASE_URL", model.base_url())
        .env("ANTHROPIC_API_KEY", API_KEY)
        .env("CLAUDE_CODE_TASK_LIST_ID", LIST)
        .env("CLAUDE_CODE_ENABLE_TASKS", "1")
        .env("CLAUDE_CODE_ENABLE_TODO_TOOLS", "1")
        .env("ENABLE_TOOL_SEARCH", "false")
        .env("CLAUDE_CODE_ENABLE_PROMPT_SUGGESTION", "false")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_ERROR_REPORTING", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("LANG", "C.UTF-8")
        .current_dir(&work)
        .args(["--mcp-config", &mcp.to_string(), "--strict-mcp-config"])
        .args(["--allowedTools", &tools])
        .args(["-p", &format!("Plan the work. {}", prompt_marker(1))])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("start Claude Code");
    let pid = child.id();
    // Kill the CLI (and its MCP server) if the test fails half-way.
    struct KillOnDrop(u32);
    impl Drop for KillOnDrop {
        fn drop(&mut self) {
            if let Some(p) = rustix::process::Pid::from_raw(self.0 as i32) {
                let _ = rustix::process::kill_process_group(p, rustix::process::Signal::KILL);
            }
        }
    }
    let _guard = KillOnDrop(pid);

    let mut agent = Agent {
        model: &model,
        pending: None,
        calls: 0,
    };
    // The server's tools write the list.
    let (err, text) = agent.tool(
        "mcp__taskproof__task_create",
        json!({"subject": "Design the schema", "description": "tables and keys"}),
    );
    assert!(!err, "{text}");
    let (err, text) = agent.tool(
        "mcp__taskproof__task_create",
        json!({"subject": "Write the migration", "blockedBy": ["1"]}),
    );
    assert!(!err, "{text}");
    let (err, text) = agent.tool(
        "mcp__taskproof__task_claim",
        json!({"taskId": "1", "owner": "mcp-agent"}),
    );
    assert!(!err, "{text}");
    // A refusal a model can act on: a cycle.
    let (err, text) = agent.tool(
        "mcp__taskproof__task_update",
        json!({"taskId": "1", "addBlockedBy": ["2"]}),
    );
    assert!(err, "a cycle must be refused: {text}");
    assert!(text.contains("cycle"), "{text}");

    // Claude Code's own TaskList reads the server's files.
    let (err, list) = agent.tool("TaskList", json!({}));
    assert!(!err, "{list}");
    assert!(
        list.contains("#1 [in_progress] Design the schema (mcp-agent)"),
        "{list}"
    );
    assert!(
        list.contains("#2 [pending] Write the migration [blocked by #1]"),
        "{list}"
    );
    let (err, got) = agent.tool("TaskGet", json!({"taskId": "1"}));
    assert!(!err, "{got}");
    assert!(got.contains("Description: tables and keys"), "{got}");

    // Claude Code's own TaskCreate, while a store with Claude Code's locks creates tasks in
    // the same list, one every 20 ms (each holds `.lock.lock` while it writes). Not back to
    // back: a mkdir lock has no queue, and a writer that takes it again the moment it let it
    // go leaves Claude Code's 30 retries almost no moment to get in. With no pause this test
    // passed alone 8 times of 8 but failed in two full `cargo test` runs, other tests busy on
    // both cores ("Lock file is already being held", docs/mcp.md). An agent's creates are a
    // tool call apart, far more than 20 ms.
    let stop = AtomicBool::new(false);
    let made = AtomicUsize::new(0);
    let (cc_create, store_ids) = std::thread::scope(|s| {
        let busy = s.spawn(|| {
            let store = StrictStore::open(&root, Options { durable: true })
                .unwrap()
                .with_audit()
                .with_claude_code_locks();
            let mut ids = Vec::new();
            while !stop.load(Ordering::SeqCst) {
                let answer = store.handle_value(&json!({
                    "op": "create", "list": LIST, "task": {"subject": "busy"}
                }));
                let v = answer.to_json();
                assert_eq!(v["ok"], true, "{v}");
                ids.push(v["task"]["id"].as_str().unwrap().to_string());
                made.fetch_add(1, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(20));
            }
            ids
        });
        while made.load(Ordering::SeqCst) < 5 {
            std::thread::sleep(Duration::from_millis(5));
        }
        let r = agent.tool(
            "TaskCreate",
            json!({"subject": "Review the migration", "description": "by Claude Code"}),
        );
        stop.store(true, Ordering::SeqCst);
        (r, busy.join().unwrap())
    });
    let (err, text) = cc_create;
    assert!(
        !err,
        "Claude Code's TaskCreate failed beside the store: {text}"
    );
    let cc_id = text
        .split_once("Task #")
        .and_then(|(_, r)| r.split_once(' '))
        .map(|(id, _)| id.to_string())
        .unwrap_or_else(|| panic!("no id in {text:?}"));
    assert!(
        !store_ids.contains(&cc_id),
        "Claude Code and the store both created #{cc_id}"
    );
    assert!(store_ids.len() >= 5);
    assert_eq!(task_file(&root, &cc_id)["subject"], "Review the migration");

    // The end of the turn; the CLI exits.
    agent.end();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "Claude Code failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    // What the server wrote, on disk, in Claude Code's format; and its audit log.
    let one = task_file(&root, "1");
    assert_eq!(
        (one["status"].as_str(), one["owner"].as_str()),
        (Some("in_progress"), Some("mcp-agent"))
    );
    assert_eq!(one["blocks"], json!(["2"]));
    assert_eq!(task_file(&root, "2")["blockedBy"], json!(["1"]));
    let log = Command::new(env!("CARGO_BIN_EXE_taskproof"))
        .args(["log", LIST, "--root"])
        .arg(&root)
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&log.stdout);
    assert!(log.contains("mcp-agent"), "{log}");
}
