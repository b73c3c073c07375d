//! The fuzzing loop of `taskproof fuzz`: proptest generates sequences from a seeded RNG
//! (the same seed gives the same cases), the driver runs each against the target and the
//! oracle, and on the first divergence proptest shrinks the sequence to a minimal one, which
//! is written out as a scenario.

use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};

use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};

use super::driver::{History, Setup, run_case};
use super::finding::{Finding, finding};
use super::strategy::steps;

/// What to fuzz and how much.
#[derive(Debug, Clone)]
pub struct Plan {
    pub setup: Setup,
    pub cases: u32,
    pub steps: usize,
    pub seed: u64,
    /// Generate steps that write into the target's files (strict profile only: the oracle
    /// predicts them only there).
    pub files: bool,
}

/// How a fuzzing run ended.
#[derive(Debug)]
pub enum Outcome {
    /// Every case agreed.
    Clean { cases: u32 },
    /// A divergence, shrunk and written up.
    Found {
        finding: Box<Finding>,
        history: Box<History>,
        /// Cases run before the failing one was found (shrinking runs not counted).
        cases: u32,
    },
}

/// A failure of the harness itself (not of the target).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct RunError(pub String);

fn rng(seed: u64) -> TestRng {
    let mut bytes = [0u8; 32];
    for chunk in bytes.chunks_mut(8) {
        chunk.copy_from_slice(&seed.to_le_bytes());
    }
    TestRng::from_seed(RngAlgorithm::ChaCha, &bytes)
}

/// Runs the plan; `progress` is told the number of cases finished so far.
pub fn fuzz(plan: &Plan, progress: &dyn Fn(u32)) -> Result<Outcome, RunError> {
    let config = Config {
        cases: plan.cases,
        max_shrink_iters: 2048,
        // A target that hangs costs a timeout per shrinking run; stop shrinking after two
        // minutes and write what there is by then.
        max_shrink_time: 120_000,
        failure_persistence: None,
        // A sequence that diverged is never rejected; local rejects do not occur.
        max_global_rejects: 0,
        ..Config::default()
    };
    let mut runner = TestRunner::new_with_rng(config, rng(plan.seed));
    let strategy = steps(plan.steps, plan.files, true);
    let done = Cell::new(0u32);
    let shrinking = Cell::new(false);
    let harness_error: RefCell<Option<String>> = RefCell::new(None);
    let result = runner.run(&strategy, |case| {
        if harness_error.borrow().is_some() {
            return Ok(());
        }
        let history = match run_case(&plan.setup, &case) {
            Ok(h) => h,
            Err(e) => {
                *harness_error.borrow_mut() = Some(e);
                return Ok(());
            }
        };
        if !shrinking.get() {
            done.set(done.get() + 1);
            progress(done.get());
        }
        match history.divergence {
            None => Ok(()),
            Some(d) => {
                shrinking.set(true);
                Err(TestCaseError::fail(d.summary()))
            }
        }
    });
    if let Some(e) = harness_error.into_inner() {
        return Err(RunError(e));
    }
    match result {
        Ok(()) => Ok(Outcome::Clean { cases: plan.cases }),
        Err(TestError::Fail(_, minimal)) => {
            let history = run_case(&plan.setup, &minimal).map_err(RunError)?;
            let Some(finding) = finding(&history, plan.seed, plan.setup.profile) else {
                return Err(RunError(
                    "a divergence was found but did not happen again when replayed; the target \
                     is not deterministic"
                        .into(),
                ));
            };
            Ok(Outcome::Found {
                finding: Box::new(finding),
                history: Box::new(history),
                cases: done.get(),
            })
        }
        Err(TestError::Abort(why)) => Err(RunError(format!("the fuzzer gave up: {why}"))),
    }
}

/// Where a finding goes: `DIR/fuzz-FINGERPRINT.json`.
pub fn finding_path(dir: &Path, finding: &Finding) -> PathBuf {
    dir.join(format!("fuzz-{}.json", finding.fingerprint))
}

/// Writes the finding's scenario; `Ok(false)` when a file of that fingerprint already
/// exists (a known finding), which is left as it is.
pub fn write_finding(dir: &Path, finding: &Finding) -> std::io::Result<bool> {
    std::fs::create_dir_all(dir)?;
    let path = finding_path(dir, finding);
    if path.exists() {
        return Ok(false);
    }
    let mut text = serde_json::to_string_pretty(&finding.scenario).expect("values serialize");
    text.push('\n');
    std::fs::write(path, text)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use proptest::strategy::{Strategy, ValueTree};

    use super::*;

    fn first_case(seed: u64) -> Vec<crate::fuzz::strategy::Step> {
        let mut runner = TestRunner::new_with_rng(Config::default(), rng(seed));
        steps(24, true, true)
            .new_tree(&mut runner)
            .expect("the strategy generates")
            .current()
    }

    #[test]
    fn the_same_seed_generates_the_same_cases() {
        assert_eq!(first_case(42), first_case(42));
        assert_ne!(first_case(42), first_case(43));
    }
}
