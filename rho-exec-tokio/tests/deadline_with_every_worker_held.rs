//! rho's clock is not driven by the runtime's workers: with the only
//! worker held by a tool that never yields, a loop on a thread of its own
//! still ends the call at its deadline. (On tokio's timer the deadline
//! would pass unseen until the tool yields.)

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use rho_exec_tokio::TokioExecutor;
use rho_tool_core::{Outcome, Runner, Tool, ToolCall, ToolContext, ToolOutput};

/// Spins without yielding until told to stop.
struct Spins(Arc<AtomicBool>);

#[async_trait]
impl Tool for Spins {
    fn name(&self) -> &str {
        "spins"
    }

    fn description(&self) -> &str {
        "Never yields."
    }

    fn timeout(&self) -> Duration {
        Duration::from_millis(50)
    }

    async fn run(&self, _arguments: serde_json::Value, _context: ToolContext) -> ToolOutput {
        while !self.0.load(Ordering::Relaxed) {
            std::hint::spin_loop();
        }
        ToolOutput::text("stopped")
    }
}

#[test]
fn a_call_ends_at_its_deadline_while_its_tool_holds_the_only_worker() {
    let tools = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a runtime for the tools");
    let runner = Runner::new(TokioExecutor::new(tools.handle().clone()).expect("a timer"));
    let stop = Arc::new(AtomicBool::new(false));
    let tool = Arc::new(Spins(stop.clone()));

    // Should the deadline pass unseen, the tool is stopped after five
    // seconds and the call ends succeeded: a failure, not a hang.
    let watchdog = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(5));
            stop.store(true, Ordering::Relaxed);
        })
    };
    // The loop: this thread, outside the tools' runtime.
    let end = block_on_without_timer(runner.start(
        ToolCall::new("call-1", "spins", serde_json::json!({})),
        tool,
    ));
    stop.store(true, Ordering::Relaxed);
    assert_eq!(end.outcome, Outcome::TimedOut);
    let ran = end.ran.expect("the tool started");
    assert!(ran >= Duration::from_millis(50), "ended early: {ran:?}");
    assert!(
        ran < Duration::from_secs(5),
        "the deadline passed unseen: {ran:?}"
    );
    drop(watchdog);
}

/// A minimal `block_on` on this thread, so that no tokio runtime's timer
/// is involved in the loop at all.
fn block_on_without_timer<F: std::future::Future>(future: F) -> F::Output {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a loop runtime without a timer");
    runtime.block_on(future)
}
