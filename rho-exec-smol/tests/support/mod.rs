//! What the test files share: executors run by real threads, test tools and
//! gates, foreign values that record where their code ran, and the loop
//! marker.
//!
//! Every test binary includes this module with `mod support;` and uses only
//! part of it.

#![allow(dead_code)]

use std::cell::Cell;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{JoinHandle, ThreadId};
use std::time::{Duration, Instant};

use rho_exec_smol::SmolExecutor;
use rho_tool_core::{Gate, Tool, ToolCall, ToolContext, ToolOutput, Verdict, async_trait};

/// Generous bound for things that happen "soon", even on a loaded machine.
pub(crate) const SOON: Duration = Duration::from_secs(20);
/// How long the hanging tools of these tests would wait if not killed.
pub(crate) const HANG: Duration = Duration::from_secs(120);

/// A boxed, sendable future.
pub(crate) type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

// ---------------------------------------------------------------------------
// Executors run by real threads
// ---------------------------------------------------------------------------

/// A smol executor run by `threads` threads (each in `ex.run(...)`) until
/// stopped. Dropping the pool stops and joins its threads, then drops the
/// executor (the pool holds the last `Arc` of it, since `SmolExecutor` keeps
/// only a weak one).
pub(crate) struct Pool {
    ex: Option<Arc<smol::Executor<'static>>>,
    stop: Option<smol::channel::Sender<()>>,
    threads: Vec<JoinHandle<()>>,
}

impl Pool {
    pub(crate) fn new(threads: usize) -> Self {
        let ex = Arc::new(smol::Executor::new());
        let (stop, stopped) = smol::channel::unbounded::<()>();
        let threads = (0..threads)
            .map(|n| {
                let (ex, stopped) = (ex.clone(), stopped.clone());
                std::thread::Builder::new()
                    .name(format!("smol-pool-{n}"))
                    .spawn(move || {
                        let _ = smol::block_on(ex.run(stopped.recv()));
                    })
                    .expect("a thread for the executor")
            })
            .collect();
        Self {
            ex: Some(ex),
            stop: Some(stop),
            threads,
        }
    }

    /// rho's executor on this pool.
    pub(crate) fn executor(&self) -> SmolExecutor {
        SmolExecutor::new(self.ex().clone())
    }

    /// The smol executor itself.
    pub(crate) fn ex(&self) -> &Arc<smol::Executor<'static>> {
        self.ex
            .as_ref()
            .expect("the pool holds its executor until dropped")
    }

    /// Stops the threads (every `ex.run` returns) and joins them; the
    /// executor itself stays.
    pub(crate) fn stop_threads(&mut self) {
        drop(self.stop.take());
        for thread in self.threads.drain(..) {
            thread.join().expect("an executor thread ended cleanly");
        }
    }

    /// Stops the threads and drops the executor, on this thread.
    pub(crate) fn drop_executor(&mut self) {
        self.stop_threads();
        let ex = self.ex.take().expect("the executor is dropped once");
        assert_eq!(Arc::strong_count(&ex), 1, "the pool held the last Arc");
        drop(ex);
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        drop(self.stop.take());
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

/// A call of `name` with id `id` and no arguments.
pub(crate) fn call(id: impl Into<String>, name: &str) -> ToolCall {
    ToolCall::new(id, name, serde_json::json!({}))
}

// ---------------------------------------------------------------------------
// The loop marker
// ---------------------------------------------------------------------------

thread_local! {
    /// Set while the loop polls or drops a call's handle on this thread.
    static IN_LOOP: Cell<bool> = const { Cell::new(false) };
}

/// Whether the current thread is inside a loop-side poll or drop.
pub(crate) fn in_loop() -> bool {
    IN_LOOP.with(Cell::get)
}

struct LoopMark {
    previous: bool,
}

impl LoopMark {
    fn enter() -> Self {
        Self {
            previous: IN_LOOP.with(|flag| flag.replace(true)),
        }
    }
}

impl Drop for LoopMark {
    fn drop(&mut self) {
        let previous = self.previous;
        IN_LOOP.with(|flag| flag.set(previous));
    }
}

/// The loop side of a call (or of a raw task): polls and drops `F` with the
/// thread marked as in the loop.
pub(crate) struct InLoop<F> {
    inner: Option<F>,
}

impl<F> InLoop<F> {
    pub(crate) fn new(inner: F) -> Self {
        Self { inner: Some(inner) }
    }

    /// The wrapped value (for `abort`, `kill`, `next_event` and the like),
    /// used with the thread marked as in the loop.
    pub(crate) fn with<R>(&mut self, f: impl FnOnce(&mut F) -> R) -> R {
        let _mark = LoopMark::enter();
        f(self
            .inner
            .as_mut()
            .expect("InLoop holds its value until dropped"))
    }

    pub(crate) fn get_mut(&mut self) -> &mut F {
        self.inner
            .as_mut()
            .expect("InLoop holds its value until dropped")
    }
}

impl<F: Future + Unpin> Future for InLoop<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.get_mut();
        let _mark = LoopMark::enter();
        let inner = this
            .inner
            .as_mut()
            .expect("InLoop holds its value until dropped");
        Pin::new(inner).poll(cx)
    }
}

impl<F> Drop for InLoop<F> {
    fn drop(&mut self) {
        let _mark = LoopMark::enter();
        drop(self.inner.take());
    }
}

// ---------------------------------------------------------------------------
// Records of where foreign code ran
// ---------------------------------------------------------------------------

/// Counts the runs of one foreign value's code, and where they happened.
#[derive(Default)]
pub(crate) struct Record {
    drops: AtomicUsize,
    formats: AtomicUsize,
    in_loop: AtomicUsize,
    threads: Mutex<Vec<ThreadId>>,
}

impl Record {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    fn note(&self) {
        if in_loop() {
            self.in_loop.fetch_add(1, Ordering::SeqCst);
        }
        self.threads
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(std::thread::current().id());
    }

    pub(crate) fn drops(&self) -> usize {
        self.drops.load(Ordering::SeqCst)
    }

    pub(crate) fn formats(&self) -> usize {
        self.formats.load(Ordering::SeqCst)
    }

    /// Runs of the value's code while the loop polled or dropped a handle.
    pub(crate) fn in_loop(&self) -> usize {
        self.in_loop.load(Ordering::SeqCst)
    }

    /// Whether any of the value's code ran on `thread`.
    pub(crate) fn ran_on(&self, thread: ThreadId) -> bool {
        self.threads
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(&thread)
    }

    /// Waits until the value was dropped `count` times (or `SOON` passed).
    pub(crate) fn wait_for_drops(&self, count: usize) -> usize {
        let begin = Instant::now();
        while self.drops() < count && begin.elapsed() < SOON {
            std::thread::sleep(Duration::from_millis(5));
        }
        self.drops()
    }
}

/// A panic payload (or any foreign value) whose `Drop`, `Display` and
/// `Debug` record where they ran.
pub(crate) struct Tattle(pub(crate) Arc<Record>);

impl Drop for Tattle {
    fn drop(&mut self) {
        self.0.drops.fetch_add(1, Ordering::SeqCst);
        self.0.note();
    }
}

impl fmt::Display for Tattle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.formats.fetch_add(1, Ordering::SeqCst);
        self.0.note();
        f.write_str("tattle (Display)")
    }
}

impl fmt::Debug for Tattle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.formats.fetch_add(1, Ordering::SeqCst);
        self.0.note();
        f.write_str("tattle (Debug)")
    }
}

/// A panic payload whose `Drop` records itself, then panics again with a
/// [`Tattle`] recording into `second`.
pub(crate) struct Bomb {
    pub(crate) first: Arc<Record>,
    pub(crate) second: Arc<Record>,
}

impl Drop for Bomb {
    fn drop(&mut self) {
        self.first.drops.fetch_add(1, Ordering::SeqCst);
        self.first.note();
        std::panic::panic_any(Tattle(self.second.clone()));
    }
}

/// Sets its flag when dropped.
pub(crate) struct SetOnDrop(pub(crate) Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Sets its flag when dropped, then panics: held by a future, it makes the
/// future's `Drop` panic (the abort hazard of async-task).
pub(crate) struct PanicOnDrop {
    pub(crate) dropped: Arc<AtomicBool>,
    /// The payload of the panic; a `String` when `None`.
    pub(crate) payload: Option<Arc<Record>>,
}

impl PanicOnDrop {
    pub(crate) fn new(dropped: &Arc<AtomicBool>) -> Self {
        Self {
            dropped: dropped.clone(),
            payload: None,
        }
    }

    pub(crate) fn with_payload(dropped: &Arc<AtomicBool>, payload: &Arc<Record>) -> Self {
        Self {
            dropped: dropped.clone(),
            payload: Some(payload.clone()),
        }
    }
}

impl Drop for PanicOnDrop {
    fn drop(&mut self) {
        self.dropped.store(true, Ordering::SeqCst);
        match self.payload.take() {
            Some(record) => std::panic::panic_any(Tattle(record)),
            None => panic!("the future's Drop panicked"),
        }
    }
}

pub(crate) fn flag() -> Arc<AtomicBool> {
    Arc::new(AtomicBool::new(false))
}

/// Waits (sleeping a few milliseconds at a time) until `flag` is set or
/// `SOON` passed; returns whether it was set.
pub(crate) fn wait_for(flag: &AtomicBool) -> bool {
    let begin = Instant::now();
    while !flag.load(Ordering::SeqCst) {
        if begin.elapsed() > SOON {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    true
}

/// A minimal `block_on` of the standard library alone: no reactor, no
/// runtime on this thread; it parks until woken.
pub(crate) fn plain_block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        std::thread::park();
    }
}

/// Polls `future` once; `Some(output)` if it was ready.
pub(crate) fn poll_once<F: Future + Unpin>(future: &mut F) -> Option<F::Output> {
    let mut cx = Context::from_waker(Waker::noop());
    match Pin::new(future).poll(&mut cx) {
        Poll::Ready(output) => Some(output),
        Poll::Pending => None,
    }
}

/// Runs `future` on a thread of its own (a loop thread), returning a handle
/// to join for its output.
pub(crate) fn on_loop_thread<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    std::thread::Builder::new()
        .name("loop".to_owned())
        .spawn(move || smol::block_on(future))
        .expect("a loop thread")
}

// ---------------------------------------------------------------------------
// Tools and gates
// ---------------------------------------------------------------------------

type RunFn = dyn Fn() -> BoxFuture<ToolOutput> + Send + Sync;

/// A tool made of a closure that makes its future; counts its runs.
pub(crate) struct TestTool {
    name: String,
    timeout: Duration,
    run: Box<RunFn>,
    runs: Arc<AtomicUsize>,
}

impl TestTool {
    pub(crate) fn new<F, Fut>(name: &str, run: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ToolOutput> + Send + 'static,
    {
        Self {
            name: name.to_owned(),
            timeout: rho_tool_core::DEFAULT_TIMEOUT,
            run: Box::new(move || Box::pin(run())),
            runs: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// A tool that answers `text` at once.
    pub(crate) fn answering(name: &str, text: &'static str) -> Self {
        Self::new(name, move || async move { ToolOutput::text(text) })
    }

    /// A tool that sleeps `HANG` (smol's timer) holding a guard that sets
    /// `dropped` when its future is dropped.
    pub(crate) fn sleeping(name: &str, dropped: &Arc<AtomicBool>) -> Self {
        let dropped = dropped.clone();
        Self::new(name, move || {
            let guard = SetOnDrop(dropped.clone());
            async move {
                let _guard = guard;
                smol::Timer::after(HANG).await;
                ToolOutput::text("woke up")
            }
        })
    }

    pub(crate) fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The counter of this tool's runs.
    pub(crate) fn runs(&self) -> Arc<AtomicUsize> {
        self.runs.clone()
    }

    pub(crate) fn into_arc(self) -> Arc<dyn Tool> {
        Arc::new(self)
    }
}

#[async_trait]
impl Tool for TestTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        "a tool of the tests"
    }

    fn timeout(&self) -> Duration {
        self.timeout
    }

    async fn run(&self, _arguments: serde_json::Value, _context: ToolContext) -> ToolOutput {
        self.runs.fetch_add(1, Ordering::SeqCst);
        (self.run)().await
    }
}

type CheckFn = dyn Fn() -> BoxFuture<Verdict> + Send + Sync;

/// A gate made of a closure that makes its check's future.
pub(crate) struct TestGate {
    check: Box<CheckFn>,
}

impl TestGate {
    pub(crate) fn new<F, Fut>(check: F) -> Arc<Self>
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Verdict> + Send + 'static,
    {
        Arc::new(Self {
            check: Box::new(move || Box::pin(check())),
        })
    }
}

#[async_trait]
impl Gate for TestGate {
    async fn check(&self, _call: &ToolCall, _tool: &dyn Tool) -> Verdict {
        (self.check)().await
    }
}
