//! Reading text written for a model (docs/mcp-targets.md, "Text answers"): a section between
//! one heading and the next, the named groups of one match or of every match, and the first
//! group of every match inside a field.

use regex_lite::Regex;
use serde_json::{Map, Value};

use crate::mapping::{TextHow, TextRead};

/// The part of `text` after the line where `start` first matches, up to `end`'s first match
/// after it, or else up to the next Markdown heading (`#` to `######` and a space at the
/// start of a line) of the same or a higher level than the line `start` matched (any heading
/// when that line is not one); the rest of the text when nothing ends it. `None` when
/// `start` does not match.
pub fn section<'t>(text: &'t str, start: &Regex, end: Option<&Regex>) -> Option<&'t str> {
    let m = start.find(text)?;
    let line_start = text[..m.start()].rfind('\n').map_or(0, |i| i + 1);
    let level = heading_level(&text[line_start..]).unwrap_or(6);
    let body_start = text[m.end()..]
        .find('\n')
        .map_or(text.len(), |i| m.end() + i + 1);
    let body = &text[body_start..];
    let stop = match end {
        Some(re) => re.find(body).map(|m| m.start()),
        None => {
            let mut at = 0;
            let mut found = None;
            for line in body.split_inclusive('\n') {
                if heading_level(line).is_some_and(|l| l <= level) {
                    found = Some(at);
                    break;
                }
                at += line.len();
            }
            found
        }
    };
    Some(&body[..stop.unwrap_or(body.len())])
}

/// The level of a Markdown heading line (`## x` is 2), if it is one.
fn heading_level(line: &str) -> Option<usize> {
    let hashes = line.bytes().take_while(|&b| b == b'#').count();
    ((1..=6).contains(&hashes) && line[hashes..].starts_with(' ')).then_some(hashes)
}

/// The named groups of one match, as an object of strings (groups that took no part are
/// left out).
fn groups(re: &Regex, caps: &regex_lite::Captures<'_>) -> Map<String, Value> {
    re.capture_names()
        .flatten()
        .filter_map(|n| Some((n.to_string(), Value::String(caps.name(n)?.as_str().into()))))
        .collect()
}

/// For each match of `re` in `text`, its first group (the whole match when it has none).
pub fn each_first(re: &Regex, text: &str) -> Vec<String> {
    re.captures_iter(text)
        .filter_map(|c| {
            c.get(1)
                .or_else(|| c.get(0))
                .map(|m| m.as_str().to_string())
        })
        .collect()
}

/// The document a text read makes of `text`.
pub fn read(how: &TextRead, text: &str) -> Result<Value, String> {
    let shown = |t: &str| t.chars().take(300).collect::<String>();
    let text = match &how.section {
        None => text,
        Some((start, end)) => section(text, start, end.as_ref()).ok_or_else(|| {
            format!(
                "the section {:?} is not in the text {:?}",
                start.as_str(),
                shown(text)
            )
        })?,
    };
    match &how.how {
        TextHow::One(patterns) => {
            let (first, more) = patterns.split_first().expect("checked: not empty");
            let caps = first.captures(text).ok_or_else(|| {
                format!(
                    "the pattern {:?} does not match the text {:?}",
                    first.as_str(),
                    shown(text)
                )
            })?;
            if let Some(j) = caps.name("json") {
                return serde_json::from_str(j.as_str().trim()).map_err(|e| {
                    format!("the group json is not JSON ({e}): {:?}", shown(j.as_str()))
                });
            }
            let mut doc = groups(first, &caps);
            for re in more {
                if let Some(c) = re.captures(text) {
                    doc.extend(groups(re, &c));
                }
            }
            Ok(Value::Object(doc))
        }
        TextHow::Each(re) => Ok(Value::Array(
            re.captures_iter(text)
                .map(|c| Value::Object(groups(re, &c)))
                .collect(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VIEW: &str = "## Complete Task Details\n\n### Task B\n\n**ID:** `b-1`\n\n\
**Description:**First line\nSecond line\n\n## Not a heading, a line of the description\n\n\n\
**Dependencies:** `a-1`, `c-2`\n\n### Notes\n\nnone\n\n## Footer\n";

    #[test]
    fn a_section_ends_at_the_next_heading_of_its_level() {
        let start = Regex::new(r"(?m)^### Task B$").unwrap();
        let s = section(VIEW, &start, None).unwrap();
        assert!(s.starts_with("\n**ID:**"), "{s:?}");
        // `## Not a heading…` is a heading of a higher level: it ends the section (the
        // server's text cannot tell it from a real one).
        assert!(s.ends_with("Second line\n\n"), "{s:?}");
        let end = Regex::new(r"(?m)^### Notes").unwrap();
        let s = section(VIEW, &start, Some(&end)).unwrap();
        assert!(
            s.contains("**Dependencies:**") && !s.contains("none"),
            "{s:?}"
        );
        assert!(section(VIEW, &Regex::new("### Task Z").unwrap(), None).is_none());
    }

    #[test]
    fn one_match_several_patterns_and_every_match() {
        let how = TextRead {
            section: None,
            how: TextHow::One(vec![
                Regex::new(r"\*\*ID:\*\* `(?P<id>[^`]+)`").unwrap(),
                Regex::new(r"(?s)\*\*Description:\*\*(?P<description>.*?)\n+\*\*[A-Z]").unwrap(),
                Regex::new(r"\*\*Owner:\*\* (?P<owner>\S+)").unwrap(),
            ]),
        };
        let doc = read(&how, VIEW).unwrap();
        assert_eq!(doc["id"], "b-1");
        // A multi-line field is read exactly, its inner blank lines and "##" included.
        assert_eq!(
            doc["description"],
            "First line\nSecond line\n\n## Not a heading, a line of the description"
        );
        assert!(
            doc.get("owner").is_none(),
            "an optional pattern that does not match"
        );
        let each = TextRead {
            section: None,
            how: TextHow::Each(Regex::new(r"`(?P<id>[a-z]-\d)`").unwrap()),
        };
        assert_eq!(
            read(&each, VIEW).unwrap(),
            serde_json::json!([{"id": "b-1"}, {"id": "a-1"}, {"id": "c-2"}])
        );
        assert_eq!(
            each_first(
                &Regex::new(r"`([^`]+)`").unwrap(),
                "**Dependencies:** `a-1`, `c-2`"
            ),
            ["a-1", "c-2"]
        );
        let missing = TextRead {
            section: None,
            how: TextHow::One(vec![Regex::new("nothing like this").unwrap()]),
        };
        assert!(read(&missing, VIEW).unwrap_err().contains("does not match"));
    }
}
