//! Runs one generated sequence against a target and against the oracle, step by step,
//! comparing every answer and, at the end, every list: the *history* of one case.
//!
//! Steps are resolved to concrete requests by [`super::resolve`] before each is sent.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::coverage::{Coverage, Fit, fit};
use crate::oracle::{Damage, FuzzOracle, describe, differences};
pub use crate::resolve::ResolvedStep;
use crate::resolve::{Ids, Resolver, op_of, resolve};
use crate::strategy::{EventGen, Offer, Step};
use taskproof_core::protocol::{Layout, Response};
use taskproof_core::task::TaskId;
use taskproof_profile::Profile;
use taskproof_session::{Session, SessionEvent, SessionOptions};
use taskproof_targets::TargetSpec;

/// One step of a history and what the oracle expected of it.
#[derive(Debug, Clone)]
pub struct Record {
    pub action: ResolvedStep,
    pub expected: Option<Response>,
    /// True for the listings added after the last generated step.
    pub final_check: bool,
}

/// Where and how the target and the oracle parted.
#[derive(Debug, Clone)]
pub struct Divergence {
    /// Index into the history.
    pub at: usize,
    pub expected: Response,
    /// The target's answer, or how it broke the protocol.
    pub actual: Result<Response, String>,
    pub differences: Vec<String>,
}

impl Divergence {
    pub fn summary(&self) -> String {
        match &self.actual {
            Ok(_) => self.differences.join("; "),
            Err(e) => format!("target error: {e} (expected {})", describe(&self.expected)),
        }
    }
}

/// The history so far, ending in the target's error on the last record's session step
/// (`what`: `restart`, `clear`, …), which expected nothing but `done`.
fn broke_at_last(records: &[Record], e: &str, what: &str, coverage: Coverage) -> History {
    History {
        coverage,
        records: records.to_vec(),
        divergence: Some(Divergence {
            at: records.len() - 1,
            expected: Response::Done,
            actual: Err(e.to_string()),
            differences: vec![format!("target error on {what}: {e}")],
        }),
    }
}

/// One case's history, cut after the divergence if there was one.
#[derive(Debug, Clone)]
pub struct History {
    pub records: Vec<Record>,
    pub divergence: Option<Divergence>,
    /// What the case sent and left out.
    pub coverage: Coverage,
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
    pub settle: std::time::Duration,
}

/// The sessions of one case, opened on first use.
struct Sessions<'a> {
    setup: &'a Setup,
    root: &'a Path,
    open: BTreeMap<usize, Box<dyn Session>>,
}

impl Sessions<'_> {
    fn get(&mut self, i: usize) -> Result<&mut Box<dyn Session>, String> {
        if !self.open.contains_key(&i) {
            let s = self
                .setup
                .target
                .open(self.root, self.setup.session_options.clone())
                .map_err(|e| e.to_string())?;
            self.open.insert(i, s);
        }
        Ok(self.open.get_mut(&i).expect("just opened"))
    }
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

/// A case's fresh sandbox with its first session opened in it, before the case's steps are
/// known: what a case starts from, so it can be made while the case before it runs
/// ([`Prestart`]).
pub struct Ready {
    sandbox: tempfile::TempDir,
    first: Result<Box<dyn Session>, String>,
    /// How long making it took.
    took: std::time::Duration,
}

impl Ready {
    /// Makes a fresh sandbox under `setup.scratch` (`root/` for the target, `outside/` for
    /// what a symbolic link points at) and opens the first session on its root.
    pub fn make(setup: &Setup) -> Result<Ready, CaseError> {
        let started = std::time::Instant::now();
        let sandbox = tempfile::Builder::new()
            .prefix("case-")
            .tempdir_in(&setup.scratch)
            .map_err(|e| CaseError::Harness(format!("failed to make a sandbox: {e}")))?;
        for d in ["root", "outside"].map(|d| sandbox.path().join(d)) {
            std::fs::create_dir_all(&d)
                .map_err(|e| CaseError::Harness(format!("failed to make {}: {e}", d.display())))?;
        }
        let first = setup
            .target
            .open(&sandbox.path().join("root"), setup.session_options.clone())
            .map(|mut s| {
                // A target with a server per list starts them now, off the case's time when
                // this is made ahead.
                s.start_ahead(&crate::strategy::LISTS);
                s
            })
            .map_err(|e| e.to_string());
        Ok(Ready {
            sandbox,
            first,
            took: started.elapsed(),
        })
    }
}

/// Keeps the next case's [`Ready`] being made on another thread while a case runs: a real
/// store's server takes about as long to start as a case takes to run, and each case still
/// gets a fresh root and a fresh process. Off, each case makes its own when it starts.
pub struct Prestart {
    setup: Setup,
    on: bool,
    next: Option<std::thread::JoinHandle<Result<Ready, CaseError>>>,
}

impl Prestart {
    pub fn new(setup: &Setup, on: bool) -> Prestart {
        Prestart {
            setup: setup.clone(),
            on,
            next: None,
        }
    }

    /// The next case's start, and (when on) the one after it set going.
    pub fn take(&mut self) -> Result<Ready, CaseError> {
        let ready = match self.next.take() {
            Some(h) => h
                .join()
                .unwrap_or_else(|_| Err(CaseError::Harness("a case's start panicked".into()))),
            None => Ready::make(&self.setup),
        };
        if self.on {
            let setup = self.setup.clone();
            self.next = Some(std::thread::spawn(move || Ready::make(&setup)));
        }
        ready
    }
}

impl Drop for Prestart {
    /// The start made for a case that never ran is ended: its session's processes killed,
    /// its sandbox removed.
    fn drop(&mut self) {
        if let Some(h) = self.next.take()
            && let Ok(Ok(mut ready)) = h.join()
            && let Ok(s) = &mut ready.first
        {
            s.kill();
        }
    }
}

/// Runs one case in a fresh sandbox under `setup.scratch`.
pub fn run_case(setup: &Setup, steps: &[Step]) -> Result<History, CaseError> {
    run_ready(setup, Ready::make(setup)?, steps)
}

/// Runs one case from its start (made by [`Ready::make`], perhaps ahead of time).
pub fn run_ready(setup: &Setup, ready: Ready, steps: &[Step]) -> Result<History, CaseError> {
    let case_started = std::time::Instant::now();
    let Ready {
        sandbox,
        first,
        took,
    } = ready;
    let root = sandbox.path().join("root");
    let outside = sandbox.path().join("outside");
    let mut oracle = FuzzOracle::new(setup.profile).ok_or_else(|| {
        CaseError::Harness(format!(
            "profile {} has no model to fuzz against",
            setup.profile
        ))
    })?;
    let mut ids: BTreeMap<String, Ids> = BTreeMap::new();
    let mut sessions = Sessions {
        setup,
        root: &root,
        open: BTreeMap::new(),
    };
    // The first session is open: its hello says which features and files there are.
    sessions.open.insert(0, first.map_err(CaseError::Start)?);
    let hello = sessions.get(0).map_err(CaseError::Start)?.hello().clone();
    let offer = Offer::from_hello(&hello, true);
    let mut coverage = Coverage {
        start: took,
        ..Coverage::default()
    };
    let mut records: Vec<Record> = Vec::new();
    let mut touched: BTreeSet<&'static str> = BTreeSet::new();

    let mut actions: Vec<(ResolvedStep, bool)> = Vec::new();
    let mut step_iter = steps.iter();
    let mut finals_added = false;
    loop {
        let (action, final_check) = if let Some((a, f)) = actions.pop() {
            (a, f)
        } else if let Some(step) = step_iter.next() {
            coverage.generated += 1;
            let r = Resolver {
                oracle: &oracle,
                ids: &ids,
            };
            match resolve(step, &r) {
                Some(a) => {
                    if let Step::Create { list, .. }
                    | Step::Get { list, .. }
                    | Step::Update { list, .. }
                    | Step::Delete { list, .. }
                    | Step::List { list, .. }
                    | Step::Claim { list, .. } = step
                    {
                        touched.insert(Resolver::list_name(*list));
                    }
                    (a, false)
                }
                None => {
                    coverage.leave_out("no deleted task's file to overwrite");
                    continue;
                }
            }
        } else if !finals_added {
            finals_added = true;
            // The final state: every list the sequence touched, through the main session,
            // after the settle phase (pushed last, so popped first).
            for l in touched.iter().rev() {
                let v = json!({"op": "list", "list": l});
                actions.push((
                    ResolvedStep::Send {
                        session: 0,
                        request: v.clone(),
                        shown: v,
                        bind: None,
                    },
                    true,
                ));
            }
            let tenths = (setup.settle.as_secs_f64() * 10.0).round() as u16;
            if tenths > 0 && !touched.is_empty() {
                actions.push((
                    ResolvedStep::Wait {
                        tenths,
                        settle: true,
                    },
                    true,
                ));
            }
            continue;
        } else {
            break;
        };
        let mut action = action;
        match &mut action {
            ResolvedStep::Send {
                session,
                request,
                shown,
                bind,
            } => {
                // A field of a part the target lacks is taken out of the request; a step that
                // cannot do without such a part is left out, not failed (§2).
                let (dropped, rest) = match fit(request, shown, &offer) {
                    Fit::Send(dropped) => (dropped, Vec::new()),
                    Fit::Split(dropped, rest) => (dropped, rest),
                    Fit::LeaveOut(f) => {
                        coverage.leave_out(format!("part {}", f.as_str()));
                        continue;
                    }
                };
                for f in dropped {
                    *coverage.dropped.entry(f.as_str().to_string()).or_default() += 1;
                }
                if !rest.is_empty() {
                    coverage.did("update cut into calls apart");
                }
                // The later parts go next, before any other step (popped last first).
                for (request, shown) in rest.into_iter().rev() {
                    actions.push((
                        ResolvedStep::Send {
                            session: *session,
                            request,
                            shown,
                            bind: None,
                        },
                        final_check,
                    ));
                }
                let expected = oracle.handle_value(request);
                let l = request["list"].as_str().unwrap_or_default().to_string();
                if let (Response::Task(t), Some("create")) =
                    (&expected, request.get("op").and_then(Value::as_str))
                {
                    let list_ids = ids.entry(l.clone()).or_default();
                    list_ids.created.push(t.id);
                    list_ids.last = Some(t.id);
                    *bind = Some(format!("{l}{}", t.id));
                } else if let Some(id) = request
                    .get("id")
                    .and_then(Value::as_str)
                    .and_then(|i| i.parse::<u64>().ok())
                    && let Some(list_ids) = ids.get_mut(&l)
                    && list_ids.created.contains(&TaskId(id))
                {
                    list_ids.last = Some(TaskId(id));
                }
                let asked = std::time::Instant::now();
                let actual = sessions
                    .get(*session)
                    .and_then(|s| s.call(request).map_err(|e| e.to_string()))
                    .and_then(|v| Response::from_json(&v, op_of(request)));
                coverage.requests += asked.elapsed();
                coverage.sent(request, &actual, final_check);
                let divergence = match &actual {
                    Err(e) => Some(Divergence {
                        at: records.len(),
                        expected: expected.clone(),
                        actual: Err(e.clone()),
                        differences: vec![format!("target error: {e}")],
                    }),
                    Ok(a) => {
                        let d = differences(&expected, a);
                        (!d.is_empty()).then(|| Divergence {
                            at: records.len(),
                            expected: expected.clone(),
                            actual: Ok(a.clone()),
                            differences: d,
                        })
                    }
                };
                records.push(Record {
                    action: action.clone(),
                    expected: Some(expected),
                    final_check,
                });
                if divergence.is_some() {
                    coverage.cases = case_started.elapsed();
                    return Ok(History {
                        records,
                        divergence,
                        coverage,
                    });
                }
            }
            ResolvedStep::Restart { session } => {
                let session = *session;
                // Only a session that is open can be restarted; otherwise nothing happens.
                let Some(mut s) = sessions.open.remove(&session) else {
                    coverage.leave_out("restart of a session not open");
                    continue;
                };
                coverage.did("restart");
                s.kill();
                drop(s);
                records.push(Record {
                    action: action.clone(),
                    expected: None,
                    final_check,
                });
                if let Err(e) = sessions.get(session) {
                    return Ok(broke_at_last(&records, &e, "restart", coverage));
                }
            }
            ResolvedStep::Wait { tenths, settle } => {
                coverage.did(if *settle { "settle" } else { "wait" });
                std::thread::sleep(std::time::Duration::from_millis(u64::from(*tenths) * 100));
                records.push(Record {
                    action,
                    expected: None,
                    final_check,
                });
            }
            ResolvedStep::Event { session, event } => {
                let (session, event) = (*session, *event);
                // Only a session that is open has a conversation to act on.
                if !sessions.open.contains_key(&session) {
                    coverage.leave_out(format!("{} of a session not open", event.name()));
                    continue;
                }
                coverage.did(event.name());
                records.push(Record {
                    action: action.clone(),
                    expected: None,
                    final_check,
                });
                if let Err(e) = session_event(&mut sessions, session, event) {
                    return Ok(broke_at_last(&records, &e, event.name(), coverage));
                }
            }
            ResolvedStep::Garbage { list, id } => {
                if hello.layout != Layout::ClaudeCode {
                    coverage.leave_out("files in an opaque layout");
                    continue;
                }
                coverage.did("garbage file");
                let path = task_path(&root, list, *id);
                write(&path, b"{\"id\": \"")?;
                oracle
                    .corrupt
                    .insert((list.parse().expect("valid"), *id), Damage::Garbage);
                records.push(Record {
                    action,
                    expected: None,
                    final_check,
                });
            }
            ResolvedStep::Symlink {
                list,
                id,
                outside: name,
                content,
            } => {
                if hello.layout != Layout::ClaudeCode {
                    coverage.leave_out("files in an opaque layout");
                    continue;
                }
                coverage.did("symbolic link");
                let target = outside.join(&*name);
                write(&target, content.to_string().as_bytes())?;
                let path = task_path(&root, list, *id);
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
                oracle
                    .corrupt
                    .insert((list.parse().expect("valid"), *id), Damage::Symlink);
                records.push(Record {
                    action,
                    expected: None,
                    final_check,
                });
            }
            ResolvedStep::WriteTask { list, id, task } => {
                if hello.layout != Layout::ClaudeCode {
                    coverage.leave_out("files in an opaque layout");
                    continue;
                }
                coverage.did("task rewritten by another program");
                let mut bytes = serde_json::to_vec_pretty(task).expect("values serialize");
                bytes.push(b'\n');
                write(&task_path(&root, list, *id), &bytes)?;
                let extra: Map<String, Value> = task
                    .as_object()
                    .expect("object")
                    .iter()
                    .filter(|(k, _)| !taskproof_core::task::TASK_FIELDS.contains(&k.as_str()))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                oracle
                    .extras
                    .insert((list.parse().expect("valid"), *id), extra);
                records.push(Record {
                    action,
                    expected: None,
                    final_check,
                });
            }
        }
    }
    for (_, mut s) in std::mem::take(&mut sessions.open) {
        let _ = s.close();
    }
    coverage.cases = case_started.elapsed();
    Ok(History {
        records,
        divergence: None,
        coverage,
    })
}

/// Does `event` on open session `i` the way the scenario runner does: an agent session
/// acts on it as its user would; a connection to a store has no conversation to clear or
/// compact, and its exit and resume are a close and a new connection.
fn session_event(sessions: &mut Sessions<'_>, i: usize, event: EventGen) -> Result<(), String> {
    let s = sessions
        .open
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
            sessions.open.remove(&i);
            sessions.get(i).map(|_| ())
        }
    }
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
