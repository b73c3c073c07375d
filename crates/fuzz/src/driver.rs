//! Runs one generated case against a target and against the oracle, comparing every answer
//! and, at the end, every list: the *history* of one case.
//!
//! A case is a sequence of steps, each resolved to concrete requests by [`super::resolve`]
//! before it is sent and compared with the oracle's answer as it comes. A concurrent case
//! then has a parallel part: two to four sessions, each sending its lane's requests at the
//! same time as the others; their answers cannot be compared one at a time, so from the
//! parallel part on every request is kept with when it was sent and answered, and the
//! history is judged by the search for an order in which the oracle answers as the target did
//! ([`taskproof_race::model`]). The requests after the parallel part are compared with the
//! oracle as it is after the order found; one it does not explain sends the search back over
//! the longer history, since another order may explain it.
//!
//! Where the target's hello declares lists, the cases of a run share one root and its open
//! sessions, each case on lists of its own (`c7-l` for list `l` of the 8th case): no case can
//! name another's lists, and a session that starts something per list is told when a case's
//! lists are done with ([`Session::release_lists`]). Otherwise, and with
//! `--fresh-root-per-case`, each case has a fresh root and fresh sessions.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::coverage::{Coverage, Fit, fit, take_fields};
use crate::oracle::{Damage, FuzzOracle};
pub use crate::resolve::ResolvedStep;
use crate::resolve::{Ids, Resolver, op_of, resolve};
use crate::strategy::{Case, EventGen, LISTS, Offer, SESSIONS, Step};
use taskproof_core::protocol::{Feature, Hello, Layout, Response};
use taskproof_core::task::TaskId;
use taskproof_profile::Profile;
use taskproof_profile::compare::{describe, differences};
use taskproof_race::model::{Judged, Sent, Timed, explained, judge};
use taskproof_session::{Session, SessionEvent, SessionOptions};
use taskproof_targets::TargetSpec;

mod between;
mod parallel;
mod starts;

pub use starts::{Ready, Starts};

/// The search's budget for one case's history from its parallel part on: a few dozen
/// requests are searched in well under a million steps; past the budget the case's verdict
/// is unknown, never agreed.
pub const SEARCH_BUDGET: u64 = 2_000_000;

/// One step of a history and what the oracle expected of it.
#[derive(Debug, Clone)]
pub struct Record {
    pub action: ResolvedStep,
    /// The oracle's answer; for a request of a parallel part, `None` (no single answer is
    /// expected of it: the search judges the part as a whole).
    pub expected: Option<Response>,
    /// True for the listings added after the last generated step.
    pub final_check: bool,
    /// The lane of a parallel part's request.
    pub lane: Option<usize>,
    /// True from the parallel part on: judged with it, as one history.
    pub concurrent: bool,
    /// When the request was sent and answered, from the release of the parallel part (for
    /// concurrent records).
    pub timed: Option<(Duration, Duration)>,
}

impl Record {
    fn sequential(action: ResolvedStep, expected: Option<Response>, final_check: bool) -> Record {
        Record {
            action,
            expected,
            final_check,
            lane: None,
            concurrent: false,
            timed: None,
        }
    }
}

/// A history from a parallel part on that no order of its requests explains.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unexplained {
    /// Requests in the judged history (the parallel part's and those after it, up to the one
    /// that could not be placed).
    pub requests: usize,
    /// How many the deepest order the search reached placed before it got stuck.
    pub placed: usize,
    /// What the model answers there, against what the target answered.
    pub reason: String,
}

/// Where and how the target and the oracle parted.
#[derive(Debug, Clone)]
pub struct Divergence {
    /// Index into the history.
    pub at: usize,
    /// The model's answer; for a history no order explains, its answer to the request at
    /// `at` with the requests taken in the order they were sent.
    pub expected: Response,
    /// The target's answer, or how it broke the protocol.
    pub actual: Result<Response, String>,
    pub differences: Vec<String>,
    /// Set when the history from a parallel part on is explained by no order of its
    /// requests: `at` is the request the deepest order could not place.
    pub concurrent: Option<Unexplained>,
}

impl Divergence {
    pub fn summary(&self) -> String {
        if let Some(c) = &self.concurrent {
            return format!(
                "no order of the {} requests from the parallel part on explains the answers: {}",
                c.requests, c.reason
            );
        }
        match &self.actual {
            Ok(_) => self.differences.join("; "),
            Err(e) => format!("target error: {e} (expected {})", describe(&self.expected)),
        }
    }
}

/// One case's history, cut after the divergence if there was one.
#[derive(Debug, Clone)]
pub struct History {
    pub records: Vec<Record>,
    pub divergence: Option<Divergence>,
    /// The search ran out of budget on the history from the parallel part on: the case
    /// neither agreed nor diverged.
    pub unknown: bool,
    /// The parallel part's lanes met before each round of requests.
    pub lockstep: bool,
    /// What the case sent and left out.
    pub coverage: Coverage,
}

impl History {
    /// Whether the target broke (an answer outside the protocol, a session that would not
    /// open): its sessions are not used again.
    pub fn broke(&self) -> bool {
        self.divergence.as_ref().is_some_and(|d| d.actual.is_err())
    }
}

/// What the fuzzer runs against.
#[derive(Debug, Clone)]
pub struct Setup {
    pub target: TargetSpec,
    pub profile: Profile,
    pub session_options: SessionOptions,
    /// Where the cases' sandboxes go (a fresh folder each).
    pub scratch: PathBuf,
    /// How long a case waits, idle, after its last generated step before the final
    /// listings (the settle phase, as in `race`): what vanishes then is lost between
    /// requests.
    pub settle: Duration,
    /// Run the cases of a target that declares lists on one root and its open sessions,
    /// each case on lists of its own; `false`: a fresh root and fresh sessions per case.
    pub reuse: bool,
}

/// Why a case could not be run at all (a divergence, a target that breaks mid-case
/// included, is a [`History`], not an error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CaseError {
    /// The case's first session could not be opened: no verdict is possible.
    #[error("failed to start the target: {0}")]
    Start(String),
    /// The harness itself failed (a sandbox that cannot be made or written).
    #[error("{0}")]
    Harness(String),
}

impl From<String> for CaseError {
    fn from(message: String) -> CaseError {
        CaseError::Harness(message)
    }
}

/// Runs one case in a fresh sandbox under `setup.scratch`.
pub fn run_case(setup: &Setup, case: &Case) -> Result<History, CaseError> {
    let fresh = Setup {
        reuse: false,
        ..setup.clone()
    };
    Starts::new(&fresh, false).run(case)
}

/// The history from the parallel part on, as the search judges it.
struct Judging {
    /// The oracle as the parallel part found it.
    before: FuzzOracle,
    /// When the parallel part was released: the origin of every time in `history`.
    origin: Instant,
    history: Vec<Timed>,
    /// The record of each request of `history`.
    record_of: Vec<usize>,
    /// The tasks the sequence before the parallel part created: the only ones a written
    /// scenario has variables for.
    ids_before: BTreeMap<String, Ids>,
}

/// One request of a lane, resolved before the lanes start.
struct LaneRequest {
    request: Value,
    shown: Value,
}

/// What a lane's thread brings back: the session, and each request with its answer and
/// when it was sent and answered.
type LaneDone = (
    Box<dyn Session>,
    Vec<(LaneRequest, Result<Response, String>, Duration, Duration)>,
);

/// One case being run.
struct CaseRun<'a> {
    setup: &'a Setup,
    ready: &'a mut Ready,
    /// The names sent for the fuzzer's lists (`None`: the fuzzer's own).
    lists: Option<&'a [String]>,
    oracle: FuzzOracle,
    ids: BTreeMap<String, Ids>,
    offer: Offer,
    coverage: Coverage,
    records: Vec<Record>,
    touched: BTreeSet<&'static str>,
    judging: Option<Judging>,
    /// The target reads its answers apart from its changes ([`TargetSpec::not_atomic`]):
    /// from the parallel part on, an answer is judged by its kind only (a listing whole).
    loose: bool,
}

/// Runs `case` on `ready`'s root and sessions; `lists` names the lists it sends when the root
/// is shared with other cases.
fn run_on(
    setup: &Setup,
    ready: &mut Ready,
    case: &Case,
    lists: Option<&[String]>,
) -> Result<History, CaseError> {
    let case_started = Instant::now();
    let oracle = FuzzOracle::new(setup.profile).ok_or_else(|| {
        CaseError::Harness(format!(
            "profile {} has no model to fuzz against",
            setup.profile
        ))
    })?;
    let offer = Offer::from_hello(&ready.hello, true);
    let start = if ready.cases == 0 {
        ready.took
    } else {
        Duration::ZERO
    };
    if let Some(names) = lists {
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        if let Some(s) = ready.sessions.get_mut(&0) {
            s.start_ahead(&names);
        }
    }
    let mut run = CaseRun {
        setup,
        ready,
        lists,
        oracle,
        ids: BTreeMap::new(),
        offer,
        coverage: Coverage {
            start,
            ..Coverage::default()
        },
        records: Vec::new(),
        touched: BTreeSet::new(),
        judging: None,
        loose: setup.target.not_atomic().is_some(),
    };
    let end = run.case(case)?;
    let mut coverage = run.coverage;
    coverage.cases = case_started.elapsed();
    let (divergence, unknown) = match end {
        End::Agreed => (None, false),
        End::Diverged(d) => (Some(*d), false),
        End::Unknown => (None, true),
    };
    if unknown {
        coverage.did("parallel part undecided (search budget)");
    }
    Ok(History {
        records: run.records,
        divergence,
        unknown,
        lockstep: case.lockstep,
        coverage,
    })
}

/// How a case ended.
enum End {
    Agreed,
    Diverged(Box<Divergence>),
    Unknown,
}

impl CaseRun<'_> {
    fn case(&mut self, case: &Case) -> Result<End, CaseError> {
        for step in &case.steps {
            if let Some(end) = self.step(step, None)? {
                return Ok(end);
            }
        }
        if case.is_concurrent() {
            if let Some(end) = self.parallel(&case.lanes, case.serial, case.lockstep)? {
                return Ok(end);
            }
            for step in &case.then {
                if let Some(end) = self.step(step, Some(0))? {
                    return Ok(end);
                }
            }
        }
        self.finals()
    }

    /// The final state: every list the case touched, through the main session, after the
    /// settle phase.
    fn finals(&mut self) -> Result<End, CaseError> {
        let tenths = (self.setup.settle.as_secs_f64() * 10.0).round() as u16;
        if tenths > 0 && !self.touched.is_empty() {
            let wait = ResolvedStep::Wait {
                tenths,
                settle: true,
            };
            if let Some(end) = self.action(wait, true)? {
                return Ok(end);
            }
        }
        for l in self.touched.clone() {
            let v = json!({"op": "list", "list": l});
            let listing = ResolvedStep::Send {
                session: 0,
                request: v.clone(),
                shown: v,
                bind: None,
            };
            if let Some(end) = self.action(listing, true)? {
                return Ok(end);
            }
        }
        Ok(End::Agreed)
    }

    /// Resolves and does one generated step; `session` overrides the step's own (the steps
    /// after a parallel part are `main`'s).
    fn step(&mut self, step: &Step, session: Option<usize>) -> Result<Option<End>, CaseError> {
        self.coverage.generated += 1;
        let r = Resolver {
            oracle: &self.oracle,
            ids: &self.ids,
        };
        let Some(mut action) = resolve(step, &r) else {
            self.coverage
                .leave_out("no deleted task's file to overwrite");
            return Ok(None);
        };
        if let Some(l) = step_list(step) {
            self.touched.insert(l);
        }
        if let (Some(i), ResolvedStep::Send { session: s, .. }) = (session, &mut action) {
            *s = i;
        }
        self.action(action, false)
    }

    /// Does one resolved step (a request is first fitted to what the target offers, and may
    /// become several).
    fn action(
        &mut self,
        action: ResolvedStep,
        final_check: bool,
    ) -> Result<Option<End>, CaseError> {
        let ResolvedStep::Send {
            session,
            mut request,
            mut shown,
            bind,
        } = action
        else {
            return self.other(action, final_check);
        };
        let Some(requests) = self.fit(&mut request, &mut shown) else {
            return Ok(None);
        };
        let mut bind = bind;
        for (request, shown) in requests {
            let bind = bind.take();
            if let Some(end) = self.send(session, request, shown, bind, final_check)? {
                return Ok(Some(end));
            }
        }
        Ok(None)
    }

    /// Fits a request to what the target offers, counting what that did: a field of a part
    /// the target lacks is taken out of the request; a request that cannot do without such a
    /// part is left out, not failed (§2: `None`); a patch the target carries out in calls
    /// apart is cut into one request per call. The requests to send, in order.
    fn fit(&mut self, request: &mut Value, shown: &mut Value) -> Option<Vec<(Value, Value)>> {
        // A removal the target cannot express is not asked of it (its answer would be the
        // adapter's `unsupported`, not the store's).
        if request["op"] == "update" {
            let took = take_fields(
                request,
                shown,
                "patch",
                &self.offer.cannot_remove,
                Value::is_null,
            );
            for field in &took {
                self.coverage
                    .leave_out(format!("{field}: null (the target cannot remove it)"));
            }
            if !took.is_empty() && request["patch"].as_object().is_some_and(|p| p.is_empty()) {
                return None;
            }
        }
        let (dropped, rest) = match fit(request, shown, &self.offer) {
            Fit::Send(dropped) => (dropped, Vec::new()),
            Fit::Split(dropped, rest) => (dropped, rest),
            Fit::LeaveOut(f) => {
                self.coverage.leave_out(format!("part {}", f.as_str()));
                return None;
            }
        };
        for f in dropped {
            *self
                .coverage
                .dropped
                .entry(f.as_str().to_string())
                .or_default() += 1;
        }
        if !rest.is_empty() {
            self.coverage.did("update cut into calls apart");
        }
        let first = (std::mem::take(request), std::mem::take(shown));
        Some(std::iter::once(first).chain(rest).collect())
    }

    /// Sends one request and judges its answer: against the oracle's, or, from a parallel
    /// part on, as one more request of the history the search judges.
    fn send(
        &mut self,
        session: usize,
        request: Value,
        shown: Value,
        mut bind: Option<String>,
        final_check: bool,
    ) -> Result<Option<End>, CaseError> {
        let mut next = self.oracle.clone();
        let expected = next.handle_value(&request);
        let l = request["list"].as_str().unwrap_or_default().to_string();
        if self.judging.is_none()
            && let (Response::Task(t), Some("create")) =
                (&expected, request.get("op").and_then(Value::as_str))
        {
            bind = Some(format!("{l}{}", t.id));
        }
        let asked = Instant::now();
        let actual = self.call(session, &request);
        let answered = Instant::now();
        self.coverage.requests += answered - asked;
        self.coverage.sent(&request, &actual, final_check);
        let at = self.records.len();
        let mut record = Record::sequential(
            ResolvedStep::Send {
                session,
                request: request.clone(),
                shown,
                bind,
            },
            Some(expected.clone()),
            final_check,
        );
        if let (Some(judging), ResolvedStep::Send { shown, .. }) =
            (&self.judging, &mut record.action)
        {
            *shown = unbind(std::mem::take(shown), &judging.ids_before);
        }
        let answer = match actual {
            Err(e) => {
                record.concurrent = self.judging.is_some();
                self.records.push(record);
                return Ok(Some(End::Diverged(Box::new(Divergence {
                    at,
                    expected,
                    actual: Err(e.clone()),
                    differences: vec![format!("target error: {e}")],
                    concurrent: None,
                }))));
            }
            Ok(a) => a,
        };
        let Some(judging) = &mut self.judging else {
            self.records.push(record);
            let d = differences(&expected, &answer);
            if d.is_empty() {
                self.oracle = next;
                note_ids(&mut self.ids, &request, &expected);
                return Ok(None);
            }
            return Ok(Some(End::Diverged(Box::new(Divergence {
                at,
                expected,
                actual: Ok(answer),
                differences: d,
                concurrent: None,
            }))));
        };
        record.concurrent = true;
        record.timed = Some((asked - judging.origin, answered - judging.origin));

        let loose = self.loose && request["op"] != "list";
        judging.history.push(Timed {
            sent: Sent {
                who: SESSIONS[session % SESSIONS.len()].to_string(),
                request: request.clone(),
                answer: answer.clone(),
                loose,
            },
            invoke: asked - judging.origin,
            complete: answered - judging.origin,
        });
        judging.record_of.push(at);
        self.records.push(record);
        let agrees = judging
            .history
            .last()
            .is_some_and(|t| explained(&t.sent, &expected));
        if agrees {
            self.oracle = next;
            note_ids(&mut self.ids, &request, &expected);
            return Ok(None);
        }
        // The order found for the parallel part does not explain this answer; another may.
        self.judge_history()
    }

    /// Sends through session `i`, opened if it is not, with the case's list names.
    fn call(&mut self, i: usize, request: &Value) -> Result<Response, String> {
        let wire = wire_of(self.lists, request);
        self.session(i)?
            .call(&wire)
            .map_err(|e| e.to_string())
            .and_then(|v| Response::from_json(&v, op_of(request)))
    }

    /// A list's folder name on disk: the case's name for it.
    fn folder(&self, list: &str) -> String {
        case_name(self.lists, list).map_or_else(|| list.to_string(), String::clone)
    }

    fn session(&mut self, i: usize) -> Result<&mut Box<dyn Session>, String> {
        if !self.ready.sessions.contains_key(&i) {
            let s = self
                .setup
                .target
                .open(&self.ready.root(), self.setup.session_options.clone())
                .map_err(|e| e.to_string())?;
            self.ready.sessions.insert(i, s);
        }
        Ok(self.ready.sessions.get_mut(&i).expect("just opened"))
    }
}

/// The list a generated request names, if it is one of the fuzzer's.
fn step_list(step: &Step) -> Option<&'static str> {
    match step {
        Step::Create { list, .. }
        | Step::Get { list, .. }
        | Step::Update { list, .. }
        | Step::Delete { list, .. }
        | Step::List { list, .. }
        | Step::Claim { list, .. } => Some(Resolver::list_name(*list)),
        _ => None,
    }
}

/// Keeps the bookkeeping of ids after a request the model explained (`expected` is its
/// answer): a created task, and the task the request named last.
fn note_ids(ids: &mut BTreeMap<String, Ids>, request: &Value, expected: &Response) {
    let l = request["list"].as_str().unwrap_or_default().to_string();
    if let (Response::Task(t), Some("create")) =
        (expected, request.get("op").and_then(Value::as_str))
    {
        let list_ids = ids.entry(l).or_default();
        list_ids.created.push(t.id);
        list_ids.last = Some(t.id);
    } else if let Some(id) = request
        .get("id")
        .and_then(Value::as_str)
        .and_then(|i| i.parse::<u64>().ok())
        && let Some(list_ids) = ids.get_mut(&l)
        && list_ids.created.contains(&TaskId(id))
    {
        list_ids.last = Some(TaskId(id));
    }
}

/// The name a case on a shared root sends for one of the fuzzer's lists (`None`: the list
/// is sent as it is, on a fresh root or for a name that is not the fuzzer's).
fn case_name<'a>(lists: Option<&'a [String]>, list: &str) -> Option<&'a String> {
    let i = LISTS.iter().position(|x| *x == list)?;
    lists.map(|names| &names[i])
}

/// The request as sent: the fuzzer's list names replaced by the case's.
fn wire_of(lists: Option<&[String]>, request: &Value) -> Value {
    let mut wire = request.clone();
    if let Some(name) = request
        .get("list")
        .and_then(Value::as_str)
        .and_then(|l| case_name(lists, l))
    {
        wire["list"] = Value::String(name.clone());
    }
    wire
}

/// `shown` with every variable that names a task the sequence did not create (one a lane's
/// own create would take) written as the plain id.
fn unbind(shown: Value, ids: &BTreeMap<String, Ids>) -> Value {
    match shown {
        Value::String(s) => {
            let bound = s
                .strip_prefix("${")
                .and_then(|x| x.strip_suffix('}'))
                .and_then(|var| {
                    let split = var.find(|c: char| c.is_ascii_digit())?;
                    let (l, n) = var.split_at(split);
                    Some((l.to_string(), n.parse::<u64>().ok()?))
                });
            match bound {
                Some((l, n)) if !ids.get(&l).is_some_and(|i| i.created.contains(&TaskId(n))) => {
                    Value::String(n.to_string())
                }
                _ => Value::String(s),
            }
        }
        Value::Array(a) => Value::Array(a.into_iter().map(|v| unbind(v, ids)).collect()),
        Value::Object(o) => {
            Value::Object(o.into_iter().map(|(k, v)| (k, unbind(v, ids))).collect())
        }
        other => other,
    }
}

/// The end of a case whose target broke on the last record's session step (`what`:
/// `restart`, `clear`, …), which expected nothing but `done`.
fn broke_at_last(records: &[Record], e: &str, what: &str) -> End {
    End::Diverged(Box::new(Divergence {
        at: records.len() - 1,
        expected: Response::Done,
        actual: Err(e.to_string()),
        differences: vec![format!("target error on {what}: {e}")],
        concurrent: None,
    }))
}

fn task_path(root: &Path, list: &str, id: TaskId) -> PathBuf {
    root.join(list).join(
        Layout::ClaudeCode
            .file_name(id)
            .expect("claude-code names files"),
    )
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), String> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("failed to make {}: {e}", parent.display()))?;
    }
    std::fs::write(path, bytes).map_err(|e| format!("failed to write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategy::Subject;

    fn setup(scratch: &Path, reuse: bool) -> Setup {
        Setup {
            target: "reference".parse().expect("the reference"),
            profile: Profile::Strict,
            session_options: SessionOptions {
                durable: false,
                ..SessionOptions::default()
            },
            scratch: scratch.to_path_buf(),
            settle: Duration::ZERO,
            reuse,
        }
    }

    fn create(n: u8) -> Step {
        Step::Create {
            s: 0,
            list: 0,
            subject: Subject::Plain(n),
            blocked_by: vec![],
            blocks: vec![],
            owner: None,
            metadata: None,
        }
    }

    /// Cases that share a root (the target declares lists) each send lists of their own, so
    /// nothing one case made reaches the next: the second case lists its list and finds it
    /// empty, as the model says, though the first left three tasks on the same root. Without
    /// the per-case names it would list them and diverge.
    #[test]
    fn no_case_on_a_shared_root_sees_anothers_tasks() {
        let scratch = tempfile::tempdir().unwrap();
        let setup = setup(scratch.path(), true);
        let mut starts = Starts::new(&setup, false);
        let first = starts
            .run(&Case::sequence(vec![create(1), create(2), create(3)]))
            .unwrap();
        assert!(first.divergence.is_none(), "{:?}", first.divergence);
        let root = starts.kept.as_ref().expect("the root is kept").root();
        assert!(root.join("c0-l").join("3.json").exists());
        let second = starts
            .run(&Case::sequence(vec![
                Step::List { s: 0, list: 0 },
                create(4),
            ]))
            .unwrap();
        assert!(second.divergence.is_none(), "{:?}", second.divergence);
        // Its task is task 1 of its own list, on the same root, beside the first case's.
        assert!(root.join("c1-l").join("1.json").exists());
        assert!(!root.join("c1-l").join("2.json").exists());
        let listed = second
            .records
            .iter()
            .find(|r| matches!(&r.action, ResolvedStep::Send { request, .. } if request["op"] == "list"))
            .expect("a listing");
        assert_eq!(
            listed.expected,
            Some(Response::Tasks {
                tasks: vec![],
                corrupt: vec![]
            })
        );
    }

    /// Without sharing, each case has a root of its own.
    #[test]
    fn fresh_roots_are_not_kept() {
        let scratch = tempfile::tempdir().unwrap();
        let mut starts = Starts::new(&setup(scratch.path(), false), false);
        starts.run(&Case::sequence(vec![create(1)])).unwrap();
        assert!(starts.kept.is_none());
    }

    /// A parallel part's requests are judged together: two lanes that create at once take
    /// ids in some order, and the case agrees with the model whichever it is; the records
    /// say which lane sent each and when.
    #[test]
    fn a_parallel_part_of_creates_agrees_with_the_reference() {
        let scratch = tempfile::tempdir().unwrap();
        let setup = setup(scratch.path(), true);
        let case = Case {
            steps: vec![create(1)],
            lanes: vec![vec![create(2), create(3)], vec![create(4), create(5)]],
            then: vec![Step::List { s: 0, list: 0 }],
            serial: false,
            lockstep: true,
        };
        let h = run_case(&setup, &case).unwrap();
        assert!(h.divergence.is_none(), "{:?}", h.divergence);
        let lanes: BTreeSet<usize> = h.records.iter().filter_map(|r| r.lane).collect();
        assert_eq!(lanes, BTreeSet::from([0, 1]));
        assert!(
            h.records
                .iter()
                .filter(|r| r.concurrent)
                .all(|r| r.timed.is_some())
        );
        assert_eq!(h.coverage.concurrent, 4);
    }
}
