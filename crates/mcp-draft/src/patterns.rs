//! Text answers: where the id, the fields and a list's entries are, as patterns that keep
//! each field's label.

use std::fmt::Write as _;

use regex_lite::Regex;

use crate::draft::PROBE_SUBJECT;
use crate::render::toml_string;

/// The description the probe gives its task, found again in answers.
pub(crate) const PROBE_DESCRIPTION: &str = "A task made by taskproof mcp-draft's probe.";

/// The pattern of an id's kind, for a token that has the shape of one: a UUID, 32 hex digits,
/// a word, a dash and a number (`task-12`, its word kept: `task-\d+`) or a word, a dash and
/// hex digits (`task-d6aa0844`). A plain word or number is no id unless a label says so.
pub(crate) fn id_shape(token: &str) -> Option<String> {
    let fixed = |re: &str| Regex::new(re).expect("fixed pattern");
    if fixed(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
        .is_match(token)
    {
        return Some(r"[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}".into());
    }
    if fixed(r"^[0-9a-fA-F]{32}$").is_match(token) {
        return Some(r"[0-9a-fA-F]{32}".into());
    }
    let c = fixed(r"^([A-Za-z][A-Za-z0-9]*[-_])([0-9A-Za-z]+)$").captures(token)?;
    let (word, tail) = (&c[1], &c[2]);
    if tail.bytes().all(|b| b.is_ascii_digit()) {
        Some(format!(r"{}\d+", regex_lite::escape(word)))
    } else if tail.len() >= 4 && tail.bytes().all(|b| b.is_ascii_hexdigit()) {
        Some(format!(r"{}[0-9a-fA-F]+", regex_lite::escape(word)))
    } else {
        None
    }
}

/// The pattern of a token a label names as the id (`ID: 7`, `**Key:** \`6e5bxr8t\``).
pub(crate) fn labelled_shape(token: &str) -> String {
    id_shape(token).unwrap_or_else(|| {
        if token.bytes().all(|b| b.is_ascii_digit()) {
            r"\d+".into()
        } else {
            r"[A-Za-z0-9][A-Za-z0-9_.-]*".into()
        }
    })
}

/// The spans of `text` that are not the task's own words: file paths (from a `/` or `~/`
/// that starts a word to the end of its line; a server that names a file after the task's
/// subject shows id-like tokens there) and, when `subject` is true, the probe's subject
/// however the server wrote it (any case, any separators: `probe-task-7f3a`).
pub(crate) fn hidden(text: &str, subject: bool) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Regex::new(r"(?m)(?:^|[\s:(\[`'\x22=])(~?/[^\n]*)")
        .expect("fixed pattern")
        .captures_iter(text)
        .filter_map(|c| c.get(1).map(|m| (m.start(), m.end())))
        .collect();
    if subject {
        let words: Vec<String> = PROBE_SUBJECT.split(' ').map(regex_lite::escape).collect();
        let re = Regex::new(&format!("(?i){}", words.join("[^A-Za-z0-9\n]+"))).expect("escaped");
        out.extend(re.find_iter(text).map(|m| (m.start(), m.end())));
    }
    out
}

pub(crate) fn inside(spans: &[(usize, usize)], at: usize, end: usize) -> bool {
    spans.iter().any(|(s, e)| at < *e && end > *s)
}

/// The lines of `text` with the offset each starts at.
pub(crate) fn lines(text: &str) -> Vec<(usize, &str)> {
    let mut at = 0;
    text.split('\n')
        .map(|l| {
            let here = at;
            at += l.len() + 1;
            (here, l)
        })
        .collect()
}

/// A label that says the id follows: `ID:`, `**Task ID:** \``, `key =`, at a line's start.
pub(crate) fn id_label() -> Regex {
    Regex::new(r"(?i)^[^A-Za-z0-9\n]*(?:task[ _-]?)?(?:id|key|identifier)[^A-Za-z0-9\n]*[:=][^A-Za-z0-9\n]*")
        .expect("fixed pattern")
}

/// Whether a line is a header of the answer: a Markdown heading, the first line with words,
/// or a line that names the probe's subject.
pub(crate) fn header_lines(text: &str) -> Vec<(usize, &str)> {
    let subject =
        Regex::new(&format!("(?i){}", regex_lite::escape(PROBE_SUBJECT))).expect("escaped");
    let mut first = true;
    lines(text)
        .into_iter()
        .filter(|(_, l)| {
            if l.trim().is_empty() {
                return false;
            }
            let head = first || l.trim_start().starts_with('#') || subject.is_match(l);
            first = false;
            head
        })
        .collect()
}

/// The id tokens of a line (word characters and inner dashes), with their offsets.
pub(crate) fn tokens(line: &str) -> Vec<(usize, &str)> {
    Regex::new(r"[A-Za-z0-9](?:[A-Za-z0-9_-]*[A-Za-z0-9])?")
        .expect("fixed pattern")
        .find_iter(line)
        .map(|m| (m.start(), m.as_str()))
        .collect()
}

/// A line's literal text in a pattern: escaped, runs of blanks any run of blanks.
pub(crate) fn literal(s: &str) -> String {
    let mut out = String::new();
    let mut blank = false;
    for c in s.chars() {
        if c == ' ' || c == '\t' {
            if !blank {
                out.push_str("[ \\t]+");
            }
            blank = true;
            continue;
        }
        blank = false;
        out.push_str(&regex_lite::escape(&c.to_string()));
    }
    out
}

/// What comes before the first value of a line, in a pattern: a label up to its colon kept
/// (what follows the colon, a mark that changes with the value, skipped), marks alone any
/// marks, and other text kept with the probe's subject any text.
pub(crate) fn lead(before: &str) -> String {
    let marks = |s: &str| !s.chars().any(char::is_alphanumeric);
    if before.is_empty() {
        return String::new();
    }
    if marks(before) {
        return "[^A-Za-z0-9\\n]*".into();
    }
    if let Some(colon) = before.rfind(':') {
        let (label, rest) = before.split_at(colon + 1);
        let label = if marks(label.trim_end_matches(':')) {
            "[^A-Za-z0-9\\n]*:".to_string()
        } else {
            literal(label)
        };
        let rest = if rest.trim().is_empty() {
            "[ \\t]*"
        } else {
            "[^\\n]*?"
        };
        return format!("{label}{rest}");
    }
    let subject =
        Regex::new(&format!("(?i){}", regex_lite::escape(PROBE_SUBJECT))).expect("escaped");
    match subject.find(before) {
        Some(m) => format!(
            "{}.*?{}",
            literal(&before[..m.start()]),
            literal(&before[m.end()..])
        ),
        None => literal(before),
    }
}

/// The new task's id in a text answer and a pattern that finds it in every such answer: the
/// token a label names as the id (`ID: …`), else the first id-shaped token of a header line
/// (`Created task task-3`, `# Task task-3 - …`); never a token inside a file path or the
/// task's own subject (`…/task-3 - probe-task-7f3a.md` holds `task-7f3a`, which is not it).
pub(crate) fn id_in_text(text: &str) -> Option<(String, String)> {
    let hide = hidden(text, true);
    let label = id_label();
    for (at, line) in lines(text) {
        let Some(m) = label.find(line) else { continue };
        let Some((t, token)) = tokens(&line[m.end()..]).into_iter().next() else {
            continue;
        };
        let start = m.end() + t;
        if t != 0 || inside(&hide, at + start, at + start + token.len()) {
            continue;
        }
        return Some((
            token.to_string(),
            format!(
                "(?m)^{}(?P<id>{})",
                literal(&line[..start]),
                labelled_shape(token)
            ),
        ));
    }
    for (at, line) in header_lines(text) {
        for (t, token) in tokens(line) {
            if inside(&hide, at + t, at + t + token.len()) {
                continue;
            }
            if let Some(shape) = id_shape(token) {
                return Some((
                    token.to_string(),
                    format!("(?m)^{}(?P<id>{shape})", lead(&line[..t])),
                ));
            }
        }
    }
    None
}

/// A field found in a text answer: where, and its name.
#[derive(Debug, Clone)]
pub(crate) struct Found {
    start: usize,
    end: usize,
    name: &'static str,
}

/// Where `needle` stands as a whole token in `text` (not inside a longer id or word), outside
/// `hide`.
pub(crate) fn whole(text: &str, needle: &str, hide: &[(usize, usize)]) -> Vec<usize> {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '-' || c == '_');
    text.match_indices(needle)
        .map(|(i, _)| i)
        .filter(|&i| {
            !word(text[..i].chars().next_back())
                && !word(text[i + needle.len()..].chars().next())
                && !inside(hide, i, i + needle.len())
        })
        .collect()
}

/// The status alternatives of a pattern: the server's words, longest first.
pub(crate) fn status_group(words: &[String]) -> String {
    let mut w: Vec<&String> = words.iter().collect();
    w.sort_by_key(|w| std::cmp::Reverse(w.len()));
    w.iter()
        .map(|w| regex_lite::escape(w))
        .collect::<Vec<_>>()
        .join("|")
}

/// The pattern of one line of `text` holding `found` (in order, all on that line): the
/// text around them kept (a label, separators), each value a named group.
pub(crate) fn line_pattern(
    text: &str,
    found: &[Found],
    id_shape: &str,
    words: &[String],
) -> String {
    let line_start = text[..found[0].start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[found[0].start..]
        .find('\n')
        .map_or(text.len(), |i| found[0].start + i);
    let line = &text[line_start..line_end];
    let mut re = String::from("(?m)^");
    let alone = found.len() == 1
        && line[..found[0].start - line_start].trim().is_empty()
        && line[found[0].end - line_start..].trim().is_empty();
    if alone {
        // A value on a line of its own: the lines before it, up to one with words, say
        // where it is (`Description:`, a rule of dashes).
        let mut before: Vec<&str> = Vec::new();
        for l in text[..line_start].trim_end_matches('\n').rsplit('\n') {
            before.push(l);
            if l.chars().any(char::is_alphanumeric) || before.len() == 3 {
                break;
            }
        }
        let between = text[..line_start].len() - text[..line_start].trim_end_matches('\n').len();
        for (i, l) in before.iter().rev().enumerate() {
            if i > 0 {
                re.push_str("\\n");
            }
            if l.chars().any(char::is_alphanumeric) {
                re.push_str(&literal(l.trim_end()));
                re.push_str("[ \\t]*");
            } else {
                re.push_str("[^A-Za-z0-9\\n]*");
            }
        }
        re.push_str(&"\\n".repeat(between.max(1)));
    }
    let mut at = line_start;
    for (i, f) in found.iter().enumerate() {
        let before = &text[at..f.start];
        if i == 0 {
            if !alone {
                re.push_str(&lead(before));
            }
        } else {
            re.push_str(&literal(before));
        }
        let last = i + 1 == found.len();
        let rest = &text[f.end..line_end];
        let group = match f.name {
            "id" => id_shape.to_string(),
            "status" => status_group(words),
            // A free text last on its line: to the line's end, or for a field that ends
            // the answer, to the end (its inner lines kept).
            _ if last && rest.trim().is_empty() => {
                if text[f.end..].trim().is_empty() {
                    "(?s:.*?)".into()
                } else {
                    ".*?".into()
                }
            }
            _ => ".+?".into(),
        };
        let _ = write!(re, "(?P<{}>{group})", f.name);
        at = f.end;
    }
    let last = found.last().expect("a field");
    let rest = &text[last.end..line_end];
    if matches!(last.name, "id" | "status") {
        // Bounded by its shape: what follows does not matter.
    } else if !rest.trim().is_empty() {
        let _ = write!(re, "[ \\t]*{}[ \\t]*$", literal(rest.trim()));
    } else if text[last.end..].trim().is_empty() {
        re.push_str(r"\s*\z");
    } else {
        re.push_str("[ \\t]*$");
    }
    re
}

/// The patterns that read the probe task from a text answer (its id `id`, subject,
/// description and status word among `words`): one per line that holds any, the id's first
/// (it must match).
pub(crate) fn task_patterns(text: &str, id: &str, words: &[String]) -> Option<Vec<String>> {
    let paths = hidden(text, false);
    let with_subject = hidden(text, true);
    let headers: Vec<usize> = header_lines(text).iter().map(|(at, _)| *at).collect();
    let label = id_label();
    let line_of = |i: usize| text[..i].rfind('\n').map_or(0, |n| n + 1);
    // The id: on a labelled line, else a header, else anywhere outside paths and the subject.
    let ids = whole(text, id, &with_subject);
    let id_at = ids
        .iter()
        .find(|&&i| label.is_match(&text[line_of(i)..]))
        .or_else(|| ids.iter().find(|&&i| headers.contains(&line_of(i))))
        .or_else(|| ids.first())
        .copied()?;
    let mut found = vec![Found {
        start: id_at,
        end: id_at + id.len(),
        name: "id",
    }];
    for (needle, name) in [
        (PROBE_SUBJECT, "subject"),
        (PROBE_DESCRIPTION, "description"),
    ] {
        if let Some(i) = text
            .match_indices(needle)
            .map(|(i, _)| i)
            .find(|&i| !inside(&paths, i, i + needle.len()))
        {
            found.push(Found {
                start: i,
                end: i + needle.len(),
                name,
            });
        }
    }
    // The status: a word of the server's, on a line that says status if there is one.
    let taken = found.clone();
    let mut statuses: Vec<usize> = Vec::new();
    for w in words {
        for i in whole(text, w, &with_subject) {
            if !taken.iter().any(|f| i < f.end && i + w.len() > f.start) {
                statuses.push(i);
            }
        }
    }
    statuses.sort_unstable();
    let says_status = |i: usize| {
        let l = &text[line_of(i)..i];
        l.to_lowercase().contains("status") || l.to_lowercase().contains("state")
    };
    if let Some(&i) = statuses
        .iter()
        .find(|&&i| says_status(i))
        .or(statuses.first())
    {
        let w = words
            .iter()
            .filter(|w| text[i..].starts_with(w.as_str()))
            .max_by_key(|w| w.len())
            .expect("found");
        found.push(Found {
            start: i,
            end: i + w.len(),
            name: "status",
        });
    }
    let shape = labelled_shape(id);
    // One pattern per line, the id's first.
    let mut by_line: Vec<(usize, Vec<Found>)> = Vec::new();
    for f in found {
        let l = line_of(f.start);
        match by_line.iter_mut().find(|(x, _)| *x == l) {
            Some((_, fs)) => fs.push(f),
            None => by_line.push((l, vec![f])),
        }
    }
    Some(
        by_line
            .into_iter()
            .map(|(_, mut fs)| {
                fs.sort_by_key(|f| f.start);
                line_pattern(text, &fs, &shape, words)
            })
            .collect(),
    )
}

/// The pattern of every entry of a text list: the line that holds the probe task's id (with
/// its subject and status when that line has them).
pub(crate) fn list_pattern(text: &str, id: &str, words: &[String]) -> Option<String> {
    let with_subject = hidden(text, true);
    let at = *whole(text, id, &with_subject).first()?;
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[at..].find('\n').map_or(text.len(), |i| at + i);
    let mut found = vec![Found {
        start: at,
        end: at + id.len(),
        name: "id",
    }];
    if let Some(i) = text[line_start..line_end].find(PROBE_SUBJECT) {
        found.push(Found {
            start: line_start + i,
            end: line_start + i + PROBE_SUBJECT.len(),
            name: "subject",
        });
    }
    found.sort_by_key(|f| f.start);
    let mut re = line_pattern(text, &found, &labelled_shape(id), words);
    // Every entry, not only the probe's: its subject ends its line, not the answer.
    re = re.replace("(?s:.*?)", ".*?").replace(r"\s*\z", "[ \\t]*$");
    Some(re)
}

/// A pattern as a TOML string: a literal string when it can be (no `'`, no newline), so that
/// it reads as written.
pub(crate) fn toml_pattern(p: &str) -> String {
    if p.contains('\'') || p.contains('\n') {
        toml_string(p)
    } else {
        format!("'{p}'")
    }
}
