//! The messages between a pool's thread and its worker process: one JSON
//! object per line, each way.
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
use serde_json::{Map, Value, json};

use crate::sandbox::engine::CheckFailure;
use crate::sandbox::host::{Callee, HostAnswer};
use crate::sandbox::job::{Answer, Clock, JobKind, JobSpec, Origin};
use crate::sandbox::limits::ScriptLimits;
use crate::sandbox::output::{ScriptOutput, plain_from_wire, plain_to_wire};

/// A job as the worker runs it: the spec and the pool's stack limit.
pub(crate) struct WorkerJob {
    pub(crate) number: u64,
    pub(crate) spec: JobSpec,
    pub(crate) stack_limit: usize,
}

/// From the pool's thread to the worker.
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
pub(crate) enum FromWorker {
    Update {
        job: u64,
        partial: Plain,
    },
    Host {
        job: u64,
        id: u64,
        callee: Callee,
        name: String,
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

/// The worker's first line: that it is a rho-script worker, and of which
/// version (the messages below are this version's).
pub(crate) fn greeting() -> String {
    let mut line = json!({ "ready": { "worker": "rho-script", "version": VERSION } }).to_string();
    line.push('\n');
    line
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
    let value: Value = serde_json::from_slice(line).map_err(|_| not_a_worker())?;
    let ready = value
        .get("ready")
        .filter(|ready| ready.get("worker").and_then(Value::as_str) == Some("rho-script"))
        .ok_or_else(not_a_worker)?;
    match ready.get("version").and_then(Value::as_str) {
        Some(version) if version == VERSION => Ok(()),
        Some(version) => Err(format!(
            "it is the worker of rho-script {version}, and this host runs rho-script {VERSION}: their messages may differ, so the worker must be of the same version"
        )),
        None => Err(not_a_worker()),
    }
}

fn limits_to_wire(limits: &ScriptLimits) -> Value {
    json!({
        "memory": limits.memory,
        "max_depth": limits.answer.max_depth,
        "max_bytes": limits.answer.max_bytes,
        "max_elements": limits.answer.max_elements,
        "max_string": limits.answer.max_string,
    })
}

fn limits_from_wire(wire: &Value) -> Option<ScriptLimits> {
    let number = |key: &str| {
        wire.get(key)?
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
    };
    Some(
        ScriptLimits::default()
            .with_memory(number("memory")?)
            .with_answer(
                Limits::default()
                    .with_max_depth(number("max_depth")?)
                    .with_max_bytes(number("max_bytes")?)
                    .with_max_elements(number("max_elements")?)
                    .with_max_string(number("max_string")?),
            ),
    )
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

impl ToWorker {
    /// The message as one line of JSON (with its newline).
    pub(crate) fn to_line(&self) -> String {
        let value = match self {
            ToWorker::Job(job) => {
                let spec = &job.spec;
                let kind = match &spec.kind {
                    JobKind::Call(arguments) => json!({ "call": arguments }),
                    JobKind::Check => json!("check"),
                };
                json!({ "job": {
                    "number": job.number,
                    "name": &*spec.name,
                    "source": &*spec.source,
                    "given": spec.origin == Origin::Given,
                    "kind": kind,
                    "limits": limits_to_wire(&spec.limits),
                    "grants": spec.grants.iter().map(|name| &**name).collect::<Vec<_>>(),
                    "tools": spec.tools.as_ref().map(|names| names.iter().map(|name| &**name).collect::<Vec<_>>()),
                    "deadline_ms": millis(spec.deadline.saturating_duration_since(Instant::now())),
                    "timeout_ms": millis(spec.timeout),
                    "stack_limit": job.stack_limit,
                }})
            }
            ToWorker::Host { job, answer } => match &answer.result {
                Ok(value) => json!({ "host": { "job": job, "id": answer.id, "ok": value } }),
                Err(text) => json!({ "host": { "job": job, "id": answer.id, "error": text } }),
            },
            ToWorker::Due { job } => json!({ "due": { "job": job } }),
            ToWorker::Stop { job } => json!({ "stop": { "job": job } }),
        };
        let mut line = value.to_string();
        line.push('\n');
        line
    }

    /// Reads a line the pool's thread wrote (trusted: the worker's parent).
    pub(crate) fn parse(line: &str) -> Option<Self> {
        let Value::Object(mut message) = serde_json::from_str::<Value>(line).ok()? else {
            return None;
        };
        let (kind, body) = message.iter_mut().next()?;
        let job = body.get("job").and_then(Value::as_u64);
        match kind.as_str() {
            "job" => {
                let body = body.take();
                let text =
                    |key: &str| -> Option<Arc<str>> { Some(Arc::from(body.get(key)?.as_str()?)) };
                let number = |key: &str| body.get(key)?.as_u64();
                let kind = match body.get("kind")? {
                    Value::String(check) if check == "check" => JobKind::Check,
                    Value::Object(call) => JobKind::Call(call.get("call")?.clone()),
                    _ => return None,
                };
                let grants = body
                    .get("grants")?
                    .as_array()?
                    .iter()
                    .map(|name| name.as_str().map(Arc::from))
                    .collect::<Option<Arc<[Arc<str>]>>>()?;
                let tools = match body.get("tools")? {
                    Value::Null => None,
                    Value::Array(names) => Some(
                        names
                            .iter()
                            .map(|name| name.as_str().map(Arc::from))
                            .collect::<Option<Arc<[Arc<str>]>>>()?,
                    ),
                    _ => return None,
                };
                let now = Instant::now();
                let deadline = now
                    .checked_add(Duration::from_millis(number("deadline_ms")?))
                    .unwrap_or(now + Duration::from_secs(365 * 24 * 3600));
                Some(ToWorker::Job(WorkerJob {
                    number: number("number")?,
                    spec: JobSpec {
                        name: text("name")?,
                        source: text("source")?,
                        origin: if body.get("given")?.as_bool()? {
                            Origin::Given
                        } else {
                            Origin::Defined
                        },
                        kind,
                        limits: limits_from_wire(body.get("limits")?)?,
                        grants,
                        tools,
                        deadline,
                        timeout: Duration::from_millis(number("timeout_ms")?),
                        // The parent took the job before it sent it: the
                        // deadline above already counts from then.
                        clock: Clock::Submitted,
                    },
                    stack_limit: usize::try_from(number("stack_limit")?).ok()?,
                }))
            }
            "host" => {
                let id = body.get("id")?.as_u64()?;
                let result = match (body.get_mut("ok").map(Value::take), body.get("error")) {
                    (Some(value), None) => Ok(value),
                    (None, Some(Value::String(text))) => Err(text.clone()),
                    _ => return None,
                };
                Some(ToWorker::Host {
                    job: job?,
                    answer: HostAnswer { id, result },
                })
            }
            "due" => Some(ToWorker::Due { job: job? }),
            "stop" => Some(ToWorker::Stop { job: job? }),
            _ => None,
        }
    }
}

fn check_to_wire(verdict: &Result<(), CheckFailure>) -> Value {
    match verdict {
        Ok(()) => json!({ "ok": null }),
        Err(CheckFailure::Syntax {
            line,
            column,
            message,
        }) => json!({ "syntax": { "line": line, "column": column, "message": message } }),
        Err(CheckFailure::NoRun { found }) => json!({ "no_run": found }),
        Err(CheckFailure::Failed(text)) => json!({ "failed": text }),
        Err(CheckFailure::TimedOut) => json!({ "timed_out": null }),
        Err(CheckFailure::Unavailable(text)) => json!({ "unavailable": text }),
    }
}

fn check_from_wire(wire: &Value) -> Option<Result<(), CheckFailure>> {
    let Value::Object(wire) = wire else {
        return None;
    };
    let (kind, body) = wire.iter().next()?;
    let text = || body.as_str().map(str::to_owned);
    Some(match kind.as_str() {
        "ok" => Ok(()),
        "syntax" => Err(CheckFailure::Syntax {
            line: u32::try_from(body.get("line")?.as_u64()?).ok()?,
            column: u32::try_from(body.get("column")?.as_u64()?).ok()?,
            message: body.get("message")?.as_str()?.to_owned(),
        }),
        "no_run" => Err(CheckFailure::NoRun { found: text()? }),
        "failed" => Err(CheckFailure::Failed(text()?)),
        "timed_out" => Err(CheckFailure::TimedOut),
        "unavailable" => Err(CheckFailure::Unavailable(text()?)),
        _ => return None,
    })
}

impl FromWorker {
    /// The message as one line of JSON (with its newline).
    pub(crate) fn to_line(&self) -> String {
        let value = match self {
            FromWorker::Update { job, partial } => {
                json!({ "update": { "job": job, "partial": plain_to_wire(partial) } })
            }
            FromWorker::Host {
                job,
                id,
                callee,
                name,
                argument,
            } => json!({ "host": {
                "job": job,
                "id": id,
                "tool": *callee == Callee::Tool,
                "name": name,
                "argument": plain_to_wire(argument),
            }}),
            FromWorker::SleepFor { job, wait } => {
                json!({ "sleep": { "job": job, "ms": wait.as_secs_f64() * 1000.0 } })
            }
            FromWorker::Answer { job, answer } => {
                let answer = match answer {
                    Answer::Output(output) => json!({ "output": output.to_wire() }),
                    Answer::Checked(verdict) => json!({ "checked": check_to_wire(verdict) }),
                };
                json!({ "answer": { "job": job, "answer": answer } })
            }
        };
        let mut line = value.to_string();
        line.push('\n');
        line
    }

    /// Reads a line the worker wrote: untrusted, so every field is
    /// checked; the error says what was wrong, for the crash text.
    pub(crate) fn parse(line: &[u8]) -> Result<Self, String> {
        let value: Value = serde_json::from_slice(line)
            .map_err(|error| format!("a line that is not JSON ({error})"))?;
        let Value::Object(mut message) = value else {
            return Err("a line that is not a JSON object".to_owned());
        };
        if message.len() != 1 {
            return Err("a message with other than one key".to_owned());
        }
        let (kind, mut body) = message
            .iter_mut()
            .next()
            .map(|(kind, body)| (kind.clone(), body.take()))
            .ok_or("an empty message")?;
        let job = body
            .get("job")
            .and_then(Value::as_u64)
            .ok_or("a message without its job")?;
        let mut take = |key: &str| -> Result<Value, String> {
            body.as_object_mut()
                .and_then(|body: &mut Map<String, Value>| body.remove(key))
                .ok_or_else(|| format!("a `{kind}` message without `{key}`"))
        };
        match kind.as_str() {
            "update" => Ok(FromWorker::Update {
                job,
                partial: plain_from_wire(take("partial")?),
            }),
            "host" => {
                let id = take("id")?
                    .as_u64()
                    .ok_or("a host call whose id is not a number")?;
                let Value::String(name) = take("name")? else {
                    return Err("a host call whose name is not text".to_owned());
                };
                let callee = match take("tool")? {
                    Value::Bool(true) => Callee::Tool,
                    Value::Bool(false) => Callee::Grant,
                    _ => return Err("a host call whose kind is not a boolean".to_owned()),
                };
                Ok(FromWorker::Host {
                    job,
                    id,
                    callee,
                    name,
                    argument: plain_from_wire(take("argument")?),
                })
            }
            "sleep" => {
                let ms = take("ms")?
                    .as_f64()
                    .filter(|ms| ms.is_finite() && *ms >= 0.0)
                    .ok_or("a sleep of no valid length")?;
                Ok(FromWorker::SleepFor {
                    job,
                    wait: Duration::try_from_secs_f64(ms / 1000.0)
                        .map_err(|_| "a sleep of no valid length".to_owned())?,
                })
            }
            "answer" => {
                let answer = take("answer")?;
                let answer = if let Some(output) = answer.get("output") {
                    Answer::Output(ScriptOutput::from_wire(output.clone())?)
                } else if let Some(verdict) = answer.get("checked") {
                    Answer::Checked(
                        check_from_wire(verdict).ok_or("a check's verdict of no known form")?,
                    )
                } else {
                    return Err("an answer of no known form".to_owned());
                };
                Ok(FromWorker::Answer { job, answer })
            }
            other => Err(format!("a message of unknown kind `{other}`")),
        }
    }
}
