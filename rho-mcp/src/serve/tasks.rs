//! Long calls as MCP tasks (the tasks extension, SEP-2663).
//!
//! A host says which of its tools may run as tasks ([`McpTasks`]). When a
//! client that takes tasks calls one, rho follows the call as it follows
//! any: a call that ends quickly is answered as usual, and the gate's
//! questions and those the tool asks at once go out as input-required
//! results. Once the call has run for [`McpTasks::after`] answering
//! nothing and asking nothing, the client gets a task instead, and rho
//! follows the call on by itself: `tasks/get` tells its status (working,
//! waiting for input with the questions asked, completed with its result,
//! failed, cancelled), `tasks/update` answers its questions (some or all
//! of them), and `tasks/cancel` aborts the rho call itself: the tool is
//! stopped, as at a deadline, never merely told. A tool's answer is
//! "completed", an error answer included; "failed" is for a call that
//! crashed (a panic, a server that died) or whose questions nobody
//! answered by the server's input deadline
//! ([`McpServer::with_input_deadline`](crate::McpServer::with_input_deadline)),
//! when the call is aborted, counted against no tool.
//!
//! Task ids are random (256 bits), so one client cannot read or cancel
//! another's tasks by guessing. A task is kept for its time to live
//! ([`McpTasks::ttl`]) from its creation; a call still running then is
//! aborted.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime};

use rho_tool_core::annotation_gate::Match;
use rho_tool_core::{CallEnd, Executor, Outcome, ToolAnnotations};
use rmcp::model::{
    CallToolResult, CreateTaskResult, DetailedTask, ErrorData, InputRequests, InputResponses,
    JsonObject, Task, TaskPayload, TaskStatus,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::call::{finish, observe};
use super::follow::{Following, Step};
use super::input::{Pending, fresh_token};
use super::server::Shared;

/// Which served tools run as MCP tasks for clients that take them (the
/// tasks extension, `io.modelcontextprotocol/tasks`), and for how long
/// their tasks are kept. Give it to
/// [`McpServer::with_tasks`](crate::McpServer::with_tasks).
///
/// Tools are picked by the gate's tests ([`Match`]): by name, by glob, by
/// their hints. The first rule that matches a tool decides.
///
/// ```
/// use std::time::Duration;
/// use rho::gate::Match;
/// use rho::mcp::McpTasks;
///
/// let tasks = McpTasks::new()
///     // Builds may run long: a client that takes tasks gets one.
///     .optional(Match::glob("build_*").expect("a glob"))
///     // Served only to clients that take tasks.
///     .required(Match::tool("migrate_database"))
///     .after(Duration::from_secs(2));
/// # let _ = tasks;
/// ```
#[derive(Debug, Clone)]
pub struct McpTasks {
    rules: Vec<(Match, TaskSupport)>,
    after: Duration,
    ttl: Duration,
    poll_interval: Duration,
}

/// How a tool takes tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TaskSupport {
    /// As a task for a client that takes them, as a plain call otherwise.
    Optional,
    /// Only as a task: a client that does not take them is refused.
    Required,
}

impl Default for McpTasks {
    fn default() -> Self {
        Self::new()
    }
}

impl McpTasks {
    /// How long a call runs before it becomes a task, by default.
    pub const DEFAULT_AFTER: Duration = Duration::from_secs(1);
    /// How long a task is kept from its creation, by default.
    pub const DEFAULT_TTL: Duration = Duration::from_secs(3600);
    /// How often a client is told to poll a task, by default.
    pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_millis(500);

    /// No tool runs as a task yet.
    pub fn new() -> Self {
        Self {
            rules: Vec::new(),
            after: Self::DEFAULT_AFTER,
            ttl: Self::DEFAULT_TTL,
            poll_interval: Self::DEFAULT_POLL_INTERVAL,
        }
    }

    /// The tools `when` matches run as tasks for clients that take them,
    /// and as plain calls for others.
    pub fn optional(mut self, when: Match) -> Self {
        self.rules.push((when, TaskSupport::Optional));
        self
    }

    /// The tools `when` matches run only as tasks: a client that does not
    /// take tasks is refused with MCP's missing-capability error (`-32021`)
    /// before anything runs.
    pub fn required(mut self, when: Match) -> Self {
        self.rules.push((when, TaskSupport::Required));
        self
    }

    /// How long a call runs (from its gate's approval) answering nothing
    /// and asking nothing before the client gets a task instead of
    /// waiting (default [`DEFAULT_AFTER`](McpTasks::DEFAULT_AFTER)). A
    /// call that ends sooner is answered as usual; questions it asks
    /// sooner go out as input-required results, and each answer starts
    /// the time again.
    pub fn after(mut self, after: Duration) -> Self {
        self.after = after;
        self
    }

    /// How long a task is kept from its creation (default
    /// [`DEFAULT_TTL`](McpTasks::DEFAULT_TTL)); a call still running then
    /// is aborted.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// How often clients are asked to poll (default
    /// [`DEFAULT_POLL_INTERVAL`](McpTasks::DEFAULT_POLL_INTERVAL)).
    pub fn poll_interval(mut self, every: Duration) -> Self {
        self.poll_interval = every;
        self
    }

    /// How the tool named `name` takes tasks; `None`: it does not.
    pub(crate) fn support(
        &self,
        name: &str,
        hints: &ToolAnnotations,
        untrusted: bool,
    ) -> Option<TaskSupport> {
        self.rules
            .iter()
            .find(|(when, _)| when.matches_tool(name, hints, untrusted))
            .map(|(_, support)| *support)
    }

    pub(crate) fn after_time(&self) -> Duration {
        self.after
    }
}

/// A task's state, beside its record.
enum State {
    Working,
    /// Questions waiting for the client's `tasks/update`.
    InputRequired(Vec<Pending>),
    Completed(JsonObject),
    Failed(JsonObject),
    Cancelled,
}

/// One task: its record and how to stop its call.
struct Entry {
    task: Task,
    state: State,
    cancel: CancellationToken,
    /// How many times the task has come to need input: a deadline set
    /// for one time ends nothing once the task has moved on.
    asked: u64,
}

impl Entry {
    fn set(&mut self, state: State) {
        self.state = state;
        self.task.last_updated_at = now();
    }

    fn detailed(&self) -> DetailedTask {
        let payload = match &self.state {
            State::Working => TaskPayload::Working,
            State::InputRequired(pending) => TaskPayload::InputRequired {
                input_requests: pending
                    .iter()
                    .flat_map(Pending::unanswered)
                    .collect::<InputRequests>(),
            },
            State::Completed(result) => TaskPayload::Completed {
                result: result.clone(),
            },
            State::Failed(error) => TaskPayload::Failed {
                error: error.clone(),
            },
            State::Cancelled => TaskPayload::Cancelled,
        };
        DetailedTask::new(self.task.clone(), payload)
    }
}

type Locked<T> = Arc<Mutex<T>>;

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Only plain updates run under these locks.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The tasks of a server, by id.
#[derive(Clone, Default)]
pub(crate) struct Tasks {
    by_id: Locked<HashMap<String, Locked<Entry>>>,
}

impl Tasks {
    /// The most tasks a server keeps at once (each is kept for its TTL,
    /// its result with it); a call that would become a task beyond them
    /// goes on as a plain request, so a client cannot fill the server's
    /// memory with tasks.
    pub(crate) const MOST: usize = 4096;

    /// Records `entry` under `id`; `false` when as many tasks are kept
    /// as may be.
    fn keep(&self, id: String, entry: Locked<Entry>) -> bool {
        let mut by_id = lock(&self.by_id);
        if by_id.len() >= Self::MOST {
            return false;
        }
        by_id.insert(id, entry);
        true
    }

    fn get(&self, id: &str) -> Result<Locked<Entry>, ErrorData> {
        lock(&self.by_id).get(id).cloned().ok_or_else(|| {
            ErrorData::invalid_params(format!("no task `{id}` on this server"), None)
        })
    }

    /// `tasks/get`.
    pub(crate) fn detailed(&self, id: &str) -> Result<DetailedTask, ErrorData> {
        let entry = self.get(id)?;
        let detailed = lock(&entry).detailed();
        Ok(detailed)
    }

    /// `tasks/update`: the answers go to the questions that asked for
    /// them; the task waits on while any is unanswered.
    pub(crate) fn update(&self, id: &str, mut responses: InputResponses) -> Result<(), ErrorData> {
        let entry = self.get(id)?;
        let mut entry = lock(&entry);
        let State::InputRequired(pending) = &mut entry.state else {
            // Nothing asked: answers to nothing are ignored.
            return Ok(());
        };
        let mut waiting = Vec::new();
        for mut question in pending.drain(..) {
            question.take_answers(&mut responses);
            if let Err(unanswered) = question.finish() {
                waiting.push(unanswered);
            }
        }
        let state = if waiting.is_empty() {
            State::Working
        } else {
            State::InputRequired(waiting)
        };
        entry.set(state);
        Ok(())
    }

    /// `tasks/cancel`: aborts the call, if it still runs.
    pub(crate) fn cancel(&self, id: &str) -> Result<(), ErrorData> {
        let entry = self.get(id)?;
        lock(&entry).cancel.cancel();
        Ok(())
    }
}

/// The time now, as MCP writes it (RFC 3339, milliseconds).
fn now() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis())
        .unwrap_or(u64::MAX)
        .max(1)
}

/// Makes `following` a task of `shared`: recorded before its id is given
/// (a `tasks/get` right after finds it), then followed by a task of its
/// own. `Err` gives the call back, never to become a task, when the
/// server keeps as many tasks as it may ([`Tasks::MOST`]).
pub(crate) fn start<E: Executor>(
    shared: &Arc<Shared<E>>,
    mut following: Box<Following<E>>,
) -> Result<CreateTaskResult, Box<Following<E>>> {
    let config = shared.tasks.clone().unwrap_or_default();
    let id = fresh_token();
    let created = now();
    let task = Task::new(id.clone(), TaskStatus::Working, created.clone(), created)
        .with_ttl_ms(millis(config.ttl))
        .with_poll_interval_ms(millis(config.poll_interval));
    let cancel = CancellationToken::new();
    let entry = Arc::new(Mutex::new(Entry {
        task: task.clone(),
        state: State::Working,
        cancel: cancel.clone(),
        asked: 0,
    }));
    following.task_after = None;
    if !shared.task_list.keep(id.clone(), entry.clone()) {
        return Err(following);
    }
    tokio::spawn(follow(shared.clone(), following, entry, cancel.clone()));
    let tasks = shared.task_list.clone();
    tokio::spawn(async move {
        tokio::time::sleep(config.ttl).await;
        lock(&tasks.by_id).remove(&id);
        cancel.cancel();
    });
    Ok(CreateTaskResult::new(task))
}

/// Follows a task's call to its end.
async fn follow<E: Executor>(
    shared: Arc<Shared<E>>,
    mut following: Box<Following<E>>,
    entry: Locked<Entry>,
    cancel: CancellationToken,
) {
    let declared = following.declared.clone();
    // Cancelled when the client left a question unanswered past the
    // server's input deadline.
    let unanswered = CancellationToken::new();
    let stop = || async {
        tokio::select! {
            () = cancel.cancelled() => {}
            () = unanswered.cancelled() => {}
        }
    };
    let end = loop {
        // Answers come by `tasks/update`, never with a request.
        let mut none = InputResponses::new();
        match following
            .follow(&mut none, declared.as_ref(), None, stop())
            .await
        {
            Step::Ended(end) => break end,
            Step::Asks => {
                if let Some(question) = following.pending.take() {
                    let asked = {
                        let mut entry = lock(&entry);
                        let mut pending = match std::mem::replace(&mut entry.state, State::Working)
                        {
                            State::InputRequired(pending) => pending,
                            _ => Vec::new(),
                        };
                        pending.push(question);
                        entry.set(State::InputRequired(pending));
                        entry.asked += 1;
                        entry.asked
                    };
                    expire(
                        entry.clone(),
                        asked,
                        shared.input_deadline,
                        unanswered.clone(),
                    );
                }
            }
            // The question failed (the tool was told); the call goes on.
            Step::Missing(_) | Step::BecomesTask => {}
        }
    };
    let state = match end {
        None => State::Failed(error_object(-32603, "the call ended without a result")),
        Some(end) if unanswered.is_cancelled() && !cancel.is_cancelled() => {
            // Aborted, which counts against no tool.
            observe(&shared, &end, None, following.observed_arguments.clone(), 0);
            let text = format!(
                "the client did not answer the task's questions within the server's input \
                 deadline of {} ms",
                shared.input_deadline.as_millis()
            );
            State::Failed(error_object(-32603, &text))
        }
        Some(end) => ended(&shared, &following, end, cancel.is_cancelled()),
    };
    lock(&entry).set(state);
}

/// Cancels `unanswered` at `deadline` from now if the task of `entry`
/// still waits then for the input it needed the `asked`-th time.
fn expire(entry: Locked<Entry>, asked: u64, deadline: Duration, unanswered: CancellationToken) {
    tokio::spawn(async move {
        tokio::time::sleep(deadline).await;
        let entry = lock(&entry);
        if entry.asked == asked && matches!(entry.state, State::InputRequired(_)) {
            unanswered.cancel();
        }
    });
}

/// A task's state once its call ended.
fn ended<E: Executor>(
    shared: &Shared<E>,
    following: &Following<E>,
    end: CallEnd,
    cancelled: bool,
) -> State {
    let arguments = following.observed_arguments.clone();
    match end.outcome {
        Outcome::Aborted if cancelled => {
            observe(shared, &end, None, arguments, 0);
            State::Cancelled
        }
        // A crash is no answer of the tool's: the task failed.
        Outcome::Crashed | Outcome::ExecutorGone | Outcome::Aborted => {
            observe(shared, &end, None, arguments, 0);
            let text = end
                .result
                .content()
                .iter()
                .filter_map(|part| part.as_text())
                .collect::<Vec<_>>()
                .join("\n");
            State::Failed(error_object(-32603, &text))
        }
        _ => {
            let result: CallToolResult =
                finish(shared, &end, following.output_schema.as_deref(), arguments);
            match serde_json::to_value(&result) {
                Ok(Value::Object(result)) => State::Completed(result),
                _ => State::Failed(error_object(-32603, "the result could not be written")),
            }
        }
    }
}

/// A JSON-RPC error object.
fn error_object(code: i64, message: &str) -> JsonObject {
    match json!({ "code": code, "message": message }) {
        Value::Object(error) => error,
        _ => JsonObject::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> Locked<Entry> {
        let created = now();
        Arc::new(Mutex::new(Entry {
            task: Task::new(
                "t".to_owned(),
                TaskStatus::Working,
                created.clone(),
                created,
            ),
            state: State::Working,
            cancel: CancellationToken::new(),
            asked: 0,
        }))
    }

    /// Property: no more than `MOST` tasks are kept at once; the next is
    /// refused, and one gone makes room again.
    #[test]
    fn at_most_so_many_tasks_are_kept() {
        let tasks = Tasks::default();
        for n in 0..Tasks::MOST {
            assert!(tasks.keep(n.to_string(), entry()), "room for task {n}");
        }
        assert!(!tasks.keep("one more".into(), entry()));
        assert!(tasks.get("one more").is_err());
        lock(&tasks.by_id).remove("7");
        assert!(tasks.keep("one more".into(), entry()));
        assert!(tasks.get("one more").is_ok());
    }
}
