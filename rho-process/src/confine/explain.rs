//! What a confined call's end means, in words the model reads: the
//! launcher's own refusals, the limit that stopped the command, and the
//! rule a failing command most likely met.

use std::fmt::Write as _;

use rustix::process::Signal;

use super::launch_codes::{NOT_STARTED, PREFIX, REFUSED, SETUP_FAILED, WRITES};
use super::{Confinement, Mechanism};

/// A confined run's context, for its result's texts.
#[derive(Debug, Clone)]
pub(crate) struct Confined {
    pub(crate) confinement: Confinement,
    pub(crate) not_enforced: Vec<Mechanism>,
}

impl Confined {
    /// The launcher's own failure (the confinement could not be set up,
    /// the command could not be started inside it), from its exit code and
    /// its last line on stderr.
    pub(crate) fn launcher_failure(&self, code: Option<i32>, stderr: &[u8]) -> Option<String> {
        let code = code?;
        if code != SETUP_FAILED && code != NOT_STARTED {
            return None;
        }
        let text = String::from_utf8_lossy(stderr);
        let line = text.lines().rev().find(|line| {
            !line.trim().is_empty() && !line.starts_with(REFUSED) && !line.starts_with(WRITES)
        })?;
        let what = line.strip_prefix(PREFIX)?;
        Some(if code == SETUP_FAILED {
            format!("was not run: its confinement could not be set up: {what}")
        } else {
            format!("could not start its process: {what}")
        })
    }

    /// The limit a signal says was reached, if it says one.
    pub(crate) fn limit_for_signal(&self, signal: i32, stderr: &[u8]) -> Option<String> {
        let limits = self.confinement.limits();
        if signal == Signal::XFSZ.as_raw() {
            let size = limits.file_size.map(bytes).unwrap_or_default();
            return Some(format!("the file size limit ({size}) was reached"));
        }
        if let Some(cpu) = limits.cpu {
            if signal == Signal::XCPU.as_raw() {
                return Some(format!(
                    "the CPU time limit ({} s) was reached",
                    cpu.as_secs_f64().ceil()
                ));
            }
        }
        if let Some(memory) = limits.memory {
            let text = String::from_utf8_lossy(stderr).to_ascii_lowercase();
            let oom = [
                "out of memory",
                "cannot allocate memory",
                "memoryerror",
                "heap limit",
                "allocation failed",
                "bad_alloc",
            ];
            if oom.iter().any(|hint| text.contains(hint)) {
                return Some(format!(
                    "the memory limit ({}) was likely reached",
                    bytes(memory)
                ));
            }
        }
        None
    }

    /// A paragraph for a failed call: the rule its stderr suggests it met,
    /// then what the confinement allows.
    pub(crate) fn denial(&self, stderr: &[u8]) -> String {
        let text = String::from_utf8_lossy(stderr).to_ascii_lowercase();
        let network = self.confinement.network().as_str();
        let limits = self.confinement.limits();
        let written = [
            limits.written.map(|n| format!("{} written", bytes(n))),
            limits.files.map(|files| format!("{files} files")),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<String>>()
        .join(", ");
        let full = if written.is_empty() {
            "a file system inside the confinement is full (the scratch /tmp holds at most what its size allows)".to_owned()
        } else {
            format!("the bound on what the call may write ({written}) was likely reached")
        };
        let hints: [(&[&str], String); 7] = [
            (
                &[
                    "permission denied",
                    "read-only file system",
                    "operation not permitted",
                ],
                "access outside what the confinement allows was denied".to_owned(),
            ),
            (
                &[
                    "network is unreachable",
                    "temporary failure in name resolution",
                    "could not resolve",
                    "name or service not known",
                    "connection refused",
                ],
                format!("the network is not reachable from the confinement (network: {network})"),
            ),
            (
                &["file too large"],
                format!(
                    "the file size limit ({}) was reached",
                    limits.file_size.map(bytes).unwrap_or_default()
                ),
            ),
            (
                &["too many open files"],
                format!(
                    "the open files limit ({}) was reached",
                    limits.open_files.unwrap_or_default()
                ),
            ),
            (
                &[
                    "resource temporarily unavailable",
                    "cannot fork",
                    "fork: retry",
                ],
                format!(
                    "the processes limit ({}) was likely reached",
                    limits.processes.unwrap_or_default()
                ),
            ),
            (&["no space left on device", "disk quota exceeded"], full),
            (
                &["cannot allocate memory", "out of memory"],
                format!(
                    "the memory limit ({}) was likely reached",
                    limits.memory.map(bytes).unwrap_or_default()
                ),
            ),
        ];
        let mut paragraph = String::new();
        if self.confinement.rest() == super::Rest::Hidden
            && text.contains("no such file or directory")
        {
            paragraph.push_str("a path outside the confinement does not exist inside it; ");
        }
        for (needles, meaning) in hints {
            if needles.iter().any(|needle| text.contains(needle)) {
                let _ = write!(paragraph, "{meaning}; ");
            }
        }
        paragraph.push_str(&self.confinement.summary());
        paragraph
    }

    /// The note of what was not enforced (best effort), if anything was not.
    pub(crate) fn not_enforced_note(&self) -> Option<String> {
        if self.not_enforced.is_empty() {
            return None;
        }
        let what: Vec<&str> = self.not_enforced.iter().map(|m| m.enforces()).collect();
        Some(format!("not enforced on this system: {}", what.join("; ")))
    }
}

/// The most refused connections a note names; the rest are counted.
const MAX_REFUSED_NAMED: usize = 20;

/// The lines the confinement's proxy wrote on `stderr` for the
/// connections it refused (each `host:port: why`, once, in order), and
/// `stderr` without them.
pub(crate) fn take_refused(stderr: &[u8]) -> (Vec<String>, Vec<u8>) {
    let mut refused: Vec<String> = Vec::new();
    let mut rest = Vec::with_capacity(stderr.len());
    for line in stderr.split_inclusive(|byte| *byte == b'\n') {
        let text = String::from_utf8_lossy(line);
        match text.trim_end().strip_prefix(REFUSED) {
            Some(what) => {
                if !refused.iter().any(|seen| seen == what) {
                    refused.push(what.to_owned());
                }
            }
            None => rest.extend_from_slice(line),
        }
    }
    (refused, rest)
}

/// The note of a call's refused connections, if there were any.
pub(crate) fn refused_note(refused: &[String]) -> Option<String> {
    if refused.is_empty() {
        return None;
    }
    let mut note = "connections the confinement refused during the call:".to_owned();
    for what in refused.iter().take(MAX_REFUSED_NAMED) {
        let _ = write!(note, "\n- {what}");
    }
    if refused.len() > MAX_REFUSED_NAMED {
        let _ = write!(note, "\n- and {} more", refused.len() - MAX_REFUSED_NAMED);
    }
    Some(note)
}

/// "256 MiB", "1 GiB", "1000 bytes".
fn bytes(n: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (size, unit) in UNITS {
        if n >= size && n % size == 0 {
            return format!("{} {unit}", n / size);
        }
    }
    format!("{n} bytes")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::confine::Limits;

    fn confined() -> Confined {
        Confined {
            confinement: Confinement::new(),
            not_enforced: Vec::new(),
        }
    }

    #[test]
    fn the_launchers_own_refusal_is_read_from_its_code_and_last_line() {
        let c = confined();
        let text = c.launcher_failure(
            Some(125),
            b"noise\nrho-confine: user namespaces are not available\n",
        );
        assert_eq!(
            text.as_deref(),
            Some(
                "was not run: its confinement could not be set up: user namespaces are not available"
            )
        );
        // The same code without the launcher's line is the command's own.
        assert_eq!(c.launcher_failure(Some(125), b"my tool failed\n"), None);
        assert_eq!(c.launcher_failure(Some(1), b"rho-confine: x\n"), None);
    }

    #[test]
    fn a_limit_signal_names_its_limit() {
        let c = Confined {
            confinement: Confinement::new().with_limits(Limits {
                cpu: Some(std::time::Duration::from_secs(2)),
                ..Limits::default()
            }),
            not_enforced: Vec::new(),
        };
        assert_eq!(
            c.limit_for_signal(Signal::XFSZ.as_raw(), b"").as_deref(),
            Some("the file size limit (1 GiB) was reached")
        );
        assert_eq!(
            c.limit_for_signal(Signal::XCPU.as_raw(), b"").as_deref(),
            Some("the CPU time limit (2 s) was reached")
        );
        assert_eq!(
            c.limit_for_signal(Signal::SEGV.as_raw(), b"").as_deref(),
            None
        );
        assert_eq!(
            c.limit_for_signal(
                Signal::ABORT.as_raw(),
                b"FATAL ERROR: Reached heap limit Allocation failed"
            )
            .as_deref(),
            Some("the memory limit (2 GiB) was likely reached")
        );
    }

    #[test]
    fn the_proxys_refusals_leave_stderr_for_a_note_once_each() {
        let stderr = b"fetching\nrho-confine: refused host evil.test:443: not allowed\ncurl: (56) 403\nrho-confine: refused host evil.test:443: not allowed\n";
        let (refused, rest) = take_refused(stderr);
        assert_eq!(refused, ["evil.test:443: not allowed"]);
        assert_eq!(rest, b"fetching\ncurl: (56) 403\n");
        assert_eq!(
            refused_note(&refused).as_deref(),
            Some(
                "connections the confinement refused during the call:\n- evil.test:443: not allowed"
            )
        );
        assert_eq!(refused_note(&[]), None);
        // A command that exits 127 after a refusal: the refusal is not the
        // launcher's own failure.
        assert_eq!(confined().launcher_failure(Some(127), stderr), None);
    }

    #[test]
    fn a_denial_names_the_rule_and_what_was_allowed() {
        let text = confined().denial(b"bash: /etc/x: Read-only file system\n");
        assert!(
            text.starts_with("access outside what the confinement allows was denied; confined:"),
            "{text}"
        );
        let text = confined().denial(b"curl: (7) Couldn't connect: Network is unreachable");
        assert!(text.contains("network: none"), "{text}");
    }
}
