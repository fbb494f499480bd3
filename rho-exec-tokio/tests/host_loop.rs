//! The README's host loop, wired in the fewest lines the API allows: a
//! registry, a turn runner made from an executor and that registry, and
//! nothing else. No watch is wired by hand, and no generic parameter is
//! named; a crashing agent-written tool must still be counted and
//! quarantined.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rho::tokio::{TokioExecutor, TurnRunner};
use rho_registry::{Accounting, QuarantineRule, Source, ToolRegistry};
use rho_tool_core::{Outcome, Tool, ToolCall, ToolContext, ToolOutput, async_trait};

/// An agent-written tool with a bug: it panics at every call.
struct Crashing {
    runs: Arc<AtomicUsize>,
}

#[async_trait]
impl Tool for Crashing {
    fn name(&self) -> &str {
        "count_words"
    }

    fn description(&self) -> &str {
        "Counts words (and panics)."
    }

    async fn run(&self, _arguments: serde_json::Value, _cx: ToolContext) -> ToolOutput {
        self.runs.fetch_add(1, Ordering::SeqCst);
        panic!("index out of bounds");
    }
}

fn call(id: &str) -> ToolCall {
    ToolCall::new(id, "count_words", serde_json::json!({}))
}

/// A host that writes only `TurnRunner::new(executor, registry)` gets its
/// agent's tools counted: two crashes quarantine the tool, the third call
/// is refused without running, and the health table says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fewest_lines_still_quarantine_a_crashing_tool() {
    let runs = Arc::new(AtomicUsize::new(0));
    let registry = ToolRegistry::new();
    let accounting = Arc::new(Accounting::new(QuarantineRule::after(2)));
    registry
        .add_source(Source::untrusted("agent").with_policy(accounting.clone()))
        .expect("a new source")
        .add(Arc::new(Crashing { runs: runs.clone() }))
        .expect("a new tool");

    let turns: TurnRunner = TurnRunner::new(TokioExecutor::current().expect("a timer"), registry);

    let mut outcomes = Vec::new();
    for id in ["1", "2", "3"] {
        let entries = turns.turn([call(id)]).await;
        outcomes.push(entries[0].outcome);
    }
    assert_eq!(
        outcomes,
        [Outcome::Crashed, Outcome::Crashed, Outcome::Refused]
    );
    assert_eq!(
        runs.load(Ordering::SeqCst),
        2,
        "the quarantined tool never ran"
    );
    let health = accounting
        .tool_health("count_words")
        .expect("it was called");
    // The refused third call reached the source too, as a refusal (never
    // a strike): a host sees a model that keeps calling a quarantined tool.
    assert_eq!((health.calls, health.crashed, health.refused), (3, 2, 1));
    assert!(health.is_quarantined(), "{health:?}");
    assert!(
        turns.registry().tools().is_empty(),
        "it left the model's list"
    );
    assert_eq!(turns.registry().in_flight(), 0);
}

/// A host that also gives the runner a watch of its own (to log every
/// call, say) does not lose the registry's: both hear each call once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hosts_own_watch_and_the_registrys_both_hear_each_call_once() {
    struct Count(AtomicUsize, AtomicUsize);
    impl rho_tool_core::Watch for Count {
        fn started(&self, _call: &ToolCall, _task: rho_tool_core::TaskId) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
        fn ended(&self, _end: &rho_tool_core::CallEnd) {
            self.1.fetch_add(1, Ordering::SeqCst);
        }
    }
    let runs = Arc::new(AtomicUsize::new(0));
    let registry = ToolRegistry::new();
    let accounting = Arc::new(Accounting::new(QuarantineRule::after(5)));
    registry
        .add_source(Source::untrusted("agent").with_policy(accounting.clone()))
        .expect("a new source")
        .add(Arc::new(Crashing { runs }))
        .expect("a new tool");
    let own = Arc::new(Count(AtomicUsize::new(0), AtomicUsize::new(0)));
    let runner =
        rho::tokio::Runner::new(TokioExecutor::current().expect("a timer")).with_watch(own.clone());
    let turns = TurnRunner::new(runner, registry);

    let entries = turns
        .turn([
            call("a"),
            call("b"),
            ToolCall::new("c", "nope", serde_json::json!({})),
        ])
        .await;
    assert_eq!(entries.len(), 3);
    assert_eq!(
        (own.0.load(Ordering::SeqCst), own.1.load(Ordering::SeqCst)),
        (3, 3),
        "the host's watch hears every call, the unknown one included"
    );
    let health = accounting
        .tool_health("count_words")
        .expect("it was called");
    assert_eq!((health.calls, health.crashed), (2, 2));
}
