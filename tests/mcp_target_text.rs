//! The `mcp:COMMAND` target on servers that answer text written for a model
//! (tests/fixtures/mcp/text-server.py, text-tasks-server.py) and the mapping features made
//! for such servers (docs/mcp-targets.md): patterns, status words, one server per list, whole
//! list edges, drafts from `mcp-draft`.

use std::path::Path;

use serde_json::{Value, json};
use taskproof_mcp_target::McpTarget;
use taskproof_session::Session;
use taskproof_targets::TargetSpec;

use crate::mcp_target::{fake, fake_mapping, options};
use crate::util::{Tool, bin, repo, require, taskproof_in, tempdir, write};

// the mapping features made for such servers (docs/mcp-targets.md).

fn text_server() -> String {
    format!(
        "python3 '{}'",
        repo().join("tests/fixtures/mcp/text-server.py").display()
    )
}

/// `mcp:text-server.py` with the mapping `fixture` (under tests/fixtures/mcp/), its text
/// changed by `edit` first.
fn text_target(fixture: &str, edit: &dyn Fn(String) -> String) -> (tempfile::TempDir, TargetSpec) {
    let dir = tempdir();
    let text = std::fs::read_to_string(repo().join("tests/fixtures/mcp").join(fixture)).unwrap();
    write(dir.path(), "m.toml", &edit(text));
    let t = McpTarget::parse(&text_server())
        .unwrap()
        .with_mapping(&dir.path().join("m.toml"))
        .unwrap();
    (dir, TargetSpec::from(t))
}

/// [`text_target`] opened on a fresh root: the mapping's folder, the root, the target (for a
/// second session or its hello) and the first session.
fn open_text(
    fixture: &str,
    edit: &dyn Fn(String) -> String,
) -> (
    tempfile::TempDir,
    tempfile::TempDir,
    TargetSpec,
    Box<dyn Session>,
) {
    let (mapping, target) = text_target(fixture, edit);
    let root = tempdir();
    let s = target.open(root.path(), options()).expect("opens");
    (mapping, root, target, s)
}

fn ok(s: &mut dyn Session, request: Value) -> Value {
    let answer = s.call(&request).unwrap();
    assert_eq!(answer["ok"], true, "{request} -> {answer}");
    answer
}

/// Markdown answers become wire tasks: one match's groups, several patterns, a multi-line
/// field read exactly, every match of a list completed by a get of each id, a field from a
/// second call's JSON (`also`, a pointer with `*`), metadata parsed from a string; the
/// server's random keys are wire ids 1, 2, … through the id table, also for a new session; a
/// delete whose answer is plain text is done.
#[test]
#[cfg_attr(not(taskproof_has_python), ignore = "needs python3 on PATH")]
fn a_server_that_answers_markdown_is_read_through_patterns() {
    require(&[Tool::Python]);
    let (_m, root, target, mut s) = open_text("text.toml", &|t| t);
    let body = "first line\nsecond line\n\n## not a heading, a line of the body\n\n**bold** text";
    let a = ok(
        &mut *s,
        json!({"op": "create", "list": "l", "task": {"subject": "a", "description": body,
            "metadata": {"k": [1, {"n": null}]}}}),
    );
    assert_eq!(a["task"]["id"], "1", "{a}");
    assert_eq!(a["task"]["description"], body, "read exactly: {a}");
    assert_eq!(a["task"]["metadata"], json!({"k": [1, {"n": null}]}), "{a}");
    assert_eq!(a["task"]["status"], "pending", "{a}");
    let b = ok(
        &mut *s,
        json!({"op": "create", "list": "l", "task": {"subject": "b", "blockedBy": ["1"]}}),
    );
    assert_eq!(b["task"]["id"], "2");
    assert_eq!(b["task"]["blockedBy"], json!(["1"]), "from links: {b}");
    ok(
        &mut *s,
        json!({"op": "update", "list": "l", "id": "1", "patch": {"status": "completed"}}),
    );
    // A new session on the root reads the same ids from the table.
    s.close().unwrap();
    let mut s = target.open(root.path(), options()).expect("opens again");
    let list = ok(&mut *s, json!({"op": "list", "list": "l"}));
    let tasks = list["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 2, "{list}");
    assert_eq!(tasks[0]["id"], "1");
    assert_eq!(tasks[0]["status"], "completed");
    assert_eq!(tasks[0]["blocks"], json!(["2"]), "derived: {list}");
    assert_eq!(tasks[1]["subject"], "b");
    // An id the table does not know goes to the server as given, which answers.
    let missing = s
        .call(&json!({"op": "get", "list": "l", "id": "999"}))
        .unwrap();
    assert_eq!(missing["error"]["kind"], "not_found", "{missing}");
    assert!(
        missing["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`999`"),
        "the server was asked: {missing}"
    );
    // The delete answers "Removed." (no answer table): done.
    ok(&mut *s, json!({"op": "delete", "list": "l", "id": "2"}));
    let list = ok(&mut *s, json!({"op": "list", "list": "l"}));
    assert_eq!(list["tasks"].as_array().map(Vec::len), Some(1), "{list}");
    // The book is under the root, apart from every list's data.
    assert!(root.path().join(".taskproof-mcp/ids.json").is_file());
    let hello = s.hello().clone();
    assert!(
        hello.mapping["ids"].contains("task.ids = \"table\""),
        "{hello:?}"
    );
    s.close().unwrap();
}

/// Without `server.cwd` a server works in the session's folder (the list's under
/// `server.per_list`), never in taskproof's: a server that keeps its data in its working
/// folder (the text fixture without `--data`) keeps it with the session's, and a run leaves
/// nothing where taskproof was started.
#[test]
#[cfg_attr(not(taskproof_has_python), ignore = "needs python3 on PATH")]
fn a_server_without_cwd_works_in_the_session_folder_not_taskproofs() {
    require(&[Tool::Python]);
    let no_data = |t: String| t.replace("args = [\"--data\", \"{root}/{list}\"]\n", "");
    let (_m, root, _target, mut s) = open_text("text.toml", &|t| no_data(t));
    ok(
        &mut *s,
        json!({"op": "create", "list": "a", "task": {"subject": "in a"}}),
    );
    ok(
        &mut *s,
        json!({"op": "create", "list": "b", "task": {"subject": "in b"}}),
    );
    assert!(root.path().join("a/notes.json").is_file());
    assert!(root.path().join("b/notes.json").is_file());
    s.close().unwrap();
    // One server for every list: the root.
    let one = |t: String| no_data(t).replace("per_list = true\n", "");
    let (_m, root, _target, mut s) = open_text("text.toml", &|t| one(t));
    ok(
        &mut *s,
        json!({"op": "create", "list": "a", "task": {"subject": "in a"}}),
    );
    assert!(root.path().join("notes.json").is_file());
    s.close().unwrap();
    // Through the command, started in a folder of its own: the suite's scenarios pass and
    // that folder stays empty.
    let start = tempdir();
    let dir = tempdir();
    let text = std::fs::read_to_string(repo().join("tests/fixtures/mcp/text.toml")).unwrap();
    write(dir.path(), "m.toml", &no_data(text));
    let out = taskproof_in(start.path())
        .args(["run", "--target", &format!("mcp:{}", text_server())])
        .arg("--mapping")
        .arg(dir.path().join("m.toml"))
        .args(["--filter", "lists-are-isolated"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("1 passed, 0 failed"), "{stdout}");
    let left: Vec<_> = std::fs::read_dir(start.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "written where taskproof ran: {left:?}");
}

/// `TASKPROOF_ROOT` is the session's root, also under `server.per_list` (not the list's
/// folder), and `server.env` may set it otherwise (`{root}/{list}`): the fake server writes
/// its pid into `$TASKPROOF_ROOT`.
#[test]
fn taskproof_root_is_the_root_under_per_list_unless_server_env_sets_it() {
    let dir = tempdir();
    let base = std::fs::read_to_string(fake_mapping()).unwrap();
    for (server, pid_in) in [
        ("per_list = true\n", ""),
        (
            "per_list = true\nenv = { TASKPROOF_ROOT = \"{root}/{list}\" }\n",
            "a",
        ),
    ] {
        let text = base.replace("[status]", &format!("[server]\n{server}\n[status]"));
        write(dir.path(), "m.toml", &text);
        let root = tempdir();
        let mut s = fake("ok", &dir.path().join("m.toml"))
            .open(root.path(), options())
            .expect("opens");
        let list = s.call(&json!({"op": "list", "list": "a"})).unwrap();
        assert_eq!(list["ok"], true, "{list}");
        let pid = root.path().join(pid_in).join("server.pid");
        assert!(pid.is_file(), "{server}: no {}", pid.display());
        let other = if pid_in.is_empty() { "a" } else { "" };
        assert!(
            !root.path().join(other).join("server.pid").exists(),
            "{server}"
        );
        s.close().unwrap();
    }
}

/// A server whose every answer is text for a model (tests/fixtures/mcp/text-tasks-server.py,
/// the shape issue 49 mapped: `task-N` ids, a file path named after the task beside each
/// answer, status words "To Do", "In Progress", "Done" read without case, data in its working
/// folder).
pub(crate) fn text_tasks_server(mutant: &str) -> String {
    format!(
        "python3 '{}'{mutant}",
        repo()
            .join("tests/fixtures/mcp/text-tasks-server.py")
            .display()
    )
}

/// `taskproof run` of `scenarios` against `mcp:SERVER` through `mapping`: the JSON report's
/// scenarios (what the run printed, when it wrote no report).
pub(crate) fn run_scenarios(server: &str, mapping: &Path, scenarios: &[&str]) -> Vec<Value> {
    let dir = tempdir();
    let report = dir.path().join("r.json");
    let mut cmd = taskproof_in(dir.path());
    cmd.args(["run", "--target", &format!("mcp:{server}")])
        .arg("--mapping")
        .arg(mapping);
    for s in scenarios {
        cmd.args(["--filter", s]);
    }
    let out = cmd
        .arg("--report")
        .arg(format!("json:{}", report.display()))
        .output()
        .unwrap();
    let json: Value = serde_json::from_slice(&std::fs::read(&report).unwrap_or_default())
        .unwrap_or_else(|e| {
            panic!(
                "{e}: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        });
    json["scenarios"].as_array().unwrap().clone()
}

/// Runs `scenarios` against `server` through `mapping` and answers each one's outcome.
fn outcomes(server: &str, mapping: &Path, scenarios: &[&str]) -> Vec<(String, String)> {
    run_scenarios(server, mapping, scenarios)
        .iter()
        .map(|s| {
            (
                s["id"].as_str().unwrap().to_string(),
                s["outcome"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Issue 49's done-when: a text-answering server mapped from `mcp-draft`'s output needs no
/// change to the id, list or status parts of the draft. The draft, used exactly as written,
/// passes the scenarios that judge ids (given per list, never again after a delete), lists
/// (kept apart, in id order) and status words (the wire's "done" refused although the
/// server reads it as its "Done"); and those parts judge the server: a mutant that hands out
/// a deleted task's id again fails, and without the draft's `ignore_case` the wire's "done"
/// reaches the server as its own word.
#[test]
#[cfg_attr(not(taskproof_has_python), ignore = "needs python3 on PATH")]
fn a_text_server_mapped_from_its_draft_needs_no_change_to_ids_lists_or_status() {
    require(&[Tool::Python]);
    let dir = tempdir();
    let draft = dir.path().join("draft.toml");
    let out = taskproof_in(dir.path())
        .args(["mcp-draft", &text_tasks_server(""), "--out"])
        .arg(&draft)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&draft).unwrap();
    // What the probe read: the id from the answer's header, not from the file path; text
    // patterns for get and list; every status word; the assignees an array.
    assert!(text.contains("(?P<id>task\\-\\d+)"), "{text}");
    assert!(!text.contains("answer = { task = \"/task\" }"), "{text}");
    assert!(!text.contains("answer = { tasks = \"/tasks\" }"), "{text}");
    assert!(
        text.contains("pending = \"To Do\"\nin_progress = \"In Progress\"\ncompleted = \"Done\""),
        "{text}"
    );
    assert!(text.contains("ignore_case = true"), "{text}");
    assert!(text.contains("assignee = \"{task.owner|array}\""), "{text}");
    let scenarios = [
        "rt01-basic-creation",
        "lists-are-isolated",
        "ids-never-reused-after-delete-and-restart",
        "status-outside-the-three-is-invalid",
        "nothing-vanishes-after-compact",
    ];
    let got = outcomes(&text_tasks_server(""), &draft, &scenarios);
    assert_eq!(got.len(), scenarios.len(), "{got:?}");
    for (id, outcome) in &got {
        assert_eq!(outcome, "pass", "{id}: {got:?}\n{text}");
    }
    // The id part judges the server: ids handed out again fail.
    let reused = outcomes(
        &text_tasks_server(" --reuse-ids"),
        &draft,
        &["ids-never-reused-after-delete-and-restart"],
    );
    assert_eq!(reused[0].1, "fail", "{reused:?}");
    // The status part: without ignore_case the wire's "done" is the server's "Done".
    let exact = dir.path().join("exact.toml");
    std::fs::write(&exact, text.replace("ignore_case = true\n", "")).unwrap();
    let status = outcomes(
        &text_tasks_server(""),
        &exact,
        &["status-outside-the-three-is-invalid"],
    );
    assert_eq!(status[0].1, "fail", "{status:?}");
    // A server that reads its words with their case refuses the probe's "in progress": no
    // ignore_case then.
    let out = taskproof_in(dir.path())
        .args(["mcp-draft", &text_tasks_server(" --exact-case")])
        .output()
        .unwrap();
    let exact = String::from_utf8_lossy(&out.stdout);
    assert!(!exact.contains("ignore_case = true"), "{exact}");
    assert!(
        exact.contains("# PROBE: the update refused \"in progress\""),
        "{exact}"
    );
    assert!(exact.contains("(?P<id>task\\-\\d+)"), "{exact}");
}

/// The mapping language of issue 49 through a server (tests/fixtures/mcp/text-tasks.toml):
/// an owner removed (`null`) by a call only a `when` on `"{null}"` runs, an owner given as the
/// one-element list the server keeps (`|array`) and left alone when the patch does not name
/// it, and the server's words refused in any case (`ignore_case`), the `Draft` the mapping
/// names in `refuse` included, without reaching the server.
#[test]
#[cfg_attr(not(taskproof_has_python), ignore = "needs python3 on PATH")]
fn an_owner_removed_by_null_and_server_words_refused_in_any_case() {
    require(&[Tool::Python]);
    let dir = tempdir();
    std::fs::copy(
        repo().join("tests/fixtures/mcp/text-tasks.toml"),
        dir.path().join("m.toml"),
    )
    .unwrap();
    let target = TargetSpec::from(
        McpTarget::parse(&text_tasks_server(""))
            .unwrap()
            .with_mapping(&dir.path().join("m.toml"))
            .unwrap(),
    );
    let root = tempdir();
    let mut s = target.open(root.path(), options()).expect("opens");
    let a = ok(
        &mut *s,
        json!({"op": "create", "list": "l", "task": {"subject": "a", "owner": "ann"}}),
    );
    assert_eq!(a["task"]["owner"], "ann", "{a}");
    assert_eq!(a["task"]["description"], "", "{a}");
    let renamed = ok(
        &mut *s,
        json!({"op": "update", "list": "l", "id": "1", "patch": {"subject": "b"}}),
    );
    assert_eq!(renamed["task"]["owner"], "ann", "kept: {renamed}");
    let freed = ok(
        &mut *s,
        json!({"op": "update", "list": "l", "id": "1", "patch": {"owner": null}}),
    );
    assert!(freed["task"].get("owner").is_none(), "removed: {freed}");
    assert_eq!(freed["task"]["subject"], "b", "{freed}");
    assert!(
        s.hello().mapping["update"].contains("when patch.owner is given as null"),
        "{:?}",
        s.hello().mapping
    );
    for word in ["done", "DONE", "to do", "Draft", "draft"] {
        let refused = s
            .call(&json!({"op": "update", "list": "l", "id": "1", "patch": {"status": word}}))
            .unwrap();
        assert_eq!(refused["error"]["kind"], "invalid", "{word}: {refused}");
        assert!(
            refused["error"]["message"]
                .as_str()
                .unwrap()
                .contains("one of the server's own status words"),
            "{refused}"
        );
    }
    // Nothing reached the server: the task is where it was, pending.
    let got = ok(&mut *s, json!({"op": "get", "list": "l", "id": "1"}));
    assert_eq!(got["task"]["status"], "pending", "{got}");
    let status = &s.hello().mapping["status"];
    assert!(
        status.contains("\"Draft\"") && status.contains("without case"),
        "{status}"
    );
    s.close().unwrap();
}

/// `server.per_list`: a list's server starts on the list's first use, in its own folder; a
/// list name that cannot name a folder is refused before any server starts.
#[test]
#[cfg_attr(not(taskproof_has_python), ignore = "needs python3 on PATH")]
fn one_server_per_list_starts_on_first_use() {
    require(&[Tool::Python]);
    let (_m, root, _target, mut s) = open_text("text.toml", &|t| t);
    assert!(
        std::fs::read_dir(root.path()).unwrap().next().is_none(),
        "no server yet, nothing written"
    );
    ok(
        &mut *s,
        json!({"op": "create", "list": "a", "task": {"subject": "in a"}}),
    );
    ok(
        &mut *s,
        json!({"op": "create", "list": "b", "task": {"subject": "in b"}}),
    );
    assert!(root.path().join("a/notes.json").is_file());
    assert!(root.path().join("b/notes.json").is_file());
    let b = ok(&mut *s, json!({"op": "list", "list": "b"}));
    assert_eq!(b["tasks"][0]["id"], "1", "ids are per list: {b}");
    assert_eq!(b["tasks"][0]["subject"], "in b");
    let bad = s
        .call(&json!({"op": "list", "list": "../outside"}))
        .unwrap();
    assert_eq!(bad["error"]["kind"], "invalid", "{bad}");
    assert!(!root.path().parent().unwrap().join("outside").exists());
    assert!(s.hello().mapping["lists"].contains("one server per list"));
    // Two servers ran, one per list used, and none for the refused name: the session's
    // stderr is theirs, each labelled with its list.
    let stderr = s.stderr();
    assert!(stderr.contains("[the server of list a]"), "{stderr}");
    assert!(stderr.contains("[the server of list b]"), "{stderr}");
    assert_eq!(
        stderr.matches("[the server of list ").count(),
        2,
        "{stderr}"
    );
    s.close().unwrap();
}

/// Whole-list edge updates: the list is read before it is written (`read`, `with:`,
/// `without:`), of the task's own list and of the other task's (`addBlocks`, `removeBlocks`,
/// which the fixture declares with `edges` and `edge_removal`), and hello says the mapping is
/// then not atomic.
#[test]
#[cfg_attr(not(taskproof_has_python), ignore = "needs python3 on PATH")]
fn whole_list_edges_are_read_modify_write_and_hello_says_so() {
    require(&[Tool::Python]);
    let (_m, _root, _target, mut s) = open_text("text.toml", &|t| t);
    for subject in ["a", "b", "c"] {
        ok(
            &mut *s,
            json!({"op": "create", "list": "l", "task": {"subject": subject}}),
        );
    }
    let t = ok(
        &mut *s,
        json!({"op": "update", "list": "l", "id": "3", "patch": {"addBlockedBy": ["1", "2"]}}),
    );
    assert_eq!(t["task"]["blockedBy"], json!(["1", "2"]), "{t}");
    let t = ok(
        &mut *s,
        json!({"op": "update", "list": "l", "id": "3", "patch": {"removeBlockedBy": ["1"]}}),
    );
    assert_eq!(t["task"]["blockedBy"], json!(["2"]), "{t}");
    // The other side (`addBlocks`, `removeBlocks`): the other note's list is rewritten, and
    // `blocks` is derived from every list.
    let t = ok(
        &mut *s,
        json!({"op": "update", "list": "l", "id": "1", "patch": {"addBlocks": ["2", "3"]}}),
    );
    assert_eq!(t["task"]["blocks"], json!(["2", "3"]), "{t}");
    let two = ok(&mut *s, json!({"op": "get", "list": "l", "id": "2"}));
    assert_eq!(two["task"]["blockedBy"], json!(["1"]), "{two}");
    let t = ok(
        &mut *s,
        json!({"op": "update", "list": "l", "id": "1", "patch": {"removeBlocks": ["3"]}}),
    );
    assert_eq!(t["task"]["blocks"], json!(["2"]), "{t}");
    let three = ok(&mut *s, json!({"op": "get", "list": "l", "id": "3"}));
    assert_eq!(three["task"]["blockedBy"], json!(["2"]), "{three}");
    let dangling = s
        .call(&json!({"op": "update", "list": "l", "id": "1", "patch": {"addBlocks": ["9"]}}))
        .unwrap();
    assert_eq!(dangling["error"]["kind"], "dangling", "{dangling}");
    let atomic = &s.hello().mapping["atomic"];
    assert!(atomic.starts_with("no:"), "{atomic}");
    assert!(atomic.contains("ops.update.calls[1]"), "{atomic}");
    // The answers read again after the change can show a later change of another writer.
    assert!(
        atomic.contains("ops.create, ops.update are read by a get"),
        "{atomic}"
    );
    s.close().unwrap();
}

/// A concurrent block whose lanes' requests the mapping performs by read-modify-write (the
/// text fixture's `addBlocks`: the other note's list read, then written whole) is not judged,
/// and the run says which requests and which calls; the setup block before it, whose creates
/// read nothing, is judged. Through an atomic mapping (`taskproof mcp`'s) the same scenario is
/// judged.
#[test]
#[cfg_attr(not(taskproof_has_python), ignore = "needs python3 on PATH")]
fn a_concurrent_block_the_mapping_reads_then_writes_is_not_judged() {
    require(&[Tool::Python]);
    let run = |target: &str, mapping: &Path, report: &Path| {
        let out = taskproof_in(repo())
            .args(["run", "--target", target, "--mapping"])
            .arg(mapping)
            .args(["--filter", "concurrent-edge-additions-leave-no-cycle"])
            .arg("--report")
            .arg(format!("json:{}", report.display()))
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let json: Value = serde_json::from_slice(&std::fs::read(report).unwrap())
            .unwrap_or_else(|e| panic!("{e}: {stdout}"));
        (stdout, json["scenarios"][0].clone())
    };
    let dir = tempdir();
    let (text, report) = run(
        &format!("mcp:{}", text_server()),
        &repo().join("tests/fixtures/mcp/text.toml"),
        &dir.path().join("text.json"),
    );
    assert!(
        text.contains(
            "NOT JUDGED concurrent-edge-additions-leave-no-cycle: not judged from steps[1] on: it \
             needs atomic (steps[1])"
        ),
        "{text}"
    );
    assert_eq!(report["outcome"], "not_judged", "{report}");
    assert_eq!(
        report["needs"],
        json!([{"part": "atomic", "step": 1}]),
        "{report}"
    );
    let note = report["notes"]
        .as_array()
        .and_then(|n| n.iter().find_map(|n| n.as_str()))
        .unwrap_or_else(|| panic!("no note: {report}"));
    assert!(
        note.starts_with("steps[1] (a concurrent block) is not judged"),
        "{note}"
    );
    assert!(note.contains("update with patch.addBlocks"), "{note}");
    assert!(
        note.contains("ops.update.calls[5] (edit_note read = item)"),
        "{note}"
    );
    assert!(text.contains(&format!(
        "NOTE concurrent-edge-additions-leave-no-cycle: {note}"
    )));
    let (atomic, report) = run(
        &format!("mcp:'{}' mcp", bin()),
        &repo().join("mappings/taskproof.toml"),
        &dir.path().join("atomic.json"),
    );
    assert_eq!(report["outcome"], "pass", "{atomic}");
    assert!(atomic.contains("1 passed, 0 failed"), "{atomic}");
}

/// A refusal in a result without isError is an error (`errors.detect`); a call's kind is
/// renamed by `error_kinds`; a create refused after its task was made is undone.
#[test]
#[cfg_attr(not(taskproof_has_python), ignore = "needs python3 on PATH")]
fn errors_inside_results_and_undo_of_a_refused_create() {
    require(&[Tool::Python]);
    let (_m, _root, _target, mut s) = open_text("text.toml", &|t| t);
    ok(
        &mut *s,
        json!({"op": "create", "list": "l", "task": {"subject": "a"}}),
    );
    let bad = s
        .call(&json!({"op": "update", "list": "l", "id": "1", "patch": {"status": "sideways"}}))
        .unwrap();
    assert_eq!(bad["error"]["kind"], "invalid", "{bad}");
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Error occurred"),
        "{bad}"
    );
    // `blocks` names a note that does not exist: the edit of it is refused (not_found, renamed
    // dangling) after the note was added, which is removed again.
    let refused = s
        .call(&json!({"op": "create", "list": "l", "task": {"subject": "x", "blocks": ["7"]}}))
        .unwrap();
    assert_eq!(refused["error"]["kind"], "dangling", "{refused}");
    let list = ok(&mut *s, json!({"op": "list", "list": "l"}));
    assert_eq!(
        list["tasks"].as_array().map(Vec::len),
        Some(1),
        "undone: {list}"
    );
    s.close().unwrap();
}

/// `[lists.create]`: each list is a container the server makes and names, made on the list's
/// first create; a list never written has nothing on the server and is answered so without a
/// call.
#[test]
#[cfg_attr(not(taskproof_has_python), ignore = "needs python3 on PATH")]
fn lists_as_containers_the_server_names() {
    require(&[Tool::Python]);
    let (_m, root, _target, mut s) = open_text("text-boards.toml", &|t| t);
    let empty = ok(&mut *s, json!({"op": "list", "list": "x"}));
    assert_eq!(empty["tasks"], json!([]));
    let get = s
        .call(&json!({"op": "get", "list": "x", "id": "1"}))
        .unwrap();
    assert_eq!(get["error"]["kind"], "not_found", "{get}");
    ok(
        &mut *s,
        json!({"op": "create", "list": "x", "task": {"subject": "in x"}}),
    );
    ok(
        &mut *s,
        json!({"op": "create", "list": "y", "task": {"subject": "in y"}}),
    );
    ok(
        &mut *s,
        json!({"op": "create", "list": "x", "task": {"subject": "in x too"}}),
    );
    let x = ok(&mut *s, json!({"op": "list", "list": "x"}));
    let subjects: Vec<&str> = x["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["subject"].as_str().unwrap())
        .collect();
    assert_eq!(subjects, ["in x", "in x too"], "{x}");
    let book: Value = serde_json::from_slice(
        &std::fs::read(root.path().join(".taskproof-mcp/ids.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        book["containers"],
        json!({"x": "b-1", "y": "b-2"}),
        "{book}"
    );
    s.close().unwrap();
}

/// A declared part is judged: a server that takes metadata and keeps none of it fails rt08
/// when its mapping declares metadata, passes when it keeps it, and is not judged on it when
/// the mapping does not declare it.
#[test]
#[cfg_attr(not(taskproof_has_python), ignore = "needs python3 on PATH")]
fn a_server_that_drops_declared_metadata_fails_and_undeclared_is_not_judged() {
    require(&[Tool::Python]);
    let run = |server_flag: &str, declare: bool| {
        let dir = tempdir();
        let mut text =
            std::fs::read_to_string(repo().join("tests/fixtures/mcp/text.toml")).unwrap();
        text = text.replace(
            "args = [\"--data\", \"{root}/{list}\"]",
            &format!("args = [\"--data\", \"{{root}}/{{list}}\"{server_flag}]"),
        );
        if !declare {
            text = text.replace(", \"metadata\", \"lists\"]", ", \"lists\"]");
        }
        write(dir.path(), "m.toml", &text);
        let out = taskproof_in(dir.path())
            .args([
                "run",
                "--target",
                &format!("mcp:{}", text_server()),
                "--mapping",
                "m.toml",
                "--filter",
                "rt08-metadata",
            ])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let honest = run("", true);
    assert!(honest.contains("1 passed, 0 failed"), "{honest}");
    let mutant = run(", \"--drop-metadata\"", true);
    assert!(mutant.contains("FAIL rt08-metadata"), "{mutant}");
    // The failure is the metadata the server dropped, not anything else of the step.
    // The why line, with the lines a long one is folded onto (indented under it).
    let mut lines = mutant
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("why:"));
    let first = lines
        .next()
        .and_then(|l| l.trim_start().strip_prefix("why:"))
        .unwrap_or_else(|| panic!("no why: {mutant}"));
    let why: String = std::iter::once(first.trim())
        .chain(
            lines
                .take_while(|l| l.starts_with("              "))
                .map(str::trim),
        )
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        why.starts_with("task.metadata: expected {") && why.ends_with("}, got nothing"),
        "{why}"
    );
    let undeclared = run(", \"--drop-metadata\"", false);
    assert!(
        undeclared.contains("NOT JUDGED rt08-metadata"),
        "{undeclared}"
    );
    assert!(undeclared.contains("1 not judged"), "{undeclared}");
}

/// The new keys' misuse is a usage error naming the file and the key, before any server
/// starts.
#[test]
fn misused_mapping_features_are_usage_errors_naming_the_key() {
    let cases: [(&str, &str, &str, &str); 6] = [
        ("per_list = true\n", "", "server.args[1]", "per_list"),
        (
            "ids = \"table\"",
            "ids = \"numbers\"",
            "task.ids",
            "\"server\" or \"table\"",
        ),
        (
            "each = '(?m)^- `(?P<id>[^`]+)`'",
            "each = '(?m)^- `(?P<id>[^`]+`'",
            "ops.list.answer.each",
            "does not compile",
        ),
        (
            "{ read = \"id\" },",
            "{ read = \"patch\", args = { key = \"{id}\" } },",
            "ops.update.calls[0]",
            "only reads",
        ),
        (
            "{current.blockedBy|with:id}",
            "{current.blockedBy|with:nothing}",
            "ops.create.calls[1].args.after",
            "no \"nothing\" here",
        ),
        (
            "error_kinds = { not_found = \"dangling\" }",
            "error_kinds = { not_found = \"gone\" }",
            "ops.create.calls[1].error_kinds.not_found",
            "gone",
        ),
    ];
    for (from, to, key, word) in cases {
        let dir = tempdir();
        let text = std::fs::read_to_string(repo().join("tests/fixtures/mcp/text.toml")).unwrap();
        assert!(text.contains(from), "{from}");
        write(dir.path(), "m.toml", &text.replacen(from, to, 1));
        let out = taskproof_in(dir.path())
            .args(["run", "--target", &format!("mcp:{}", text_server())])
            .args(["--mapping", "m.toml"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{key}: {stderr}");
        assert!(stderr.contains("m.toml"), "{key}: {stderr}");
        assert!(stderr.contains(key), "{key}: {stderr}");
        assert!(stderr.contains(word), "{key}: {word:?} not in {stderr}");
    }
}

/// A status the server says with a field of its view and is given as a table of arguments
/// (`[status]` tables spread, `status_from`), a condition on the task read first
/// (`unsupported_when` table), the client's refusal of a status word the server cannot be
/// given, a refusal inside a JSON result (`errors.detect` `at`), a get that picks the task from
/// a list, and a list read from Markdown inside a JSON string (`text_at`).
#[test]
#[cfg_attr(not(taskproof_has_python), ignore = "needs python3 on PATH")]
fn statuses_from_fields_conditions_and_json_refusals() {
    require(&[Tool::Python]);
    let (_m, target) = text_target("text.toml", &|t| {
        t.replace(
            "[status]\npending = \"open\"\nin_progress = \"doing\"\ncompleted = \"done\"",
            "[status]\npending = { state = \"open\" }\nin_progress = { state = \"doing\" }\ncompleted = { state = \"done\" }",
        )
        .replace(
            "parse = { metadata = \"json\" }",
            "parse = { metadata = \"json\" }\nstatus_from = [\n  { field = \"state\", equals = \"done\", status = \"completed\" },\n  { field = \"state\", equals = \"doing\", status = \"in_progress\" },\n  { status = \"pending\" },\n]",
        )
        .replace("(?P<status>\\w+)", "(?P<state>\\w+)")
        .replace("state = \"{patch.status|status}\"", "\"...\" = \"{patch.status|status}\"")
        .replace(
            "unsupported_when = [\"patch.owner\"",
            "unsupported_when = [{ \"patch.status\" = \"pending\", \"current.status\" = \"completed\" }, \"patch.owner\"",
        )
        .replace(
            "detect = [{ pattern = '^Error occurred:' }]",
            "detect = [{ pattern = '^Error occurred:' }, { at = \"/error\", kind = \"not_found\" }]",
        )
    });
    let root = tempdir();
    let mut s = target.open(root.path(), options()).expect("opens");
    ok(
        &mut *s,
        json!({"op": "create", "list": "l", "task": {"subject": "a"}}),
    );
    let t = ok(
        &mut *s,
        json!({"op": "update", "list": "l", "id": "1", "patch": {"status": "in_progress"}}),
    );
    assert_eq!(t["task"]["status"], "in_progress", "{t}");
    let t = ok(
        &mut *s,
        json!({"op": "update", "list": "l", "id": "1", "patch": {"status": "completed"}}),
    );
    assert_eq!(t["task"]["status"], "completed", "{t}");
    let back = s
        .call(&json!({"op": "update", "list": "l", "id": "1", "patch": {"status": "pending"}}))
        .unwrap();
    assert_eq!(back["error"]["kind"], "unsupported", "{back}");
    let word = s
        .call(&json!({"op": "update", "list": "l", "id": "1", "patch": {"status": "done"}}))
        .unwrap();
    assert_eq!(word["error"]["kind"], "invalid", "{word}");
    assert!(
        word["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no status words"),
        "{word}"
    );
    assert!(s.hello().mapping["status"].contains("no status words"));
    s.close().unwrap();

    // get's first call answers a missing note as {"error": ...} without isError.
    let (_m, target) = text_target("text.toml", &|t| {
        t.replace(
            "detect = [{ pattern = '^Error occurred:' }]",
            "detect = [{ pattern = '^Error occurred:' }, { at = \"/error\", kind = \"not_found\" }]",
        )
        .replace(
            "calls = [\n  { tool = \"show_note\", args = { key = \"{id}\" } },\n  { tool = \"links\", args = { key = \"{id}\" } },\n]\nanswer = { call = 0,",
            "calls = [\n  { tool = \"links\", args = { key = \"{id}\" } },\n  { tool = \"show_note\", args = { key = \"{id}\" } },\n]\nanswer = { call = 1,",
        )
        .replace("{ call = 1, at = \"/links/*/to\" }", "{ call = 0, at = \"/links/*/to\" }")
    });
    let root = tempdir();
    let mut s = target.open(root.path(), options()).expect("opens");
    let missing = s
        .call(&json!({"op": "get", "list": "l", "id": "3"}))
        .unwrap();
    assert_eq!(missing["error"]["kind"], "not_found", "{missing}");
    assert!(
        missing["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("links:"),
        "the JSON refusal: {missing}"
    );
    s.close().unwrap();

    // get through a list (no tool reads one note), the list read from a Markdown table inside
    // a JSON string.
    let (_m, target) = text_target("text-boards.toml", &|t| {
        let get = "[ops.get]\ncalls = [{ tool = \"show_note\", args = { key = \"{id}\" } }]\nanswer = { task = \"\", pattern = ['\\*\\*Key:\\*\\* `(?P<id>[^`]+)`', '(?m)^### (?P<title>[^\\n]*)$', '\\*\\*State:\\*\\* (?P<status>\\w+)'] }";
        assert!(t.contains(get), "{t}");
        t.replace(
            get,
            "[ops.get]\ncalls = [{ tool = \"list_notes\", args = { as_json = true } }]\nanswer = { text_at = \"/message\", each = '\\| `(?P<id>[^`]+)` \\| (?P<title>[^|]*) \\|', tasks = \"\" }",
        )
    });
    let root = tempdir();
    let mut s = target.open(root.path(), options()).expect("opens");
    ok(
        &mut *s,
        json!({"op": "create", "list": "x", "task": {"subject": "first"}}),
    );
    let got = ok(&mut *s, json!({"op": "get", "list": "x", "id": "1"}));
    assert_eq!(
        got["task"]["subject"].as_str().map(str::trim),
        Some("first"),
        "{got}"
    );
    let missing = s
        .call(&json!({"op": "get", "list": "x", "id": "9"}))
        .unwrap();
    assert_eq!(missing["error"]["kind"], "not_found", "{missing}");
    assert!(
        missing["error"]["message"]
            .as_str()
            .unwrap()
            .contains("in the list the server answered"),
        "{missing}"
    );
    s.close().unwrap();
}

/// A create the server acknowledged and lost before the mapping read it back (here a mutant
/// that keeps nothing) answers the task of the create's own answer (`task` beside `fetch`),
/// so that a checker sees the acknowledged change and its loss; without `task`, the read-back
/// is the answer (not_found).
#[test]
#[cfg_attr(not(taskproof_has_python), ignore = "needs python3 on PATH")]
fn a_create_lost_before_its_read_back_answers_what_was_acknowledged() {
    require(&[Tool::Python]);
    let edit = |fallback: bool| {
        move |t: String| {
            let t = t.replace(
                "args = [\"--data\", \"{root}/{list}\"]",
                "args = [\"--data\", \"{root}/{list}\", \"--lose-new\"]",
            );
            if fallback {
                t.replace(
                    "undo = { tool = \"remove_note\", args = { key = \"{id}\" } }\nanswer = { fetch = true }",
                    "undo = { tool = \"remove_note\", args = { key = \"{id}\" } }\nanswer = { fetch = true, call = 0, task = \"\", pattern = ['\\*\\*Key:\\*\\* `(?P<id>[^`]+)`', '### Note: (?P<title>[^\\n]*)'] }",
                )
            } else {
                t
            }
        }
    };
    let (_m, _root, _target, mut s) = open_text("text.toml", &edit(true));
    let t = ok(
        &mut *s,
        json!({"op": "create", "list": "l", "task": {"subject": "gone"}}),
    );
    assert_eq!(t["task"]["id"], "1", "{t}");
    assert_eq!(t["task"]["subject"], "gone", "{t}");
    let list = ok(&mut *s, json!({"op": "list", "list": "l"}));
    assert_eq!(list["tasks"], json!([]), "{list}");
    s.close().unwrap();
    let (_m, _root, _target, mut s) = open_text("text.toml", &edit(false));
    let t = s
        .call(&json!({"op": "create", "list": "l", "task": {"subject": "gone"}}))
        .unwrap();
    assert_eq!(t["error"]["kind"], "not_found", "{t}");
    s.close().unwrap();
}
