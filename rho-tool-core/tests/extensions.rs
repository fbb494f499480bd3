//! What a call's starter hands its tool (`Start::with_extension`) reaches
//! the tool through its context, on tokio and on smol; a call started
//! without it finds nothing; and the value is dropped once the call is
//! over, not kept by the runner.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rho_exec_smol::SmolExecutor;
use rho_exec_tokio::TokioExecutor;
use rho_tool_core::{
    Executor, Outcome, Runner, Start, Tool, ToolCall, ToolContext, ToolOutput, async_trait,
};

/// The starter's value: where the call came from, and a count of drops.
struct Origin {
    channel: &'static str,
    drops: Arc<AtomicUsize>,
}

impl Drop for Origin {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

/// Answers the channel its starter handed it, or says it has none.
struct WhereFrom;

#[async_trait]
impl Tool for WhereFrom {
    fn name(&self) -> &str {
        "where_from"
    }

    fn description(&self) -> &str {
        "Says where its call came from."
    }

    async fn run(&self, _arguments: serde_json::Value, context: ToolContext) -> ToolOutput {
        // A type nobody handed is never found, even beside one that was.
        assert!(context.extension::<String>().is_none());
        match context.extension::<Origin>() {
            Some(origin) => ToolOutput::text(origin.channel),
            None => ToolOutput::error("no origin"),
        }
    }
}

async fn check<E: Executor>(runner: Runner<E>) {
    let drops = Arc::new(AtomicUsize::new(0));
    let tool: Arc<dyn Tool> = Arc::new(WhereFrom);
    let origin = |channel| Origin {
        channel,
        drops: Arc::clone(&drops),
    };
    let call = |id: &str| ToolCall::new(id, "where_from", serde_json::json!({}));

    // A second value of the same type replaces the first (dropped then).
    let start = Start::tool(Arc::clone(&tool))
        .with_extension(origin("replaced"))
        .with_extension(origin("chat"));
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    let end = runner.start(call("1"), start).await;
    assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
    assert_eq!(end.result.text(), "chat");
    assert_eq!(
        drops.load(Ordering::SeqCst),
        2,
        "the value is dropped once the call is over"
    );

    let end = runner.start(call("2"), tool).await;
    assert_eq!(end.outcome, Outcome::Failed);
    assert_eq!(end.result.text(), "no origin");
}

/// On tokio: handed, found, replaced, dropped; absent when not handed.
#[test]
fn a_starters_value_reaches_the_tool_on_tokio() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let executor = TokioExecutor::new(runtime.handle().clone()).expect("a multi-threaded runtime");
    runtime.block_on(check(Runner::new(executor)));
}

/// On smol: the same.
#[test]
fn a_starters_value_reaches_the_tool_on_smol() {
    let executor = Arc::new(smol::Executor::new());
    let runner = Runner::new(SmolExecutor::new(Arc::clone(&executor)));
    smol::block_on(executor.run(check(runner)));
}
