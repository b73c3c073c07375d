//! Linearizability checking in the style of Wing and Gong, with Lowe's memoization (as in
//! Knossos and Porcupine): search for a total order of the operations that respects real
//! time (an operation that completed before another was invoked comes first) and in which
//! every operation's outcome is what the sequential specification ([`Sequential`]) says.
//!
//! Operations without an answer (`info`: killed or timed out) may take effect at any point
//! after their invoke, or never; when the harness knows that the operation's session was
//! dead by some moment (it killed the adapter's whole process group), that moment bounds
//! it. They are tried only after every answered candidate, which keeps the search close to
//! linear when the history is fine. A configuration (which
//! operations are linearized, and the model state) is remembered by a 128-bit fingerprint
//! (the set's part kept incrementally, so a step costs the model state's size, not the
//! history's) and never explored twice. The search has a step budget: when it runs out the verdict is
//! [`Verdict::Unknown`], never a pass.

use std::collections::HashSet;
use std::hash::{BuildHasher, BuildHasherDefault, Hash, Hasher};
use std::time::Duration;

/// The seed of the state hash: any fixed number does, so that runs are repeatable.
const STATE_HASH: foldhash::quality::FixedState =
    foldhash::quality::FixedState::with_seed(0x7461_736b_7072_6f6f);

/// A hasher for fingerprints, which are random-looking already: it keeps the first 64 bits
/// it is given. Hashing them again with SipHash cost a tenth of a step.
#[derive(Default)]
struct Given(u64);

impl Hasher for Given {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.0 = self.0.rotate_left(17) ^ u64::from_le_bytes(word);
        }
    }

    fn write_u64(&mut self, x: u64) {
        self.0 = self.0.rotate_left(17) ^ x;
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

type Fingerprints = HashSet<(u64, u64), BuildHasherDefault<Given>>;

/// A sequential specification.
pub trait Sequential {
    type State: Clone + Hash + Eq;
    type Op;

    /// The state before the first operation.
    fn init(&self) -> Self::State;

    /// The state after `op` when it is linearized in `state`, or `None` when the operation's
    /// recorded outcome is impossible there.
    fn step(&self, state: &Self::State, op: &Self::Op) -> Option<Self::State>;

    /// Why `op` cannot be linearized in `state`, in plain words (for witnesses).
    fn explain(&self, state: &Self::State, op: &Self::Op) -> String;
}

/// One operation of a history.
#[derive(Debug, Clone)]
pub struct Entry<O> {
    pub op: O,
    pub invoke: Duration,
    /// When the operation had happened by, if it happened: its answer, or for an
    /// unanswered operation the moment its session was killed. `None`: no bound; the
    /// operation may have happened at any time after `invoke`.
    pub complete: Option<Duration>,
    /// The operation may never have happened (no answer came).
    pub optional: bool,
}

/// The outcome of a check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Linearizable {
        steps: u64,
    },
    /// No order explains the history. `stuck` is the entry that could not be placed at the
    /// deepest point the search reached, after `prefix` operations were placed; `reason`
    /// says what the model expected there.
    NotLinearizable {
        stuck: usize,
        prefix: usize,
        reason: String,
        steps: u64,
    },
    /// The step budget ran out before an answer.
    Unknown {
        steps: u64,
    },
}

#[derive(Clone, Copy)]
enum Kind {
    Call,
    Return,
}

/// A doubly linked list of call and return entries in time order, from which linearized
/// operations are lifted and to which they are restored on backtracking.
struct Events {
    kind: Vec<Kind>,
    op: Vec<usize>,
    prev: Vec<usize>,
    next: Vec<usize>,
    /// Index of each operation's call and return node (`usize::MAX`: no return).
    call_of: Vec<usize>,
    ret_of: Vec<usize>,
}

const NIL: usize = usize::MAX;

impl Events {
    /// Node 0 is the head sentinel.
    fn new<O>(entries: &[Entry<O>]) -> Events {
        // (time, call-before-return at equal times, op): an operation that completes at
        // the very moment another is invoked is treated as concurrent with it.
        // Calls and returns are sorted apart and merged: a history comes in invoke order,
        // and its answers nearly in order, so each sort is close to a pass over a run.
        let mut calls: Vec<(Duration, u8, usize)> = Vec::with_capacity(entries.len());
        let mut returns: Vec<(Duration, u8, usize)> = Vec::with_capacity(entries.len());
        for (i, e) in entries.iter().enumerate() {
            calls.push((e.invoke, 0, i));
            if let Some(c) = e.complete {
                returns.push((c.max(e.invoke), 1, i));
            }
        }
        // Unstable sorts give the same order: no two items are equal (each op has one
        // call and at most one return).
        calls.sort_unstable();
        returns.sort_unstable();
        let mut items = Vec::with_capacity(calls.len() + returns.len());
        let (mut c, mut r) = (calls.into_iter().peekable(), returns.into_iter().peekable());
        loop {
            let next = match (c.peek(), r.peek()) {
                (Some(a), Some(b)) if a <= b => c.next(),
                (_, Some(_)) => r.next(),
                (Some(_), None) => c.next(),
                (None, None) => break,
            };
            items.extend(next);
        }
        let n = items.len() + 1;
        let mut ev = Events {
            kind: vec![Kind::Call; n],
            op: vec![NIL; n],
            prev: vec![NIL; n],
            next: vec![NIL; n],
            call_of: vec![NIL; entries.len()],
            ret_of: vec![NIL; entries.len()],
        };
        for (k, &(_, r, i)) in items.iter().enumerate() {
            let node = k + 1;
            ev.op[node] = i;
            if r == 0 {
                ev.call_of[i] = node;
            } else {
                ev.kind[node] = Kind::Return;
                ev.ret_of[i] = node;
            }
        }
        for node in 0..n {
            ev.prev[node] = if node == 0 { NIL } else { node - 1 };
            ev.next[node] = if node + 1 < n { node + 1 } else { NIL };
        }
        ev
    }

    fn unlink(&mut self, node: usize) {
        let (p, n) = (self.prev[node], self.next[node]);
        self.next[p] = n;
        if n != NIL {
            self.prev[n] = p;
        }
    }

    /// Restores a node removed by `unlink`; nodes must be restored in reverse order of
    /// removal (dancing links).
    fn relink(&mut self, node: usize) {
        let (p, n) = (self.prev[node], self.next[node]);
        self.next[p] = node;
        if n != NIL {
            self.prev[n] = node;
        }
    }

    fn lift(&mut self, op: usize) {
        self.unlink(self.call_of[op]);
        if self.ret_of[op] != NIL {
            self.unlink(self.ret_of[op]);
        }
    }

    fn unlift(&mut self, op: usize) {
        if self.ret_of[op] != NIL {
            self.relink(self.ret_of[op]);
        }
        self.relink(self.call_of[op]);
    }

    /// The operations that may come next: those invoked before the earliest completion
    /// still pending, required ones first (in invoke order), then optional ones. Also the
    /// operation whose return bounds the window, if any.
    /// They are appended to `out`; `optional` is scratch space.
    fn candidates<O>(
        &self,
        entries: &[Entry<O>],
        out: &mut Vec<Choice>,
        optional: &mut Vec<usize>,
    ) -> Option<usize> {
        optional.clear();
        let mut node = self.next[0];
        let mut bound = None;
        while node != NIL {
            match self.kind[node] {
                Kind::Return => {
                    bound = Some(self.op[node]);
                    break;
                }
                Kind::Call => {
                    let op = self.op[node];
                    if entries[op].optional {
                        optional.push(op);
                    } else {
                        out.push(Choice::Place(op));
                    }
                }
            }
            node = self.next[node];
        }
        out.extend(optional.iter().map(|&op| Choice::Place(op)));
        bound
    }
}

/// A 64-bit mix of `x` (splitmix64's finalizer): the random-looking number an operation
/// contributes to the fingerprint of every set of linearized operations holding it.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The set of linearized operations, fingerprinted incrementally (Zobrist hashing): each
/// operation has two random 64-bit numbers, and the set's fingerprint is the exclusive or
/// of its members' numbers, updated in constant time as operations are placed and undone.
/// Hashing the set as a bit vector instead costs its length at every step, which made the
/// search quadratic in the history.
#[derive(Default)]
struct Placed {
    a: u64,
    b: u64,
}

impl Placed {
    fn toggle(&mut self, op: usize) {
        self.a ^= mix(op as u64);
        self.b ^= mix((op as u64) ^ 0x5851_f42d_4c95_7f2d);
    }

    /// The configuration's fingerprint: the state is hashed once (64 bits) and combined
    /// with each half of the set's. Hashing it twice, as a 128-bit state hash would,
    /// doubled the cost of a step for a collision chance that is already below one in ten
    /// million for a million configurations. The hash is foldhash's quality one with a
    /// fixed seed (the same in every run), which reads the state eight or sixteen bytes at
    /// a time; SipHash, at a byte or two per cycle, was a quarter of the search's time on
    /// states holding a hundred metadata pairs.
    fn fingerprint<S: Hash>(&self, state: &S) -> (u64, u64) {
        let s = STATE_HASH.hash_one(state);
        (mix(s ^ self.a), mix(s.rotate_left(32) ^ self.b))
    }
}

/// One choice at a point of the search: place an operation, or decide that an optional
/// one never happened (only when its bound has come).
#[derive(Clone, Copy)]
enum Choice {
    Place(usize),
    Skip(usize),
}

/// A point of the search: its choices are `choices[start..end]` of the search's one arena
/// (a frame per placed operation would otherwise allocate its own list at every step).
struct Frame<S> {
    start: usize,
    end: usize,
    next: usize,
    /// The operation this frame linearized and the state before it, to undo on backtrack.
    chosen: Option<(usize, S)>,
}

/// Checks `entries` against `model`, spending at most `budget` steps (one step is one
/// attempt to place one operation).
pub fn check<M: Sequential>(model: &M, entries: &[Entry<M::Op>], budget: u64) -> Verdict {
    check_to(model, entries, budget).0
}

/// [`check`], and with a linearizable history the state after the order it found: what a
/// caller that goes on from the history (the fuzzer's sequential steps after a parallel
/// part) holds the target to next. Another order may explain the history too and end in
/// another state; the caller that meets an answer this state does not explain checks the
/// longer history again.
pub fn check_to<M: Sequential>(
    model: &M,
    entries: &[Entry<M::Op>],
    budget: u64,
) -> (Verdict, Option<M::State>) {
    match search(model, entries, budget, false) {
        // The witness needs the state at the deepest point, which costs a copy of the
        // state every time the search goes deeper; a history that fails is searched again,
        // the same way, keeping it.
        (Verdict::NotLinearizable { .. }, _) => search(model, entries, budget, true),
        v => v,
    }
}

/// The search. With `explain`, the state at the deepest point is kept and the reason is
/// given; without, the reason of a failure is empty.
fn search<M: Sequential>(
    model: &M,
    entries: &[Entry<M::Op>],
    budget: u64,
    explain: bool,
) -> (Verdict, Option<M::State>) {
    let mut events = Events::new(entries);
    let required_total = entries.iter().filter(|e| !e.optional).count();
    let mut placed_required = 0usize;
    let mut linearized = Placed::default();
    let mut seen = Fingerprints::default();
    let mut state = model.init();
    let mut steps = 0u64;
    // Deepest point reached, for the witness: (placed, stuck op, state there if kept).
    let mut deepest: Option<(usize, usize, Option<M::State>)> = None;
    let mut stack: Vec<Frame<M::State>> = Vec::new();
    let mut choices: Vec<Choice> = Vec::new();
    let mut optional: Vec<usize> = Vec::new();
    let mut fresh = true;
    loop {
        if fresh {
            if placed_required == required_total {
                return (Verdict::Linearizable { steps }, Some(state));
            }
            let start = choices.len();
            let bound = events.candidates(entries, &mut choices, &mut optional);
            if let Some(b) = bound {
                if entries[b].optional {
                    choices.push(Choice::Skip(b));
                } else if deepest.as_ref().is_none_or(|d| stack.len() > d.0) {
                    deepest = Some((stack.len(), b, explain.then(|| state.clone())));
                }
            }
            stack.push(Frame {
                start,
                end: choices.len(),
                next: start,
                chosen: None,
            });
            fresh = false;
        }
        let frame = stack.last_mut().expect("a frame");
        let mut advanced = false;
        while frame.next < frame.end {
            let choice = choices[frame.next];
            frame.next += 1;
            steps += 1;
            if steps > budget {
                return (Verdict::Unknown { steps }, None);
            }
            let (op, after) = match choice {
                Choice::Place(op) => match model.step(&state, &entries[op].op) {
                    Some(after) => (op, after),
                    None => continue,
                },
                Choice::Skip(op) => (op, state.clone()),
            };
            linearized.toggle(op);
            if !seen.insert(linearized.fingerprint(&after)) {
                linearized.toggle(op);
                continue;
            }
            events.lift(op);
            if !entries[op].optional {
                placed_required += 1;
            }
            let before = std::mem::replace(&mut state, after);
            // The frame that placed `op` remembers how to undo it.
            frame.chosen = Some((op, before));
            advanced = true;
            break;
        }
        if advanced {
            fresh = true;
            continue;
        }
        // Every candidate failed here: undo the parent's choice and let it try its next.
        let done = stack.pop().expect("a frame");
        choices.truncate(done.start);
        let Some(parent) = stack.last_mut() else {
            let (prefix, stuck, at) = deepest.expect("a history with required operations");
            let verdict = Verdict::NotLinearizable {
                stuck,
                prefix,
                reason: at
                    .map(|at| model.explain(&at, &entries[stuck].op))
                    .unwrap_or_default(),
                steps,
            };
            return (verdict, None);
        };
        let (op, before) = parent
            .chosen
            .take()
            .expect("a parent frame placed an operation");
        events.unlift(op);
        linearized.toggle(op);
        if !entries[op].optional {
            placed_required -= 1;
        }
        state = before;
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A read/write register: the smallest model, for testing the search itself.
    pub struct Register;

    #[derive(Debug, Clone)]
    pub enum RegOp {
        Write(u32),
        /// A read that returned this value.
        Read(u32),
    }

    impl Sequential for Register {
        type State = u32;
        type Op = RegOp;
        fn init(&self) -> u32 {
            0
        }
        fn step(&self, s: &u32, op: &RegOp) -> Option<u32> {
            match *op {
                RegOp::Write(v) => Some(v),
                RegOp::Read(v) => (v == *s).then_some(*s),
            }
        }
        fn explain(&self, s: &u32, op: &RegOp) -> String {
            format!("{op:?} in state {s}")
        }
    }

    pub fn e(op: RegOp, invoke: u64, complete: Option<u64>) -> Entry<RegOp> {
        Entry {
            op,
            invoke: Duration::from_millis(invoke),
            complete: complete.map(Duration::from_millis),
            optional: complete.is_none(),
        }
    }

    /// The verdict on `h` in a word, with a budget no test here exhausts.
    fn verdict(h: &[Entry<RegOp>]) -> &'static str {
        match check(&Register, h, 1000) {
            Verdict::Linearizable { .. } => "linearizable",
            Verdict::NotLinearizable { .. } => "not linearizable",
            Verdict::Unknown { .. } => "unknown",
        }
    }

    #[test]
    fn a_bounded_unanswered_write_happens_before_its_bound_or_never() {
        // Killed at 5: it may have happened, but not after 5.
        let bounded = |v| Entry {
            op: RegOp::Write(v),
            invoke: Duration::from_millis(0),
            complete: Some(Duration::from_millis(5)),
            optional: true,
        };
        let before = [bounded(7), e(RegOp::Read(7), 10, Some(20))];
        assert_eq!(verdict(&before), "linearizable");
        let never = [bounded(7), e(RegOp::Read(0), 10, Some(20))];
        assert_eq!(verdict(&never), "linearizable");
        let late = [
            bounded(7),
            e(RegOp::Read(0), 10, Some(20)),
            e(RegOp::Read(7), 30, Some(40)),
        ];
        assert_eq!(verdict(&late), "not linearizable");
    }

    #[test]
    fn concurrent_write_and_read_may_order_either_way() {
        let h = [
            e(RegOp::Write(1), 0, Some(10)),
            e(RegOp::Read(1), 1, Some(5)),
            e(RegOp::Read(0), 2, Some(6)),
        ];
        assert_eq!(verdict(&h), "linearizable");
    }

    #[test]
    fn a_stale_read_after_a_completed_write_is_not_linearizable() {
        // The write of 1 completed at 10; a read invoked at 20 still sees 0.
        let h = [
            e(RegOp::Write(1), 0, Some(10)),
            e(RegOp::Read(0), 20, Some(30)),
        ];
        match check(&Register, &h, 1000) {
            Verdict::NotLinearizable { stuck, prefix, .. } => {
                assert_eq!((stuck, prefix), (1, 1));
            }
            v => panic!("{v:?}"),
        }
    }

    #[test]
    fn an_unanswered_write_may_happen_late_or_never() {
        let late = [
            e(RegOp::Write(7), 0, None),
            e(RegOp::Read(0), 10, Some(20)),
            e(RegOp::Read(7), 30, Some(40)),
        ];
        assert_eq!(verdict(&late), "linearizable");
        let never = [e(RegOp::Write(7), 0, None), e(RegOp::Read(0), 10, Some(20))];
        assert_eq!(verdict(&never), "linearizable");
        // But it cannot happen before its invoke.
        let early = [e(RegOp::Read(7), 0, Some(5)), e(RegOp::Write(7), 10, None)];
        assert_eq!(verdict(&early), "not linearizable");
    }

    #[test]
    fn an_exhausted_budget_is_unknown_never_a_pass() {
        // Many overlapping writes and a read that no order explains: the search has to try
        // many orders before giving up, more than a budget of 10 steps allows.
        let mut h: Vec<_> = (1..=12).map(|v| e(RegOp::Write(v), 0, Some(100))).collect();
        h.push(e(RegOp::Read(99), 0, Some(100)));
        assert_eq!(check(&Register, &h, 10), Verdict::Unknown { steps: 11 });
        assert!(matches!(
            check(&Register, &h, 10_000_000),
            Verdict::NotLinearizable { .. }
        ));
    }
}
