//! A call's end names the tool that ran, not the name the model asked for:
//! the loop takes the call's id and name back from the task rather than
//! copying its own, and must still copy the tool's name when the two
//! differ (a host that routes a call to a tool of another name).

use std::sync::Arc;

use async_trait::async_trait;
use rho_exec_tokio::TokioExecutor;
use rho_tool_core::{CallEvent, Outcome, Runner, Tool, ToolCall, ToolContext, ToolOutput};

struct Named(&'static str);

#[async_trait]
impl Tool for Named {
    fn name(&self) -> &str {
        self.0
    }

    fn description(&self) -> &str {
        "Answers with the id of its call."
    }

    async fn run(&self, _arguments: serde_json::Value, context: ToolContext) -> ToolOutput {
        ToolOutput::text(context.call_id())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_end_names_the_tool_that_ran_whatever_name_the_call_gave() {
    let runner = Runner::new(TokioExecutor::current().expect("a runtime with a timer"));
    for (id, asked) in [("call-same", "grep"), ("call-other", "search")] {
        let mut handle = runner.start(
            ToolCall::new(id, asked, serde_json::json!({})),
            Arc::new(Named("grep")),
        );
        let end = loop {
            match handle.next_event().await.expect("an end") {
                CallEvent::Ended(end) => break end,
                CallEvent::Running(running) => assert_eq!(running.tool, "grep"),
                _ => {}
            }
        };
        assert_eq!(end.outcome, Outcome::Succeeded);
        assert_eq!(end.tool, "grep", "call {id}");
        assert_eq!(end.call_id, id);
        assert_eq!(
            end.result.text(),
            id,
            "the tool's context knows the call's id"
        );
        assert_eq!(handle.tool(), "grep", "the handle keeps its own copy");
        assert_eq!(handle.call_id(), id);

        let end = runner
            .start(
                ToolCall::new(id, asked, serde_json::json!({})),
                Arc::new(Named("grep")),
            )
            .await;
        assert_eq!((end.tool.as_str(), end.call_id.as_str()), ("grep", id));
    }
}
