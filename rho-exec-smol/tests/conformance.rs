//! rho's executor conformance suite (`rho-conformance`) on smol, on a
//! multi-threaded `smol::Executor` of the test's own and on smol's global
//! executor: the same points under the same names as on tokio,
//! `multi_thread::<point>` and `global::<point>`.
//!
//! smol's global executor lives as long as the process, so it cannot be
//! shut down: on it the points about the executor going away say "skipped"
//! by name (`SHUTS_DOWN = false`), as the suite documents.

use std::future::Future;

use rho_conformance::Harness;
use rho_exec_smol::{SmolExecutor, SmolPool};

/// A `smol::Executor` run by two threads of its own ([`SmolPool`]), for
/// one test; the loop runs on the test's thread (`smol::block_on`).
/// Shutting it down stops the threads and drops the executor, which cancels
/// its tasks.
#[derive(Debug)]
pub struct SmolMultiThread(SmolPool);

impl Harness for SmolMultiThread {
    type Executor = SmolExecutor;
    const MULTI_THREADED: bool = true;

    fn new() -> Self {
        Self(SmolPool::new(2).expect("two executor threads"))
    }

    fn executor(&self) -> SmolExecutor {
        self.0.executor()
    }

    fn block_on<F: Future>(&self, future: F) -> F::Output {
        smol::block_on(future)
    }

    fn shut_down(self) {
        self.0.shut_down();
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
