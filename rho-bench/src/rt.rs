//! The two runtimes under test, each with two worker threads, and the
//! floor's primitives on each.
//!
//! The loop (whatever starts calls and awaits them) runs on the main
//! thread, in the runtime's `block_on`; the calls' tasks run on the two
//! workers. That is how a host built on `#[tokio::main]` or `smol::block_on`
//! runs its agent loop. One figure runs the loop as a task of the runtime
//! instead ([`Bench::run_in_task`]), the way a host whose agent loop is
//! `tokio::spawn(async { loop { .. } })` (or a task on the same smol
//! executor) runs it: then the loop shares the workers with the calls.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rho_exec_smol::SmolExecutor;
use rho_exec_tokio::TokioExecutor;
use rho_tool_core::Executor;

use crate::floor::FloorRt;

/// A runtime by its name on the command line (the [`Bench::NAME`] of
/// [`Tokio`] or [`Smol`]), for the subcommands that run on one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum RuntimeName {
    /// [`Tokio`].
    Tokio,
    /// [`Smol`].
    Smol,
}

/// The worker threads of each runtime.
pub(crate) const WORKERS: usize = 2;

/// A runtime under test.
pub(crate) trait Bench: Sized {
    /// `"tokio"` or `"smol"`.
    const NAME: &'static str;
    /// rho's executor on it.
    type Exec: Executor;
    /// The floor's primitives on it.
    type Floor: FloorRt;

    fn new() -> Self;
    fn executor(&self) -> Self::Exec;
    fn floor(&self) -> Self::Floor;
    /// Runs the loop on this thread.
    fn block_on<F: Future>(&self, future: F) -> F::Output;
    /// Runs the loop as one task spawned on the runtime (with the runtime's
    /// own spawn, as a host would), on a worker, and waits here for its
    /// output.
    fn run_in_task<F>(&self, future: F) -> F::Output
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static;
    /// Whether no task is alive (all calls of the last round are gone).
    fn idle(&self) -> bool;

    /// Waits (up to ten seconds) until every task of the last round is
    /// gone, so a round does not pay for the previous one's clean-up.
    fn settle(&self) {
        let start = Instant::now();
        while !self.idle() && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// A tokio multi-thread runtime with two workers.
pub(crate) struct Tokio {
    runtime: tokio::runtime::Runtime,
}

impl Bench for Tokio {
    const NAME: &'static str = "tokio";
    type Exec = TokioExecutor;
    type Floor = TokioFloor;

    fn new() -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(WORKERS)
            .enable_all()
            .build()
            .expect("a tokio runtime");
        assert_eq!(runtime.metrics().num_workers(), WORKERS);
        Self { runtime }
    }

    fn executor(&self) -> TokioExecutor {
        TokioExecutor::new(self.runtime.handle().clone()).expect("the runtime has its timer")
    }

    fn floor(&self) -> TokioFloor {
        TokioFloor {
            handle: self.runtime.handle().clone(),
        }
    }

    fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.runtime.block_on(future)
    }

    fn run_in_task<F>(&self, future: F) -> F::Output
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let task = self.runtime.spawn(future);
        self.runtime
            .block_on(task)
            .expect("the loop's task finished")
    }

    fn idle(&self) -> bool {
        self.runtime.metrics().num_alive_tasks() == 0
    }
}

/// The floor's primitives on tokio: `Handle::spawn`, `JoinHandle`,
/// `JoinHandle::abort`, and `tokio::time::sleep_until` (boxed, because
/// tokio's `Sleep` is not `Unpin` and the handle is stored in a `Vec`).
#[derive(Clone)]
pub(crate) struct TokioFloor {
    handle: tokio::runtime::Handle,
}

pub(crate) struct TokioJoin<T>(tokio::task::JoinHandle<T>);

impl<T> Future for TokioJoin<T> {
    type Output = Option<T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        Poll::Ready(ready!(Pin::new(&mut self.0).poll(cx)).ok())
    }
}

impl FloorRt for TokioFloor {
    type Join<T: Send + 'static> = TokioJoin<T>;
    type Sleep = Pin<Box<tokio::time::Sleep>>;

    fn spawn<F>(&self, future: F) -> TokioJoin<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        TokioJoin(self.handle.spawn(future))
    }

    fn abort<T: Send + 'static>(join: &mut TokioJoin<T>) {
        join.0.abort();
    }

    fn sleep_until(deadline: Instant) -> Self::Sleep {
        Box::pin(tokio::time::sleep_until(deadline.into()))
    }
}

/// A smol executor run by two threads.
pub(crate) struct Smol {
    executor: Arc<smol::Executor<'static>>,
    stop: Option<smol::channel::Sender<()>>,
    threads: Vec<JoinHandle<()>>,
}

impl Bench for Smol {
    const NAME: &'static str = "smol";
    type Exec = SmolExecutor;
    type Floor = SmolFloor;

    fn new() -> Self {
        let executor = Arc::new(smol::Executor::new());
        let (stop, stopped) = smol::channel::unbounded::<()>();
        let threads = (0..WORKERS)
            .map(|index| {
                let (executor, stopped) = (executor.clone(), stopped.clone());
                std::thread::Builder::new()
                    .name(format!("smol-worker-{index}"))
                    .spawn(move || {
                        let _ = smol::block_on(executor.run(stopped.recv()));
                    })
                    .expect("a worker thread")
            })
            .collect();
        Self {
            executor,
            stop: Some(stop),
            threads,
        }
    }

    fn executor(&self) -> SmolExecutor {
        SmolExecutor::new(self.executor.clone())
    }

    fn floor(&self) -> SmolFloor {
        SmolFloor {
            executor: self.executor.clone(),
        }
    }

    fn block_on<F: Future>(&self, future: F) -> F::Output {
        smol::block_on(future)
    }

    fn run_in_task<F>(&self, future: F) -> F::Output
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        smol::block_on(self.executor.spawn(future))
    }

    fn idle(&self) -> bool {
        self.executor.is_empty()
    }
}

impl Drop for Smol {
    fn drop(&mut self) {
        drop(self.stop.take());
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

/// The floor's primitives on smol: `Executor::spawn`, `Task`, dropping the
/// `Task` to cancel, and `async_io::Timer::at` (which is `Unpin`, so it is
/// stored as it is).
#[derive(Clone)]
pub(crate) struct SmolFloor {
    executor: Arc<smol::Executor<'static>>,
}

pub(crate) struct SmolJoin<T>(Option<smol::Task<T>>);

impl<T> Future for SmolJoin<T> {
    type Output = Option<T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        match &mut self.0 {
            Some(task) => Poll::Ready(Some(ready!(Pin::new(task).poll(cx)))),
            None => Poll::Pending,
        }
    }
}

pub(crate) struct SmolSleep(async_io::Timer);

impl Future for SmolSleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        ready!(Pin::new(&mut self.0).poll(cx));
        Poll::Ready(())
    }
}

impl FloorRt for SmolFloor {
    type Join<T: Send + 'static> = SmolJoin<T>;
    type Sleep = SmolSleep;

    fn spawn<F>(&self, future: F) -> SmolJoin<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        SmolJoin(Some(self.executor.spawn(future)))
    }

    fn abort<T: Send + 'static>(join: &mut SmolJoin<T>) {
        drop(join.0.take());
    }

    fn sleep_until(deadline: Instant) -> SmolSleep {
        SmolSleep(async_io::Timer::at(deadline))
    }
}
