//! taskproof's wire types, the bottom of its crate graph: what travels between the harness
//! and a store, and the shared vocabulary every other crate uses. Nothing here depends on
//! anything above it (docs/architecture.md).
//!
//! - [`task`]: the task as it travels (SPEC §1); [`field`]: the one hand-written JSON reader
//!   whose errors name the field path;
//! - [`protocol`]: the adapter protocol of SPEC §2: requests, responses, `Answer`, hello;
//! - [`layout`]: file names and disk⇄wire ids per layout; [`rule`]: the rules S1–S20 and
//!   B1–B8; [`graph`]: the dependency graph and the one wording of its violations.

/// An enum whose values are written as fixed words (`not_found`, `claude-code`): the enum,
/// `ALL` in declaration order, `as_str`, `Display`, and `FromStr` whose error is `unknown`
/// (given the text that matched nothing).
#[macro_export]
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

pub mod field;
pub mod graph;
pub mod layout;
pub mod protocol;
pub mod rule;
pub mod task;
