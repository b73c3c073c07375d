//! A deterministic simulated file layer for judging write protocols under every interleaving.
//!
//! Real processes cannot be made to interleave at a chosen instruction, so the question
//! "can two writers of one task file lose an acknowledged change, or can a reader see half a
//! file?" is asked here of a model: one task file and a temporary file in memory, a lock flag,
//! and writers that each run a protocol one step at a time while a schedule picks who moves
//! next and when a reader looks. The real-process counterparts (real flock, real rename, real
//! SIGKILL) are the race harness's business; this layer covers what only a simulation can:
//! every interleaving, reproducibly, at millions of schedules a minute.
//!
//! Two protocols:
//! - [`Protocol::Strict`], the reference store's: lock, read, modify, write the whole new
//!   content to a temporary file, rename it over the task file, unlock.
//! - [`Protocol::Naive`], Claude Code 2.1.17's: read, modify, truncate the task file, write
//!   the new content in two pieces (an `open(path, "w")` followed by writes that the OS may
//!   split), with no lock.
//!
//! Each writer adds its own keys to a JSON object; a write is *acknowledged* when its last
//! step completes. After every step a [`Checker`] looks at the task file: an acknowledged
//! key that is missing is a *lost update*; a reader that finds something that is not a whole
//! JSON document saw a *partial file*. Independently, [`Verdict::expected`] derives from the
//! history of reads and acknowledgements alone when a loss must have happened, so the checker
//! itself is checked: that is what "the fuzz target finds the naive protocol's loss" means.

use std::collections::{BTreeMap, BTreeSet};

use arbitrary::Arbitrary;

/// The write protocol every writer of one run follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Arbitrary)]
pub enum Protocol {
    Strict,
    Naive,
}

/// The steps of one write, in program order for its protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteStep {
    Lock,
    Read,
    Modify,
    WriteTemp,
    Rename,
    Unlock,
    Truncate,
    WriteFirstHalf,
    WriteSecondHalf,
}

impl Protocol {
    /// The program of one write; the last step is the acknowledgement.
    pub fn program(self) -> &'static [WriteStep] {
        match self {
            Protocol::Strict => &[
                WriteStep::Lock,
                WriteStep::Read,
                WriteStep::Modify,
                WriteStep::WriteTemp,
                WriteStep::Rename,
                WriteStep::Unlock,
            ],
            Protocol::Naive => &[
                WriteStep::Read,
                WriteStep::Modify,
                WriteStep::Truncate,
                WriteStep::WriteFirstHalf,
                WriteStep::WriteSecondHalf,
            ],
        }
    }
}

const TASK: &str = "task.json";
const TMP: &str = ".tmp";

/// One writer's program counter and private memory.
#[derive(Debug, Clone)]
struct Writer {
    /// Index into the protocol's program.
    pc: usize,
    /// Writes completed so far.
    round: u32,
    rounds: u32,
    /// What the last `Read` returned, parsed (`None` when it was not whole JSON).
    read: Option<BTreeMap<String, u64>>,
    /// The bytes this write will put down.
    pending: Vec<u8>,
}

/// Something that happened, for the independent judgement of [`Verdict::expected`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// Writer `w` read the task file; `whole` says whether it was a complete document.
    Read { w: usize, whole: bool },
    /// Writer `w`'s write of key `key` was acknowledged.
    Ack { w: usize, key: String },
    /// A reader looked at the task file.
    Observe { whole: bool },
}

/// The simulated folder, writers and schedule state.
#[derive(Debug, Clone)]
pub struct Sim {
    protocol: Protocol,
    files: BTreeMap<&'static str, Vec<u8>>,
    /// The writer holding the lock.
    lock: Option<usize>,
    writers: Vec<Writer>,
    pub history: Vec<Event>,
    pub checker: Checker,
}

/// Watches the task file after every step.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Checker {
    acked: BTreeSet<String>,
    /// Acknowledged keys that were missing from a whole task file at some point after their
    /// acknowledgement, or that a torn file left at the end destroyed.
    pub lost: BTreeSet<String>,
    /// Reader observations that found something other than whole JSON.
    pub partial_reads: usize,
}

/// What a run showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Verdict {
    pub lost_update: bool,
    pub partial_read: bool,
}

fn encode(m: &BTreeMap<String, u64>) -> Vec<u8> {
    serde_json::to_vec(m).expect("maps serialize")
}

fn decode(bytes: &[u8]) -> Option<BTreeMap<String, u64>> {
    serde_json::from_slice(bytes).ok()
}

impl Checker {
    fn ack(&mut self, key: String) {
        self.acked.insert(key);
    }

    fn look(&mut self, file: Option<&Vec<u8>>) {
        // Between steps the task file may legitimately be mid-write (naive): only keys that
        // are absent from a *whole* file, or from a file that will never be whole again,
        // count. A torn file is judged when it is next whole, or at the end.
        let Some(content) = file.and_then(|b| decode(b)) else {
            return;
        };
        for k in &self.acked {
            if !content.contains_key(k) {
                self.lost.insert(k.clone());
            }
        }
    }

    /// The end of the run: a file left torn has lost every acknowledged key.
    fn finish(&mut self, file: Option<&Vec<u8>>) {
        if file.and_then(|b| decode(b)).is_none() {
            self.lost.extend(self.acked.iter().cloned());
        }
    }

    pub fn verdict(&self) -> Verdict {
        Verdict {
            lost_update: !self.lost.is_empty(),
            partial_read: self.partial_reads > 0,
        }
    }
}

impl Verdict {
    /// When a loss and a partial read must have happened, judged from the history alone.
    ///
    /// A writer's new content is what it read plus its own key. So an acknowledged key K is
    /// missing from the file after writer A's acknowledgement exactly when A's read did not
    /// contain K while K was acknowledged before A's acknowledgement: K was acknowledged
    /// after A's read, or A's read was not whole (a naive writer then starts from nothing).
    /// Without such a write no acknowledgement drops a key, since each one writes a superset
    /// of what the file held at its read, which held every key acknowledged before it.
    pub fn expected(history: &[Event]) -> Verdict {
        let mut v = Verdict::default();
        // For each writer: at its last read, was the read whole, and which keys had been
        // acknowledged by then.
        let mut last_read: BTreeMap<usize, (bool, usize)> = BTreeMap::new();
        let mut acks = 0usize;
        for e in history {
            match e {
                Event::Read { w, whole } => {
                    last_read.insert(*w, (*whole, acks));
                }
                Event::Ack { w, .. } => {
                    if let Some(&(whole, acks_at_read)) = last_read.get(w) {
                        // Keys acknowledged (by others) after the read, or any earlier key if
                        // the read found no whole file.
                        if acks > acks_at_read || (!whole && acks > 0) {
                            v.lost_update = true;
                        }
                    }
                    acks += 1;
                }
                Event::Observe { whole } => {
                    if !whole {
                        v.partial_read = true;
                    }
                }
            }
        }
        v
    }
}

impl Sim {
    /// `rounds[i]` is how many writes writer `i` makes.
    pub fn new(protocol: Protocol, rounds: &[u32]) -> Sim {
        let mut files = BTreeMap::new();
        files.insert(TASK, encode(&BTreeMap::new()));
        Sim {
            protocol,
            files,
            lock: None,
            writers: rounds
                .iter()
                .map(|&r| Writer {
                    pc: 0,
                    round: 0,
                    rounds: r,
                    read: None,
                    pending: Vec::new(),
                })
                .collect(),
            history: Vec::new(),
            checker: Checker::default(),
        }
    }

    pub fn done(&self) -> bool {
        self.writers.iter().all(|w| w.round >= w.rounds)
    }

    /// Whether writer `w` can take its next step now (not finished, not waiting on a lock).
    pub fn runnable(&self, w: usize) -> bool {
        let wr = &self.writers[w];
        if wr.round >= wr.rounds {
            return false;
        }
        let action = self.protocol.program()[wr.pc];
        !(action == WriteStep::Lock && self.lock.is_some_and(|h| h != w))
    }

    /// A reader looks at the task file.
    pub fn observe(&mut self) {
        let whole = self.files.get(TASK).and_then(|b| decode(b)).is_some();
        if !whole {
            self.checker.partial_reads += 1;
        }
        self.history.push(Event::Observe { whole });
    }

    /// Writer `w` takes one step. Panics if it is not runnable: schedules pick among
    /// runnable writers.
    pub fn step(&mut self, w: usize) {
        assert!(self.runnable(w), "writer {w} is not runnable");
        let program = self.protocol.program();
        let action = program[self.writers[w].pc];
        let key = format!("w{w}-{}", self.writers[w].round);
        match action {
            WriteStep::Lock => self.lock = Some(w),
            WriteStep::Unlock => {
                debug_assert_eq!(self.lock, Some(w));
                self.lock = None;
            }
            WriteStep::Read => {
                let read = self.files.get(TASK).and_then(|b| decode(b));
                self.history.push(Event::Read {
                    w,
                    whole: read.is_some(),
                });
                self.writers[w].read = read;
            }
            WriteStep::Modify => {
                // An unreadable file is taken as empty, as a naive writer would.
                let mut m = self.writers[w].read.clone().unwrap_or_default();
                m.insert(key.clone(), u64::from(self.writers[w].round));
                self.writers[w].pending = encode(&m);
            }
            WriteStep::WriteTemp => {
                self.files.insert(TMP, self.writers[w].pending.clone());
            }
            WriteStep::Rename => {
                let tmp = self.files.remove(TMP).expect("the temp file was written");
                self.files.insert(TASK, tmp);
            }
            WriteStep::Truncate => {
                self.files.insert(TASK, Vec::new());
            }
            WriteStep::WriteFirstHalf => {
                let p = &self.writers[w].pending;
                let half = p[..p.len() / 2].to_vec();
                self.files.get_mut(TASK).expect("task file").extend(half);
            }
            WriteStep::WriteSecondHalf => {
                let p = &self.writers[w].pending;
                let rest = p[p.len() / 2..].to_vec();
                self.files.get_mut(TASK).expect("task file").extend(rest);
            }
        }
        let wr = &mut self.writers[w];
        wr.pc += 1;
        if wr.pc == program.len() {
            wr.pc = 0;
            wr.round += 1;
            self.history.push(Event::Ack {
                w,
                key: key.clone(),
            });
            self.checker.ack(key);
        }
        self.checker.look(self.files.get(TASK));
    }

    /// Runs a schedule: each byte picks the next move. A byte with the high bit set is a
    /// reader's look; otherwise it picks among the runnable writers. When the bytes run out
    /// the writers finish in turn, so every run ends with every write acknowledged.
    pub fn run(&mut self, schedule: &[u8]) {
        for &b in schedule {
            if self.done() {
                break;
            }
            if b & 0x80 != 0 {
                self.observe();
                continue;
            }
            let runnable: Vec<usize> = (0..self.writers.len())
                .filter(|&w| self.runnable(w))
                .collect();
            // Someone is always runnable: the lock holder is never waiting.
            let w = runnable[usize::from(b) % runnable.len()];
            self.step(w);
        }
        while !self.done() {
            let w = (0..self.writers.len())
                .find(|&w| self.runnable(w))
                .expect("a writer can always move");
            self.step(w);
        }
        self.checker.finish(self.files.get(TASK));
        self.observe();
    }
}

/// The input of the `file_race` fuzz target.
#[derive(Debug, Clone, Arbitrary)]
pub struct Schedule {
    pub protocol: Protocol,
    /// Writes per writer, reduced to 2 to 4 writers of 1 to 3 writes each.
    pub rounds: Vec<u8>,
    pub moves: Vec<u8>,
}

impl Schedule {
    /// Runs the schedule and checks it: the checker agrees with the history's judgement,
    /// and under the strict protocol nothing is ever lost or seen torn. Panics otherwise.
    pub fn check(&self) -> Verdict {
        let mut rounds: Vec<u32> = self
            .rounds
            .iter()
            .take(4)
            .map(|r| u32::from(r % 3) + 1)
            .collect();
        while rounds.len() < 2 {
            rounds.push(1);
        }
        let mut sim = Sim::new(self.protocol, &rounds);
        sim.run(&self.moves);
        let seen = sim.checker.verdict();
        let expected = Verdict::expected(&sim.history);
        assert_eq!(
            seen, expected,
            "the checker disagrees with the history: {:?}",
            sim.history
        );
        if self.protocol == Protocol::Strict {
            assert!(
                !seen.lost_update && !seen.partial_read,
                "the strict protocol lost an update or showed a partial file: {:?}",
                sim.history
            );
        }
        seen
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A simulation of `protocol` with writers of `rounds` rounds each, after `moves`.
    fn ran(protocol: Protocol, rounds: &[u32], moves: &[u8]) -> Sim {
        let mut sim = Sim::new(protocol, rounds);
        sim.run(moves);
        sim
    }

    /// Both writers read before either writes: the classic lost update.
    const INTERLEAVED: [u8; 2] = [0, 1];

    #[test]
    fn naive_loses_an_update_when_read_modify_write_interleaves() {
        // Writer 0 reads; writer 1 reads; then both finish in turn (0 first).
        let sim = ran(Protocol::Naive, &[1, 1], &INTERLEAVED);
        let v = sim.checker.verdict();
        assert!(v.lost_update, "history: {:?}", sim.history);
        assert_eq!(sim.checker.lost, BTreeSet::from(["w0-0".to_string()]));
        assert_eq!(v, Verdict::expected(&sim.history));
    }

    #[test]
    fn strict_cannot_lose_the_same_schedule() {
        let sim = ran(Protocol::Strict, &[1, 1], &INTERLEAVED);
        assert_eq!(sim.checker.verdict(), Verdict::default());
    }

    #[test]
    fn naive_shows_a_partial_file_to_a_reader_mid_write() {
        // Writer 0: read, modify, truncate; then a reader looks.
        let sim = ran(Protocol::Naive, &[1, 1], &[0, 0, 0, 0x80]);
        assert!(sim.checker.verdict().partial_read);
    }

    #[test]
    fn strict_readers_never_see_a_partial_file() {
        // A look after every single step of two interleaved writers.
        let mut moves = Vec::new();
        for i in 0..40u8 {
            moves.push(i % 2);
            moves.push(0x80);
        }
        let sim = ran(Protocol::Strict, &[2, 2], &moves);
        assert_eq!(sim.checker.verdict(), Verdict::default());
    }

    #[test]
    fn a_waiting_writer_is_not_runnable() {
        let mut sim = Sim::new(Protocol::Strict, &[1, 1]);
        sim.step(0); // takes the lock
        assert!(!sim.runnable(1));
        assert!(sim.runnable(0));
    }

    #[test]
    fn sequential_naive_writes_lose_nothing() {
        let sim = ran(Protocol::Naive, &[2, 2], &[]);
        assert_eq!(sim.checker.verdict(), Verdict::default());
    }
}
