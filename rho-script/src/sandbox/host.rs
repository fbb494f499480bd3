//! The host's side of what a script calls beyond the sandbox's own
//! functions: the sandbox knows only the two namespaces a job may list
//! names in (`rho.<name>`, `tools.<name>`), hands each call across as
//! plain data, and lets the layer that made the job ([`HostCalls`]) run
//! it in the call's future. What a name stands for (a host function, a
//! tool of the host's registry) is that layer's business, never the
//! sandbox's.

use std::sync::Arc;
use std::task::Context;

use rho_tool_core::ToolContext;
use rho_tool_core::untrusted::Plain;
use serde::{Deserialize, Serialize};

/// What a script's call from the sandbox is to: a granted host function
/// (`rho.<name>`) or a tool (`tools.<name>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Callee {
    /// `rho.<name>`: one of the job's grants.
    Grant,
    /// `tools.<name>`: one of the job's tools.
    Tool,
}

/// A call of a granted host function or of a tool, asked by the script's
/// thread.
pub(crate) struct HostAsk {
    /// The id the script's promise waits under.
    pub(crate) id: u64,
    /// A grant or a tool.
    pub(crate) callee: Callee,
    /// The grant's or the tool's name.
    pub(crate) name: Arc<str>,
    /// The argument, made plain in the sandbox.
    pub(crate) argument: Plain,
}

/// How a host function's call ended, for the script's thread.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct HostAnswer {
    /// The id the script's promise waits under.
    pub(crate) id: u64,
    /// What the promise resolves to, or the text it rejects with.
    pub(crate) result: Result<serde_json::Value, String>,
}

/// Runs a job's calls of the host in the call's future, on the call's
/// executor: what the layer that made the job granted it. One per call;
/// dropped with the call's future, which drops the calls still pending.
pub(crate) trait HostCalls: Send {
    /// Starts `ask` within the call `context`; `Err` answers it at once,
    /// with the text the script's promise rejects with.
    fn start(&mut self, ask: HostAsk, context: &ToolContext) -> Result<(), String>;

    /// Polls the calls started; pushes the answers of those that ended.
    fn poll(&mut self, cx: &mut Context<'_>, ended: &mut Vec<HostAnswer>);
}
