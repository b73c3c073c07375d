//! Exit codes of every taskproof command, in one place.

/// Everything passed: no failure, no error, no anomaly, no finding.
pub const OK: i32 = 0;
/// The command ran and found something: a failed scenario, a race anomaly, a fuzzer
/// divergence, a finding in an audited folder. A run with both failures and target errors
/// exits with this: a verdict was found.
pub const FOUND: i32 = 1;
/// The command could not run as asked: bad arguments, or a file (scenario, skip list,
/// report path) that cannot be read or is malformed.
pub const USAGE: i32 = 2;
/// The target broke before any verdict could be given: it could not be started, or it
/// crashed, hung or broke the protocol. The same cause gives this code from every command.
pub const TARGET: i32 = 3;

/// Hook mode (`check --stdin`), Claude Code's convention: the action is refused and stderr
/// goes to the model.
pub const HOOK_BLOCK: i32 = 2;
/// Hook mode: the hook itself could not judge (unreadable input). Claude Code shows stderr
/// to the user and lets the action go on: a broken hook must not stall the agent.
pub const HOOK_ERROR: i32 = 1;
