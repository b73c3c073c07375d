//! `taskproof mcp` driven as a child process through an MCP client (rmcp's client side):
//! the handshake, the tool list, every tool, and every error kind the strict store answers.

use std::path::Path;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation,
};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ServiceExt, model::ContentBlock};
use serde_json::{Value, json};

use crate::util::{bin, tempdir};

pub type Client = RunningService<RoleClient, ClientConfig>;

/// A current-thread runtime for one test.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// Starts `taskproof mcp ARGS` with `env` and connects to it as the client `client_name`.
pub async fn connect(args: &[&str], env: &[(&str, &str)], client_name: &str) -> Client {
    let mut cmd = tokio::process::Command::new(bin());
    cmd.arg("mcp").args(args);
    for var in [
        "CLAUDE_CONFIG_DIR",
        "CLAUDE_CODE_TASK_LIST_ID",
        "TASKPROOF_ACTOR",
        "TASKPROOF_ROOT",
    ] {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let transport = TokioChildProcess::new(cmd).expect("start taskproof mcp");
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new(client_name, "1.0"),
    )
    .serve(transport)
    .await
    .expect("MCP handshake with taskproof mcp")
}

/// Calls `tool` with `args` and returns the result.
pub async fn call(client: &Client, tool: &'static str, args: Value) -> CallToolResult {
    let args = args.as_object().expect("arguments are an object").clone();
    client
        .call_tool(CallToolRequestParams::new(tool).with_arguments(args))
        .await
        .unwrap_or_else(|e| panic!("{tool}: the call failed at the protocol level: {e}"))
}

pub fn text(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| match c {
            ContentBlock::Text(t) => Some(t.text.clone()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The result's structured value, asserting success.
pub fn ok(r: CallToolResult) -> Value {
    assert_ne!(r.is_error, Some(true), "expected success: {}", text(&r));
    r.structured_content.expect("structured content")
}

/// The error kind of a failed result, asserting that its text tells the model the rule and
/// what to do.
pub fn err(r: CallToolResult) -> String {
    assert_eq!(r.is_error, Some(true), "expected an error: {}", text(&r));
    let t = text(&r);
    assert!(
        t.contains("Rule: ") && t.contains("What to do: "),
        "an error a model cannot act on: {t}"
    );
    let v = r.structured_content.expect("structured error");
    v["error"]["kind"].as_str().expect("kind").to_string()
}

fn task_file(root: &Path, list: &str, id: u64) -> Value {
    let bytes = std::fs::read(root.join(list).join(format!("{id}.json"))).unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

#[test]
fn mcp_lists_its_tools_with_schemas_for_a_model() {
    let dir = tempdir();
    let root = dir.path().to_str().unwrap();
    runtime().block_on(async {
        let client = connect(&["--root", root, "--list", "l"], &[], "test").await;
        let info = client.peer_info().expect("server info");
        assert_eq!(
            info.server_info.as_ref().map(|s| s.name.as_str()),
            Some("taskproof")
        );
        let tools = client.list_all_tools().await.unwrap();
        let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        names.sort_unstable();
        assert_eq!(
            names,
            [
                "task_claim",
                "task_create",
                "task_delete",
                "task_get",
                "task_list",
                "task_update"
            ]
        );
        for t in &tools {
            let desc = t.description.as_deref().unwrap_or("");
            assert!(desc.len() > 60, "{}: {desc:?}", t.name);
            let props = t.input_schema["properties"].as_object().unwrap();
            assert!(
                props.contains_key("list") && props.contains_key("actor"),
                "{}",
                t.name
            );
            for (k, p) in props {
                assert!(
                    p.get("description").is_some(),
                    "{}.{k} has no description",
                    t.name
                );
            }
        }
        // Titles and hints a client shows and uses to ask before a change: only get and
        // list are read-only; update and delete can lose what was there.
        let hints: Vec<(&str, bool, Option<bool>)> = tools
            .iter()
            .map(|t| {
                let a = t
                    .annotations
                    .as_ref()
                    .unwrap_or_else(|| panic!("{}", t.name));
                assert!(
                    a.title.as_deref().is_some_and(|x| !x.is_empty()),
                    "{} has no title",
                    t.name
                );
                (
                    t.name.as_ref(),
                    a.read_only_hint.unwrap(),
                    a.destructive_hint,
                )
            })
            .collect();
        assert_eq!(
            hints,
            [
                ("task_claim", false, Some(false)),
                ("task_create", false, Some(false)),
                ("task_delete", false, Some(true)),
                ("task_get", true, None),
                ("task_list", true, None),
                ("task_update", false, Some(true)),
            ],
            "tools in name order with their hints"
        );
        let unknown = client
            .call_tool(CallToolRequestParams::new("task_rename"))
            .await
            .expect_err("a tool that does not exist is a protocol error");
        assert!(unknown.to_string().contains("tool not found"), "{unknown}");
        let update = tools.iter().find(|t| t.name == "task_update").unwrap();
        let props = update.input_schema["properties"].as_object().unwrap();
        for k in [
            "taskId",
            "subject",
            "description",
            "activeForm",
            "status",
            "owner",
            "metadata",
            "addBlocks",
            "addBlockedBy",
            "removeBlocks",
            "removeBlockedBy",
        ] {
            assert!(props.contains_key(k), "task_update lacks {k}");
        }
        client.cancel().await.unwrap();
    });
}

#[test]
fn mcp_every_tool_works_on_claude_codes_folder() {
    let dir = tempdir();
    let config = dir.path().join("config");
    runtime().block_on(async {
        // Root and list as Claude Code chooses them.
        let client = connect(
            &["--no-fsync"],
            &[
                ("CLAUDE_CONFIG_DIR", config.to_str().unwrap()),
                ("CLAUDE_CODE_TASK_LIST_ID", "team"),
            ],
            "agent-a",
        )
        .await;
        let a = ok(call(
            &client,
            "task_create",
            json!({"subject": "Write the parser",
            "description": "d", "activeForm": "Writing the parser", "metadata": {"k": 1}}),
        )
        .await);
        assert_eq!(a["task"]["id"], "1");
        let b = ok(call(
            &client,
            "task_create",
            json!({"subject": "Test the parser",
            "blockedBy": ["1"]}),
        )
        .await);
        assert_eq!(b["task"]["blockedBy"], json!(["1"]));
        let root = config.join("tasks");
        assert_eq!(task_file(&root, "team", 1)["blocks"], json!(["2"]));

        let got = ok(call(&client, "task_get", json!({"taskId": "1"})).await);
        assert_eq!(got["task"]["activeForm"], "Writing the parser");

        // Claimed by the client's name when no owner is given.
        let c = ok(call(&client, "task_claim", json!({"taskId": "1"})).await);
        assert_eq!(c["task"]["owner"], "agent-a");
        assert_eq!(c["task"]["status"], "in_progress");

        let u = ok(call(
            &client,
            "task_update",
            json!({"taskId": 1, "status": "completed",
            "metadata": {"k": null, "done": true}, "subject": "Wrote the parser"}),
        )
        .await);
        assert_eq!(u["task"]["status"], "completed");
        assert_eq!(u["task"]["metadata"], json!({"done": true}));

        // Edge removal, which Claude Code's own tool lacks.
        let r = ok(call(
            &client,
            "task_update",
            json!({"taskId": "2", "removeBlockedBy": ["1"]}),
        )
        .await);
        assert_eq!(r["task"]["blockedBy"], json!([]));
        assert_eq!(task_file(&root, "team", 1)["blocks"], json!([]));

        // Another list by argument, with another actor.
        ok(call(
            &client,
            "task_create",
            json!({"subject": "x", "list": "other", "actor": "b"}),
        )
        .await);
        let listed = ok(call(&client, "task_list", json!({})).await);
        assert_eq!(listed["tasks"].as_array().unwrap().len(), 2);
        let other = ok(call(&client, "task_list", json!({"list": "other"})).await);
        assert_eq!(other["tasks"][0]["subject"], "x");

        ok(call(&client, "task_delete", json!({"taskId": "2"})).await);
        ok(call(&client, "task_create", json!({"subject": "y"})).await);
        // Claude Code's way of deleting.
        ok(call(
            &client,
            "task_update",
            json!({"taskId": "3", "status": "deleted"}),
        )
        .await);
        let listed = ok(call(&client, "task_list", json!({})).await);
        let ids: Vec<&str> = listed["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["1"]);
        client.cancel().await.unwrap();
    });
}

#[test]
fn mcp_every_error_kind_tells_the_model_what_to_do() {
    let dir = tempdir();
    let root = dir.path();
    runtime().block_on(async {
        let client = connect(
            &[
                "--root",
                root.to_str().unwrap(),
                "--list",
                "l",
                "--no-fsync",
            ],
            &[("TASKPROOF_ACTOR", "worker-1")],
            "test",
        )
        .await;
        ok(call(&client, "task_create", json!({"subject": "a"})).await);
        ok(call(
            &client,
            "task_create",
            json!({"subject": "b", "blockedBy": ["1"]}),
        )
        .await);

        assert_eq!(
            err(call(&client, "task_get", json!({"taskId": "9"})).await),
            "not_found"
        );
        for bad in [
            json!({"taskId": "01"}),
            json!({}),
            json!({"taskId": "1", "colour": "red"}),
            json!({"taskId": "1", "list": "../etc"}),
        ] {
            let r = call(&client, "task_get", bad.clone()).await;
            let t = text(&r);
            assert_eq!(err(r), "invalid", "{bad}");
            assert!(t.contains("argument `"), "{bad}: {t}");
        }
        let r = call(
            &client,
            "task_update",
            json!({"taskId": "1", "addBlockedBy": ["2"]}),
        )
        .await;
        let t = text(&r);
        assert_eq!(err(r), "cycle");
        assert!(t.contains("2 -> 1") || t.contains("1 -> 2"), "{t}");
        assert_eq!(
            err(call(
                &client,
                "task_update",
                json!({"taskId": "1", "addBlocks": ["7"]})
            )
            .await),
            "dangling"
        );
        let r = call(&client, "task_claim", json!({"taskId": "2"})).await;
        let t = text(&r);
        assert_eq!(err(r), "blocked");
        assert!(t.contains("unfinished task 1"), "{t}");
        // Claimed under TASKPROOF_ACTOR, then a second claim conflicts.
        let c = ok(call(&client, "task_claim", json!({"taskId": "1"})).await);
        assert_eq!(c["task"]["owner"], "worker-1");
        assert_eq!(
            err(call(&client, "task_claim", json!({"taskId": "1", "owner": "x"})).await),
            "conflict"
        );
        ok(call(
            &client,
            "task_update",
            json!({"taskId": "1", "status": "completed"}),
        )
        .await);
        assert_eq!(
            err(call(
                &client,
                "task_update",
                json!({"taskId": "1", "status": "pending"})
            )
            .await),
            "transition"
        );
        assert_eq!(
            err(call(
                &client,
                "task_update",
                json!({"taskId": "1", "status": "deleted", "subject": "x"})
            )
            .await),
            "invalid"
        );
        // A file another program broke.
        std::fs::write(root.join("l").join("5.json"), b"{not json").unwrap();
        assert_eq!(
            err(call(&client, "task_get", json!({"taskId": "5"})).await),
            "corrupt"
        );
        // A journal nobody can replay stops every operation on the list with `io`.
        std::fs::write(root.join("l").join(".journal"), b"garbage").unwrap();
        let r = call(&client, "task_list", json!({})).await;
        let t = text(&r);
        assert_eq!(err(r), "io");
        assert!(t.contains("journal is damaged"), "{t}");
        client.cancel().await.unwrap();
    });
}

#[test]
fn mcp_without_a_list_asks_for_one() {
    let dir = tempdir();
    let root = dir.path().to_str().unwrap();
    runtime().block_on(async {
        let client = connect(&["--root", root], &[], "test").await;
        let r = call(&client, "task_list", json!({})).await;
        let t = text(&r);
        assert_eq!(err(r), "invalid");
        assert!(t.contains("argument `list`"), "{t}");
        ok(call(
            &client,
            "task_create",
            json!({"subject": "a", "list": "named"}),
        )
        .await);
        client.cancel().await.unwrap();
    });
}

#[test]
fn mcp_changes_are_in_the_audit_log_with_their_actor() {
    let dir = tempdir();
    let root = dir.path();
    runtime().block_on(async {
        let client = connect(
            &[
                "--root",
                root.to_str().unwrap(),
                "--list",
                "l",
                "--no-fsync",
            ],
            &[],
            "client-x",
        )
        .await;
        ok(call(
            &client,
            "task_create",
            json!({"subject": "a", "actor": "alice"}),
        )
        .await);
        ok(call(
            &client,
            "task_create",
            json!({"subject": "b", "blockedBy": ["1"]}),
        )
        .await);
        ok(call(
            &client,
            "task_claim",
            json!({"taskId": "1", "actor": "bob"}),
        )
        .await);
        // A refused change and a read are not changes.
        err(call(&client, "task_claim", json!({"taskId": "2"})).await);
        ok(call(&client, "task_list", json!({})).await);
        ok(call(
            &client,
            "task_delete",
            json!({"taskId": "1", "actor": "alice"}),
        )
        .await);
        client.cancel().await.unwrap();
    });
    let root_s = root.to_str().unwrap();
    let log = |extra: &[&str]| -> String {
        let mut args = vec!["log", "l", "--root", root_s];
        args.extend_from_slice(extra);
        let out = crate::util::taskproof_with(&args).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let all = log(&[]);
    let lines: Vec<&str> = all.lines().collect();
    assert_eq!(lines.len(), 4, "{all}");
    assert!(
        lines[0].contains("  alice  create  task 1 created: \"a\""),
        "{all}"
    );
    // The second create also changed task 1 (its `blocks`), by the client's name.
    assert!(lines[1].contains("  client-x  create  "), "{all}");
    assert!(lines[1].contains("task 1: blocks: [] -> [\"2\"]"), "{all}");
    assert!(lines[2].contains("  bob  claim  task 1: "), "{all}");
    assert!(lines[2].contains("owner: (none) -> \"bob\""), "{all}");
    assert!(
        lines[3].contains("  alice  delete  task 1 deleted; task 2: blockedBy: [\"1\"] -> []"),
        "{all}"
    );
    assert_eq!(log(&["--actor", "alice"]).lines().count(), 2);
    assert_eq!(log(&["--task", "2"]).lines().count(), 2);
    let json_lines = log(&["--json", "--actor", "bob"]);
    let rec: Value = serde_json::from_str(json_lines.trim()).unwrap();
    assert_eq!(rec["changes"][0]["before"]["status"], "pending");
    assert_eq!(rec["changes"][0]["after"]["status"], "in_progress");
}

#[test]
fn check_verifies_the_audit_log_against_the_tasks() {
    let dir = tempdir();
    let root = dir.path();
    runtime().block_on(async {
        let client = connect(
            &[
                "--root",
                root.to_str().unwrap(),
                "--list",
                "l",
                "--no-fsync",
            ],
            &[],
            "test",
        )
        .await;
        ok(call(&client, "task_create", json!({"subject": "a"})).await);
        ok(call(&client, "task_create", json!({"subject": "b"})).await);
        ok(call(
            &client,
            "task_update",
            json!({"taskId": "2", "status": "in_progress"}),
        )
        .await);
        client.cancel().await.unwrap();
    });
    let check = || {
        let out = crate::util::taskproof_with(&["check", root.to_str().unwrap(), "--json"])
            .output()
            .unwrap();
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        let audit: Vec<String> = doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["kind"] == "audit-log")
            .map(|f| f["message"].as_str().unwrap().to_string())
            .collect();
        (out.status.code().unwrap(), audit)
    };
    assert_eq!(check(), (0, vec![]));
    // A writer that does not keep the log (as Claude Code's tools do not).
    let f = root.join("l").join("2.json");
    let mut t: Value = serde_json::from_slice(&std::fs::read(&f).unwrap()).unwrap();
    t["status"] = json!("completed");
    std::fs::write(&f, serde_json::to_vec_pretty(&t).unwrap()).unwrap();
    std::fs::remove_file(root.join("l").join("1.json")).unwrap();
    let (code, audit) = check();
    assert_eq!(code, 1);
    assert_eq!(audit.len(), 2, "{audit:?}");
    assert!(audit[0].starts_with("task 1 is gone"), "{audit:?}");
    assert!(
        audit[1].starts_with("task 2 differs from the log's last record of it (line 3)"),
        "{audit:?}"
    );
}

#[test]
fn mcp_a_list_policy_limits_who_completes_reassigns_and_deletes() {
    let dir = tempdir();
    let root = dir.path();
    runtime().block_on(async {
        let client = connect(
            &[
                "--root",
                root.to_str().unwrap(),
                "--list",
                "l",
                "--no-fsync",
            ],
            &[],
            "test",
        )
        .await;
        let as_ = |who: &str, mut v: Value| {
            v["actor"] = json!(who);
            v
        };
        ok(call(&client, "task_create", as_("lead", json!({"subject": "a"}))).await);
        ok(call(&client, "task_create", as_("lead", json!({"subject": "b"}))).await);
        ok(call(&client, "task_claim", as_("alice", json!({"taskId": "1"}))).await);
        // Off by default: anyone may reassign.
        ok(call(
            &client,
            "task_update",
            as_("bob", json!({"taskId": "1", "owner": "alice"})),
        )
        .await);
        std::fs::write(
            root.join("l").join(".policy.json"),
            br#"{"complete": "owner", "reassign": "owner", "delete": ["lead"]}"#,
        )
        .unwrap();
        let r = call(
            &client,
            "task_update",
            as_("bob", json!({"taskId": "1", "status": "completed"})),
        )
        .await;
        let t = text(&r);
        assert_eq!(err(r), "conflict");
        assert!(
            t.contains("only its owner (alice) complete task 1; you are \"bob\""),
            "{t}"
        );
        assert_eq!(
            err(call(
                &client,
                "task_update",
                as_("bob", json!({"taskId": "1", "owner": "bob"}))
            )
            .await),
            "conflict"
        );
        assert_eq!(
            err(call(&client, "task_delete", as_("alice", json!({"taskId": "2"}))).await),
            "conflict"
        );
        ok(call(
            &client,
            "task_update",
            as_("alice", json!({"taskId": "1", "status": "completed"})),
        )
        .await);
        ok(call(&client, "task_delete", as_("lead", json!({"taskId": "2"}))).await);
        // A broken policy file stops changes it would judge, naming the file.
        std::fs::write(root.join("l").join(".policy.json"), br#"{"delete": 3}"#).unwrap();
        ok(call(&client, "task_create", json!({"subject": "c"})).await);
        let r = call(&client, "task_delete", json!({"taskId": "3"})).await;
        let t = text(&r);
        assert_eq!(err(r), "io");
        assert!(t.contains(".policy.json: delete: expected"), "{t}");
        client.cancel().await.unwrap();
    });
}
