//! rho's executor conformance suite (`rho-conformance`) on tokio, on the
//! multi-thread runtime and on the current-thread runtime: the same points
//! under the same names, `multi_thread::<point>` and
//! `current_thread::<point>`.
//!
//! On the current-thread runtime one point checks a weaker behaviour, as
//! the suite documents: a tool that never yields holds the only thread, so
//! its call ends at the tool's first yield after its deadline
//! (`current_thread::a_tool_that_never_yields_ends_at_its_deadline`).

use std::future::Future;

use rho_conformance::Harness;
use rho_exec_tokio::TokioExecutor;
use tokio::runtime::{Builder, Runtime};

/// A multi-thread runtime with two workers, for one test; the loop runs on
/// the test's own thread (`Runtime::block_on`).
#[derive(Debug)]
pub struct TokioMultiThread(Runtime);

impl Harness for TokioMultiThread {
    type Executor = TokioExecutor;
    const MULTI_THREADED: bool = true;

    fn new() -> Self {
        let runtime = Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a multi-thread tokio runtime");
        Self(runtime)
    }

    fn executor(&self) -> TokioExecutor {
        TokioExecutor::new(self.0.handle().clone()).expect("the runtime has a timer")
    }

    fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.0.block_on(future)
    }

    fn shut_down(self) {
        self.0.shutdown_background();
    }
}

/// A current-thread runtime, for one test: its only thread is the test's
/// own, which drives the tasks while `block_on` runs the loop.
#[derive(Debug)]
pub struct TokioCurrentThread(Runtime);

impl Harness for TokioCurrentThread {
    type Executor = TokioExecutor;
    const MULTI_THREADED: bool = false;

    fn new() -> Self {
        let runtime = Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a current-thread tokio runtime");
        Self(runtime)
    }

    fn executor(&self) -> TokioExecutor {
        TokioExecutor::new(self.0.handle().clone()).expect("the runtime has a timer")
    }

    fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.0.block_on(future)
    }

    fn shut_down(self) {
        self.0.shutdown_background();
    }
}

mod multi_thread {
    rho_conformance::conformance_suite!(super::TokioMultiThread);
}

mod current_thread {
    rho_conformance::conformance_suite!(super::TokioCurrentThread);
}
