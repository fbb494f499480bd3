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
use std::future::Future;
use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use rho_tool_core::untrusted::Plain;
use rho_tool_core::{ToolContext, ToolOutput};

use crate::ScriptLimits;
use crate::sandbox::{self, CheckFailure};

/// The default JavaScript stack limit: 512 KiB.
pub const DEFAULT_STACK_LIMIT: usize = 512 << 10;

/// The room each thread has on its stack beyond the JavaScript stack limit,
/// for rho-script's own frames and the engine's native ones.
const STACK_MARGIN: usize = 2 << 20;

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
}

impl PoolOptions {
    /// `threads` threads (at least 1), a queue of 64, the default stack
    /// limit.
    pub fn new(threads: usize) -> Self {
        Self {
            threads: threads.max(1),
            queue: 64,
            stack_limit: DEFAULT_STACK_LIMIT,
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
    /// Partial results and sleeps of the script go to `context`.
    pub(crate) fn submit(&self, job: JobSpec, context: ToolContext) -> ScriptCall<ToolOutput> {
        self.enqueue(job, Answer::into_output, Some(context))
    }

    /// Queues the definition check `job` (its kind is [`JobKind::Check`])
    /// and gives the future of its verdict.
    pub(crate) fn check(&self, job: JobSpec) -> ScriptCall<Result<(), CheckFailure>> {
        self.enqueue(job, Answer::into_checked, None)
    }

    fn enqueue<T>(
        &self,
        job: JobSpec,
        read: fn(Answer) -> T,
        context: Option<ToolContext>,
    ) -> ScriptCall<T> {
        let slot = Arc::new(Slot::default());
        let stop = Arc::new(AtomicBool::new(false));
        let call = ScriptCall {
            slot: Arc::clone(&slot),
            stop: Arc::clone(&stop),
            read,
            context,
            sleeping: None,
        };
        let name = Arc::clone(&job.name);
        let job = Job {
            spec: job,
            stop,
            reply: Reply { slot, sent: false },
        };
        let mut queue = self.handle.shared.lock();
        if queue.jobs.len() >= self.handle.shared.options.queue + queue.idle {
            drop(queue);
            let options = &self.handle.shared.options;
            job.reply.send(Answer::Output(ToolOutput::error(format!(
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
        let answered = run(job, shared.options.stack_limit);
        shared.lock().idle += 1;
        if let Some((reply, answer)) = answered {
            reply.send(answer);
        }
    }
}

/// Runs one job: its reply and answer, for the caller to send once the
/// thread counts as idle again (so that a caller that got its answer finds
/// the thread free). A call whose future is already gone is skipped. A
/// panic in the engine's binding is contained here: the reply then goes
/// unsent and answers with its own crash text; the payload is dropped on
/// this thread, never in the loop.
fn run(job: Job, stack_limit: usize) -> Option<(Reply, Answer)> {
    let Job { spec, stop, reply } = job;
    if stop.load(Ordering::Acquire) {
        return None;
    }
    let slot = Arc::clone(&reply.slot);
    let answer = catch_unwind(AssertUnwindSafe(|| {
        sandbox::run(&spec, &stop, &slot, stack_limit)
    }))
    .ok()?;
    Some((reply, answer))
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
    Output(ToolOutput),
    /// A definition check's verdict.
    Checked(Result<(), CheckFailure>),
}

impl Answer {
    fn into_output(self) -> ToolOutput {
        match self {
            Answer::Output(output) => output,
            Answer::Checked(_) => {
                ToolOutput::crashed("the script's thread answered a call with a check")
            }
        }
    }

    fn into_checked(self) -> Result<(), CheckFailure> {
        match self {
            Answer::Checked(verdict) => verdict,
            // The pool was busy, or the thread failed: no verdict.
            // (Our own texts, with no details: `to_result` cannot fail.)
            Answer::Output(output) => Err(CheckFailure::Unavailable(
                output
                    .to_result(&rho_tool_core::untrusted::Limits::default())
                    .map(|result| result.text())
                    .unwrap_or_default(),
            )),
        }
    }
}

/// What a job asks of the sandbox.
pub(crate) struct JobSpec {
    pub(crate) name: Arc<str>,
    pub(crate) source: Arc<str>,
    pub(crate) kind: JobKind,
    pub(crate) limits: ScriptLimits,
    /// When the sandbox stops the script on its own, in case the future is
    /// never dropped (a host that polls it without rho's runner).
    pub(crate) deadline: Instant,
    /// The timeout the deadline came from, for the text.
    pub(crate) timeout: std::time::Duration,
}

struct Job {
    spec: JobSpec,
    stop: Arc<AtomicBool>,
    reply: Reply,
}

/// How many partial results wait between the script's thread and the
/// call's future: past it, the oldest is dropped for the newest.
pub(crate) const UPDATE_QUEUE: usize = 64;

/// What the script's thread and the call's future share: the answer, the
/// partial results on their way, and a sleep the script asked for.
#[derive(Default)]
pub(crate) struct Slot {
    state: Mutex<SlotState>,
    /// Wakes the script's thread when its sleep is over or the call's
    /// future is dropped.
    woke: Condvar,
}

#[derive(Default)]
struct SlotState {
    answer: Option<Answer>,
    waker: Option<Waker>,
    updates: VecDeque<Plain>,
    sleep: SleepState,
}

/// A sleep the script asked of the call's executor timer.
#[derive(Default)]
enum SleepState {
    #[default]
    Idle,
    /// Asked for by the script's thread, not yet started by the future.
    Asked(Duration),
    /// On the executor's timer.
    Started,
    /// Over: the script's thread goes on.
    Done,
}

impl Slot {
    fn lock(&self) -> MutexGuard<'_, SlotState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Hands a partial result to the call's future (dropping the oldest
    /// waiting one when [`UPDATE_QUEUE`] are waiting already).
    pub(crate) fn push_update(&self, partial: Plain) {
        let waker = {
            let mut state = self.lock();
            if state.updates.len() >= UPDATE_QUEUE {
                state.updates.pop_front();
            }
            state.updates.push_back(partial);
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Sleeps `duration` on the call's executor timer, from the script's
    /// thread: asks the call's future to sleep, and blocks until it says
    /// the sleep is over. `false` when the wait ended early because the
    /// future was dropped (`stop`) or `deadline` passed.
    pub(crate) fn sleep(&self, duration: Duration, stop: &AtomicBool, deadline: Instant) -> bool {
        let waker = {
            let mut state = self.lock();
            state.sleep = SleepState::Asked(duration);
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
        let mut state = self.lock();
        loop {
            if let SleepState::Done = state.sleep {
                state.sleep = SleepState::Idle;
                return true;
            }
            // Checked under the lock that the future's drop takes before
            // it notifies: no wake-up is lost.
            if stop.load(Ordering::Acquire) {
                return false;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            state = self
                .woke
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

/// The sending half of a call's answer. Dropped unsent (a panic on the
/// script thread), it answers with a crash text so the call still ends.
struct Reply {
    slot: Arc<Slot>,
    sent: bool,
}

impl Reply {
    fn send(mut self, answer: Answer) {
        self.put(answer);
    }

    fn put(&mut self, answer: Answer) {
        self.sent = true;
        let waker = {
            let mut state = self.slot.lock();
            state.answer = Some(answer);
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl Drop for Reply {
    fn drop(&mut self) {
        if !self.sent {
            self.put(Answer::Output(ToolOutput::crashed(
                "the script's thread failed while it ran the script (a panic in the engine's binding), so the script gave no answer",
            )));
        }
    }
}

/// The future of one script call's answer.
///
/// Dropping it before the answer came (rho does so at the call's timeout
/// and on a host abort) stops the script: the engine's interrupt sees the
/// flag at its next check and the thread is free for the next call.
#[must_use = "a script call does nothing useful unless awaited; dropping it stops the script"]
///
/// While it waits it forwards the script's partial results to the call's
/// [`ToolContext::update`], in order, and runs the sleeps the script asks
/// for on [`ToolContext::sleep`] (the call's executor timer). A check has
/// no context: its partial results are dropped and its sleeps end at once.
pub(crate) struct ScriptCall<T> {
    slot: Arc<Slot>,
    stop: Arc<AtomicBool>,
    read: fn(Answer) -> T,
    context: Option<ToolContext>,
    sleeping: Option<Pin<Box<dyn Future<Output = ()> + Send + 'static>>>,
}

impl<T> Future for ScriptCall<T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let this = &mut *self;
        let (updates, answer, asked) = {
            let mut state = this.slot.lock();
            let updates = std::mem::take(&mut state.updates);
            let answer = state.answer.take();
            let asked = match state.sleep {
                SleepState::Asked(duration) => {
                    state.sleep = SleepState::Started;
                    Some(duration)
                }
                _ => None,
            };
            if answer.is_none() {
                match &mut state.waker {
                    Some(waker) => waker.clone_from(cx.waker()),
                    None => state.waker = Some(cx.waker().clone()),
                }
            }
            (updates, answer, asked)
        };
        // Updates first: they were sent before the answer.
        if let Some(context) = &this.context {
            for partial in &updates {
                // Already plain data, under the script's answer limits; one
                // the runner's limits refuse is dropped, as for any tool.
                let _ = context.update(partial);
            }
        }
        drop(updates);
        if let Some(answer) = answer {
            return Poll::Ready((this.read)(answer));
        }
        if let Some(duration) = asked {
            this.sleeping = Some(match &this.context {
                Some(context) => context.sleep(duration),
                None => Box::pin(std::future::ready(())),
            });
        }
        let slept = match &mut this.sleeping {
            Some(sleep) => sleep.as_mut().poll(cx).is_ready(),
            None => false,
        };
        if slept {
            this.sleeping = None;
            this.slot.lock().sleep = SleepState::Done;
            this.slot.woke.notify_all();
        }
        Poll::Pending
    }
}

impl<T> Drop for ScriptCall<T> {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        // Wakes a script's thread that waits for a sleep; taken under the
        // lock so that the thread either saw the flag or is waiting.
        let _state = self.slot.lock();
        self.slot.woke.notify_all();
    }
}

impl<T> fmt::Debug for ScriptCall<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScriptCall").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_of_updates_keeps_only_the_newest_waiting() {
        let slot = Slot::default();
        for n in 0..1000 {
            slot.push_update(Plain::Int(n));
        }
        let state = slot.lock();
        assert_eq!(state.updates.len(), UPDATE_QUEUE);
        assert_eq!(
            state.updates.front(),
            Some(&Plain::Int(1000 - UPDATE_QUEUE as i64))
        );
        assert_eq!(state.updates.back(), Some(&Plain::Int(999)));
    }

    #[test]
    fn a_sleep_wait_ends_at_once_when_the_call_is_stopped() {
        let slot = Slot::default();
        let stop = AtomicBool::new(true);
        let started = Instant::now();
        let far = started + std::time::Duration::from_secs(60);
        assert!(!slot.sleep(std::time::Duration::from_secs(60), &stop, far));
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }
}
