//! What a source is told about its tools' calls, and how it disables a tool.

use std::fmt;

use std::sync::Arc;

use rho_tool_core::{IntoShared, Watch};

use crate::changes::ToolListNotifier;

/// A source's rules: a [`Watch`] of each call of the source's tools (it
/// hears of them the one way every watch does), and asked whether a tool
/// is disabled.
///
/// [`Accounting`](crate::Accounting) is the ready-made implementation
/// (counts and quarantine); a source with its own rules implements this
/// trait, possibly by wrapping an `Accounting`.
///
/// # Contract
///
/// - [`Watch::started`] and [`Watch::ended`] run in the agent loop, while
///   it starts or finishes a call (that is where every watch runs). They
///   must be
///   quick and must not block: a slow hook delays every call the loop
///   handles. Wrap a policy that needs to block (write to a database, send a
///   message) in [`OffLoop`](crate::OffLoop), which moves the hooks onto a
///   thread of their own.
/// - [`disabled`](SourcePolicy::disabled) runs at every look-up of one of
///   the source's tools and for each of them when the registry lists tools:
///   it must be quicker still (an atomic load, a short lock).
/// - A panic in any of them is contained by the registry and changes nothing
///   about the call: the call runs, ends and reaches the model as if the
///   hook had returned. A panicking `disabled` counts as "not disabled".
/// - Each task that was `started` is `ended` exactly once, even when the
///   tool was removed from the registry in between. A call refused before
///   it ran (its arguments do not fit the tool's schema, or this policy
///   disabled the tool) is `started` and `ended` too, as
///   [`Outcome::Refused`](rho_tool_core::Outcome::Refused).
pub trait SourcePolicy: Watch {
    /// Whether `tool` is disabled now, and why. A disabled tool leaves the
    /// model's tool list, and its calls get an error result built from the
    /// answer instead of running.
    fn disabled(&self, tool: &str) -> Option<Disabled> {
        let _ = tool;
        None
    }

    /// The policy's source was registered in a registry: `notifier` tells
    /// that registry's listeners (an MCP server's `tools/list_changed`, a
    /// host's screen) that its tool list changed. A policy that disables
    /// tools or puts them back keeps it and calls
    /// [`notify`](ToolListNotifier::notify) when
    /// [`disabled`](SourcePolicy::disabled)'s answer changes. Called once
    /// per registration (a policy shared by several sources is told once
    /// for each). Default: ignored.
    fn attach(&self, notifier: ToolListNotifier) {
        let _ = notifier;
    }
}

/// A policy's ways into [`Source::with_policy`](crate::Source::with_policy):
/// an `Arc` of any policy or of the trait object, as it is, and rho's own
/// policies by value (their modules say so). (A policy of the host's own type is passed in an
/// `Arc`: Rust lets only the crate of `IntoShared` take any value.)
impl<P: SourcePolicy + 'static> IntoShared<dyn SourcePolicy> for Arc<P> {
    fn into_shared(self) -> Arc<dyn SourcePolicy> {
        self
    }
}

impl IntoShared<dyn SourcePolicy> for Arc<dyn SourcePolicy> {
    fn into_shared(self) -> Arc<dyn SourcePolicy> {
        self
    }
}

/// Why a source disabled one of its tools.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Disabled {
    /// Why, in words for the model (and the host's screens).
    pub reason: String,
    /// After how many failures the tool was disabled (0 when it was not
    /// for failures).
    pub failures: u32,
}

impl Disabled {
    /// A tool disabled after `failures` failures, for `reason`.
    pub fn new(reason: impl Into<String>, failures: u32) -> Self {
        Self {
            reason: reason.into(),
            failures,
        }
    }
}

impl fmt::Display for Disabled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.failures {
            0 => write!(f, "disabled: {}", self.reason),
            1 => write!(f, "disabled after 1 failure: {}", self.reason),
            n => write!(f, "disabled after {n} failures: {}", self.reason),
        }
    }
}
