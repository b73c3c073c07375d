//! The integration tests, as one binary (ripgrep's layout): each module tests one command.

mod fuzz;
mod util;
