//! The texts a model reads when a call ends abnormally.
//!
//! Every text names the tool, so a model that called several tools at once
//! can tell which one failed. Nothing here formats a foreign value: a panic
//! payload is read only when it is a `String` or `&str` (the two types the
//! standard `panic!` produces), the way tokio's `JoinError` does it; for any
//! other payload type the text says so without touching it.

use std::any::Any;
use std::fmt;
use std::time::Duration;

/// Where in a call a panic happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Phase {
    /// The gate's check, before the tool ran.
    Gate,
    /// The tool's `run`.
    Tool,
    /// Turning the tool's answer into plain data (its `Serialize`).
    Answer,
}

impl Phase {
    /// A short lowercase name: `gate`, `tool`, `answer`.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Gate => "gate",
            Phase::Tool => "tool",
            Phase::Answer => "answer",
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The message of a panic payload, when it is a `String` or `&'static str`.
///
/// Only these two types are read: they are the standard library's own, so
/// reading them runs no foreign code. Any other payload gives `None`.
pub fn panic_message(payload: &(dyn Any + Send)) -> Option<&str> {
    if let Some(text) = payload.downcast_ref::<&'static str>() {
        Some(text)
    } else if let Some(text) = payload.downcast_ref::<String>() {
        Some(text.as_str())
    } else {
        None
    }
}

/// The text for a panic caught in `phase` of a call of `tool`.
///
/// `message` is what [`panic_message`] read from the payload, if anything.
///
/// ```
/// use rho::untrusted::{Phase, panic_text};
/// assert_eq!(
///     panic_text("grep", Phase::Tool, Some("index out of bounds")),
///     "tool `grep` panicked: index out of bounds",
/// );
/// assert_eq!(
///     panic_text("grep", Phase::Gate, None),
///     "the gate of tool `grep` panicked (with a payload that is not text)",
/// );
/// ```
pub fn panic_text(tool: &str, phase: Phase, message: Option<&str>) -> String {
    panic_text_at(tool, phase, message, None)
}

/// [`panic_text`], followed by where the panic was raised when that is
/// known (see [`install_quiet_panic_hook`](crate::install_quiet_panic_hook)).
///
/// ```
/// use rho::untrusted::{Phase, panic_text_at};
/// assert_eq!(
///     panic_text_at("grep", Phase::Tool, Some("oops"), Some("src/grep.rs:10:5")),
///     "tool `grep` panicked at src/grep.rs:10:5: oops",
/// );
/// ```
pub fn panic_text_at(
    tool: &str,
    phase: Phase,
    message: Option<&str>,
    location: Option<&str>,
) -> String {
    let at = location.map(|at| format!(" at {at}")).unwrap_or_default();
    let what = match phase {
        Phase::Gate => format!("the gate of tool `{tool}` panicked{at}"),
        Phase::Tool => format!("tool `{tool}` panicked{at}"),
        Phase::Answer => format!("tool `{tool}` panicked{at} while its answer was made plain data"),
    };
    with_message(what, message)
}

fn with_message(what: String, message: Option<&str>) -> String {
    match message {
        Some(message) => format!("{what}: {message}"),
        None => format!("{what} (with a payload that is not text)"),
    }
}

/// How a call ended when it did not end by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Exit {
    /// The loop killed the task at the tool's timeout.
    TimedOut(Duration),
    /// The host aborted the call (a person pressed Esc).
    Aborted,
    /// The task ended by a panic that escaped rho's containment (only an
    /// executor that does not run rho's wrapper, or a runtime bug, gets here).
    Crashed,
    /// The executor went away (shut down or dropped) while the call was in
    /// flight.
    ExecutorGone,
}

/// The error text for a call of `tool` that ended with `exit`.
///
/// This never runs code of the reason: `exit` is rho's own plain enum.
///
/// ```
/// use rho::untrusted::{Exit, exit_text};
/// assert_eq!(exit_text("fetch", Exit::Aborted), "tool `fetch` was aborted by the host");
/// ```
pub fn exit_text(tool: &str, exit: Exit) -> String {
    match exit {
        Exit::TimedOut(limit) => timeout_text(tool, limit),
        Exit::Aborted => format!("tool `{tool}` was aborted by the host"),
        Exit::Crashed => format!("tool `{tool}` crashed (its task ended abnormally)"),
        Exit::ExecutorGone => {
            format!("tool `{tool}` did not finish: the executor running it went away")
        }
    }
}

/// The error text for a call of `tool` killed at its timeout `limit`.
///
/// ```
/// use std::time::Duration;
/// use rho::untrusted::timeout_text;
/// assert_eq!(
///     timeout_text("build", Duration::from_millis(1500)),
///     "tool `build` timed out after 1.5s and was stopped",
/// );
/// ```
pub fn timeout_text(tool: &str, limit: Duration) -> String {
    format!("tool `{tool}` timed out after {limit:?} and was stopped")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_standard_text_payloads_are_read() {
        let s: Box<dyn Any + Send> = Box::new("static");
        assert_eq!(panic_message(s.as_ref()), Some("static"));
        let s: Box<dyn Any + Send> = Box::new(String::from("owned"));
        assert_eq!(panic_message(s.as_ref()), Some("owned"));
        let s: Box<dyn Any + Send> = Box::new(42_i32);
        assert_eq!(panic_message(s.as_ref()), None);
    }

    #[test]
    fn every_exit_names_the_tool() {
        for exit in [
            Exit::TimedOut(Duration::from_secs(3)),
            Exit::Aborted,
            Exit::Crashed,
            Exit::ExecutorGone,
        ] {
            assert!(exit_text("t1", exit).contains("`t1`"), "{exit:?}");
        }
        assert!(timeout_text("t1", Duration::from_secs(3)).contains("3s"));
    }
}
