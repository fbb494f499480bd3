//! The threads that run scripts: a fixed set of std threads fed by a bounded
//! queue, the one-shot answer a call's future waits on, and the watchdog
//! that replaces a thread that does not come back from a stopped script.
//!
//! The JavaScript never runs on an executor's worker: a script that loops
//! would hold that worker until the interrupt stops it, and every other task
//! on it would wait. Here it holds one of rho-script's own threads, and the
//! call's future only waits for the answer, on any executor (the answer wakes
//! the future's `Waker`; no runtime is named).
//!
//! The interrupt stops a script at its next check, but one native operation
//! (a huge `Array.prototype.join`, `String.prototype.repeat`) runs to its
//! end first, for seconds. A thread cannot be killed, so the watchdog gives
//! up on such a thread [`STUCK_AFTER`] past the script's stop: the call is
//! answered, a fresh thread takes the stuck one's place, and the stuck one
//! ends itself when the operation returns. At most
//! [`PoolOptions::max_abandoned`] given-up threads may run beside the
//! pool's own (so `threads + max_abandoned` in all), which bounds the
//! threads and the memory (each holds its runtime, under the call's cap)
//! that stuck scripts can cost.

use std::collections::VecDeque;
use std::fmt;
use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::task::Waker;
use std::time::Instant;

use rho_tool_core::{ToolContext, ToolOutput};

use crate::sandbox::engine::{self, Engine, Halt, Halted, STACK_MARGIN, Spent};
use crate::sandbox::host::HostCalls;
use crate::sandbox::interrupt::STUCK_AFTER;
use crate::sandbox::job::{Answer, CheckFailure, JobSpec};
use crate::sandbox::options::{Isolation, PoolOptions, PoolState};
use crate::sandbox::output::ScriptOutput;
use crate::sandbox::slot::{PoolLink, Reply, ScriptCall, Slot};

/// The threads that run script calls: a fixed number of std threads owned
/// by rho-script, fed by a bounded queue.
///
/// Cheap to clone (clones share the threads). The threads end once the last
/// clone is dropped and the calls already queued have run; dropping never
/// waits for them. Every call runs in a fresh QuickJS runtime on one of
/// these threads; see the crate docs for what that guarantees.
///
/// A stopped call gives its thread back at once: the engine's interrupt
/// stops its script, and a thread that does not come back (its script is
/// inside one long native operation) is replaced 20 ms past the stop, up
/// to [`PoolOptions::max_abandoned`] at once; in worker-process mode the
/// worker is killed then instead, and replaced. [`ScriptPool::state`]
/// shows how busy the pool is and how often that happened.
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
        self.shared.watch.notify_all();
    }
}

struct Shared {
    options: PoolOptions,
    queue: Mutex<Queue>,
    /// Wakes the threads that wait for a job.
    ready: Condvar,
    /// Wakes the watchdog (threads mode).
    watch: Condvar,
    /// Worker processes started in place of a lost one.
    worker_restarts: AtomicU64,
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
    /// The jobs running on the pool's threads, as the watchdog watches them
    /// (threads mode; empty in worker mode, whose threads never run a
    /// script themselves).
    running: Vec<Running>,
    /// When the watchdog looks next.
    watchdog: Watchdog,
    /// Threads given up on that are still inside their script.
    abandoned: usize,
    /// Threads given up on and replaced, in all.
    replaced: u64,
    /// The number of the next thread started (never reused: a thread that
    /// is given up on is known by it).
    next_thread: u64,
}

/// When the watchdog looks at the running jobs next: what a thread that
/// takes a job, or a call that is stopped, reads to know whether to wake it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Watchdog {
    /// There is none (worker mode: a worker that does not stop is killed
    /// by its own pool thread).
    Off,
    /// It waits until it is woken: nothing it knows of is due.
    Waiting,
    /// It looks at this time, or when woken.
    Until(Instant),
}

/// A job on a pool thread, as the watchdog sees it.
struct Running {
    /// The pool's number of the thread that runs it.
    thread: u64,
    /// The call's stop flag (its future was dropped).
    stop: Arc<AtomicBool>,
    /// When the watchdog first knew of the stop.
    stopped: Option<Instant>,
    /// The job's own deadline.
    deadline: Instant,
    /// Where the pool answers if it gives up on the thread.
    slot: Arc<Slot>,
    /// What it answers then.
    halted: Halted,
}

impl Running {
    /// When the pool gives up on the thread if it has not come back.
    fn due(&self) -> Instant {
        let stop = self
            .stopped
            .map_or(self.deadline, |stopped| stopped.min(self.deadline));
        stop.checked_add(STUCK_AFTER).unwrap_or(stop)
    }

    /// Why the job was stopped, as its answer says.
    fn halt(&self) -> Halt {
        if self.stop.load(Ordering::Acquire) {
            Halt::Dropped
        } else {
            Halt::PastDeadline
        }
    }
}

impl Queue {
    /// The watchdog must look by `due`: wakes it unless it will anyway.
    fn watch_by(&mut self, due: Instant, watch: &Condvar) {
        let woken = match self.watchdog {
            Watchdog::Off => return,
            Watchdog::Waiting => true,
            Watchdog::Until(until) => due < until,
        };
        if woken {
            self.watchdog = Watchdog::Until(due);
            watch.notify_one();
        }
    }
}

impl PoolLink for Shared {
    /// The call whose stop flag is `stop` was dropped unanswered: the
    /// watchdog counts [`STUCK_AFTER`] from now if a thread runs it.
    fn stopped(&self, stop: &Arc<AtomicBool>) {
        let mut queue = self.lock();
        let Some(running) = queue
            .running
            .iter_mut()
            .find(|running| Arc::ptr_eq(&running.stop, stop))
        else {
            // Still queued (it will be skipped), or already done.
            return;
        };
        if running.stopped.is_none() {
            running.stopped = Some(Instant::now());
        }
        let due = running.due();
        queue.watch_by(due, &self.watch);
    }
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
        let watched = options.isolation == Isolation::Threads;
        let shared = Arc::new(Shared {
            options,
            queue: Mutex::new(Queue {
                jobs: VecDeque::new(),
                idle: 0,
                closed: false,
                running: Vec::new(),
                watchdog: if watched {
                    Watchdog::Waiting
                } else {
                    Watchdog::Off
                },
                abandoned: 0,
                replaced: 0,
                next_thread: 0,
            }),
            ready: Condvar::new(),
            watch: Condvar::new(),
            worker_restarts: AtomicU64::new(0),
        });
        // On an error the pool handle is dropped on return, which ends the
        // threads already started.
        let pool = ScriptPool {
            handle: Arc::new(Handle { shared }),
        };
        let shared = &pool.handle.shared;
        for _ in 0..shared.options.threads {
            start_thread(shared, &mut shared.lock())?;
        }
        if watched {
            let watching = Arc::clone(shared);
            std::thread::Builder::new()
                .name("rho-script-watchdog".to_owned())
                .spawn(move || watchdog(&watching))?;
        }
        Ok(pool)
    }

    /// The options the pool was made with.
    pub fn options(&self) -> &PoolOptions {
        &self.handle.shared.options
    }

    /// What the pool is doing now: its busy threads and queued calls, and
    /// how many stuck threads it replaced and worker processes it
    /// restarted.
    pub fn state(&self) -> PoolState {
        let shared = &self.handle.shared;
        let queue = shared.lock();
        PoolState {
            threads: shared.options.threads,
            busy: shared.options.threads.saturating_sub(queue.idle),
            queued: queue.jobs.len(),
            replaced_threads: queue.replaced,
            abandoned_threads: queue.abandoned,
            worker_restarts: shared.worker_restarts.load(Ordering::Relaxed),
        }
    }

    /// Queues `job` and gives the future of its answer, or an error answer
    /// at once when the queue is full.
    /// Partial results and sleeps of the script go to `context`; its calls
    /// of the host (what `job` lists as its grants and tools) go to `host`.
    pub(crate) fn submit(
        &self,
        job: JobSpec,
        context: ToolContext,
        host: Box<dyn HostCalls>,
    ) -> ScriptCall<ToolOutput> {
        self.enqueue(job, Answer::into_output, Some(context), Some(host))
    }

    /// Queues the definition check `job` (its kind is [`JobKind::Check`])
    /// and gives the future of its verdict.
    pub(crate) fn check(&self, job: JobSpec) -> ScriptCall<Result<(), CheckFailure>> {
        self.enqueue(job, Answer::into_checked, None, None)
    }

    fn enqueue<T>(
        &self,
        job: JobSpec,
        read: fn(Answer) -> T,
        context: Option<ToolContext>,
        host: Option<Box<dyn HostCalls>>,
    ) -> ScriptCall<T> {
        let slot = Arc::new(Slot::default());
        let stop = Arc::new(AtomicBool::new(false));
        let shared = &self.handle.shared;
        // Only the watchdog needs to hear of a stop.
        let pool = (shared.options.isolation == Isolation::Threads)
            .then(|| Arc::downgrade(shared) as Weak<dyn PoolLink>);
        let call = ScriptCall::new(
            Arc::clone(&slot),
            Arc::clone(&stop),
            read,
            context,
            host,
            pool,
        );
        let name = Arc::clone(&job.name);
        let job = Job {
            spec: job,
            stop,
            reply: Reply::new(slot),
        };
        let mut queue = shared.lock();
        if queue.jobs.len() >= shared.options.queue + queue.idle {
            drop(queue);
            let options = &shared.options;
            job.reply.send(Answer::Output(ScriptOutput::error(format!(
                "tool `{name}` could not start: all {} script threads are busy and {} calls are already waiting",
                options.threads, options.queue
            ))));
            return call;
        }
        queue.jobs.push_back(job);
        drop(queue);
        shared.ready.notify_one();
        call
    }
}

impl fmt::Debug for ScriptPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScriptPool")
            .field("options", &self.handle.shared.options)
            .field("state", &self.state())
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

/// Starts a pool thread, idle until it takes a job; `queue` is the locked
/// queue, so that the thread counts as idle from its start.
fn start_thread(shared: &Arc<Shared>, queue: &mut Queue) -> io::Result<()> {
    let number = queue.next_thread;
    let stack = shared.options.stack_limit.saturating_add(STACK_MARGIN);
    let working = Arc::clone(shared);
    std::thread::Builder::new()
        .name(format!("rho-script-{number}"))
        .stack_size(stack)
        .spawn(move || work(&working, number))?;
    queue.next_thread += 1;
    queue.idle += 1;
    Ok(())
}

/// One thread's life: take the next job, run it, answer; end when the pool
/// is gone and the queue is empty, or when it comes back from a job the
/// pool gave up on.
fn work(shared: &Shared, number: u64) {
    let mut own = ThreadState::default();
    loop {
        let job = {
            let mut queue = shared.lock();
            loop {
                if let Some(mut job) = queue.jobs.pop_front() {
                    queue.idle -= 1;
                    job.spec.taken();
                    if queue.watchdog != Watchdog::Off {
                        let running = Running {
                            thread: number,
                            stop: Arc::clone(&job.stop),
                            stopped: None,
                            // A job taken already past its deadline (it
                            // waited in the queue) gets its grace from
                            // now: the thread has not had it yet, and is
                            // not stuck.
                            deadline: job.spec.deadline.max(Instant::now()),
                            slot: Arc::clone(job.reply.slot()),
                            halted: Halted::of(&job.spec),
                        };
                        let due = running.due();
                        queue.running.push(running);
                        queue.watch_by(due, &shared.watch);
                    }
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
        let answered = run(job, shared, &mut own);
        {
            let mut queue = shared.lock();
            if queue.watchdog != Watchdog::Off {
                let Some(at) = queue
                    .running
                    .iter()
                    .position(|running| running.thread == number)
                else {
                    // Given up on: the pool answered the call and another
                    // thread has this one's place. This one frees what the
                    // script left (its answer goes unsent: the first answer
                    // stands) and ends.
                    drop(queue);
                    // What the script held is freed before the thread stops
                    // counting as abandoned, so that a replacement the cap
                    // lets start never runs beside its memory.
                    if let Some((reply, _answer, spent)) = answered {
                        drop(reply);
                        spent.free();
                    }
                    shared.lock().abandoned -= 1;
                    // A stuck thread kept past the cap may be replaced now.
                    shared.watch.notify_one();
                    return;
                };
                queue.running.swap_remove(at);
                if queue.closed && queue.running.is_empty() {
                    // The watchdog of a dropped pool ends once nothing runs.
                    shared.watch.notify_one();
                }
            }
            queue.idle += 1;
        }
        if let Some((reply, answer, spent)) = answered {
            reply.send(answer);
            spent.free();
        }
        // With nothing queued, the thread makes the next call's engine now
        // rather than when that call comes.
        if shared.lock().jobs.is_empty() {
            own.prepare(&shared.options);
        }
    }
}

/// The watchdog's life (threads mode): give up on each thread whose job was
/// stopped [`STUCK_AFTER`] ago and has not come back, answer its call, and
/// start a fresh thread in its place, while fewer than
/// [`PoolOptions::max_abandoned`] given-up threads still run; end with the
/// pool once no job is left.
fn watchdog(shared: &Arc<Shared>) {
    let mut queue = shared.lock();
    loop {
        if queue.closed && queue.jobs.is_empty() && queue.running.is_empty() {
            return;
        }
        let now = Instant::now();
        let mut next: Option<Instant> = None;
        let mut wakers: Vec<Waker> = Vec::new();
        let mut at = 0;
        while at < queue.running.len() {
            let running = &mut queue.running[at];
            // A stop the call's drop has not told yet (it tells right
            // after it sets the flag) is counted from now.
            if running.stopped.is_none() && running.stop.load(Ordering::Acquire) {
                running.stopped = Some(now);
            }
            let due = running.due();
            if due > now {
                next = Some(next.map_or(due, |next| next.min(due)));
                at += 1;
                continue;
            }
            if queue.abandoned >= shared.options.max_abandoned {
                // Past the cap the thread keeps its place; a given-up
                // thread that ends wakes the watchdog to look again.
                at += 1;
                continue;
            }
            if start_thread(shared, &mut queue).is_err() {
                // No thread to put in its place: keep it, and try again.
                let retry = now + STUCK_AFTER;
                next = Some(next.map_or(retry, |next| next.min(retry)));
                at += 1;
                continue;
            }
            let given_up = queue.running.swap_remove(at);
            queue.abandoned += 1;
            queue.replaced += 1;
            // Answered under the queue's lock, before the thread can see it
            // was given up on: the pool's answer is the first, and stands.
            if let Some(waker) = given_up
                .slot
                .settle(given_up.halted.answer(given_up.halt()))
            {
                wakers.push(waker);
            }
        }
        queue.watchdog = next.map_or(Watchdog::Waiting, Watchdog::Until);
        if !wakers.is_empty() {
            // The calls' futures are woken with no lock held.
            drop(queue);
            for waker in wakers {
                waker.wake();
            }
            queue = shared.lock();
            continue;
        }
        queue = match next {
            Some(next) => {
                shared
                    .watch
                    .wait_timeout(queue, next.saturating_duration_since(now))
                    .unwrap_or_else(PoisonError::into_inner)
                    .0
            }
            None => shared
                .watch
                .wait(queue)
                .unwrap_or_else(PoisonError::into_inner),
        };
    }
}

/// Runs one job: its reply and answer, for the caller to send once the
/// thread counts as idle again (so that a caller that got its answer finds
/// the thread free), and its engine, to free after that (see [`Spent`]).
/// A call whose future is already gone is skipped. A
/// panic in the engine's binding is contained here: the reply then goes
/// unsent and answers with its own crash text; the payload is dropped on
/// this thread, never in the loop.
fn run(job: Job, shared: &Shared, own: &mut ThreadState) -> Option<(Reply, Answer, Spent)> {
    let Job { spec, stop, reply } = job;
    if stop.load(Ordering::Acquire) {
        return None;
    }
    let slot = Arc::clone(reply.slot());
    let options = &shared.options;
    let stack_limit = options.stack_limit;
    let (answer, spent) = catch_unwind(AssertUnwindSafe(|| match &options.isolation {
        Isolation::Threads => engine::run(&spec, &stop, &slot, stack_limit, own.spare.take()),
        #[cfg(unix)]
        Isolation::WorkerProcesses(command) => (
            crate::sandbox::worker::relay::run(
                &mut own.worker,
                command,
                spec,
                &stop,
                &slot,
                stack_limit,
                &shared.worker_restarts,
            ),
            Spent::none(),
        ),
    }))
    .ok()?;
    Some((reply, answer, spent))
}

/// What a pool thread keeps between jobs.
#[derive(Default)]
struct ThreadState {
    /// Its worker process, in that mode: started on the first job (and on
    /// the first after one was lost), killed when the thread ends (with
    /// the pool).
    #[cfg(unix)]
    worker: crate::sandbox::worker::relay::WorkerSlot,
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

struct Job {
    spec: JobSpec,
    stop: Arc<AtomicBool>,
    reply: Reply,
}
