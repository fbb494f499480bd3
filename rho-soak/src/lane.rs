//! The runtimes calls run on ("lanes"), and what all lanes share.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use rho_conformance::support::Counting;
use rho_exec_smol::SmolExecutor;
use rho_exec_tokio::TokioExecutor;
use rho_registry::{Accounting, QuarantineRule, Source, SourceHandle, ToolRegistry};
use rho_tool_core::{Executor, Runner};
use rho_turn::{EventBus, KeepDetails, OutputCap, TurnRunner};

use crate::check::Verdicts;
use crate::events::EventCheck;
use crate::gate::SoakGate;
use crate::plan::TurnPlan;
use crate::tools;

/// Workers of each runtime: two, so that one tool that never yields leaves
/// one for everything else.
pub(crate) const WORKERS: usize = 2;

/// What every lane and driver shares.
pub(crate) struct Soak {
    pub(crate) registry: ToolRegistry,
    pub(crate) agent: SourceHandle,
    pub(crate) builtin_accounts: Arc<Accounting>,
    pub(crate) agent_accounts: Arc<Accounting>,
    pub(crate) bus: EventBus,
    pub(crate) events: Arc<EventCheck>,
    pub(crate) verdicts: Verdicts,
    /// Calls whose turn ended and was checked.
    pub(crate) progress: AtomicU64,
    pub(crate) drivers_done: AtomicUsize,
    /// Each driver's turn in flight, for a report when the soak is stuck.
    pub(crate) in_flight: Mutex<BTreeMap<String, TurnPlan>>,
    /// Tools added to and removed from the registry while the soak ran.
    pub(crate) tools_added: AtomicU64,
    pub(crate) tools_removed: AtomicU64,
    /// Of those removed, how many while a turn calling them was in flight.
    pub(crate) tools_removed_mid_turn: AtomicU64,
}

impl Soak {
    /// The registry with its two sources (counted exactly: never a
    /// quarantine) and the fixed tools; one bus.
    pub(crate) fn new() -> Self {
        let registry = ToolRegistry::new();
        let builtin_accounts = Arc::new(Accounting::new(QuarantineRule::never()));
        let agent_accounts = Arc::new(Accounting::new(QuarantineRule::never()));
        let builtin = registry
            .add_source(Source::trusted("builtin").with_policy(builtin_accounts.clone()))
            .expect("a new registry has no sources");
        let agent = registry
            .add_source(Source::untrusted("agent").with_policy(agent_accounts.clone()))
            .expect("a new registry has no sources");
        tools::register(&builtin, &agent);
        Self {
            registry,
            agent,
            builtin_accounts,
            agent_accounts,
            // A small update buffer, so that lagging subscribers do lag.
            bus: EventBus::with_buffer(64),
            events: Arc::new(EventCheck::default()),
            verdicts: Verdicts::default(),
            progress: AtomicU64::new(0),
            drivers_done: AtomicUsize::new(0),
            in_flight: Mutex::new(BTreeMap::new()),
            tools_added: AtomicU64::new(0),
            tools_removed: AtomicU64::new(0),
            tools_removed_mid_turn: AtomicU64::new(0),
        }
    }
}

/// One runtime's side of the soak.
pub(crate) struct Lane<E: Executor> {
    pub(crate) name: &'static str,
    pub(crate) tag: char,
    pub(crate) index: u8,
    /// The runtime's own executor: drivers and timers.
    pub(crate) executor: E,
    /// The same, counting rho's live tasks: every call runs here.
    pub(crate) counting: Counting<E>,
    pub(crate) turns: TurnRunner<Counting<E>>,
}

impl<E: Executor> Lane<E> {
    pub(crate) fn new(
        soak: &Soak,
        name: &'static str,
        tag: char,
        index: u8,
        executor: E,
        keep: KeepDetails,
    ) -> Self {
        let counting = Counting::new(executor.clone());
        let runner = Runner::new(counting.clone()).with_gate(SoakGate::new(executor.clone()));
        let turns = TurnRunner::new(runner, soak.registry.clone())
            .with_events(soak.bus.clone())
            .with_keep_details(keep)
            .with_output_cap(OutputCap::bytes(4096));
        Self {
            name,
            tag,
            index,
            executor,
            counting,
            turns,
        }
    }
}

/// A driver, ready to run.
pub(crate) type DriverFuture = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// A runtime the soak starts and stops.
pub(crate) trait Platform {
    type Executor: Executor;
    fn executor(&self) -> Self::Executor;
    /// Runs the drivers (the loop), each as a task of its own.
    fn run_drivers(&mut self, drivers: Vec<DriverFuture>);
    /// Stops the runtime; its threads are gone afterwards.
    fn shut_down(self);
}

/// tokio's multi-thread runtime with [`WORKERS`] workers for the calls,
/// and the loop on a thread of its own (a current-thread runtime).
///
/// The loop is not a task of the workers: a tool that never yields would
/// then hold it up. When a call's task says "running" it wakes the loop
/// from the worker that is about to poll the tool; tokio puts a task woken
/// from a worker in that worker's LIFO slot, which no other worker may
/// steal, so the loop waits for the tool to yield and never sees the
/// deadline (see the report of `rho-soak/tests/findings.rs`).
pub(crate) struct TokioPlatform {
    runtime: tokio::runtime::Runtime,
    event_loop: Option<JoinHandle<()>>,
}

impl TokioPlatform {
    pub(crate) fn start() -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(WORKERS)
            .thread_name("rho-soak-tokio")
            .enable_all()
            .build()
            .expect("a tokio runtime");
        Self {
            runtime,
            event_loop: None,
        }
    }
}

impl Platform for TokioPlatform {
    type Executor = TokioExecutor;

    fn executor(&self) -> TokioExecutor {
        TokioExecutor::new(self.runtime.handle().clone()).expect("the runtime has a timer")
    }

    fn run_drivers(&mut self, drivers: Vec<DriverFuture>) {
        let event_loop = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime for the loop");
        let thread = std::thread::Builder::new()
            .name("rho-soak-tokio-loop".to_owned())
            .spawn(move || {
                event_loop.block_on(async move {
                    let handles: Vec<_> = drivers.into_iter().map(tokio::spawn).collect();
                    for handle in handles {
                        let _ = handle.await;
                    }
                });
            })
            .expect("a thread for the loop");
        self.event_loop = Some(thread);
    }

    fn shut_down(self) {
        if let Some(thread) = self.event_loop {
            let _ = thread.join();
        }
        self.runtime.shutdown_timeout(Duration::from_secs(5));
    }
}

/// A smol executor of the soak's own, run by [`WORKERS`] threads.
pub(crate) struct SmolPlatform {
    executor: Arc<smol::Executor<'static>>,
    stop: smol::channel::Sender<()>,
    threads: Vec<JoinHandle<()>>,
}

impl SmolPlatform {
    pub(crate) fn start() -> Self {
        let executor = Arc::new(smol::Executor::new());
        let (stop, stopped) = smol::channel::unbounded::<()>();
        let threads = (0..WORKERS)
            .map(|worker| {
                let (executor, stopped) = (executor.clone(), stopped.clone());
                std::thread::Builder::new()
                    .name(format!("rho-soak-smol-{worker}"))
                    .spawn(move || {
                        let _ = smol::block_on(executor.run(stopped.recv()));
                    })
                    .expect("a thread for the smol executor")
            })
            .collect();
        Self {
            executor,
            stop,
            threads,
        }
    }
}

impl Platform for SmolPlatform {
    type Executor = SmolExecutor;

    fn executor(&self) -> SmolExecutor {
        SmolExecutor::new(self.executor.clone())
    }

    /// The loop runs on the executor's own workers, beside the calls: smol
    /// schedules a woken task where any worker can take it.
    fn run_drivers(&mut self, drivers: Vec<DriverFuture>) {
        for driver in drivers {
            self.executor.spawn(driver).detach();
        }
    }

    fn shut_down(self) {
        drop(self.stop);
        for thread in self.threads {
            let _ = thread.join();
        }
        drop(self.executor);
    }
}
