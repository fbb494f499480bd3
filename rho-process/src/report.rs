//! How a child's end becomes the call's answer: the answer it wrote, or an
//! error text naming the tool and what went wrong.
//!
//! In this order, the first that applies:
//!
//! 1. a thread rho needed could not be started;
//! 2. stdout or stderr passed its cap (rho stopped reading and killed the
//!    group);
//! 3. reading stdout failed;
//! 4. the exit status could not be read;
//! 5. the child was killed by a signal (named: `SIGABRT`, `SIGSEGV`, ...);
//! 6. the child exited with a non-zero code;
//! 7. it exited with 0: its stdout is the answer, or invalid output.
//!
//! Every error text is bounded: at most [`STDOUT_EXCERPT`] bytes of stdout
//! (escaped) and the last [`STDERR_TAIL`] bytes of stderr are quoted.

use std::ffi::OsStr;
use std::fmt::Write as _;
use std::io;
use std::os::unix::process::ExitStatusExt;

use rho_tool_core::ToolOutput;
use rustix::process::Signal;

use crate::answer::{self, Invalid};
use crate::confine::Confined;
use crate::supervise::{Caps, Ran};

/// How much of the start of stdout an error text quotes, in bytes.
pub(crate) const STDOUT_EXCERPT: usize = 200;
/// How much of the end of stderr an error text quotes, in bytes.
pub(crate) const STDERR_TAIL: usize = 2000;

/// The answer of a child that ran, and of a confined one: the launcher's
/// own refusals, the limit that stopped it, the rule it likely met, and
/// what was not enforced (best effort).
pub(crate) fn ran(tool: &str, mut ran: Ran, caps: Caps, confined: Option<&Confined>) -> ToolOutput {
    let Some(confined) = confined else {
        return ran_unconfined(tool, ran, caps, None);
    };
    let (refused, stderr) = crate::confine::take_refused(&ran.stderr.bytes);
    ran.stderr.bytes = stderr;
    let output = ran_confined(tool, ran, caps, confined);
    match crate::confine::refused_note(&refused) {
        Some(note) => output.with_note(note),
        None => output,
    }
}

/// [`ran`] once the proxy's refusals are out of stderr.
fn ran_confined(tool: &str, ran: Ran, caps: Caps, confined: &Confined) -> ToolOutput {
    if let Ok(status) = &ran.status {
        if let Some(text) = confined.launcher_failure(status.code(), &ran.stderr.bytes) {
            return ToolOutput::error(format!("tool `{tool}` {text}"));
        }
        if let Some(signal) = status.signal() {
            if let Some(limit) = confined.limit_for_signal(signal, &ran.stderr.bytes) {
                let output = ToolOutput::error(format!(
                    "tool `{tool}` was stopped by its confinement: {limit} (its process was killed by signal {}){}",
                    signal_text(signal),
                    tail(&ran.stderr.bytes)
                ));
                return with_not_enforced(output, confined);
            }
        }
    }
    let denial = confined.denial(&ran.stderr.bytes);
    let output = ran_unconfined(tool, ran, caps, Some(denial));
    with_not_enforced(output, confined)
}

fn with_not_enforced(output: ToolOutput, confined: &Confined) -> ToolOutput {
    match confined.not_enforced_note() {
        Some(note) => output.with_note(note),
        None => output,
    }
}

/// The answer of a child that ran; `denial` is added to every failure
/// rho reports (a confined child's likely denial and its confinement).
fn ran_unconfined(tool: &str, ran: Ran, caps: Caps, denial: Option<String>) -> ToolOutput {
    let Ran {
        status,
        stdout,
        stderr,
        no_thread,
    } = ran;
    let mut stderr_tail = tail(&stderr.bytes);
    if let Some(denial) = denial {
        stderr_tail.push('\n');
        stderr_tail.push_str(&denial);
    }
    let failed = |what: String| ToolOutput::error(format!("tool `{tool}` {what}{stderr_tail}"));

    if let Some(error) = no_thread {
        return failed(format!(
            "failed: rho could not start a thread to run its process ({error}); the process group was killed"
        ));
    }
    if stdout.overflowed {
        return failed(format!(
            "wrote more than its cap of {} bytes to stdout: rho stopped reading and killed its process group; its stdout began: {}",
            caps.stdout,
            head(&stdout.bytes),
        ));
    }
    if stderr.overflowed {
        return failed(format!(
            "wrote more than its cap of {} bytes to stderr: rho stopped reading and killed its process group",
            caps.stderr,
        ));
    }
    if let Some(error) = stdout.error {
        return failed(format!("failed: reading its stdout failed: {error}"));
    }
    let status = match status {
        Ok(status) => status,
        Err(error) => {
            return failed(format!(
                "failed: its exit status could not be read: {error}"
            ));
        }
    };
    if let Some(signal) = status.signal() {
        let core = if status.core_dumped() {
            " (core dumped)"
        } else {
            ""
        };
        return ToolOutput::crashed(format!(
            "tool `{tool}` crashed: its process was killed by signal {}{core}{stderr_tail}",
            signal_text(signal)
        ));
    }
    match status.code() {
        Some(0) => {}
        Some(code) => return failed(format!("failed: its process exited with code {code}")),
        None => return failed(format!("failed: its process ended abnormally ({status})")),
    }
    match answer::parse(&stdout.bytes) {
        Ok(output) => output,
        Err(Invalid::Empty) => failed(
            "gave invalid output: its process exited without writing an answer to stdout"
                .to_owned(),
        ),
        Err(Invalid::NotJson(why)) => failed(format!(
            "gave invalid output: its stdout is not JSON ({why}); it began: {}",
            head(&stdout.bytes)
        )),
        Err(Invalid::Shape(why)) => failed(format!(
            "gave invalid output: its stdout is not an answer: {why}; it began: {}",
            head(&stdout.bytes)
        )),
    }
}

/// The answer when the child could not be spawned.
pub(crate) fn not_started(tool: &str, program: &OsStr, error: &io::Error) -> ToolOutput {
    ToolOutput::error(format!(
        "tool `{tool}` could not start its process `{}`: {error}",
        program.to_string_lossy()
    ))
}

/// The answer when the supervising thread could not be started.
pub(crate) fn no_supervisor(tool: &str, error: &io::Error) -> ToolOutput {
    ToolOutput::error(format!(
        "tool `{tool}` failed: rho could not start a thread to run its process ({error})"
    ))
}

/// The answer when the supervising thread ended without a result.
pub(crate) fn lost(tool: &str) -> ToolOutput {
    ToolOutput::error(format!(
        "tool `{tool}` failed: rho lost track of its process (the supervising thread ended early); the process group was killed"
    ))
}

/// The start of `bytes`, quoted and escaped, with the total length when cut.
fn head(bytes: &[u8]) -> String {
    let shown = &bytes[..bytes.len().min(STDOUT_EXCERPT)];
    let mut text = format!("{:?}", String::from_utf8_lossy(shown));
    if shown.len() < bytes.len() {
        let _ = write!(text, "… ({} bytes in all)", bytes.len());
    }
    text
}

/// The end of stderr, as a paragraph to append; empty when stderr was.
fn tail(bytes: &[u8]) -> String {
    let start = bytes.len().saturating_sub(STDERR_TAIL);
    let shown = String::from_utf8_lossy(&bytes[start..]);
    let shown = shown.trim_end();
    if shown.trim().is_empty() {
        return String::new();
    }
    if start > 0 {
        format!("\nthe last {STDERR_TAIL} bytes of its stderr:\n…{shown}")
    } else {
        format!("\nits stderr:\n{shown}")
    }
}

/// "SIGABRT (6)": the signal's name, and its number (which differs between
/// systems).
pub(crate) fn signal_text(number: i32) -> String {
    const NAMES: [(Signal, &str); 28] = [
        (Signal::HUP, "SIGHUP"),
        (Signal::INT, "SIGINT"),
        (Signal::QUIT, "SIGQUIT"),
        (Signal::ILL, "SIGILL"),
        (Signal::TRAP, "SIGTRAP"),
        (Signal::ABORT, "SIGABRT"),
        (Signal::BUS, "SIGBUS"),
        (Signal::FPE, "SIGFPE"),
        (Signal::KILL, "SIGKILL"),
        (Signal::USR1, "SIGUSR1"),
        (Signal::SEGV, "SIGSEGV"),
        (Signal::USR2, "SIGUSR2"),
        (Signal::PIPE, "SIGPIPE"),
        (Signal::ALARM, "SIGALRM"),
        (Signal::TERM, "SIGTERM"),
        (Signal::CHILD, "SIGCHLD"),
        (Signal::CONT, "SIGCONT"),
        (Signal::STOP, "SIGSTOP"),
        (Signal::TSTP, "SIGTSTP"),
        (Signal::TTIN, "SIGTTIN"),
        (Signal::TTOU, "SIGTTOU"),
        (Signal::URG, "SIGURG"),
        (Signal::XCPU, "SIGXCPU"),
        (Signal::XFSZ, "SIGXFSZ"),
        (Signal::VTALARM, "SIGVTALRM"),
        (Signal::PROF, "SIGPROF"),
        (Signal::WINCH, "SIGWINCH"),
        (Signal::SYS, "SIGSYS"),
    ];
    match NAMES.iter().find(|(signal, _)| signal.as_raw() == number) {
        Some((_, name)) => format!("{name} ({number})"),
        None => format!("{number}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_are_named() {
        assert_eq!(
            signal_text(Signal::ABORT.as_raw()),
            format!("SIGABRT ({})", Signal::ABORT.as_raw())
        );
        assert_eq!(signal_text(Signal::SEGV.as_raw()), "SIGSEGV (11)");
        assert_eq!(signal_text(64), "64");
    }

    #[test]
    fn excerpts_are_bounded() {
        let long = vec![b'x'; 10 * STDOUT_EXCERPT];
        let quoted = head(&long);
        assert!(quoted.len() < STDOUT_EXCERPT + 40, "{quoted}");
        assert!(quoted.ends_with(&format!("({} bytes in all)", long.len())));
        assert_eq!(head(b"a\0b"), "\"a\\0b\"");

        let log = "line\n".repeat(STDERR_TAIL);
        let tail_text = tail(log.as_bytes());
        assert!(tail_text.len() < STDERR_TAIL + 80);
        assert!(
            tail_text.starts_with(&format!("\nthe last {STDERR_TAIL} bytes of its stderr:\n…"))
        );
        assert_eq!(tail(b"boom\n"), "\nits stderr:\nboom");
        assert_eq!(tail(b" \n"), "");
    }
}
