//! The Markdown views of the background records: one version's cases (probe.rs), the race
//! (race.rs), and the table of cases across versions.

use std::collections::BTreeMap;

use serde_json::{Value, json};

/// The Markdown summary of a [`run`] record.
pub fn markdown(report: &Value, command: &str) -> String {
    let mut md = String::new();
    let version = report["version"].as_str().unwrap_or("?");
    md.push_str(&format!(
        "# Background tasks on Claude Code {version}\n\nRecorded by `{command}` ({}; load at the end {}). \
         The JSON beside this file has every observation; this is the summary. A finding is a \
         departure from the seed's task system (one notification per task, the processes gone \
         once a task is killed or its session ends), as seen.\n\n",
        report["drive"].as_str().unwrap_or(""),
        report["load_at_end"].as_str().unwrap_or("?")
    ));
    let tools = &report["tools"];
    md.push_str(&format!(
        "Tools: output {}, kill {}; ids seen: {}.\n\n",
        match tools["output"].as_array() {
            Some(o) => format!(
                "`{}` ({})",
                o[0].as_str().unwrap_or(""),
                o[1].as_str().unwrap_or("")
            ),
            None => "none (the model is told to `Read` the output file; the driver reads the file)"
                .into(),
        },
        tools["kill"]
            .as_array()
            .map(|k| format!(
                "`{}` ({})",
                k[0].as_str().unwrap_or(""),
                k[1].as_str().unwrap_or("")
            ))
            .unwrap_or_default(),
        report["ids_seen"]
            .as_array()
            .map(|ids| ids
                .iter()
                .take(4)
                .filter_map(Value::as_str)
                .map(|i| format!("`{i}`"))
                .collect::<Vec<_>>()
                .join(", "))
            .unwrap_or_default()
    ));
    md.push_str("| case | issues | findings | seconds |\n|---|---|---|---|\n");
    for c in report["cases"].as_array().into_iter().flatten() {
        let issues: Vec<String> = c["issues"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(|u| format!("#{}", u.rsplit('/').next().unwrap_or(u)))
            .collect();
        let mut findings: Vec<String> = c["findings"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(|f| f.replace('|', "\\|").replace('\n', " "))
            .collect();
        if let Some(e) = c["error"].as_str() {
            findings.push(format!(
                "target error: {}",
                e.replace('|', "\\|").replace('\n', " ")
            ));
        }
        md.push_str(&format!(
            "| {} | {} | {} | {:.1} |\n",
            c["case"].as_str().unwrap_or(""),
            issues.join(", "),
            if findings.is_empty() {
                "none".to_string()
            } else {
                findings.join("<br>")
            },
            c["seconds"].as_f64().unwrap_or(0.0)
        ));
    }
    md.push_str("\n## Observed, per case\n\n");
    for c in report["cases"].as_array().into_iter().flatten() {
        let mut o = c["observed"].clone();
        if let Value::Object(m) = &mut o {
            m.remove("notifications_raw");
        }
        md.push_str(&format!(
            "### {}\n\n```json\n{}\n```\n\n",
            c["case"].as_str().unwrap_or(""),
            serde_json::to_string_pretty(&o).unwrap_or_default()
        ));
    }
    md
}

/// The Markdown summary of a [`race`] record.
pub fn race_markdown(r: &Value, version: &str, command: &str) -> String {
    let mut md = format!(
        "# The kill/complete race on Claude Code {version}\n\nRecorded by `{command}`. {} background \
         tasks are started in one turn and held at a gate (a shared `flock` on a file the harness \
         holds exclusively); once all {} wait there, the gate opens and each task sleeps its own \
         delay (0 to {} ms in equal steps, shuffled) and exits 0, while all of them are killed \
         with `{}` in one turn, in shuffled order. Every id is then accounted for: its kill's \
         answer, how often the model was notified of it and with which status, and whether a \
         process of it is alive (read from /proc).\n\n",
        r["tasks"],
        r["waiting_at_gate_before_release"],
        r["spread_ms"],
        r["kill_tool"].as_str().unwrap_or("the kill tool")
    );
    md.push_str(&format!(
        "Time: {} ms in all (opening the session {} ms, the spawn turn {} ms, the kill turn {} ms, \
         waiting for notifications {} ms, then 2 s for late duplicates, then one more prompt and \
         2 s for notifications held back until it); load average {} before, {} \
         after (`uptime`: {}). Model requests: {}.\n\n| outcome | tasks |\n|---|---|\n",
        r["total_ms"],
        r["open_ms"],
        r["spawn_turn_ms"],
        r["kill_turn_ms"],
        r["notifications_wait_ms"],
        r["load_before"].as_str().unwrap_or(""),
        r["load_after"].as_str().unwrap_or(""),
        r["uptime_before"].as_str().unwrap_or(""),
        r["model_requests"]
    ));
    for (k, v) in r["tally"].as_object().into_iter().flatten() {
        md.push_str(&format!("| {k} | {v} |\n"));
    }
    let rows = r["per_task"].as_array().cloned().unwrap_or_default();
    let killed: Vec<u64> = rows
        .iter()
        .filter(|x| x["kill"] == "killed")
        .filter_map(|x| x["delay_ms"].as_u64())
        .collect();
    let other: Vec<u64> = rows
        .iter()
        .filter(|x| x["kill"] != "killed")
        .filter_map(|x| x["delay_ms"].as_u64())
        .collect();
    md.push_str(&format!(
        "\nDelays of the tasks whose kill said killed: {}; of the others: {}. Every task is in \
         `background-race.json` (`per_task`).\n",
        range(&killed),
        range(&other)
    ));
    md
}

fn range(v: &[u64]) -> String {
    match (v.iter().min(), v.iter().max()) {
        (Some(a), Some(b)) => format!("{} tasks, {a}-{b} ms", v.len()),
        _ => "none".into(),
    }
}

/// One short cell per case of a [`run`] record, for the table across versions.
fn cell(c: &Value) -> String {
    if let Some(e) = c["error"].as_str() {
        return format!("target error: {}", e.lines().next().unwrap_or(""));
    }
    let o = &c["observed"];
    let notified = |tasks: &Value| -> String {
        let mut counts: BTreeMap<String, usize> = BTreeMap::new();
        for t in tasks.as_object().into_iter().flatten().map(|(_, t)| t) {
            let statuses: Vec<String> = t["statuses"]
                .as_array()
                .into_iter()
                .flatten()
                .zip(t["exit_codes"].as_array().into_iter().flatten())
                .map(|(s, e)| match e.as_i64() {
                    Some(e) => format!("{} {e}", s.as_str().unwrap_or("")),
                    None => s.as_str().unwrap_or("").to_string(),
                })
                .collect();
            let key = if statuses.is_empty() {
                "never".to_string()
            } else {
                format!("{}× {}", statuses.len(), statuses.join(", "))
            };
            *counts.entry(key).or_default() += 1;
        }
        counts
            .iter()
            .map(|(k, n)| {
                if *n > 1 {
                    format!("{n} tasks {k}")
                } else {
                    k.clone()
                }
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    let ms = |v: &Value| {
        v.as_u64()
            .map(|m| format!("{m} ms"))
            .unwrap_or("not within the wait".into())
    };
    let short = |v: &Value| {
        v["text"]
            .as_str()
            .map(|t| format!("{t:?}"))
            .or_else(|| {
                v["error"].as_str().map(|e| {
                    if e.contains("No task found") {
                        "No task found".to_string()
                    } else {
                        e.to_string()
                    }
                })
            })
            .unwrap_or_default()
    };
    match c["case"].as_str().unwrap_or("") {
        "completion" | "failure" | "five-finish-together" | "output-flood" => {
            let mut s = format!("notified {}", notified(&o["tasks"]));
            if c["case"] == "output-flood" {
                s.push_str(&format!(
                    "; file {} bytes, output tool {}",
                    o["output_file_bytes"],
                    if o["output_tool_chars"].is_null() {
                        short(&json!({"error": o["output_tool_tail"]}))
                    } else {
                        format!("{} chars", o["output_tool_chars"])
                    }
                ));
            }
            s
        }
        "kill-while-running" => format!(
            "kill: {}; processes gone after {}; notified {}; kill again: {}",
            o["kill"].as_str().unwrap_or(""),
            ms(&o["processes_gone_after_ms"]),
            notified(&o["tasks"]),
            o["second_kill"]
                .as_str()
                .unwrap_or("")
                .split(" (")
                .next()
                .unwrap_or("")
        ),
        "output-before-during-after" => format!(
            "{} / {} / {}; notified {}",
            short(&o["before"]),
            short(&o["during"]),
            short(&o["after"]),
            notified(&o["tasks"])
        ),
        "output-consumed-then-notified" => format!(
            "consumed: {}; notified {} in all, {} before the read",
            o["consumed"], o["notified_in_all"], o["notified_before_consumed"]
        ),
        "kill-after-finish" => format!(
            "finished task: {}; task that left a child: {}, {} process(es) alive after",
            o["finished"]["kill"]
                .as_str()
                .unwrap_or("")
                .split(" (")
                .next()
                .unwrap_or(""),
            o["left_a_child"]["kill"]
                .as_str()
                .unwrap_or("")
                .split(" (")
                .next()
                .unwrap_or(""),
            o["left_a_child"]["alive_after_kill"]
        ),
        "kill-process-tree" => format!(
            "kill: {}; all {} processes gone after {}; notified {}",
            o["kill"].as_str().unwrap_or(""),
            o["before_kill"].as_array().map_or(0, Vec::len),
            ms(&o["all_gone_after_ms"]),
            notified(&o["tasks"])
        ),
        "session-exit-with-tasks-running" | "session-sigkill-with-tasks-running" => format!(
            "CLI gone after {}; {} of {} task processes alive 2 s later",
            ms(&o["cli_gone_after_ms"]),
            o["task_processes_2s_after"].as_array().map_or(0, Vec::len),
            o["task_processes_before"]
        ),
        "never-ends" => format!(
            "notified {} in 5 s; kill: {}; gone after {}",
            o["notified_within_5s"],
            o["kill"].as_str().unwrap_or(""),
            ms(&o["gone_after_ms"])
        ),
        _ => String::new(),
    }
}

/// The table across versions: one row per case, one column per record.
pub fn table(records: &[Value]) -> String {
    let mut md = String::from("| case |");
    for r in records {
        md.push_str(&format!(" {} |", r["version"].as_str().unwrap_or("?")));
    }
    md.push_str("\n|---|");
    md.push_str(&"---|".repeat(records.len()));
    md.push('\n');
    let tools = |r: &Value| {
        let t = &r["tools"];
        format!(
            "{} / {}",
            t["output"]
                .as_array()
                .and_then(|o| o[0].as_str())
                .unwrap_or("none"),
            t["kill"]
                .as_array()
                .and_then(|k| k[0].as_str())
                .unwrap_or("?")
        )
    };
    md.push_str("| output / kill tool |");
    for r in records {
        md.push_str(&format!(" {} |", tools(r)));
    }
    md.push_str("\n| ids |");
    for r in records {
        md.push_str(&format!(" `{}` |", r["ids_seen"][0].as_str().unwrap_or("")));
    }
    md.push('\n');
    let names: Vec<String> = records
        .first()
        .and_then(|r| r["cases"].as_array())
        .map(|c| {
            c.iter()
                .filter_map(|c| c["case"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    for name in names {
        md.push_str(&format!("| {name} |"));
        for r in records {
            let c = r["cases"]
                .as_array()
                .and_then(|cs| cs.iter().find(|c| c["case"] == name.as_str()));
            md.push_str(&format!(
                " {} |",
                c.map(cell).unwrap_or_default().replace('|', "\\|")
            ));
        }
        md.push('\n');
    }
    md
}
