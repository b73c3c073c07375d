//! taskproof: a conformance test harness, race harness and fuzzer for agent task stores.
//!
//! The flow (docs/architecture.md draws it):
//!
//! ```text
//! scenario ──► target ──► events ──► report
//! (load, suite,  (sessions     (report::events:   (terminal, JSON,
//!  runner)        speaking      one stream)         JUnit, Markdown)
//!                 protocol)        ▲
//!          race, check, fuzz ──────┘   further producers of the same events
//! ```
//!
//! A scenario ([`scenario`]) is a list of steps; a [`target`] is the store under test,
//! in-process or an adapter process speaking the protocol of [`protocol`]; the runner sends
//! each step to the target, decodes the answer once ([`protocol::Answer`]) and judges it
//! against the [`profile`] the run holds the target to; results go out as
//! [`report::Event`]s to the reporters ([`report`]), with terminal, colour and CI decided
//! once ([`report::output`]). [`race`], [`check`] and [`fuzz`] emit their results into the
//! same stream (fuzz its start, progress, findings and end). [`matrix`] reads the JSON
//! reports of many runs; [`mcp`] serves the reference [`store`] to agents. Shared
//! vocabulary: the rules ([`rule`]), the layouts ([`layout`]), the dependency graph and its
//! wording ([`graph`]), and the one JSON field reader ([`field`]) behind the wire types of
//! [`task`] and the scenario loader.

/// An enum whose values are written as fixed words (`not_found`, `claude-code`): the enum,
/// `ALL` in declaration order, `as_str`, `Display`, and `FromStr` whose error is `unknown`
/// (given the text that matched nothing).
macro_rules! word_enum {
    (
        $(#[$attr:meta])*
        pub enum $name:ident, unknown: $unknown:expr, {
            $( $(#[$vattr:meta])* $variant:ident => $word:literal, )+
        }
    ) => {
        $(#[$attr])*
        pub enum $name {
            $( $(#[$vattr])* $variant, )+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: [$name; [$($word),+].len()] = [$($name::$variant),+];

            /// The word the value is written as.
            pub fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $word, )+
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                let unknown: fn(&str) -> String = $unknown;
                $name::ALL
                    .into_iter()
                    .find(|v| v.as_str() == s)
                    .ok_or_else(|| unknown(s))
            }
        }
    };
}

pub mod background;
pub mod check;
pub mod cli;
pub mod field;
pub mod fuzz;
pub mod graph;
pub mod layout;
pub mod matrix;
pub mod mcp;
pub mod model;
pub mod profile;
pub mod protocol;
pub mod race;
pub mod report;
pub mod rule;
pub mod scenario;
pub mod store;
pub mod target;
pub mod task;
