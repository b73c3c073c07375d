//! The docs stay true to the command line: every `taskproof …` command quoted in README.md and
//! docs/*.md is checked against the real clap definitions, without running anything. Issue
//! 40: the docs said `run` takes `--drive`, which it never did.
//!
//! What counts as a command, as a person reads the docs:
//! - in a shell code block (```sh, ```console — only its `$ ` lines —, ```bash or an
//!   unlabelled block), a line (backslash continuations joined) where `taskproof` (or `cargo
//!   run … --`) starts a command: first on the line, after environment assignments, or after
//!   `|`, `&&`, `;`, `--`, `$(`;
//! - an inline code span that starts with `taskproof `.
//!
//! A concrete command in a code block must parse whole. A mention (an inline span, which
//! often names a subcommand without its arguments) or a template (a command with placeholders
//! such as `VERSION`, `FILE`, `$(…)`) must name a real subcommand and only flags that
//! subcommand has. A synopsis (`[--flag]`, `a|b`, `…`) shows syntax and is left out.

use std::path::Path;

use clap::{CommandFactory, Parser};
use taskproof::cli::Cli;

use crate::util::repo;

/// A command quoted in a document: where, its words after `taskproof`, and whether it must
/// parse whole.
#[derive(Debug)]
struct Quoted {
    file: String,
    line: usize,
    words: Vec<String>,
    concrete: bool,
}

/// The line with its quoted parts left out (a glob like `'rt0[12]*'` is a value).
fn unquoted(line: &str) -> String {
    let mut bare = String::new();
    let mut quote = None;
    for c in line.chars() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, c) => bare.push(c),
            _ => {}
        }
    }
    bare
}

/// Whether a command line shows syntax rather than a command.
fn is_synopsis(line: &str) -> bool {
    let bare = unquoted(line);
    bare.contains('[')
        || bare.contains('…')
        || bare.contains("...")
        // `a|b` alternatives inside a word (`--layout claude-code|s07`); a pipe stands alone.
        || bare
            .split_whitespace()
            .any(|w| w.contains('|') && w != "|" && w != "||")
}

/// Whether a word is (or holds) a placeholder: `VERSION`, `T`, `K/N`, `DIR/x.json`,
/// `claude-code@VERSION`, `$VAR`, `$(…)`.
fn is_placeholder(word: &str) -> bool {
    word.contains('$')
        || word
            .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            .any(|part| {
                !part.is_empty()
                    && part
                        .chars()
                        .all(|c| c.is_ascii_uppercase() || c == '_' || c.is_ascii_digit())
                    && part.chars().any(|c| c.is_ascii_uppercase())
            })
}

/// The commands of one line: from where `taskproof` (or `cargo run … --`) starts a command to
/// the end of that command.
fn commands_in(line: &str) -> Vec<Vec<String>> {
    let line = line.trim().trim_start_matches("$ ");
    let Some(words) = shlex::split(line) else {
        return Vec::new();
    };
    let is_end = |w: &str| {
        matches!(w, "|" | "&&" | ";" | "||" | "2>&1" | "&")
            || w.starts_with('#')
            || w.starts_with('>')
            || w.starts_with("2>")
    };
    let starts_here = |i: usize| {
        let before = &words[..i];
        before
            .iter()
            .all(|w| w.contains('=') && !w.starts_with('-'))
            || before
                .last()
                .is_some_and(|w| is_end(w) || w == "--" || w.ends_with("$(") || w == "exec")
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = words[i].trim_start_matches("$(");
        let start = if (w == "taskproof" || w.ends_with("/taskproof")) && starts_here(i) {
            Some(i + 1)
        } else if w == "cargo" && words.get(i + 1).is_some_and(|w| w == "run") && starts_here(i) {
            words[i..].iter().position(|w| w == "--").map(|p| i + p + 1)
        } else {
            None
        };
        match start {
            Some(s) => {
                let mut command: Vec<String> = Vec::new();
                let mut j = s;
                while j < words.len() && !is_end(&words[j]) {
                    let w = &words[j];
                    if let Some(word) = w.strip_suffix(';') {
                        command.push(word.to_string());
                        j += 1;
                        break;
                    }
                    if w.starts_with("$(") {
                        // A command substitution: its words are another program's.
                        while j < words.len() && !words[j].ends_with(')') {
                            j += 1;
                        }
                        command.push("$(…)".into());
                    } else {
                        command.push(w.trim_end_matches(')').to_string());
                    }
                    j += 1;
                }
                out.push(command);
                i = j;
            }
            None => i += 1,
        }
    }
    out
}

/// Every command quoted in `path`.
fn quoted(path: &Path) -> Vec<Quoted> {
    let text = std::fs::read_to_string(path).unwrap();
    let file = path
        .strip_prefix(repo())
        .unwrap_or(path)
        .display()
        .to_string();
    let mut out = Vec::new();
    // The language of the code block the line is in, when in one.
    let mut block: Option<String> = None;
    let mut pending: Option<(usize, String)> = None;
    for (n, raw) in text.lines().enumerate() {
        let n = n + 1;
        if let Some(lang) = raw.trim_start().strip_prefix("```") {
            block = match block {
                Some(_) => None,
                None => Some(lang.trim().to_string()),
            };
            continue;
        }
        let mut candidates: Vec<(usize, String, bool)> = Vec::new();
        match block.as_deref() {
            Some("" | "sh" | "bash" | "shell" | "console") => {
                let console = block.as_deref() == Some("console");
                if console && pending.is_none() && !raw.trim_start().starts_with("$ ") {
                    continue; // output
                }
                let (at, so_far) = pending.take().unwrap_or((n, String::new()));
                let joined = format!("{so_far} {}", raw.trim());
                if let Some(cut) = joined.trim_end().strip_suffix('\\') {
                    pending = Some((at, cut.to_string()));
                    continue;
                }
                candidates.push((at, joined, true));
            }
            Some(_) => {}
            None => {
                let mut rest = raw;
                while let Some(open) = rest.find('`') {
                    let after = &rest[open + 1..];
                    let Some(close) = after.find('`') else { break };
                    let span = &after[..close];
                    if span.starts_with("taskproof ") {
                        candidates.push((n, span.to_string(), false));
                    }
                    rest = &after[close + 1..];
                }
            }
        }
        for (at, line, in_block) in candidates {
            if is_synopsis(&line) {
                continue;
            }
            for words in commands_in(&line) {
                if words.is_empty() {
                    continue;
                }
                let concrete = in_block && !words.iter().any(|w| is_placeholder(w));
                out.push(Quoted {
                    file: file.clone(),
                    line: at,
                    words,
                    concrete,
                });
            }
        }
    }
    out
}

fn documents() -> Vec<std::path::PathBuf> {
    let mut docs = vec![repo().join("README.md")];
    let mut more: Vec<_> = std::fs::read_dir(repo().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    more.sort();
    docs.extend(more);
    docs
}

/// A concrete command: the whole parse.
fn parses(words: &[String]) -> Result<(), String> {
    let argv = std::iter::once("taskproof".to_string()).chain(words.iter().cloned());
    match Cli::try_parse_from(argv) {
        Ok(_) => Ok(()),
        // `--help` and `--version` are what they ask for, not mistakes.
        Err(e)
            if matches!(
                e.kind(),
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion
            ) =>
        {
            Ok(())
        }
        Err(e) => Err(e.to_string().lines().next().unwrap_or("").to_string()),
    }
}

/// A mention or a template: the subcommands exist, and so does every flag it names.
fn names_what_exists(words: &[String]) -> Result<(), String> {
    let mut command = Cli::command();
    let mut rest = words;
    while let Some((first, tail)) = rest.split_first() {
        if first.starts_with('-') || command.get_subcommands().next().is_none() {
            break;
        }
        match command.find_subcommand(first) {
            Some(sub) => {
                command = sub.clone();
                rest = tail;
            }
            None => {
                return Err(format!(
                    "no subcommand {first:?} in `{}`",
                    command.get_name()
                ));
            }
        }
    }
    for w in rest
        .iter()
        .filter(|w| w.starts_with('-') && *w != "-" && *w != "--")
    {
        let known = if let Some(long) = w.strip_prefix("--") {
            let long = long.split('=').next().unwrap_or(long);
            long == "help"
                || command.get_arguments().any(|a| {
                    a.get_long() == Some(long)
                        || a.get_all_aliases().is_some_and(|al| al.contains(&long))
                })
        } else {
            let short = w.chars().nth(1).unwrap_or(' ');
            short == 'h'
                || command
                    .get_arguments()
                    .any(|a| a.get_short() == Some(short))
        };
        if !known {
            return Err(format!("`{}` has no {w}", command.get_name()));
        }
    }
    Ok(())
}

#[test]
fn every_command_the_docs_quote_parses() {
    let (mut concrete, mut mentions) = (0, 0);
    let mut wrong = Vec::new();
    for doc in documents() {
        for q in quoted(&doc) {
            let checked = if q.concrete {
                concrete += 1;
                parses(&q.words)
            } else {
                mentions += 1;
                names_what_exists(&q.words)
            };
            if let Err(e) = checked {
                wrong.push(format!(
                    "{}:{}: taskproof {}: {e}",
                    q.file,
                    q.line,
                    q.words.join(" ")
                ));
            }
        }
    }
    assert!(
        concrete >= 50 && mentions >= 60,
        "only {concrete} commands and {mentions} mentions found in the docs: is the extraction broken?"
    );
    assert!(
        wrong.is_empty(),
        "{} quoted commands are not taskproof's:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

#[test]
fn the_check_would_have_caught_run_with_drive() {
    let md = "Drive it in the terminal: `taskproof run --drive terminal`.\n\n```sh\ntaskproof run --drive terminal --target claude-code@2.1.17\ntaskproof race --drive terminal --target claude-code@2.1.17\n```\n";
    let dir = crate::util::tempdir();
    let path = dir.path().join("x.md");
    std::fs::write(&path, md).unwrap();
    let found = quoted(&path);
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(!found[0].concrete && found[1].concrete);
    assert!(
        names_what_exists(&found[0].words)
            .unwrap_err()
            .contains("has no --drive")
    );
    assert!(parses(&found[1].words).unwrap_err().contains("--drive"));
    assert!(parses(&found[2].words).is_ok(), "race has --drive");
}

#[test]
fn synopses_pipes_mentions_and_continuations_are_read_as_a_person_reads_them() {
    assert!(is_synopsis(
        "taskproof check [PATH] [--layout claude-code|s07]"
    ));
    assert!(is_synopsis("taskproof run --profile strict|s07"));
    assert!(!is_synopsis("taskproof run --filter 'rt0[12]*'"));
    assert!(!is_synopsis("echo '[]' | taskproof check --stdin"));
    assert_eq!(
        commands_in("$ echo '[]' | taskproof check --stdin; echo $?"),
        vec![vec!["check".to_string(), "--stdin".to_string()]]
    );
    assert_eq!(
        commands_in("cargo run --release -- run --filter 'rt0*'   # the suite"),
        vec![vec!["run".to_string(), "--filter".into(), "rt0*".into()]]
    );
    // A name handed to another program is not a command; what follows `--` is.
    assert_eq!(
        commands_in("claude mcp add taskproof -- taskproof mcp"),
        vec![vec!["mcp".to_string()]]
    );
    assert!(
        is_placeholder("claude-code@VERSION") && is_placeholder("K/N") && is_placeholder("$OUT")
    );
    assert!(!is_placeholder("claude-code@2.1.17") && !is_placeholder("rt0[12]*"));
    assert!(names_what_exists(&["profile".into(), "diff".into()]).is_ok());
    assert!(names_what_exists(&["profile".into(), "dif".into()]).is_err());
    let dir = crate::util::tempdir();
    let path = dir.path().join("x.md");
    std::fs::write(
        &path,
        "```console\n$ taskproof run --timeout 300 \\\n  --target reference\ntaskproof said so\n```\n",
    )
    .unwrap();
    let found = quoted(&path);
    assert_eq!(
        found.len(),
        1,
        "a console block's output is not a command: {found:?}"
    );
    assert_eq!(
        found[0].words,
        ["run", "--timeout", "300", "--target", "reference"]
    );
    assert_eq!(found[0].line, 2);
}

/// The hook settings the README shows are the file the tests install into the real Claude
/// Code (docs/hooks/settings.json), key for key.
#[test]
fn the_readmes_hook_settings_are_the_tested_file() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let at = readme
        .find("docs/hooks/settings.json")
        .expect("the README names the settings file");
    let block = readme[at..]
        .split("```json\n")
        .nth(1)
        .and_then(|b| b.split("\n```").next())
        .expect("a json block after it");
    let shown: serde_json::Value = serde_json::from_str(block).expect("the README's block is JSON");
    let file: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("docs/hooks/settings.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(shown, file);
}

/// Where a file named in prose is looked for: from the repository's root, and from the
/// folder of the file that names it and each folder above it (a crate's comments say
/// `src/x.rs` for its own files).
fn resolves(named_in: &Path, path: &str) -> bool {
    let root = repo();
    if root.join(path).exists() {
        return true;
    }
    let mut dir = named_in.parent();
    while let Some(d) = dir {
        if d.join(path).exists() {
            return true;
        }
        if d == root {
            break;
        }
        dir = d.parent();
    }
    false
}

/// The repository files a line names: words that start at one of the project's top folders
/// and end in a file's extension, leaving out templates (`reports/mcp/NAME/NOTES.md`).
fn named_files(line: &str) -> Vec<String> {
    const TOPS: [&str; 8] = [
        "crates/",
        "src/",
        "tests/",
        "benches/",
        "fuzz/",
        "docs/",
        "scenarios/",
        "repro/",
    ];
    const EXTS: [&str; 7] = [".rs", ".md", ".toml", ".py", ".json", ".sh", ".js"];
    line.split(|c: char| !(c.is_ascii_alphanumeric() || "_./-".contains(c)))
        .map(|w| w.trim_end_matches('.'))
        .filter(|w| TOPS.iter().any(|t| w.starts_with(t)))
        .filter(|w| EXTS.iter().any(|e| w.ends_with(e)))
        .filter(|w| {
            !w.split('/')
                .any(|part| is_placeholder(part) || part == "x.json")
        })
        .map(str::to_string)
        .collect()
}

/// Prose and comments point at files that exist: a reader who follows `crates/…/x.rs` from
/// the docs or a module's comment finds it. Moving a file (issue 40 moved most of them) breaks
/// this test until every pointer follows.
#[test]
fn every_file_the_docs_and_comments_name_exists() {
    let root = repo();
    let mut files: Vec<std::path::PathBuf> = vec![root.join("README.md"), root.join("Cargo.toml")];
    for pattern in [
        "docs/**/*.md",
        "scenarios/README.md",
        "crates/*/Cargo.toml",
        "crates/**/*.rs",
        "src/**/*.rs",
        "benches/**/*.rs",
        "fuzz/**/*.rs",
    ] {
        let full = root.join(pattern);
        files.extend(
            glob::glob(full.to_str().unwrap())
                .unwrap()
                .map(Result::unwrap),
        );
    }
    let mut missing = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let prose = file.extension().is_some_and(|e| e == "md");
        for (n, line) in text.lines().enumerate() {
            // In code and manifests only the comments are prose; code may build paths on
            // purpose (a test's made-up `repro/yes.sh`).
            let said = if prose {
                line
            } else if let Some(at) = line.find("//").or_else(|| line.find('#')) {
                &line[at..]
            } else {
                continue;
            };
            for path in named_files(said) {
                if !resolves(file, &path) {
                    let shown = file.strip_prefix(root).unwrap_or(file);
                    missing.push(format!("{}:{}: {path}", shown.display(), n + 1));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "named but not there:\n{}",
        missing.join("\n")
    );
}

#[test]
fn named_files_are_the_paths_a_reader_would_follow() {
    assert_eq!(
        named_files("(`crates/store/src/cclock.rs`), see docs/race.md."),
        ["crates/store/src/cclock.rs", "docs/race.md"]
    );
    assert!(named_files("reports/mcp/NAME/NOTES.md and fuzz/fuzz_targets/NAME.rs").is_empty());
    assert!(named_files("src/ and crates/*/src/ hold the code").is_empty());
    let here = repo().join("crates/race/src/lib.rs");
    assert!(resolves(&here, "src/mix.rs"), "a crate's own src/");
    assert!(!resolves(&here, "src/race/mix.rs"));
}
