//! The integration tests, as one binary (ripgrep's layout): each module tests one part.

mod util;

mod store_kill;
mod store_model;
mod store_multiprocess;
mod store_rules;
mod store_symlink;
