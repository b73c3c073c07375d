//! The integration tests, as one binary (ripgrep's layout): each module tests one command
//! through the built `taskproof` binary.

mod util;

mod check;
mod fuzz;
mod run;
mod store_model;
mod suite;
