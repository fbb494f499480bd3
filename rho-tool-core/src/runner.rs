//! Starting a call: one task per call, gate first, then the tool.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rho_untrusted::{Caught, Limits, Phase, call_contained};

use crate::allowance::Allowances;
use crate::call::{TaskId, ToolCall};
use crate::contain::Contained;
use crate::executor::Executor;
use crate::gate::{AllowAll, ApprovalRequest, Approver, Gate, Verdict};
use crate::handle::CallHandle;
use crate::notice::{Beside, Names, Notice};
use crate::result::ToolResult;
use crate::shared::IntoShared;
use crate::start::{Start, What};
use crate::tool::{ClockPause, ExecutorTimer, Timer, Tool, ToolContext};
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

/// A task's end, with the call's id and name handed back: the loop moves
/// them into the [`CallEnd`](crate::CallEnd) rather than copying its own.
#[derive(Debug)]
pub(crate) struct TaskOut {
    pub(crate) call_id: String,
    pub(crate) call_name: String,
    pub(crate) end: TaskEnd,
}

/// What every call of one runner shares: the gate, the watch, the answer
/// limits and the timer, in one allocation per runner, so each call holds
/// one pointer to them (through its [`Notice`]) instead of four.
#[derive(Clone)]
pub(crate) struct Parts {
    pub(crate) gate: Arc<dyn Gate>,
    /// Who decides a call the gate asks about; without one, such a call
    /// is denied.
    pub(crate) approver: Option<Arc<dyn Approver>>,
    pub(crate) watch: Option<Arc<dyn Watch>>,
    pub(crate) limits: Limits,
    pub(crate) timer: Arc<dyn Timer>,
    /// The most a call's own pauses may move its deadline.
    pub(crate) max_clock_pause: Duration,
    /// How long the approver has to answer, if the host bounds it.
    pub(crate) approval_deadline: Option<Duration>,
    /// What approvers asked to be remembered; checked before asking.
    pub(crate) allowances: Allowances,
}

/// Starts calls on an executor, with a gate, a watch and answer limits.
///
/// Cheap to clone; clones share the gate and the watch.
///
/// ```
/// # async fn demo<E: rho::Executor>(executor: E, tool: std::sync::Arc<dyn rho::Tool>) {
/// use rho::{Runner, ToolCall};
///
/// let runner = Runner::new(executor);
/// let end = runner.start(ToolCall::new("call-1", "echo", serde_json::json!({"text": "hi"})), tool).await;
/// println!("{}: {}", end.outcome, end.result.text());
/// # }
/// ```
#[derive(Clone)]
pub struct Runner<E> {
    executor: E,
    parts: Arc<Parts>,
}

impl<E: fmt::Debug> fmt::Debug for Runner<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runner")
            .field("executor", &self.executor)
            .field("approver", &self.parts.approver.is_some())
            .field("watch", &self.parts.watch.is_some())
            .field("limits", &self.parts.limits)
            .field("max_clock_pause", &self.parts.max_clock_pause)
            .field("allowances", &self.parts.allowances)
            .finish_non_exhaustive()
    }
}

impl<E: Executor> Runner<E> {
    /// A runner on `executor` with the default gate ([`AllowAll`]), no watch
    /// and the default [`Limits`].
    pub fn new(executor: E) -> Self {
        Self {
            parts: Arc::new(Parts {
                gate: Arc::new(AllowAll),
                approver: None,
                watch: None,
                limits: Limits::default(),
                timer: Arc::new(ExecutorTimer(executor.clone())),
                max_clock_pause: ClockPause::DEFAULT_MAX,
                approval_deadline: None,
                allowances: Allowances::new(),
            }),
            executor,
        }
    }

    /// Uses `gate` for every call: a value, or an `Arc` of one the host
    /// keeps (see [`IntoShared`](crate::IntoShared)).
    pub fn with_gate(mut self, gate: impl IntoShared<dyn Gate>) -> Self {
        Arc::make_mut(&mut self.parts).gate = gate.into_shared();
        self
    }

    /// Asks `approver` about every call the gate answers
    /// [`Verdict::Ask`] about, in the call's task, before any clock runs.
    /// Without one, such a call is denied with a text that says no
    /// approver is set. A closure will do (see [`Approver`]), as will an
    /// `Arc` of one the host keeps.
    pub fn with_approver(mut self, approver: impl IntoShared<dyn Approver>) -> Self {
        Arc::make_mut(&mut self.parts).approver = Some(approver.into_shared());
        self
    }

    /// Gives the approver at most `deadline` to answer each call it is
    /// asked about (default: no deadline). A call nobody answered in time
    /// is denied, fail-closed, with a text that says so: it ends as
    /// [`Outcome::Denied`](crate::Outcome::Denied), which never counts
    /// against the tool. The deadline bounds the approver only; a
    /// [`Gate`] that waits by itself is its own business.
    pub fn with_approval_deadline(mut self, deadline: Duration) -> Self {
        Arc::make_mut(&mut self.parts).approval_deadline = Some(deadline);
        self
    }

    /// Keeps what approvers ask to be remembered
    /// ([`Verdict::Remember`]) in `allowances`, and allows without asking
    /// a call one of them covers (default: a store of its own, empty).
    /// Clones of the store share it: keep one to list and revoke.
    pub fn with_allowances(mut self, allowances: Allowances) -> Self {
        Arc::make_mut(&mut self.parts).allowances = allowances;
        self
    }

    /// The allowances it keeps and checks, shared with its clones.
    pub fn allowances(&self) -> &Allowances {
        &self.parts.allowances
    }

    /// Tells `watch` of every call's task and how it ended.
    pub fn with_watch(mut self, watch: impl IntoShared<dyn Watch>) -> Self {
        Arc::make_mut(&mut self.parts).watch = Some(watch.into_shared());
        self
    }

    /// Bounds how far a call's own pauses of its clock
    /// ([`ToolContext::pause_clock`](crate::ToolContext::pause_clock)) may
    /// move its deadline, in all (default [`ClockPause::DEFAULT_MAX`]): a
    /// tool that pauses for ever still ends at its timeout plus this.
    pub fn with_max_clock_pause(mut self, most: Duration) -> Self {
        Arc::make_mut(&mut self.parts).max_clock_pause = most;
        self
    }

    /// Makes answers' details plain data under `limits`.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        Arc::make_mut(&mut self.parts).limits = limits;
        self
    }

    /// The executor calls run on.
    pub fn executor(&self) -> &E {
        &self.executor
    }

    /// Starts `call` as one task; await the handle for its end.
    ///
    /// `start` is what the call starts with ([`Start`]): a tool
    /// (`runner.start(call, tool)`), a tool with its source as the call's
    /// own watch (a registry's look-up converts into that), or a refusal
    /// that ends the call at once. Every call starts this one way, so a
    /// host's loop awaits one kind of handle whatever happened.
    ///
    /// Returns at once: the gate and the tool run in the task. The watches
    /// (the runner's and the call's own) are told the task before it is
    /// spawned. The tool's metadata ([`Tool::name`], [`Tool::timeout`]) is
    /// read here, in the loop; if reading it panics, the call ends as
    /// crashed without running.
    pub fn start(&self, call: ToolCall, start: impl Into<Start>) -> CallHandle<E> {
        let Start {
            what,
            watch,
            extensions,
            waits,
        } = start.into();
        let beside = Beside {
            watch,
            extensions,
            waits,
        };
        match what {
            What::Tool(tool) => self.run(call, tool, beside),
            What::Refused(result) => self.refuse(call, result, beside),
        }
    }

    /// A call that ends at once, refused with `result`, without a gate or
    /// a tool ([`Start::refused`]). It ends with
    /// [`Outcome::Refused`](crate::Outcome::Refused) through the same
    /// [`CallHandle`] as every other call.
    fn refuse(&self, call: ToolCall, result: ToolResult, beside: Beside) -> CallHandle<E> {
        let started = Instant::now();
        let task = TaskId::next();
        let notice = Notice::new(
            task,
            self.parts.clone(),
            Names::new(&call.id, &call.name),
            beside,
        );
        tell_started(&notice, &call);
        let handle = self.executor.spawn(std::future::ready(TaskOut {
            call_id: call.id,
            call_name: call.name,
            end: TaskEnd::Refused(result),
        }));
        CallHandle::new(
            self.executor.clone(),
            handle,
            Arc::new(notice),
            std::time::Duration::ZERO,
            started,
        )
    }

    /// A call of `tool`: the gate, then the tool, in one task.
    fn run(&self, call: ToolCall, tool: Arc<dyn Tool>, beside: Beside) -> CallHandle<E> {
        // Before the spawn: on a multi-threaded executor the task may reach
        // its gate before this thread makes the handle, and `waited` must
        // hold all of the gate's wait.
        let started = Instant::now();
        let task = TaskId::next();
        let metadata = call_contained(|| (Names::new(&call.id, tool.name()), tool.timeout()));
        let parts = self.parts.clone();
        let (notice, timeout, handle) = match metadata {
            Ok((names, timeout)) => {
                let notice = Arc::new(Notice::new(task, parts, names, beside));
                tell_started(&notice, &call);
                let body = run_call(Box::new(call), tool, notice.clone());
                (notice, timeout, self.executor.spawn(body))
            }
            Err(caught) => {
                // Still a task, so the end reaches the loop the one way all
                // ends do.
                let names = Names::new(&call.id, &call.name);
                let notice = Arc::new(Notice::new(task, parts, names, beside));
                tell_started(&notice, &call);
                let end = TaskOut {
                    call_id: call.id,
                    call_name: call.name,
                    end: TaskEnd::Panicked {
                        phase: Phase::Tool,
                        caught,
                    },
                };
                let handle = self.executor.spawn(std::future::ready(end));
                (notice, std::time::Duration::ZERO, handle)
            }
        };
        CallHandle::new(self.executor.clone(), handle, notice, timeout, started)
    }
}

impl<E: Executor> From<E> for Runner<E> {
    /// A runner on the executor, as [`Runner::new`] makes it.
    fn from(executor: E) -> Self {
        Self::new(executor)
    }
}

/// Tells the call's watches that it is about to run in its task.
fn tell_started(notice: &Notice, call: &ToolCall) {
    for watch in notice.watches() {
        let _ = call_contained(|| watch.started(call, notice.task));
    }
}

/// The body of a call's task. Only rho's code runs here unguarded: every
/// foreign future is polled and dropped through [`Contained`], and the
/// answer is made plain data before the task ends.
///
/// A plain `fn` returning an `async move` block, which keeps in the task's
/// state only what it captures (the call, the tool and one pointer to the
/// call's [`Notice`]) plus the one foreign future in flight. Every byte
/// here is a byte of every call in flight: with the executor's own task
/// header, this state fits a 256-byte tokio task. The call is boxed: it
/// is alive across every await (the gate reads it, the end names it), and
/// inline its fields (a model API's `malformed` and `caller` among them)
/// would push every call's task into the next size class.
#[allow(clippy::manual_async_fn)] // on purpose: see above
fn run_call(
    mut call: Box<ToolCall>,
    tool: Arc<dyn Tool>,
    notice: Arc<Notice>,
) -> impl Future<Output = TaskOut> + Send + 'static {
    async move {
        let end = 'call: {
            let gating = Gating {
                check: Contained::start(|| notice.parts.gate.check(&call, tool.as_ref())),
                notice: &notice,
            };
            // Matched without a binding, so the verdict is not kept in the
            // task's state across the awaits that follow.
            {
                let asking = match gating.await {
                    Ok(Verdict::Allow) => None,
                    Ok(Verdict::Remember(allowance)) => {
                        if let Err(caught) = remember(allowance, tool.as_ref(), &notice) {
                            break 'call TaskEnd::Panicked {
                                phase: Phase::Gate,
                                caught: *caught,
                            };
                        }
                        None
                    }
                    Ok(Verdict::Deny { reason }) => break 'call TaskEnd::Denied(reason),
                    // Boxed: asking someone is the rare path, and its state
                    // (the request) would otherwise be part of every call's
                    // task. Awaited after the match, so that the match's
                    // verdict is not kept across that await either.
                    Ok(Verdict::Ask { reason }) => {
                        Some(Box::pin(ask(&call, tool.as_ref(), &notice, reason)))
                    }
                    Err(caught) => {
                        break 'call TaskEnd::Panicked {
                            phase: Phase::Gate,
                            caught: *caught,
                        };
                    }
                };
                if let Some(asking) = asking {
                    let refused = asking.await;
                    if let Some(refused) = refused {
                        break 'call refused;
                    }
                }
            }
            // The call's place (the model's order, room under a bound),
            // after the gate so that a person is asked at once, and before
            // the running notice so that no clock runs meanwhile. Boxed
            // like asking: most calls wait for nothing.
            if notice.has_waits() {
                if let Some(refused) = Box::pin(wait_for_place(&notice)).await {
                    break 'call TaskEnd::Refused(refused);
                }
            }
            if notice.set_running() {
                // Let the loop take the notice before the tool runs. The
                // notice woke the loop from inside this task, and a runtime
                // may queue a task woken that way right behind this one on
                // this thread only (tokio's LIFO slot): a tool that then
                // never yields would keep the loop from ever starting its
                // clock. A loop that was not waiting was not woken, and
                // nothing queues it here. Whether to give way is the
                // executor's to say (`Executor::HOLDS_WOKEN_TASKS`).
                GiveWay {
                    yielded: false,
                    notice: &notice,
                }
                .await;
            }

            // Taking the arguments leaves a `Null`, which allocates nothing.
            let arguments = std::mem::take(&mut call.arguments);
            let running =
                Contained::start(|| tool.run(arguments, ToolContext::new(notice.clone())));
            let output = running.await;
            // The tool is done: what its place gave (a permit) goes now,
            // not when the loop gets round to the end.
            notice.release_held();
            let output = match output {
                Ok(output) => output,
                Err(caught) => {
                    break 'call TaskEnd::Panicked {
                        phase: Phase::Tool,
                        caught: *caught,
                    };
                }
            };
            let crashed = output.is_crash();
            match output.to_result(&notice.parts.limits) {
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
        };
        TaskOut {
            call_id: call.id,
            call_name: call.name,
            end,
        }
    }
}

/// Puts a call the gate asked about to the runner's approver: `None` when
/// it allows the call, else how the call ends. Still the gate's phase: a
/// panic here (the tool's annotations, the approver) is the gate's.
async fn ask(call: &ToolCall, tool: &dyn Tool, notice: &Notice, reason: String) -> Option<TaskEnd> {
    let (name, annotations, untrusted) = match facts(tool) {
        Ok(facts) => facts,
        Err(caught) => {
            return Some(TaskEnd::Panicked {
                phase: Phase::Gate,
                caught,
            });
        }
    };
    // A question answered before: asked of nobody, and not dependent on
    // there being anyone to ask.
    // An untrusted tool's hints are its own claims, read as absent.
    let believed = annotations.believed(!untrusted);
    let allowances = &notice.parts.allowances;
    if allowances
        .covering(&name, &call.arguments, &believed)
        .is_some()
    {
        return None;
    }
    let Some(approver) = &notice.parts.approver else {
        return Some(TaskEnd::Denied(format!(
            "it needs approval ({reason}) and no approver is set"
        )));
    };
    let request = ApprovalRequest {
        call_id: call.id.clone(),
        tool: name.clone(),
        arguments: call.arguments.clone(),
        annotations,
        untrusted,
        reason,
    };
    let approving = Gating {
        check: Contained::start(|| approver.approve(request)),
        notice,
    };
    let answer = match notice.parts.approval_deadline {
        None => approving.await,
        Some(deadline) => {
            let mut approving = std::pin::pin!(approving);
            let mut expiry = notice.parts.timer.sleep(deadline);
            let answer = std::future::poll_fn(|cx| {
                if let std::task::Poll::Ready(answer) = approving.as_mut().poll(cx) {
                    return std::task::Poll::Ready(Some(answer));
                }
                expiry.as_mut().poll(cx).map(|()| None)
            })
            .await;
            match answer {
                Some(answer) => answer,
                // Fail-closed: nobody said yes in time. The approver's
                // future goes with `approving`, contained.
                None => {
                    return Some(TaskEnd::Denied(format!(
                        "not approved: nobody answered within {deadline:?}"
                    )));
                }
            }
        }
    };
    match answer {
        Ok(Verdict::Allow) => None,
        Ok(Verdict::Remember(allowance)) => {
            allowances.remember(allowance, &name, &believed);
            None
        }
        Ok(Verdict::Deny { reason }) => Some(TaskEnd::Denied(format!("not approved: {reason}"))),
        Ok(Verdict::Ask { reason }) => Some(TaskEnd::Denied(format!(
            "not approved: the approver asked again instead of deciding ({reason})"
        ))),
        Err(caught) => Some(TaskEnd::Panicked {
            phase: Phase::Gate,
            caught: *caught,
        }),
    }
}

/// The tool's name, annotations and trust, read in the gate's phase.
fn facts(tool: &dyn Tool) -> Result<(String, crate::ToolAnnotations, bool), Caught> {
    call_contained(|| {
        (
            tool.name().to_owned(),
            tool.annotations(),
            tool.is_untrusted(),
        )
    })
}

/// Keeps an allowance a gate answered with, if it could cover the tool.
fn remember(
    allowance: crate::Allowance,
    tool: &dyn Tool,
    notice: &Notice,
) -> Result<(), Box<Caught>> {
    let (name, annotations, untrusted) = facts(tool).map_err(Box::new)?;
    notice
        .parts
        .allowances
        .remember(allowance, &name, &annotations.believed(!untrusted));
    Ok(())
}

/// Waits for each of the call's waits in turn, telling the loop of each
/// one that does not answer at once; keeps what they give in the notice.
/// `Some(result)` when one refused the call.
async fn wait_for_place(notice: &Notice) -> Option<ToolResult> {
    for wait in notice.take_waits() {
        let crate::queue::Wait {
            waiting_for,
            mut until,
        } = wait;
        let mut untold = Some(waiting_for);
        let answer = std::future::poll_fn(|cx| {
            let polled = until.as_mut().poll(cx);
            if polled.is_pending() {
                if let Some(waiting_for) = untold.take() {
                    notice.set_queued(waiting_for);
                }
            }
            polled
        })
        .await;
        match answer {
            Ok(held) => notice.hold(held),
            Err(refused) => return Some(refused),
        }
    }
    None
}

/// The gate's check, telling the loop when it does not answer at once
/// (someone is being asked).
struct Gating<'a, F> {
    check: Contained<F>,
    notice: &'a Notice,
}

impl<F: Future + Unpin> Future for Gating<'_, F> {
    type Output = Result<F::Output, Box<Caught>>;

    fn poll(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let polled = Pin::new(&mut self.check).poll(cx);
        if polled.is_pending() {
            self.notice.set_gate_waiting();
        }
        polled
    }
}

/// Gives way once, when the executor may hold the woken loop behind this
/// task ([`Executor::HOLDS_WOKEN_TASKS`]).
struct GiveWay<'a> {
    yielded: bool,
    notice: &'a Notice,
}

impl Future for GiveWay<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        let this = &mut *self;
        this.notice.parts.timer.poll_give_way(&mut this.yielded, cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::ToolOutput;

    struct Idle;

    #[async_trait::async_trait]
    impl Tool for Idle {
        fn name(&self) -> &str {
            "idle"
        }

        fn description(&self) -> &str {
            "Does nothing."
        }

        async fn run(&self, _arguments: serde_json::Value, _context: ToolContext) -> ToolOutput {
            ToolOutput::text("")
        }
    }

    struct NoTimer;

    impl Timer for NoTimer {
        fn sleep(
            &self,
            _duration: std::time::Duration,
        ) -> Pin<Box<dyn Future<Output = ()> + Send + 'static>> {
            Box::pin(std::future::pending())
        }

        fn poll_give_way(
            &self,
            _yielded: &mut bool,
            _cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<()> {
            std::task::Poll::Ready(())
        }
    }

    /// A call's task state stays within 152 bytes: with tokio's task header
    /// and trailer (104 bytes on 64-bit targets) that is one 256-byte task,
    /// where a few bytes more make it a 384-byte one (tokio aligns tasks to
    /// 128 bytes). A local kept alive across an await by mistake shows here
    /// first.
    #[test]
    fn a_calls_task_state_fits_in_152_bytes() {
        let parts = Arc::new(Parts {
            gate: Arc::new(AllowAll),
            approver: None,
            watch: None,
            limits: Limits::default(),
            timer: Arc::new(NoTimer),
            max_clock_pause: ClockPause::DEFAULT_MAX,
            approval_deadline: None,
            allowances: Allowances::new(),
        });
        let call = ToolCall::new("call-1", "idle", serde_json::Value::Null);
        let notice = Notice::new(
            TaskId::next(),
            parts,
            Names::new(&call.id, &call.name),
            Beside::default(),
        );
        let body = run_call(Box::new(call), Arc::new(Idle), Arc::new(notice));
        let size = std::mem::size_of_val(&body);
        assert!(size <= 152, "the task state grew to {size} bytes");
    }
}
