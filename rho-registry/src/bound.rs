//! `Bound`: at most so many calls at once, across every turn and runner
//! that starts calls through one registry.

use std::fmt;
use std::num::NonZeroUsize;
use std::sync::Arc;

use rho_tool_core::{ToolResult, Wait, WaitingFor};
use tokio::sync::Semaphore;

/// A bound on how many calls run at once: of one tool
/// ([`Concurrency::Bounded`](rho_tool_core::Concurrency::Bounded)), of one
/// source's tools ([`Source::with_max_concurrent_calls`](crate::Source::with_max_concurrent_calls)).
/// Cheap to clone; clones share the bound.
///
/// A call over the bound waits after its gate allowed it, off its clock,
/// and calls get their place in the order they asked for it (a fair
/// semaphore: a later call never overtakes an earlier one). A call holds
/// its place until it ends, however it ends: even a tool that never yields
/// gives it back when the loop ends its call at the deadline.
///
/// ```
/// use rho::registry::Bound;
/// use rho::call::WaitingFor;
///
/// let bound = Bound::new(2, WaitingFor::Tool { name: "fetch".into(), limit: 2 });
/// assert_eq!((bound.limit(), bound.running()), (2, 0));
/// let _wait = bound.wait(); // give it to a call: `Start::after(wait)`
/// ```
#[derive(Clone)]
pub struct Bound {
    limit: NonZeroUsize,
    permits: Arc<Semaphore>,
    waiting_for: WaitingFor,
}

impl Bound {
    /// At most `limit` calls at once (at least one); a call over it waits
    /// for `waiting_for`, as its events say.
    pub fn new(limit: usize, waiting_for: WaitingFor) -> Self {
        let limit =
            NonZeroUsize::new(limit.min(Semaphore::MAX_PERMITS)).unwrap_or(NonZeroUsize::MIN);
        Self {
            limit,
            permits: Arc::new(Semaphore::new(limit.get())),
            waiting_for,
        }
    }

    /// The bound.
    pub fn limit(&self) -> usize {
        self.limit.get()
    }

    /// How many calls hold a place now.
    pub fn running(&self) -> usize {
        self.limit
            .get()
            .saturating_sub(self.permits.available_permits())
    }

    /// What a call waits for under this bound, for [`Start::after`](rho_tool_core::Start::after):
    /// a place, held until the call ends.
    pub fn wait(&self) -> Wait {
        let permits = self.permits.clone();
        Wait::new(self.waiting_for.clone(), async move {
            // The semaphore is never closed; the error is only the type's.
            permits
                .acquire_owned()
                .await
                .map_err(|_| ToolResult::error("the bound on calls at once was closed"))
        })
    }
}

impl fmt::Debug for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Bound")
            .field("limit", &self.limit)
            .field("running", &self.running())
            .field("waiting_for", &self.waiting_for)
            .finish()
    }
}
