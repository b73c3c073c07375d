//! The integration tests, as one binary (ripgrep's layout): each module tests one command or
//! one part of the project through the built `taskproof` binary or the library.

mod util;

mod audit_kill;
mod background;
mod bisect;
mod cclock;
mod check;
mod check_journal;
mod claims;
mod classes;
mod claude_code;
mod claude_code_background;
mod claude_code_hook;
mod claude_code_mcp;
mod claude_code_restore;
mod claude_code_teams;
mod controller;
mod docs;
mod export;
mod fuzz;
mod judge;
mod matrix;
mod mcp;
mod mcp_batch;
mod mcp_fuzz_replay;
mod mcp_pool;
mod mcp_target;
mod mcp_target_text;
mod opencode;
mod profile;
mod race;
mod race_mixed;
mod race_own_tasks;
mod report_schema;
mod reports_once;
mod run;
mod session_steps;
mod store_kill;
mod store_model;
mod store_multiprocess;
mod store_rules;
mod store_symlink;
mod suite;
mod target_signals;
mod words;
