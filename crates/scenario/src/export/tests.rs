//! The export's unit tests: made-up values read back, quoting, the folder and the script.

use super::*;
use std::path::Path;

/// A made-up value is taken from the first answer that has it, after the text just before
/// it and counting that text's earlier occurrences; a line that sends it back reads the
/// variable there, and only where the whole token is the value.
#[test]
fn made_up_values_are_found_in_the_answer_and_replaced_as_whole_tokens() {
    let mut c = Captures::default();
    let root = Path::new("/tmp/root-x");
    let mut w = String::new();
    c.sent(
        &mut w,
        1,
        r#"{"op":"create","list":"l","task":{"subject":"a"}}"#,
        root,
    );
    c.got(
        1,
        r#"{"ok":true,"task":{"id":"20240001","blockedBy":["20240000"]}}"#,
    );
    c.got(1, r#"{"ok":true,"tasks":[{"id":"x1"},{"id":"abc-77"}]}"#);
    assert!(w.is_empty(), "{w}");
    let line = r#"{"op":"get","list":"l","id":"abc-77","note":"abc-777 in /tmp/root-x/f"}"#;
    let word = c.sent(&mut w, 1, line, root);
    // After the second `id":"` of the second answer (the one before is occurrence 0).
    assert_eq!(
        w,
        "V1=$(pick 1 line 2 'id\":\"' 1); [ -n \"$V1\" ] || V1='abc-77'\n"
    );
    assert_eq!(
        word,
        r#"'{"op":"get","list":"l","id":"'"$V1"'","note":"abc-777 in '"$ROOT"'/f"}'"#
    );
    // A short number is what a store hands out in order: sent as it was.
    assert!(!made_up("12") && !made_up("4711") && !made_up("x1") && !made_up("--:-"));
    assert!(made_up("20240001") && made_up("task-6bbb4882") && made_up("hnipdowj"));
}

/// The text a value is found after starts at the word before it, which may have letters
/// and `_` (a key like `task_id`) but no digit (that could be a made-up value itself).
#[test]
fn a_value_is_found_after_the_key_before_it() {
    let mut c = Captures::default();
    let mut w = String::new();
    let root = Path::new("/r");
    c.sent(&mut w, 1, r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"create_task","arguments":{"title":"a"}}}"#, root);
    c.got(1, r#"{"result":{"content":[{"type":"text","text":"{\n  \"ref-7a\": 1, \"task_id\": \"task-6bbb4882\"\n}"}]},"jsonrpc":"2.0","id":2}"#);
    c.sent(&mut w, 1, r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_task","arguments":{"task_id":"task-6bbb4882"}}}"#, root);
    assert_eq!(
        w,
        "V1=$(pick 1 id '2' 'task_id\\\": \\\"' 0); [ -n \"$V1\" ] || V1='task-6bbb4882'\n"
    );
}
