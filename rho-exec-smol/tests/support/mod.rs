//! What the smol-specific test files share: an executor run by threads of
//! its own, whose last `Arc` the test holds (and can drop), and calls.
//!
//! Everything else (tools, gates, recorders of where foreign code ran, the
//! loop marker, bounded waits) is `rho_conformance::support`'s.

// Each test binary includes this module and uses only part of it.
#![allow(dead_code)]

use std::sync::Arc;
use std::thread::JoinHandle;

use rho_exec_smol::SmolExecutor;
use rho_tool_core::ToolCall;

/// A call of `name` with id `id` and no arguments.
pub(crate) fn call(id: &str, name: &str) -> ToolCall {
    ToolCall::new(id, name, serde_json::json!({}))
}

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

    /// Stops the threads (every `ex.run` returns), joins them, then drops
    /// the executor on this thread: the host's last `Arc` goes.
    pub(crate) fn drop_executor(&mut self) {
        self.stop_threads();
        let ex = self.ex.take().expect("the executor is dropped once");
        assert_eq!(Arc::strong_count(&ex), 1, "the pool held the last Arc");
        drop(ex);
    }

    fn stop_threads(&mut self) {
        drop(self.stop.take());
        for thread in self.threads.drain(..) {
            thread.join().expect("an executor thread ended cleanly");
        }
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
