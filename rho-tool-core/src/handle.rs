//! The loop side of a call: running notice, timeout clock, kill, result.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use rho_untrusted::{Exit, call_contained, exit_text, panic_text_at};

use crate::call::TaskId;
use crate::end::{CallEnd, CallEvent, Outcome, Running, Update};
use crate::executor::{Executor, Joined, TaskHandle};
use crate::notice::Notice;
use crate::result::ToolResult;
use crate::runner::{TaskEnd, TaskOut};

/// A call in flight, seen from the loop. Await it for the call's
/// [`CallEnd`], or take its events one by one with
/// [`next_event`](CallHandle::next_event).
///
/// The handle is what enforces the contract's loop side:
///
/// - it waits for the task's running notice with no clock at all, however
///   long the gate takes;
/// - at the notice it starts the tool's timeout clock on the executor's
///   timer, and at the deadline it kills the task and ends the call with the
///   timeout text, without waiting for the task to agree;
/// - an abort ([`abort`](CallHandle::abort), [`AbortHandle`]) kills the task
///   and ends the call at once;
/// - a task that ended abnormally (the executor went away) gives the text of
///   [`exit_text`], which runs no code of the reason.
///
/// The clock only runs while the handle is polled: a loop that stops polling
/// a call stops noticing its deadline. Dropping an unfinished handle kills
/// the task (and tells the watch the call was aborted).
pub struct CallHandle<E: Executor> {
    executor: E,
    task: E::Handle<TaskOut>,
    /// The call's shared state, which also holds its id, the tool's name,
    /// the task id and the runner's watch.
    notice: Arc<Notice>,
    timeout: Duration,
    started: Instant,
    running_since: Option<Instant>,
    running_reported: bool,
    gate_wait_reported: bool,
    ended: bool,
    deadline: Option<E::Sleep>,
    /// The task's end, seen while an earlier event still had to be
    /// reported (only when events are read one by one). Boxed: it is rare,
    /// and the handle is part of every call in flight.
    joined: Option<Box<Joined<TaskOut>>>,
}

impl<E: Executor> CallHandle<E> {
    pub(crate) fn new(
        executor: E,
        task: E::Handle<TaskOut>,
        notice: Arc<Notice>,
        timeout: Duration,
    ) -> Self {
        Self {
            executor,
            task,
            notice,
            timeout,
            started: Instant::now(),
            running_since: None,
            running_reported: false,
            gate_wait_reported: false,
            deadline: None,
            joined: None,
            ended: false,
        }
    }

    /// The call's id.
    pub fn call_id(&self) -> &str {
        self.notice.call_id()
    }

    /// The tool's name.
    pub fn tool(&self) -> &str {
        self.notice.tool()
    }

    /// The task running the call.
    pub fn task(&self) -> TaskId {
        self.notice.task
    }

    /// The tool's timeout, counted from the running notice.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Whether the loop has seen the running notice (the clock runs).
    pub fn is_running(&self) -> bool {
        self.running_since.is_some()
    }

    /// Aborts the call: the next poll kills the task and ends the call with
    /// an "aborted" result. Does nothing once the call ended.
    pub fn abort(&self) {
        self.notice.request_abort();
    }

    /// A handle that can abort the call from elsewhere (another task, a UI
    /// thread) while this handle is being awaited.
    pub fn abort_handle(&self) -> AbortHandle {
        AbortHandle {
            notice: self.notice.clone(),
        }
    }

    /// The next thing the call reports, in this order: at most one
    /// [`CallEvent::AwaitingGate`], at most one [`CallEvent::Running`], any
    /// number of [`CallEvent::Update`]s, then exactly one
    /// [`CallEvent::Ended`]; `None` after that.
    pub async fn next_event(&mut self) -> Option<CallEvent> {
        std::future::poll_fn(|cx| self.poll_event(cx)).await
    }

    /// Polls for the next event; see [`next_event`](CallHandle::next_event).
    pub fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Option<CallEvent>> {
        self.poll_step(cx, true)
    }

    /// One step of the call. With `progress` false (awaiting the handle for
    /// its end only) the progress events are noted but not built, and
    /// partial results are dropped: no strings are cloned and nothing is
    /// queued for events nobody reads.
    fn poll_step(&mut self, cx: &mut Context<'_>, progress: bool) -> Poll<Option<CallEvent>> {
        if self.ended {
            return Poll::Ready(None);
        }
        let joined = match self.joined.take() {
            Some(joined) => Some(*joined),
            None => match Pin::new(&mut self.task).poll(cx) {
                Poll::Ready(joined) => Some(joined),
                Poll::Pending => None,
            },
        };
        let seen = self.notice.look(cx.waker());
        if seen.gate_waiting && !self.gate_wait_reported {
            self.gate_wait_reported = true;
            if progress {
                self.joined = joined.map(Box::new);
                return Poll::Ready(Some(CallEvent::AwaitingGate(
                    self.notice.call_id().to_owned(),
                )));
            }
        }
        if self.running_since.is_none() {
            if let Some(at) = seen.running_at {
                self.running_since = Some(at);
                if joined.is_none() {
                    // The clock counts from the notice itself, not from the
                    // moment this loop got round to looking.
                    let left = self.timeout.saturating_sub(at.elapsed());
                    self.deadline = Some(self.executor.sleep(left));
                }
            }
        }
        // A call that ran reports Running before anything else of its run,
        // even when it finished before the loop first looked.
        if let Some(since) = self.running_since {
            if !self.running_reported && progress {
                self.running_reported = true;
                self.joined = joined.map(Box::new);
                return Poll::Ready(Some(CallEvent::Running(Running {
                    call_id: self.notice.call_id().to_owned(),
                    tool: self.notice.tool().to_owned(),
                    task: self.notice.task,
                    waited: since.saturating_duration_since(self.started),
                })));
            }
        }
        if joined.is_none() {
            // The host and the clock come before partial results: a tool
            // that reports without pause must not outrun its deadline.
            if seen.abort {
                self.task.kill();
                let end = self.finish_exit(Outcome::Aborted, Exit::Aborted);
                return Poll::Ready(Some(CallEvent::Ended(end)));
            }
            if let Some(deadline) = &mut self.deadline {
                if Pin::new(deadline).poll(cx).is_ready() {
                    self.task.kill();
                    let end = self.finish_exit(Outcome::TimedOut, Exit::TimedOut(self.timeout));
                    return Poll::Ready(Some(CallEvent::Ended(end)));
                }
            }
        }
        if seen.has_update {
            if !progress {
                // Awaited for its end only: nobody will read partial
                // results, so stop queueing them (up to 256 per call).
                self.notice.close();
            } else if let Some((partial, dropped_before)) = self.notice.take_update() {
                self.joined = joined.map(Box::new);
                return Poll::Ready(Some(CallEvent::Update(Update {
                    call_id: self.notice.call_id().to_owned(),
                    partial,
                    dropped_before,
                })));
            }
        }
        if let Some(joined) = joined {
            return Poll::Ready(Some(CallEvent::Ended(self.finish_joined(joined))));
        }
        Poll::Pending
    }

    fn finish_joined(&mut self, joined: Joined<TaskOut>) -> CallEnd {
        let TaskOut {
            call_id,
            call_name,
            end,
        } = match joined {
            Joined::Done(out) => out,
            // Only this handle can kill the task, and it stops polling it
            // when it does; a third-party executor that kills on its own is
            // treated as an abort.
            Joined::Killed => return self.finish_exit(Outcome::Aborted, Exit::Aborted),
            Joined::Crashed => return self.finish_exit(Outcome::Crashed, Exit::Crashed),
            Joined::Lost => return self.finish_exit(Outcome::ExecutorGone, Exit::ExecutorGone),
        };
        let (outcome, result) = self.judge(end);
        self.finish_named(outcome, result, Some((call_id, call_name)))
    }

    /// The outcome and result of a task that ended on its own.
    fn judge(&self, end: TaskEnd) -> (Outcome, ToolResult) {
        match end {
            TaskEnd::Answered(result) => {
                let outcome = if result.is_error {
                    Outcome::Failed
                } else {
                    Outcome::Succeeded
                };
                (outcome, result)
            }
            TaskEnd::Unusable(reason) => (
                Outcome::Failed,
                ToolResult::error(format!(
                    "tool `{}` gave an unusable answer: {reason}",
                    self.notice.tool()
                )),
            ),
            TaskEnd::Refused(result) => (Outcome::Refused, result),
            TaskEnd::CrashReported(result) => (Outcome::Crashed, result),
            TaskEnd::Denied(reason) => (
                Outcome::Denied,
                ToolResult::error(format!(
                    "tool `{}` was not run: the gate denied it: {reason}",
                    self.notice.tool()
                )),
            ),
            TaskEnd::Panicked { phase, caught } => (
                Outcome::Crashed,
                ToolResult::error(panic_text_at(
                    self.notice.tool(),
                    phase,
                    caught.message.as_deref(),
                    caught.location.as_deref(),
                )),
            ),
        }
    }

    fn finish_exit(&mut self, outcome: Outcome, exit: Exit) -> CallEnd {
        let result = ToolResult::error(exit_text(self.notice.tool(), exit));
        self.finish_named(outcome, result, None)
    }

    /// Ends the call. `names` are the call's id and name as the task handed
    /// them back: taken over when they say the same as the notice (always
    /// for the id; for the name whenever the call named the tool that ran),
    /// copied from the notice otherwise, so the handle keeps its own for
    /// its accessors either way.
    fn finish_named(
        &mut self,
        outcome: Outcome,
        result: ToolResult,
        names: Option<(String, String)>,
    ) -> CallEnd {
        let (call_id, tool) = match names {
            // The id is the task's own copy of the one the notice was made
            // from: the same text, so it is taken as it is.
            Some((call_id, name)) => (call_id, take_if_same(name, self.notice.tool())),
            None => (
                self.notice.call_id().to_owned(),
                self.notice.tool().to_owned(),
            ),
        };
        self.ended = true;
        // Only a live tool context (or an abort handle) could still report
        // through the notice; when this handle holds the last pointer to
        // it there is nobody left to close it against.
        if Arc::strong_count(&self.notice) > 1 {
            self.notice.close();
        }
        self.deadline = None;
        let now = Instant::now();
        let (waited, ran) = match self.running_since {
            Some(since) => (
                since.saturating_duration_since(self.started),
                Some(now.saturating_duration_since(since)),
            ),
            None => (now.saturating_duration_since(self.started), None),
        };
        let end = CallEnd {
            call_id,
            tool,
            task: self.notice.task,
            outcome,
            result,
            waited,
            ran,
        };
        self.tell_watch(&end);
        end
    }

    fn tell_watch(&self, end: &CallEnd) {
        if let Some(watch) = &self.notice.parts.watch {
            let _ = call_contained(|| watch.ended(end));
        }
    }
}

/// `given` when it says the same as `ours`, a copy of `ours` otherwise.
fn take_if_same(given: String, ours: &str) -> String {
    if given == ours {
        given
    } else {
        ours.to_owned()
    }
}

// No field is ever pinned in place: the task handle and the sleep are
// `Unpin` by contract, so the executor value itself need not be `Unpin`.
impl<E: Executor> Unpin for CallHandle<E> {}

impl<E: Executor> Future for CallHandle<E> {
    type Output = CallEnd;

    /// Resolves once to the call's end. Polling again after that stays
    /// pending: a call never ends twice.
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<CallEnd> {
        let this = self.get_mut();
        match this.poll_step(cx, false) {
            Poll::Ready(Some(CallEvent::Ended(end))) => Poll::Ready(end),
            // Without progress events the only event is the end.
            Poll::Ready(Some(_) | None) | Poll::Pending => Poll::Pending,
        }
    }
}

impl<E: Executor> Drop for CallHandle<E> {
    fn drop(&mut self) {
        if !self.ended {
            self.notice.close();
            self.task.kill();
            if self.notice.parts.watch.is_some() {
                let end = self.finish_exit(Outcome::Aborted, Exit::Aborted);
                drop(end);
            }
        }
    }
}

impl<E: Executor> fmt::Debug for CallHandle<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallHandle")
            .field("call_id", &self.notice.call_id())
            .field("tool", &self.notice.tool())
            .field("task", &self.notice.task)
            .field("timeout", &self.timeout)
            .field("running", &self.running_since.is_some())
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

/// Aborts one call from anywhere; cheap to clone.
#[derive(Clone)]
pub struct AbortHandle {
    notice: Arc<Notice>,
}

impl AbortHandle {
    /// Asks the call to end as aborted: the loop kills its task the next
    /// time it polls the call (it is woken for that). Idempotent.
    pub fn abort(&self) {
        self.notice.request_abort();
    }
}

impl fmt::Debug for AbortHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AbortHandle").finish_non_exhaustive()
    }
}
