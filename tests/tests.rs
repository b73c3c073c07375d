//! The integration tests, as one binary (ripgrep's layout): each module tests one command.

mod run;
mod util;
