//! taskproof's scripted model: the Anthropic Messages API on 127.0.0.1 that an unmodified
//! agent CLI takes for its model, and the model's log (docs/architecture.md, "Crates").
//!
//! A product driven by a language model (Claude Code; any CLI whose provider's base URL can
//! point elsewhere) is run unmodified against a **scripted model**: a local server that
//! answers the product's requests with the tool calls a taskproof session scripts, one turn
//! at a time ([`scripted::ScriptedModel`]). What is particular to a product (which of its
//! requests is the agent's turn, which session it names) is a [`scripted::Recognizer`] its
//! driver passes in; the HTTP server and the wire format ([`messages`]) are shared by every
//! scripted model, the Claude Code background sessions' included. Every request and answer
//! can go to the model's own log ([`model_log`]).

pub mod messages;
pub mod model_log;
pub mod scripted;
