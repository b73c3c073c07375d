//! The compiler's errors, each naming the file and the key.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::mapping::DetectHow;
use crate::mapping::tests::{GOOD, parse};

/// Each bad input is an error naming the file and the key.
#[test]
fn bad_mappings_name_the_file_and_key() {
    let cases: Vec<(String, &str, &str)> = vec![
        (
            GOOD.replace("layout = \"claude-code\"", "layout = 3"),
            "(toml)",
            "layout",
        ),
        (
            GOOD.replace("[server]", "[server]\nport = 1"),
            "(toml)",
            "port",
        ),
        (
            GOOD.replace("[server]", "[server]\nreuse = false"),
            "server.reuse",
            "server.per_list",
        ),
        (
            GOOD.replace("layout = \"claude-code\"", "layout = \"flat\""),
            "server.layout",
            "flat",
        ),
        (
            GOOD.replace("\"not found\"", "\"not (found\""),
            "errors.text[0].pattern",
            "compile",
        ),
        (
            GOOD.replace("kind = \"not_found\"", "kind = \"gone\""),
            "errors.text[0].kind",
            "gone",
        ),
        (
            GOOD.replace("{task.subject}", "{patch.subject}"),
            "ops.create.calls[0].args.title",
            "patch",
        ),
        (
            GOOD.replace("\"...\" = \"{patch}\"", "\"...\" = \"{task}\""),
            "ops.update.calls[3].args.\"...\"",
            "no \"task\" here",
        ),
        (
            GOOD.replace("{id|int}", "{id|hex}"),
            "ops.get.calls[0].args.id",
            "hex",
        ),
        (
            GOOD.replace("{item}", "{list"),
            "ops.update.calls[2].args.on",
            "without",
        ),
        (
            GOOD.replace("unsupported = [\"claim\"]", ""),
            "ops.claim",
            "missing",
        ),
        (
            GOOD.replace("[\"claim\"]", "[\"claim\", \"get\"]"),
            "unsupported[1]",
            "both",
        ),
        (
            GOOD.replace("answer = { tasks = \"/tasks\" }", ""),
            "ops.list.answer.tasks",
            "missing",
        ),
        // `each` makes the document an array; a list still names it (`tasks = ""`).
        (
            GOOD.replace("answer = { tasks = \"/tasks\" }", "answer = { each = '- (?P<id>\\d+)' }"),
            "ops.list.answer.tasks",
            "missing",
        ),
        // `[task.parse]` keys are wire fields (read after `[task.fields]` renames).
        (
            GOOD.replace("[status]", "[task]\nfields = { blockedBy = \"deps\" }\nparse = { deps = \"json\" }\n\n[status]"),
            "task.parse.deps",
            "not a wire task field",
        ),
        (
            GOOD.replace(
                "answer = { tasks = \"/tasks\" }",
                "answer = { tasks = \"tasks\" }",
            ),
            "ops.list.answer.tasks",
            "pointer",
        ),
        (
            GOOD.replace(
                "features = [\"delete\", \"edges\"]",
                "features = [\"delete\", \"claim\"]",
            ),
            "unsupported[0]",
            "declares claim but answers claim unsupported",
        ),
        (
            GOOD.replace(
                "answer = { fetch = true }\n",
                "answer = { fetch = true }\nunsupported_when = [\"patch.owner\", \"patch.addBlocks\"]\n",
            ),
            "ops.update.unsupported_when[1]",
            "declares edges but answers patch.addBlocks unsupported",
        ),
        (
            GOOD.replace("[\"delete\", \"edges\"]", "[\"delete\", \"atomic\"]"),
            "server.features[1]",
            "atomic is not declared",
        ),
        (
            GOOD.replace("[status]\ncompleted", "[status]\ndone"),
            "status.done",
            "wire status",
        ),
        (
            GOOD.replace("[ops.delete]", "[ops.hello]\ncalls = []\n[ops.delete]"),
            "ops.hello",
            "initialize",
        ),
        (
            GOOD.replace("default = \"io\"", "default = \"io\"\ndetect = [{ is = 1 }]"),
            "errors.detect[0]",
            "either `at`",
        ),
        (
            GOOD.replace(
                "default = \"io\"",
                "default = \"io\"\ndetect = [{ pattern = 'x', is = 1 }]",
            ),
            "errors.detect[0].is",
            "pattern",
        ),
        (
            GOOD.replace(
                "[status]",
                "[task]\nstatus_from = [{ status = \"done\" }]\n\n[status]",
            ),
            "task.status_from[0].status",
            "wire status",
        ),
        (
            GOOD.replace(
                "[status]",
                "[task]\nstatus_from = [{ status = \"pending\" }, { field = \"x\", status = \"completed\" }]\n\n[status]",
            ),
            "task.status_from[0]",
            "last",
        ),
        (
            GOOD.replace("[status]", "[task]\nparse = { owner = \"yaml\" }\n\n[status]"),
            "task.parse.owner",
            "json",
        ),
        (
            GOOD.replace(
                "[status]",
                "[lists]\ncreate = { tool = \"mk\", args = { name = \"{list}\" } }\n\n[status]",
            ),
            "lists.create.id",
            "missing",
        ),
        (
            GOOD.replace("completed = \"done\"", "completed = 3"),
            "status.completed",
            "table of arguments",
        ),
        (
            GOOD.replace("completed = \"done\"", "completed = \"done\"\nignore_case = \"yes\""),
            "status.ignore_case",
            "expected true or false",
        ),
        (
            GOOD.replace("completed = \"done\"", "completed = \"done\"\nrefuse = \"Draft\""),
            "status.refuse",
            "a list of the server's status words",
        ),
        (
            GOOD.replace("completed = \"done\"", "completed = \"done\"\nrefuse = [\"Draft\", 3]"),
            "status.refuse[1]",
            "non-empty string",
        ),
        (
            GOOD.replace(
                "completed = \"done\"",
                "completed = \"done\"\nignore_case = true\nrefuse = [\"Draft\", \"Pending\"]",
            ),
            "status.refuse[1]",
            "is a wire status",
        ),
        (
            GOOD.replace("completed = \"done\"", "completed = \"done\"\nignore_cases = true"),
            "status.ignore_cases",
            "ignore_case and refuse",
        ),
        (
            GOOD.replace(
                "{ tool = \"set_status\", when = \"patch.status\",",
                "{ tool = \"set_status\", when = { \"patch.status\" = \"{nul}\" },",
            ),
            "ops.update.calls[1].when.\"patch.status\"",
            "no \"nul\" here",
        ),
        (
            GOOD.replace(
                "answer = { tasks = \"/tasks\" }",
                "answer = { tasks = \"/tasks\", pattern = 'a', each = 'b' }",
            ),
            "ops.list.answer.each",
            "exclude",
        ),
        (
            GOOD.replace(
                "answer = { tasks = \"/tasks\" }",
                "answer = { tasks = \"/tasks\", section = '## x' }",
            ),
            "ops.list.answer.section",
            "neither",
        ),
        (
            GOOD.replace(
                "calls = [{ tool = \"rm\", args = { id = \"{id}\" } }]",
                "calls = [{ tool = \"rm\", args = { id = \"{id}\" } }]\nundo = { tool = \"rm\" }",
            ),
            "ops.delete.undo",
            "needs a call with `id`",
        ),
        (
            GOOD.replace(
                "{ tool = \"set_status\", when = \"patch.status\",",
                "{ tool = \"set_status\", when = { \"patch.status\" = \"{current.status}\" },",
            ),
            "ops.update.calls[1].when.\"patch.status\"",
            "no \"current\" here",
        ),
        (
            GOOD.replace("answer = { task = \"/task\" }\n\n[ops.get]", "answer = { task = \"/task\", also = { colour = { at = \"/c\" } } }\n\n[ops.get]"),
            "ops.create.answer.also.colour",
            "wire task field",
        ),
        (
            GOOD.replace("[\"claim\"]", "[\"claim\", \"get\"]").replace(
                "[ops.get]\ncalls = [{ tool = \"show\", args = { list = \"{list}\", id = \"{id|int}\" } }]\nanswer = { task = \"/task\" }\n",
                "",
            ),
            "ops.get",
            "ops.update's fetch",
        ),
    ];
    for (text, key, word) in cases {
        let e = parse(&text).expect_err(key);
        assert_eq!(e.file, "m.toml");
        assert_eq!(e.key, key, "{e}");
        let shown = e.to_string();
        assert!(shown.contains(word), "{key}: {shown}");
        assert!(shown.starts_with("m.toml: "), "{shown}");
    }
}

/// `"{null}"` is JSON null where the file gives a value to compare with: `errors.detect`'s
/// `is` (as `status_from`'s `equals`, template.rs), not the text "{null}".
#[test]
fn null_in_detect_is_json_null() {
    let m = parse(&GOOD.replace(
        "default = \"io\"",
        "default = \"io\"\ndetect = [{ at = \"/error\", is = [\"{null}\", false] }]",
    ))
    .unwrap();
    match &m.errors.detect[0].how {
        DetectHow::At(p, Some(values)) => {
            assert_eq!(p, "/error");
            assert_eq!(values, &[Value::Null, Value::Bool(false)]);
        }
        other => panic!("{other:?}"),
    }
}

/// A request the mapping answers `unsupported` may need a part the mapping does not
/// declare (its step is then not judged), or none at all; not only declared parts.
#[test]
fn unsupported_requests_that_need_an_undeclared_part_are_fine() {
    for when in [
        // edges and edge_removal: edge_removal is not declared.
        "[\"patch.removeBlocks\"]",
        // owner, metadata: not declared.
        "[\"patch.owner\", \"patch.metadata.k\"]",
        // A condition on values, not a part: not judged here.
        "[{ \"patch.status\" = \"pending\" }]",
        // No part at all: the refusal is judged, as the mapping says.
        "[\"patch.subject\"]",
    ] {
        let text = GOOD.replace(
            "answer = { fetch = true }\n",
            &format!("answer = {{ fetch = true }}\nunsupported_when = {when}\n"),
        );
        parse(&text).unwrap_or_else(|e| panic!("{when}: {e}"));
    }
}

#[test]
fn tools_and_arguments_are_checked_against_the_server() {
    let m = parse(GOOD).unwrap();
    let schema = |props: &[&str]| {
        json!({"type": "object", "properties":
            props.iter().map(|p| (p.to_string(), json!({}))).collect::<Map<_, _>>()})
    };
    let mut tools: BTreeMap<String, Value> = [
        ("add", schema(&["list", "title", "deps"])),
        ("show", json!({"type": "object"})),
        ("set_status", schema(&["id", "status"])),
        ("dep", schema(&["id", "on"])),
        ("edit", schema(&["id", "note"])),
        ("rm", schema(&["id"])),
        ("ls", schema(&["list"])),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    m.check_tools(&tools).unwrap();
    tools.remove("rm");
    let e = m.check_tools(&tools).unwrap_err();
    assert_eq!(e.key, "ops.delete.calls[0].tool");
    assert!(e.message.contains("no tool \"rm\""), "{e}");
    tools.insert("rm".into(), schema(&["taskId"]));
    let e = m.check_tools(&tools).unwrap_err();
    assert_eq!(e.key, "ops.delete.calls[0].args.id");
    assert!(e.message.contains("taskId"), "{e}");
}
