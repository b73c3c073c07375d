//! The fuzzing loop of `taskproof fuzz`: proptest generates sequences from a seeded RNG
//! (the same seed gives the same cases, whatever was found), the driver runs each against
//! the target and the oracle, and the run keeps going after a divergence, so one run
//! collects every distinct finding it meets.
//!
//! Each divergence is deduplicated by its fingerprint (the op, the expected and actual kind
//! of answer, the differing fields and the rules: [`super::finding::fingerprint`]). The
//! first divergence of a fingerprint is shrunk, within the step and time bounds of the plan
//! and only through sequences that keep the same fingerprint (so shrinking cannot wander off
//! to another bug), written up as a scenario, and replayed with the scenario runner before
//! the file is written: a finding whose scenario passes when replayed is reported as not
//! confirmed (a flaky target, or a divergence the scenario cannot show) and not written.
//! Later divergences of a fingerprint already found only count; fingerprints in the plan's
//! known findings are left out.
//!
//! Shrinking is driven here through proptest's `ValueTree` rather than by proptest's own
//! `TestRunner::run`, which stops at the first failure and prints its own messages
//! ("Aborting shrinking after taking too long … PROPTEST_MAX_SHRINK_TIME") that name knobs a
//! user of taskproof does not have.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

use crate::coverage::Coverage;
use crate::driver::{CaseError, History, Setup, Starts};
use crate::finding::{Finding, finding, fingerprint_of};
use crate::known::{KnownEntry, KnownFindings};
use crate::strategy::{BetweenRequests, Case, Offer, Parallel, Step, cases};
use taskproof_report::Event;
use taskproof_report::result::{Outcome, TargetInfo};
use taskproof_scenario::{RunConfig, probe, run_scenario};

/// How far a finding is shrunk: at most `runs` shrinking runs and `time` of wall time,
/// whichever ends first. Either at 0 turns shrinking off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShrinkLimit {
    pub runs: u32,
    pub time: Duration,
}

impl Default for ShrinkLimit {
    fn default() -> ShrinkLimit {
        ShrinkLimit {
            runs: 1000,
            time: Duration::from_secs(60),
        }
    }
}

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
    /// Waits and session events in the generated sequences.
    pub between: BetweenRequests,
    /// The parallel part of concurrent cases ([`Parallel::OFF`]: every case a sequence).
    pub parallel: Parallel,
    /// How many times a concurrent finding's scenario is replayed: a race shows in some
    /// replays and not others, and the finding says in how many.
    pub replays: u32,
    pub shrink: ShrinkLimit,
    /// Findings to leave out.
    pub known: KnownFindings,
    /// Stop after this many confirmed findings (`None`: run every case).
    pub max_findings: Option<u32>,
    /// Start no case after this much wall time since the run began (shrinking and replays
    /// count; `None`: run every case).
    pub time_limit: Option<Duration>,
    /// Make each case's sandbox and first session while the case before it runs, when
    /// cases do not share a root ([`Starts`]).
    pub prestart: bool,
    /// Where findings are written, `fuzz-FINGERPRINT.json` each.
    pub out: PathBuf,
    /// The target's mapping file (`--mapping`), which a finding's replay line names.
    pub mapping: Option<PathBuf>,
}

impl Plan {
    /// The parallel part the cases get: the plan's, where the profile's model promises
    /// anything of concurrent sessions. The strict model does (S19: operations from any
    /// number of sessions are linearizable); Claude Code 2.1.17's does not (SPEC §4: two
    /// processes writing one task lose updates), so against it every case is a sequence.
    pub fn parallel(&self) -> Parallel {
        if self.setup.profile == taskproof_profile::Profile::Strict {
            self.parallel
        } else {
            Parallel::OFF
        }
    }
}

/// Which bound ended shrinking before it ran out of simpler sequences.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShrinkStop {
    Runs,
    Time,
}

/// How shrinking went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShrinkReport {
    /// Sequences run while shrinking.
    pub runs: u32,
    /// Steps of the sequence as found, and as shrunk.
    pub from_steps: usize,
    pub to_steps: usize,
    pub elapsed: Duration,
    /// `Some` when a bound stopped shrinking: the finding may not be minimal.
    pub stopped: Option<ShrinkStop>,
}

/// Whether a finding's file is new.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Written {
    New(PathBuf),
    /// A file of that fingerprint was already in the output folder; it is left as it is.
    Existing(PathBuf),
}

impl Written {
    pub fn path(&self) -> &Path {
        match self {
            Written::New(p) | Written::Existing(p) => p,
        }
    }
}

/// A confirmed finding: shrunk, replayed and written.
#[derive(Debug, Clone)]
pub struct Found {
    pub finding: Finding,
    /// The case (from 1) that first met it.
    pub case: u32,
    /// Wall time from the start of the run to the end of that case (before shrinking).
    pub after: Duration,
    pub shrink: ShrinkReport,
    pub written: Written,
    /// For a concurrent finding: in how many of how many replays its scenario failed.
    pub replays: Option<(u32, u32)>,
}

/// A divergence that did not happen again when its scenario was replayed.
#[derive(Debug, Clone)]
pub struct Unconfirmed {
    pub fingerprint: String,
    pub summary: String,
    pub case: u32,
    /// What the replay gave instead.
    pub why: String,
}

/// What a divergence came to, as the run reports it ([`FuzzEvent::Finding`]).
#[derive(Debug, Clone, Copy)]
pub enum FuzzFinding<'a> {
    /// Shrunk, replayed and written.
    Found(&'a Found),
    /// Its scenario did not fail when replayed; nothing written.
    Unconfirmed(&'a Unconfirmed),
    /// A known finding, met for the first time in this run and left out.
    Known {
        case: u32,
        fingerprint: &'a str,
        entry: &'a KnownEntry,
    },
}

/// What happens during a fuzz run, in order: [`FuzzEvent::Started`] once,
/// [`FuzzEvent::Progress`] after every case and when a new divergence starts shrinking,
/// [`FuzzEvent::Finding`] for each distinct divergence, [`FuzzEvent::Finished`] once. Each is
/// a [`taskproof_report::Document`] (`super::render` writes them), and [`FuzzEvent::report`]
/// hands it on as the reporters' [`Event`].
#[derive(Debug, Clone, Copy)]
pub enum FuzzEvent<'a> {
    /// The run starts: the target, the model, the seed, how many cases, and what the target
    /// offers the generator.
    Started { plan: &'a Plan, offer: &'a Offer },
    /// `cases` cases are done; `shrinking` names the fingerprint of a new divergence when
    /// its shrinking and replay start.
    Progress {
        cases: u32,
        shrinking: Option<&'a str>,
    },
    /// A distinct divergence, as it came out.
    Finding {
        plan: &'a Plan,
        finding: FuzzFinding<'a>,
    },
    /// The run is done.
    Finished { plan: &'a Plan, report: &'a Report },
}

impl FuzzEvent<'_> {
    /// Hands this event to `to` as the reporters' event.
    pub fn report(&self, to: &mut dyn FnMut(&Event<'_>)) {
        match *self {
            FuzzEvent::Started { plan, .. } => to(&Event::FuzzStarted {
                plan: self,
                cases: plan.cases,
            }),
            FuzzEvent::Progress { cases, shrinking } => {
                let message = shrinking.map(|fp| super::render::shrinking(fp, cases));
                to(&Event::FuzzProgress {
                    cases,
                    message: message.as_deref(),
                })
            }
            FuzzEvent::Finding { .. } => to(&Event::FuzzFinding { finding: self }),
            FuzzEvent::Finished { .. } => to(&Event::FuzzFinished { report: self }),
        }
    }
}

/// What a whole run found.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Cases run (shrinking and replay runs not counted).
    pub cases: u32,
    pub found: Vec<Found>,
    pub unconfirmed: Vec<Unconfirmed>,
    /// Fingerprint -> cases that met an already-found (or unconfirmed) fingerprint again.
    pub repeats: BTreeMap<String, u32>,
    /// Fingerprint -> cases that met a known finding.
    pub known: BTreeMap<String, u32>,
    /// Concurrent cases whose history the search could not decide within its budget:
    /// neither agreed nor diverged.
    pub unknown: u32,
    /// Concurrent cases run (the rest were sequences).
    pub concurrent_cases: u32,
    /// Whether the cases shared one root, each on lists of its own.
    pub reused_root: bool,
    /// True when `max_findings` ended the run early.
    pub stopped_early: bool,
    /// True when `time_limit` ended the run before its last case.
    pub out_of_time: bool,
    /// What the cases sent and left out (shrinking and replay runs not counted).
    pub coverage: Coverage,
    /// What the target offered the generator (from its hello).
    pub offer: Option<Offer>,
    /// Wall time of the whole run, shrinking and replays included.
    pub elapsed: Duration,
}

impl Report {
    /// Cases whose divergence repeated one already met.
    pub fn repeated_cases(&self) -> u32 {
        self.repeats.values().sum()
    }

    /// Cases whose divergence was a known finding.
    pub fn known_cases(&self) -> u32 {
        self.known.values().sum()
    }
}

/// Why a run stopped without a verdict.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The target could not be started.
    #[error("{0}")]
    Target(String),
    /// The harness failed (a scratch folder, a finding's file).
    #[error("{0}")]
    Harness(String),
}

impl From<CaseError> for RunError {
    fn from(e: CaseError) -> RunError {
        match e {
            CaseError::Start(_) => RunError::Target(e.to_string()),
            CaseError::Harness(_) => RunError::Harness(e.to_string()),
        }
    }
}

fn rng(seed: u64) -> TestRng {
    let mut bytes = [0u8; 32];
    for chunk in bytes.chunks_mut(8) {
        chunk.copy_from_slice(&seed.to_le_bytes());
    }
    TestRng::from_seed(RngAlgorithm::ChaCha, &bytes)
}

/// A runner that only supplies the seeded RNG: cases are drawn from it one after another,
/// and shrinking never draws from it, so case N is the same whatever came before.
fn generator(seed: u64) -> TestRunner {
    TestRunner::new_with_rng(
        Config {
            failure_persistence: None,
            ..Config::default()
        },
        rng(seed),
    )
}

/// Runs the plan, telling `on_event` what happens as it happens: [`FuzzEvent::Started`]
/// first, [`FuzzEvent::Progress`] after every case and when shrinking starts,
/// [`FuzzEvent::Finding`] for each distinct divergence, and [`FuzzEvent::Finished`] with the
/// report last (not sent when the run stops on an error).
pub fn fuzz(plan: &Plan, on_event: &mut dyn FnMut(&FuzzEvent<'_>)) -> Result<Report, RunError> {
    let started = Instant::now();
    let mut replayer = Replayer::new(plan);
    // The target's hello says what to generate: its parts, its statuses, its layout.
    let target = replayer.target();
    let hello = match &target.hello {
        Ok(h) => h.clone(),
        Err(e) => {
            let stderr = &target.stderr;
            return Err(RunError::Target(if stderr.trim().is_empty() {
                format!("failed to start the target: {e}")
            } else {
                format!(
                    "failed to start the target: {e}\nits stderr:\n{}",
                    stderr.trim_end()
                )
            }));
        }
    };
    let offer = Offer::from_hello(&hello, plan.files);
    let reused_root = plan.setup.reuse && hello.has(taskproof_core::protocol::Feature::Lists);
    on_event(&FuzzEvent::Started {
        plan,
        offer: &offer,
    });
    let mut report = run_cases(plan, &offer, &mut replayer, started, on_event)?;
    report.offer = Some(offer);
    report.reused_root = reused_root;
    report.elapsed = started.elapsed();
    on_event(&FuzzEvent::Finished {
        plan,
        report: &report,
    });
    Ok(report)
}

fn run_cases(
    plan: &Plan,
    offer: &Offer,
    replayer: &mut Replayer<'_>,
    started: Instant,
    on_event: &mut dyn FnMut(&FuzzEvent<'_>),
) -> Result<Report, RunError> {
    let mut generator = generator(plan.seed);
    let strategy = cases(plan.steps, offer, true, plan.between, plan.parallel());
    let mut report = Report::default();
    let mut starts = Starts::new(&plan.setup, plan.prestart);
    // Fingerprints met so far: found, or not confirmed.
    let mut met: BTreeSet<String> = BTreeSet::new();
    for case in 1..=plan.cases {
        if plan.time_limit.is_some_and(|t| started.elapsed() >= t) {
            report.out_of_time = true;
            break;
        }
        let mut tree = strategy
            .new_tree(&mut generator)
            .map_err(|e| RunError::Harness(format!("failed to generate case {case}: {e}")))?;
        let current = tree.current();
        let history = starts.run(&current)?;
        let after = started.elapsed();
        report.coverage.add(&history.coverage);
        report.cases = case;
        report.concurrent_cases += u32::from(current.is_concurrent());
        report.unknown += u32::from(history.unknown);
        on_event(&FuzzEvent::Progress {
            cases: case,
            shrinking: None,
        });
        let Some(mut fp) = fingerprint_of(&history) else {
            continue;
        };
        // A parallel part no order explains may be a sequence's bug met in a concurrent
        // case: the same requests one after another show it too, and it is that sequence's
        // finding, labelled by what diverged there, and shrunk and replayed as a sequence.
        let mut history = history;
        let mut serial = false;
        if history
            .divergence
            .as_ref()
            .is_some_and(|d| d.concurrent.is_some())
        {
            let sequence = starts.run(&current.serialized())?;
            if let Some(seq_fp) = fingerprint_of(&sequence) {
                (history, fp, serial) = (sequence, seq_fp, true);
            }
        }
        if let Some(entry) = plan.known.get(&fp) {
            let n = report.known.entry(fp.clone()).or_default();
            if *n == 0 {
                on_event(&FuzzEvent::Finding {
                    plan,
                    finding: FuzzFinding::Known {
                        case,
                        fingerprint: &fp,
                        entry,
                    },
                });
            }
            *n += 1;
            continue;
        }
        if !met.insert(fp.clone()) {
            *report.repeats.entry(fp).or_default() += 1;
            continue;
        }
        on_event(&FuzzEvent::Progress {
            cases: case,
            shrinking: Some(&fp),
        });
        let (history, shrink) = shrink(plan, &mut starts, &mut tree, history, &fp, serial)?;
        let finding = finding(&history, plan.seed, plan.setup.profile)
            .expect("a shrunk history keeps its divergence");
        match replayer.replay(&finding, &history)? {
            Err(why) => {
                let u = Unconfirmed {
                    fingerprint: fp,
                    summary: finding.summary.clone(),
                    case,
                    why,
                };
                on_event(&FuzzEvent::Finding {
                    plan,
                    finding: FuzzFinding::Unconfirmed(&u),
                });
                report.unconfirmed.push(u);
            }
            Ok(replays) => {
                let path = finding_path(&plan.out, &finding);
                let new = write_finding(&plan.out, &finding).map_err(|e| {
                    RunError::Harness(format!("failed to write {}: {e}", path.display()))
                })?;
                let found = Found {
                    finding,
                    case,
                    after,
                    shrink,
                    written: if new {
                        Written::New(path)
                    } else {
                        Written::Existing(path)
                    },
                    replays,
                };
                on_event(&FuzzEvent::Finding {
                    plan,
                    finding: FuzzFinding::Found(&found),
                });
                report.found.push(found);
                if plan
                    .max_findings
                    .is_some_and(|m| report.found.len() >= m as usize)
                {
                    report.stopped_early = case < plan.cases;
                    break;
                }
            }
        }
    }
    Ok(report)
}

/// How many times shrinking runs a simpler concurrent case before it takes it for one that
/// does not diverge.
const RACE_TRIES: u32 = 3;

/// Shrinks a case that diverged with fingerprint `fp`, keeping only simpler sequences that
/// diverge the same way, within the plan's bounds. Returns the simplest history met.
/// `serial`: the finding is the sequence a concurrent case's requests make one after another
/// ([`Case::serialized`]), and each simpler case is run so.
fn shrink(
    plan: &Plan,
    starts: &mut Starts,
    tree: &mut impl ValueTree<Value = Case>,
    found: History,
    fp: &str,
    serial: bool,
) -> Result<(History, ShrinkReport), RunError> {
    let started = Instant::now();
    let from_steps = tree.current().len();
    let mut best = (from_steps, found);
    let mut runs = 0u32;
    let mut stopped = None;
    if tree.simplify() {
        loop {
            if runs >= plan.shrink.runs {
                stopped = Some(ShrinkStop::Runs);
                break;
            }
            if started.elapsed() >= plan.shrink.time {
                stopped = Some(ShrinkStop::Time);
                break;
            }
            runs += 1;
            let candidate = if serial {
                tree.current().serialized()
            } else {
                tree.current()
            };
            let same = |h: &History| fingerprint_of(h).as_deref() == Some(fp);
            let mut history = starts.run(&candidate)?;
            // A race shows in some runs and not others: a simpler concurrent case is kept
            // when one of up to three runs diverges the same way.
            if candidate.is_concurrent() {
                for _ in 1..RACE_TRIES {
                    if same(&history) {
                        break;
                    }
                    history = starts.run(&candidate)?;
                }
            }
            // A sequence that waits shows what time does only when the wait is long enough,
            // and a wait that was just long enough once may not be the next time: such a
            // simpler sequence is kept only when a second run diverges the same way too.
            let waits = candidate
                .steps
                .iter()
                .any(|s| matches!(s, Step::Wait { .. }));
            let kept = same(&history) && (!waits || same(&starts.run(&candidate)?));
            let more = if kept {
                best = (candidate.len(), history);
                tree.simplify()
            } else {
                tree.complicate()
            };
            if !more {
                break;
            }
        }
    }
    let (to_steps, history) = best;
    Ok((
        history,
        ShrinkReport {
            runs,
            from_steps,
            to_steps,
            elapsed: started.elapsed(),
            stopped,
        },
    ))
}

/// Replays findings' scenarios with the scenario runner, as `taskproof run` would.
struct Replayer<'a> {
    plan: &'a Plan,
    config: RunConfig,
    /// The target's hello, asked once.
    target: Option<TargetInfo>,
}

impl<'a> Replayer<'a> {
    fn new(plan: &'a Plan) -> Replayer<'a> {
        let setup = &plan.setup;
        let config = RunConfig {
            profile: setup.profile,
            timeout: setup.session_options.timeout,
            durable: setup.session_options.durable,
            jobs: 1,
            ..RunConfig::new(setup.target.clone())
        };
        Replayer {
            plan,
            config,
            target: None,
        }
    }

    /// The target's hello (asked the first time).
    fn target(&mut self) -> &TargetInfo {
        self.target.get_or_insert_with(|| probe(&self.config))
    }

    /// `Ok(Ok(replays))` when the scenario fails against the target as the case did (or the
    /// target breaks on it, when breaking was the divergence), `Ok(Err(what happened
    /// instead))` when it does not. A concurrent finding's scenario is replayed
    /// [`Plan::replays`] times, and `replays` says in how many it failed: a race shows in
    /// some runs and not others (PULSE's race in dets showed in 1 of 1,000).
    fn replay(
        &mut self,
        finding: &Finding,
        history: &History,
    ) -> Result<Result<Option<(u32, u32)>, String>, RunError> {
        let file = finding_path(&self.plan.out, finding);
        let scenario =
            taskproof_scenario::load::parse_scenario(&finding.scenario, &file).map_err(|e| {
                RunError::Harness(format!(
                    "failed to load the finding's own scenario ({e}): {:#}",
                    finding.scenario
                ))
            })?;
        let target = self.target.get_or_insert_with(|| probe(&self.config));
        let broke = history.broke();
        let failed = |r: &taskproof_report::result::ScenarioResult| {
            matches!(r.result, Ok(Outcome::Fail(_))) || (broke && r.result.is_err())
        };
        let concurrent = history.records.iter().any(|r| r.concurrent);
        if concurrent {
            let of = self.plan.replays.max(1);
            let mut fails = 0;
            let mut last = None;
            for _ in 0..of {
                let result = run_scenario(&scenario, &self.config, target);
                if failed(&result) {
                    fails += 1;
                } else {
                    last = Some(result);
                }
            }
            return Ok(match (fails, last) {
                (0, Some(result)) => Err(format!(
                    "{} (0 of {of} replays failed)",
                    not_failed(&result)
                )),
                _ => Ok(Some((fails, of))),
            });
        }
        // A case that waited met something time does: shrinking keeps the shortest wait that
        // showed it once, which may not show it every time, so such a scenario is replayed up
        // to three times and confirmed by the first replay that fails.
        let timed = history
            .records
            .iter()
            .any(|r| matches!(r.action, crate::driver::ResolvedStep::Wait { .. }));
        let mut result = run_scenario(&scenario, &self.config, target);
        for _ in 1..if timed { 3 } else { 1 } {
            if failed(&result) {
                break;
            }
            result = run_scenario(&scenario, &self.config, target);
        }
        Ok(if failed(&result) {
            Ok(None)
        } else {
            Err(not_failed(&result))
        })
    }
}

/// What a replay that did not fail gave instead.
fn not_failed(result: &taskproof_report::result::ScenarioResult) -> String {
    match &result.result {
        Ok(Outcome::Skip(why)) => format!("its scenario was skipped when replayed: {why}"),
        Ok(Outcome::NotJudged(_)) => format!(
            "its scenario was not judged when replayed: {}",
            result.reason().unwrap_or_default()
        ),
        Err(e) => format!(
            "the target broke when its scenario was replayed: {}",
            e.message
        ),
        _ => "its scenario passed when replayed".into(),
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
    use super::*;
    use taskproof_profile::Profile;
    use taskproof_session::SessionOptions;
    use taskproof_store::Mutant;
    use taskproof_targets::TargetSpec;

    fn first_case(seed: u64) -> Vec<Step> {
        crate::strategy::steps(
            24,
            &Offer::everything(true),
            true,
            BetweenRequests::default(),
        )
        .new_tree(&mut generator(seed))
        .expect("the strategy generates")
        .current()
    }

    #[test]
    fn the_same_seed_generates_the_same_cases() {
        assert_eq!(first_case(42), first_case(42));
        assert_ne!(first_case(42), first_case(43));
    }

    fn plan(target: TargetSpec, scratch: &Path, out: &Path, shrink: ShrinkLimit) -> Plan {
        Plan {
            setup: Setup {
                target,
                profile: Profile::Strict,
                session_options: SessionOptions {
                    durable: false,
                    ..SessionOptions::default()
                },
                scratch: scratch.to_path_buf(),
                settle: std::time::Duration::ZERO,
                reuse: true,
            },
            cases: 40,
            steps: 24,
            seed: 3,
            files: true,
            between: BetweenRequests::default(),
            parallel: Parallel::default(),
            replays: 5,
            shrink,
            known: KnownFindings::default(),
            max_findings: Some(1),
            time_limit: None,
            prestart: true,
            out: out.to_path_buf(),
            mapping: None,
        }
    }

    /// The run is a producer of the shared event stream: started first, a progress event
    /// per case, the finding (after the progress event that starts its shrinking), and
    /// finished last with the same report the call returns.
    #[test]
    fn the_run_emits_started_progress_finding_finished_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir_in(dir.path()).unwrap();
        let p = plan(
            TargetSpec::mutant(Mutant::NoMirror),
            dir.path(),
            out.path(),
            ShrinkLimit {
                runs: 5,
                time: Duration::from_secs(60),
            },
        );
        let mut seen: Vec<String> = Vec::new();
        let report = fuzz(&p, &mut |e| {
            seen.push(match e {
                FuzzEvent::Started { plan, .. } => format!("started {}", plan.seed),
                FuzzEvent::Progress {
                    cases,
                    shrinking: None,
                } => format!("case {cases}"),
                FuzzEvent::Progress {
                    cases,
                    shrinking: Some(fp),
                } => format!("shrinking {fp} at {cases}"),
                FuzzEvent::Finding {
                    finding: FuzzFinding::Found(f),
                    ..
                } => format!("found {}", f.finding.fingerprint),
                FuzzEvent::Finding { .. } => "other finding".into(),
                FuzzEvent::Finished { report, .. } => {
                    format!("finished {} {}", report.cases, report.found.len())
                }
            })
        })
        .unwrap();
        assert_eq!(report.found.len(), 1, "{report:?}");
        let fp = &report.found[0].finding.fingerprint;
        let n = report.cases;
        let mut expected = vec!["started 3".to_string()];
        expected.extend((1..=n).map(|c| format!("case {c}")));
        expected.push(format!("shrinking {fp} at {n}"));
        expected.push(format!("found {fp}"));
        expected.push(format!("finished {n} 1"));
        assert_eq!(seen, expected);
    }

    /// Shrinking stops at its bounds and says which one stopped it; with room it shrinks
    /// further than with none.
    #[test]
    fn shrinking_stops_at_its_bounds_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let run = |shrink: ShrinkLimit| {
            let out = tempfile::tempdir_in(dir.path()).unwrap();
            let p = plan(
                TargetSpec::mutant(Mutant::NoMirror),
                dir.path(),
                out.path(),
                shrink,
            );
            let report = fuzz(&p, &mut |_| {}).unwrap();
            assert_eq!(report.found.len(), 1, "{report:?}");
            report.found[0].shrink
        };
        let none = run(ShrinkLimit {
            runs: 0,
            time: Duration::from_secs(60),
        });
        assert_eq!((none.runs, none.stopped), (0, Some(ShrinkStop::Runs)));
        assert_eq!(none.to_steps, none.from_steps);
        let timed = run(ShrinkLimit {
            runs: 1000,
            time: Duration::ZERO,
        });
        assert_eq!((timed.runs, timed.stopped), (0, Some(ShrinkStop::Time)));
        let two = run(ShrinkLimit {
            runs: 2,
            time: Duration::from_secs(60),
        });
        assert_eq!((two.runs, two.stopped), (2, Some(ShrinkStop::Runs)));
        let full = run(ShrinkLimit::default());
        assert_eq!(full.stopped, None);
        assert!(full.to_steps < full.from_steps, "{full:?}");
    }
}
