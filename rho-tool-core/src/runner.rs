//! Starting a call: one task per call, gate first, then the tool.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use rho_untrusted::{Caught, Limits, Phase, call_contained};

use crate::call::{TaskId, ToolCall};
use crate::contain::Contained;
use crate::executor::Executor;
use crate::gate::{AllowAll, Gate, Verdict};
use crate::handle::CallHandle;
use crate::notice::Notice;
use crate::result::ToolResult;
use crate::tool::{ExecutorTimer, Timer, Tool, ToolContext};
use crate::watch::Watch;

/// How the task of a call ended, as plain data: this is all that crosses
/// from the task to the loop.
#[derive(Debug)]
pub(crate) enum TaskEnd {
    /// The tool answered (successfully or with its own error).
    Answered(ToolResult),
    /// The tool answered that it crashed (`ToolOutput::crashed`).
    CrashReported(ToolResult),
    /// The tool answered something rho could not use; the text says why.
    Unusable(String),
    /// The gate denied the call.
    Denied(String),
    /// The call was refused before it started.
    Refused(ToolResult),
    /// The gate, the tool or the answer's own code panicked.
    Panicked { phase: Phase, caught: Caught },
}

/// Starts calls on an executor, with a gate, a watch and answer limits.
///
/// Cheap to clone; clones share the gate and the watch.
///
/// ```
/// # async fn demo<E: rho_tool_core::Executor>(executor: E, tool: std::sync::Arc<dyn rho_tool_core::Tool>) {
/// use rho_tool_core::{Runner, ToolCall};
///
/// let runner = Runner::new(executor);
/// let end = runner.start(ToolCall::new("call-1", "echo", serde_json::json!({"text": "hi"})), tool).await;
/// println!("{}: {}", end.outcome, end.result.text());
/// # }
/// ```
#[derive(Clone)]
pub struct Runner<E> {
    executor: E,
    gate: Arc<dyn Gate>,
    watch: Option<Arc<dyn Watch>>,
    limits: Arc<Limits>,
    timer: Arc<dyn Timer>,
}

impl<E: fmt::Debug> fmt::Debug for Runner<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runner")
            .field("executor", &self.executor)
            .field("watch", &self.watch.is_some())
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl<E: Executor> Runner<E> {
    /// A runner on `executor` with the default gate ([`AllowAll`]), no watch
    /// and the default [`Limits`].
    pub fn new(executor: E) -> Self {
        Self {
            timer: Arc::new(ExecutorTimer(executor.clone())),
            executor,
            gate: Arc::new(AllowAll),
            watch: None,
            limits: Arc::new(Limits::default()),
        }
    }

    /// Uses `gate` for every call.
    pub fn with_gate(mut self, gate: Arc<dyn Gate>) -> Self {
        self.gate = gate;
        self
    }

    /// Tells `watch` of every call's task and how it ended.
    pub fn with_watch(mut self, watch: Arc<dyn Watch>) -> Self {
        self.watch = Some(watch);
        self
    }

    /// Makes answers' details plain data under `limits`.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = Arc::new(limits);
        self
    }

    /// The executor calls run on.
    pub fn executor(&self) -> &E {
        &self.executor
    }

    /// A call that ends at once, refused with `result`, without a gate, a
    /// tool or a watch: for an unknown or disabled tool, or arguments that
    /// do not fit the tool's schema. It ends with [`Outcome::Refused`](crate::Outcome::Refused)
    /// through the same [`CallHandle`] as every other call, so a host's
    /// loop treats all calls alike.
    pub fn refuse(&self, call: ToolCall, result: ToolResult) -> CallHandle<E> {
        let handle = self
            .executor
            .spawn(std::future::ready(TaskEnd::Refused(result)));
        CallHandle::new(
            self.executor.clone(),
            handle,
            Arc::new(Notice::default()),
            None,
            call.id,
            call.name,
            TaskId::next(),
            std::time::Duration::ZERO,
        )
    }

    /// Starts `call` of `tool` as one task; await the handle for its end.
    ///
    /// Returns at once: the gate and the tool run in the task. The watch is
    /// told the task before it is spawned. The tool's metadata
    /// ([`Tool::name`], [`Tool::timeout`]) is read here, in the loop; if
    /// reading it panics, the call ends as crashed without running.
    pub fn start(&self, call: ToolCall, tool: Arc<dyn Tool>) -> CallHandle<E> {
        let task = TaskId::next();
        let metadata = call_contained(|| (tool.name().to_owned(), tool.timeout()));
        if let Some(watch) = &self.watch {
            let _ = call_contained(|| watch.started(&call, task));
        }
        let notice = Arc::new(Notice::default());
        let call_id = call.id.clone();
        let (tool_name, timeout, handle) = match metadata {
            Ok((name, timeout)) => {
                let body = CallTask {
                    call,
                    tool,
                    gate: self.gate.clone(),
                    notice: notice.clone(),
                    task,
                    limits: self.limits.clone(),
                    timer: self.timer.clone(),
                }
                .run();
                (name, timeout, self.executor.spawn(body))
            }
            Err(caught) => {
                // Still a task, so the end reaches the loop the one way all
                // ends do.
                let end = TaskEnd::Panicked {
                    phase: Phase::Tool,
                    caught,
                };
                let handle = self.executor.spawn(std::future::ready(end));
                (call.name, std::time::Duration::ZERO, handle)
            }
        };
        CallHandle::new(
            self.executor.clone(),
            handle,
            notice,
            self.watch.clone(),
            call_id,
            tool_name,
            task,
            timeout,
        )
    }
}

/// Starts `call` of `tool` on `executor`, checked by `gate`.
///
/// The same as [`Runner::start`] on a runner with that gate, no watch and
/// the default limits.
pub fn start<E: Executor>(
    executor: &E,
    call: ToolCall,
    tool: Arc<dyn Tool>,
    gate: Arc<dyn Gate>,
) -> CallHandle<E> {
    Runner::new(executor.clone())
        .with_gate(gate)
        .start(call, tool)
}

/// Everything a call's task owns.
struct CallTask {
    call: ToolCall,
    tool: Arc<dyn Tool>,
    gate: Arc<dyn Gate>,
    notice: Arc<Notice>,
    task: TaskId,
    limits: Arc<Limits>,
    timer: Arc<dyn Timer>,
}

impl CallTask {
    /// The body of a call's task. Only rho's code runs here unguarded:
    /// every foreign future is polled and dropped through [`Contained`], and
    /// the answer is made plain data before the task ends.
    ///
    /// A plain `fn` returning an `async move` block that uses `self`'s
    /// fields in place: an `async fn` would keep both its argument and the
    /// destructured copies in the task's state, a third more bytes per call
    /// in flight.
    #[allow(clippy::manual_async_fn)] // on purpose: see above
    fn run(self) -> impl Future<Output = TaskEnd> + Send + 'static {
        async move {
            let verdict = {
                let mut check =
                    Contained::start(|| self.gate.check(&self.call, self.tool.as_ref()));
                let mut told_waiting = false;
                std::future::poll_fn(|cx| {
                    let polled = Pin::new(&mut check).poll(cx);
                    if polled.is_pending() && !told_waiting {
                        // The gate did not answer at once: someone is being asked.
                        told_waiting = true;
                        self.notice.set_gate_waiting();
                    }
                    polled
                })
                .await
            };
            match verdict {
                Ok(Verdict::Allow) => {}
                Ok(Verdict::Deny { reason }) => return TaskEnd::Denied(reason),
                Err(caught) => {
                    return TaskEnd::Panicked {
                        phase: Phase::Gate,
                        caught,
                    };
                }
            }
            drop(self.gate);
            self.notice.set_running();
            // Let the loop take the notice before the tool runs. The notice
            // woke the loop from inside this task, and a runtime may queue
            // a task woken that way right behind this one on this thread
            // only (tokio's LIFO slot): a tool that then never yields would
            // keep the loop from ever starting its clock.
            YieldOnce(false).await;

            let ToolCall { id, arguments, .. } = self.call;
            let context =
                ToolContext::new(id, self.task, self.timer, self.notice, self.limits.clone());
            let tool = self.tool;
            let output = match Contained::start(|| tool.run(arguments, context)).await {
                Ok(output) => output,
                Err(caught) => {
                    return TaskEnd::Panicked {
                        phase: Phase::Tool,
                        caught,
                    };
                }
            };
            let limits = self.limits;
            let crashed = output.is_crash();
            match output.to_result(&limits) {
                Ok(result) if crashed => TaskEnd::CrashReported(result),
                Ok(result) => TaskEnd::Answered(result),
                Err(error) => match error.panic_message() {
                    Some(message) => TaskEnd::Panicked {
                        phase: Phase::Answer,
                        caught: Caught {
                            message: message.map(str::to_owned),
                            location: None,
                        },
                    },
                    None => TaskEnd::Unusable(error.to_string()),
                },
            }
        }
    }
}

/// Returns `Pending` once (waking itself), then `Ready`: one trip through
/// the executor's queue.
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        if self.0 {
            return std::task::Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    }
}
