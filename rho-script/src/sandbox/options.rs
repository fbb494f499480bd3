//! How a [`ScriptPool`](crate::ScriptPool) is made ([`PoolOptions`], [`Isolation`]) and what
//! it reports of itself ([`PoolState`]).

use crate::ScriptLimits;

/// Where a pool runs its scripts.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Isolation {
    /// On the pool's own threads, in the host's process (the default):
    /// the fastest, and an engine bug can take the host down.
    #[default]
    Threads,
    /// In worker processes, one per pool thread, each started by this
    /// command: the same results, and an engine bug ends only the call
    /// (as a crash) and its worker. See [`worker`](crate::worker).
    #[cfg(unix)]
    WorkerProcesses(crate::sandbox::worker::WorkerCommand),
}

/// How a [`ScriptPool`](crate::ScriptPool) is made: its threads, its queue and the JavaScript
/// stack limit of every call it runs.
///
/// ```
/// use rho::script::PoolOptions;
/// let options = PoolOptions::new(2).with_queue(16).with_stack_limit(256 << 10);
/// assert_eq!((options.threads, options.queue, options.stack_limit), (2, 16, 256 << 10));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolOptions {
    /// How many scripts run at once, each on a thread of its own (at least 1).
    pub threads: usize,
    /// How many calls may wait for a thread; a call beyond that ends at once
    /// with an error saying the pool is busy. Default: 64.
    pub queue: usize,
    /// The JavaScript stack limit of every call, in bytes: recursion past it
    /// ends the call with a stack error. Default: [`ScriptLimits::DEFAULT_STACK`].
    /// Each thread's own stack is this plus 2 MiB.
    pub stack_limit: usize,
    /// Where the scripts run. Default: [`Isolation::Threads`].
    pub isolation: Isolation,
    /// How many threads stuck in a stopped script may be left running at
    /// once (threads mode). A script inside one long native operation does
    /// not see the interrupt until the operation returns; 20 ms past the
    /// call's stop the pool gives up on its thread, answers the call, and
    /// starts a fresh thread in its place, so the pool keeps `threads`
    /// threads for new calls. The stuck thread ends itself when the
    /// operation returns. Past this many, a stuck thread is not replaced:
    /// it keeps its place, and calls wait for it in the queue (past the
    /// queue they end at once, as for any busy pool) until a stuck thread
    /// returns. Default: `threads`. 0 never replaces a thread.
    pub max_abandoned: usize,
}

impl PoolOptions {
    /// `threads` threads (at least 1), a queue of 64, the default stack
    /// limit, up to `threads` stuck threads replaced at once.
    pub fn new(threads: usize) -> Self {
        Self {
            threads: threads.max(1),
            queue: 64,
            stack_limit: ScriptLimits::DEFAULT_STACK,
            isolation: Isolation::Threads,
            max_abandoned: threads.max(1),
        }
    }

    /// Sets how many calls may wait for a thread.
    #[must_use]
    pub fn with_queue(mut self, queue: usize) -> Self {
        self.queue = queue;
        self
    }

    /// Sets the JavaScript stack limit of every call, in bytes.
    #[must_use]
    pub fn with_stack_limit(mut self, stack_limit: usize) -> Self {
        self.stack_limit = stack_limit;
        self
    }

    /// Sets where the scripts run.
    #[must_use]
    pub fn with_isolation(mut self, isolation: Isolation) -> Self {
        self.isolation = isolation;
        self
    }

    /// Sets how many threads stuck in a stopped script may be left running
    /// at once, each replaced by a fresh thread (see
    /// [`max_abandoned`](PoolOptions::max_abandoned)).
    #[must_use]
    pub fn with_max_abandoned(mut self, max_abandoned: usize) -> Self {
        self.max_abandoned = max_abandoned;
        self
    }
}

/// What a [`ScriptPool`](crate::ScriptPool) is doing, at one moment ([`ScriptPool::state`](crate::ScriptPool::state)).
///
/// ```
/// use rho::script::ScriptPool;
/// let pool = ScriptPool::new(2)?;
/// let state = pool.state();
/// assert_eq!((state.threads, state.busy, state.queued), (2, 0, 0));
/// assert_eq!((state.replaced_threads, state.abandoned_threads, state.worker_restarts), (0, 0, 0));
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolState {
    /// How many scripts the pool runs at once ([`PoolOptions::threads`]).
    pub threads: usize,
    /// How many of those threads run a call or a definition's check now
    /// (a stuck thread kept past [`PoolOptions::max_abandoned`] included).
    pub busy: usize,
    /// How many calls wait for a thread.
    pub queued: usize,
    /// How many threads the pool has given up on and replaced since it
    /// was made, each because its script did not come back within 20 ms of
    /// its stop (threads mode).
    pub replaced_threads: u64,
    /// How many of the threads given up on are still inside their script
    /// (at most [`PoolOptions::max_abandoned`]); each ends itself when its
    /// script returns.
    pub abandoned_threads: usize,
    /// How many worker processes were started in place of one that was
    /// killed (it did not answer within 20 ms of its call's stop), died or
    /// broke, since the pool was made (worker-process mode).
    pub worker_restarts: u64,
}
