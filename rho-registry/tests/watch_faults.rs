//! A source whose policy panics or blocks: the calls' results are the same
//! and on time.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rho_registry::{
    Accounting, Disabled, OffLoop, QuarantineRule, Source, SourcePolicy, ToolRegistry,
};
use rho_tool_core::{CallEnd, TaskId, ToolCall, Watch};
use support::{Class, QuietPanics, launch, runner, scripted, scripted_with_timeout};

const SHORT: Duration = Duration::from_millis(30);

/// Far more than any call here needs even on a loaded machine; only a call
/// that waited for a blocked hook would come near it.
const GENEROUS: Duration = Duration::from_secs(20);

/// Every class on a tool that only hangs when told to, so its short timeout
/// never catches another class.
fn mixed_calls() -> Vec<(Class, &'static str)> {
    (0..300)
        .map(|i| {
            let class = Class::ALL[i % Class::ALL.len()];
            let tool = if class == Class::Hang {
                "hangs"
            } else {
                "steady"
            };
            (class, tool)
        })
        .collect()
}

fn registry_with(policy: Arc<dyn SourcePolicy>) -> ToolRegistry {
    let registry = ToolRegistry::new();
    registry
        .add_source(Source::untrusted("agent").with_policy(policy))
        .expect("a new source")
        .add_all([scripted("steady"), scripted_with_timeout("hangs", SHORT)])
        .expect("new names");
    registry
}

/// Runs the mixed calls at once and checks every result, as it would be
/// with no policy at all, and that none waited: a timeout ends soon after
/// its limit, everything else well within [`GENEROUS`].
async fn run_mixed_calls(registry: &ToolRegistry) -> Vec<CallEnd> {
    let runner = runner();
    let started = Instant::now();
    let calls: Vec<_> = mixed_calls()
        .into_iter()
        .enumerate()
        .map(|(i, (class, tool))| {
            (
                class,
                launch(registry, &runner, class, class.call(format!("c{i}"), tool)),
            )
        })
        .collect();
    let mut ends = Vec::new();
    for (class, call) in calls {
        let end = call.await.expect("the awaiting task does not panic");
        assert_eq!(end.outcome, class.outcome(), "{end:?}");
        let text = end.result.text();
        let expected = match class {
            Class::Ok => "steady ok".to_owned(),
            Class::Error => "steady failed on purpose".to_owned(),
            Class::Panic => "tool `steady` panicked".to_owned(),
            Class::Hang => "tool `hangs` timed out after 30ms and was stopped".to_owned(),
            Class::Abort => "tool `steady` was aborted by the host".to_owned(),
            Class::Deny => "tool `steady` was not run: the gate denied it".to_owned(),
        };
        assert!(text.starts_with(&expected), "{class:?}: {text}");
        if let Some(ran) = end.ran {
            assert!(ran < GENEROUS, "{end:?}");
        }
        ends.push(end);
    }
    assert!(
        started.elapsed() < GENEROUS,
        "the calls took {:?}",
        started.elapsed()
    );
    ends
}

/// Panics in every hook.
/// Panics in every hook, after counting the call.
#[derive(Default)]
struct Panicky {
    started: AtomicUsize,
    ended: AtomicUsize,
    disabled: AtomicUsize,
}

impl Watch for Panicky {
    fn started(&self, call: &ToolCall, _task: TaskId) {
        let tool = call.name.as_str();
        self.started.fetch_add(1, Ordering::SeqCst);
        panic!("started({tool}) panics");
    }

    fn ended(&self, end: &CallEnd) {
        self.ended.fetch_add(1, Ordering::SeqCst);
        panic!("ended({}) panics", end.tool);
    }
}

impl SourcePolicy for Panicky {
    fn disabled(&self, tool: &str) -> Option<Disabled> {
        self.disabled.fetch_add(1, Ordering::SeqCst);
        panic!("disabled({tool}) panics");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_that_panics_changes_no_result() {
    let _quiet = QuietPanics::new();
    let policy = Arc::new(Panicky::default());
    let registry = registry_with(policy.clone());
    let ends = run_mixed_calls(&registry).await;
    assert_eq!(registry.in_flight(), 0);
    // A panicking `disabled` means "not disabled".
    let listed: Vec<String> = registry.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(listed, ["hangs", "steady"]);
    assert!(registry.resolve("steady").is_ok());
    // The hooks did run (and panic): every call was started and ended
    // through the policy, and `disabled` was asked.
    assert_eq!(policy.started.load(Ordering::SeqCst), ends.len());
    assert_eq!(policy.ended.load(Ordering::SeqCst), ends.len());
    assert!(policy.disabled.load(Ordering::SeqCst) > 0);
}

/// Blocks in every event hook until released, then counts with an
/// [`Accounting`].
struct Blocking {
    released: Mutex<bool>,
    wake: Condvar,
    accounting: Accounting,
}

impl Blocking {
    fn wait(&self) {
        let mut released = self.released.lock().unwrap_or_else(PoisonError::into_inner);
        while !*released {
            released = self
                .wake
                .wait(released)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    fn release(&self) {
        *self.released.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.wake.notify_all();
    }

    fn is_released(&self) -> bool {
        *self.released.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Watch for Blocking {
    fn started(&self, call: &ToolCall, task: TaskId) {
        self.wait();
        self.accounting.started(call, task);
    }

    fn ended(&self, end: &CallEnd) {
        self.wait();
        self.accounting.ended(end);
    }
}

impl SourcePolicy for Blocking {
    fn disabled(&self, tool: &str) -> Option<Disabled> {
        self.accounting.disabled(tool)
    }
}

/// Releases the blocked policy even when an assertion fails, so the drain
/// thread does not outlive the test stuck.
struct ReleaseOnDrop(Arc<Blocking>);

impl Drop for ReleaseOnDrop {
    fn drop(&mut self) {
        self.0.release();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_that_blocks_behind_a_queue_delays_no_result() {
    let _quiet = QuietPanics::new();
    let blocking = Arc::new(Blocking {
        released: Mutex::new(false),
        wake: Condvar::new(),
        accounting: Accounting::new(QuarantineRule::never()),
    });
    let _release = ReleaseOnDrop(blocking.clone());
    let queued = Arc::new(OffLoop::on_thread(blocking.clone()).expect("a thread"));
    let registry = registry_with(queued.clone());

    run_mixed_calls(&registry).await;

    // Every call ended while the policy was still blocked in its first
    // hook: none of them waited for it.
    assert!(!blocking.is_released());
    assert!(blocking.accounting.health().is_empty());
    assert_eq!(queued.pending(), 2 * mixed_calls().len());

    // Once it is released it hears of every call, in full.
    blocking.release();
    let deadline = Instant::now() + GENEROUS;
    while queued.pending() > 0 {
        assert!(Instant::now() < deadline, "the queue did not drain");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let health = blocking.accounting.health();
    let per_class = |tool: &str| {
        let h = health
            .iter()
            .find(|h| h.tool == tool)
            .expect("the tool was called");
        (
            h.calls,
            h.succeeded,
            h.failed,
            h.crashed,
            h.timed_out,
            h.aborted,
            h.denied,
        )
    };
    assert_eq!(per_class("steady"), (250, 50, 50, 50, 0, 50, 50));
    assert_eq!(per_class("hangs"), (50, 0, 0, 0, 50, 0, 0));
}

#[test]
fn a_drain_hands_over_events_in_order_and_survives_a_panic() {
    let _quiet = QuietPanics::new();
    struct Log(Mutex<Vec<String>>);
    impl Watch for Log {
        fn started(&self, call: &ToolCall, _task: TaskId) {
            let tool = call.name.as_str();
            if tool == "bad" {
                panic!("a policy bug");
            }
            self.0
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(format!("started {tool}"));
        }
    }

    impl SourcePolicy for Log {}
    let log = Arc::new(Log(Mutex::new(Vec::new())));
    let (queued, drain) = OffLoop::new(log.clone());
    let task = some_task();
    for tool in ["one", "bad", "two"] {
        queued.started(&ToolCall::new("id", tool, serde_json::Value::Null), task);
    }
    assert_eq!(queued.pending(), 3);
    assert_eq!(drain.drain(), 3);
    assert_eq!(queued.pending(), 0);
    assert_eq!(
        *log.0.lock().unwrap_or_else(PoisonError::into_inner),
        ["started one", "started two"]
    );
}

/// A real task id (the core hands them out only to calls).
fn some_task() -> TaskId {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let executor = rho_exec_tokio::TokioExecutor::current().expect("a timer");
        let registry = ToolRegistry::new();
        registry
            .add_source(Source::trusted("t"))
            .expect("a new source")
            .add(scripted("x"))
            .expect("a new name");
        let runner = rho_tool_core::Runner::new(executor);
        {
            let call = Class::Ok.call("1", "x");
            let start = registry.start_for(&call.name);
            runner.start(call, start)
        }
        .await
        .task
    })
}
