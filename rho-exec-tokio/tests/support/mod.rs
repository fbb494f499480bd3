//! Test tools, gates, watches and the loop marker shared by the test files.
//!
//! Every test binary includes this module with `mod support;` and uses only
//! part of it.

#![allow(dead_code)]

use std::cell::Cell;
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use rho_exec_tokio::TokioExecutor;
use rho_tool_core::{
    CallEnd, Gate, Outcome, TaskId, Tool, ToolCall, ToolContext, ToolOutput, Verdict, Watch,
    async_trait,
};

/// A boxed, sendable future.
pub(crate) type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// The executor on the runtime the test runs in.
pub(crate) fn executor() -> TokioExecutor {
    TokioExecutor::current().expect("the test runs inside a tokio runtime with a timer")
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

/// Foreign code that ran while the loop was polling or dropping a handle,
/// across every test of the binary. Must stay 0.
pub(crate) static RAN_IN_LOOP: AtomicUsize = AtomicUsize::new(0);

/// Whether the current thread is inside a loop-side poll or drop.
pub(crate) fn in_loop() -> bool {
    IN_LOOP.with(Cell::get)
}

/// Marks the current thread as "in the loop" until dropped (restores the
/// previous mark, so nesting works).
pub(crate) struct LoopMark {
    previous: bool,
}

impl LoopMark {
    pub(crate) fn enter() -> Self {
        let previous = IN_LOOP.with(|flag| flag.replace(true));
        Self { previous }
    }
}

impl Drop for LoopMark {
    fn drop(&mut self) {
        let previous = self.previous;
        IN_LOOP.with(|flag| flag.set(previous));
    }
}

/// The loop side of a call: polls and drops `F` (a `CallHandle`) with the
/// thread marked as in the loop.
pub(crate) struct InLoop<F> {
    inner: Option<F>,
}

impl<F> InLoop<F> {
    pub(crate) fn new(inner: F) -> Self {
        Self { inner: Some(inner) }
    }

    /// The wrapped value (for `abort`, `next_event` and the like).
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
    anywhere: AtomicUsize,
    in_loop: AtomicUsize,
    drops: AtomicUsize,
    formats: AtomicUsize,
}

impl Record {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    fn note(&self) {
        self.anywhere.fetch_add(1, Ordering::SeqCst);
        if in_loop() {
            self.in_loop.fetch_add(1, Ordering::SeqCst);
            RAN_IN_LOOP.fetch_add(1, Ordering::SeqCst);
        }
    }

    pub(crate) fn note_drop(&self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
        self.note();
    }

    pub(crate) fn note_format(&self) {
        self.formats.fetch_add(1, Ordering::SeqCst);
        self.note();
    }

    /// Runs of any of the value's code, anywhere.
    pub(crate) fn anywhere(&self) -> usize {
        self.anywhere.load(Ordering::SeqCst)
    }

    /// Runs of the value's code while the loop polled or dropped a handle.
    pub(crate) fn in_loop(&self) -> usize {
        self.in_loop.load(Ordering::SeqCst)
    }

    pub(crate) fn drops(&self) -> usize {
        self.drops.load(Ordering::SeqCst)
    }

    pub(crate) fn formats(&self) -> usize {
        self.formats.load(Ordering::SeqCst)
    }
}

/// A panic payload (or any value) whose `Drop`, `Display` and `Debug` record
/// where they ran.
pub(crate) struct Tattle {
    pub(crate) record: Arc<Record>,
}

impl Tattle {
    pub(crate) fn new(record: &Arc<Record>) -> Self {
        Self {
            record: record.clone(),
        }
    }
}

impl Drop for Tattle {
    fn drop(&mut self) {
        self.record.note_drop();
    }
}

impl fmt::Display for Tattle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.record.note_format();
        f.write_str("tattle (Display)")
    }
}

impl fmt::Debug for Tattle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.record.note_format();
        f.write_str("tattle (Debug)")
    }
}

/// A panic payload whose `Drop` records itself and then panics with a
/// [`Tattle`] recording into `second`.
pub(crate) struct Bomb {
    pub(crate) record: Arc<Record>,
    pub(crate) second: Arc<Record>,
}

impl Drop for Bomb {
    fn drop(&mut self) {
        self.record.note_drop();
        std::panic::panic_any(Tattle::new(&self.second));
    }
}

/// Sets its flag when dropped.
pub(crate) struct SetOnDrop(pub(crate) Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Sets its flag when dropped, then panics with a `String`.
pub(crate) struct PanicOnDrop(pub(crate) Arc<AtomicBool>);

impl Drop for PanicOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
        panic!("the tool future's Drop panicked");
    }
}

/// Records its drop, then panics with a [`Tattle`] payload.
pub(crate) struct PanicOnDropWith {
    pub(crate) dropped: Arc<AtomicBool>,
    pub(crate) payload: Arc<Record>,
}

impl Drop for PanicOnDropWith {
    fn drop(&mut self) {
        self.dropped.store(true, Ordering::SeqCst);
        std::panic::panic_any(Tattle::new(&self.payload));
    }
}

pub(crate) fn flag() -> Arc<AtomicBool> {
    Arc::new(AtomicBool::new(false))
}

/// Waits (polling every few milliseconds) until `flag` is set or `limit`
/// passed; returns whether it was set.
pub(crate) async fn wait_for(flag: &AtomicBool, limit: Duration) -> bool {
    let start = Instant::now();
    while !flag.load(Ordering::SeqCst) {
        if start.elapsed() > limit {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    true
}

/// As [`wait_for`], on a plain thread.
pub(crate) fn wait_for_blocking(flag: &AtomicBool, limit: Duration) -> bool {
    let start = Instant::now();
    while !flag.load(Ordering::SeqCst) {
        if start.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    true
}

/// Polls `future` once; `Some(output)` if it was ready.
pub(crate) async fn poll_once<F: Future + Unpin>(future: &mut F) -> Option<F::Output> {
    std::future::poll_fn(|cx| match Pin::new(&mut *future).poll(cx) {
        Poll::Ready(output) => Poll::Ready(Some(output)),
        Poll::Pending => Poll::Ready(None),
    })
    .await
}

/// A minimal `block_on` for a plain thread: no runtime, the thread parks
/// until woken.
pub(crate) fn block_on<F: Future>(future: F) -> F::Output {
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

// ---------------------------------------------------------------------------
// Tools
// ---------------------------------------------------------------------------

type RunFn = dyn Fn(serde_json::Value, ToolContext) -> BoxFuture<ToolOutput> + Send + Sync;

/// A tool made of a closure; counts its runs.
pub(crate) struct TestTool {
    name: String,
    timeout: Duration,
    untrusted: bool,
    run: Box<RunFn>,
    runs: Arc<AtomicUsize>,
}

impl TestTool {
    pub(crate) fn new<F, Fut>(name: &str, run: F) -> Self
    where
        F: Fn(serde_json::Value, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ToolOutput> + Send + 'static,
    {
        Self {
            name: name.to_owned(),
            timeout: rho_tool_core::DEFAULT_TIMEOUT,
            untrusted: false,
            run: Box::new(move |arguments, context| Box::pin(run(arguments, context))),
            runs: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// A tool that answers `text` at once.
    pub(crate) fn answering(name: &str, text: &'static str) -> Self {
        Self::new(name, move |_, _| async move { ToolOutput::text(text) })
    }

    pub(crate) fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    pub(crate) fn untrusted(mut self) -> Self {
        self.untrusted = true;
        self
    }

    /// The counter of this tool's runs (shared, so it can be read after the
    /// tool moved into an `Arc<dyn Tool>`).
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

    fn is_untrusted(&self) -> bool {
        self.untrusted
    }

    async fn run(&self, arguments: serde_json::Value, context: ToolContext) -> ToolOutput {
        self.runs.fetch_add(1, Ordering::SeqCst);
        (self.run)(arguments, context).await
    }
}

// ---------------------------------------------------------------------------
// Gates
// ---------------------------------------------------------------------------

type CheckFn = dyn Fn(ToolCall) -> BoxFuture<Verdict> + Send + Sync;

/// A gate made of a closure (it gets a copy of the call).
pub(crate) struct TestGate {
    check: Box<CheckFn>,
}

impl TestGate {
    pub(crate) fn new<F, Fut>(check: F) -> Arc<Self>
    where
        F: Fn(ToolCall) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Verdict> + Send + 'static,
    {
        Arc::new(Self {
            check: Box::new(move |call| Box::pin(check(call))),
        })
    }
}

#[async_trait]
impl Gate for TestGate {
    async fn check(&self, call: &ToolCall, _tool: &dyn Tool) -> Verdict {
        (self.check)(call.clone()).await
    }
}

// ---------------------------------------------------------------------------
// Watches
// ---------------------------------------------------------------------------

/// Records every `started` and `ended` it is told.
#[derive(Default)]
pub(crate) struct RecordingWatch {
    started: Mutex<Vec<(String, TaskId)>>,
    ended: Mutex<Vec<(String, TaskId, Outcome)>>,
}

impl RecordingWatch {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// The call ids told as started for `task`.
    pub(crate) fn started_for(&self, task: TaskId) -> Vec<String> {
        let started = self.started.lock().unwrap_or_else(PoisonError::into_inner);
        started
            .iter()
            .filter(|(_, t)| *t == task)
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// The (tool, outcome) pairs told as ended for `task`.
    pub(crate) fn ended_for(&self, task: TaskId) -> Vec<(String, Outcome)> {
        let ended = self.ended.lock().unwrap_or_else(PoisonError::into_inner);
        ended
            .iter()
            .filter(|(_, t, _)| *t == task)
            .map(|(tool, _, outcome)| (tool.clone(), *outcome))
            .collect()
    }

    pub(crate) fn started_count(&self) -> usize {
        self.started
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    pub(crate) fn ended_count(&self) -> usize {
        self.ended
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// How many times each task was told as ended.
    pub(crate) fn ended_per_task(&self) -> HashMap<TaskId, usize> {
        let mut counts = HashMap::new();
        for (_, task, _) in self
            .ended
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
        {
            *counts.entry(*task).or_insert(0) += 1;
        }
        counts
    }
}

impl Watch for RecordingWatch {
    fn started(&self, call: &ToolCall, task: TaskId) {
        self.started
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((call.id.clone(), task));
    }

    fn ended(&self, end: &CallEnd) {
        self.ended
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((end.tool.clone(), end.task, end.outcome));
    }
}

/// A watch that panics in both hooks.
pub(crate) struct PanickingWatch;

impl Watch for PanickingWatch {
    fn started(&self, call: &ToolCall, _task: TaskId) {
        panic!("the watch panicked when told that {} started", call.id);
    }

    fn ended(&self, end: &CallEnd) {
        panic!(
            "the watch panicked when told that {} ended {}",
            end.tool, end.outcome
        );
    }
}
