//! The pretty form of a task that `taskproof mcp` puts in a `task_list` text, made from the
//! task's compact JSON, byte for byte what `serde_json`'s pretty printer gives for the task,
//! so that a task taken from the index (`index.rs`), which keeps its compact JSON but is not
//! decoded until something needs the task itself, can be written in both forms without
//! being decoded.

/// Re-lays compact JSON (as `serde_json::to_vec` writes it: no space outside strings) as
/// `serde_json::to_vec_pretty` would (two spaces a level), standing `base` levels deep (every
/// line after the first indented `2 * base` more spaces), and escaped as the contents of a
/// JSON string: `"` and `\` get a backslash, and each line break is written `\n`.
pub(super) fn pretty_escaped(compact: &[u8], base: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(compact.len() * 2);
    let mut depth = base;
    let newline = |out: &mut Vec<u8>, depth: usize| {
        out.extend_from_slice(b"\\n");
        out.resize(out.len() + 2 * depth, b' ');
    };
    let mut i = 0;
    while i < compact.len() {
        let b = compact[i];
        match b {
            b'"' => {
                // A string, copied with its escapes escaped again.
                out.extend_from_slice(b"\\\"");
                i += 1;
                while i < compact.len() {
                    match compact[i] {
                        b'\\' => {
                            out.extend_from_slice(b"\\\\");
                            if let Some(&next) = compact.get(i + 1) {
                                if next == b'"' || next == b'\\' {
                                    out.push(b'\\');
                                }
                                out.push(next);
                            }
                            i += 2;
                        }
                        b'"' => {
                            out.extend_from_slice(b"\\\"");
                            i += 1;
                            break;
                        }
                        c => {
                            out.push(c);
                            i += 1;
                        }
                    }
                }
                continue;
            }
            b'{' | b'[' => {
                out.push(b);
                let close = if b == b'{' { b'}' } else { b']' };
                if compact.get(i + 1) == Some(&close) {
                    out.push(close);
                    i += 2;
                    continue;
                }
                depth += 1;
                newline(&mut out, depth);
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(b);
            }
            b',' => {
                out.push(b',');
                newline(&mut out, depth);
            }
            b':' => out.extend_from_slice(b": "),
            c => out.push(c),
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{Value, json};

    /// The reference: serde's pretty JSON, indented `base` levels, escaped as a string's
    /// contents by serde.
    fn by_serde(v: &Value, base: usize) -> Vec<u8> {
        let flat = serde_json::to_string_pretty(v).unwrap();
        let indented = flat.replace('\n', &format!("\n{}", "  ".repeat(base)));
        let quoted = serde_json::to_vec(&indented).unwrap();
        quoted[1..quoted.len() - 1].to_vec()
    }

    fn same(v: &Value) {
        let compact = serde_json::to_vec(v).unwrap();
        for base in [0, 2] {
            assert_eq!(
                String::from_utf8(pretty_escaped(&compact, base)).unwrap(),
                String::from_utf8(by_serde(v, base)).unwrap(),
                "{v}"
            );
        }
    }

    #[test]
    fn tasks_are_laid_out_as_serde_lays_them_out() {
        same(
            &json!({"id": "1", "subject": "a \"quoted\" \\ back\\slash", "blocks": [],
                     "blockedBy": ["2", "3"], "metadata": {}, "x": {"y": [[], {}, [1, {"z": null}]]},
                     "s": "line\nbreak\ttab \u{1} ünï \u{1F600} </script>", "n": -1.5e-7}),
        );
        same(&json!([]));
        same(&json!("\\\""));
        same(&json!({"a": "\\"}));
    }

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            any::<String>().prop_map(Value::String),
            "[\"\\\\{}\\[\\],: a\n]{0,8}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 40, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec(("[a-z\"\\\\:,{}]{0,4}", inner), 0..6)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn any_json_is_laid_out_as_serde_lays_it_out(v in value()) {
            same(&v);
        }
    }
}
