//! Sources: where a registry's tools come from, and how each hears of its
//! tools' calls (its [`SourcePolicy`], and the registry's count of the
//! calls in flight). The handle through which a source changes its tools
//! is [`SourceHandle`](crate::SourceHandle), in its own module.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rho_tool_core::untrusted::call_contained;
use rho_tool_core::{CallEnd, IntoShared, TaskId, ToolCall};

use crate::bound::Bound;
use crate::changes::ToolListNotifier;
use crate::policy::{Disabled, SourcePolicy};

/// A source of tools, as it is registered: its name, whether its tools'
/// code is untrusted, and its [`SourcePolicy`] (if it wants to be told of
/// its tools' calls).
///
/// ```
/// use std::sync::Arc;
/// use rho::{Accounting, Source};
///
/// let builtin = Source::trusted("builtin");
/// let agent = Source::untrusted("agent-written").with_policy(Arc::new(Accounting::default()));
/// assert!(agent.is_untrusted() && !builtin.is_untrusted());
/// ```
#[derive(Clone)]
pub struct Source {
    name: String,
    untrusted: bool,
    policy: Option<Arc<dyn SourcePolicy>>,
    /// The count of calls in flight of the registry it is registered in;
    /// set at registration.
    in_flight: Option<Arc<InFlight>>,
    /// The bound on its tools' calls at once, if it has one.
    bound: Option<Bound>,
}

impl Source {
    /// A source of tools the host wrote (built-in tools, vetted plugins).
    pub fn trusted(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            untrusted: false,
            policy: None,
            in_flight: None,
            bound: None,
        }
    }

    /// A source of tools whose code the host did not write (written by the
    /// agent, loaded at run time). Its tools report
    /// [`Tool::is_untrusted`](rho_tool_core::Tool::is_untrusted) as `true`,
    /// whatever they say themselves.
    pub fn untrusted(name: impl Into<String>) -> Self {
        Self {
            untrusted: true,
            ..Self::trusted(name)
        }
    }

    /// Tells `policy` of every call of the source's tools, and asks it which
    /// are disabled: a value, or an `Arc` of one the host keeps to read its
    /// counts.
    pub fn with_policy(mut self, policy: impl IntoShared<dyn SourcePolicy>) -> Self {
        self.policy = Some(policy.into_shared());
        self
    }

    /// Runs at most `calls` calls of the source's tools at once (at least
    /// one), across every turn and runner of its registry (a server that
    /// takes a few requests at a time, a rate limit). A call over the
    /// bound waits after its gate allowed it, off its clock, in the order
    /// calls asked, and says so (a queued event naming the source). A
    /// tool's own bound ([`Concurrency::Bounded`](rho_tool_core::Concurrency::Bounded))
    /// is waited for first.
    ///
    /// ```
    /// use rho::Source;
    ///
    /// let api = Source::trusted("search-api").with_max_concurrent_calls(4);
    /// assert_eq!(api.max_concurrent_calls(), Some(4));
    /// ```
    pub fn with_max_concurrent_calls(mut self, calls: usize) -> Self {
        let waiting_for = rho_tool_core::WaitingFor::Source {
            name: self.name.clone(),
            limit: calls.max(1),
        };
        self.bound = Some(Bound::new(calls, waiting_for));
        self
    }

    /// The bound on its tools' calls at once, if it has one
    /// ([`with_max_concurrent_calls`](Source::with_max_concurrent_calls)).
    pub fn max_concurrent_calls(&self) -> Option<usize> {
        self.bound.as_ref().map(Bound::limit)
    }

    pub(crate) fn bound(&self) -> Option<&Bound> {
        self.bound.as_ref()
    }

    /// The source's name, unique in its registry.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the source's tools are untrusted.
    pub fn is_untrusted(&self) -> bool {
        self.untrusted
    }

    /// Whether the source has a policy.
    pub fn has_policy(&self) -> bool {
        self.policy.is_some()
    }

    pub(crate) fn disabled(&self, tool: &str) -> Option<Disabled> {
        let policy = self.policy.as_ref()?;
        call_contained(|| policy.disabled(tool)).ok().flatten()
    }

    /// The same source, counting its calls in flight in `in_flight`.
    pub(crate) fn registered(mut self, in_flight: Arc<InFlight>) -> Self {
        self.in_flight = Some(in_flight);
        self
    }

    /// Gives the policy, if any, the registry's notifier, its panics
    /// contained.
    pub(crate) fn attach(&self, notifier: ToolListNotifier) {
        if let Some(policy) = &self.policy {
            let _ = call_contained(|| policy.attach(notifier));
        }
    }

    /// A call of one of its tools started: it counts as in flight, then
    /// the policy hears of it.
    pub(crate) fn started(&self, call: &ToolCall, task: TaskId) {
        if let Some(in_flight) = &self.in_flight {
            in_flight.0.fetch_add(1, Ordering::AcqRel);
        }
        if let Some(policy) = &self.policy {
            let _ = call_contained(|| policy.started(call, task));
        }
    }

    /// A call of one of its tools ended: the policy hears of it, then it
    /// no longer counts as in flight.
    pub(crate) fn ended(&self, end: &CallEnd) {
        if let Some(policy) = &self.policy {
            let _ = call_contained(|| policy.ended(end));
        }
        if let Some(in_flight) = &self.in_flight {
            in_flight.0.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// How many calls of a registry's listening sources are in flight: one
/// count per registry, which each of its sources counts into.
#[derive(Debug, Default)]
pub(crate) struct InFlight(AtomicUsize);

impl InFlight {
    pub(crate) fn get(&self) -> usize {
        self.0.load(Ordering::Acquire)
    }
}

impl fmt::Debug for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Source")
            .field("name", &self.name)
            .field("untrusted", &self.untrusted)
            .field("policy", &self.policy.is_some())
            .field("bound", &self.bound)
            .finish()
    }
}
