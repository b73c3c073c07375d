//! Deliberately broken variants of the reference background runner, one rule each, so that
//! the background suite proves it catches each kind of bug the public reports describe. A
//! mutant is the reference with exactly one mechanism switched off or changed.

use taskproof_core::rule::Rule;

word_enum! {
    /// One broken background rule (docs/background.md).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
    pub enum BgMutant, unknown: |s| format!(
        "unknown background mutant {s:?}; expected one of {}",
        BgMutant::ALL.iter().map(|m| m.as_str()).collect::<Vec<_>>().join(", ")
    ), {
        /// B2: no `notified` latch: the result handler and a kill each notify (#52786).
        DoubleNotify => "double-notify",
        /// B2: a notification that arrives while an earlier one is still undelivered is
        /// dropped, so the second and later of concurrent tasks are never notified (#40235).
        DropConcurrent => "drop-concurrent",
        /// B7: kill and the session's end signal the task's shell only, not its process
        /// group, so its children live on (#84464).
        KillNoCleanup => "kill-no-cleanup",
        /// B7: the served runner starts no guardian, so a SIGKILL of the session leaves its
        /// tasks running.
        NoDeathCleanup => "no-death-cleanup",
        /// B1: the result handler writes the exit's status over a final one, so a killed
        /// task turns `failed` when its process dies.
        StatusNotFinal => "status-not-final",
        /// B3: a failed command is notified as completed, with no exit code.
        FailureNotifiedAsSuccess => "failure-notified-as-success",
        /// B4: output reads ignore the offset and start from byte 0 each time.
        OffsetIgnored => "offset-ignored",
        /// B5: a task is evicted as soon as it is final, before it was notified, so reads
        /// and kills answer "No task found" (#43078).
        EvictEarly => "evict-early",
        /// B6: ids are a type letter and a decimal counter, predictable from one session to
        /// the next.
        CounterIds => "counter-ids",
        /// B8: no output cap: a flooding command writes on without limit.
        NoOutputCap => "no-output-cap",
    }
}

impl BgMutant {
    /// The rule this mutant breaks.
    pub fn rule(self) -> Rule {
        let b = |n: usize| Rule::BACKGROUND[n - 1];
        match self {
            BgMutant::StatusNotFinal => b(1),
            BgMutant::DoubleNotify | BgMutant::DropConcurrent => b(2),
            BgMutant::FailureNotifiedAsSuccess => b(3),
            BgMutant::OffsetIgnored => b(4),
            BgMutant::EvictEarly => b(5),
            BgMutant::CounterIds => b(6),
            BgMutant::KillNoCleanup | BgMutant::NoDeathCleanup => b(7),
            BgMutant::NoOutputCap => b(8),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back_and_each_breaks_a_background_rule() {
        for m in BgMutant::ALL {
            assert_eq!(m.as_str().parse::<BgMutant>(), Ok(m));
            assert!(Rule::BACKGROUND.contains(&m.rule()));
        }
        let err = "nope".parse::<BgMutant>().unwrap_err();
        assert!(err.contains("double-notify"), "{err}");
    }
}
