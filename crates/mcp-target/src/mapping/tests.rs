//! The model read from a mapping with some of everything; compile/ and template.rs start from
//! it too.

use std::path::Path;

use serde_json::Value;
use taskproof_core::protocol::{
    CALLS_APART, ErrorKind, Layout, Op, READ_MODIFY_WRITE, ReadModifyWrite, STATUSES,
};

use super::*;

/// A mapping with some of everything; the tests of compile/ and template.rs start from it
/// too.
pub(super) const GOOD: &str = r#"
unsupported = ["claim"]

[server]
args = ["--root", "{root}"]
layout = "claude-code"
features = ["delete", "edges"]

[status]
completed = "done"

[errors]
kind = "/error/kind"
default = "io"
text = [{ pattern = "not found", kind = "not_found" }]

[ops.create]
calls = [{ tool = "add", args = { list = "{list}", title = "{task.subject}", deps = "{task.blockedBy|ints}" } }]
answer = { task = "/task" }

[ops.get]
calls = [{ tool = "show", args = { list = "{list}", id = "{id|int}" } }]
answer = { task = "/task" }

[ops.update]
calls = [
  { tool = "show", args = { id = "{id}" } },
  { tool = "set_status", when = "patch.status", args = { id = "{id}", status = "{patch.status|status}" } },
  { tool = "dep", for_each = "patch.addBlockedBy", args = { id = "{id}", on = "{item}" } },
  { tool = "edit", args = { id = "{id}", "..." = "{patch}", note = "task {id} in {list}" } },
]
answer = { fetch = true }

[ops.delete]
calls = [{ tool = "rm", args = { id = "{id}" } }]

[ops.list]
calls = [{ tool = "ls", args = { list = "{list}" } }]
answer = { tasks = "/tasks" }
"#;

pub(super) fn parse(text: &str) -> Result<Mapping, MappingError> {
    Mapping::parse(text, Path::new("m.toml"))
}

/// The requests `hello` names read-modify-write: per call that writes with what it read,
/// the request paths it runs for; a read whose task is not used is not one.
#[test]
fn read_modify_write_requests_are_named_by_the_paths_they_run_for() {
    let text = GOOD.replace(
        "answer = { fetch = true }",
        "answer = { fetch = true }\n\n[ops.claim]\ncalls = [{ tool = \"own\", read = \"id\", \
         when = { \"current.owner\" = \"\" }, args = { id = \"{id}\", owner = \"{owner}\" } }]\n\
         answer = { task = \"/task\" }",
    );
    let text = text.replace("unsupported = [\"claim\"]", "").replace(
        "{ tool = \"show\", args = { id = \"{id}\" } },",
        "{ tool = \"show\", read = \"id\", args = { id = \"{id}\" } },\n  \
         { tool = \"note\", when = \"patch.description\", args = { id = \"{id}\", \
         was = \"{current.subject}\" } },\n  \
         { tool = \"move\", read = \"id\", when = { \"patch.status\" = \"completed\", \
         \"current.status\" = \"pending\" }, args = { id = \"{id}\" } },\n  \
         { tool = \"dep2\", for_each = \"patch.addBlocks\", read = \"item\", \
         args = { id = \"{item}\", on = \"{current.blockedBy|with:id}\" } },",
    );
    let m = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let rmw = m.read_modify_write_requests();
    assert_eq!(
        ReadModifyWrite::write_all(&rmw),
        "update with patch.addBlocks; update with patch.description; update with \
         patch.status; claim"
    );
    // A call that writes with what an earlier call read (`{current}` stays) is one too.
    assert_eq!(
        m.read_modify_write()[0],
        "ops.update.calls[1] (note, with what ops.update.calls[0] read = id)"
    );
    assert_eq!(
        m.stated()[READ_MODIFY_WRITE],
        ReadModifyWrite::write_all(&rmw)
    );
    assert!(
        !parse(GOOD)
            .unwrap()
            .stated()
            .contains_key(READ_MODIFY_WRITE)
    );
}

/// A server whose tasks are done or not done (`status_from` never gives `in_progress`)
/// says in hello which statuses it has, so it lacks the started status; one that reads
/// `in_progress` too, or has status words, says nothing.
#[test]
fn statuses_read_from_fields_without_in_progress_are_stated() {
    let done_or_not = GOOD.replace(
        "[status]",
        "[task]\nstatus_from = [{ field = \"done\", equals = true, status = \"completed\" }, \
         { status = \"pending\" }]\n\n[status]",
    );
    let m = parse(&done_or_not).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(m.statuses().as_deref(), Some("completed, pending"));
    assert_eq!(m.stated()[STATUSES], "completed, pending");
    let three = done_or_not.replace(
        "{ status = \"pending\" }",
        "{ field = \"started\", status = \"in_progress\" }, { status = \"pending\" }",
    );
    assert_eq!(parse(&three).unwrap().statuses(), None);
    assert!(!parse(GOOD).unwrap().stated().contains_key(STATUSES));
}

/// `calls_apart` names the request paths a call runs for (`for_each`) or on (`when`), so
/// the fuzzer sends them one request a call; `"none"` in `error_kinds` makes an error of
/// that kind no error for the request, and any other word is still refused.
#[test]
fn calls_apart_and_errors_that_are_none_are_read() {
    let m = parse(GOOD).unwrap();
    assert_eq!(
        ReadModifyWrite::write_all(&m.calls_apart()),
        "update with patch.addBlockedBy; update with patch.status"
    );
    assert_eq!(
        m.stated()[CALLS_APART],
        "update with patch.addBlockedBy; update with patch.status"
    );
    let none = GOOD.replace(
        "on = \"{item}\" } },",
        "on = \"{item}\" }, error_kinds = { not_found = \"none\", io = \"dangling\" } },",
    );
    let m = parse(&none).unwrap();
    let dep = &m.ops[&Op::Update].calls[2];
    assert_eq!(dep.no_error, [ErrorKind::NotFound].into_iter().collect());
    assert_eq!(dep.error_kinds[&ErrorKind::Io], ErrorKind::Dangling);
    let bad = GOOD.replace(
        "on = \"{item}\" } },",
        "on = \"{item}\" }, error_kinds = { not_found = \"nothing\" } },",
    );
    let e = parse(&bad).unwrap_err().to_string();
    assert!(
        e.contains("ops.update.calls[2].error_kinds.not_found"),
        "{e}"
    );
}

/// `status.ignore_case` and `status.refuse`: the client knows the server's own words in
/// any case (and the further words named), and reads its answers' words back without
/// case; without `ignore_case` the words are compared exactly, as before.
#[test]
fn server_status_words_are_recognised_without_case_and_refused_words_added() {
    let words = GOOD.replace(
        "completed = \"done\"",
        "pending = \"To Do\"\ncompleted = \"Done\"\nrefuse = [\"Draft\"]",
    );
    let exact = parse(&words).unwrap();
    assert!(exact.is_server_status("Done") && exact.is_server_status("Draft"));
    assert!(!exact.is_server_status("done") && !exact.is_server_status("draft"));
    assert!(!exact.is_server_status("Pending"));
    assert_eq!(exact.status_in("Done"), "completed");
    assert_eq!(exact.status_in("DONE"), "DONE");
    let any_case = parse(&words.replace("refuse =", "ignore_case = true\nrefuse =")).unwrap();
    for w in ["done", "DONE", "Done", "to do", "draft", "DRAFT"] {
        assert!(any_case.is_server_status(w), "{w}");
    }
    // in_progress goes as given: the server's word for it is the wire's, in any case.
    assert!(any_case.is_server_status("In_Progress"));
    // The wire's word for a status the server names otherwise is not the server's.
    assert!(!any_case.is_server_status("Completed"));
    assert!(!any_case.is_server_status("finished"));
    assert_eq!(any_case.status_in("done"), "completed");
    assert_eq!(any_case.status_in("TO DO"), "pending");
    assert_eq!(any_case.status_in("IN_PROGRESS"), "in_progress");
    assert_eq!(any_case.status_in("Draft"), "Draft");
    let stated = &any_case.stated()["status"];
    assert!(
        stated.contains("\"Draft\"") && stated.contains("without case"),
        "{stated}"
    );
    assert!(!exact.stated()["status"].contains("without case"));
}

/// A `when` value `"{null}"` holds when the request gives the path as null (a field
/// removed), not when the path is absent; other values do not hold for null.
#[test]
fn a_when_selects_a_field_given_as_null() {
    let text = GOOD.replace(
        "  { tool = \"edit\",",
        "  { tool = \"edit\", when = { \"patch.owner\" = \"{null}\" }, args = { id = \"{id}\", owners = [] } },\n  \
         { tool = \"edit\", when = { \"patch.owner\" = [\"{null}\", \"\"] }, args = { id = \"{id}\" } },\n  \
         { tool = \"edit\", unless = { \"patch.owner\" = \"{null}\" },",
    );
    let m = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let calls = &m.ops[&Op::Update].calls;
    let holds = |c: &Call, v: Value| c.when.iter().all(|w| w.holds(&v));
    let runs = |c: &Call, v: Value| {
        let skipped = !c.unless.is_empty() && c.unless.iter().all(|w| w.holds(&v));
        holds(c, v.clone()) && !skipped
    };
    let null = serde_json::json!({"patch": {"owner": null}});
    let absent = serde_json::json!({"patch": {"subject": "s"}});
    let given = serde_json::json!({"patch": {"owner": "a"}});
    let empty = serde_json::json!({"patch": {"owner": ""}});
    assert!(holds(&calls[3], null.clone()));
    assert!(!holds(&calls[3], absent.clone()));
    assert!(!holds(&calls[3], given.clone()));
    assert!(!holds(&calls[3], serde_json::json!({})));
    assert!(holds(&calls[4], empty) && holds(&calls[4], null.clone()));
    assert!(!holds(&calls[4], absent.clone()));
    assert!(!runs(&calls[5], null) && runs(&calls[5], absent) && runs(&calls[5], given));
    assert!(
        m.stated()["update"].contains("edit when patch.owner is given as null"),
        "{:?}",
        m.stated()
    );
}

#[test]
fn a_good_mapping_is_read() {
    let m = parse(GOOD).unwrap();
    assert_eq!(m.layout, Layout::ClaudeCode);
    assert!(m.unsupported.contains(&Op::Claim));
    assert_eq!(m.ops[&Op::Update].calls.len(), 4);
    let stated = m.stated();
    assert!(stated["claim"].starts_with("unsupported"), "{stated:?}");
    assert!(
        stated["update"].contains("set_status when patch.status"),
        "{stated:?}"
    );
}
