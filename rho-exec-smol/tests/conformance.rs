//! rho's executor conformance suite (`rho-conformance`) on smol, on a
//! multi-threaded `smol::Executor` of the test's own and on smol's global
//! executor: the same points under the same names as on tokio,
//! `multi_thread::<point>` and `global::<point>`.
//!
//! smol's global executor lives as long as the process, so it cannot be
//! shut down: on it the points about the executor going away say "skipped"
//! by name (`SHUTS_DOWN = false`), as the suite documents.

use std::future::Future;
use std::sync::Arc;
use std::thread::JoinHandle;

use rho_conformance::Harness;
use rho_exec_smol::SmolExecutor;

/// A `smol::Executor` run by two threads of its own, for one test; the loop
/// runs on the test's thread (`smol::block_on`). Shutting it down stops the
/// threads and drops the executor, which cancels its tasks.
#[derive(Debug)]
pub struct SmolMultiThread {
    executor: Option<Arc<smol::Executor<'static>>>,
    stop: Option<smol::channel::Sender<()>>,
    threads: Vec<JoinHandle<()>>,
}

impl SmolMultiThread {
    fn stop(&mut self) {
        // Closing the channel ends every `run`; the threads return at once,
        // whatever tasks are still in flight.
        drop(self.stop.take());
        for thread in self.threads.drain(..) {
            thread.join().expect("an executor thread does not panic");
        }
        drop(self.executor.take());
    }
}

impl Harness for SmolMultiThread {
    type Executor = SmolExecutor;
    const MULTI_THREADED: bool = true;

    fn new() -> Self {
        let executor = Arc::new(smol::Executor::new());
        let (stop, stopped) = smol::channel::bounded::<()>(1);
        let threads = (0..2)
            .map(|_| {
                let executor = executor.clone();
                let stopped = stopped.clone();
                std::thread::spawn(move || {
                    let _ = smol::block_on(executor.run(stopped.recv()));
                })
            })
            .collect();
        Self {
            executor: Some(executor),
            stop: Some(stop),
            threads,
        }
    }

    fn executor(&self) -> SmolExecutor {
        let executor = self.executor.as_ref().expect("not shut down yet");
        SmolExecutor::new(executor.clone())
    }

    fn block_on<F: Future>(&self, future: F) -> F::Output {
        smol::block_on(future)
    }

    fn shut_down(mut self) {
        self.stop();
    }
}

impl Drop for SmolMultiThread {
    fn drop(&mut self) {
        self.stop();
    }
}

/// smol's global executor (`smol::spawn`); the loop runs on the test's
/// thread, apart from the executor's own.
#[derive(Debug)]
pub struct SmolGlobal;

impl Harness for SmolGlobal {
    type Executor = SmolExecutor;
    const MULTI_THREADED: bool = true;
    const SHUTS_DOWN: bool = false;

    fn new() -> Self {
        SmolGlobal
    }

    fn executor(&self) -> SmolExecutor {
        SmolExecutor::global()
    }

    fn block_on<F: Future>(&self, future: F) -> F::Output {
        smol::block_on(future)
    }

    fn shut_down(self) {}
}

mod multi_thread {
    rho_conformance::conformance_suite!(super::SmolMultiThread);
}

mod global {
    rho_conformance::conformance_suite!(super::SmolGlobal);
}
