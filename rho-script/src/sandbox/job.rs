//! What the sandbox is asked to run: a job is a script (its source and
//! name), how to call it (run it with arguments, or only check that it
//! loads), its limits and deadline, and the names of the host calls it
//! may make. The layers above build jobs; the sandbox never asks what for.

use std::sync::Arc;
use std::time::Instant;

use rho_tool_core::ToolOutput;
use serde::{Deserialize, Serialize};

use crate::sandbox::limits::ScriptLimits;
use crate::sandbox::output::{ScriptOutput, output_wire};

/// What a job asks of the sandbox: run a call, or check a definition.
/// On a worker's wire: `{"call": arguments}` or `"check"`.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum JobKind {
    /// Load the script and call `run` with these arguments.
    Call(serde_json::Value),
    /// Load the script (which runs its top level) and check that it
    /// defines a function `run`, without calling it.
    Check,
}

/// Why a definition's script was refused by its check. It crosses from a
/// worker process as it is (`{"syntax": {...}}`, `"timed_out"`, ...).
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum CheckFailure {
    /// The source does not parse: where, and the engine's message.
    Syntax {
        line: u32,
        column: u32,
        message: String,
    },
    /// The top level ran but left no function `run`: what `typeof run`
    /// was instead.
    NoRun { found: String },
    /// The top level threw, or ran past the memory or stack limit: the
    /// text, made in the sandbox.
    Failed(String),
    /// The top level was still running at the check's deadline.
    TimedOut,
    /// The check could not run (the pool was busy, the engine failed).
    Unavailable(String),
}

/// What the sandbox answers a job.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum Answer {
    /// A call's output (also any job's failure to run at all).
    Output(#[serde(with = "output_wire")] ScriptOutput),
    /// A definition check's verdict.
    Checked(Result<(), CheckFailure>),
}

impl Answer {
    /// A call's crash, in the sandbox's words.
    pub(crate) fn crashed(text: &str) -> Self {
        Answer::Output(ScriptOutput::crashed(text))
    }

    pub(crate) fn into_output(self) -> ToolOutput {
        match self {
            Answer::Output(output) => output.into_tool_output(),
            Answer::Checked(_) => {
                ToolOutput::crashed("the script's thread answered a call with a check")
            }
        }
    }

    pub(crate) fn into_checked(self) -> Result<(), CheckFailure> {
        match self {
            Answer::Checked(verdict) => verdict,
            // The pool was busy, or the thread failed: no verdict.
            Answer::Output(output) => Err(CheckFailure::Unavailable(output.message().to_owned())),
        }
    }
}

/// What a job asks of the sandbox.
pub(crate) struct JobSpec {
    pub(crate) name: Arc<str>,
    pub(crate) source: Arc<str>,
    /// Whose mistake a source that does not load is.
    pub(crate) origin: Origin,
    pub(crate) kind: JobKind,
    pub(crate) limits: ScriptLimits,
    /// The names of the host functions granted, installed as `rho.<name>`.
    pub(crate) grants: Arc<[Arc<str>]>,
    /// Code mode: the names of the tools the script may call, installed
    /// as `tools.<name>`; `None` without code mode (no `tools` at all).
    pub(crate) tools: Option<Arc<[Arc<str>]>>,
    /// When the sandbox stops the script on its own, in case the future is
    /// never dropped (a host that polls it without rho's runner); set again
    /// when a thread takes the job if its [`Clock`] says so.
    pub(crate) deadline: Instant,
    /// The timeout the deadline came from, for the text.
    pub(crate) timeout: std::time::Duration,
    /// From when the deadline counts.
    pub(crate) clock: Clock,
}

/// Where a job's source came from, which says whose mistake a source that
/// does not load is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    /// The tool's own source: one that does not load is the tool's crash.
    Defined,
    /// The call brought it (a program the model wrote in its call): one
    /// that does not load is the call's mistake, an error result, no
    /// strike.
    Given,
}

/// From when a job's deadline counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Clock {
    /// From when the job was submitted: a call's, like the runner's
    /// timeout, which also counts the wait for a free thread.
    Submitted,
    /// From when a script thread takes it: a definition's check, whose
    /// short deadline is for the script's top level alone, so a wait
    /// behind busy threads must not eat it.
    Taken,
}

impl JobSpec {
    /// A thread takes the job now: a deadline that counts from here starts.
    pub(crate) fn taken(&mut self) {
        if self.clock == Clock::Taken {
            let now = Instant::now();
            self.deadline = now
                .checked_add(self.timeout)
                .unwrap_or(now + std::time::Duration::from_secs(365 * 24 * 3600));
        }
    }
}
