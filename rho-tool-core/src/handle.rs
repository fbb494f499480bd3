//! The loop side of a call: running notice, timeout clock, kill, result.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use rho_untrusted::{Exit, call_contained, exit_text, panic_text_at};

use crate::call::TaskId;
use crate::end::{AwaitingApproval, CallEnd, CallEvent, Outcome, Queued, Running, Update};
use crate::executor::{Executor, Joined, TaskHandle};
use crate::notice::{Notice, Paused, Seen};
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
    /// the task id and the watches.
    notice: Arc<Notice>,
    timeout: Duration,
    /// When the loop started the call, before its task was spawned: the
    /// task may run (its gate start waiting) before the handle is made.
    started: Instant,
    stage: Stage<E::Sleep>,
    /// The task's end, once taken while events before it were still due
    /// (a running notice, partial results): reported after them. Boxed: it
    /// is rare, and a handle is part of every call in flight.
    joined: Option<Box<Joined<TaskOut>>>,
}

/// The deadline's timer, and the time from the running notice it was
/// made for.
struct Armed<S> {
    budget: Duration,
    timer: S,
}

/// Where a call is, as the loop has seen and reported it.
///
/// A call moves forward only: `Gating`, perhaps `AwaitingApproval`, perhaps
/// `Queued` (once per wait the loop reports), then `Allowed` and `Running`
/// once its place came, then `Ended`. Read for its end only (the handle
/// awaited as a future), a call reports nothing on the way and skips the
/// stages that exist to report something (`AwaitingApproval`, `Queued`,
/// `Allowed`). The task may end at any stage; what it told before its end
/// is still reported first.
enum Stage<S> {
    /// The gate has not allowed the call: no clock runs.
    Gating,
    /// The gate is waiting, and the loop has reported so.
    AwaitingApproval,
    /// The gate allowed the call and it waits for its place; the loop has
    /// reported `reported` of its waits that did not answer at once. No
    /// clock runs.
    Queued { reported: u32 },
    /// The gate allowed the call at `since`, and the loop has not reported
    /// it yet; the clock counts from `since`.
    Allowed { since: Instant },
    /// The loop reported that the call runs; the clock counts from `since`.
    /// The deadline's timer is made when the clock is first checked with
    /// the task still running (a task that already ended needs none), and
    /// made again when the tool's pauses move the deadline.
    Running {
        since: Instant,
        deadline: Option<Armed<S>>,
    },
    /// The loop has the call's end.
    Ended,
}

impl<S> Stage<S> {
    /// When the gate allowed the call, if it has (as the loop saw it).
    fn since(&self) -> Option<Instant> {
        match self {
            Stage::Allowed { since } | Stage::Running { since, .. } => Some(*since),
            Stage::Gating | Stage::AwaitingApproval | Stage::Queued { .. } | Stage::Ended => None,
        }
    }
}

/// Who reads a call: the loop taking its events one by one, or the loop
/// awaiting its end only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reader {
    /// Every event is built and reported, partial results included.
    Events,
    /// Only the end: progress is noted but not built, and partial results
    /// are not queued, so nothing is cloned or kept for events nobody reads.
    EndOnly,
}

impl<E: Executor> CallHandle<E> {
    pub(crate) fn new(
        executor: E,
        task: E::Handle<TaskOut>,
        notice: Arc<Notice>,
        timeout: Duration,
        started: Instant,
    ) -> Self {
        Self {
            executor,
            task,
            notice,
            timeout,
            started,
            stage: Stage::Gating,
            joined: None,
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
        self.stage.since().is_some()
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
    /// [`CallEvent::AwaitingApproval`], any number of [`CallEvent::Queued`]s
    /// (one per wait the loop sees pending: a wait that is over before the
    /// loop looks may go unreported), at most one [`CallEvent::Running`],
    /// any number of [`CallEvent::Update`]s, then exactly one
    /// [`CallEvent::Ended`]; `None` after that.
    pub async fn next_event(&mut self) -> Option<CallEvent> {
        std::future::poll_fn(|cx| self.poll_event(cx)).await
    }

    /// Polls for the next event; see [`next_event`](CallHandle::next_event).
    pub fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Option<CallEvent>> {
        self.poll_step(cx, Reader::Events)
    }

    /// One step of the call for `reader`: the next event, or pending.
    fn poll_step(&mut self, cx: &mut Context<'_>, reader: Reader) -> Poll<Option<CallEvent>> {
        if let Stage::Ended = self.stage {
            return Poll::Ready(None);
        }
        let seen = self.notice.look(cx.waker());
        if let Some(event) = self.advance(&seen, reader) {
            return Poll::Ready(Some(event));
        }
        let joined = match self.joined.take() {
            Some(joined) => Poll::Ready(*joined),
            None => Pin::new(&mut self.task).poll(cx),
        };
        if let Poll::Ready(joined) = joined {
            // On a multi-threaded executor the task may have sent its
            // running notice (and partial results) after the look above,
            // then ended: look again, since everything the task told comes
            // before its end, and report that first.
            let seen = self.notice.look(cx.waker());
            let due = match self.advance(&seen, reader) {
                Some(event) => Some(event),
                None if reader == Reader::Events && seen.has_update => self.take_update(),
                None => None,
            };
            if let Some(event) = due {
                self.joined = Some(Box::new(joined));
                return Poll::Ready(Some(event));
            }
            let since = self.stage.since();
            return Poll::Ready(Some(CallEvent::Ended(self.finish_joined(joined, since))));
        }
        // The host and the clock come before partial results: a tool that
        // reports without pause must not outrun its deadline.
        if seen.abort {
            self.task.kill();
            let end = self.finish_exit(Outcome::Aborted, Exit::Aborted);
            return Poll::Ready(Some(CallEvent::Ended(end)));
        }
        if self.deadline_passed(seen.paused, cx) {
            self.task.kill();
            let end = self.finish_exit(Outcome::TimedOut, Exit::TimedOut(self.timeout));
            return Poll::Ready(Some(CallEvent::Ended(end)));
        }
        if seen.has_update {
            match reader {
                // Nobody will read partial results: stop queueing them (up
                // to 256 per call).
                Reader::EndOnly => self.notice.close(),
                Reader::Events => {
                    if let Some(event) = self.take_update() {
                        return Poll::Ready(Some(event));
                    }
                }
            }
        }
        Poll::Pending
    }

    /// Moves through the gate's stages as `seen` says; returns the event to
    /// report, if one is due. A call that ran reports `Running` before
    /// anything else of its run, even when it finished before the loop
    /// first looked.
    fn advance(&mut self, seen: &Seen, reader: Reader) -> Option<CallEvent> {
        if let Stage::Gating = self.stage {
            if seen.gate_waiting && reader == Reader::Events {
                // Reported first, once, even when the gate has allowed by
                // now: the running notice follows at the next step.
                self.stage = Stage::AwaitingApproval;
                return Some(CallEvent::AwaitingApproval(AwaitingApproval {
                    call_id: self.notice.call_id().to_owned(),
                    tool: self.notice.tool().to_owned(),
                    task: self.notice.task,
                }));
            }
        }
        if reader == Reader::Events && seen.queued > 0 {
            let reported = match self.stage {
                Stage::Gating | Stage::AwaitingApproval => Some(0),
                Stage::Queued { reported } => Some(reported),
                Stage::Allowed { .. } | Stage::Running { .. } | Stage::Ended => None,
            };
            if reported.is_some_and(|reported| reported < seen.queued) {
                // Reported before the running notice, even when the place
                // has come by now, as the approval is.
                self.stage = Stage::Queued {
                    reported: seen.queued,
                };
                if let Some(waiting_for) = self.notice.waiting_for() {
                    return Some(CallEvent::Queued(Queued {
                        call_id: self.notice.call_id().to_owned(),
                        tool: self.notice.tool().to_owned(),
                        task: self.notice.task,
                        waiting_for,
                    }));
                }
            }
        }
        if let (Stage::Gating | Stage::AwaitingApproval | Stage::Queued { .. }, Some(since)) =
            (&self.stage, seen.running_at)
        {
            self.stage = match reader {
                Reader::Events => Stage::Allowed { since },
                Reader::EndOnly => Stage::Running {
                    since,
                    deadline: None,
                },
            };
        }
        if let Stage::Allowed { since } = self.stage {
            self.stage = Stage::Running {
                since,
                deadline: None,
            };
            let allowed = self.notice.allowed_at().unwrap_or(since);
            return Some(CallEvent::Running(Running {
                call_id: self.notice.call_id().to_owned(),
                tool: self.notice.tool().to_owned(),
                task: self.notice.task,
                waited: allowed.saturating_duration_since(self.started),
                queued: since.saturating_duration_since(allowed),
            }));
        }
        None
    }

    fn take_update(&self) -> Option<CallEvent> {
        let (partial, dropped_before) = self.notice.take_update()?;
        Some(CallEvent::Update(Update {
            call_id: self.notice.call_id().to_owned(),
            tool: self.notice.tool().to_owned(),
            task: self.notice.task,
            partial,
            dropped_before,
        }))
    }

    /// Whether the clock ran out, checked while the task is still running.
    /// The deadline's timer is made at the first check, for what is left of
    /// the timeout counted from the notice itself (not from the moment this
    /// loop got round to looking).
    ///
    /// The tool's pauses of its clock move the deadline by the time they
    /// held, up to the runner's most; while one is held the deadline is the
    /// latest that most allows, and the pause's end (which wakes the loop)
    /// brings it back to the time actually held.
    fn deadline_passed(&mut self, paused: Paused, cx: &mut Context<'_>) -> bool {
        let Stage::Running { since, deadline } = &mut self.stage else {
            return false;
        };
        let max_pause = self.notice.parts.max_clock_pause;
        let moved = if paused.held {
            max_pause
        } else {
            paused.total.min(max_pause)
        };
        // Counted as a time from `since`, not as an instant: the longest
        // timeouts have no instant.
        let budget = self.timeout.saturating_add(moved);
        let armed = match deadline {
            Some(armed) if armed.budget == budget => armed,
            _ => deadline.insert(Armed {
                budget,
                timer: self.executor.sleep(budget.saturating_sub(since.elapsed())),
            }),
        };
        Pin::new(&mut armed.timer).poll(cx).is_ready()
    }

    /// Ends the call with the task's end; `since` is when the gate allowed
    /// it, as the loop saw it.
    fn finish_joined(&mut self, joined: Joined<TaskOut>, since: Option<Instant>) -> CallEnd {
        let TaskOut {
            call_id,
            call_name,
            end,
        } = match joined {
            Joined::Done(out) => out,
            // Only this handle can kill the task, and it stops polling it
            // when it does; a third-party executor that kills on its own is
            // treated as an abort.
            Joined::Killed => return self.finish_exit_at(Outcome::Aborted, Exit::Aborted, since),
            Joined::Crashed => return self.finish_exit_at(Outcome::Crashed, Exit::Crashed, since),
            Joined::Lost => {
                return self.finish_exit_at(Outcome::ExecutorGone, Exit::ExecutorGone, since);
            }
        };
        let (outcome, result) = self.judge(end);
        self.finish(outcome, result, Some((call_id, call_name)), since)
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

    /// Ends the call the loop's way (an abort, a timeout): the task's own
    /// end, if it comes, is never read.
    fn finish_exit(&mut self, outcome: Outcome, why: Exit) -> CallEnd {
        self.finish_exit_at(outcome, why, self.stage.since())
    }

    /// Ends the call with `exit_text`'s text, which runs no code of the
    /// reason.
    fn finish_exit_at(&mut self, outcome: Outcome, why: Exit, since: Option<Instant>) -> CallEnd {
        let result = ToolResult::error(exit_text(self.notice.tool(), why));
        self.finish(outcome, result, None, since)
    }

    /// Ends the call. `names` are the call's id and name as the task handed
    /// them back: taken over when they say the same as the notice (always
    /// for the id; for the name whenever the call named the tool that ran),
    /// copied from the notice otherwise, so the handle keeps its own for
    /// its accessors either way.
    fn finish(
        &mut self,
        outcome: Outcome,
        result: ToolResult,
        names: Option<(String, String)>,
        since: Option<Instant>,
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
        self.stage = Stage::Ended;
        // Only a live tool context (or an abort handle) could still report
        // through the notice; when this handle holds the last pointer to
        // it there is nobody left to close it against.
        if Arc::strong_count(&self.notice) > 1 {
            self.notice.close();
        }
        // What the call's place gave (a permit) goes with the end, even
        // when the task is still stuck in a tool that never yields.
        self.notice.release_held();
        let now = Instant::now();
        // The gate's wait ends when it allowed the call; the wait for the
        // place then runs until the tool started (or the call ended).
        let allowed = self.notice.allowed_at();
        let (waited, queued, ran) = match (since, allowed) {
            (Some(since), allowed) => {
                let allowed = allowed.unwrap_or(since);
                (
                    allowed.saturating_duration_since(self.started),
                    since.saturating_duration_since(allowed),
                    Some(now.saturating_duration_since(since)),
                )
            }
            (None, Some(allowed)) => (
                allowed.saturating_duration_since(self.started),
                now.saturating_duration_since(allowed),
                None,
            ),
            (None, None) => (
                now.saturating_duration_since(self.started),
                Duration::ZERO,
                None,
            ),
        };
        let end = CallEnd {
            call_id,
            tool,
            task: self.notice.task,
            outcome,
            result,
            waited,
            queued,
            ran,
        };
        for watch in self.notice.watches() {
            let _ = call_contained(|| watch.ended(&end));
        }
        end
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
        match this.poll_step(cx, Reader::EndOnly) {
            Poll::Ready(Some(CallEvent::Ended(end))) => Poll::Ready(end),
            // Without progress events the only event is the end.
            Poll::Ready(Some(_) | None) | Poll::Pending => Poll::Pending,
        }
    }
}

impl<E: Executor> Drop for CallHandle<E> {
    fn drop(&mut self) {
        if !matches!(self.stage, Stage::Ended) {
            self.notice.close();
            self.task.kill();
            self.notice.release_held();
            if self.notice.is_watched() {
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
            .field("running", &self.is_running())
            .field("ended", &matches!(self.stage, Stage::Ended))
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
