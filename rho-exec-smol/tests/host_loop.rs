//! A host loop on smol, wired in the fewest lines the API allows: a
//! registry and a turn runner made from an executor and that registry. No
//! watch is wired by hand and no generic parameter is named; a crashing
//! agent-written tool must still be counted and quarantined.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rho::smol::{SmolPool, TurnRunner};
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

/// Two crashes quarantine the tool; the third call is refused without
/// running.
#[test]
fn the_fewest_lines_still_quarantine_a_crashing_tool() {
    let pool = SmolPool::new(2).expect("threads");
    let runs = Arc::new(AtomicUsize::new(0));
    let registry = ToolRegistry::new();
    let accounting = Arc::new(Accounting::new(QuarantineRule::after(2)));
    registry
        .add_source(Source::untrusted("agent").with_policy(accounting.clone()))
        .expect("a new source")
        .add(Arc::new(Crashing { runs: runs.clone() }))
        .expect("a new tool");

    let turns: TurnRunner = TurnRunner::new(pool.executor(), registry);

    let outcomes: Vec<Outcome> = ["1", "2", "3"]
        .into_iter()
        .map(|id| {
            let call = ToolCall::new(id, "count_words", serde_json::json!({}));
            smol::block_on(turns.turn([call]))[0].outcome
        })
        .collect();
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
}
