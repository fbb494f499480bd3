//! Figure 6: the registry's part of a call, a look-up
//! (`ToolRegistry::resolve`) plus the call's watch (`started`, then
//! `ended`: the tool's entry tells its source), on two threads at once (two
//! tasks, one on each worker), against a hand-written floor: a read-locked
//! snapshot map whose entry is the call's watch, with two atomic counters
//! per tool and one count of calls in flight.
//!
//! The source has `Accounting` as its policy (so the watch does its real
//! work), 64 tools, and both threads call all of them in turn. The figure
//! is nanoseconds per call on each thread (wall time over the calls one
//! thread made).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

use rho_registry::{Accounting, Source, ToolRegistry};
use rho_tool_core::{
    CallEnd, Executor, Joined, Outcome, Runner, Start, TaskId, Tool, ToolCall, ToolContext,
    ToolOutput, ToolResult, async_trait,
};

use crate::Config;
use crate::report::Report;
use crate::rt::Bench;
use crate::side::Which;
use crate::stats::median;

const TOOLS: usize = 64;
const TASK_IDS: usize = 1024;

/// A no-op tool with a name of its own.
struct Named(String);

#[async_trait]
impl Tool for Named {
    fn name(&self) -> &str {
        &self.0
    }

    fn description(&self) -> &str {
        "Does nothing."
    }

    async fn run(&self, _arguments: serde_json::Value, _cx: ToolContext) -> ToolOutput {
        ToolOutput::text("ok")
    }
}

/// The floor's registry.
struct FloorRegistry {
    tools: RwLock<Arc<HashMap<String, Arc<FloorEntry>>>>,
    in_flight: AtomicUsize,
}

struct FloorEntry {
    #[allow(dead_code)] // held as a registry holds it
    tool: Arc<dyn Tool>,
    started: AtomicU64,
    ended: AtomicU64,
}

impl FloorRegistry {
    fn new(tools: &[Arc<dyn Tool>]) -> Self {
        let map = tools
            .iter()
            .map(|tool| {
                let entry = FloorEntry {
                    tool: tool.clone(),
                    started: AtomicU64::new(0),
                    ended: AtomicU64::new(0),
                };
                (tool.name().to_owned(), Arc::new(entry))
            })
            .collect();
        Self {
            tools: RwLock::new(Arc::new(map)),
            in_flight: AtomicUsize::new(0),
        }
    }

    fn call(&self, name: &str) {
        let snapshot = self
            .tools
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let entry = snapshot.get(name).expect("registered").clone();
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        entry.started.fetch_add(1, Ordering::Relaxed);
        entry.ended.fetch_add(1, Ordering::Relaxed);
        self.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Runs `work(thread)` on two tasks at once and returns the wall time from
/// the first start to the last end.
fn contend<B: Bench>(bench: &B, work: Arc<dyn Fn(usize) + Send + Sync>) -> Duration {
    let executor = bench.executor();
    let arrived = Arc::new(AtomicUsize::new(0));
    let tasks: Vec<_> = (0..2)
        .map(|thread| {
            let (arrived, work) = (arrived.clone(), work.clone());
            executor.spawn(async move {
                arrived.fetch_add(1, Ordering::SeqCst);
                // Start together when both tasks got a worker (give up
                // waiting after a while rather than hang on one worker).
                let waiting = Instant::now();
                while arrived.load(Ordering::SeqCst) < 2
                    && waiting.elapsed() < Duration::from_millis(200)
                {
                    std::hint::spin_loop();
                }
                let start = Instant::now();
                work(thread);
                (start, Instant::now())
            })
        })
        .collect();
    let spans: Vec<(Instant, Instant)> = tasks
        .into_iter()
        .map(|task| match bench.block_on(task) {
            Joined::Done(span) => span,
            _ => panic!("a registry task did not finish"),
        })
        .collect();
    let first = spans.iter().map(|span| span.0).min().expect("two spans");
    let last = spans.iter().map(|span| span.1).max().expect("two spans");
    last - first
}

pub(crate) fn run<B: Bench>(bench: &B, config: &Config, report: &mut Report) {
    let name = B::NAME;
    let tools: Vec<Arc<dyn Tool>> = (0..TOOLS)
        .map(|index| Arc::new(Named(format!("tool_{index:02}"))) as Arc<dyn Tool>)
        .collect();
    let registry = ToolRegistry::new();
    registry
        .add_source(Source::trusted("bench").with_policy(Arc::new(Accounting::default())))
        .expect("a new source")
        .add_all(tools.iter().cloned())
        .expect("distinct names");
    let floor = Arc::new(FloorRegistry::new(&tools));
    let names: Arc<Vec<String>> =
        Arc::new(tools.iter().map(|tool| tool.name().to_owned()).collect());
    let calls: Arc<Vec<ToolCall>> = Arc::new(
        names
            .iter()
            .map(|name| ToolCall::new("call", name.as_str(), serde_json::json!({})))
            .collect(),
    );

    // Task ids can only come from the runner: each refused call gets one.
    let runner = Runner::new(bench.executor());
    let task_ids: Arc<Vec<Vec<TaskId>>> = Arc::new(
        (0..2)
            .map(|_| {
                (0..TASK_IDS)
                    .map(|_| {
                        let handle = runner.start(
                            ToolCall::new("id", "none", serde_json::json!({})),
                            Start::refused(ToolResult::error("none")),
                        );
                        let task = handle.task();
                        drop(bench.block_on(handle));
                        task
                    })
                    .collect()
            })
            .collect(),
    );

    let per_thread = config.registry_calls;
    let rho_work: Arc<dyn Fn(usize) + Send + Sync> = {
        let (registry, names, calls, task_ids) = (
            registry.clone(),
            names.clone(),
            calls.clone(),
            task_ids.clone(),
        );
        Arc::new(move |thread| {
            let mut end = CallEnd {
                call_id: "call".to_owned(),
                tool: String::new(),
                task: task_ids[thread][0],
                outcome: Outcome::Succeeded,
                result: ToolResult::success("ok"),
                waited: Duration::ZERO,
                queued: Duration::ZERO,
                ran: Some(Duration::ZERO),
            };
            for index in 0..per_thread {
                let tool = index % TOOLS;
                let resolved = registry.resolve(&names[tool]).expect("registered");
                let watch = resolved.watch().expect("the source listens");
                let task = task_ids[thread][index % TASK_IDS];
                watch.started(&calls[tool], task);
                end.task = task;
                end.tool.clone_from(&names[tool]);
                watch.ended(&end);
                drop((watch, resolved));
            }
        })
    };
    let floor_work: Arc<dyn Fn(usize) + Send + Sync> = {
        let (floor, names) = (floor.clone(), names.clone());
        Arc::new(move |_thread| {
            for index in 0..per_thread {
                floor.call(&names[index % TOOLS]);
            }
        })
    };

    let mut times = [Vec::new(), Vec::new()];
    for round in 0..config.registry_rounds + 1 {
        for which in Which::order(round) {
            let work = match which {
                Which::Rho => rho_work.clone(),
                Which::Floor => floor_work.clone(),
            };
            bench.settle();
            let took = contend(bench, work);
            if round > 0 {
                times[which as usize].push(took.as_secs_f64() * 1e9 / per_thread as f64);
            }
        }
    }
    assert_eq!(registry.in_flight(), 0, "every started call ended");
    let rho = median(&times[0]);
    let floor = median(&times[1]);
    report.info(name, "registry_resolve_watch_rho_2_threads", rho, "ns/call");
    report.info(name, "registry_floor_2_threads", floor, "ns/call");
    report.info(name, "registry_ratio", rho / floor, "rho/floor");
}
