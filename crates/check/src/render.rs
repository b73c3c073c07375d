//! The views of a [`Report`]: a terminal report (colour only when asked for or on a
//! terminal, never with `NO_COLOR`), the JSON document of format version 1, and the stderr
//! text a blocking hook hands to the model.

use serde_json::Value;

use crate::finding::{Finding, Repair};
use crate::fix::{Change, RepairOutcome};
use crate::hook::Verdict;
use crate::run::{Mode, Report};
use taskproof_report::Document;
use taskproof_report::output::{paint, style};
use taskproof_report::schema::{self, CheckChange, CheckFinding, CheckList, CheckReport};

/// The version of the JSON output; it changes when a field changes meaning or goes away.
pub const FORMAT_VERSION: u64 = schema::CHECK_FORMAT;

/// Paints when colour is on, with the shared styles of [`taskproof_report::output`].
struct Paint {
    on: bool,
}

impl Paint {
    fn bold(&self, s: &str) -> String {
        paint(self.on, style::BOLD, s)
    }
    fn red(&self, s: &str) -> String {
        paint(self.on, style::RED, s)
    }
    fn yellow(&self, s: &str) -> String {
        paint(self.on, style::YELLOW, s)
    }
    fn green(&self, s: &str) -> String {
        paint(self.on, style::GREEN, s)
    }
    fn dim(&self, s: &str) -> String {
        paint(self.on, style::DIM, s)
    }
}

/// The check report as the reporters take it: [`terminal`] and [`json`].
impl Document for Report {
    fn terminal(&self, color: bool) -> String {
        terminal(self, color)
    }

    fn json(&self) -> Option<Value> {
        Some(json(self))
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The terminal report.
pub fn terminal(report: &Report, color: bool) -> String {
    let p = Paint { on: color };
    let mut out = String::new();
    // After a fix or a restore, what was changed comes first and the findings below are
    // what is left; a dry run lists the findings first and then what a fix would do.
    if matches!(report.mode, Mode::Fix | Mode::Restore) {
        for c in &report.changes {
            out += &change_line(&p, report.mode, c);
        }
    }
    if report.mode == Mode::Restore && report.changes.is_empty() {
        out += "nothing to restore: no journal of these lists has a task that vanished\n";
    }
    for list in &report.lists {
        let findings: Vec<&Finding> = report
            .findings
            .iter()
            .filter(|f| f.list == list.name)
            .collect();
        out += &format!(
            "{} {} ({}, {})\n",
            p.bold(&list.name),
            p.dim(&list.path.display().to_string()),
            list.layout,
            plural(list.tasks, "task", "tasks"),
        );
        if list.busy {
            out += &format!(
                "  {}\n",
                p.dim("another process held the list's lock while it was read; temporary files were not judged")
            );
        }
        for f in findings {
            out += &finding_line(&p, f);
        }
    }
    // Findings about folders that could not be audited as lists.
    for f in report
        .findings
        .iter()
        .filter(|f| !report.lists.iter().any(|l| l.name == f.list))
    {
        out += &format!("{}\n{}", p.bold(&f.list), finding_line(&p, f));
    }
    if !matches!(report.mode, Mode::Fix | Mode::Restore) {
        for c in &report.changes {
            out += &change_line(&p, report.mode, c);
        }
    }
    let repairable = report
        .findings
        .iter()
        .filter(|f| f.repair.is_some())
        .count();
    let lists = plural(report.lists.len(), "list", "lists");
    let tasks = plural(report.task_count(), "task", "tasks");
    // The summary names the folder, so a run that found no list says where it looked.
    let root = report.root.display();
    if report.is_clean() {
        out += &format!(
            "{}: {lists}, {tasks} in {root}, no findings\n",
            p.green("clean")
        );
    } else {
        let hint = match (repairable, report.mode) {
            (0, _) => String::new(),
            (n, Mode::Check) => format!(", {n} repairable with --fix"),
            (n, _) => format!(", {n} repairable"),
        };
        out += &format!(
            "{}: {lists}, {tasks} in {root}{hint}\n",
            p.red(&plural(report.findings.len(), "finding", "findings")),
        );
    }
    out
}

fn finding_line(p: &Paint, f: &Finding) -> String {
    let tag = format!("{} {}", f.cites(), f.kind);
    let tag = if f.repair.is_some() {
        p.yellow(&tag)
    } else {
        p.red(&tag)
    };
    let fix = match &f.repair {
        Some(r) => p.dim(&format!(" [fix: {r}]")),
        None => String::new(),
    };
    format!("  {} {}: {}{fix}\n", tag, p.bold(&f.file), f.message)
}

fn change_line(p: &Paint, mode: Mode, c: &Change) -> String {
    if mode == Mode::Restore {
        // A task file is `restored`; every other step says what it did in the words the
        // JSON report gives it (the repair's own text).
        let (what, done, not) = match &c.repair {
            Repair::Restore {
                file,
                into,
                version,
            } => {
                let from = version.as_ref().map_or(String::new(), |v| format!(": {v}"));
                (
                    format!("{file} into {into}{from}"),
                    "restored",
                    "not restored",
                )
            }
            Repair::RestoreVanished => (c.repair.to_string(), "restored", "not restored"),
            Repair::PutInReach { file, into, how } => (
                format!("{file} into {into}: {how}"),
                "restored",
                "not restored",
            ),
            other => (other.to_string(), "done", "not done"),
        };
        return match &c.outcome {
            RepairOutcome::Done => format!("{} {}: {what}\n", p.green(done), c.list),
            RepairOutcome::Skipped(why) => {
                format!("{} {}: {what} ({why})\n", p.red(not), c.list)
            }
        };
    }
    match (&c.outcome, mode) {
        (RepairOutcome::Done, Mode::DryRun) => {
            format!("{} {}: {}\n", p.yellow("would fix"), c.list, c.repair)
        }
        (RepairOutcome::Done, _) => format!("{} {}: {}\n", p.green("fixed"), c.list, c.repair),
        (RepairOutcome::Skipped(why), _) => {
            format!("{} {}: {} ({why})\n", p.red("not fixed"), c.list, c.repair)
        }
    }
}

/// The JSON document (format version 1).
pub fn json(report: &Report) -> Value {
    schema::to_value(&document(report))
}

/// The report, in the schema's types.
pub fn document(report: &Report) -> CheckReport {
    CheckReport {
        format_version: FORMAT_VERSION,
        mode: report.mode.as_str().into(),
        root: report.root.display().to_string(),
        lists: report
            .lists
            .iter()
            .map(|l| CheckList {
                name: l.name.clone(),
                path: l.path.display().to_string(),
                layout: l.layout.as_str().into(),
                tasks: l.tasks,
                busy: l.busy,
            })
            .collect(),
        tasks: report.task_count(),
        findings: report.findings.iter().map(finding).collect(),
        changes: report
            .changes
            .iter()
            .map(|c| CheckChange {
                list: c.list.clone(),
                change: c.repair.to_string(),
                done: c.outcome == RepairOutcome::Done,
                skipped: match &c.outcome {
                    RepairOutcome::Done => None,
                    RepairOutcome::Skipped(why) => Some(why.clone()),
                },
            })
            .collect(),
    }
}

fn finding(f: &Finding) -> CheckFinding {
    CheckFinding {
        list: f.list.clone(),
        file: f.file.clone(),
        rule: f.cites().to_string(),
        kind: f.kind.as_str().into(),
        message: f.message.clone(),
        repairable: f.repair.is_some(),
    }
}

/// What a blocking hook writes on stderr: one line per thing the change brings, naming
/// the rule, the kind and the task's file, for the model to act on; then the notes.
pub fn hook_stderr(v: &Verdict) -> String {
    let mut out = format!(
        "taskproof: this change would leave the task list {} unsafe:\n",
        v.list
    );
    for f in &v.blocking {
        out += &format!("- [{} {}] {}: {}\n", f.cites(), f.kind, f.file, f.message);
    }
    for n in &v.notes {
        out += n;
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_report_is_clean_and_uncoloured_without_colour() {
        let r = Report {
            mode: Mode::Check,
            root: "/t/tasks".into(),
            lists: Vec::new(),
            findings: Vec::new(),
            changes: Vec::new(),
        };
        let text = terminal(&r, false);
        assert_eq!(text, "clean: 0 lists, 0 tasks in /t/tasks, no findings\n");
        assert!(terminal(&r, true).contains("\x1b[32mclean\x1b[0m"));
        assert_eq!(json(&r)["format_version"], 1);
    }

    #[test]
    fn a_restores_changes_read_the_same_in_the_terminal_and_in_json() {
        let change = |repair| Change {
            list: "plan".into(),
            repair,
            outcome: RepairOutcome::Done,
        };
        let r = Report {
            mode: Mode::Restore,
            root: "/t/plan".into(),
            lists: Vec::new(),
            findings: Vec::new(),
            changes: vec![
                change(Repair::Restore {
                    file: "1.json".into(),
                    into: "/t/back".into(),
                    version: None,
                }),
                change(Repair::RestoreHighwatermark {
                    into: "/t/back".into(),
                    to: 3,
                }),
            ],
        };
        let text = terminal(&r, false);
        let doc = json(&r);
        let hwm = doc["changes"][1]["change"].as_str().unwrap();
        assert_eq!(hwm, "set .highwatermark of /t/back to 3");
        assert!(text.contains(&format!("plan: {hwm}\n")), "{text}");
        assert!(
            text.contains("restored plan: 1.json into /t/back\n"),
            "{text}"
        );
    }
}
