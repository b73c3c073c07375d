//! Integration tests, as one binary (one link step, shared helpers).

mod race;
mod util;
