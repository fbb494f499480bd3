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

/// A tokio runtime for one test: with `MULTI`, the multi-thread runtime
/// with two workers; without, the current-thread runtime, whose only thread
/// is the test's own, driving the tasks while `block_on` runs the loop. The
/// loop runs on the test's own thread (`Runtime::block_on`).
#[derive(Debug)]
pub struct Tokio<const MULTI: bool>(Runtime);

/// The multi-thread runtime with two workers.
pub type TokioMultiThread = Tokio<true>;

/// The current-thread runtime.
pub type TokioCurrentThread = Tokio<false>;

impl<const MULTI: bool> Harness for Tokio<MULTI> {
    type Executor = TokioExecutor;
    const MULTI_THREADED: bool = MULTI;

    fn new() -> Self {
        let mut builder = if MULTI {
            let mut builder = Builder::new_multi_thread();
            builder.worker_threads(2);
            builder
        } else {
            Builder::new_current_thread()
        };
        Self(builder.enable_all().build().expect("a tokio runtime"))
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
