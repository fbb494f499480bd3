//! The messages between a pool's thread and its worker process: one JSON
//! object per line, each way, `{"type": "...", "job": n, ...}`, read and
//! written by serde from the enums below.
//!
//! The worker's first line is its greeting: that it is a rho-script
//! worker, and of which version (a program that does not greet so is not
//! sent a job). The parent sends a job, then, while the job runs, what
//! the call's future did for the script (a host call's end, a sleep that
//! is due) or that it is gone (stop). The worker sends what the script
//! asks of the future (a partial result, a host call, a sleep until some
//! time) and, last, the job's answer. Every message of a job carries the
//! job's number, so that a late message of a stopped job is never taken
//! for the next one's.
//!
//! What the worker writes is read as untrusted: a line that is not one of
//! these messages ends the job as a crash of the worker, and the worker
//! is killed.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rho_tool_core::untrusted::{Limits, Plain};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::sandbox::host::{Callee, HostAnswer};
use crate::sandbox::job::{Answer, Clock, JobKind, JobSpec, Origin};
use crate::sandbox::limits::ScriptLimits;
use crate::sandbox::output::plain_wire;

/// A job as the worker runs it: the spec and the pool's stack limit. On
/// the wire it is a [`WireJob`].
pub(crate) struct WorkerJob {
    pub(crate) number: u64,
    pub(crate) spec: JobSpec,
    pub(crate) stack_limit: usize,
}

/// From the pool's thread to the worker.
#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum ToWorker {
    Job(WorkerJob),
    /// A host call of the running job ended.
    Host {
        job: u64,
        answer: HostAnswer,
    },
    /// The sleep the running job asked for is over.
    Due {
        job: u64,
    },
    /// The call is gone: stop the script.
    Stop {
        job: u64,
    },
}

/// From the worker to the pool's thread.
#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum FromWorker {
    Update {
        job: u64,
        #[serde(with = "plain_wire")]
        partial: Plain,
    },
    Host {
        job: u64,
        id: u64,
        callee: Callee,
        name: String,
        #[serde(with = "plain_wire")]
        argument: Plain,
    },
    /// Sleep until this long from when the message was read.
    SleepFor {
        job: u64,
        wait: Duration,
    },
    Answer {
        job: u64,
        answer: Answer,
    },
}

impl FromWorker {
    /// The job the message is about.
    pub(crate) fn job(&self) -> u64 {
        match self {
            FromWorker::Update { job, .. }
            | FromWorker::Host { job, .. }
            | FromWorker::SleepFor { job, .. }
            | FromWorker::Answer { job, .. } => *job,
        }
    }
}

/// The worker's first line, `{"ready": {"worker": "rho-script", "version":
/// ...}}`: that it is a rho-script worker, and of which version (the
/// messages below are this version's). Its shape never changes, so that a
/// worker of any version is told apart by it.
#[derive(Serialize, Deserialize)]
struct Greeting<'a> {
    #[serde(borrow)]
    ready: Ready<'a>,
}

#[derive(Serialize, Deserialize)]
struct Ready<'a> {
    worker: &'a str,
    version: &'a str,
}

/// What a worker calls itself in its greeting.
const WORKER: &str = "rho-script";

/// The worker's first line ([`Greeting`]), with its newline.
pub(crate) fn greeting() -> String {
    let greeting = Greeting {
        ready: Ready {
            worker: WORKER,
            version: VERSION,
        },
    };
    to_line(&greeting)
}

/// The version of rho-script whose messages these are.
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Checks a worker's first line, [`greeting`]: why it is not one of this
/// version's otherwise.
pub(crate) fn check_greeting(line: &[u8]) -> Result<(), String> {
    let not_a_worker = || {
        let start = String::from_utf8_lossy(&line[..line.len().min(80)]).into_owned();
        format!("its first line on stdout was not a rho-script worker's greeting but {start:?}")
    };
    // Escaped text does not borrow: such a greeting is no worker's.
    let greeting: Greeting<'_> = serde_json::from_slice(line).map_err(|_| not_a_worker())?;
    match greeting.ready {
        Ready { worker, version } if worker == WORKER && version == VERSION => Ok(()),
        Ready { worker, version } if worker == WORKER => Err(format!(
            "it is the worker of rho-script {version}, and this host runs rho-script {VERSION}: their messages may differ, so the worker must be of the same version"
        )),
        Ready { .. } => Err(not_a_worker()),
    }
}

/// One message as a line of JSON, with its newline.
fn to_line(message: &impl Serialize) -> String {
    // The messages hold only strings, numbers and plain data, whose
    // serialisation cannot fail.
    let mut line = serde_json::to_string(message).unwrap_or_default();
    line.push('\n');
    line
}

/// A job on the wire: its spec with times as milliseconds from when it
/// is written (an [`Instant`] means nothing in another process) and the
/// origin as a flag. `T` is the text: borrowed to write, owned to read.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WireJob<T> {
    number: u64,
    name: T,
    source: T,
    given: bool,
    kind: JobKind,
    limits: WireLimits,
    grants: Vec<T>,
    tools: Option<Vec<T>>,
    deadline_ms: u64,
    timeout_ms: u64,
    stack_limit: usize,
}

/// [`ScriptLimits`] on the wire (its own type is not serde's: it belongs
/// to the public API, which does not promise a wire form).
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WireLimits {
    memory: usize,
    max_depth: usize,
    max_bytes: usize,
    max_elements: usize,
    max_string: usize,
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

fn names(names: &[Arc<str>]) -> Vec<&str> {
    names.iter().map(|name| &**name).collect()
}

fn arcs(names: Vec<String>) -> Arc<[Arc<str>]> {
    names.into_iter().map(Arc::from).collect()
}

impl Serialize for WorkerJob {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let spec = &self.spec;
        let limits = &spec.limits;
        WireJob {
            number: self.number,
            name: &*spec.name,
            source: &*spec.source,
            given: spec.origin == Origin::Given,
            kind: clone_kind(&spec.kind),
            limits: WireLimits {
                memory: limits.memory,
                max_depth: limits.answer.max_depth,
                max_bytes: limits.answer.max_bytes,
                max_elements: limits.answer.max_elements,
                max_string: limits.answer.max_string,
            },
            grants: names(&spec.grants),
            tools: spec.tools.as_deref().map(names),
            deadline_ms: millis(spec.deadline.saturating_duration_since(Instant::now())),
            timeout_ms: millis(spec.timeout),
            stack_limit: self.stack_limit,
        }
        .serialize(serializer)
    }
}

/// A borrowed job's kind, to write: a call's arguments are cloned (they
/// are small beside the source, which is borrowed).
fn clone_kind(kind: &JobKind) -> JobKind {
    match kind {
        JobKind::Call(arguments) => JobKind::Call(arguments.clone()),
        JobKind::Check => JobKind::Check,
    }
}

impl<'de> Deserialize<'de> for WorkerJob {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = WireJob::<String>::deserialize(deserializer)?;
        let now = Instant::now();
        let deadline = now
            .checked_add(Duration::from_millis(wire.deadline_ms))
            .unwrap_or(now + Duration::from_secs(365 * 24 * 3600));
        let limits = ScriptLimits::default()
            .with_memory(wire.limits.memory)
            .with_answer(
                Limits::default()
                    .with_max_depth(wire.limits.max_depth)
                    .with_max_bytes(wire.limits.max_bytes)
                    .with_max_elements(wire.limits.max_elements)
                    .with_max_string(wire.limits.max_string),
            );
        Ok(WorkerJob {
            number: wire.number,
            spec: JobSpec {
                name: Arc::from(wire.name),
                source: Arc::from(wire.source),
                origin: if wire.given {
                    Origin::Given
                } else {
                    Origin::Defined
                },
                kind: wire.kind,
                limits,
                grants: arcs(wire.grants),
                tools: wire.tools.map(arcs),
                deadline,
                timeout: Duration::from_millis(wire.timeout_ms),
                // The parent took the job before it sent it: the
                // deadline above already counts from then.
                clock: Clock::Submitted,
            },
            stack_limit: wire.stack_limit,
        })
    }
}

impl ToWorker {
    /// The message as one line of JSON (with its newline).
    pub(crate) fn to_line(&self) -> String {
        to_line(self)
    }

    /// Reads a line the pool's thread wrote (trusted: the worker's parent).
    pub(crate) fn parse(line: &str) -> Option<Self> {
        serde_json::from_str(line).ok()
    }
}

impl FromWorker {
    /// The message as one line of JSON (with its newline).
    pub(crate) fn to_line(&self) -> String {
        to_line(self)
    }

    /// Reads a line the worker wrote: untrusted, so serde checks every
    /// field (no unknown one, each of its type); the error says what was
    /// wrong, for the crash text.
    pub(crate) fn parse(line: &[u8]) -> Result<Self, String> {
        serde_json::from_slice(line).map_err(|error| {
            if error.is_syntax() || error.is_eof() {
                format!("a line that is not JSON ({error})")
            } else {
                format!("a line that is not a message ({error})")
            }
        })
    }
}
