//! Serving a rho registry to MCP clients.
//!
//! One concept a module: `server` holds what every session shares,
//! `session` is rmcp's handler of one connection, `listing` answers
//! `tools/list`, `call` runs `tools/call` as a rho call and `result`
//! maps its end to MCP's result, `progress` turns partial results into
//! progress notifications, `list_changed` tells clients when the list
//! changes, `closing` tells calls that their client has gone, `contain`
//! answers a request whose handling panicked, `elicit` asks the
//! client's user to approve a call, `observe` reports each call's end
//! (an audit log's hook), `stdio` serves over a byte stream, `stream` is
//! its line-delimited transport (`call_request` reading calls the short
//! way, `dispatch` running them past rmcp's service, `stdio_fd` reading
//! stdin and writing stdout on the reactor) and `http` streamable HTTP.

mod call;
mod call_request;
mod closing;
mod contain;
mod dispatch;
mod elicit;
mod http;
mod list_changed;
mod listing;
mod observe;
mod progress;
mod result;
mod server;
mod session;
mod stdio;
#[cfg(unix)]
mod stdio_fd;
mod stream;

pub use elicit::ElicitationApprover;
pub use http::{HttpOptions, HttpServer};
pub use observe::{CallObserver, ServedCall};
pub use server::McpServer;
pub use session::Session;
