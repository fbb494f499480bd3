//! The `Tool` trait: what the model can call.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use rho_untrusted::{Limits, Plain, PlainError, plain};
use serde::Serialize;

use crate::annotations::ToolAnnotations;
use crate::call::TaskId;
use crate::concurrency::Concurrency;
use crate::executor::Executor;
use crate::extensions::Extensions;
use crate::output::ToolOutput;

/// What a running tool reaches of its call, through its [`ToolContext`]:
/// the loop side of the call implements it (its notice).
///
/// A trait here, rather than the notice's type, so that the tool's side of
/// the contract imports nothing of the runner's: the runner runs tools,
/// and tools see only this.
pub(crate) trait CallSide: Send + Sync {
    fn call_id(&self) -> &str;
    fn task(&self) -> TaskId;
    /// The answer limits of the call's runner.
    fn limits(&self) -> &Limits;
    fn push_update(&self, update: Plain);
    fn hold_clock(&self);
    fn release_clock(&self);
    fn max_clock_pause(&self) -> Duration;
    fn timer(&self) -> &dyn Timer;
    /// What the starter handed the tool, if anything.
    fn extensions(&self) -> Option<&Extensions>;
}

impl dyn Tool {
    /// The timeout of a tool that does not choose its own: two minutes.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
}

/// A tool the model can call.
///
/// Object safe: hosts hold tools as `Arc<dyn Tool>`. Only
/// [`name`](Tool::name), [`description`](Tool::description) and
/// [`run`](Tool::run) are required; the rest have defaults.
///
/// The `Tool` impl itself is host or library code (for an agent-written
/// tool, the code of the source that loaded it); the loop calls its
/// metadata methods, which should return quickly and never panic. What is
/// foreign is what `run` does and produces: `run` is only ever polled and
/// dropped inside the call's task, with its panics contained, and its answer
/// is made plain data there.
///
/// # Example
///
/// ```
/// use rho::{Tool, ToolContext, ToolOutput, async_trait};
///
/// struct Echo;
///
/// #[async_trait]
/// impl Tool for Echo {
///     fn name(&self) -> &str { "echo" }
///     fn description(&self) -> &str { "Repeats its `text` argument." }
///     fn parameters(&self) -> serde_json::Value {
///         serde_json::json!({
///             "type": "object",
///             "properties": { "text": { "type": "string" } },
///             "required": ["text"],
///         })
///     }
///     async fn run(&self, arguments: serde_json::Value, _cx: ToolContext) -> ToolOutput {
///         match arguments["text"].as_str() {
///             Some(text) => ToolOutput::text(text),
///             None => ToolOutput::error("`text` must be a string"),
///         }
///     }
/// }
/// ```
#[async_trait]
pub trait Tool: Send + Sync {
    /// The name the model calls the tool by.
    fn name(&self) -> &str;

    /// What the tool does, for the model.
    fn description(&self) -> &str;

    /// The JSON Schema of the arguments. Default: any object.
    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({ "type": "object" })
    }

    /// How long the tool may run once its gate allowed it. Default:
    /// `<dyn Tool>::DEFAULT_TIMEOUT`. The time a gate waits is never counted.
    fn timeout(&self) -> Duration {
        <dyn Tool>::DEFAULT_TIMEOUT
    }

    /// Whether the tool's code was not written by the host (written by the
    /// agent, loaded at run time). Default: `false`.
    ///
    /// rho makes every answer plain data inside the task either way; the
    /// flag tells sources, watchers and hosts which tools to hold to account
    /// (crash counts, quarantine) and which partial results to distrust.
    fn is_untrusted(&self) -> bool {
        false
    }

    /// Hints about what the tool does (read-only, destructive, idempotent,
    /// open world) and a title for people, in MCP's terms. Default: none,
    /// which reads as MCP's cautious defaults (see [`ToolAnnotations`]).
    ///
    /// Metadata like [`name`](Tool::name): a registry reads it once, when
    /// the tool is registered, and lists it beside the tool; a gate that
    /// decides by it ([`AnnotationGate`](crate::AnnotationGate)) reads it
    /// inside the call's task, before the tool runs. It should return
    /// quickly and never panic.
    ///
    /// The hints of an untrusted tool are its own claims; see
    /// [`is_untrusted`](Tool::is_untrusted).
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::default()
    }

    /// How the tool's calls may overlap with the other calls of a model's
    /// message, and with each other ([`Concurrency`]): side by side,
    /// side by side under a host-wide bound, or alone in the model's
    /// order. Default: from the [`annotations`](Tool::annotations)
    /// ([`Concurrency::from_annotations`]): shared for a tool that says it
    /// is read-only, exclusive for any other.
    ///
    /// Metadata like [`annotations`](Tool::annotations), read once by a
    /// registry; a turn runner can override it per tool name. It should
    /// return quickly and never panic.
    fn concurrency(&self) -> Concurrency {
        Concurrency::from_annotations(&self.annotations())
    }

    /// The JSON Schema (an object schema) of the answer's details
    /// ([`ToolOutput::with_details`]), which MCP lists as the tool's
    /// `outputSchema` and returns as `structuredContent`. Default: `None`,
    /// no promise about the details.
    ///
    /// Metadata like [`parameters`](Tool::parameters), read once by a
    /// registry. rho does not check the details against it.
    fn output_schema(&self) -> Option<serde_json::Value> {
        None
    }

    /// Runs the tool on `arguments`.
    ///
    /// Runs in the call's own task. A panic here becomes an error result
    /// naming the tool; the future may be dropped at any `.await` when the
    /// call times out or the host aborts it.
    async fn run(&self, arguments: serde_json::Value, context: ToolContext) -> ToolOutput;
}

/// What a running tool knows about its call, and the runtime's timer.
///
/// Cheap to clone.
#[derive(Clone)]
pub struct ToolContext {
    /// The call's shared state: its id and task id, the runner's timer and
    /// limits, and where partial results go.
    notice: Arc<dyn CallSide>,
}

impl ToolContext {
    pub(crate) fn new(notice: Arc<dyn CallSide>) -> Self {
        Self { notice }
    }

    /// Reports a partial result while the tool runs (progress, a first
    /// page of output). The loop gets it as [`CallEvent::Update`](crate::CallEvent::Update).
    ///
    /// The value is made plain data here, inside the call's task, under the
    /// runner's [`Limits`](rho_untrusted::Limits); its `Serialize` never runs in the loop. Updates
    /// reported after the call ended are ignored; a loop that falls behind
    /// gets the newest 256 and a count of those dropped.
    ///
    /// # Errors
    ///
    /// The [`PlainError`] when the value could not be made plain data (a
    /// limit, an error or a panic of its `Serialize`); nothing is reported
    /// then.
    pub fn update<T: Serialize + ?Sized>(&self, partial: &T) -> Result<(), PlainError> {
        // The value is only borrowed: its own drop stays with the tool.
        let plain = plain::plain_owned(partial, self.notice.limits())?;
        self.notice.push_update(plain);
        Ok(())
    }

    /// The id of the call being run.
    pub fn call_id(&self) -> &str {
        self.notice.call_id()
    }

    /// The task the call runs in.
    pub fn task(&self) -> TaskId {
        self.notice.task()
    }

    /// Pauses the call's timeout clock until the guard is dropped: for a
    /// tool that waits on something whose time should not count against
    /// it, such as a call it makes that waits for a person's approval.
    ///
    /// The deadline moves by the time the pauses held (overlapping pauses
    /// count once), up to the runner's most
    /// ([`Runner::with_max_clock_pause`](crate::Runner::with_max_clock_pause),
    /// an hour by default), so a tool that never releases its pause still
    /// ends. Only the clock stops: the tool runs on, and the host can
    /// still abort it. A pause taken before the gate allowed the call, or
    /// after it ended, moves nothing that matters.
    pub fn pause_clock(&self) -> ClockPause {
        self.notice.hold_clock();
        ClockPause {
            notice: Arc::clone(&self.notice),
        }
    }

    /// The most the call's pauses may move its deadline, as its runner
    /// says ([`Runner::with_max_clock_pause`](crate::Runner::with_max_clock_pause)):
    /// with its timeout, the latest the call can end.
    pub fn max_clock_pause(&self) -> Duration {
        self.notice.max_clock_pause()
    }

    /// The value of type `T` the starter of this call handed the tool
    /// ([`Start::with_extension`](crate::Start::with_extension)), if it
    /// did: what one starter has and others may not. rho's MCP server, for
    /// one, hands `rho_mcp::McpClient`, the client the call came from.
    /// A tool that finds nothing does without (or says it cannot run
    /// here).
    pub fn extension<T: 'static>(&self) -> Option<&T> {
        self.notice.extensions()?.get::<T>()
    }

    /// Waits for `duration` on the timer of the executor the call runs on.
    ///
    /// A tool that waits this way runs unchanged on tokio, on smol, or on
    /// any other [`Executor`].
    pub fn sleep(&self, duration: Duration) -> Pin<Box<dyn Future<Output = ()> + Send + 'static>> {
        self.notice.timer().sleep(duration)
    }
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("call_id", &self.notice.call_id())
            .field("task", &self.notice.task())
            .finish_non_exhaustive()
    }
}

/// A pause of a call's timeout clock ([`ToolContext::pause_clock`]); the
/// clock runs again when it is dropped (and no other pause holds it).
#[must_use = "the clock runs again as soon as the pause is dropped"]
pub struct ClockPause {
    notice: Arc<dyn CallSide>,
}

impl ClockPause {
    /// The most a call's pauses of its clock move its deadline by default:
    /// one hour ([`Runner::with_max_clock_pause`](crate::Runner::with_max_clock_pause)).
    pub const DEFAULT_MAX: Duration = Duration::from_secs(3600);
}

impl Drop for ClockPause {
    fn drop(&mut self) {
        self.notice.release_clock();
    }
}

impl fmt::Debug for ClockPause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClockPause")
            .field("call_id", &self.notice.call_id())
            .finish_non_exhaustive()
    }
}

/// An executor's timer (and its way of giving way), with its type erased so
/// that tools and the task's body need not be generic over the executor.
pub(crate) trait Timer: Send + Sync {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

    /// Gives way once, from inside a call's task, when the executor may
    /// hold a task it woke behind the one that woke it
    /// ([`Executor::HOLDS_WOKEN_TASKS`]). Polled as a future is: `yielded`
    /// is `false` at the first poll, which sets it, wakes the task at once
    /// (to the back of the executor's queue) and returns `Pending`; a later
    /// poll returns `Ready`.
    fn poll_give_way(
        &self,
        yielded: &mut bool,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()>;
}

/// The timer of executor `E`.
pub(crate) struct ExecutorTimer<E>(pub(crate) E);

impl<E: Executor> Timer for ExecutorTimer<E> {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Future<Output = ()> + Send + 'static>> {
        Box::pin(self.0.sleep(duration))
    }

    fn poll_give_way(
        &self,
        yielded: &mut bool,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        if !E::HOLDS_WOKEN_TASKS || std::mem::replace(yielded, true) {
            return std::task::Poll::Ready(());
        }
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    }
}
