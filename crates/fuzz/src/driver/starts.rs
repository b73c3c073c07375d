//! Where the cases start: a root with the target's sessions open on it, made fresh for each
//! case (the next one made while a case runs) or kept from case to case for a target that
//! declares lists, each case on lists of its own.

use super::*;

/// A root with the target's sessions open on it: a case's start. Made fresh for each case
/// (perhaps while the case before it runs: [`Starts`]), or kept from case to case for a
/// target that declares lists.
pub struct Ready {
    pub(super) sandbox: tempfile::TempDir,
    pub(super) sessions: BTreeMap<usize, Box<dyn Session>>,
    /// The first session's hello.
    pub(super) hello: Hello,
    /// How long making it took.
    pub(super) took: Duration,
    /// Cases run on it so far.
    pub(super) cases: u32,
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

    pub(super) fn root(&self) -> PathBuf {
        self.sandbox.path().join("root")
    }

    /// Ends every session: killed when the target broke, closed otherwise.
    pub(super) fn end(mut self, broke: bool) {
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
pub(super) fn reused(setup: &Setup, hello: &Hello) -> bool {
    setup.reuse && hello.has(Feature::Lists)
}

/// The list names the `n`-th case on a kept root sends for the fuzzer's lists.
pub(super) fn case_lists(n: u32) -> Vec<String> {
    LISTS.iter().map(|l| format!("c{n}-{l}")).collect()
}

/// Where the cases start: one root kept from case to case (where sharing is honest: the
/// target declares lists), or a fresh one for each, the next made on another thread while a
/// case runs (`prestart`; a real store's server takes about as long to start as a case
/// takes to run).
pub struct Starts {
    pub(super) setup: Setup,
    pub(super) prestart: bool,
    pub(super) next: Option<std::thread::JoinHandle<Result<Ready, CaseError>>>,
    pub(super) kept: Option<Ready>,
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
    pub(super) fn fresh(&mut self) -> Result<Ready, CaseError> {
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
