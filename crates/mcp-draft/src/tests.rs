//! The draft's choices, patterns and text, on tool lists and answers given here.

use std::collections::BTreeMap;
use std::path::Path;

use regex_lite::Regex;
use serde_json::{Value, json};
use taskproof_core::protocol::Op;
use taskproof_mcp_target::mapping::Mapping;

use crate::choose::*;
use crate::draft::PROBE_SUBJECT;
use crate::patterns::*;
use crate::probe::*;
use crate::render::*;

#[test]
fn tool_names_are_split_into_words() {
    assert_eq!(words("add_task"), ["add", "task"]);
    assert_eq!(words("getTasks"), ["get", "tasks"]);
    assert_eq!(words("set-task-status"), ["set", "task", "status"]);
}

fn best(names: &[&str], op: Op) -> Option<String> {
    let tools: BTreeMap<String, (String, Value)> = names
        .iter()
        .map(|n| (n.to_string(), (String::new(), json!({"type": "object"}))))
        .collect();
    choose(&tools).get(&op).map(|c| c.tool.clone())
}

#[test]
fn task_masters_tools_are_guessed_as_a_person_would() {
    let names = [
        "add_task",
        "get_task",
        "get_tasks",
        "update_task",
        "set_task_status",
        "remove_task",
        "add_dependency",
        "next_task",
        "add_subtask",
    ];
    assert_eq!(best(&names, Op::Create).as_deref(), Some("add_task"));
    assert_eq!(best(&names, Op::Get).as_deref(), Some("get_task"));
    assert_eq!(best(&names, Op::List).as_deref(), Some("get_tasks"));
    assert_eq!(best(&names, Op::Update).as_deref(), Some("update_task"));
    assert_eq!(best(&names, Op::Delete).as_deref(), Some("remove_task"));
    assert_eq!(best(&names, Op::Claim), None);
}

/// What the first drafts of issue 41 got wrong: a tool that removes another kind of
/// record taken for delete, the next task for get; the tool names naming a task win.
#[test]
fn tools_whose_names_name_a_task_are_preferred() {
    let ohno = [
        "delete_epic_handoffs",
        "archive_task",
        "get_task",
        "get_next_task",
        "create_task",
    ];
    assert_eq!(best(&ohno, Op::Delete).as_deref(), Some("archive_task"));
    assert_eq!(best(&ohno, Op::Get).as_deref(), Some("get_task"));
    let kazuph = [
        "get_next_task",
        "open_task_details",
        "add_tasks_to_request",
        "delete_task",
    ];
    assert_eq!(best(&kazuph, Op::Get).as_deref(), Some("open_task_details"));
    assert_eq!(
        best(&kazuph, Op::Create).as_deref(),
        Some("add_tasks_to_request")
    );
    assert_eq!(best(&["delete_epic_handoffs"], Op::Delete), None);
}

/// A tool that takes the operation as an enum value (`manage {operation: create,
/// containerType: task}`) is chosen with those constants; a boolean `delete` argument
/// makes an update tool the delete.
#[test]
fn operations_named_by_an_argument_enum_are_chosen() {
    let tools: BTreeMap<String, (String, Value)> = [
        (
            "manage_container",
            json!({"type": "object", "properties": {
            "operation": {"type": "string", "enum": ["create", "update", "delete"]},
            "containerType": {"type": "string", "enum": ["project", "feature", "task"]},
            "title": {"type": "string"}, "id": {"type": "string"}}}),
        ),
        (
            "query_container",
            json!({"type": "object", "properties": {
            "operation": {"type": "string", "enum": ["get", "search", "overview"]},
            "containerType": {"type": "string", "enum": ["project", "task"]},
            "id": {"type": "string"}}}),
        ),
        ("get_next_task", json!({"type": "object"})),
        (
            "manage_sections",
            json!({"type": "object", "properties": {
            "operation": {"type": "string", "enum": ["add", "update", "delete"]},
            "entityType": {"type": "string", "enum": ["PROJECT", "TASK"]}}}),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), (String::new(), v)))
    .collect();
    let c = choose(&tools);
    assert_eq!(c[&Op::Create].tool, "manage_container");
    // The sections of a task have the same operations: the tool that made the task wins.
    assert_eq!(c[&Op::Update].tool, "manage_container");
    assert_eq!(
        c[&Op::Create].consts,
        [
            ("operation".to_string(), json!("create")),
            ("containerType".to_string(), json!("task"))
        ]
    );
    assert_eq!(c[&Op::Get].tool, "query_container");
    assert_eq!(c[&Op::List].tool, "query_container");
    assert_eq!(c[&Op::List].consts[0].1, json!("search"));
    let text = render("srv", "srv", "1", &tools);
    let m = Mapping::parse(&text, Path::new("d.toml")).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(m.ops[&Op::Delete].calls[0].tool, "manage_container");
    assert!(
        text.contains("operation = \"delete\", containerType = \"task\""),
        "{text}"
    );
    let dex: BTreeMap<String, (String, Value)> = [(
        "update_task".to_string(),
        (
            String::new(),
            json!({"type": "object", "properties": {
            "id": {"type": "string"}, "delete": {"type": "boolean"}}}),
        ),
    )]
    .into_iter()
    .collect();
    let c = choose(&dex);
    assert_eq!(c[&Op::Delete].consts, [("delete".to_string(), json!(true))]);
}

#[test]
fn a_draft_parses_and_marks_its_guesses() {
    let schema = |props: &[&str], required: &[&str]| {
        json!({"type": "object", "required": required, "properties":
            props.iter().map(|p| (p.to_string(), json!({"type": "string"})))
                .collect::<serde_json::Map<_, _>>()})
    };
    let mut tools: BTreeMap<String, (String, Value)> = [
        (
            "task_create",
            schema(&["list", "subject", "blockedBy"], &["subject"]),
        ),
        ("task_get", schema(&["list", "taskId"], &["taskId"])),
        (
            "task_update",
            schema(&["list", "taskId", "status", "weird"], &["taskId"]),
        ),
        ("task_list", schema(&["list"], &[])),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), ("does things".to_string(), v)))
    .collect();
    tools.get_mut("task_update").unwrap().1["properties"]["status"]["enum"] =
        json!(["todo", "doing", "done"]);
    let text = render("srv", "srv", "1", &tools);
    let m = Mapping::parse(&text, Path::new("d.toml")).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert!(m.unsupported.contains(&Op::Delete) && m.unsupported.contains(&Op::Claim));
    assert_eq!(m.ops[&Op::Get].calls[0].tool, "task_get");
    assert!(text.contains("taskId = \"{id}\""), "{text}");
    assert!(
        text.contains("status = \"{patch.status|status}\""),
        "{text}"
    );
    assert!(
        text.contains("# CHECK: arguments with no guess: weird"),
        "{text}"
    );
    // A tool takes the list: several lists, per call. A tool takes dependencies, but with no
    // probe no answer showed them: no edges, and a CHECK says what to declare.
    assert!(text.contains("features = [\"lists\"]"), "{text}");
    assert!(
        text.contains("no answer the probe saw shows them: add \"edges\""),
        "{text}"
    );
    assert!(text.contains("task_update: does things"), "{text}");
    // The status words from the schema's enum.
    assert!(
        text.contains("pending = \"todo\"\nin_progress = \"doing\"\ncompleted = \"done\""),
        "{text}"
    );
}

/// A server with no tool to read one task: the probe found the new task's id and a list
/// of ids, but nothing can read a task again, so the draft fetches nothing (the checker
/// refuses a fetch without [ops.get], and the draft is read back through it).
#[test]
fn without_a_get_tool_the_draft_fetches_nothing() {
    let schema = json!({"type": "object", "properties": {"title": {"type": "string"}}});
    let tools: BTreeMap<String, (String, Value)> = [
        ("add_task", schema.clone()),
        ("list_tasks", json!({"type": "object"})),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), (String::new(), v)))
    .collect();
    let chosen = choose(&tools);
    assert!(!chosen.contains_key(&Op::Get), "{chosen:?}");
    let learned: BTreeMap<Op, Learned> = [
        (
            Op::Create,
            Learned {
                tool: "add_task".into(),
                id: Some(("/id".into(), Some("(?P<id>[a-z]+-\\d+)".into()))),
                answer: Some("answer = { fetch = true }".into()),
                ..Learned::default()
            },
        ),
        (
            Op::List,
            Learned {
                tool: "list_tasks".into(),
                answer: Some(
                    "answer = { each = '(?P<id>[a-z]+-\\d+)', tasks = \"\", fetch = true }".into(),
                ),
                ..Learned::default()
            },
        ),
    ]
    .into_iter()
    .collect();
    let text = render_with("srv", "srv", "1", &tools, &chosen, &learned);
    let m = Mapping::parse(&text, Path::new("d.toml")).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert!(m.ops.values().all(|o| !o.answer.fetch), "{text}");
    assert!(text.contains("no tool was chosen for get"), "{text}");
}

/// The recorded tools/list and answers of a text-answering server
/// (tests/fixtures/mcp/text-tasks-answers.json).
fn recorded() -> Value {
    serde_json::from_str(include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/mcp/text-tasks-answers.json"
    )))
    .expect("the fixture is JSON")
}

fn answer(name: &str) -> String {
    recorded()["answers"][name]
        .as_str()
        .unwrap_or_else(|| panic!("no answer {name}"))
        .to_string()
}

/// What `patterns` read from `text`, as a mapping's `pattern` list reads it.
fn read(patterns: &[String], text: &str, each: bool) -> Value {
    let res: Vec<Regex> = patterns
        .iter()
        .map(|p| Regex::new(p).unwrap_or_else(|e| panic!("{p}: {e}")))
        .collect();
    let how = if each {
        taskproof_mcp_target::mapping::TextHow::Each(res[0].clone())
    } else {
        taskproof_mcp_target::mapping::TextHow::One(res)
    };
    taskproof_mcp_target::text::read(
        &taskproof_mcp_target::mapping::TextRead { section: None, how },
        text,
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// Issue 49: the id of a create answer is the one its header gives (`Created task
/// task-1`), not the id-like token inside the file path beside it (`…/task-1 -
/// taskproof-probe-task-7f3a.md` holds `task-7f3a`, the probe subject's slug); and the
/// pattern finds the id of another task's answer too.
#[test]
fn the_id_of_a_text_answer_is_its_own_not_a_token_of_its_file_path() {
    let create = answer("create");
    assert!(create.contains("probe-task-7f3a.md"), "{create}");
    let (id, pattern) = id_in_text(&create).unwrap();
    assert_eq!(id, "task-1");
    let re = Regex::new(&pattern).unwrap();
    assert_eq!(
        &re.captures(&answer("create_other")).unwrap()["id"],
        "task-2"
    );
    // A label names the id wherever it stands; a path alone names none.
    let labelled = "Saved to /home/u/.tasks/task-beef.json\n\n**ID:** `n-1a2b3c4d`\n";
    assert_eq!(id_in_text(labelled).unwrap().0, "n-1a2b3c4d");
    let number = "Task created.\nPath: /data/t/task-9f9f9f.md\nID: 42\n";
    let (id, pattern) = id_in_text(number).unwrap();
    assert_eq!(id, "42");
    assert_eq!(
        &Regex::new(&pattern).unwrap().captures(number).unwrap()["id"],
        "42"
    );
    assert!(id_in_text("Saved to /tmp/x/task-7f3a.md").is_none());
    // The subject's own words are not the id either.
    assert!(id_in_text("Made taskproof-probe-task-7f3a.").is_none());
}

/// The patterns proposed for a text get read the id, subject, status and description of
/// the probe's answer, and of another task's (another status, a description of several
/// lines and a blank one); a text list's pattern reads every entry.
#[test]
fn text_answers_get_text_patterns_for_get_and_list() {
    let words: Vec<String> = ["To Do", "In Progress", "Done"].map(String::from).to_vec();
    let patterns = task_patterns(&answer("get"), "task-1", &words).unwrap();
    assert!(
        patterns[0].contains("(?P<id>"),
        "the id's first: {patterns:?}"
    );
    assert_eq!(
        read(&patterns, &answer("get"), false),
        json!({"id": "task-1", "subject": PROBE_SUBJECT, "status": "To Do",
            "description": PROBE_DESCRIPTION})
    );
    assert_eq!(
        read(&patterns, &answer("get_other"), false),
        json!({"id": "task-2", "subject": "Ship the beef release", "status": "In Progress",
            "description": "line one\nline two\n\nline four"})
    );
    let each = list_pattern(&answer("list"), "task-1", &words).unwrap();
    assert_eq!(
        read(&[each], &answer("list"), true),
        json!([{"id": "task-1", "subject": PROBE_SUBJECT},
            {"id": "task-2", "subject": "Ship the beef release"}])
    );
}

/// Every word of a status enum is recognised, whatever its case and blanks (`To Do`,
/// `In Progress`); an enum of three whose words mean nothing known is taken by place,
/// marked; words beyond the three are the server's others, to refuse.
#[test]
fn every_word_of_a_status_enum_is_recognised() {
    let tools_with = |words: Value| -> BTreeMap<String, (String, Value)> {
        [(
            "task_edit".to_string(),
            (
                String::new(),
                json!({"type": "object", "properties": {"id": {"type": "string"},
                    "status": {"type": "string", "enum": words}}}),
            ),
        )]
        .into_iter()
        .collect()
    };
    let of = |words: Value| {
        let tools = tools_with(words);
        status_words(&tools, &choose(&tools))
    };
    let (three, rest) = of(json!(["To Do", "In Progress", "Done"]));
    assert_eq!(
        three,
        [
            ("pending".into(), "To Do".into(), false),
            ("in_progress".into(), "In Progress".into(), false),
            ("completed".into(), "Done".into(), false)
        ]
    );
    assert!(rest.is_empty());
    let (by_place, _) = of(json!(["Queued", "Cooking", "Served"]));
    assert_eq!(by_place[0], ("pending".into(), "Queued".into(), false));
    assert_eq!(by_place[1], ("in_progress".into(), "Cooking".into(), true));
    assert_eq!(by_place[2], ("completed".into(), "Served".into(), true));
    // A list's filter: `all` is no status.
    let (filter, rest) = of(json!(["all", "pending", "in_progress", "completed"]));
    assert_eq!(filter.len(), 3);
    assert!(rest.is_empty(), "{rest:?}");
    let (four, rest) = of(json!(["open", "wip", "blocked", "closed"]));
    assert_eq!(four.len(), 3);
    assert_eq!(rest, ["blocked"]);
    let tools = tools_with(json!(["open", "wip", "blocked", "closed"]));
    let text = render("srv", "srv", "1", &tools);
    assert!(text.contains("refuse = [\"blocked\"]"), "{text}");
    Mapping::parse(&text, Path::new("d.toml")).unwrap_or_else(|e| panic!("{e}\n{text}"));
}

/// Argument templates give the type the schema names: an owner for an array of
/// assignees, dependencies for a comma string, numbers, JSON text.
#[test]
fn argument_templates_take_the_schema_type() {
    let t = |ty: Value| json!({ "type": ty });
    assert_eq!(
        typed("{task.owner}", &t(json!("array"))),
        "{task.owner|array}"
    );
    assert_eq!(
        typed("{patch.owner}", &t(json!(["array", "null"]))),
        "{patch.owner|array}"
    );
    assert_eq!(
        typed("{task.blockedBy}", &t(json!("string"))),
        "{task.blockedBy|join}"
    );
    assert_eq!(
        typed(
            "{task.blockedBy}",
            &json!({"type": "array", "items": {"type": "integer"}})
        ),
        "{task.blockedBy|ints}"
    );
    assert_eq!(
        typed("{task.blockedBy}", &t(json!("array"))),
        "{task.blockedBy}"
    );
    assert_eq!(typed("{id}", &t(json!("integer"))), "{id|int}");
    assert_eq!(
        typed("{task.metadata}", &t(json!("string"))),
        "{task.metadata|json}"
    );
    assert_eq!(
        typed("{task.subject}", &t(json!("string"))),
        "{task.subject}"
    );
    assert_eq!(typed("{root}/{list}", &t(json!("array"))), "{root}/{list}");
    // The recorded server's tools: its assignee is an array.
    let tools: BTreeMap<String, (String, Value)> = recorded()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_string(),
                (
                    t["description"].as_str().unwrap().to_string(),
                    t["inputSchema"].clone(),
                ),
            )
        })
        .collect();
    let text = render("srv", "srv", "1", &tools);
    assert!(text.contains("assignee = \"{task.owner|array}\""), "{text}");
    assert!(
        text.contains("assignee = \"{patch.owner|array}\""),
        "{text}"
    );
    Mapping::parse(&text, Path::new("d.toml")).unwrap_or_else(|e| panic!("{e}\n{text}"));
}

#[test]
fn ids_are_found_in_text_answers() {
    let text = "**ID:** `0d511acd-6305-4cb3-ac7c-e575ac009150`";
    let (id, pattern) = id_in_text(text).unwrap();
    assert_eq!(id, "0d511acd-6305-4cb3-ac7c-e575ac009150");
    assert_eq!(
        &Regex::new(&pattern).unwrap().captures(text).unwrap()["id"],
        id
    );
    assert_eq!(id_in_text("made task-12 for you").unwrap().0, "task-12");
    assert!(id_in_text("nothing here").is_none());
    let doc = json!({"data": {"items": [{"id": 3, "title": PROBE_SUBJECT}]}});
    assert_eq!(
        find_array(&doc, &names_probe, "").as_deref(),
        Some("/data/items")
    );
    assert_eq!(
        find_object(&doc, &names_probe, "").as_deref(),
        Some("/data/items/0")
    );
}

/// Issue 55.6: a create that takes only an array of task objects is chosen with that array
/// (one task a request), and an update of the status alone is chosen though its name names
/// no task; a tool that takes an array of something else, or a name with another word
/// beside "status", is neither.
#[test]
fn a_batch_create_and_a_status_only_update_are_chosen() {
    let tools: BTreeMap<String, (String, Value)> = [
        (
            "addTasks",
            json!({"type": "object", "required": ["tasks"], "properties": {"tasks": {
                "type": "array", "items": {"type": "object", "properties": {"title": {"type": "string"}}}}}}),
        ),
        (
            "updateStatus",
            json!({"type": "object", "properties": {"id": {"type": "string"},
                "status": {"type": "string", "enum": ["todo", "done"]}}}),
        ),
        (
            "setProjectStatus",
            json!({"type": "object", "properties": {"id": {"type": "string"},
                "status": {"type": "string"}}}),
        ),
        (
            "getTask",
            json!({"type": "object", "properties": {"id": {"type": "string"}}}),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), ("does things".to_string(), v)))
    .collect();
    let chosen = choose(&tools);
    assert_eq!(chosen[&Op::Create].tool, "addTasks");
    assert_eq!(chosen[&Op::Create].batch.as_deref(), Some("tasks"));
    assert_eq!(chosen[&Op::Update].tool, "updateStatus");
    assert!(chosen[&Op::Update].status_only);
    assert_eq!(batch_arg(&tools["getTask"].1), None);
    let text = render("srv", "srv", "1", &tools);
    assert!(
        text.contains("args = { tasks = [{ title = \"{task.subject}\" }] }"),
        "{text}"
    );
    assert!(text.contains("when = \"patch.status\""), "{text}");
    Mapping::parse(&text, Path::new("d.toml")).unwrap_or_else(|e| panic!("{e}\n{text}"));
}
