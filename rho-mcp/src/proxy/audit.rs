//! The audit log: one JSON line per call end; its fields are in the proxy
//! module's docs.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use rho_tool_core::Content;
use serde::Serialize;
use serde_json::Value;

use super::decisions::{CallDecision, Decisions};
use super::time::rfc3339;
use crate::serve::{CallObserver, ServedCall};

/// Writes one JSON line per call end (see the [proxy module docs](super) for
/// the fields). A [`CallObserver`]: give it to the server.
pub struct AuditLog {
    out: Mutex<Box<dyn Write + Send>>,
    arguments: bool,
    decisions: Option<Decisions>,
    failures: AtomicU64,
}

impl AuditLog {
    /// Appends to the file at `path` (created when missing).
    ///
    /// # Errors
    ///
    /// When the file cannot be opened for appending.
    pub fn open(path: &Path) -> io::Result<Self> {
        let file: File = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Self::to_writer(file))
    }

    /// Writes to `out`: a file, a pipe, a buffer in a test.
    pub fn to_writer(out: impl Write + Send + 'static) -> Self {
        Self {
            out: Mutex::new(Box::new(out)),
            arguments: false,
            decisions: None,
            failures: AtomicU64::new(0),
        }
    }

    /// Whether each line also holds the call's arguments, whole (default:
    /// no; see the [proxy module docs](super) for why).
    #[must_use]
    pub fn with_arguments(mut self, arguments: bool) -> Self {
        self.arguments = arguments;
        self
    }

    /// Logs what `gate` decided about each call (rule, action, asked,
    /// approved).
    #[must_use]
    pub fn with_gate(mut self, gate: &super::PolicyGate) -> Self {
        let decisions = gate.decisions();
        decisions.follow();
        self.decisions = Some(decisions);
        self
    }

    /// The line of one call's end.
    fn line<'a>(&self, served: &'a ServedCall<'a>, decision: Option<&'a CallDecision>) -> Line<'a> {
        let end = served.end;
        let total: usize = end.result.content().iter().map(content_bytes).sum();
        Line {
            time: rfc3339(SystemTime::now()),
            call_id: &end.call_id,
            tool: &end.tool,
            outcome: end.outcome.as_str(),
            is_error: served.result.is_error.unwrap_or(false),
            waited_ms: millis(end.waited),
            ran_ms: end.ran.map(millis),
            rule: decision.and_then(|decision| decision.rule),
            action: decision.map(|decision| decision.action),
            asked: decision.is_some_and(|decision| decision.asked),
            approved: decision.and_then(|decision| decision.approved),
            allowance: decision.and_then(|decision| decision.allowance),
            denial: decision.and_then(|decision| decision.denial.as_deref()),
            bytes: total.saturating_sub(served.cut_bytes),
            cut_bytes: served.cut_bytes,
            argument_bytes: json_size(served.arguments),
            arguments: self.arguments.then_some(served.arguments),
        }
    }

    fn write(&self, line: &Line<'_>) -> io::Result<()> {
        let mut text = serde_json::to_string(line).map_err(io::Error::other)?;
        text.push('\n');
        let mut out = self.out.lock().unwrap_or_else(PoisonError::into_inner);
        out.write_all(text.as_bytes())?;
        out.flush()
    }
}

impl CallObserver for AuditLog {
    fn ended(&self, served: &ServedCall<'_>) {
        let decision = self
            .decisions
            .as_ref()
            .and_then(|decisions| decisions.take(&served.end.call_id));
        let line = self.line(served, decision.as_ref());
        if let Err(error) = self.write(&line) {
            // Said once, then every thousandth time: a full disk should
            // not also flood stderr.
            let failures = self.failures.fetch_add(1, Ordering::Relaxed);
            if failures.is_multiple_of(1000) {
                eprintln!(
                    "rho-mcp proxy: cannot write the audit log ({error}); {} lines lost so far",
                    failures + 1
                );
            }
        }
    }
}

/// One line of the log, its fields in the order they are written.
#[derive(Serialize)]
struct Line<'a> {
    time: String,
    call_id: &'a str,
    tool: &'a str,
    outcome: &'static str,
    is_error: bool,
    waited_ms: f64,
    ran_ms: Option<f64>,
    rule: Option<usize>,
    /// Written as the policy file writes it: `allow`, `deny`, `ask`.
    action: Option<&'a str>,
    asked: bool,
    approved: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    allowance: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    denial: Option<&'a str>,
    bytes: usize,
    cut_bytes: usize,
    argument_bytes: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    arguments: Option<&'a Value>,
}

/// Milliseconds with microseconds.
fn millis(duration: Duration) -> f64 {
    let micros = u64::try_from(duration.as_micros()).unwrap_or(u64::MAX);
    micros as f64 / 1000.0
}

/// The bytes a part carries: text as UTF-8, media raw, anything else as
/// its JSON.
fn content_bytes(part: &Content) -> usize {
    match part {
        Content::Text(text) => text.len(),
        Content::Image(image) => image.data.len(),
        Content::Audio(audio) => audio.data.len(),
        other => serde_json::to_vec(other).map_or(0, |json| json.len()),
    }
}

/// The length of `value` as compact JSON, counted without building it.
fn json_size(value: &Value) -> usize {
    struct Count(usize);
    impl Write for Count {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

impl fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuditLog")
            .field("arguments", &self.arguments)
            .field("failures", &self.failures.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}
