//! Consequence classes (docs/spec.md, "Consequence classes") in every reporter: a run of the
//! naive store with one failure of each class leads each report with the lost data.

use crate::util::{taskproof, tempdir};

/// One scenario the naive store fails for each class, given in the reverse of severity.
const FAILING: [(&str, &str); 4] = [
    ("status-outside-the-three-is-invalid", "input"),
    ("rt04-circular-dependency", "accepts-refused"),
    ("rt07-deletion", "inconsistent"),
    (
        "symlinked-task-file-is-corrupt-and-never-followed",
        "data-loss",
    ),
];

#[test]
fn every_reporter_names_each_failures_class_and_leads_with_lost_data() {
    let d = tempdir();
    let (json, md, junit) = (
        d.path().join("run.json"),
        d.path().join("run.md"),
        d.path().join("run.xml"),
    );
    let mut cmd = taskproof();
    cmd.args([
        "run",
        "--target",
        "naive",
        "--profile",
        "strict",
        "--color",
        "never",
    ]);
    for (id, _) in FAILING {
        cmd.args(["--filter", id]);
    }
    for (kind, path) in [("json", &json), ("md", &md), ("junit", &junit)] {
        cmd.arg("--report")
            .arg(format!("{kind}:{}", path.display()));
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");

    // Terminal: each failure block names its class; the summary groups them, most severe
    // first, just above the last line.
    for (id, class) in FAILING {
        let block = stdout
            .split("FAIL ")
            .find(|b| b.starts_with(&format!("{id}:")))
            .unwrap_or_else(|| panic!("no block for {id}: {stdout}"));
        assert!(
            block.contains(&format!("\n  class:    {class} (")),
            "{block}"
        );
    }
    let lines: Vec<&str> = stdout.lines().collect();
    let at = lines
        .iter()
        .position(|l| *l == "failed, by consequence (most severe first):")
        .unwrap_or_else(|| panic!("{stdout}"));
    assert_eq!(
        &lines[at + 1..],
        &[
            "  data-loss (loses or corrupts acknowledged data), 1 failed on S17: symlinked-task-file-is-corrupt-and-never-followed",
            "  inconsistent (leaves the store inconsistent), 1 failed on S10: rt07-deletion",
            "  accepts-refused (accepts what the contract refuses), 1 failed on S7: rt04-circular-dependency",
            "  input (input checking), 1 failed on S3: status-outside-the-three-is-invalid",
            "0 passed, 4 failed, 0 errors, 0 skipped",
        ],
        "{stdout}"
    );

    // JSON: each scenario and failure has its class; `by_class` is most severe first.
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let classes: Vec<&str> = report["by_class"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["class"].as_str().unwrap())
        .collect();
    assert_eq!(
        classes,
        ["data-loss", "inconsistent", "accepts-refused", "input"]
    );
    assert_eq!(
        report["by_class"][0]["scenarios"],
        serde_json::json!(["symlinked-task-file-is-corrupt-and-never-followed"])
    );
    for s in report["scenarios"].as_array().unwrap() {
        let id = s["id"].as_str().unwrap();
        let class = FAILING.iter().find(|(i, _)| *i == id).unwrap().1;
        assert_eq!(s["class"], class, "{id}");
        assert!(
            s["failures"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f["class"] == class),
            "{s}"
        );
    }
    // And it reads back through the schema, classes and all.
    let back = taskproof_report::schema::parse::<taskproof_report::schema::RunReport>(
        &json,
        &std::fs::read_to_string(&json).unwrap(),
    )
    .unwrap();
    assert_eq!(back.by_class.len(), 4);

    // Markdown: the classes before the table, the table's failures most severe first.
    let md = std::fs::read_to_string(&md).unwrap();
    let first = |s: &str| md.find(s).unwrap_or_else(|| panic!("{s} not in {md}"));
    assert!(first("Failed, by consequence") < first("| scenario | outcome | class |"));
    assert!(md.contains("- **data-loss (loses or corrupts acknowledged data), 1 failed on S17"));
    let rows: Vec<usize> = FAILING
        .iter()
        .rev()
        .map(|(id, class)| first(&format!("| `{id}` | fail | {class} |")))
        .collect();
    assert!(rows.windows(2).all(|w| w[0] < w[1]), "{md}");

    // JUnit: a `class` property, and the class leads the failure's message.
    let xml = std::fs::read_to_string(&junit).unwrap();
    for (id, class) in FAILING {
        let case = &xml[xml.find(&format!("name=\"{id}\"")).unwrap()..];
        let case = &case[..case.find("</testcase>").unwrap()];
        assert!(
            case.contains(&format!("name=\"class\" value=\"{class}\"")),
            "{case}"
        );
        assert!(case.contains(&format!("message=\"[{class}] ")), "{case}");
    }
}

/// A failure counts against the step that failed, not the scenario's later steps: an early
/// update the store refuses (here a patch the reference rightly refuses, which the scenario
/// wrongly expects to be taken) is no S14 data loss, though the scenario tests S14; and a
/// refusal of the wrong kind is no `accepts-refused`.
#[test]
fn a_refused_step_counts_against_the_rule_its_refusal_breaks_not_the_scenarios() {
    let dir = tempdir();
    let scenario = |id: &str, steps: &str| {
        format!(r#"{{"id": "{id}", "title": "t", "rules": ["S14"], "steps": {steps}}}"#)
    };
    std::fs::write(
        dir.path().join("refused.json"),
        scenario(
            "refused-early",
            r#"[{"send": {"op": "create", "list": "l", "task": {"subject": "a"}}, "expect": {"ok": true}},
                {"send": {"op": "update", "list": "l", "id": "1", "patch": {"bogus": 1}}, "expect": {"ok": true}},
                {"restart": "main"},
                {"send": {"op": "get", "list": "l", "id": "1"}, "expect": {"ok": true}}]"#,
        ),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("wrong-kind.json"),
        scenario(
            "wrong-kind",
            r#"[{"send": {"op": "update", "list": "l", "id": "7", "patch": {}}, "expect": {"error": "dangling"}}]"#,
        ),
    )
    .unwrap();
    let json = dir.path().join("run.json");
    let out = taskproof()
        .args(["run", ".", "--target", "reference", "--color", "never"])
        .arg("--report")
        .arg(format!("json:{}", json.display()))
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let block = |id: &str| {
        let at = stdout
            .find(&format!("FAIL {id}"))
            .unwrap_or_else(|| panic!("{id} did not fail:\n{stdout}"));
        stdout[at..].split("\nFAIL ").next().unwrap().to_string()
    };
    let early = block("refused-early");
    assert!(early.contains("\n  rules:    S11\n"), "{early}");
    assert!(
        early.contains(
            "class:    input (input checking): a request the contract accepts was refused (invalid)"
        ),
        "{early}"
    );
    let wrong = block("wrong-kind");
    assert!(wrong.contains("\n  rules:    S6\n"), "{wrong}");
    assert!(
        wrong.contains("class:    input (input checking): refused as not_found where the contract says dangling"),
        "{wrong}"
    );
    assert!(!stdout.contains("data-loss"), "{stdout}");
    assert!(!stdout.contains("accepts-refused"), "{stdout}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    for s in report["scenarios"].as_array().unwrap() {
        assert_eq!(s["class"], "input", "{s:#}");
        assert_eq!(s["failures"][0]["class"], "input", "{s:#}");
    }
}
