//! The model APIs' own client tools, run by rho: tools the API declares by
//! a type of its own and the host executes.
//!
//! - [`TextEditor`]: Anthropic's text editor (`text_editor_20250728`,
//!   named [`TEXT_EDITOR`]): view, create, `str_replace`, insert, confined
//!   to a workspace by the kernel.
//! - [`Bash`]: Anthropic's bash tool (`bash_20250124`, named [`BASH`]), on
//!   rho's confined [`ShellTool`](rho_process::ShellTool).
//!
//! Each is a normal rho tool (registered in a registry, gated, timed,
//! counted). A dialect declares it in the API's own type when asked
//! ([`Anthropic::with_client_tool`](crate::anthropic::Anthropic::with_client_tool)),
//! and reads its calls and writes its results like any other tool's.

mod bash;
mod beneath;
mod editor;

pub use bash::{BASH, Bash};
pub use editor::{TEXT_EDITOR, TextEditor};
