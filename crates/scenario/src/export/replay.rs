//! `replay.sh`: the POSIX shell script that starts every process as taskproof did and sends
//! each line once the answer to the one before came, with the ids the store made up read
//! back from its answers.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;
use taskproof_session::wire::{Event, Launch};

use crate::format::Action;

use super::*;

/// `text` as one shell word in single quotes.
pub(super) fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// `text` as one shell word in which the scenario's root reads `$ROOT`.
pub(super) fn quote_rooted(text: &str, root: &Path) -> String {
    let root = root.to_string_lossy();
    if root.is_empty() {
        return quote(text);
    }
    if text.is_empty() || !text.contains(root.as_ref()) {
        return quote(text);
    }
    text.split(root.as_ref())
        .map(|piece| {
            if piece.is_empty() {
                String::new()
            } else {
                quote(piece)
            }
        })
        .collect::<Vec<_>>()
        .join("\"$ROOT\"")
}

/// The replay script: every process started as taskproof started it, on `$ROOT` (a fresh
/// folder, or the script's first argument), each line sent when the previous request's
/// answer came, each process ended as taskproof ended it. An error when it cannot be one.
pub(super) fn script(f: &Failed<'_>) -> Result<Script, String> {
    let failing = failing_steps(f.result);
    let (fails, error) = failures(f.result);
    let mut out = String::new();
    let w = &mut out;
    let _ = writeln!(w, "#!/bin/sh");
    let _ = writeln!(
        w,
        "# Replays scenario {} of taskproof {} against {} with nothing but this shell and the",
        f.scenario.id,
        env!("CARGO_PKG_VERSION"),
        f.target.spec
    );
    let _ = writeln!(
        w,
        "# processes it started (README.md beside it says what failed). Each process starts as\n\
         # taskproof started it, on a fresh folder; each line is sent once the answer to the one\n\
         # before came. It prints every line sent (-> [N]) and got (<- [N]) for process N.\n\
         #\n\
         #   sh replay.sh [ROOT]    # ROOT: an empty folder for the store [default: a new one]\n\
         #\n\
         # REPLAY_TIMEOUT (seconds, default 30) bounds the wait for each answer."
    );
    let _ = writeln!(w, "set -u");
    let _ = writeln!(w, "ROOT=${{1:-$(mktemp -d)}}");
    let _ = writeln!(w, "mkdir -p \"$ROOT\" || exit 2");
    let _ = writeln!(w, "ROOT=$(cd \"$ROOT\" && pwd) || exit 2");
    let _ = writeln!(w, "W=$(mktemp -d) || exit 2");
    let _ = writeln!(w, "LIMIT=${{REPLAY_TIMEOUT:-30}}");
    let _ = writeln!(w, "echo \"# root: $ROOT\"");
    w.push_str(SCRIPT_FUNCTIONS);
    w.push_str(&answers(f.events));
    // Which descriptor each live process's stdin is held on.
    let mut fds: BTreeMap<usize, u8> = BTreeMap::new();
    let mut captures = Captures::default();
    // What taskproof's run got: the JSON-RPC responses by process and id, and how many lines
    // each process answered; and how many requests the script has sent each so far.
    let mut answered = std::collections::BTreeSet::new();
    let mut lines_got: BTreeMap<usize, usize> = BTreeMap::new();
    for e in f.events {
        if let Event::Got { process, line } = e {
            *lines_got.entry(*process).or_default() += 1;
            let msg = as_json(line);
            if let (None, Some(id)) = (msg.get("method"), msg.get("id")) {
                answered.insert((*process, id.to_string()));
            }
        }
    }
    let mut requests: BTreeMap<usize, usize> = BTreeMap::new();
    for e in f.events {
        match e {
            Event::Step { index, .. } => {
                let Some(step) = step_at(f.scenario, *index) else {
                    continue;
                };
                let _ = writeln!(
                    w,
                    "\nsay {}",
                    quote(&format!("# steps[{index}] {}", words(step)))
                );
                if failing.contains(index) {
                    for fl in fails.iter().filter(|fl| fl.step == Some(*index)) {
                        let _ = writeln!(
                            w,
                            "say {}",
                            quote(&format!(
                                "# taskproof judged this step: expected {}; got {}",
                                fl.expected, fl.actual
                            ))
                        );
                    }
                    if let Some(e) = error.filter(|e| e.step == Some(*index)) {
                        let _ = writeln!(
                            w,
                            "say {}",
                            quote(&format!("# taskproof's error at this step: {}", e.message))
                        );
                    }
                }
                if let Action::Wait(d) = &step.action {
                    let _ = writeln!(w, "sleep {}", d.as_secs_f64());
                }
            }
            Event::Start { process, launch } => {
                let free = (3..=9u8).find(|fd| !fds.values().any(|used| used == fd));
                let Some(fd) = free else {
                    return Err(format!(
                        "more than {MAX_LIVE} processes run at once, more than a shell script \
                         can hold open"
                    ));
                };
                fds.insert(*process, fd);
                let root = &launch.root;
                let mut env = String::new();
                for (k, v) in &launch.env {
                    let _ = write!(env, " {k}={}", quote_rooted(v, root));
                }
                let args: String = launch
                    .args
                    .iter()
                    .map(|a| format!(" {}", quote_rooted(a, root)))
                    .collect();
                let cd = match &launch.cwd {
                    Some(c) => {
                        let c = quote_rooted(&c.to_string_lossy(), root);
                        format!("mkdir -p {c} && cd {c} && ")
                    }
                    None => String::new(),
                };
                let what = match &launch.list {
                    Some(l) => format!("process {process}: the server of list {l}"),
                    None => format!("process {process}"),
                };
                let _ = writeln!(w, "\nsay {}", quote(&format!("# {what} starts")));
                let _ = writeln!(
                    w,
                    "mkfifo \"$W/{process}.in\" && : > \"$W/{process}.out\" || exit 2"
                );
                let _ = writeln!(
                    w,
                    "( exec 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-; {cd}exec env{env} sh -c {} sh{args} ) <\"$W/{process}.in\" >>\"$W/{process}.out\" 2>\"$W/{process}.err\" &",
                    quote_rooted(&launch.script, root),
                );
                let _ = writeln!(
                    w,
                    "P{process}=$!; PIDS=\"$PIDS $P{process}\"; N{process}=0; R{process}=0"
                );
                let _ = writeln!(w, "exec {fd}>\"$W/{process}.in\"");
            }
            Event::Sent { process, line } => {
                let Some(fd) = fds.get(process) else { continue };
                // An answer to a request of the server's: the script's `serve` gives it when
                // the replay's server asks.
                let msg = as_json(line);
                if msg.get("jsonrpc").is_some() && msg.get("method").is_none() {
                    continue;
                }
                let root = processes_root(f.events, *process).unwrap_or_default();
                let word = captures.sent(w, *process, line, &root);
                let _ = writeln!(w, "send {process} {fd} {word}");
                // Waits for the answer, when taskproof's run got one (a request cut short by a
                // kill is only sent).
                let msg = as_json(line);
                let asked = requests.entry(*process).or_default();
                *asked += 1;
                if msg.get("jsonrpc").is_some() {
                    if let (Some(_), Some(id)) = (msg.get("method"), msg.get("id"))
                        && answered.contains(&(*process, id.to_string()))
                    {
                        let _ = writeln!(w, "await_id {process} {fd} {}", quote(&id.to_string()));
                    }
                } else if lines_got.get(process).is_some_and(|n| *n >= *asked) {
                    let _ = writeln!(w, "await_line {process}");
                }
            }
            Event::Got { process, line } => captures.got(*process, line),
            Event::Closed { process } | Event::Killed { process } => {
                let Some(fd) = fds.remove(process) else {
                    continue;
                };
                let how = if matches!(e, Event::Killed { .. }) {
                    "killed"
                } else {
                    "closed"
                };
                let _ = writeln!(w, "exec {fd}>&-");
                let _ = writeln!(w, "{how} {process} \"$P{process}\"");
            }
        }
    }
    let _ = writeln!(w, "\nfinish");
    Ok(Script {
        text: out,
        taken: captures.vars.into_keys().collect(),
    })
}

/// A replay script, and the values it takes from the replay's own answers.
pub(super) struct Script {
    pub(super) text: String,
    pub(super) taken: Vec<String>,
}

/// Whether `c` is part of a token: what an id or a time is made of.
pub(super) fn token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-')
}

/// The tokens of `text` (maximal runs of [`token_char`]), each with where it starts.
pub(super) fn tokens(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        match (token_char(c), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                out.push((s, &text[s..i]));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, &text[s..]));
    }
    out
}

/// Whether a token may be something the store made up (an id, a time), when it came back
/// in an answer before it was sent: four characters or more, with a letter or digit, and not
/// a short number (which a store hands out in order, the same again in a replay). Words the
/// store knows beforehand are in its tool list, never taken ([`Captures::fixed`]); words of
/// the scenario's were sent before any answer held them.
pub(super) fn made_up(t: &str) -> bool {
    t.len() >= 4
        && t.bytes().any(|b| b.is_ascii_alphanumeric())
        && (t.len() >= 6 || !t.bytes().all(|b| b.is_ascii_digit()))
}

/// Every string in `v`, outside the keys `skip`.
pub(super) fn strings<'v>(v: &'v Value, skip: &[&str], out: &mut Vec<&'v str>) {
    match v {
        Value::String(s) => out.push(s),
        Value::Array(a) => a.iter().for_each(|x| strings(x, skip, out)),
        Value::Object(m) => m
            .iter()
            .filter(|(k, _)| !skip.contains(&k.as_str()))
            .for_each(|(_, x)| strings(x, skip, out)),
        _ => {}
    }
}

/// Which answer of a process a value is taken from.
pub(super) enum Answer {
    /// The JSON-RPC response with this id (as JSON text).
    Id(String),
    /// The line with this number, from 1 (an adapter's answers, one per request).
    Line(usize),
}

/// Values the store made up (ids, times) that later lines send back: a replay takes each from
/// its own answer, at the same place, instead of sending the recorded one, which its store
/// never made.
#[derive(Default)]
pub(super) struct Captures {
    /// Every token of the lines sent so far.
    pub(super) sent: std::collections::BTreeSet<String>,
    /// Tokens of the answers to the handshake and the tool list: never taken.
    pub(super) fixed: std::collections::BTreeSet<String>,
    /// The answers a value may be taken from, in order: process, which answer, its text.
    pub(super) got: Vec<(usize, Answer, String)>,
    /// Lines got so far, per process.
    pub(super) counts: BTreeMap<usize, usize>,
    /// The method of each JSON-RPC request, by process and id.
    pub(super) methods: BTreeMap<(usize, String), String>,
    /// Token → the shell variable that holds the replay's value.
    pub(super) vars: BTreeMap<String, String>,
}

impl Captures {
    pub(super) fn got(&mut self, process: usize, line: &str) {
        let n = self.counts.entry(process).or_default();
        *n += 1;
        let msg = as_json(line);
        let answer = match msg.get("id") {
            Some(id) if msg.get("jsonrpc").is_some() => {
                let id = id.to_string();
                let method = self.methods.get(&(process, id.clone()));
                if method.is_some_and(|m| m != "tools/call") {
                    self.fixed
                        .extend(tokens(line).into_iter().map(|(_, t)| t.to_string()));
                    return;
                }
                Answer::Id(id)
            }
            _ => Answer::Line(*n),
        };
        self.got.push((process, answer, line.to_string()));
    }

    /// Line `line` sent to `process`, as one shell word: the root reads `$ROOT`, and each
    /// value taken from an earlier answer its variable, set by what this writes to `w` first.
    pub(super) fn sent(
        &mut self,
        w: &mut String,
        process: usize,
        line: &str,
        root: &Path,
    ) -> String {
        let msg = as_json(line);
        let mut payload = Vec::new();
        if msg.get("jsonrpc").is_some() {
            if let (Some(Value::String(method)), Some(id)) = (msg.get("method"), msg.get("id")) {
                self.methods
                    .insert((process, id.to_string()), method.clone());
            }
            if msg.get("method").and_then(Value::as_str) == Some("tools/call") {
                strings(&msg["params"]["arguments"], &[], &mut payload);
            }
        } else {
            strings(&msg, &["op"], &mut payload);
        }
        for text in payload {
            for (_, t) in tokens(text) {
                if made_up(t)
                    && !self.sent.contains(t)
                    && !self.fixed.contains(t)
                    && !self.vars.contains_key(t)
                    && let Some(pick) = self.find(t)
                {
                    let var = format!("V{}", self.vars.len() + 1);
                    let _ = writeln!(
                        w,
                        "{var}=$(pick {pick}); [ -n \"${var}\" ] || {var}={}",
                        quote(t)
                    );
                    self.vars.insert(t.to_string(), var);
                }
            }
        }
        self.sent
            .extend(tokens(line).into_iter().map(|(_, t)| t.to_string()));
        self.word(line, root)
    }

    /// Where the first answer that holds token `t` (as a whole token) has it: the arguments
    /// of the script's `pick` (process, answer, the text from the token before it, and which
    /// occurrence of that text it follows).
    pub(super) fn find(&self, t: &str) -> Option<String> {
        for (process, answer, line) in &self.got {
            let all = tokens(line);
            for (k, &(start, token)) in all.iter().enumerate() {
                if token != t {
                    continue;
                }
                // The text from the word before it (a key, say: no digit, so not an id or a
                // time itself).
                let Some(&(from, before)) = all[..k]
                    .iter()
                    .rev()
                    .find(|(_, w)| w.bytes().any(|b| b.is_ascii_alphanumeric()))
                else {
                    continue;
                };
                if before.bytes().any(|b| b.is_ascii_digit()) {
                    continue;
                }
                let prefix = &line[from..start];
                // Which occurrence of the prefix, counted as the script's awk counts them.
                let mut at = 0;
                let mut occurrence = 0;
                let found = loop {
                    match line[at..].find(prefix) {
                        Some(i) if at + i + prefix.len() == start => break true,
                        Some(i) if at + i + prefix.len() < start => {
                            occurrence += 1;
                            at += i + prefix.len();
                        }
                        _ => break false,
                    }
                };
                if !found {
                    continue;
                }
                let which = match answer {
                    Answer::Id(id) => format!("id {}", quote(id)),
                    Answer::Line(n) => format!("line {n}"),
                };
                return Some(format!("{process} {which} {} {occurrence}", quote(prefix)));
            }
        }
        None
    }

    /// `text` as one shell word in which the root reads `$ROOT` and each taken value its
    /// variable.
    pub(super) fn word(&self, text: &str, root: &Path) -> String {
        let root = root.to_string_lossy();
        let mut out = String::new();
        let mut literal = String::new();
        let flush = |literal: &mut String, out: &mut String| {
            if !literal.is_empty() {
                out.push_str(&quote(literal));
                literal.clear();
            }
        };
        let mut i = 0;
        let mut boundary = true;
        while i < text.len() {
            let rest = &text[i..];
            if !root.is_empty() && rest.starts_with(root.as_ref()) {
                flush(&mut literal, &mut out);
                out.push_str("\"$ROOT\"");
                i += root.len();
                boundary = true;
                continue;
            }
            let c = rest.chars().next().expect("not at the end");
            if boundary && token_char(c) {
                let len = rest.find(|c: char| !token_char(c)).unwrap_or(rest.len());
                if let Some(var) = self.vars.get(&rest[..len]) {
                    flush(&mut literal, &mut out);
                    let _ = write!(out, "\"${var}\"");
                    i += len;
                    boundary = false;
                    continue;
                }
            }
            literal.push(c);
            boundary = !token_char(c);
            i += c.len_utf8();
        }
        flush(&mut literal, &mut out);
        if out.is_empty() { quote("") } else { out }
    }
}

/// The shell functions of every replay script.
pub(super) const SCRIPT_FUNCTIONS: &str = r##"PIDS=
# (Shell variables are global: each function's own start with its name.)
say() { printf '%s\n' "$1"; }
# The lines of process $1 from line $2 + 1 on, printed; N$1 becomes how many it has.
show() {
  show_n=$(wc -l < "$W/$1.out" | tr -d ' ')
  if [ "$show_n" -gt "$2" ]; then sed -n "$(( $2 + 1 )),${show_n}p" "$W/$1.out" | sed "s/^/<- [$1] /"; fi
  eval "N$1=$show_n"
}
send() { printf '%s\n' "$3" >&"$2" && printf -- '-> [%s] %s\n' "$1" "$3"; }
# Process $1's response with JSON-RPC id $2 (not a request of its own with that id).
response() {
  grep -e "\"id\":$2[,}]" -e "\"id\": $2[,}]" "$W/$1.out" | grep -v '"method":"' | head -n 1
}
# Answers the requests process $1 made of the client (its lines from R$1 + 1 on that have a
# method and an id) on descriptor $2, as taskproof's MCP client answered them (`answer`).
serve() {
  eval "serve_r=\$R$1"
  serve_n=$(wc -l < "$W/$1.out" | tr -d ' ')
  [ "$serve_r" -lt "$serve_n" ] || return 0
  eval "R$1=$serve_n"
  serve_a=$(sed -n "$(( serve_r + 1 )),${serve_n}p" "$W/$1.out" | awk '
    /"method":"notifications\// { next }
    /"method":"/ {
      m = $0; sub(/.*"method":"/, "", m); sub(/".*/, "", m)
      i = $0; if (!sub(/.*"id": */, "", i)) next; sub(/[,}].*/, "", i)
      print m, i
    }')
  [ -n "$serve_a" ] || return 0
  eval "show $1 \$N$1"
  printf '%s\n' "$serve_a" | while read -r serve_m serve_id; do
    send "$1" "$2" "{\"jsonrpc\":\"2.0\",\"id\":$serve_id,$(answer "$serve_m")}"
  done
}
# Waits for process $1's answer with JSON-RPC id $3 (printing what comes before it), answering
# its requests on descriptor $2 meanwhile.
await_id() {
  await_end=$(( $(date +%s) + LIMIT ))
  while serve "$1" "$2"; [ -z "$(response "$1" "$3")" ]; do
    if [ "$(date +%s)" -gt "$await_end" ]; then eval "show $1 \$N$1"; say "# no answer from process $1 within $LIMIT s; stopping"; finish 1; fi
    sleep 0.05
  done
  eval "show $1 \$N$1"
}
# Waits for one more line from process $1 (an adapter answers each request with one line).
await_line() {
  eval "await_k=\$N$1"; await_end=$(( $(date +%s) + LIMIT ))
  while [ "$(wc -l < "$W/$1.out" | tr -d ' ')" -le "$await_k" ]; do
    if [ "$(date +%s)" -gt "$await_end" ]; then say "# no answer from process $1 within $LIMIT s; stopping"; finish 1; fi
    sleep 0.05
  done
  show "$1" "$await_k"
}
# The token after the (OCC+1)-th PREFIX in process P's answer with JSON-RPC id KEY (id) or
# on line KEY (line): a value the store made up, taken from this run's answer.
pick() { # P id|line KEY PREFIX OCC
  if [ "$2" = id ]; then
    pick_l=$(response "$1" "$3")
  else
    pick_l=$(sed -n "$3p" "$W/$1.out")
  fi
  printf '%s\n' "$pick_l" | PRE=$4 OCC=$5 awk '{
    s = $0; pre = ENVIRON["PRE"]; n = ENVIRON["OCC"] + 0
    while (n-- >= 0) { p = index(s, pre); if (!p) exit; s = substr(s, p + length(pre)) }
    if (match(s, /^[A-Za-z0-9._:-]+/)) print substr(s, 1, RLENGTH)
    exit
  }'
}
# A process and everything it started.
tree() {
  echo "$1"
  for tree_c in $(ps -A -o pid= -o ppid= | awk -v p="$1" '$2 == p { print $1 }'); do tree "$tree_c"; done
}
# Ends process $1 (pid $2) as taskproof killed it: the process and everything it started.
killed() {
  eval "show $1 \$N$1"
  command kill -KILL $(tree "$2") 2>/dev/null
  wait "$2" 2>/dev/null
  say "# process $1 killed"
}
# Ends process $1 (pid $2) as taskproof closed it: its input is closed (by the caller); it may
# take a moment to exit, then whatever is left of it is killed.
closed() {
  closed_i=0
  while command kill -0 "$2" 2>/dev/null && [ "$closed_i" -lt 40 ]; do closed_i=$(( closed_i + 1 )); sleep 0.05; done
  eval "show $1 \$N$1"
  command kill -KILL $(tree "$2") 2>/dev/null
  wait "$2" 2>/dev/null
  say "# process $1 ended at the end of its input"
}
finish() {
  for finish_p in $PIDS; do command kill -KILL $(tree "$finish_p") 2>/dev/null; done
  for finish_f in "$W"/*.err; do
    [ -s "$finish_f" ] || continue
    say "# stderr of process $(basename "$finish_f" .err):"; sed 's/^/#   /' "$finish_f"
  done
  rm -rf "$W"
  say "# the store's folder is kept: $ROOT"
  exit "${1:-0}"
}
"##;

/// A one-line pipe of process `n`'s lines into it, on a fresh folder; `rooted`: some of them
/// name the scenario's root.
pub(super) fn pipe_command(n: usize, launch: &Launch, rooted: bool) -> String {
    let root = &launch.root;
    let mut env = String::new();
    for (k, v) in &launch.env {
        let _ = write!(env, "{k}={} ", quote_rooted(v, root));
    }
    let args: String = launch
        .args
        .iter()
        .map(|a| format!(" {}", quote_rooted(a, root)))
        .collect();
    let cd = launch
        .cwd
        .as_ref()
        .map(|c| {
            let c = quote_rooted(&c.to_string_lossy(), root);
            format!("mkdir -p {c} && cd {c} && ")
        })
        .unwrap_or_default();
    // Lines that name the scenario's root name the new one.
    let input = if rooted {
        format!(
            "sed \"s|{}|$ROOT|g\" \"$IN\" | ",
            launch.root.to_string_lossy().replace('|', "\\|")
        )
    } else {
        String::new()
    };
    let from = if rooted { "" } else { " < \"$IN\"" };
    format!(
        "ROOT=$(mktemp -d); IN=$PWD/process-{n}.in.jsonl\n{input}({cd}{env}sh -c {} sh{args}{from})",
        quote_rooted(&launch.script, root)
    )
}
