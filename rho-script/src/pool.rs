//! The threads that run scripts: a fixed set of std threads fed by a bounded
//! queue, and the one-shot answer a call's future waits on.
//!
//! The JavaScript never runs on an executor's worker: a script that loops
//! would hold that worker until the interrupt stops it, and every other task
//! on it would wait. Here it holds one of rho-script's own threads, and the
//! call's future only waits for the answer, on any executor (the answer wakes
//! the future's `Waker`; no runtime is named).

use std::collections::VecDeque;
use std::fmt;
use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use rho_tool_core::{ToolContext, ToolOutput};

use crate::ScriptLimits;
use crate::code::CodeMode;
use crate::grant::GrantSet;
use crate::output::ScriptOutput;
use crate::sandbox::{self, CheckFailure, Engine, Spent};
use crate::slot::{Reply, ScriptCall, Slot};
use crate::tool::Origin;

/// The default JavaScript stack limit: 512 KiB.
pub const DEFAULT_STACK_LIMIT: usize = 512 << 10;

/// The room each thread has on its stack beyond the JavaScript stack limit,
/// for rho-script's own frames and the engine's native ones.
pub(crate) const STACK_MARGIN: usize = 2 << 20;

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
    WorkerProcesses(crate::WorkerCommand),
}

/// How a [`ScriptPool`] is made: its threads, its queue and the JavaScript
/// stack limit of every call it runs.
///
/// ```
/// use rho_script::PoolOptions;
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
    /// ends the call with a stack error. Default: [`DEFAULT_STACK_LIMIT`].
    /// Each thread's own stack is this plus 2 MiB.
    pub stack_limit: usize,
    /// Where the scripts run. Default: [`Isolation::Threads`].
    pub isolation: Isolation,
}

impl PoolOptions {
    /// `threads` threads (at least 1), a queue of 64, the default stack
    /// limit.
    pub fn new(threads: usize) -> Self {
        Self {
            threads: threads.max(1),
            queue: 64,
            stack_limit: DEFAULT_STACK_LIMIT,
            isolation: Isolation::Threads,
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
}

/// The threads that run script calls: a fixed number of std threads owned
/// by rho-script, fed by a bounded queue.
///
/// Cheap to clone (clones share the threads). The threads end once the last
/// clone is dropped and the calls already queued have run; dropping never
/// waits for them. Every call runs in a fresh QuickJS runtime on one of
/// these threads; see the crate docs for what that guarantees.
#[derive(Clone)]
pub struct ScriptPool {
    handle: Arc<Handle>,
}

/// Held only by pool handles (never by the threads): its drop, with the last
/// handle, tells the threads to finish the queue and end.
struct Handle {
    shared: Arc<Shared>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.shared.lock().closed = true;
        self.shared.ready.notify_all();
    }
}

struct Shared {
    options: PoolOptions,
    queue: Mutex<Queue>,
    ready: Condvar,
}

struct Queue {
    jobs: VecDeque<Job>,
    /// Threads not running a job (counted from their start, before they
    /// first wait): a call is queued while they outnumber the queued jobs,
    /// even with a queue of 0.
    idle: usize,
    /// Set when the last pool handle is dropped: threads finish the queue
    /// and end.
    closed: bool,
}

impl ScriptPool {
    /// A pool of `threads` threads (at least 1) with the default queue and
    /// stack limit.
    ///
    /// # Errors
    ///
    /// When the operating system refuses to start a thread.
    pub fn new(threads: usize) -> io::Result<Self> {
        Self::with_options(PoolOptions::new(threads))
    }

    /// A pool made as `options` says.
    ///
    /// # Errors
    ///
    /// When the operating system refuses to start a thread (the threads
    /// already started end then).
    pub fn with_options(mut options: PoolOptions) -> io::Result<Self> {
        options.threads = options.threads.max(1);
        let threads = options.threads;
        let shared = Arc::new(Shared {
            options,
            queue: Mutex::new(Queue {
                jobs: VecDeque::new(),
                idle: threads,
                closed: false,
            }),
            ready: Condvar::new(),
        });
        let pool = ScriptPool {
            handle: Arc::new(Handle { shared }),
        };
        let options = &pool.handle.shared.options;
        let stack = options.stack_limit.saturating_add(STACK_MARGIN);
        for index in 0..options.threads {
            let shared = Arc::clone(&pool.handle.shared);
            // On an error the pool handle is dropped on return, which ends
            // the threads already started.
            std::thread::Builder::new()
                .name(format!("rho-script-{index}"))
                .stack_size(stack)
                .spawn(move || work(&shared))?;
        }
        Ok(pool)
    }

    /// The options the pool was made with.
    pub fn options(&self) -> &PoolOptions {
        &self.handle.shared.options
    }

    /// Queues `job` and gives the future of its answer, or an error answer
    /// at once when the queue is full.
    /// Partial results and sleeps of the script go to `context`; its calls
    /// of host functions go to `grants`.
    pub(crate) fn submit(
        &self,
        job: JobSpec,
        context: ToolContext,
        grants: GrantSet,
        code: Option<CodeMode>,
    ) -> ScriptCall<ToolOutput> {
        self.enqueue(job, Answer::into_output, Some(context), grants, code)
    }

    /// Queues the definition check `job` (its kind is [`JobKind::Check`])
    /// and gives the future of its verdict.
    pub(crate) fn check(&self, job: JobSpec) -> ScriptCall<Result<(), CheckFailure>> {
        self.enqueue(job, Answer::into_checked, None, GrantSet::default(), None)
    }

    fn enqueue<T>(
        &self,
        job: JobSpec,
        read: fn(Answer) -> T,
        context: Option<ToolContext>,
        grants: GrantSet,
        code: Option<CodeMode>,
    ) -> ScriptCall<T> {
        let slot = Arc::new(Slot::default());
        let stop = Arc::new(AtomicBool::new(false));
        let call = ScriptCall::new(
            Arc::clone(&slot),
            Arc::clone(&stop),
            read,
            context,
            grants,
            code,
        );
        let name = Arc::clone(&job.name);
        let job = Job {
            spec: job,
            stop,
            reply: Reply::new(slot),
        };
        let mut queue = self.handle.shared.lock();
        if queue.jobs.len() >= self.handle.shared.options.queue + queue.idle {
            drop(queue);
            let options = &self.handle.shared.options;
            job.reply.send(Answer::Output(ScriptOutput::error(format!(
                "tool `{name}` could not start: all {} script threads are busy and {} calls are already waiting",
                options.threads, options.queue
            ))));
            return call;
        }
        queue.jobs.push_back(job);
        drop(queue);
        self.handle.shared.ready.notify_one();
        call
    }
}

impl fmt::Debug for ScriptPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScriptPool")
            .field("options", &self.handle.shared.options)
            .field("queued", &self.handle.shared.lock().jobs.len())
            .finish()
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        // Nothing panics while the queue is locked; a poisoned lock still
        // holds a consistent queue.
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One thread's life: take the next job, run it, answer; end when the pool
/// is gone and the queue is empty.
fn work(shared: &Shared) {
    let mut own = ThreadState::default();
    loop {
        let job = {
            let mut queue = shared.lock();
            loop {
                if let Some(job) = queue.jobs.pop_front() {
                    queue.idle -= 1;
                    break job;
                }
                if queue.closed {
                    return;
                }
                queue = shared
                    .ready
                    .wait(queue)
                    .unwrap_or_else(PoisonError::into_inner);
            }
        };
        let answered = run(job, &shared.options, &mut own);
        shared.lock().idle += 1;
        if let Some((reply, answer, spent)) = answered {
            reply.send(answer);
            free(spent);
        }
        // With nothing queued, the thread makes the next call's engine now
        // rather than when that call comes.
        if shared.lock().jobs.is_empty() {
            own.prepare(&shared.options);
        }
    }
}

/// Frees a job's engine after its answer was sent. A panic of the binding
/// while it frees is contained here like one while it runs (the answer is
/// already out); the payload is dropped on this thread.
pub(crate) fn free(spent: Spent) {
    let _ = catch_unwind(AssertUnwindSafe(move || drop(spent)));
}

/// Runs one job: its reply and answer, for the caller to send once the
/// thread counts as idle again (so that a caller that got its answer finds
/// the thread free), and its engine, to free after that (see [`Spent`]).
/// A call whose future is already gone is skipped. A
/// panic in the engine's binding is contained here: the reply then goes
/// unsent and answers with its own crash text; the payload is dropped on
/// this thread, never in the loop.
fn run(job: Job, options: &PoolOptions, own: &mut ThreadState) -> Option<(Reply, Answer, Spent)> {
    let Job {
        mut spec,
        stop,
        reply,
    } = job;
    if stop.load(Ordering::Acquire) {
        return None;
    }
    spec.taken();
    let slot = Arc::clone(reply.slot());
    let stack_limit = options.stack_limit;
    let (answer, spent) = catch_unwind(AssertUnwindSafe(|| match &options.isolation {
        Isolation::Threads => sandbox::run(&spec, &stop, &slot, stack_limit, own.spare.take()),
        #[cfg(unix)]
        Isolation::WorkerProcesses(command) => (
            crate::worker::relay::run(&mut own.worker, command, spec, &stop, &slot, stack_limit),
            Spent::none(),
        ),
    }))
    .ok()?;
    Some((reply, answer, spent))
}

/// What a pool thread keeps between jobs.
#[derive(Default)]
struct ThreadState {
    /// Its worker process, in that mode: started on the first job, killed
    /// when the thread ends (with the pool).
    #[cfg(unix)]
    worker: Option<crate::worker::relay::Worker>,
    /// A runtime and context for the next call, made while the thread had
    /// nothing to do (threads mode): the call does not wait for them.
    spare: Option<Engine>,
}

impl ThreadState {
    /// Makes the next call's engine, unless one is waiting already. A
    /// failure (or a panic of the binding) leaves none: the call then makes
    /// its own, and says why if it cannot.
    fn prepare(&mut self, options: &PoolOptions) {
        if self.spare.is_some() || options.isolation != Isolation::Threads {
            return;
        }
        self.spare = catch_unwind(AssertUnwindSafe(|| Engine::new(options.stack_limit)))
            .ok()
            .and_then(Result::ok);
    }
}

/// What a job asks of the sandbox: run a call, or check a definition.
pub(crate) enum JobKind {
    /// Load the script and call `run` with these arguments.
    Call(serde_json::Value),
    /// Load the script (which runs its top level) and check that it
    /// defines a function `run`, without calling it.
    Check,
}

/// What the sandbox answers a job.
pub(crate) enum Answer {
    /// A call's output (also any job's failure to run at all).
    Output(ScriptOutput),
    /// A definition check's verdict.
    Checked(Result<(), CheckFailure>),
}

impl Answer {
    /// A call's crash, in the sandbox's words.
    pub(crate) fn crashed(text: &str) -> Self {
        Answer::Output(ScriptOutput::crashed(text))
    }

    fn into_output(self) -> ToolOutput {
        match self {
            Answer::Output(output) => output.into_tool_output(),
            Answer::Checked(_) => {
                ToolOutput::crashed("the script's thread answered a call with a check")
            }
        }
    }

    fn into_checked(self) -> Result<(), CheckFailure> {
        match self {
            Answer::Checked(verdict) => verdict,
            // The pool was busy, or the thread failed: no verdict.
            Answer::Output(output) => Err(CheckFailure::Unavailable(output.message().to_owned())),
        }
    }
}

/// What a job asks of the sandbox.
pub(crate) struct JobSpec {
    pub(crate) name: Arc<str>,
    pub(crate) source: Arc<str>,
    /// Whose mistake a source that does not load is.
    pub(crate) origin: Origin,
    pub(crate) kind: JobKind,
    pub(crate) limits: ScriptLimits,
    /// The names of the host functions granted, installed as `rho.<name>`.
    pub(crate) grants: Arc<[Arc<str>]>,
    /// Code mode: the names of the tools the script may call, installed
    /// as `tools.<name>`; `None` without code mode (no `tools` at all).
    pub(crate) tools: Option<Arc<[Arc<str>]>>,
    /// When the sandbox stops the script on its own, in case the future is
    /// never dropped (a host that polls it without rho's runner); set again
    /// when a thread takes the job if its [`Clock`] says so.
    pub(crate) deadline: Instant,
    /// The timeout the deadline came from, for the text.
    pub(crate) timeout: std::time::Duration,
    /// From when the deadline counts.
    pub(crate) clock: Clock,
}

/// From when a job's deadline counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Clock {
    /// From when the job was submitted: a call's, like the runner's
    /// timeout, which also counts the wait for a free thread.
    Submitted,
    /// From when a script thread takes it: a definition's check, whose
    /// short deadline is for the script's top level alone, so a wait
    /// behind busy threads must not eat it.
    Taken,
}

impl JobSpec {
    /// A thread takes the job now: a deadline that counts from here starts.
    fn taken(&mut self) {
        if self.clock == Clock::Taken {
            let now = Instant::now();
            self.deadline = now
                .checked_add(self.timeout)
                .unwrap_or(now + std::time::Duration::from_secs(365 * 24 * 3600));
        }
    }
}

struct Job {
    spec: JobSpec,
    stop: Arc<AtomicBool>,
    reply: Reply,
}
