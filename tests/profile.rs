//! Recorded profiles (docs/profiles.md): `taskproof record`, `run --profile` with a recorded
//! profile, and `taskproof profile diff`, through the library and the built binary. Here the
//! helpers every part uses; recording (record.rs), a run held to a recording (held.rs),
//! diff and merge (diff_merge.rs), the shipped profiles (shipped.rs) and
//! scripts/hold-profiles.sh (hold_script.rs).

mod diff_merge;
mod held;
mod hold_script;
mod record;
mod shipped;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;
use taskproof_core::protocol::Feature;
use taskproof_profile::recorded::Recorded;
use taskproof_profile::{Mode, Observer, Profile, diff};
use taskproof_scenario::{Action, RunConfig, Scenario};
use taskproof_store::Mutant;
use taskproof_targets::TargetSpec;

use crate::util::{Tool, repo, require, taskproof_in, tempdir};

/// The shipped scenarios without concurrent blocks (those are recorded the same way, only
/// slower; the racy marking has its own tests, record.rs).
fn sequential() -> Vec<Scenario> {
    taskproof_scenario::load_dir(&repo().join("scenarios"))
        .expect("the shipped scenarios load")
        .into_iter()
        .filter(|s| {
            !s.steps_for(Profile::Strict)
                .any(|st| matches!(st.action, Action::Concurrent(_)))
        })
        // The scenarios on an agent session's own list are not judged against a store, so
        // the stores these tests record have nothing to say about them.
        .filter(|s| {
            !s.needs_for(Profile::Strict)
                .contains_key(&Feature::SessionList)
        })
        .collect()
}

/// Records `scenarios` against `target` once, through the library.
fn record(target: TargetSpec, name: &str, scenarios: &[Scenario]) -> Recorded {
    let observer = Arc::new(Observer::default());
    let config = RunConfig {
        mode: Mode::Record(observer.clone()),
        profile: Profile::Strict,
        ..RunConfig::new(target.clone())
    };
    let suite = taskproof_scenario::run_suite(scenarios, &config, &mut |_| {});
    assert!(suite.target.hello.is_ok(), "{:?}", suite.target.hello);
    Recorded::from_runs(name, json!({"target": target.to_string()}), observer.take())
}

fn scenario_file(id: &str) -> PathBuf {
    repo().join("scenarios").join(format!("{id}.json"))
}

/// Runs the binary in `dir`; (exit code, stdout, stderr).
fn tp(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = taskproof_in(dir)
        .args(args)
        .output()
        .expect("run taskproof");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const HEAD: &str = r#""format": 1, "recorded": {"target": "t", "date": "2026-01-01"}"#;

fn write(dir: &Path, name: &str, scenarios: &str) -> String {
    let path = dir.join(name);
    let text = format!(
        r#"{{"profile": "{}", {HEAD}, "scenarios": {scenarios}}}"#,
        name.trim_end_matches(".json")
    );
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}
