//! The tools whose code is a script: [`ScriptTool`] (a tool whose code
//! is a JavaScript source), [`RunScript`] (the ready tool by which the
//! model runs a program it writes in the call itself), the [`Grant`]s of
//! host functions a script may call by name, and what runs those calls
//! (and, in code mode, its calls of tools) in the call's future. Built on
//! the sandbox ([`crate::sandbox`]) and code mode ([`crate::code`]); the
//! agent-tools source ([`crate::source`]) builds on it.

mod grant;
mod options;
mod run_script;
mod script_tool;

pub(crate) use grant::GrantSet;
pub use grant::{Grant, GrantError, HostFunction, HostFuture};
pub use options::ScriptOptions;
pub use run_script::RunScript;
pub use script_tool::ScriptTool;

impl ScriptTool {
    /// The largest source a definition may have by default: 256 KiB. A tool
    /// the model writes is a function or a few; a source of megabytes is a
    /// mistake or an attack, and each call would parse all of it again.
    pub const DEFAULT_MAX_SOURCE: usize = 256 << 10;
}
