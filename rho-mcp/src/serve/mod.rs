//! Serving a rho registry to MCP clients.
//!
//! One concept a module: `server` holds what every session shares,
//! `session` is rmcp's handler of one connection, `listing` answers
//! `tools/list`, `call` runs `tools/call` as a rho call and `result`
//! maps its end to MCP's result, `progress` turns partial results into
//! progress notifications, `list_changed` tells clients when the list
//! changes, `closing` tells calls that their client has gone, and `stdio`
//! is the line-delimited transport.

mod call;
mod closing;
mod list_changed;
mod listing;
mod progress;
mod result;
mod server;
mod session;
mod stdio;

pub use server::{DEFAULT_MAX_CALLS_PER_SESSION, McpServer};
pub use session::Session;
