//! Values from code the host did not write, made safe for the agent loop.
//!
//! A host that runs tools written by the agent itself (scripts, plugins
//! loaded at run time) cannot trust anything those tools hand back: a panic
//! payload, an answer, a partial result. Each is a value whose `Drop`,
//! `Display`, `Debug` or `Serialize` is foreign code, and running that code in
//! the loop lets the tool act (or crash, or hang) long after its call ended.
//!
//! This crate holds what rho needs to keep foreign code inside the
//! tool's own task:
//!
//! - [`plain`]: turns any `serde::Serialize` value into [`Plain`] data (maps,
//!   lists, text, numbers, bytes) under [`Limits`], inside the task. Only
//!   library-owned types leave it.
//! - [`panic_text`], [`exit_text`], [`timeout_text`]: the texts the model
//!   reads when a call ends abnormally. A panic payload is read only when it
//!   is a `String` or `&str`.
//! - [`dispose`] and friends: drop or run foreign code with its panics
//!   contained; a payload whose `Drop` panics has its second payload
//!   forgotten, never dropped.
//! - [`install_quiet_panic_hook`]: an opt-in hook that keeps contained
//!   panics off stderr and records where they were raised, for the text.
//! - [`lines`]: a peer process's output read line by line, each line
//!   bounded, whatever reads it.
//!
//! # Example
//!
//! ```
//! use rho::untrusted::{Limits, Phase, Plain, panic_text, plain, take_message};
//!
//! #[derive(serde::Serialize)]
//! struct Hit { file: String, line: u32, score: f64 }
//!
//! // An answer becomes plain data; a NaN becomes text instead of failing.
//! let hit = Hit { file: "a.rs".into(), line: 3, score: f64::NAN };
//! let value = plain::to_plain(&hit, &Limits::default()).unwrap();
//! assert_eq!(value.get("line"), Some(&Plain::UInt(3)));
//! assert_eq!(value.get("score"), Some(&Plain::Text("NaN".into())));
//!
//! // A panic with a custom payload is reported without touching the payload.
//! struct Secret;
//! let payload = std::panic::catch_unwind(|| std::panic::panic_any(Secret)).unwrap_err();
//! let message = take_message(payload); // disposes of the payload, contained
//! assert_eq!(
//!     panic_text("search", Phase::Tool, message.as_deref()),
//!     "tool `search` panicked (with a payload that is not text)",
//! );
//! ```
//!
//! # What this cannot contain
//!
//! Containment relies on unwinding. A process built with `panic = "abort"`,
//! or foreign code that calls `std::process::abort`, ends the process, and no
//! library can stop that in-process: run such code behind a process boundary.
//! [`PANICS_ARE_CONTAINED`] tells at compile time which build this is.

mod dispose;
mod hook;
pub mod lines;
pub mod plain;
mod text;

pub use dispose::{
    Caught, DropPanicked, Payload, call_contained, dispose, drop_contained, take_message,
};
pub use hook::{install_quiet_panic_hook, restore_panic_hook};
pub use plain::{Limits, Plain, PlainError};
pub use text::{Exit, Phase, exit_text, panic_message, panic_text, panic_text_at, timeout_text};

/// Whether panics unwind in this build, so that rho can contain them.
///
/// `false` under `panic = "abort"`: then any panic of a tool ends the process,
/// and hosts that run untrusted tools should run them out of process.
pub const PANICS_ARE_CONTAINED: bool = cfg!(panic = "unwind");
