#!/usr/bin/env python3
"""Writes reports/fuzz-recall.md (to stdout) from scripts/fuzz-recall.sh's runs.

For each target: the rules the scenario suite fails on it (from the checked-in suite report
named in SUITE below), the rules the fuzzer's confirmed findings name within the budget, the
time to the first finding of each rule, each finding's shrunk scenario, what the run sent, and
cases per second. Rules the suite fails that the fuzzer did not find are listed with why, from
REACH below (what random sequences of one session cannot do, and what reaches it instead).

Standard library only; reads reports/fuzz-recall/NAME/{fuzz.json,load.txt,not-run.txt}.
"""

import json
import os
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
OUT = os.path.join(ROOT, "reports", "fuzz-recall")

# Target name -> (the product as people know it, the suite report its "suite fails" column
# reads).
TARGETS = [
    ("dex", "@zeeg/dex 0.16.0 (mcp)", "reports/mcp/dex/run.json"),
    ("mcp-taskmanager", "@kazuph/mcp-taskmanager 1.1.1 (mcp)", "reports/mcp/mcp-taskmanager/run.json"),
    ("ohno-mcp", "@stevestomp/ohno-mcp 0.20.0 (mcp)", "reports/mcp/ohno-mcp/run.json"),
    ("task-orchestrator", "@allpepper/task-orchestrator 3.3.3 (mcp)", "reports/mcp/task-orchestrator/run.json"),
    ("mcp-shrimp-task-manager", "mcp-shrimp-task-manager 1.0.21 (mcp)", "reports/mcp/mcp-shrimp-task-manager/run.json"),
    ("learn-claude-code", "learn-claude-code s07 (cmd)", "reports/matrix/learn-claude-code-s07/run.json"),
    ("task-master", "task-master-ai 0.43.1 (cmd)", "reports/matrix/task-master-0.43.1/run.json"),
    ("claude-code-2.1.112", "Claude Code 2.1.112, print mode, agent teams off", "reports/claude-code/2.1.112/run.json"),
    ("claude-code-2.1.332", "Claude Code 2.1.332, print mode, agent teams off", "reports/claude-code/2.1.332/run.json"),
    ("claude-code-controller", "claude-code-controller 0.3.0 (task API)", "reports/claude-code-controller/0.3.0/run.json"),
    ("oh-my-opencode", "oh-my-opencode 4.19.4 (OpenCode)", "reports/oh-my-opencode/4.19.4/run.json"),
]

# The rules a concurrent case's finding can name (issue 53): S19 for a history no order
# explains, S20 for a claim, S1 for an id handed out twice.
CONCURRENCY = ("S1", "S18", "S19", "S20")

# Rules that one session's random sequence cannot reach, and what does.
REACH = {
    "S18": "whole files under concurrent readers and SIGKILL mid-write: a sequence runs one request at a time, so no reader is ever concurrent with a write; `taskproof race` (its readers and kills) reaches it",
    "S19": "concurrent writers: the run's concurrent cases did not meet it within the budget (see *concurrency*); `taskproof race` reaches it at scale",
    "S14": "what vanishes between requests or over a restart: needs `--settle` (and for Claude Code its terminal UI), `--wait-max`, or restarts the target honours",
}


def rule_key(r):
    return (r[0], int(r[1:])) if r[1:].isdigit() else (r[0], 0)


def suite_rules(path):
    full = os.path.join(ROOT, path)
    if not os.path.exists(full):
        return None
    d = json.load(open(full))
    rules = set()
    for s in d["scenarios"]:
        if s["outcome"] != "fail":
            continue
        failures = s.get("failures") or []
        for f in failures:
            rules.update(f.get("rules") or [])
        if not failures:
            rules.update(s.get("rules") or [])
    return rules


def read(path):
    try:
        return open(path).read()
    except OSError:
        return ""


def main():
    w = sys.stdout.write
    w("# Fuzzer recall on real targets\n\n")
    w(
        "Made by `scripts/fuzz-recall.sh` (issues 47 and 53): `taskproof fuzz` against every real target "
        "taskproof has, each with the same budget, then this page by "
        "`scripts/fuzz_recall_table.py`. *Suite fails* are the rules of the failed scenarios in "
        "the checked-in suite report named per row; *fuzzer found* are the rules of the "
        "confirmed findings (shrunk, replayed as a scenario that fails, written under "
        "`reports/fuzz-recall/NAME/findings/`). docs/fuzzing.md says how to read a run's "
        "summary. *Concurrency* (issue 53): the concurrent cases run (a parallel part of two or "
        "three sessions judged against the model of the whole store), those the search left "
        "undecided, and the concurrency rules (S1 by concurrent creates, S18, S19, S20) their "
        "confirmed findings name, each with the time to its first finding and in how many "
        "replays its scenario failed; the parallel part is off under a model that promises "
        "nothing of concurrent sessions.\n\n"
    )
    rows = []
    details = []
    for name, product, suite in TARGETS:
        d = os.path.join(OUT, name)
        not_run = read(os.path.join(d, "not-run.txt")).strip()
        fails = suite_rules(suite)
        fj = os.path.join(d, "fuzz.json")
        if not_run or not os.path.exists(fj):
            why = not_run or "no run"
            rows.append(f"| {product} | {', '.join(sorted(fails or [], key=rule_key))} | {why} | | | | |")
            continue
        r = json.load(open(fj))
        load = read(os.path.join(d, "load.txt")).strip().replace("\n", "; ")
        first = {}
        for f in r["found"]:
            for rule in f["rules"]:
                t = f["after_ms"] / 1000
                if rule not in first or t < first[rule][0]:
                    first[rule] = (t, f)
        found = set(first)
        fails = fails or set()
        missed = sorted(fails - found, key=rule_key)
        extra = sorted(found - fails, key=rule_key)
        secs = r["duration_ms"] / 1000
        rate = r["cases"] / secs if secs else 0
        found_words = ", ".join(f"{x} ({first[x][0]:.0f} s)" for x in sorted(found, key=rule_key))
        conc = [f for f in r["found"] if f.get("replays")]
        conc_rules = {}
        for f in conc:
            for rule in f["rules"]:
                if rule in CONCURRENCY:
                    t = f["after_ms"] / 1000
                    if rule not in conc_rules or t < conc_rules[rule][0]:
                        conc_rules[rule] = (t, f)
        if r.get("parallel_lanes", 0) == 0:
            concurrency = "off" + (" (cc-2.1.17 model)" if r["profile"] != "strict" else "")
        else:
            words = ", ".join(
                f"{x} ({t:.0f} s, {f['failed_replays']} of {f['replays']} replays)"
                for x, (t, f) in sorted(conc_rules.items(), key=lambda kv: rule_key(kv[0]))
            )
            concurrency = (
                f"{r.get('concurrent_cases', 0)} cases, {r.get('unknown_cases', 0)} undecided; "
                f"{words or 'nothing found'}"
            )
        rows.append(
            f"| {product} | {', '.join(sorted(fails, key=rule_key)) or 'none'} "
            f"| {found_words or 'none'} | {', '.join(missed) or 'none'} "
            f"| {', '.join(extra) or 'none'} | {concurrency} "
            f"| {r['cases']} cases in {secs:.0f} s ({rate:.2f} cases/s){' on one root' if r.get('reused_root') else ''} |"
        )
        c = r["coverage"]
        det = [f"## {product}\n"]
        det.append(f"- target: `{r['target']}`, profile `{r['profile']}`, seed {r['seed']}; {load}")
        det.append(f"- suite report: `{suite}`")
        det.append(
            "- offered: {}; sent {} requests for {} generated steps: {}; status changes: {}".format(
                ", ".join(r["offered"]),
                c["sent"],
                c["generated"],
                ", ".join(f"{k} {v}" for k, v in c["ops"].items()),
                ", ".join(f"{k} {v}" for k, v in c["statuses"].items()) or "none",
            )
        )
        if c["left_out"]:
            det.append("- left out: " + ", ".join(f"{k} {v}" for k, v in c["left_out"].items()))
        if c["other"]:
            det.append("- also done: " + ", ".join(f"{k} {v}" for k, v in c["other"].items()))
        if c.get("cases_ms"):
            det.append(
                f"- time: {c['start_ms'] / 1000:.1f} s starting the target in fresh roots, "
                f"{c['cases_ms'] / 1000:.1f} s running cases, of which "
                f"{c['requests_ms'] / 1000:.1f} s waiting for answers; the rest of the run "
                f"({secs - c['cases_ms'] / 1000:.0f} s) is shrinking, replays and starts")
        if c.get("concurrent"):
            det.append(
                f"- concurrent: {c['concurrent']} requests in parallel parts, "
                f"{c['overlapping']} pairs of them in flight at once, "
                f"{c['interleavings']} distinct interleavings")
        for f in r["found"]:
            rate = (
                f", failed in {f['failed_replays']} of {f['replays']} replays"
                if f.get("replays") else ""
            )
            det.append(
                "- `{}` {} ({} s, case {}): {}; scenario `{}`, shrunk {}→{} steps{}".format(
                    f["fingerprint"],
                    ", ".join(f["rules"]),
                    round(f["after_ms"] / 1000),
                    f["case"],
                    f["summary"].replace("|", "\\|"),
                    os.path.relpath(f["file"], ROOT) if os.path.isabs(f["file"]) else f["file"],
                    f["shrink"]["from_steps"],
                    f["shrink"]["to_steps"],
                    rate,
                )
            )
        for u in r["unconfirmed"]:
            det.append(f"- not confirmed `{u['fingerprint']}`: {u['summary']}; {u['why']}")
        for m in missed:
            det.append(f"- **{m} not found**: " + REACH.get(m, "see the notes below"))
        details.append("\n".join(det) + "\n")
    w("| target | suite fails | fuzzer found (time to first) | not found | found beyond the suite | concurrency | cases |\n")
    w("|---|---|---|---|---|---|---|\n")
    for row in rows:
        w(row + "\n")
    w("\n")
    for d in details:
        w(d + "\n")
    notes = os.path.join(OUT, "NOTES.md")
    if os.path.exists(notes):
        w(read(notes))


if __name__ == "__main__":
    main()
