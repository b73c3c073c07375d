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

use crate::coverage::{Coverage, Fit, fit};
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

/// A root with the target's sessions open on it: a case's start. Made fresh for each case
/// (perhaps while the case before it runs: [`Starts`]), or kept from case to case for a
/// target that declares lists.
pub struct Ready {
    sandbox: tempfile::TempDir,
    sessions: BTreeMap<usize, Box<dyn Session>>,
    /// The first session's hello.
    hello: Hello,
    /// How long making it took.
    took: Duration,
    /// Cases run on it so far.
    cases: u32,
}

impl Ready {
    /// Makes a fresh sandbox under `setup.scratch` (`root/` for the target, `outside/` for
    /// what a symbolic link points at) and opens the first session on its root.
    pub fn make(setup: &Setup) -> Result<Ready, CaseError> {
        let started = Instant::now();
        let sandbox = tempfile::Builder::new()
            .prefix("case-")
            .tempdir_in(&setup.scratch)
            .map_err(|e| CaseError::Harness(format!("failed to make a sandbox: {e}")))?;
        for d in ["root", "outside"].map(|d| sandbox.path().join(d)) {
            std::fs::create_dir_all(&d)
                .map_err(|e| CaseError::Harness(format!("failed to make {}: {e}", d.display())))?;
        }
        let mut first = setup
            .target
            .open(&sandbox.path().join("root"), setup.session_options.clone())
            .map_err(|e| CaseError::Start(e.to_string()))?;
        let hello = first.hello().clone();
        // A target with a server per list starts them now, off the case's time when this is
        // made ahead. A root kept from case to case names its lists per case instead.
        if !reused(setup, &hello) {
            first.start_ahead(&LISTS);
        }
        Ok(Ready {
            sandbox,
            sessions: BTreeMap::from([(0, first)]),
            hello,
            took: started.elapsed(),
            cases: 0,
        })
    }

    fn root(&self) -> PathBuf {
        self.sandbox.path().join("root")
    }

    /// Ends every session: killed when the target broke, closed otherwise.
    fn end(mut self, broke: bool) {
        for (_, mut s) in std::mem::take(&mut self.sessions) {
            if broke {
                s.kill();
            } else {
                let _ = s.close();
            }
        }
    }
}

/// Whether cases share a root: asked for, and honest because the target keeps lists apart
/// (it declares `lists`, which the suite's isolation scenarios judge).
fn reused(setup: &Setup, hello: &Hello) -> bool {
    setup.reuse && hello.has(Feature::Lists)
}

/// The list names the `n`-th case on a kept root sends for the fuzzer's lists.
fn case_lists(n: u32) -> Vec<String> {
    LISTS.iter().map(|l| format!("c{n}-{l}")).collect()
}

/// Where the cases start: one root kept from case to case (where sharing is honest: the
/// target declares lists), or a fresh one for each, the next made on another thread while a
/// case runs (`prestart`; a real store's server takes about as long to start as a case
/// takes to run).
pub struct Starts {
    setup: Setup,
    prestart: bool,
    next: Option<std::thread::JoinHandle<Result<Ready, CaseError>>>,
    kept: Option<Ready>,
}

impl Starts {
    pub fn new(setup: &Setup, prestart: bool) -> Starts {
        Starts {
            setup: setup.clone(),
            prestart,
            next: None,
            kept: None,
        }
    }

    /// Runs one case from the next start.
    pub fn run(&mut self, case: &Case) -> Result<History, CaseError> {
        let mut ready = match self.kept.take() {
            Some(r) => r,
            None => self.fresh()?,
        };
        let reuse = reused(&self.setup, &ready.hello);
        let lists = reuse.then(|| case_lists(ready.cases));
        let history = run_on(&self.setup, &mut ready, case, lists.as_deref());
        let broke = history.as_ref().map_or(true, History::broke);
        match lists {
            Some(lists) if !broke => {
                let names: Vec<&str> = lists.iter().map(String::as_str).collect();
                for s in ready.sessions.values_mut() {
                    s.release_lists(&names);
                }
                ready.cases += 1;
                self.kept = Some(ready);
            }
            _ => ready.end(broke),
        }
        history
    }

    /// A fresh start: the one made ahead, or one made now; and (when on, and cases do not
    /// share a root) the next one set going.
    fn fresh(&mut self) -> Result<Ready, CaseError> {
        let ready = match self.next.take() {
            Some(h) => h
                .join()
                .unwrap_or_else(|_| Err(CaseError::Harness("a case's start panicked".into()))),
            None => Ready::make(&self.setup),
        };
        let shares = ready.as_ref().is_ok_and(|r| reused(&self.setup, &r.hello));
        if self.prestart && !shares {
            let setup = self.setup.clone();
            self.next = Some(std::thread::spawn(move || Ready::make(&setup)));
        }
        ready
    }
}

impl Drop for Starts {
    /// A start made for a case that never ran, and the root kept for the next case, are
    /// ended: their sessions' processes killed or closed, their sandboxes removed.
    fn drop(&mut self) {
        if let Some(h) = self.next.take()
            && let Ok(Ok(ready)) = h.join()
        {
            ready.end(true);
        }
        if let Some(ready) = self.kept.take() {
            ready.end(false);
        }
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

    /// Searches the history from the parallel part on again; the model after the order it
    /// finds is the oracle from now on.
    fn judge_history(&mut self) -> Result<Option<End>, CaseError> {
        let judging = self.judging.as_ref().expect("judging");
        match judge(&judging.before, &judging.history, SEARCH_BUDGET) {
            Judged::Explained { model, .. } => {
                self.oracle = model;
                self.note_created_by_history();
                Ok(None)
            }
            Judged::Unknown { .. } => Ok(Some(End::Unknown)),
            Judged::Unexplained {
                stuck,
                placed,
                reason,
                ..
            } => {
                let at = judging.record_of[stuck];
                let requests = judging.history.len();
                let actual = judging.history[stuck].sent.answer.clone();
                // What the model answers the request that could not be placed when the
                // requests are taken in the order they were sent (the reason says what it
                // answers in the deepest order the search reached).
                let mut in_order = judging.before.clone();
                for t in &judging.history[..stuck] {
                    in_order.handle_value(&t.sent.request);
                }
                let expected = in_order.handle_value(&judging.history[stuck].sent.request);
                Ok(Some(End::Diverged(Box::new(Divergence {
                    at,
                    expected,
                    actual: Ok(actual),
                    differences: vec![reason.clone()],
                    concurrent: Some(Unexplained {
                        requests,
                        placed,
                        reason,
                    }),
                }))))
            }
        }
    }

    /// After the search placed a parallel part: the tasks its creates made, as the target
    /// numbered them, become tasks the later steps can name.
    fn note_created_by_history(&mut self) {
        let Some(judging) = &self.judging else {
            return;
        };
        for t in &judging.history {
            if let (Response::Task(task), Some("create")) = (
                &t.sent.answer,
                t.sent.request.get("op").and_then(Value::as_str),
            ) {
                let l = t.sent.request["list"].as_str().unwrap_or_default();
                let list_ids = self.ids.entry(l.to_string()).or_default();
                if !list_ids.created.contains(&task.id) {
                    list_ids.created.push(task.id);
                    list_ids.created.sort();
                }
            }
        }
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

    /// The parallel part (`serial`: its requests sent one after another instead; `lockstep`:
    /// the lanes meet before each round): each
    /// lane's requests resolved first (against the oracle as the
    /// sequence left it, each lane as if it ran alone), the lanes' sessions opened, then
    /// released together, each lane sending its requests one after another on a thread of
    /// its own. The history is then searched for an order the oracle explains.
    fn parallel(
        &mut self,
        lanes: &[Vec<Step>],
        serial: bool,
        lockstep: bool,
    ) -> Result<Option<End>, CaseError> {
        let mut planned: Vec<Vec<LaneRequest>> = Vec::with_capacity(lanes.len());
        for lane in lanes {
            planned.push(self.plan_lane(lane));
        }
        if serial {
            // The same requests one after another, each answer compared as a sequence's, in
            // rounds as the lanes meet them (each lane's first request, then each lane's
            // second, ...).
            let rounds = planned.iter().map(Vec::len).max().unwrap_or(0);
            let mut lanes: Vec<_> = planned.into_iter().map(Vec::into_iter).collect();
            for _ in 0..rounds {
                for (i, lane) in lanes.iter_mut().enumerate() {
                    let Some(r) = lane.next() else { continue };
                    for l in LISTS.iter().filter(|l| r.request["list"] == **l) {
                        self.touched.insert(l);
                    }
                    if let Some(end) = self.send(i, r.request, r.shown, None, false)? {
                        return Ok(Some(end));
                    }
                }
            }
            return Ok(None);
        }
        for i in 0..planned.len() {
            if let Err(e) = self.session(i) {
                self.records.push(Record::sequential(
                    ResolvedStep::Restart { session: i },
                    None,
                    false,
                ));
                return Ok(Some(broke_at_last(&self.records, &e, "open")));
            }
        }
        let mut sessions: Vec<Box<dyn Session>> = (0..planned.len())
            .map(|i| self.ready.sessions.remove(&i).expect("opened above"))
            .collect();
        // In lockstep the lanes meet before each round of requests, so that the n-th
        // requests of all lanes really race (lanes that only start together drift apart
        // within a request or two); otherwise only before the first. A lane that ran out of
        // requests, or whose session broke, still meets the barrier every round, so no lane
        // waits for it.
        let rounds = planned.iter().map(Vec::len).max().unwrap_or(0);
        let barrier = std::sync::Barrier::new(planned.len());
        let origin = Instant::now();
        let lists = self.lists;
        let done: Vec<LaneDone> = std::thread::scope(|scope| {
            let handles: Vec<_> = sessions
                .drain(..)
                .zip(planned)
                .map(|(mut session, requests)| {
                    let barrier = &barrier;
                    scope.spawn(move || {
                        let mut out = Vec::with_capacity(requests.len());
                        let mut requests = requests.into_iter();
                        let mut broke = false;
                        for round in 0..rounds {
                            if lockstep || round == 0 {
                                barrier.wait();
                            }
                            let Some(r) = requests.next().filter(|_| !broke) else {
                                continue;
                            };
                            let wire = wire_of(lists, &r.request);
                            let invoke = origin.elapsed();
                            let answer = session
                                .call(&wire)
                                .map_err(|e| e.to_string())
                                .and_then(|v| Response::from_json(&v, op_of(&r.request)));
                            let complete = origin.elapsed();
                            broke = answer.is_err();
                            out.push((r, answer, invoke, complete));
                        }
                        (session, out)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a lane does not panic"))
                .collect()
        });
        self.coverage.did("parallel part");
        let mut all = Vec::new();
        for (i, (session, out)) in done.into_iter().enumerate() {
            self.ready.sessions.insert(i, session);
            all.extend(out.into_iter().map(|x| (i, x)));
        }
        all.sort_by_key(|(_, (_, _, invoke, _))| *invoke);
        self.coverage.met_interleaving(
            &all.iter()
                .map(|(lane, (_, _, invoke, complete))| (*lane, *invoke, *complete))
                .collect::<Vec<_>>(),
        );
        let mut judging = Judging {
            before: self.oracle.clone(),
            origin,
            history: Vec::with_capacity(all.len()),
            record_of: Vec::with_capacity(all.len()),
            ids_before: self.ids.clone(),
        };
        let mut broken: Option<(usize, String)> = None;
        for (lane, (r, answer, invoke, complete)) in all {
            self.coverage.sent(&r.request, &answer, false);
            self.coverage.concurrent += 1;
            self.coverage.requests += complete.saturating_sub(invoke);
            if let Some(l) = r.request.get("list").and_then(Value::as_str)
                && let Some(l) = LISTS.iter().find(|x| **x == l)
            {
                self.touched.insert(l);
            }
            let at = self.records.len();
            self.records.push(Record {
                action: ResolvedStep::Send {
                    session: lane,
                    request: r.request.clone(),
                    shown: r.shown,
                    bind: None,
                },
                expected: None,
                final_check: false,
                lane: Some(lane),
                concurrent: true,
                timed: Some((invoke, complete)),
            });
            match answer {
                Ok(answer) => {
                    let loose = self.loose && r.request["op"] != "list";
                    judging.history.push(Timed {
                        sent: Sent {
                            who: SESSIONS[lane % SESSIONS.len()].to_string(),
                            request: r.request,
                            answer,
                            loose,
                        },
                        invoke,
                        complete,
                    });
                    judging.record_of.push(at);
                }
                Err(e) => {
                    broken.get_or_insert((at, e));
                }
            }
        }
        if let Some((at, e)) = broken {
            self.records.truncate(at + 1);
            return Ok(Some(End::Diverged(Box::new(Divergence {
                at,
                expected: Response::Done,
                actual: Err(e.clone()),
                differences: vec![format!("target error: {e}")],
                concurrent: None,
            }))));
        }
        self.judging = Some(judging);
        self.judge_history()
    }

    /// Resolves a lane's steps against a copy of the oracle, as if the lane ran alone; an
    /// id the lane's own creates would take is written as a number, not a variable (which
    /// task gets it depends on the order the lanes meet).
    fn plan_lane(&mut self, lane: &[Step]) -> Vec<LaneRequest> {
        let mut oracle = self.oracle.clone();
        let mut ids = self.ids.clone();
        let mut out = Vec::new();
        for step in lane {
            self.coverage.generated += 1;
            let r = Resolver {
                oracle: &oracle,
                ids: &ids,
            };
            let Some(ResolvedStep::Send {
                mut request,
                mut shown,
                ..
            }) = resolve(step, &r)
            else {
                self.coverage.leave_out("not a request, in a parallel part");
                continue;
            };
            // A create the target carries out in several calls shows the others its first
            // state before the rest: no order of whole requests explains that, so in a
            // parallel part creates go without the fields made apart.
            if request["op"] == "create" {
                for field in &self.offer.create_apart {
                    let mut took = false;
                    for v in [&mut request, &mut shown] {
                        if let Some(Value::Object(task)) = v.get_mut("task") {
                            took |= task.remove(field).is_some();
                        }
                    }
                    if took {
                        self.coverage.leave_out(format!(
                            "a create's {field} in a parallel part (made of calls apart)"
                        ));
                    }
                }
            }
            let Some(requests) = self.fit(&mut request, &mut shown) else {
                continue;
            };
            for (request, shown) in requests {
                let expected = oracle.handle_value(&request);
                note_ids(&mut ids, &request, &expected);
                let shown = unbind(shown, &self.ids);
                out.push(LaneRequest { request, shown });
            }
        }
        out
    }

    /// Restarts, waits, session events and files written by another program.
    fn other(&mut self, action: ResolvedStep, final_check: bool) -> Result<Option<End>, CaseError> {
        let root = self.ready.root();
        let outside = self.ready.sandbox.path().join("outside");
        let claude_layout = self.ready.hello.layout == Layout::ClaudeCode;
        match &action {
            ResolvedStep::Send { .. } => unreachable!("sends are handled by the caller"),
            ResolvedStep::Restart { session } => {
                let session = *session;
                // Only a session that is open can be restarted; otherwise nothing happens.
                let Some(mut s) = self.ready.sessions.remove(&session) else {
                    self.coverage.leave_out("restart of a session not open");
                    return Ok(None);
                };
                self.coverage.did("restart");
                s.kill();
                drop(s);
                self.records
                    .push(Record::sequential(action.clone(), None, final_check));
                if let Err(e) = self.session(session) {
                    return Ok(Some(broke_at_last(&self.records, &e, "restart")));
                }
            }
            ResolvedStep::Wait { tenths, settle } => {
                self.coverage.did(if *settle { "settle" } else { "wait" });
                std::thread::sleep(Duration::from_millis(u64::from(*tenths) * 100));
                self.records
                    .push(Record::sequential(action.clone(), None, final_check));
            }
            ResolvedStep::Event { session, event } => {
                let (session, event) = (*session, *event);
                // Only a session that is open has a conversation to act on.
                if !self.ready.sessions.contains_key(&session) {
                    self.coverage
                        .leave_out(format!("{} of a session not open", event.name()));
                    return Ok(None);
                }
                self.coverage.did(event.name());
                self.records
                    .push(Record::sequential(action.clone(), None, final_check));
                if let Err(e) = self.session_event(session, event) {
                    return Ok(Some(broke_at_last(&self.records, &e, event.name())));
                }
            }
            ResolvedStep::Garbage { list, id } => {
                if !claude_layout {
                    self.coverage.leave_out("files in an opaque layout");
                    return Ok(None);
                }
                self.coverage.did("garbage file");
                let path = task_path(&root, &self.folder(list), *id);
                write(&path, b"{\"id\": \"")?;
                self.oracle
                    .corrupt
                    .insert((list.parse().expect("valid"), *id), Damage::Garbage);
                self.records
                    .push(Record::sequential(action.clone(), None, final_check));
            }
            ResolvedStep::Symlink {
                list,
                id,
                outside: name,
                content,
            } => {
                if !claude_layout {
                    self.coverage.leave_out("files in an opaque layout");
                    return Ok(None);
                }
                self.coverage.did("symbolic link");
                let target = outside.join(name);
                write(&target, content.to_string().as_bytes())?;
                let path = task_path(&root, &self.folder(list), *id);
                let _ = std::fs::remove_file(&path);
                // A store that keeps its files elsewhere (a mutant, an opaque-minded store
                // behind a claude-code hello) may have no folder for the list.
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent).map_err(|e| {
                        CaseError::Harness(format!("failed to make {}: {e}", parent.display()))
                    })?;
                }
                std::os::unix::fs::symlink(&target, &path)
                    .map_err(|e| format!("failed to link {}: {e}", path.display()))
                    .map_err(CaseError::Harness)?;
                self.oracle
                    .corrupt
                    .insert((list.parse().expect("valid"), *id), Damage::Symlink);
                self.records
                    .push(Record::sequential(action.clone(), None, final_check));
            }
            ResolvedStep::WriteTask { list, id, task } => {
                if !claude_layout {
                    self.coverage.leave_out("files in an opaque layout");
                    return Ok(None);
                }
                self.coverage.did("task rewritten by another program");
                let mut bytes = serde_json::to_vec_pretty(task).expect("values serialize");
                bytes.push(b'\n');
                write(&task_path(&root, &self.folder(list), *id), &bytes)?;
                let extra: Map<String, Value> = task
                    .as_object()
                    .expect("object")
                    .iter()
                    .filter(|(k, _)| !taskproof_core::task::TASK_FIELDS.contains(&k.as_str()))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                self.oracle
                    .extras
                    .insert((list.parse().expect("valid"), *id), extra);
                self.records
                    .push(Record::sequential(action.clone(), None, final_check));
            }
        }
        Ok(None)
    }

    /// Does `event` on open session `i` the way the scenario runner does: an agent session
    /// acts on it as its user would; a connection to a store has no conversation to clear or
    /// compact, and its exit and resume are a close and a new connection.
    fn session_event(&mut self, i: usize, event: EventGen) -> Result<(), String> {
        let s = self
            .ready
            .sessions
            .get_mut(&i)
            .expect("the caller checked it is open");
        match event {
            EventGen::Clear | EventGen::Compact => {
                let e = if event == EventGen::Clear {
                    SessionEvent::Clear
                } else {
                    SessionEvent::Compact
                };
                s.event(e).map(|_| ()).map_err(|e| e.to_string())
            }
            EventGen::ExitResume => {
                if s.event(SessionEvent::Exit).map_err(|e| e.to_string())? {
                    if s.event(SessionEvent::Resume).map_err(|e| e.to_string())? {
                        return Ok(());
                    }
                } else {
                    s.close().map_err(|e| e.to_string())?;
                }
                self.ready.sessions.remove(&i);
                self.session(i).map(|_| ())
            }
        }
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
