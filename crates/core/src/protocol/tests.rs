//! The protocol's unit tests: requests and answers read and written, hello's features.

use super::*;
use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use crate::task::{Task, TaskId};

#[test]
fn every_answer_is_written_as_its_to_json() {
    let mut t = Task::new(TaskId(12), "sub \u{e9}\"\n");
    t.metadata = Some(
        json!({"a": {"b": [1, "x", null]}})
            .as_object()
            .unwrap()
            .clone(),
    );
    t.extra.insert("kept".into(), json!({"n": 1.5}));
    let hello = Hello::from_json(&json!({
        "ok": true, "protocol": PROTOCOL_VERSION, "name": "n", "version": "1",
        "layout": "claude-code", "features": []
    }));
    let mut answers = vec![
        Response::Task(t.clone()),
        Response::Tasks {
            tasks: vec![t.clone(), Task::new(TaskId(13), "b")],
            corrupt: vec!["7.json".into()],
        },
        Response::Tasks {
            tasks: vec![],
            corrupt: vec![],
        },
        Response::Done,
        Response::error(ErrorKind::Conflict, "taken \u{1F600}"),
    ];
    answers.push(Response::Hello(hello.expect("a hello")));
    for r in &answers {
        let mut line = Vec::new();
        r.write_json(&mut line);
        assert_eq!(line, serde_json::to_vec(&r.to_json()).unwrap(), "{r:?}");
    }
}

#[test]
fn requests_use_the_parts_their_fields_name() {
    let parts = |v: Value| {
        request_features(&v)
            .into_iter()
            .map(Feature::as_str)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        parts(json!({"op": "create", "list": "l", "task": {"subject": "a"}})),
        Vec::<&str>::new()
    );
    assert_eq!(
        parts(
            json!({"op": "create", "task": {"subject": "a", "blockedBy": ["1"], "metadata": {}, "activeForm": "x"}})
        ),
        ["edges", "metadata", "active_form", "edges_at_create"]
    );
    assert_eq!(
        parts(
            json!({"op": "update", "patch": {"owner": null, "removeBlocks": ["1"], "addBlockedBy": []}})
        ),
        ["edges", "owner", "edge_removal"]
    );
    // A claim's owner is the claim's own: the part `owner` is setting it by a patch.
    assert_eq!(
        parts(json!({"op": "claim", "id": "1", "owner": "a"})),
        ["claim"]
    );
    assert_eq!(parts(json!({"op": "delete", "id": "1"})), ["delete"]);
    // Fields outside a create's task or an update's patch name no part.
    assert_eq!(
        parts(json!({"op": "get", "patch": {"metadata": {}}})),
        Vec::<&str>::new()
    );
    // The session's own list, by any op; a list merely called "session" is a list.
    assert_eq!(
        parts(json!({"op": "list", "list": SESSION_LIST})),
        ["session_list"]
    );
    assert_eq!(
        parts(json!({"op": "delete", "list": "@session", "id": "1"})),
        ["delete", "session_list"]
    );
    assert_eq!(
        parts(json!({"op": "list", "list": "session"})),
        Vec::<&str>::new()
    );
    // A member of an agent team sends it.
    assert_eq!(
        parts(json!({"op": "list", "list": SESSION_LIST, MEMBER: "w1"})),
        ["session_list", "team"]
    );
}

/// A store declares every part a store can have, and never the session's own list or a team,
/// which only an agent session has, nor atomic, which is not declared.
#[test]
fn the_parts_of_a_store_are_every_part_but_the_sessions_own_list() {
    let missing: Vec<Feature> = Feature::ALL
        .into_iter()
        .filter(|f| !Feature::OF_A_STORE.contains(f))
        .collect();
    assert_eq!(
        missing,
        [
            Feature::SessionList,
            Feature::Team,
            Feature::Atomic,
            Feature::InProgress,
            Feature::HiddenEdges
        ]
    );
    assert!(
        Feature::ADDED_IN_2
            .iter()
            .all(|f| Feature::OF_A_STORE.contains(f))
    );
}

#[test]
fn a_protocol_1_hello_declares_every_part_protocol_2_added() {
    let v1 = json!({"ok": true, "protocol": 1, "name": "x", "version": "1",
                    "layout": "opaque", "features": ["edges"]});
    let h = Hello::from_json(&v1).unwrap();
    assert!(h.has(Feature::Edges) && h.has(Feature::Metadata) && h.has(Feature::Lists));
    assert!(!h.has(Feature::Delete) && !h.has(Feature::Claim));
    assert_eq!(
        h.to_json()["features"],
        json!(["edges"]),
        "written back as it was"
    );
    assert_eq!(Hello::from_json(&h.to_json()).unwrap(), h);
    let v2 = json!({"ok": true, "protocol": 2, "name": "x", "version": "1",
                    "layout": "opaque", "features": ["edges", "owner"]});
    let h = Hello::from_json(&v2).unwrap();
    assert_eq!(
        h.features,
        BTreeSet::from([Feature::Edges, Feature::Owner]),
        "protocol 2 declares exactly what it names"
    );
    let mixed = json!({"ok": true, "protocol": 1, "name": "x", "version": "1",
                       "layout": "opaque", "features": ["metadata"]});
    let e = Hello::from_json(&mixed).unwrap_err();
    assert!(e.contains("feature metadata is protocol 2's"), "{e}");
    let mixed = json!({"ok": true, "protocol": 1, "name": "x", "version": "1",
                       "layout": "opaque", "features": ["active_form"]});
    let e = Hello::from_json(&mixed).unwrap_err();
    assert!(e.contains("feature active_form is protocol 2's"), "{e}");
    let e = Hello::from_json(&json!({"ok": true, "protocol": 3})).unwrap_err();
    assert!(
        e.contains("protocol 3 is not supported (this harness speaks 1 to 2)"),
        "{e}"
    );
    let e = "active-form".parse::<Feature>().unwrap_err();
    assert_eq!(
        e,
        "unknown feature \"active-form\"; expected one of delete, claim, edges, metadata, \
         owner, active_form, edge_removal, edges_at_create, lists, session_list, team, \
         atomic, in_progress, hidden_edges"
    );
}

/// A target has the started status unless its hello's `statuses` leaves it out; a create
/// or update that gives it needs it, whatever else it gives; `in_progress` is never
/// declared.
#[test]
fn in_progress_unless_the_hello_names_statuses_without_it() {
    let hello = |extra: Value| {
        let mut v = json!({"ok": true, "protocol": 2, "name": "x", "version": "1",
            "layout": "opaque", "features": ["delete"]});
        v.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        Hello::from_json(&v)
    };
    assert!(hello(json!({})).unwrap().has(Feature::InProgress));
    let all = hello(json!({"mapping": {STATUSES: "pending, in_progress, completed"}}));
    assert!(all.unwrap().has(Feature::InProgress));
    let two = hello(json!({"mapping": {STATUSES: "pending, completed"}})).unwrap();
    assert!(!two.has(Feature::InProgress) && two.has(Feature::Delete));
    let e = hello(json!({"features": ["in_progress"]})).unwrap_err();
    assert!(e.contains("feature in_progress is not declared"), "{e}");
    let parts = |r: Value| {
        request_features(&r)
            .into_iter()
            .map(Feature::as_str)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        parts(json!({"op": "update", "id": "1", "patch": {"status": "in_progress"}})),
        ["in_progress"]
    );
    assert_eq!(
        parts(
            json!({"op": "create", "task": {"subject": "a", "status": "in_progress", "owner": "x"}})
        ),
        ["owner", "in_progress"]
    );
    assert!(parts(json!({"op": "update", "id": "1", "patch": {"status": "completed"}})).is_empty());
}

/// A target is atomic unless its hello's mapping names requests it performs by
/// read-modify-write; those are matched against requests (and scenario templates) by op
/// and paths present; `atomic` is never declared.
#[test]
fn atomic_unless_the_hello_names_read_modify_write_requests() {
    let hello = |mapping: Value| {
        Hello::from_json(
            &json!({"ok": true, "protocol": 2, "name": "x", "version": "1",
            "layout": "opaque", "features": ["edges"], "mapping": mapping}),
        )
    };
    let plain = hello(json!({"atomic": "no: answers are read back"})).unwrap();
    assert!(plain.has(Feature::Atomic) && plain.read_modify_write().is_empty());
    let entry = "update with patch.addBlocks; create with task.blocks and task.owner; claim";
    let h = hello(json!({ READ_MODIFY_WRITE: entry })).unwrap();
    assert!(!h.has(Feature::Atomic));
    let rmw = h.read_modify_write();
    assert_eq!(ReadModifyWrite::write_all(&rmw), entry);
    let update = |patch: Value| json!({"op": "update", "id": "${a}", "patch": patch});
    let hits = |r: &Value| rmw.iter().any(|x| x.matches(r));
    assert!(hits(&update(json!({"addBlocks": ["2${i}"]}))));
    assert!(!hits(&update(json!({"addBlockedBy": ["2"]}))));
    assert!(!hits(&update(json!({"addBlocks": null}))));
    assert!(!hits(&json!({"op": "create", "task": {"blocks": ["1"]}})));
    assert!(hits(
        &json!({"op": "create", "task": {"blocks": ["1"], "owner": "o"}})
    ));
    assert!(hits(&json!({"op": "claim", "id": "1", "owner": "w"})));
    assert!(!hits(&json!({"op": "get", "id": "1"})));
    let e = hello(json!({ READ_MODIFY_WRITE: "update with" })).unwrap_err();
    assert!(e.contains("mapping.read_modify_write"), "{e}");
    let e = hello(json!({ READ_MODIFY_WRITE: "fly with patch.x" })).unwrap_err();
    assert!(e.contains("unknown op \"fly\""), "{e}");
    let declared = json!({"ok": true, "protocol": 2, "name": "x", "version": "1",
                          "layout": "opaque", "features": ["atomic"]});
    let e = Hello::from_json(&declared).unwrap_err();
    assert!(e.contains("feature atomic is not declared"), "{e}");
}

#[test]
fn hello_keeps_a_stated_mapping_and_refuses_a_malformed_one() {
    let line = r#"{"ok":true,"protocol":1,"name":"x","version":"1","layout":"opaque","features":[],"mapping":{"delete":"unsupported"}}"#;
    let h = Hello::from_json(&serde_json::from_str(line).unwrap()).unwrap();
    assert_eq!(
        h.mapping.get("delete").map(String::as_str),
        Some("unsupported")
    );
    assert_eq!(Hello::from_json(&h.to_json()).unwrap(), h);
    let plain = Hello {
        mapping: BTreeMap::new(),
        ..h.clone()
    };
    assert!(
        plain.to_json().get("mapping").is_none(),
        "no mapping, no field"
    );
    let bad = line.replace(r#""unsupported""#, "3");
    let e = Hello::from_json(&serde_json::from_str(&bad).unwrap()).unwrap_err();
    assert!(e.contains("mapping.delete"), "{e}");
}

#[test]
fn requests_round_trip() {
    let lines = [
        r#"{"op":"hello"}"#,
        r#"{"op":"create","list":"l","task":{"subject":"a","blockedBy":["1"]}}"#,
        r#"{"op":"get","list":"l","id":"3"}"#,
        r#"{"op":"update","list":"l","id":"3","patch":{"status":"completed","owner":null}}"#,
        r#"{"op":"delete","list":"l","id":"3"}"#,
        r#"{"op":"list","list":"l"}"#,
        r#"{"op":"claim","list":"l","id":"3","owner":"w"}"#,
    ];
    for line in lines {
        let r = Request::parse_line(line).unwrap();
        assert_eq!(Request::from_json(&r.to_json()).unwrap(), r, "{line}");
    }
}

#[test]
fn bad_requests_name_the_field() {
    let cases = [
        ("not json", "request"),
        (r#"[1]"#, "request"),
        (r#"{"op":"fly"}"#, "op"),
        (r#"{"op":"get","list":"../x","id":"1"}"#, "list"),
        (r#"{"op":"get","list":"l","id":"01"}"#, "id"),
        (r#"{"op":"get","list":"l"}"#, "id"),
        (r#"{"op":"get","list":"l","id":"1","extra":1}"#, "extra"),
        (r#"{"op":"claim","list":"l","id":"1","owner":""}"#, "owner"),
        (
            r#"{"op":"update","list":"l","id":"1","patch":{"addBlocks":"2"}}"#,
            "patch.addBlocks",
        ),
    ];
    for (line, field) in cases {
        let e = Request::parse_line(line).unwrap_err();
        assert_eq!(e.field, field, "{line}: {e}");
    }
}

#[test]
fn responses_round_trip() {
    let t = Task::new(TaskId(1), "a");
    let cases = [
        (Response::Task(t.clone()), Op::Get),
        (
            Response::Tasks {
                tasks: vec![t],
                corrupt: vec!["2.json".into()],
            },
            Op::List,
        ),
        (Response::Done, Op::Delete),
        (Response::error(ErrorKind::Cycle, "2 -> 1 -> 2"), Op::Update),
    ];
    for (r, op) in cases {
        assert_eq!(Response::from_json(&r.to_json(), op).unwrap(), r);
    }
}

#[test]
fn garbage_responses_are_rejected() {
    for (v, op) in [
        (json!([]), Op::Get),
        (json!({"ok": "yes"}), Op::Get),
        (json!({"ok": true}), Op::Get),
        (json!({"ok": false, "error": {"kind": "oops"}}), Op::Get),
        (json!({"ok": true, "tasks": 3}), Op::List),
        (
            json!({"ok": true, "protocol": 3, "name": "x", "version": "1", "layout": "s07", "features": []}),
            Op::Hello,
        ),
    ] {
        assert!(Response::from_json(&v, op).is_err(), "{v} accepted");
    }
}

#[test]
fn answers_are_checked_against_their_request() {
    let get = json!({"op": "get", "list": "l", "id": "1"});
    assert!(Answer::decode(&get, json!({"ok": false, "error": {"kind": "not_found"}})).is_ok());
    assert!(Answer::decode(&get, json!({"ok": true})).is_err());
    assert!(Answer::decode(&get, json!({"ok": false, "error": {"kind": "nope"}})).is_err());
    let malformed = json!({"op": "fly"});
    assert!(
        Answer::decode(
            &malformed,
            json!({"ok": false, "error": {"kind": "invalid"}})
        )
        .is_ok()
    );
}
