//! A smol executor with threads of its own, for hosts that want one without
//! writing the thread setup.

use std::fmt;
use std::io;
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::SmolExecutor;

/// A `smol::Executor` run by threads of its own (each in `ex.run(...)`),
/// holding the executor's `Arc` that keeps it alive.
///
/// [`shut_down`](SmolPool::shut_down), or dropping the pool, stops and
/// joins the threads and drops the executor: its tasks are cancelled and
/// calls still in flight end as "executor gone". The threads never wait for
/// tasks to finish.
///
/// ```
/// use rho::smol::SmolPool;
///
/// let pool = SmolPool::new(2)?;
/// let executor = pool.executor(); // give it to `rho::Runner::new`
/// assert!(!executor.is_gone());
/// pool.shut_down();
/// assert!(executor.is_gone());
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct SmolPool {
    /// Dropped after the threads are joined (fields drop after `Drop::drop`),
    /// so this is the executor's last `Arc` when it goes.
    executor: Arc<smol::Executor<'static>>,
    stop: Option<smol::channel::Sender<()>>,
    threads: Vec<JoinHandle<()>>,
}

impl SmolPool {
    /// A new executor run by `threads` threads (at least one).
    ///
    /// # Errors
    ///
    /// When a thread cannot be started; the threads already started are
    /// stopped again.
    pub fn new(threads: usize) -> io::Result<Self> {
        let executor = Arc::new(smol::Executor::new());
        let (stop, stopped) = smol::channel::bounded::<()>(1);
        let mut pool = Self {
            executor: executor.clone(),
            stop: Some(stop),
            threads: Vec::with_capacity(threads.max(1)),
        };
        for number in 0..threads.max(1) {
            let (executor, stopped) = (executor.clone(), stopped.clone());
            let thread = std::thread::Builder::new()
                .name(format!("rho-smol-{number}"))
                // Closing the channel ends `run`, whatever tasks remain.
                .spawn(move || {
                    let _ = smol::block_on(executor.run(stopped.recv()));
                })?;
            pool.threads.push(thread);
        }
        Ok(pool)
    }

    /// rho's executor on this pool.
    pub fn executor(&self) -> SmolExecutor {
        SmolExecutor::new(self.executor.clone())
    }

    /// The smol executor itself, to spawn the host's own tasks on it.
    pub fn smol(&self) -> &Arc<smol::Executor<'static>> {
        &self.executor
    }

    /// Stops the threads, joins them, and drops the executor.
    pub fn shut_down(self) {
        drop(self);
    }

    fn stop_threads(&mut self) {
        drop(self.stop.take());
        for thread in self.threads.drain(..) {
            // A thread only runs smol's `run`, which contains nothing
            // foreign: rho's tasks are guarded. A panic there is smol's own
            // and has already been reported by the panic hook.
            let _ = thread.join();
        }
    }
}

impl Drop for SmolPool {
    fn drop(&mut self) {
        self.stop_threads();
    }
}

impl fmt::Debug for SmolPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SmolPool")
            .field("threads", &self.threads.len())
            .finish_non_exhaustive()
    }
}
