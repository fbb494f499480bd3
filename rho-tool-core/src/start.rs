//! What a call starts with: [`Start`], the one argument of
//! [`Runner::start`](crate::Runner::start) besides the call.

use std::fmt;
use std::sync::Arc;

use crate::extensions::Extensions;
use crate::queue::Wait;
use crate::result::ToolResult;
use crate::tool::Tool;
use crate::watch::Watch;

/// What [`Runner::start`](crate::Runner::start) starts a call with: the
/// tool to run, or a refusal that ends the call at once, and the call's own
/// watch beside the runner's.
///
/// Every call starts the one way, through `Runner::start`, so a host's
/// loop awaits one kind of [`CallHandle`](crate::CallHandle) whatever
/// happened. A tool converts into a `Start` (`runner.start(call, tool)`); so
/// does a registry's look-up of a name, which adds the tool's source as the
/// call's watch.
///
/// ```
/// use std::sync::Arc;
/// use rho::call::{Start, Watch};
/// use rho::{Executor, Runner, Tool, ToolCall, ToolResult};
///
/// # fn demo<E: Executor>(runner: Runner<E>, tool: Arc<dyn Tool>, source: Arc<dyn Watch>) {
/// let call = |id: &str| ToolCall::new(id, "echo", serde_json::json!({}));
/// // The tool, and nothing else told of the call but the runner's watch.
/// let _plain = runner.start(call("1"), tool.clone());
/// // The tool, and its source told of the call too.
/// let _watched = runner.start(call("2"), Start::tool(tool).watched_by(source));
/// // No tool: the call ends at once, refused with this result.
/// let _refused = runner.start(call("3"), Start::refused(ToolResult::error("not today")));
/// # }
/// ```
#[must_use = "a Start does nothing until given to Runner::start"]
pub struct Start {
    pub(crate) what: What,
    pub(crate) watch: Option<Arc<dyn Watch>>,
    /// Values for the tool ([`with_extension`](Start::with_extension));
    /// boxed when there are any, so a call without them pays a pointer.
    pub(crate) extensions: Option<Box<Extensions>>,
    /// What the call waits for after its gate, in order ([`after`](Start::after)).
    pub(crate) waits: Vec<Wait>,
}

/// What the call's task does.
pub(crate) enum What {
    /// Gate, then the tool.
    Tool(Arc<dyn Tool>),
    /// Nothing: the call ends refused with this result.
    Refused(ToolResult),
}

impl Start {
    /// Runs `tool`: the gate first, then the tool under its timeout.
    pub fn tool(tool: Arc<dyn Tool>) -> Self {
        Self {
            what: What::Tool(tool),
            watch: None,
            extensions: None,
            waits: Vec::new(),
        }
    }

    /// Runs nothing: the call ends at once as
    /// [`Outcome::Refused`](crate::Outcome::Refused) with `result`, without
    /// a gate: for an unknown or disabled tool, or arguments that do not
    /// fit the tool's schema. The watches are told of it like any call (a
    /// refusal never counts against a tool).
    pub fn refused(result: ToolResult) -> Self {
        Self {
            what: What::Refused(result),
            watch: None,
            extensions: None,
            waits: Vec::new(),
        }
    }

    /// Also tells `watch` of the call: the call's own watch, beside the
    /// runner's. A registry gives the tool's source here, so the source
    /// hears of every call of its tools however the runner was built.
    pub fn watched_by(mut self, watch: Arc<dyn Watch>) -> Self {
        self.watch = Some(watch);
        self
    }

    /// [`watched_by`](Start::watched_by) when there is a watch.
    pub fn maybe_watched_by(mut self, watch: Option<Arc<dyn Watch>>) -> Self {
        self.watch = watch;
        self
    }

    /// Makes the call wait for `wait` after its gate allowed it and before
    /// its tool runs, on no clock: its place in the model's order, room
    /// under a bound ([`Wait`]). Waits are waited for in the order given.
    /// A refused call waits for nothing.
    pub fn after(mut self, wait: Wait) -> Self {
        self.waits.push(wait);
        self
    }

    /// Whether the call waits for anything before its tool runs
    /// ([`after`](Start::after)).
    pub fn waits(&self) -> bool {
        !self.waits.is_empty()
    }

    /// Hands the tool `value`, which it finds with
    /// [`ToolContext::extension`](crate::ToolContext::extension): something
    /// this starter has and others may not (rho's MCP server hands the
    /// client the call came from). One value per type: a second of the
    /// same type replaces the first.
    ///
    /// The value is the starter's own, trusted like the tool's `impl`: it
    /// is dropped wherever the call's shared state is last let go of,
    /// possibly in the loop.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use rho::call::Start;
    /// use rho::{Executor, Runner, Tool, ToolCall};
    ///
    /// /// Where the calls of this host come from.
    /// struct Channel(&'static str);
    ///
    /// # fn demo<E: Executor>(runner: Runner<E>, tool: Arc<dyn Tool>) {
    /// let call = ToolCall::new("1", "echo", serde_json::json!({}));
    /// // In the tool: `context.extension::<Channel>()` is `Some`.
    /// let _handle = runner.start(call, Start::tool(tool).with_extension(Channel("chat")));
    /// # }
    /// ```
    pub fn with_extension<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.extensions
            .get_or_insert_with(Box::default)
            .insert(value);
        self
    }
}

impl From<Arc<dyn Tool>> for Start {
    fn from(tool: Arc<dyn Tool>) -> Self {
        Self::tool(tool)
    }
}

impl<T: Tool + 'static> From<Arc<T>> for Start {
    fn from(tool: Arc<T>) -> Self {
        Self::tool(tool)
    }
}

impl fmt::Debug for Start {
    /// Names no foreign code: the tool's name is not read here.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match &self.what {
            What::Tool(_) => "tool",
            What::Refused(_) => "refused",
        };
        f.debug_struct("Start")
            .field("what", &what)
            .field("watched", &self.watch.is_some())
            .field("extensions", &self.extensions)
            .field("waits", &self.waits)
            .finish()
    }
}
