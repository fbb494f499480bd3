//! The model APIs' own client tools, run by rho: tools the API declares by
//! a type of its own and the host executes.
//!
//! - [`TextEditor`]: Anthropic's text editor (`text_editor_20250728`,
//!   named [`TEXT_EDITOR`]): view, create, `str_replace`, insert, confined
//!   to a workspace by the kernel.
//! - [`Bash`]: Anthropic's bash tool (`bash_20250124`, named [`BASH`]), on
//!   rho's confined [`ShellTool`](rho_process::ShellTool).
//! - [`ApplyPatch`]: OpenAI's `apply_patch` (named [`APPLY_PATCH`]): files
//!   created, updated by V4A diffs, deleted, beneath a workspace.
//! - [`OpenAiShell`]: OpenAI's `shell` (named [`SHELL`]): a call's
//!   commands in turn, each in a fresh confined shell.
//!
//! Each is a normal rho tool (registered in a registry, gated, timed,
//! counted). A dialect declares it in the API's own type when asked
//! ([`Anthropic::with_client_tool`](crate::anthropic::Anthropic::with_client_tool)),
//! and reads its calls and writes its results like any other tool's.

mod bash;
mod beneath;
mod editor;
mod patch;
mod shell;

pub use bash::{BASH, Bash};
pub use editor::{TEXT_EDITOR, TextEditor};
pub use patch::{APPLY_PATCH, ApplyPatch};
pub use shell::{OpenAiShell, SHELL};
