//! `reference`, `naive` and `mutant:NAME`: the stores built into taskproof, in-process
//! ([`InProcessSession`]).

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use crate::{InProcessSession, TargetSpec};
use taskproof_core::protocol::Request;
use taskproof_profile::Profile;
use taskproof_session::{Kind, Session, SessionOptions, Target, TargetError};
use taskproof_store::{Mutant, Options, StoreKind, StrictStore};

pub static REFERENCE: Kind = Kind {
    prefix: "reference",
    syntax: "reference",
    example: "reference",
    parse: |s| (s == "reference").then(|| Ok(builtin(StoreKind::Reference))),
    takes_mapping: false,
};

pub static NAIVE: Kind = Kind {
    prefix: "naive",
    syntax: "naive",
    example: "naive",
    parse: |s| (s == "naive").then(|| Ok(builtin(StoreKind::Naive))),
    takes_mapping: false,
};

pub static MUTANT: Kind = Kind {
    prefix: "mutant:",
    syntax: "mutant:NAME",
    example: "mutant:no-mirror",
    parse: |s| {
        s.strip_prefix("mutant:")
            .map(|m| m.parse().map(|m| builtin(StoreKind::Mutant(m))))
    },
    takes_mapping: false,
};

/// A store built into taskproof.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Builtin(StoreKind);

fn builtin(kind: StoreKind) -> Arc<dyn Target> {
    Arc::new(Builtin(kind))
}

impl TargetSpec {
    /// The strict reference store, in-process.
    pub fn reference() -> TargetSpec {
        Builtin(StoreKind::Reference).into()
    }

    /// The Claude Code 2.1.17 model, in-process.
    pub fn naive() -> TargetSpec {
        Builtin(StoreKind::Naive).into()
    }

    /// The reference store with one rule broken, in-process.
    pub fn mutant(mutant: Mutant) -> TargetSpec {
        Builtin(StoreKind::Mutant(mutant)).into()
    }
}

impl fmt::Display for Builtin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            StoreKind::Reference => f.write_str("reference"),
            StoreKind::Naive => f.write_str("naive"),
            StoreKind::Mutant(m) => write!(f, "mutant:{m}"),
        }
    }
}

fn store_error(e: std::io::Error) -> TargetError {
    TargetError::Io(format!("failed to open the store: {e}"))
}

impl Target for Builtin {
    fn kind(&self) -> &'static Kind {
        match self.0 {
            StoreKind::Reference => &REFERENCE,
            StoreKind::Naive => &NAIVE,
            StoreKind::Mutant(_) => &MUTANT,
        }
    }

    fn open(
        &self,
        root: &Path,
        options: SessionOptions,
    ) -> Result<Box<dyn Session>, (TargetError, String)> {
        let store = self
            .0
            .open(
                root,
                Options {
                    durable: options.durable,
                },
            )
            .map_err(|e| (store_error(e), String::new()))?;
        Ok(Box::new(InProcessSession::new(store)))
    }

    fn open_racing(
        &self,
        root: &Path,
        options: SessionOptions,
        shared: bool,
    ) -> Result<(Box<dyn Session>, Option<u32>), TargetError> {
        if shared && self.0 == StoreKind::Reference {
            // In a mixed race the reference shares the list with targets that lock the way
            // Claude Code does, as `taskproof mcp` opens it.
            let store = StrictStore::open(
                root,
                Options {
                    durable: options.durable,
                },
            )
            .map_err(store_error)?
            .with_claude_code_locks();
            return Ok((Box::new(InProcessSession::new(Box::new(store))), None));
        }
        let session = self.open(root, options).map_err(|(e, _)| e)?;
        Ok((session, None))
    }

    /// The reference holds its own lock for the whole change, and Claude Code's lock
    /// directories as it writes (`crates/store/src/cclock.rs`); the others hold none.
    fn writes_under_lock(&self, _request: &Request) -> bool {
        self.0 == StoreKind::Reference
    }

    fn default_profile(&self) -> Profile {
        match self.0 {
            StoreKind::Naive => Profile::Cc2117,
            _ => Profile::Strict,
        }
    }

    fn run_profile(&self) -> &'static str {
        // The recording of the naive store: it was made to behave that way.
        match self.0 {
            StoreKind::Naive => "hand-written-files",
            _ => "strict",
        }
    }
}
