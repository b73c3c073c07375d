//! The audit trail of the strict store (see `docs/audit.md`).

use std::cell::RefCell;

thread_local! {
    /// The actor of the request this thread is answering.
    static ACTOR: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Runs `f` with `actor` as the actor of the changes it makes.
pub fn with_actor<T>(actor: &str, f: impl FnOnce() -> T) -> T {
    let before = ACTOR.with(|a| a.replace(Some(actor.to_string())));
    let out = f();
    ACTOR.with(|a| *a.borrow_mut() = before);
    out
}
